"""The Tensor Ops Lab: a local web page to watch autograd work.

``minitorch lab`` starts it (Streamlit, from the ``lab`` extra) at
http://127.0.0.1:8501. The page is :mod:`minitorch.lab.app`; its logic is
:mod:`minitorch.lab.core`, which needs no Streamlit.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["APP", "command", "main"]

#: the Streamlit script
APP = Path(__file__).with_name("app.py")


def command(host: str = "127.0.0.1", port: int = 8501) -> list[str]:
    """The command line that serves the lab page.

    Examples
    --------
    >>> from minitorch.lab import command
    >>> command()[5:11]
    ['--server.address', '127.0.0.1', '--server.port', '8501', '--server.headless', 'true']
    """
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP),
        "--server.address",
        host,
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "viewer",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """``minitorch lab [--port N]``: serve the lab page on 127.0.0.1 until interrupted."""
    parser = argparse.ArgumentParser(
        prog="minitorch lab",
        description="Start the Tensor Ops Lab web page at http://127.0.0.1:8501 (Ctrl+C stops it).",
    )
    parser.add_argument("--port", type=int, default=8501, help="port to serve on (default 8501)")
    args = parser.parse_args(list(argv or []))
    if importlib.util.find_spec("streamlit") is None:
        print(
            "minitorch lab needs Streamlit, which is not installed; install it with:\n"
            "    pip install 'minitorch[lab]'",
            file=sys.stderr,
        )
        return 1
    env = dict(os.environ)
    env.setdefault("JAX_ENABLE_X64", "1")  # float64 on the JAX backend too
    print(f"Tensor Ops Lab: http://127.0.0.1:{args.port}  (Ctrl+C stops it)", flush=True)
    cmd = command(port=args.port)
    if os.name == "posix":
        # become the server: one process, so stopping or killing `minitorch lab` stops
        # the page (a child process would go on serving without its parent)
        os.execve(cmd[0], cmd, env)
        return 0  # not reached: the process is the server now
    try:
        return subprocess.call(cmd, env=env)
    except KeyboardInterrupt:
        return 0
