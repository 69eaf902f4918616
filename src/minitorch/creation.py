"""Creating tensors: from data, filled, ranges and random draws."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .backend import Backend, get_backend, shape_arg
from .tensor import Tensor, _check_float

__all__ = [
    "arange",
    "full",
    "full_like",
    "linspace",
    "manual_seed",
    "ones",
    "ones_like",
    "rand",
    "randint",
    "randn",
    "tensor",
    "zeros",
    "zeros_like",
]


def tensor(
    data: Any, *, dtype: Any = None, requires_grad: bool = False, name: str | None = None
) -> Tensor:
    """A new leaf tensor on the current backend, copied from ``data``.

    Python floats take the backend's default float dtype (float32 unless changed with
    :func:`set_backend`); Python ints become int64 and bools bool; NumPy arrays keep
    their dtype (float64 stays float64).

    Examples
    --------
    >>> import minitorch, numpy as np
    >>> minitorch.tensor([[1.0, 2.0]]).dtype
    dtype('float32')
    >>> minitorch.tensor(np.zeros(2)).dtype
    dtype('float64')
    """
    return Tensor(data, requires_grad, dtype=dtype, name=name)


def _new(
    fill: Any,
    shape: Sequence[int],
    dtype: Any,
    requires_grad: bool,
    be: Backend | None = None,
    device: Any = None,
) -> Tensor:
    be = be or get_backend()
    dt = be.resolve_dtype(dtype)
    shape = tuple(int(s) for s in shape)
    dev = be.device if device is None else device
    arr = be.xp.full(shape, fill, dtype=dt, device=dev)
    t = Tensor._make(arr, be, None)
    if requires_grad:
        _check_float(t, "requires_grad=True")
        t.requires_grad = True
    return t


def zeros(*shape: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros: ``zeros(2, 3)`` or ``zeros((2, 3))``."""
    return _new(0.0, shape_arg(shape), dtype, requires_grad)


def ones(*shape: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones: ``ones(2, 3)`` or ``ones((2, 3))``."""
    return _new(1.0, shape_arg(shape), dtype, requires_grad)


def full(
    shape: Sequence[int] | int, fill_value: float, *, dtype: Any = None, requires_grad: bool = False
) -> Tensor:
    """A tensor filled with ``fill_value``."""
    shp = (shape,) if isinstance(shape, int) else tuple(shape)
    return _new(fill_value, shp, dtype, requires_grad)


def _like(x: Tensor, fill: float, dtype: Any, requires_grad: bool) -> Tensor:
    dt = x.data.dtype if dtype is None else x._backend.resolve_dtype(dtype)
    return _new(fill, x.shape, dt, requires_grad, x._backend, x.device)


def zeros_like(x: Tensor, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Zeros with the shape, dtype, backend and device of ``x``."""
    return _like(x, 0.0, dtype, requires_grad)


def ones_like(x: Tensor, *, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Ones with the shape, dtype, backend and device of ``x``."""
    return _like(x, 1.0, dtype, requires_grad)


def full_like(
    x: Tensor, fill_value: float, *, dtype: Any = None, requires_grad: bool = False
) -> Tensor:
    """``fill_value`` with the shape, dtype, backend and device of ``x``."""
    return _like(x, fill_value, dtype, requires_grad)


def arange(
    start: float,
    stop: float | None = None,
    step: float = 1,
    *,
    dtype: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Evenly spaced values in ``[start, stop)``; int64 for integer arguments."""
    be = get_backend()
    if stop is None:
        start, stop = 0, start
    ints = all(isinstance(v, int) for v in (start, stop, step))
    dt = (
        be.resolve_dtype(dtype) if dtype is not None else (be.dtypes["int64"] if ints else be.dtype)
    )
    arr = be.xp.arange(start, stop, step, dtype=dt, device=be.device)
    t = Tensor._make(arr, be, None)
    if requires_grad:
        _check_float(t, "arange(requires_grad=True)")
        t.requires_grad = True
    return t


def linspace(
    start: float, stop: float, num: int, *, dtype: Any = None, requires_grad: bool = False
) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive."""
    be = get_backend()
    arr = be.xp.linspace(start, stop, num, dtype=be.resolve_dtype(dtype), device=be.device)
    t = Tensor._make(arr, be, None)
    t.requires_grad = requires_grad
    return t


# ------------------------------------------------------------------ random numbers
# Draws are made on the host with NumPy's PCG64 and then moved to the backend, so the
# same seed gives the same numbers on every backend and device.
_rng: list[np.random.Generator] = [np.random.default_rng(0)]


def manual_seed(seed: int) -> None:
    """Seed the generator behind ``randn``, ``rand``, ``randint`` and ``dropout``."""
    _rng[0] = np.random.default_rng(seed)


def generator() -> np.random.Generator:
    """The host generator (NumPy PCG64) that minitorch draws from."""
    return _rng[0]


def _random(draw: np.ndarray, dtype: Any, requires_grad: bool) -> Tensor:
    be = get_backend()
    dt = be.resolve_dtype(dtype)
    t = Tensor._make(be.from_numpy(draw, dt, be.device), be, None)
    if requires_grad:
        _check_float(t, "requires_grad=True")
        t.requires_grad = True
    return t


def randn(*shape: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Standard normal draws: ``randn(2, 3)`` or ``randn((2, 3))``.

    Examples
    --------
    >>> import minitorch
    >>> minitorch.manual_seed(0)
    >>> a = minitorch.randn(3)
    >>> minitorch.manual_seed(0)
    >>> bool((minitorch.randn(3) == a).all())
    True
    """
    return _random(_rng[0].standard_normal(shape_arg(shape)), dtype, requires_grad)


def rand(*shape: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Uniform draws in ``[0, 1)``: ``rand(2, 3)`` or ``rand((2, 3))``."""
    return _random(_rng[0].random(shape_arg(shape)), dtype, requires_grad)


def randint(low: int, high: int, shape: Sequence[int]) -> Tensor:
    """Uniform integers in ``[low, high)`` (int64)."""
    be = get_backend()
    draw = _rng[0].integers(low, high, size=tuple(shape))
    return Tensor._make(be.from_numpy(draw, be.dtypes["int64"], be.device), be, None)
