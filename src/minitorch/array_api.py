"""minitorch's own differentiable array namespace.

Functions named as in the Array API standard that take and return Tensors (backend
arrays and Python scalars are accepted as constants). ``Tensor.__array_namespace__``
returns this module, and the engine passes it as ``xp`` to every VJP when
``create_graph=True``: the same derivative rules then record their own graph, which is
how higher-order derivatives come for free.

Creation functions (``arange``, ``zeros``, ...) make constants on the backend of the
backward pass in progress (or the current backend outside one).
"""

from __future__ import annotations

import math as _math
import threading
from collections.abc import Sequence
from typing import Any

from .backend import Backend, get_backend
from .ops import activation as _act
from .ops import elementwise as _el
from .ops import indexing as _ix
from .ops import linalg as _la
from .ops import reduction as _red
from .ops import shape as _sh
from .tensor import Tensor

__array_api_version__ = "2024.12"


class _Context(threading.local):
    backend: Backend | None = None


_ctx = _Context()


def _backend() -> Backend:
    return _ctx.backend or get_backend()


def _const(a: Any) -> Tensor:
    return Tensor._make(a, _backend(), None)


def _data(x: Any) -> Any:
    return x.data if isinstance(x, Tensor) else x


# ------------------------------------------------------------------ differentiable
add = _el.add
subtract = _el.sub
multiply = _el.mul
divide = _el.div
negative = _el.neg
pow = _el.pow
exp = _el.exp
log = _el.log
log1p = _el.log1p
sqrt = _el.sqrt
abs = _el.abs
maximum = _el.maximum
minimum = _el.minimum
clip = _el.clip
erf = _el.erf
tanh = _act.tanh
sum = _red.sum
mean = _red.mean
max = _red.max
min = _red.min
var = _red.var
reshape = _sh.reshape
permute_dims = _sh.permute_dims
broadcast_to = _sh.broadcast_to
expand_dims = _sh.expand_dims
squeeze = _sh.squeeze
flip = _sh.flip
concat = _sh.concat
stack = _sh.stack
matrix_transpose = _sh.matrix_transpose
matmul = _la.matmul
take = _ix.take


def where(condition: Any, x1: Any, x2: Any) -> Tensor:
    """``x1`` where ``condition``, else ``x2``; differentiable in ``x1`` and ``x2``."""
    return _el.where(condition, x1, x2)


def astype(x: Any, dtype: Any, /, *, copy: bool = True) -> Any:
    if isinstance(x, Tensor):
        return _el.astype(x, dtype=dtype)
    return _backend().xp.astype(x, dtype)


def moveaxis(x: Tensor, source: int, destination: int) -> Tensor:
    order = [i for i in range(x.ndim) if i != source % x.ndim]
    order.insert(destination % x.ndim, source % x.ndim)
    return _sh.permute_dims(x, tuple(order))


def scatter_add(n: int, index: Any, values: Any) -> Tensor:
    """The backend contract's ``scatter_add(n, index, values)``, differentiable."""
    return _ix.scatter_add(values, index, n=n)


def setitem(x: Any, key: Any, value: Any) -> Tensor:
    """A copy of ``x`` with ``x[key] = value``, differentiable in both."""
    if not isinstance(x, Tensor):
        x = _const(x)
    return _ix.setitem(x, value, key=key)


# ------------------------------------------------------------------ no gradient
def sign(x: Any) -> Any:
    return _el.sign(x) if isinstance(x, Tensor) else _backend().xp.sign(x)


def isfinite(x: Any) -> Any:
    return _el.isfinite(x) if isinstance(x, Tensor) else _backend().xp.isfinite(x)


def logical_not(x: Any) -> Any:
    return _el.logical_not(x) if isinstance(x, Tensor) else _backend().xp.logical_not(x)


def isdtype(dtype: Any, kind: Any) -> bool:
    return bool(_backend().xp.isdtype(dtype, kind))


def arange(
    start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None
) -> Any:
    be = _backend()
    return be.xp.arange(start, stop, step, dtype=dtype, device=device or be.device)


def _creator(name: str) -> Any:
    def fn(shape: Sequence[int] | int, *, dtype: Any = None, device: Any = None) -> Tensor:
        be = _backend()
        return _const(
            getattr(be.xp, name)(shape, dtype=dtype or be.dtype, device=device or be.device)
        )

    fn.__name__ = name
    return fn


zeros = _creator("zeros")
ones = _creator("ones")


def full(
    shape: Sequence[int] | int, fill_value: Any, *, dtype: Any = None, device: Any = None
) -> Tensor:
    be = _backend()
    return _const(
        be.xp.full(shape, fill_value, dtype=dtype or be.dtype, device=device or be.device)
    )


