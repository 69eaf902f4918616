"""Files are written whole or not at all: to a temporary file beside the target, then
renamed onto it (``os.replace`` is atomic on POSIX and Windows). A run killed while it
writes leaves the previous file as it was, never a half-written one."""

from __future__ import annotations

import contextlib
import os
import pathlib
import secrets
from collections.abc import Iterator

__all__ = ["atomic_path", "write_text"]


def _new_file(out: pathlib.Path) -> pathlib.Path:
    """A new empty file beside ``out``, created as ``open(out, "w")`` would create it:
    mode 0o666 less the umask (``tempfile.mkstemp`` makes 0o600, owner-only)."""
    for _ in range(100):
        tmp = out.with_name(f".{out.stem}.{secrets.token_hex(6)}{out.suffix}")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"no free temporary name beside {out}")  # pragma: no cover


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
    tmp = _new_file(out)
    try:
        yield tmp
        with contextlib.suppress(FileNotFoundError):  # keep the permissions it had
            os.chmod(tmp, out.stat().st_mode & 0o7777)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike[str], text: str) -> pathlib.Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return pathlib.Path(path)
