"""Pure Array API implementations of what the standard lacks.

Every function here takes the namespace ``xp`` and arrays of that namespace, and uses
nothing else, so it runs on any conforming library (array-api-strict proves it). A
backend file replaces a function when its library has a faster or native one.
"""

from __future__ import annotations

import math
import types
from typing import Any

import numpy as np

Array = Any

# W. J. Cody / S. L. Moshier (Cephes ``ndtr.c``) rational approximations of erf and
# erfc. They reach full double precision (~1e-16 relative) on all three ranges.
_T = (
    9.60497373987051638749e0,
    9.00260197203842689217e1,
    2.23200534594684319226e3,
    7.00332514112805075473e3,
    5.55923013010394962768e4,
)
_U = (
    1.0,
    3.35617141647503099647e1,
    5.21357949780152679795e2,
    4.59432382970980127987e3,
    2.26290000613890934246e4,
    4.92673942608635921086e4,
)
_P = (
    2.46196981473530512524e-10,
    5.64189564831068821977e-1,
    7.46321056442269912687e0,
    4.86371970985681366614e1,
    1.96520832956077098242e2,
    5.26445194995477358631e2,
    9.34528527171957607540e2,
    1.02755188689515710272e3,
    5.57535335369399327526e2,
)
_Q = (
    1.0,
    1.32281951154744992508e1,
    8.67072140885989742329e1,
    3.54937778887819891062e2,
    9.75708501743205489753e2,
    1.82390916687909736289e3,
    2.24633760818710981792e3,
    1.65666309194161350182e3,
    5.57535340817727675546e2,
)
_R = (
    5.64189583547755073984e-1,
    1.27536670759978104416e0,
    5.01905042251180477414e0,
    6.16021097993053585195e0,
    7.40974269950448939160e0,
    2.97886665372100240670e0,
)
_S = (
    1.0,
    2.26052863220117276590e0,
    9.39603524938001434673e0,
    1.20489539808096656605e1,
    1.70814450747565897222e1,
    9.60896809063285878198e0,
    3.36907645100081516050e0,
)


def _polyval(coefs: tuple[float, ...], x: Array) -> Array:
    acc = x * 0.0 + coefs[0]
    for c in coefs[1:]:
        acc = acc * x + c
    return acc


def erf(xp: Any, x: Array) -> Array:
    """The error function in pure ``xp`` (Cephes rational approximations)."""
    ax = xp.abs(x)
    z = x * x
    small = x * _polyval(_T, z) / _polyval(_U, z)
    # erfc(|x|) for |x| >= 1; clamp the argument so that no branch overflows.
    a = xp.clip(ax, 1.0, 30.0)
    e = xp.exp(-(a * a))
    mid = e * _polyval(_P, a) / _polyval(_Q, a)
    far = e * _polyval(_R, a) / _polyval(_S, a)
    erfc_abs = xp.where(a < 8.0, mid, far)
    large = xp.where(x < 0.0, erfc_abs - 1.0, 1.0 - erfc_abs)
    return xp.where(ax <= 1.0, small, large)


def all_in_range(xp: Any, x: Array, low: int, high: int) -> Array:
    """Whether every element of the integer array ``x`` lies in ``[low, high)``: a 0-d
    boolean array (True for no elements), which an op reads on the host to refuse an
    index or class target out of range."""
    return xp.all(xp.logical_and(x >= low, x < high))


def index_array(xp: Any, x: Array) -> Array:
    """An integer array of indices (or class targets) as every library indexes with it:
    int32 and int64 as they are, int8, int16, uint8 and uint16 as int32, uint32 and
    uint64 as int64, with the same values (a uint64 beyond int64's range becomes its
    largest value, out of range of any axis, not a negative index). torch indexes only
    with int32 and int64 (and reads a uint8 index as a mask), and array-api-strict
    cannot compare a uint8 array with a negative bound; NumPy takes them all."""
    dt = x.dtype
    if dt == xp.int64 or dt == xp.int32:
        return x
    if dt == xp.uint64:
        return xp.astype(xp.minimum(x, _INT64_MAX), xp.int64)
    return xp.astype(x, xp.int64 if dt == xp.uint32 else xp.int32)


_INT64_MAX = 2**63 - 1


def scatter_add(xp: Any, n: int, index: Array, values: Array) -> Array:
    """Sum the rows of ``values`` into ``n`` rows at ``index``; repeats accumulate.

    ``index`` is a 1-D integer array of length ``m``; ``values`` has shape ``(m, *rest)``;
    the result has shape ``(n, *rest)``. The standard has no scatter, so this builds a
    one-hot matrix and multiplies: exact sums, O(m * n) memory.
    """
    m = index.shape[0]
    rest = tuple(values.shape[1:])
    flat = xp.reshape(values, (m, math.prod(rest)))
    # at least int32: uint8 indices into more than 256 rows must not wrap
    slots = xp.arange(n, dtype=xp.result_type(index.dtype, xp.int32), device=index.device)
    onehot = xp.astype(xp.expand_dims(index, axis=1) == slots, values.dtype)
    out = xp.matmul(xp.permute_dims(onehot, (1, 0)), flat)
    return xp.reshape(out, (n, *rest))


