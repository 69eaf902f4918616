"""NumPy: native erf from SciPy when installed, ``np.add.at`` for scatter-add."""

from __future__ import annotations

import functools
import math
import operator
from typing import Any

import array_api_compat.numpy as xp
import numpy as np

from . import Backend, _fallback, make_backend


def _all_in_range(x: Any, low: int, high: int) -> Any:
    """Whether every element of ``x`` lies in ``[low, high)``, a 0-d boolean array: two
    reductions, where the standard's formula makes two comparisons, an and, and all."""
    if x.size == 0:
        return np.asarray(True)
    # the ufuncs' reduce: x.min() and x.max() are Python wrappers around them
    return np.asarray(
        bool(np.minimum.reduce(x, axis=None) >= low and np.maximum.reduce(x, axis=None) < high)
    )


def _put_rows(x: Any, index: Any, values: Any) -> Any:
    """A copy of ``x`` with its rows at ``index`` set (a repeated index: the last)."""
    out = x.copy()
    out[index] = values
    return out


def _scatter_add(n: int, index: Any, values: Any) -> Any:
    """Rows of ``values`` summed into ``n`` slots, by ``np.add.at`` over the flat
    positions of their elements: NumPy 2's one-dimensional ``add.at`` is its fast path,
    2-4x faster than ``add.at`` on whole rows or sorted rows summed by ``add.reduceat``
    (an embedding's gradient: 256 rows of 512, 1024 of 8), with the sums of ``add.at``
    on rows, in the same order. Negative indices (from the end) take ``add.at`` on rows."""
    out = np.zeros((n, *values.shape[1:]), dtype=values.dtype)
    m = index.shape[0]
    row = math.prod(values.shape[1:])
    if row == 1 or m == 0 or index.min() < 0:  # row == 1: values (m,) or (m, 1, ...)
        np.add.at(out, index, values)
        return out
    pos = (index.astype(np.int64)[:, None] * row + np.arange(row)).reshape(-1)
    np.add.at(out.reshape(-1), pos, values.reshape(-1))
    return out