def _like(name: str) -> Any:
    def fn(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
        d = _data(x)
        xp = x._backend.xp if isinstance(x, Tensor) else _backend().xp
        out = getattr(xp, name)(d, dtype=dtype, device=device)
        return Tensor._make(out, x._backend, None) if isinstance(x, Tensor) else out

    fn.__name__ = name
    return fn


zeros_like = _like("zeros_like")
ones_like = _like("ones_like")


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None) -> Any:
    if isinstance(obj, Tensor):
        out = _el.clone(obj) if copy else obj
        return _el.astype(out, dtype=dtype) if dtype is not None and dtype != obj.dtype else out
    be = _backend()
    return _const(be.xp.asarray(obj, dtype=dtype, device=device or be.device, copy=copy))


# ------------------------------------------------------------------ composed
def positive(x: Any) -> Any:
    return x


def square(x: Any) -> Tensor:
    return _el.mul(x, x)


def reciprocal(x: Any) -> Tensor:
    return _el.div(1.0, x)


def log2(x: Any) -> Tensor:
    return _el.div(_el.log(x), _math.log(2.0))


def log10(x: Any) -> Tensor:
    return _el.div(_el.log(x), _math.log(10.0))


def logaddexp(x1: Any, x2: Any) -> Tensor:
    """``log(exp(x1) + exp(x2))`` without overflow."""
    m = _el.maximum(x1, x2)
    return m + _el.log1p(_el.exp(-_el.abs(_el.sub(x1, x2))))


def std(x: Any, /, *, axis: Any = None, keepdims: bool = False, correction: float = 0.0) -> Tensor:
    return _el.sqrt(_red.var(x, axis=axis, keepdims=keepdims, correction=correction))


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    return _red.sum(_el.mul(x1, x2), axis=axis)


def broadcast_arrays(*arrays: Any) -> list[Any]:
    shape = _backend().xp.broadcast_shapes(*(tuple(a.shape) for a in arrays))
    return [_sh.broadcast_to(a, shape) if isinstance(a, Tensor) else a for a in arrays]


# ------------------------------------------------------------------ no gradient
def _nograd(name: str, fn: Any) -> Any:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if any(isinstance(a, Tensor) for a in args):
            return fn(*args, **kwargs)
        return getattr(_backend().xp, name)(*args, **kwargs)

    wrapped.__name__ = name
    wrapped.__doc__ = f"The Array API ``{name}`` (no gradient): Tensors in, Tensor out."
    return wrapped


equal = _nograd("equal", _el.eq)
not_equal = _nograd("not_equal", _el.ne)
less = _nograd("less", _el.lt)
less_equal = _nograd("less_equal", _el.le)
greater = _nograd("greater", _el.gt)
greater_equal = _nograd("greater_equal", _el.ge)
argmax = _nograd("argmax", _red.argmax)
argmin = _nograd("argmin", _red.argmin)
all = _nograd("all", _red.all)
any = _nograd("any", _red.any)


def isnan(x: Any) -> Any:
    return logical_not(equal(x, x)) if isinstance(x, Tensor) else _backend().xp.isnan(x)


def empty(shape: Sequence[int] | int, *, dtype: Any = None, device: Any = None) -> Tensor:
    out: Tensor = zeros(shape, dtype=dtype, device=device)
    return out


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
    return zeros_like(x, dtype=dtype, device=device)


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Any:
    d = _data(x)
    xp = x._backend.xp if isinstance(x, Tensor) else _backend().xp
    out = xp.full_like(d, fill_value, dtype=dtype, device=device)
    return Tensor._make(out, x._backend, None) if isinstance(x, Tensor) else out


def eye(
    n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None, device: Any = None
) -> Tensor:
    be = _backend()
    return _const(
        be.xp.eye(n_rows, n_cols, k=k, dtype=dtype or be.dtype, device=device or be.device)
    )


def linspace(
    start: float,
    stop: float,
    /,
    num: int,
    *,
    dtype: Any = None,
    device: Any = None,
    endpoint: bool = True,
) -> Tensor:
    be = _backend()
    arr = be.xp.linspace(
        start, stop, num, dtype=dtype or be.dtype, device=device or be.device, endpoint=endpoint
    )
    return _const(arr)


# dtypes, constants and dtype helpers come from the backend in use
_PASSTHROUGH = frozenset(
    (
        "bool",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
        "complex64",
        "complex128",
        "e",
        "pi",
        "inf",
        "nan",
        "newaxis",
        "finfo",
        "iinfo",
        "result_type",
        "can_cast",
        "broadcast_shapes",
    )
)


def __getattr__(name: str) -> Any:
    if name in _PASSTHROUGH:
        xp = _backend().xp
        if hasattr(xp, name):
            return getattr(xp, name)
    raise AttributeError(
        f"module 'minitorch.array_api' has no attribute {name!r}: {name} is not provided "
        f"by minitorch's differentiable namespace (write it with the functions it has, "
        f"or register it as an op in minitorch.ops)"
    )