def put_rows(xp: Any, x: Array, index: Array, values: Any) -> Array:
    """A copy of ``x`` (``(n, *rest)``) with its rows at ``index`` (1-D integers in
    ``[0, n)``) set to the rows of ``values`` (``(m, *rest)``, or a Python number for
    all); where an index repeats, the last of its rows lands (NumPy's rule). The
    standard has no assignment through an integer array: this compares every index
    with every row, O(m * n) memory, as :func:`scatter_add`."""
    n, m = x.shape[0], index.shape[0]
    slots = xp.arange(n, dtype=xp.result_type(index.dtype, xp.int32), device=index.device)
    order = xp.arange(m, dtype=slots.dtype, device=index.device)
    hit = xp.expand_dims(index, axis=1) == slots  # (m, n)
    last = xp.max(xp.where(hit, xp.expand_dims(order, axis=1), -1), axis=0) if m else None
    if last is None:
        return xp.asarray(x, copy=True)
    written = xp.reshape(last >= 0, (n, *(1,) * (x.ndim - 1)))
    if not hasattr(values, "shape"):
        return xp.where(written, xp.asarray(values, dtype=x.dtype, device=x.device), x)
    rows = xp.take(values, xp.where(last >= 0, last, 0), axis=0)
    return xp.where(written, rows, x)


def setitem(xp: Any, x: Array, key: Any, value: Array) -> Array:
    """Return a copy of ``x`` with ``x[key] = value`` (the input is not modified)."""
    out = xp.asarray(x, copy=True)
    out[key] = value
    return out


# ---------------------------------------------------------------- dtype ranges
def int_range(xp: Any, dtype: Any) -> tuple[int, int, str]:
    """The smallest and largest value of an integer dtype and its name, of the dtype the
    library makes of it (JAX without x64 mode makes int64 int32)."""
    info = xp.iinfo(dtype)
    return int(info.min), int(info.max), dtype_name_of(getattr(info, "dtype", dtype))


def dtype_name_of(dtype: Any) -> str:
    """``"int8"`` for NumPy's dtype and scalar type, torch's, JAX's and strict's (and
    the name torch's iinfo gives)."""
    if isinstance(dtype, np.dtype):
        return dtype.name
    if isinstance(dtype, type):
        return dtype.__name__
    return str(dtype).rsplit(".", 1)[-1]


# ---------------------------------------------------------------- VJP kernels
# The gradients of a few ops, as one function each, so that a library with a fused
# kernel for them (torch's aten ``tanh_backward``, ...) makes one launch where these make
# two to four. Each takes the output's gradient ``g`` and the op's output ``out`` (and
# softmax_cross_entropy, the logits and targets: it gives the loss and its gradient);
# the differentiable namespace runs these very formulas on graph Tensors (create_graph).


def relu_backward(xp: Any, g: Array, out: Array) -> Array:
    """``g`` where ``relu``'s output is not 0. ``out`` is 0 at an inactive unit, else
    positive or nan: a where(), not a multiply by the mask, so a nan gradient at an
    inactive unit gives 0 and a nan input passes ``g`` (as PyTorch)."""
    return xp.where(out != 0.0, g, 0.0)


def tanh_backward(xp: Any, g: Array, out: Array) -> Array:
    """``g * (1 - tanh^2)``."""
    return g * (1.0 - out * out)


def sigmoid_backward(xp: Any, g: Array, out: Array) -> Array:
    """``g * s * (1 - s)``."""
    return g * out * (1.0 - out)


def softmax_backward(xp: Any, g: Array, out: Array, axis: int | None) -> Array:
    """``s * (g - sum(g * s))`` along ``axis`` (None: a 0-d ``out``)."""
    return out * (g - xp.sum(g * out, axis=axis, keepdims=True))


def log_softmax_backward(xp: Any, g: Array, out: Array, axis: int | None) -> Array:
    """``g - softmax * sum(g)`` along ``axis`` (``out`` is the log-softmax; None: 0-d)."""
    return g - xp.exp(out) * xp.sum(g, axis=axis, keepdims=True)


def is_target(xp: Any, t: Array, c: int) -> Array:
    """``(n, c)`` booleans: whether class ``j`` is row ``i``'s target ``t[i]``."""
    classes = xp.arange(c, dtype=_wide(xp, t), device=t.device)
    return xp.reshape(t, (t.shape[0], 1)) == classes


