"""The ``minitorch`` command: ``demo``, ``check`` and ``lab``."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# subcommand -> (module with a `main(argv) -> int`, one-line help)
COMMANDS = {
    "demo": ("minitorch.examples.tense", "train the tense classifier (the main demo)"),
    "check": ("minitorch.checkcmd", "gradcheck every registered op on a backend"),
    "lab": ("minitorch.lab", "start the Tensor Ops Lab web page (needs the 'lab' extra)"),
}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="minitorch", description="minitorch: a readable tensor autograd engine."
    )
    parser.add_argument(
        "command",
        choices=sorted(COMMANDS),
        help="; ".join(f"{k}: {v[1]}" for k, v in COMMANDS.items()),
    )
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0 if argv else 2
    args, _ = parser.parse_known_args(argv[:1])
    module = importlib.import_module(COMMANDS[args.command][0])
    return int(module.main(argv[1:]) or 0)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
