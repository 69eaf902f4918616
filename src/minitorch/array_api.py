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


def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None) -> Any:
    be = _backend()
    return be.xp.arange(start, stop, step, dtype=dtype, device=device or be.device)


def _creator(name: str) -> Any:
    def fn(shape: Sequence[int] | int, *, dtype: Any = None, device: Any = None) -> Tensor:
        be = _backend()
        return _const(getattr(be.xp, name)(shape, dtype=dtype or be.dtype, device=device or be.device))

    fn.__name__ = name
    return fn


zeros = _creator("zeros")
ones = _creator("ones")


def full(shape: Sequence[int] | int, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Tensor:
    be = _backend()
    return _const(be.xp.full(shape, fill_value, dtype=dtype or be.dtype, device=device or be.device))


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


def __getattr__(name: str) -> Any:
    # dtypes and constants of the backend in use: float32, float64, int64, bool, pi, e, ...
    xp = _backend().xp
    if hasattr(xp, name):
        return getattr(xp, name)
    raise AttributeError(f"module 'minitorch.array_api' has no attribute {name!r}")
