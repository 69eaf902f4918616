"""Creating tensors: from data, filled, ranges and random draws."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .backend import Backend, get_backend, to_host
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


def _is_backend_array(data: Any, be: Backend) -> bool:
    if be.name == "numpy":
        return isinstance(data, np.ndarray)
    mod = type(data).__module__.split(".")[0]
    return mod == be.library.__name__.split(".")[0] and hasattr(data, "shape")


def _as_backend_array(data: Any, be: Backend, dtype: Any = None, device: Any = None) -> Any:
    """Convert Python data, NumPy or any DLPack-capable array to an array of ``be``."""
    if isinstance(data, Tensor):
        data = data.data
    device = be.device if device is None else device
    if _is_backend_array(data, be):
        out = data
        if dtype is not None and out.dtype != dtype:
            out = be.xp.astype(out, dtype)
        if be.name != "numpy" and str(out.device) != str(device):
            out = be.xp.asarray(out, device=device)
        return out
    if not isinstance(data, np.ndarray):
        data = to_host(data)
    if dtype is None:
        if data.dtype.kind == "f" and data.dtype != np.float64 and data.dtype != np.float32:
            dtype = be.dtype
        elif data.dtype.kind in "iu":
            dtype = be.dtypes["int64"]
        else:
            dtype = be.resolve_dtype(data.dtype.name) if data.dtype.name in be.dtypes else None
    return be.from_numpy(data, dtype, device)


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
    be = get_backend()
    dt = be.resolve_dtype(dtype) if dtype is not None else None
    if isinstance(data, Tensor):
        arr = _as_backend_array(data.data, data._backend, dt, data.device)
        be = data._backend
    elif isinstance(data, bool | int | float) or (
        isinstance(data, Sequence) and not isinstance(data, str | bytes)
    ):
        try:
            arr_np = np.asarray(data)
        except ValueError as exc:  # NumPy >= 1.24 refuses ragged nested lists
            arr_np = np.empty(0, dtype=object)
            cause: Exception | None = exc
        else:
            cause = None
        if arr_np.dtype == object:
            raise TypeError(
                "tensor(): could not make a rectangular array of numbers from the data "
                "(ragged nested lists, or Tensors inside a list?)"
            ) from cause
        if dt is None and arr_np.dtype.kind == "f":
            dt = be.dtype
        arr = _as_backend_array(arr_np, be, dt)
    else:
        arr = _as_backend_array(data, be, dt)
    # always a copy, so that later changes to the caller's array never reach this tensor
    arr = be.xp.asarray(arr, copy=True)
    t = Tensor._make(arr, be, None)
    t.name = name
    if requires_grad:
        _check_float(t, "tensor(requires_grad=True)")
        t.requires_grad = True
    return t


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


def _shape(shape: tuple[Any, ...]) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        return tuple(shape[0])
    return tuple(shape)


def zeros(*shape: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of zeros: ``zeros(2, 3)`` or ``zeros((2, 3))``."""
    return _new(0.0, _shape(shape), dtype, requires_grad)


def ones(*shape: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones: ``ones(2, 3)`` or ``ones((2, 3))``."""
    return _new(1.0, _shape(shape), dtype, requires_grad)


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
    return _random(_rng[0].standard_normal(_shape(shape)), dtype, requires_grad)


def rand(*shape: Any, dtype: Any = None, requires_grad: bool = False) -> Tensor:
    """Uniform draws in ``[0, 1)``: ``rand(2, 3)`` or ``rand((2, 3))``."""
    return _random(_rng[0].random(_shape(shape)), dtype, requires_grad)


def randint(low: int, high: int, shape: Sequence[int]) -> Tensor:
    """Uniform integers in ``[low, high)`` (int64)."""
    be = get_backend()
    draw = _rng[0].integers(low, high, size=tuple(shape))
    return Tensor._make(be.from_numpy(draw, be.dtypes["int64"], be.device), be, None)
