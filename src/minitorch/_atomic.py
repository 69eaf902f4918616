"""Files are written whole or not at all: to a temporary file beside the target, then
renamed onto it (``os.replace`` is atomic on POSIX and Windows). A run killed while it
writes leaves the previous file as it was, never a half-written one."""

from __future__ import annotations

import contextlib
import os
import pathlib
import tempfile
from collections.abc import Iterator

__all__ = ["atomic_path", "write_text"]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[pathlib.Path]:
    """A temporary path (same folder, same suffix) to write ``path``'s new content to;
    it replaces ``path`` when the block ends without an exception and is removed if not.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> with tempfile.TemporaryDirectory() as d:
    ...     target = pathlib.Path(d) / "w.txt"
    ...     with atomic_path(target) as tmp:
    ...         _ = tmp.write_text("new")
    ...     print(target.read_text(), sorted(p.name for p in pathlib.Path(d).iterdir()))
    new ['w.txt']
    """
    out = pathlib.Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.stem}.", suffix=out.suffix)
    os.close(fd)
    tmp = pathlib.Path(name)
    try:
        yield tmp
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike[str], text: str) -> pathlib.Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return pathlib.Path(path)