def _sum(x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> Any:
    # np.add.reduce skips np.sum's Python-level dispatch (~3 us of a 4 us small sum)
    if dtype is None and x.dtype.kind == "f":
        return np.add.reduce(x, axis=axis, keepdims=keepdims)  # type: ignore[call-overload]
    return np.sum(x, axis=axis, dtype=dtype, keepdims=keepdims)


def _max(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    if x.dtype.kind == "f":
        n = x.shape[-1] if x.ndim else 0
        if (
            keepdims
            and axis in (-1, x.ndim - 1)
            and n >= 8
            and n & (n - 1) == 0
            and x.size >= _HALVING_FROM
        ):
            # rows of 2^k (a softmax over attention scores): the larger of the two halves,
            # k times, is 1.5x faster than np.maximum.reduce, which walks short rows
            # element by element; the same values (np.maximum keeps nan too)
            while x.shape[-1] > 1:
                half = x.shape[-1] // 2
                x = np.maximum(x[..., :half], x[..., half:])
            return x
        return np.maximum.reduce(x, axis=axis, keepdims=keepdims)  # type: ignore[call-overload]
    return np.max(x, axis=axis, keepdims=keepdims)


_HALVING_FROM = 16384


def _mean(x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
    # np.mean's Python wrapper costs 10 us of a 30 us layer-norm mean; the same sum and
    # division, without it
    if x.dtype.kind != "f":
        return np.mean(x, axis=axis, keepdims=keepdims)
    total = np.add.reduce(x, axis=axis, keepdims=keepdims)  # type: ignore[call-overload]
    count = x.size // max(total.size, 1) if x.size else 0
    return np.true_divide(total, count, out=total) if type(total) is np.ndarray else total / count


def _astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
    return x.astype(dtype, copy=copy)


def _reshape(x: Any, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Any:
    return x.reshape(shape) if copy is None else np.reshape(x, shape, copy=copy)


# the unsigned type of each float type's width, to select by bits
_BITS = {
    np.dtype(np.float16): np.uint16,
    np.dtype(np.float32): np.uint32,
    np.dtype(np.float64): np.uint64,
}


def _where(condition: Any, x1: Any, x2: Any, /) -> Any:
    """``where(condition, x1, 0.0)`` on a float array of 2k elements or more is a bitwise
    AND of its bits with the mask: np.where branches per element, and on a random mask
    (a ReLU's) it is 2x slower than that at 16k elements and 10x at 64k. The values are
    the same, nan, inf and -0.0 included; anything else is np.where."""
    if (
        type(x2) is float
        and x2 == 0.0
        and math.copysign(1.0, x2) > 0
        and type(x1) is np.ndarray
        and x1.size >= _WHERE_BITS_FROM
        and type(condition) is np.ndarray
        and condition.dtype == np.bool_
        and condition.shape == x1.shape
        and x1.dtype in _BITS
    ):
        bits = _BITS[x1.dtype]
        mask = condition.view(np.uint8).astype(bits)
        np.negative(mask, out=mask)  # 1 -> all bits set
        return (x1.view(bits) & mask).view(x1.dtype)
    return np.where(condition, x1, x2)


_WHERE_BITS_FROM = 2048


def _softmax_cross_entropy(x: Any, t: Any) -> tuple[Any, Any]:
    """``_fallback.softmax_cross_entropy`` with the same values, bit for bit: each row's
    shifted logit at its target read by fancy indexing and 1 taken from the softmax at
    the target in place, where the formula builds an ``(n, c)`` one-hot mask, casts it
    and subtracts it whole (3x the time of the whole op at batch 32, 10 classes)."""
    if type(x) is not np.ndarray or x.dtype.kind != "f":
        return _fallback.softmax_cross_entropy(xp, x, t)
    rows = np.arange(x.shape[0])
    s = x - np.maximum.reduce(x, axis=1, keepdims=True)  # a shift that keeps exp finite
    picked = s[rows, t]
    e = np.exp(s, out=s)
    z = np.add.reduce(e, axis=1, keepdims=True)
    nll = np.log(z)
    nll[:, 0] -= picked
    d = np.divide(e, z, out=e)
    d[rows, t] -= 1.0
    return nll, d


def _native_functions() -> dict[str, Any]:
    """NumPy 2 implements these exactly as the standard specifies; calling them directly
    skips array-api-compat's wrapper (about 1 us per call, several calls per op).
    ``matrix_transpose`` is the ``.mT`` attribute and ``astype``/``reshape`` the
    methods: NumPy's own functions add two Python calls each. ``isdtype`` answers from
    a cache (NumPy's walks the kinds in Python every time)."""
    names = ("matmul", "permute_dims", "arange", "ones_like", "zeros_like")
    if int(np.__version__.split(".")[0]) < 2:
        return {}
    fns = {n: getattr(np, n) for n in names if hasattr(np, n)}
    return {
        **fns,
        "matrix_transpose": operator.attrgetter("mT"),
        "astype": _astype,
        "reshape": _reshape,
        "isdtype": functools.cache(np.isdtype),
    }


def _parse_device(d: Any) -> Any:
    if str(d) != "cpu":
        raise ValueError(f"the numpy backend has only the 'cpu' device, got {d!r}")
    return "cpu"


#: arrays this small are updated by NumPy's two operations (a BLAS call through SciPy's
#: wrapper costs about as much as the arithmetic on a few thousand elements)
_AXPY_FROM = 4096


def _axpy_with(blas: Any) -> Any:
    """The backend's ``axpy_(y, a, x)`` by SciPy's BLAS wrappers (``saxpy``, ``daxpy``):
    ``y += a * x`` in one pass over y's memory, where ``y -= a * x`` reads x twice and
    writes a temporary (2x the time on a 784x512 float32 weight)."""
    kernels = {np.dtype(np.float32): blas.saxpy, np.dtype(np.float64): blas.daxpy}

    def axpy_(y: Any, a: float, x: Any) -> bool:
        kernel = kernels.get(y.dtype)
        if (
            kernel is None
            or y.size < _AXPY_FROM
            or type(y) is not np.ndarray
            or type(x) is not np.ndarray
            or x.dtype != y.dtype
            or x.shape != y.shape
            or not (y.flags.c_contiguous and y.flags.writeable and x.flags.c_contiguous)
            or np.may_share_memory(x, y)
        ):
            return False
        flat = y.reshape(-1)
        out = kernel(x.reshape(-1), flat, a=a)
        if out.ctypes.data != flat.ctypes.data:  # (the wrapper copied: write it back)
            np.copyto(flat, out)
        return True

    return axpy_


def _setitem_(x: Any, key: Any, value: Any) -> bool:
    """The backend's ``setitem_``: ``x[key] = value`` in ``x``'s memory, where ``x``
    owns it and the value has its dtype (a Python number: ``__setitem__`` has fitted it
    to the dtype already). NumPy checks every index and the value's shape before it
    writes anything, so a refused assignment leaves ``x`` as it was."""
    if type(x) is not np.ndarray or x.base is not None or not x.flags.writeable:
        return False
    if type(value) is np.ndarray:
        if value.dtype != x.dtype:
            return False
    elif type(value) not in (bool, int, float):  # (a captured step's traced array)
        return False
    for k in key if type(key) is tuple else (key,):
        if type(k) is np.ndarray:
            if k.dtype.kind not in "biu":
                return False
        elif not (type(k) is int or type(k) is slice or k is None or k is Ellipsis):
            return False
    try:
        x[key] = value
    except (IndexError, ValueError, TypeError):  # said again by the general path
        return False
    return True


#: one block this large, allocated and freed when the backend loads (see below)
_LIFT_MALLOC_BYTES = 16 * 2**20


def load() -> Backend:
    # glibc's malloc maps every block above a threshold (128 KiB at start) afresh from
    # the OS and unmaps it when freed, so each op's temporary of a training step (a 1 MiB
    # activation) costs page faults; it raises the threshold itself to the size of the
    # largest mapped block freed so far (up to 32 MiB). Freeing one 16 MiB block now lifts
    # it past a small model's temporaries, which are then reused from the heap: the tiny
    # transformer of bench/bench_transformer.py steps in 17 ms instead of 31 ms. Elsewhere
    # than glibc this is one allocation and nothing more.
    np.empty(_LIFT_MALLOC_BYTES, dtype=np.uint8)
    erf = None
    axpy_ = None
    try:
        from scipy.linalg import blas as _blas
        from scipy.special import erf as _sc_erf

        def erf(x: Any) -> Any:
            # SciPy has float32 and float64 loops: a float16 array came back float64
            out = _sc_erf(x)
            return out if out.dtype == x.dtype else out.astype(x.dtype)

        axpy_ = _axpy_with(_blas)
    except ImportError:  # the pure-standard fallback is used instead
        pass
    return make_backend(
        "numpy",
        xp,
        np,
        device="cpu",
        erf=erf,
        scatter_add=_scatter_add,
        put_rows=_put_rows,
        all_in_range=_all_in_range,
        to_numpy=np.asarray,
        from_numpy=lambda a, dtype, device: np.asarray(a, dtype=dtype),
        parse_device=_parse_device,
        owns=lambda x: x.base is None,
        vjp_kernels={"softmax_cross_entropy": _softmax_cross_entropy},
        axpy_=axpy_,
        setitem_=_setitem_,
        overrides={"sum": _sum, "max": _max, "mean": _mean, "where": _where, **_native_functions()},
    )
