"""minitorch's differentiable Array API namespace, one per backend.

``namespace(backend)`` (and ``Tensor.__array_namespace__()``) is an object whose
functions, named as in the Array API standard, take and return Tensors; backend arrays
and Python scalars are accepted as constants, and creation functions (``zeros``,
``arange``, ...) make constants of *that* backend, dtype and device. Every registered
op is in it under its name (and its standard name, e.g. ``subtract`` for ``sub``); the
rest of the standard that is written in terms of ops is defined below.

The engine hands the namespace of a node's backend as ``xp`` to that node's VJP when
``create_graph=True``: the same derivative rules then record their own graph, which is
how higher-order derivatives come for free.

Attribute access on this module itself (``minitorch.array_api.exp``) uses the namespace
of the current backend (:func:`minitorch.get_backend`).
"""

from __future__ import annotations

import math as _math
from collections.abc import Callable, Sequence
from typing import Any

from .backend import Backend, get_backend
from .ops import REGISTRY, OpDef, call
from .tensor import Tensor, register_namespace

__array_api_version__ = "2024.12"
__all__ = ["Namespace", "namespace"]

# dtypes, constants and dtype helpers come from the backend's own namespace
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
# standard names of functions without gradient that also take raw backend arrays
_NO_GRAD = {
    "equal": "eq",
    "not_equal": "ne",
    "less": "lt",
    "less_equal": "le",
    "greater": "gt",
    "greater_equal": "ge",
    "argmax": "argmax",
    "argmin": "argmin",
    "all": "all",
    "any": "any",
    "sign": "sign",
    "isfinite": "isfinite",
    "logical_not": "logical_not",
    "logical_and": "logical_and",
    "logical_or": "logical_or",
}


def _op_named(name: str) -> OpDef | None:
    op = REGISTRY.get(name)
    if op is not None:
        return op
    for candidate in REGISTRY.values():
        if candidate.api == name:
            return candidate
    return None


