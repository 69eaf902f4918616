"""Errors that name the op, the shapes, dtypes and backends involved."""

from __future__ import annotations


class OpError(ValueError, TypeError):
    """An op could not run on the inputs it was given.

    It is both a ``ValueError`` and a ``TypeError`` so that code catching either keeps
    working; the message names the op, every input's shape, dtype and backend, and the
    library's own message.
    """


class BackendMismatchError(OpError):
    """Tensors from different backends or devices were combined."""


class FileFormatError(ValueError):
    """A file given to :func:`minitorch.load` is not one :func:`minitorch.save` wrote, or
    is damaged (empty, truncated, corrupt); the message names the file and the fault."""


class DistributedError(RuntimeError):
    """A collective of :mod:`minitorch.distributed` failed: another rank died, raised or
    did not answer within the timeout, or the ranks' models differ; the message names
    the call and the rank."""


class CaptureError(RuntimeError):
    """A step given to :func:`minitorch.capture` cannot be recorded or replayed as it
    is (a value read on the host inside it, random draws, a data-dependent shape...);
    the message says why and what to change."""
