"""Errors that name the op, the shapes, dtypes and backends involved."""

from __future__ import annotations

from typing import Any


class OpError(ValueError, TypeError):
    """An op could not run on the inputs it was given.

    It is both a ``ValueError`` and a ``TypeError`` so that code catching either keeps
    working; the message names the op, every input's shape, dtype and backend, and the
    library's own message.
    """


class BackendMismatchError(OpError):
    """Tensors from different backends or devices were combined."""


def describe(x: Any) -> str:
    """A short description of an op argument: shape, dtype and backend of a Tensor."""
    from .tensor import Tensor

    if isinstance(x, Tensor):
        return (
            f"Tensor(shape={tuple(x.data.shape)}, dtype={x._backend.dtype_name(x.data.dtype)}, "
            f"backend={x._backend.name}, device={x.device})"
        )
    if isinstance(x, bool | int | float):
        return f"{type(x).__name__} {x!r}"
    shape = getattr(x, "shape", None)
    if shape is not None:
        return f"{type(x).__module__}.{type(x).__name__}(shape={tuple(shape)}, dtype={x.dtype})"
    return type(x).__name__