class Namespace:
    """The differentiable namespace of one backend (its default dtype and device)."""

    __array_api_version__ = __array_api_version__

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def __repr__(self) -> str:
        return f"<minitorch differentiable namespace of {self.backend.describe()}>"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in _NO_GRAD:
            value = self._no_grad(name, REGISTRY[_NO_GRAD[name]])
        elif (op := _op_named(name)) is not None:
            value = self._op(op)
        elif name in _PASSTHROUGH and hasattr(self.backend.xp, name):
            value = getattr(self.backend.xp, name)
        else:
            raise AttributeError(
                f"minitorch's differentiable namespace has no {name!r}: write it with the "
                f"functions it has, or declare it as an op with minitorch.defop "
                f"(docs/custom-ops.md)"
            )
        setattr(self, name, value)  # found once: later look-ups are plain attributes
        return value

    def _op(self, op: OpDef) -> Callable[..., Any]:
        be = self.backend
        name = op.name

        def fn(*args: Any, **kwargs: Any) -> Any:
            return call(REGISTRY[name], args, kwargs, be)

        fn.__name__ = op.name
        fn.__doc__ = op.fn.__doc__ if op.fn is not None else None
        return fn

    def _no_grad(self, name: str, op: OpDef) -> Callable[..., Any]:
        xp = self.backend.xp

        def fn(*args: Any, **kwargs: Any) -> Any:
            if any(isinstance(a, Tensor) for a in args):
                return call(op, args, kwargs, self.backend)
            return getattr(xp, name)(*args, **kwargs)

        fn.__name__ = name
        fn.__doc__ = f"The Array API ``{name}`` (no gradient): Tensors in, Tensor out."
        return fn

    def _const(self, a: Any) -> Tensor:
        return Tensor._make(a, self.backend, None)

    # ------------------------------------------------------------------ differentiable
    def where(self, condition: Any, x1: Any, x2: Any, /) -> Tensor:
        """``x1`` where ``condition``, else ``x2``; differentiable in ``x1`` and ``x2``."""
        out: Tensor = call(REGISTRY["where"], (condition, x1, x2), {}, self.backend)
        return out

    def astype(self, x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
        if isinstance(x, Tensor):
            return call(REGISTRY["astype"], (x,), {"dtype": dtype}, self.backend)
        return self.backend.xp.astype(x, dtype)

    def moveaxis(self, x: Tensor, source: int, destination: int, /) -> Tensor:
        order = [i for i in range(x.ndim) if i != source % x.ndim]
        order.insert(destination % x.ndim, source % x.ndim)
        return self.permute_dims(x, tuple(order))  # type: ignore[no-any-return]

    def scatter_add(self, n: int, index: Any, values: Any) -> Tensor:
        """The backend contract's ``scatter_add(n, index, values)``, differentiable."""
        out: Tensor = call(REGISTRY["scatter_add"], (values, index), {"n": n}, self.backend)
        return out

    def setitem(self, x: Any, key: Any, value: Any) -> Tensor:
        """A copy of ``x`` with ``x[key] = value``, differentiable in both."""
        if not isinstance(x, Tensor):
            x = self._const(x)
        out: Tensor = call(REGISTRY["setitem"], (x, value), {"key": key}, self.backend)
        return out

    def zeros_with(self, shape: tuple[int, ...], key: Any, value: Any) -> Tensor:
        """The backend contract's ``zeros_with(shape, key, value)``: zeros of ``shape``
        with ``value`` at ``key``, differentiable in ``value``."""
        if not isinstance(value, Tensor):
            value = self._const(value)
        zeros = self._const(self.backend.xp.zeros(shape, dtype=value.dtype, device=value.device))
        return self.setitem(zeros, key, value)

    # ------------------------------------------------------------------ composed
    def positive(self, x: Any, /) -> Any:
        return x

    def square(self, x: Any, /) -> Tensor:
        return self.multiply(x, x)  # type: ignore[no-any-return]

    def reciprocal(self, x: Any, /) -> Tensor:
        return self.divide(1.0, x)  # type: ignore[no-any-return]

    def log2(self, x: Any, /) -> Tensor:
        return self.divide(self.log(x), _math.log(2.0))  # type: ignore[no-any-return]

    def log10(self, x: Any, /) -> Tensor:
        return self.divide(self.log(x), _math.log(10.0))  # type: ignore[no-any-return]

    def logaddexp(self, x1: Any, x2: Any, /) -> Tensor:
        """``log(exp(x1) + exp(x2))`` without overflow."""
        m = self.maximum(x1, x2)
        return m + self.log1p(self.exp(-self.abs(self.subtract(x1, x2))))  # type: ignore[no-any-return]

    def vecdot(self, x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
        return self.sum(self.multiply(x1, x2), axis=axis)  # type: ignore[no-any-return]

    def broadcast_arrays(self, *arrays: Any) -> list[Any]:
        shape = self.backend.xp.broadcast_shapes(*(tuple(a.shape) for a in arrays))
        return [self.broadcast_to(a, shape) if isinstance(a, Tensor) else a for a in arrays]

    def isnan(self, x: Any, /) -> Any:
        if isinstance(x, Tensor):
            return self.logical_not(self.equal(x, x))
        return self.backend.xp.isnan(x)

    # ------------------------------------------------------------------ creation
    def isdtype(self, dtype: Any, kind: Any) -> bool:
        return bool(self.backend.xp.isdtype(dtype, kind))

    def arange(
        self,
        start: Any,
        /,
        stop: Any = None,
        step: Any = 1,
        *,
        dtype: Any = None,
        device: Any = None,
    ) -> Any:
        be = self.backend
        return be.xp.arange(start, stop, step, dtype=dtype, device=device or be.device)

    def zeros(self, shape: Sequence[int] | int, *, dtype: Any = None, device: Any = None) -> Tensor:
        return self.full(shape, 0.0, dtype=dtype, device=device)

    def ones(self, shape: Sequence[int] | int, *, dtype: Any = None, device: Any = None) -> Tensor:
        return self.full(shape, 1.0, dtype=dtype, device=device)

    empty = zeros

    def full(
        self, shape: Sequence[int] | int, fill_value: Any, *, dtype: Any = None, device: Any = None
    ) -> Tensor:
        be = self.backend
        return self._const(
            be.xp.full(shape, fill_value, dtype=dtype or be.dtype, device=device or be.device)
        )

    def full_like(
        self, x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None
    ) -> Any:
        if isinstance(x, Tensor):
            out = x._backend.xp.full_like(x.data, fill_value, dtype=dtype, device=device)
            return Tensor._make(out, x._backend, None)
        return self.backend.xp.full_like(x, fill_value, dtype=dtype, device=device)

    def zeros_like(self, x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
        return self.full_like(x, 0, dtype=dtype, device=device)

    def ones_like(self, x: Any, /, *, dtype: Any = None, device: Any = None) -> Any:
        return self.full_like(x, 1, dtype=dtype, device=device)

    empty_like = zeros_like

    def asarray(
        self, obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None
    ) -> Any:
        if isinstance(obj, Tensor):
            out = self.clone(obj) if copy else obj
            return self.astype(out, dtype) if dtype is not None and dtype != obj.dtype else out
        be = self.backend
        return self._const(be.xp.asarray(obj, dtype=dtype, device=device or be.device, copy=copy))

    def eye(
        self,
        n_rows: int,
        n_cols: int | None = None,
        /,
        *,
        k: int = 0,
        dtype: Any = None,
        device: Any = None,
    ) -> Tensor:
        be = self.backend
        return self._const(
            be.xp.eye(n_rows, n_cols, k=k, dtype=dtype or be.dtype, device=device or be.device)
        )

    def linspace(
        self,
        start: float,
        stop: float,
        /,
        num: int,
        *,
        dtype: Any = None,
        device: Any = None,
        endpoint: bool = True,
    ) -> Tensor:
        be = self.backend
        arr = be.xp.linspace(
            start, stop, num, dtype=dtype or be.dtype, device=device or be.device, endpoint=endpoint
        )
        return self._const(arr)


_NAMESPACES: dict[Backend, Namespace] = {}


def namespace(backend: Backend | None = None) -> Namespace:
    """The differentiable namespace of ``backend`` (default: the current backend)."""
    be = backend if backend is not None else get_backend()
    ns = _NAMESPACES.get(be)
    if ns is None:
        ns = _NAMESPACES[be] = Namespace(be)
    return ns


register_namespace(namespace)


def __getattr__(name: str) -> Any:
    try:
        return getattr(namespace(), name)
    except AttributeError:
        raise AttributeError(
            f"module 'minitorch.array_api' has no attribute {name!r}: {name} is not provided "
            f"by minitorch's differentiable namespace (write it with the functions it has, "
            f"or declare it as an op with minitorch.defop)"
        ) from None
