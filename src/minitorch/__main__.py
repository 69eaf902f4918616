"""``python -m minitorch ...`` is the same as the ``minitorch`` command."""

from .cli import main

raise SystemExit(main())