def at_targets(xp: Any, s: Array, t: Array) -> Array:
    """``s[i, t[i]]`` as ``(n, 1)``, taken rather than summed from ``s * one_hot(t)``:
    ``s`` may hold -inf, and -inf * 0 is nan."""
    n, c = s.shape
    rows = xp.arange(0, n * c, c, dtype=_wide(xp, t), device=t.device) + t
    return xp.reshape(xp.take(xp.reshape(s, (-1,)), rows, axis=0), (n, 1))


def _wide(xp: Any, t: Array) -> Any:
    """An integer dtype for indices derived from ``t``'s (class numbers, flat offsets):
    at least int32, so that uint8 targets over 256 classes or rows do not wrap."""
    return xp.result_type(t.dtype, xp.int32)


def softmax_cross_entropy(xp: Any, x: Array, t: Array) -> tuple[Array, Array]:
    """Row losses ``-log_softmax(x)[i, t[i]]`` as ``(n, 1)``, and their gradient
    ``softmax(x) - one_hot(t)``, for logits ``x`` of shape ``(n, c)``, ``n, c > 0``, and
    class indices ``t`` of shape ``(n,)``, every one in ``[0, c)``."""
    s = x - xp.max(x, axis=1, keepdims=True)  # a shift that keeps exp finite
    e = xp.exp(s)
    z = xp.sum(e, axis=1, keepdims=True)
    q = xp.astype(is_target(xp, t, x.shape[1]), x.dtype)
    return xp.log(z) - at_targets(xp, s, t), e / z - q


#: the VJP kernels every backend's namespace has (its library's, or these formulas)
VJP_KERNELS: dict[str, Any] = {
    "relu_backward": relu_backward,
    "tanh_backward": tanh_backward,
    "sigmoid_backward": sigmoid_backward,
    "softmax_backward": softmax_backward,
    "log_softmax_backward": log_softmax_backward,
    "softmax_cross_entropy": softmax_cross_entropy,
}


def to_numpy(x: Array) -> np.ndarray:
    """Host NumPy copy of any array that supports DLPack or ``__array__``."""
    try:
        return np.asarray(x)
    except (TypeError, ValueError, RuntimeError):
        return np.from_dlpack(x)


# ---------------------------------------------------------------- the linalg extension
def diagonal(xp: Any, x: Array, offset: int = 0) -> Array:
    """The diagonal ``offset`` of the last two axes of ``x`` (``linalg.diagonal``)."""
    n, m = x.shape[-2], x.shape[-1]
    r0, c0 = max(-offset, 0), max(offset, 0)
    length = max(min(n - r0, m - c0), 0)
    flat = xp.reshape(x, (*x.shape[:-2], n * m))
    idx = xp.arange(length, device=x.device)
    return xp.take(flat, (idx + r0) * m + idx + c0, axis=-1)


def vector_norm(
    xp: Any,
    x: Array,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool = False,
    ord: float = 2,
) -> Array:
    """The ``ord``-norm of ``x`` over ``axis`` (``linalg.vector_norm``)."""
    a = xp.abs(x)
    if ord == math.inf:
        return xp.max(a, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return xp.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return xp.sum(xp.astype(a != 0, x.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return xp.sum(a, axis=axis, keepdims=keepdims)
    if ord == 2:
        return xp.sqrt(xp.sum(a * a, axis=axis, keepdims=keepdims))
    return xp.sum(a**ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


def linalg_namespace(xp: Any) -> Any:
    """The library's ``linalg`` extension as a plain object (array-api-strict provides
    it on attribute access only, so ``dir`` does not list it), plus a pure-standard
    version of the functions that need no LAPACK (``diagonal``, ``vector_norm``, and the
    four the main namespace has) where the library lacks them. Decompositions have no
    fallback: minitorch's ops say so in an OpError."""
    lib = getattr(xp, "linalg", None)
    names = [k for k in dir(lib) if not k.startswith("_")] if lib is not None else []
    ns = types.SimpleNamespace(**{k: getattr(lib, k) for k in names})
    fallbacks: dict[str, Any] = {
        "diagonal": lambda x, /, *, offset=0: diagonal(xp, x, offset),
        "vector_norm": lambda x, /, *, axis=None, keepdims=False, ord=2: vector_norm(
            xp, x, axis, keepdims, ord
        ),
    }
    for name in ("matmul", "matrix_transpose", "tensordot", "vecdot"):
        if hasattr(xp, name):
            fallbacks[name] = getattr(xp, name)
    for name, fn in fallbacks.items():
        if not hasattr(ns, name):
            setattr(ns, name, fn)
    return ns
