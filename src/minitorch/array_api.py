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

import functools
import inspect
import math as _math
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import array_api_compat
import numpy as np

from . import linalg as _linalg
from .backend import STANDARD_DTYPES, Backend, as_array, device_name, get_backend
from .backend._fallback import VJP_KERNELS, all_in_range, index_array
from .errors import OpError
from .ops import REGISTRY, OpDef, call
from .ops.elementwise import astype_dtype
from .ops.reduction import normalize_axes
from .tensor import Tensor, check_numbers_fit, describe, register_namespace

__array_api_version__ = "2024.12"
__all__ = [
    "FInfo",
    "IInfo",
    "Info",
    "Namespace",
    "Special",
    "UniqueAllResult",
    "UniqueCountsResult",
    "UniqueInverseResult",
    "namespace",
]

# dtypes, constants and dtype helpers come from the backend's own namespace
_PASSTHROUGH = frozenset(
    (
        *STANDARD_DTYPES,
        "e",
        "pi",
        "inf",
        "nan",
        "newaxis",
        "broadcast_shapes",
    )
)
_PY_SCALARS = frozenset((bool, int, float, complex))
# standard names of functions without gradient that also take raw backend arrays
_NO_GRAD = {
    "equal": "eq",
    "not_equal": "ne",
    "less": "lt",
    "less_equal": "le",
    "greater": "gt",
    "greater_equal": "ge",
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


def _signature(op: OpDef) -> inspect.Signature | None:
    """The signature of ``op``'s public function with its tensor inputs positional-only,
    as the standard writes them (``max(x, /, axis=None, keepdims=False)``)."""
    try:
        sig = inspect.signature(op.fn)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    n = 1 if op.nin == -1 else op.nin
    params = [
        p.replace(kind=inspect.Parameter.POSITIONAL_ONLY)
        if i < n and p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        else p
        for i, p in enumerate(sig.parameters.values())
    ]
    return sig.replace(parameters=params)


def _dtype_kind_bits(dtype: Any) -> tuple[str, int]:
    """``("f", 32)`` for float32: the kind (b i u f c) and bits of any library's dtype."""
    found = re.search(r"bool|u?int\d+|float\d+|complex\d+", str(dtype))
    if found is None:
        raise TypeError(f"can_cast: {dtype!r} is not a dtype of the Array API standard")
    name = found.group(0)
    if name == "bool":
        return "b", 8
    kind = {"u": "u", "i": "i", "f": "f", "c": "c"}[name[0]]
    return kind, int(re.sub(r"\D", "", name))


class FInfo(NamedTuple):
    """What ``finfo`` returns: the standard's fields as Python numbers."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: Any


class IInfo(NamedTuple):
    """What ``iinfo`` returns: the standard's fields as Python ints."""

    bits: int
    max: int
    min: int
    dtype: Any


class UniqueAllResult(NamedTuple):
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class UniqueCountsResult(NamedTuple):
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    values: Tensor
    inverse_indices: Tensor


def _library_info(backend: Backend) -> Any:
    """The ``__array_namespace_info__()`` of the backend's own library."""
    probe = backend.xp.asarray(0, device=backend.device)
    with warnings.catch_warnings():  # torch warns while it lists its device types
        warnings.simplefilter("ignore")
        return array_api_compat.array_namespace(probe).__array_namespace_info__()


class Info:
    """What ``xp.__array_namespace_info__()`` returns (Array API 2024.12): the
    capabilities, devices and dtypes of one backend's differentiable namespace.

    Devices and dtypes are those of the backend's library; the default real floating
    dtype and the default device are the backend's own (``minitorch.use_backend(...,
    dtype=, device=)``). Only real floating tensors carry gradients. minitorch runs
    eagerly, so boolean indexing and data-dependent shapes (``nonzero``, ``unique_*``)
    work on every backend, JAX included. The optional ``linalg`` extension is provided
    (``xp.linalg``, differentiable: :mod:`minitorch.linalg`); the ``fft`` extension is
    not: the namespace has no ``fft`` attribute.

    Complex dtypes (``complex64``, ``complex128``) are supported without autograd: a
    complex tensor is computed forward wherever the backend's library can (``+ - * /``,
    ``exp``, ``sqrt``, ``real``, ``imag``, ``conj``, reductions, ...) and is always a
    constant. A complex tensor cannot require grad, and an op whose result would be
    complex while an input requires grad raises "complex autograd is not supported".
    ``real`` and ``conj`` of a real tensor are the identity (differentiable), ``imag``
    zeros. FFTs are not provided (no ``fft`` extension).
    """

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self._lib = _library_info(backend)

    def __repr__(self) -> str:
        return f"<Array API info of minitorch's namespace of {self._backend.describe()}>"

    def capabilities(self) -> dict[str, Any]:
        """``boolean indexing``, ``data-dependent shapes`` and ``max dimensions``."""
        return {
            "boolean indexing": True,
            "data-dependent shapes": True,
            "max dimensions": self._lib.capabilities().get("max dimensions"),
        }

    def default_device(self) -> Any:
        """The device new tensors of this namespace are made on."""
        return self._backend.device

    def devices(self) -> list[Any]:
        """The devices of the backend's library (the default device first)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = [d for d in self._lib.devices() if d is not None and str(d) != "meta"]
        default = self._backend.device
        return [default, *(d for d in found if str(d) != str(default))]

    def _check_device(self, device: Any, who: str) -> None:
        if device is not None and str(device) not in {str(d) for d in self.devices()}:
            raise ValueError(
                f"{who}: device {device!r} is not a device of the {self._backend.name} "
                f"backend; choose one of {self.devices()}"
            )

    def default_dtypes(self, *, device: Any = None) -> dict[str, Any]:
        """``real floating`` (the backend's default dtype), ``complex floating`` (its
        complex counterpart), ``integral`` and ``indexing`` (the library's)."""
        self._check_device(device, "default_dtypes")
        be = self._backend
        lib = self._lib.default_dtypes()
        double = be.dtype_name(be.dtype) == "float64"
        complex_dtype = getattr(be.xp, "complex128" if double else "complex64", None)
        return {
            "real floating": be.dtype,
            "complex floating": complex_dtype,
            "integral": lib["integral"],
            "indexing": lib["indexing"],
        }

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, Any]:
        """The library's dtypes (on ``device``) by name, of ``kind`` if given (a kind
        name of ``isdtype`` or a tuple of them)."""
        self._check_device(device, "dtypes")
        if device is None:
            return dict(self._lib.dtypes(kind=kind))
        return dict(self._lib.dtypes(device=device, kind=kind))


class Special:
    """``xp.special``: differentiable versions of a few ``scipy.special`` functions.

    SciPy (with ``SCIPY_ARRAY_API=1``) looks for ``xp.special.<name>`` before it falls
    back to its NumPy ufunc through the host, which would leave the graph: with these,
    ``scipy.special.erf(t)``, ``expit``, ``logit``, ``entr`` and ``xlog1py`` of a Tensor
    are differentiable to any order (they are composed from the namespace's functions).
    """

    def __init__(self, ns: Namespace) -> None:
        self._ns = ns

    def __repr__(self) -> str:
        return f"<scipy.special functions of {self._ns!r}>"

    def erf(self, x: Any, /) -> Tensor:
        return self._ns.erf(x)  # type: ignore[no-any-return]

    def expit(self, x: Any, /) -> Tensor:
        """``1 / (1 + exp(-x))``."""
        return self._ns.sigmoid(x)  # type: ignore[no-any-return]

    def logit(self, x: Any, /) -> Tensor:
        """``log(x / (1 - x))``."""
        ns = self._ns
        return ns.log(x) - ns.log1p(-ns._tensor(x))  # type: ignore[no-any-return]

    def entr(self, x: Any, /) -> Tensor:
        """``-x log(x)`` for ``x > 0``, 0 at 0, ``-inf`` below (nan stays nan)."""
        ns = self._ns
        x = ns._tensor(x)
        pos = x > 0
        safe = ns.where(pos, x, 1.0)  # log(1) = 0: no nan in the unused branch's gradient
        inside = ns.where(pos, -safe * ns.log(safe), x * 0.0)
        return ns.where(x < 0, -_math.inf, inside)

    def xlog1py(self, x: Any, y: Any, /) -> Tensor:
        """``x * log1p(y)``, and 0 where ``x == 0`` (unless ``y`` is nan)."""
        ns = self._ns
        x, y = ns._tensor(x), ns._tensor(y)
        zero = ns.logical_and(x == 0, y == y)
        safe = ns.where(zero, 0.0, y)
        return ns.where(zero, 0.0, x * ns.log1p(safe))


class Namespace:
    """The differentiable namespace of one backend (its default dtype and device)."""

    __array_api_version__ = __array_api_version__

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._info: Info | None = None
        #: the ``linalg`` extension (Array API 2024.12), differentiable
        self.linalg: _linalg.Linalg = _linalg.namespace(backend)
        # array_api_compat.array_namespace() tells namespaces apart by their __name__
        self.__name__ = f"minitorch.array_api.{backend.name}"

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
        elif name in VJP_KERNELS:
            # the backend contract's VJP kernels, composed from this namespace's ops: a
            # VJP run under create_graph calls them on graph Tensors, recorded in turn
            value = functools.partial(VJP_KERNELS[name], self)
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
        if op.fn is not None and (sig := _signature(op)) is not None:
            fn.__signature__ = sig  # type: ignore[attr-defined]
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

    def _tensor(self, x: Any) -> Tensor:
        """``x`` as a Tensor: as it is, or a constant of this backend."""
        if isinstance(x, Tensor):
            return x
        return self._const(as_array(x, self.backend))

    def _data(self, x: Any) -> Any:
        """The backend array of ``x`` (a Tensor, an array or Python data)."""
        if isinstance(x, Tensor):
            return x.data
        return as_array(x, self.backend)

    def __array_namespace_info__(self) -> Info:
        """The capabilities, devices and dtypes of this namespace (Array API 2024.12)."""
        if self._info is None:
            self._info = Info(self.backend)
        return self._info

    # ------------------------------------------------------------------ differentiable
    def where(self, condition: Any, x1: Any, x2: Any, /) -> Tensor:
        """``x1`` where ``condition``, else ``x2``; differentiable in ``x1`` and ``x2``."""
        out: Tensor = call(REGISTRY["where"], (condition, x1, x2), {}, self.backend)
        return out

    def astype(self, x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
        """``x`` as ``dtype`` (on ``device``); differentiable between floating dtypes.
        With ``copy=False`` and nothing to change, ``x`` itself. ``dtype`` as minitorch's
        ``dtype=`` reads it (a name, a NumPy type, any library's dtype object)."""
        dtype = astype_dtype(x._backend if isinstance(x, Tensor) else self.backend, dtype)
        if not isinstance(x, Tensor):
            if device is None:
                return self.backend.xp.astype(x, dtype, copy=copy)
            return self.backend.xp.astype(x, dtype, copy=copy, device=device)
        if device is not None and str(device) != str(x.device):
            x = x.to(device=device)
            copy = False  # moving made a new array
        if x.dtype == dtype:
            return self.clone(x) if copy else x
        return call(REGISTRY["astype"], (x,), {"dtype": dtype}, self.backend)

    def reshape(self, x: Any, /, shape: Sequence[int], *, copy: bool | None = None) -> Tensor:
        """``x`` in a new shape, differentiable. minitorch never writes an array in
        place, so sharing memory with ``x`` (``copy=False``) is never observable and
        always allowed; ``copy=True`` gives a fresh array."""
        out: Tensor = call(REGISTRY["reshape"], (x,), {"shape": tuple(shape)}, self.backend)
        return self.clone(out) if copy else out

    # ------------------------------------------------------------------ reductions
    def sum(
        self, x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False
    ) -> Tensor:
        """Sum over ``axis`` (all axes if None), in ``dtype`` if given (else the
        standard's: floating dtypes kept, integers in the default integer dtype)."""
        x = self._tensor(x)
        if dtype is not None:
            x = self.astype(x, dtype, copy=False)
        out: Tensor = call(
            REGISTRY["sum"], (x,), {"axis": axis, "keepdims": keepdims}, self.backend
        )
        if dtype is not None and out.dtype != x.dtype:  # the library widened integers
            out = self.astype(out, x.dtype, copy=False)
        return out

    def prod(
        self, x: Any, /, *, axis: Any = None, dtype: Any = None, keepdims: bool = False
    ) -> Tensor:
        """Product over ``axis`` (all axes if None), differentiable: a tree of
        multiplications, so the gradient of a product with zeros is exact (the product
        of the other factors), and ``log(0)`` is never taken."""
        x = self._tensor(x)
        x = self.astype(x, self._reduced_dtype(x, dtype, "prod"), copy=False)
        red = normalize_axes(axis, x.ndim, "prod")
        if not red:  # nothing to multiply (a 0-d x, or axis=())
            return x  # type: ignore[no-any-return]
        keep = [a for a in range(x.ndim) if a not in red]
        kept_shape = tuple(x.shape[a] for a in keep)
        n = _math.prod(x.shape[a] for a in red)
        flat = self.reshape(self.permute_dims(x, (*keep, *red)), (*kept_shape, n))
        if n == 0:
            out = self.sum(flat, axis=-1) + 1  # the empty product, connected to x
        else:
            while n > 1:
                if n % 2:
                    one = self.ones((*kept_shape, 1), dtype=flat.dtype, device=flat.device)
                    flat = self.concat([flat, one], axis=-1)
                    n += 1
                n //= 2
                flat = flat[..., :n] * flat[..., n:]
            out = self.reshape(flat, kept_shape)
        if keepdims:
            out = self.reshape(out, tuple(1 if a in red else s for a, s in enumerate(x.shape)))
        return out

    def _reduced_dtype(self, x: Tensor, dtype: Any, who: str) -> Any:
        """The dtype of ``who`` (``sum``/``prod``/cumulative) of ``x``: ``dtype``, or the
        standard's default for ``x.dtype``, as the backend's own function gives it."""
        if dtype is not None:
            return dtype
        xp = self.backend.xp
        if xp.isdtype(x.dtype, "real floating") or xp.isdtype(x.dtype, "complex floating"):
            return x.dtype
        if xp.isdtype(x.dtype, "bool"):  # as torch (the standard's take numbers only)
            return self.backend.dtypes["int64"]
        empty = xp.zeros((0,), dtype=x.dtype, device=x.device)
        return getattr(xp, "prod" if who == "prod" else "sum")(empty).dtype

    def all(self, x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
        """Whether every element is true (nonzero) over ``axis``; no gradient."""
        if not isinstance(x, Tensor):
            return self.backend.xp.all(x, axis=axis, keepdims=keepdims)
        return call(REGISTRY["all"], (x,), {"axis": axis, "keepdims": keepdims}, self.backend)

    def any(self, x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Any:
        """Whether any element is true (nonzero) over ``axis``; no gradient."""
        if not isinstance(x, Tensor):
            return self.backend.xp.any(x, axis=axis, keepdims=keepdims)
        return call(REGISTRY["any"], (x,), {"axis": axis, "keepdims": keepdims}, self.backend)

    def argmax(self, x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Any:
        """Index of the first maximum along ``axis`` (of the flattened ``x`` if None)."""
        if not isinstance(x, Tensor):
            return self.backend.xp.argmax(x, axis=axis, keepdims=keepdims)
        return call(REGISTRY["argmax"], (x,), {"axis": axis, "keepdims": keepdims}, self.backend)

    def argmin(self, x: Any, /, *, axis: int | None = None, keepdims: bool = False) -> Any:
        """Index of the first minimum along ``axis`` (of the flattened ``x`` if None)."""
        if not isinstance(x, Tensor):
            return self.backend.xp.argmin(x, axis=axis, keepdims=keepdims)
        return call(REGISTRY["argmin"], (x,), {"axis": axis, "keepdims": keepdims}, self.backend)

    def count_nonzero(self, x: Any, /, *, axis: Any = None, keepdims: bool = False) -> Tensor:
        """How many elements are nonzero over ``axis``; no gradient."""
        return self._const(
            self.backend.xp.count_nonzero(self._data(x), axis=axis, keepdims=keepdims)
        )

    # ------------------------------------------------------------------ cumulative
    def _scan(self, x: Tensor, ax: int, product: bool) -> Tensor:
        """Inclusive scan along ``ax`` in log2(n) steps (Hillis-Steele) of ops, so the
        chain rule differentiates it (exactly, also through zeros of a product)."""
        n = x.shape[ax]
        shift = 1
        while shift < n:
            pad_shape = tuple(shift if a == ax else s for a, s in enumerate(x.shape))
            pad = self.full(pad_shape, 1 if product else 0, dtype=x.dtype, device=x.device)
            head = x[(slice(None),) * ax + (slice(0, n - shift),)]
            shifted = self.concat([pad, head], axis=ax)
            x = x * shifted if product else x + shifted
            shift *= 2
        return x

    def _cumulative(
        self, x: Any, axis: int | None, dtype: Any, include_initial: bool, product: bool
    ) -> Tensor:
        who = "cumulative_prod" if product else "cumulative_sum"
        x = self._tensor(x)
        if axis is None:
            if x.ndim != 1:
                raise OpError(
                    f"{who}: axis may be left out only for a 1-d tensor, got {describe(x)}; "
                    f"pass axis="
                )
            axis = 0
        if not -x.ndim <= axis < x.ndim:
            raise OpError(f"{who}: axis {axis} is out of range for {describe(x)}")
        ax = axis % x.ndim
        x = self.astype(x, self._reduced_dtype(x, dtype, "prod" if product else "sum"), copy=False)
        out = self._scan(x, ax, product)
        if include_initial:
            shape = tuple(1 if a == ax else s for a, s in enumerate(x.shape))
            first = self.full(shape, 1 if product else 0, dtype=x.dtype, device=x.device)
            out = self.concat([first, out], axis=ax)
        return out

    def cumulative_sum(
        self,
        x: Any,
        /,
        *,
        axis: int | None = None,
        dtype: Any = None,
        include_initial: bool = False,
    ) -> Tensor:
        """Running sums along ``axis`` (optional for a 1-d ``x``), differentiable."""
        return self._cumulative(x, axis, dtype, include_initial, product=False)

    def cumulative_prod(
        self,
        x: Any,
        /,
        *,
        axis: int | None = None,
        dtype: Any = None,
        include_initial: bool = False,
    ) -> Tensor:
        """Running products along ``axis`` (optional for a 1-d ``x``), differentiable
        (exactly through zeros: no division, no logarithm)."""
        return self._cumulative(x, axis, dtype, include_initial, product=True)

    def diff(
        self,
        x: Any,
        /,
        *,
        axis: int = -1,
        n: int = 1,
        prepend: Any = None,
        append: Any = None,
    ) -> Tensor:
        """The ``n``-th forward difference along ``axis``, differentiable."""
        x = self._tensor(x)
        if x.ndim == 0 or not -x.ndim <= axis < x.ndim:
            raise OpError(f"diff: axis {axis} is out of range for {describe(x)}")
        if n < 0:
            raise OpError(f"diff: n must be >= 0, got {n}")
        ax = axis % x.ndim
        parts = [self._tensor(p) for p in (prepend, x, append) if p is not None]
        if len(parts) > 1:
            x = self.concat(parts, axis=ax)
        lead = (slice(None),) * ax
        for _ in range(n):
            x = x[(*lead, slice(1, None))] - x[(*lead, slice(None, -1))]
        return x  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ manipulation
    def _axis(self, x: Tensor, axis: int, who: str) -> int:
        if isinstance(axis, bool) or not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
            raise OpError(f"{who}: axis {axis!r} is out of range for {describe(x)}")
        return axis % x.ndim

    def _index(self, host: Any, like: Tensor) -> Any:
        """Host integer indices as an array of ``like``'s backend and device."""
        return as_array(np.asarray(host, dtype=np.int64), self.backend, None, like.device)

    def take_along_axis(self, x: Any, indices: Any, /, *, axis: int = -1) -> Tensor:
        """``x`` at ``indices`` along ``axis`` (the other axes broadcast), differentiable
        in ``x`` (repeated indices accumulate)."""
        x = self._tensor(x)
        idx = self._data(indices)
        xp = self.backend.xp
        if idx.ndim != x.ndim or x.ndim == 0:
            raise OpError(
                f"take_along_axis: x and indices must have the same number (>= 1) of "
                f"dimensions, got {describe(x)} and indices of shape {tuple(idx.shape)}"
            )
        if not xp.isdtype(idx.dtype, "integral"):
            raise OpError(f"take_along_axis: indices must be integers, got dtype {idx.dtype}")
        idx = index_array(xp, idx)
        ax = self._axis(x, axis, "take_along_axis")
        n = x.shape[ax]
        try:
            out_shape = tuple(
                int(idx.shape[a])
                if a == ax
                else xp.broadcast_shapes((x.shape[a],), (idx.shape[a],))[0]
                for a in range(x.ndim)
            )
        except ValueError as exc:
            raise OpError(
                f"take_along_axis: indices of shape {tuple(idx.shape)} do not broadcast with "
                f"{describe(x)} outside axis {axis}"
            ) from exc
        # one host read here (a GPU sync, as take's own check below), where PyTorch's
        # gather asserts on the device
        if _math.prod(out_shape) and not bool(xp.all_in_range(idx, -n, n)):
            raise OpError(
                f"take_along_axis: an index is out of range [{-n}, {n}) for {describe(x)}"
            )
        idx = xp.where(idx < 0, idx + n, idx)
        src_shape = tuple(n if a == ax else s for a, s in enumerate(out_shape))
        x = self.broadcast_to(x, src_shape)
        stride = 1
        flat = xp.zeros(out_shape, dtype=idx.dtype, device=idx.device)
        for a in reversed(range(x.ndim)):
            if a == ax:
                coord = xp.broadcast_to(idx, out_shape)
            else:
                along = xp.arange(out_shape[a], dtype=idx.dtype, device=idx.device)
                coord = xp.reshape(along, tuple(-1 if b == a else 1 for b in range(x.ndim)))
            flat = flat + coord * stride
            stride *= src_shape[a]
        picked = self.take(self.reshape(x, (-1,)), xp.reshape(flat, (-1,)), axis=0)
        return self.reshape(picked, out_shape)

    def roll(self, x: Any, /, shift: int | tuple[int, ...], *, axis: Any = None) -> Tensor:
        """Elements shifted along ``axis`` (of the flattened ``x`` if None) with
        wrap-around, differentiable: the last ``shift % n`` elements of an axis of size
        ``n`` joined before the others (two slices and a concat: no index array, no read
        on the host)."""
        x = self._tensor(x)
        if axis is None:
            if not isinstance(shift, int):
                raise OpError(f"roll: without axis, shift must be one int, got {shift!r}")
            return self.reshape(self.roll(self.reshape(x, (-1,)), shift, axis=0), x.shape)
        shifts = (shift,) if isinstance(shift, int) else tuple(shift)
        axes = (axis,) if isinstance(axis, int) else tuple(axis)
        if len(shifts) == 1 and len(axes) > 1:
            shifts = shifts * len(axes)
        if len(shifts) != len(axes):
            raise OpError(f"roll: shift {shift!r} and axis {axis!r} must have the same length")
        for s, a in zip(shifts, axes, strict=True):
            ax = self._axis(x, a, "roll")
            n = x.shape[ax]
            if n:
                k, lead = s % n, (slice(None),) * ax
                x = self.concat([x[(*lead, slice(n - k, None))], x[(*lead, slice(n - k))]], axis=ax)
        return x  # type: ignore[no-any-return]

    def repeat(self, x: Any, repeats: Any, /, *, axis: int | None = None) -> Tensor:
        """Each element repeated ``repeats`` times (an int, or one count per element)
        along ``axis`` (of the flattened ``x`` if None), differentiable. An int repeats
        by broadcasting (no index array, no read on the host); counts per element are
        read on the host, as they decide the result's shape."""
        x = self._tensor(x)
        if axis is None:
            x, axis = self.reshape(x, (-1,)), 0
        ax = self._axis(x, axis, "repeat")
        if isinstance(repeats, int | np.integer) and not isinstance(repeats, bool) and repeats >= 0:
            r, shape = int(repeats), tuple(x.shape)
            spread = self.broadcast_to(
                self.expand_dims(x, axis=ax + 1), (*shape[: ax + 1], r, *shape[ax + 1 :])
            )
            return self.reshape(spread, (*shape[:ax], shape[ax] * r, *shape[ax + 1 :]))
        if isinstance(repeats, int):
            reps = np.asarray(repeats)
        else:
            reps = np.asarray(self.backend.to_numpy(self._data(repeats)))
        if reps.dtype.kind not in "iu" or reps.ndim > 1 or (reps < 0).any():
            raise OpError(
                f"repeat: repeats must be a non-negative int or a 1-d array of them, got "
                f"{repeats!r} for {describe(x)}"
            )
        try:
            host = np.repeat(np.arange(x.shape[ax]), reps)
        except ValueError as exc:
            raise OpError(
                f"repeat: {reps.size} repeat counts for axis {axis} of {describe(x)}; give "
                f"one int or one count per element"
            ) from exc
        return self.take(x, self._index(host, x), axis=ax)  # type: ignore[no-any-return]

    def tile(self, x: Any, repetitions: Sequence[int], /) -> Tensor:
        """``x`` repeated ``repetitions[i]`` times along each axis, differentiable."""
        x = self._tensor(x)
        reps = tuple(int(r) for r in repetitions)
        d = max(len(reps), x.ndim)
        reps = (1,) * (d - len(reps)) + reps
        shape = (1,) * (d - x.ndim) + x.shape
        spread = [v for s in shape for v in (1, s)]
        wide = [v for r, s in zip(reps, shape, strict=True) for v in (r, s)]
        out = self.broadcast_to(self.reshape(x, tuple(spread)), tuple(wide))
        return self.reshape(out, tuple(r * s for r, s in zip(reps, shape, strict=True)))

    def unstack(self, x: Any, /, *, axis: int = 0) -> tuple[Tensor, ...]:
        """The slices of ``x`` along ``axis``, each differentiable."""
        x = self._tensor(x)
        ax = self._axis(x, axis, "unstack")
        lead = (slice(None),) * ax
        return tuple(x[(*lead, i)] for i in range(x.shape[ax]))

    def tensordot(self, x1: Any, x2: Any, /, *, axes: Any = 2) -> Tensor:
        """Sum of products over ``axes`` (the last ``axes`` of ``x1`` with the first of
        ``x2``, or two sequences of axes), differentiable."""
        a, b = self._tensor(x1), self._tensor(x2)
        if isinstance(axes, int):
            if not 0 <= axes <= min(a.ndim, b.ndim):
                raise OpError(f"tensordot: axes={axes} for {describe(a)} and {describe(b)}")
            ax1 = tuple(range(a.ndim - axes, a.ndim))
            ax2 = tuple(range(axes))
        else:
            ax1 = tuple(self._axis(a, i, "tensordot") for i in axes[0])
            ax2 = tuple(self._axis(b, i, "tensordot") for i in axes[1])
        if len(ax1) != len(ax2) or any(
            a.shape[i] != b.shape[j] for i, j in zip(ax1, ax2, strict=False)
        ):
            raise OpError(
                f"tensordot: axes {ax1} of {describe(a)} and {ax2} of {describe(b)} must "
                f"pair up with equal sizes"
            )
        free1 = [i for i in range(a.ndim) if i not in ax1]
        free2 = [i for i in range(b.ndim) if i not in ax2]
        k = _math.prod(a.shape[i] for i in ax1)
        f1 = tuple(a.shape[i] for i in free1)
        f2 = tuple(b.shape[i] for i in free2)
        left = self.reshape(self.permute_dims(a, (*free1, *ax1)), (_math.prod(f1), k))
        right = self.reshape(self.permute_dims(b, (*ax2, *free2)), (k, _math.prod(f2)))
        return self.reshape(self.matmul(left, right), (*f1, *f2))

    def meshgrid(self, *arrays: Any, indexing: str = "xy") -> list[Tensor]:
        """Coordinate grids from 1-d tensors (``indexing`` ``"xy"`` or ``"ij"``),
        differentiable."""
        if indexing not in ("xy", "ij"):
            raise OpError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
        ts = [self._tensor(a) for a in arrays]
        if any(t.ndim != 1 for t in ts):
            raise OpError(
                f"meshgrid: every input must be 1-d, got {', '.join(describe(t) for t in ts)}"
            )
        shape = [t.shape[0] for t in ts]
        pos = list(range(len(ts)))
        if indexing == "xy" and len(ts) > 1:
            shape[0], shape[1] = shape[1], shape[0]
            pos[0], pos[1] = 1, 0
        out = []
        for t, p in zip(ts, pos, strict=True):
            view = tuple(-1 if i == p else 1 for i in range(len(ts)))
            out.append(self.broadcast_to(self.reshape(t, view), tuple(shape)))
        return out

    # ------------------------------------------------------------------ sorting, searching
    def argsort(
        self, x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True
    ) -> Tensor:
        """The indices that sort ``x`` along ``axis``; no gradient."""
        out = self.backend.xp.argsort(
            self._data(x), axis=axis, descending=descending, stable=stable
        )
        return self._const(out)

    def sort(
        self, x: Any, /, *, axis: int = -1, descending: bool = False, stable: bool = True
    ) -> Tensor:
        """``x`` sorted along ``axis``, differentiable in its values (the gradient of
        each sorted element goes to the element it came from)."""
        x = self._tensor(x)
        if x.ndim == 0:
            return self.clone(x)  # type: ignore[no-any-return]
        order = self.argsort(x, axis=axis, descending=descending, stable=stable)
        return self.take_along_axis(x, order, axis=axis)

    def nonzero(self, x: Any, /) -> tuple[Tensor, ...]:
        """The indices of the nonzero elements, one tensor per axis; no gradient."""
        data = self._data(x)
        if data.ndim == 0:
            raise OpError("nonzero: x must have at least one dimension, got a 0-d tensor")
        return tuple(self._const(i) for i in self.backend.xp.nonzero(data))

    def searchsorted(
        self, x1: Any, x2: Any, /, *, side: str = "left", sorter: Any = None
    ) -> Tensor:
        """Where the elements of ``x2`` go into the sorted 1-d ``x1``; no gradient."""
        s = None if sorter is None else self._data(sorter)
        xp = self.backend.xp
        out = xp.searchsorted(self._data(x1), self._data(x2), side=side, sorter=s)
        index = self.__array_namespace_info__().default_dtypes()["indexing"]
        if out.dtype != index:  # JAX gives int32 even with 64-bit types on
            out = xp.astype(out, index)
        return self._const(out)

    # ------------------------------------------------------------------ sets
    def unique_values(self, x: Any, /) -> Tensor:
        """The distinct values of ``x``, sorted; no gradient."""
        return self._const(self.backend.xp.unique_values(self._data(x)))

    def unique_counts(self, x: Any, /) -> UniqueCountsResult:
        """The distinct values and how often each occurs; no gradient."""
        r = self.backend.xp.unique_counts(self._data(x))
        return UniqueCountsResult(self._const(r.values), self._const(r.counts))

    def unique_inverse(self, x: Any, /) -> UniqueInverseResult:
        """The distinct values, and for each element of ``x`` its value's index; no
        gradient."""
        r = self.backend.xp.unique_inverse(self._data(x))
        return UniqueInverseResult(self._const(r.values), self._const(r.inverse_indices))

    def unique_all(self, x: Any, /) -> UniqueAllResult:
        """Distinct values, first indices, inverse indices and counts; no gradient."""
        be = self.backend
        data = self._data(x)
        try:
            r = be.xp.unique_all(data)
        except NotImplementedError:  # PyTorch has no first indices: found on the host
            host = np.asarray(be.to_numpy(data))
            values, first, inverse, counts = np.unique(
                host.reshape(-1),
                return_index=True,
                return_inverse=True,
                return_counts=True,
                equal_nan=False,
            )
            device = data.device
            return UniqueAllResult(
                self._const(as_array(values, be, data.dtype, device)),
                self._const(self._index(first, self._const(data))),
                self._const(self._index(inverse.reshape(host.shape), self._const(data))),
                self._const(self._index(counts, self._const(data))),
            )
        return UniqueAllResult(
            self._const(r.values),
            self._const(r.indices),
            self._const(r.inverse_indices),
            self._const(r.counts),
        )

    def isin(self, x1: Any, x2: Any, /, *, invert: bool = False) -> Tensor:
        """Whether each element of ``x1`` is in ``x2``; no gradient."""
        xp = self.backend.xp
        out = xp.isin(self._data(x1), self._data(x2))
        # inverted here: array-api-strict 2.6 ignores `invert`
        return self._const(xp.logical_not(out) if invert else out)

    def from_dlpack(self, x: Any, /, *, device: Any = None, copy: bool | None = None) -> Tensor:
        """A constant Tensor of this backend from any DLPack exporter (a Tensor too).

        As the standard says, the array stays on ``x``'s device: a library that holds
        no arrays there (CuPy and a NumPy array) refuses, with an OpError that says to
        copy it with ``asarray``."""
        kwargs = {k: v for k, v in (("device", device), ("copy", copy)) if v is not None}
        be = self.backend
        try:
            arr = be.xp.from_dlpack(x, **kwargs)
        except (AttributeError, TypeError, BufferError, ValueError, RuntimeError) as exc:
            raise OpError(
                f"from_dlpack: {be.name} cannot take this {type(x).__name__} as it is "
                f"({type(exc).__name__}: {exc}); to copy it to the backend's device "
                f"({device_name(be, be.device)}), use xp.asarray(...) on it, or on "
                f"numpy.from_dlpack(...) of it"
            ) from exc
        return self._const(arr)

    def moveaxis(
        self,
        x: Any,
        source: int | tuple[int, ...],
        destination: int | tuple[int, ...],
        /,
    ) -> Tensor:
        """``x`` with the axes ``source`` moved to ``destination`` (ints or tuples of
        the same length), the others in their order; differentiable."""
        x = self._tensor(x)
        src = (source,) if isinstance(source, int) else tuple(source)
        dst = (destination,) if isinstance(destination, int) else tuple(destination)
        if len(src) != len(dst):
            raise OpError(
                f"moveaxis: source {source!r} and destination {destination!r} must have "
                f"the same number of axes"
            )
        src = tuple(self._axis(x, a, "moveaxis") for a in src)
        dst = tuple(self._axis(x, a, "moveaxis") for a in dst)
        if len(set(src)) != len(src) or len(set(dst)) != len(dst):
            raise OpError(f"moveaxis: repeated axes in {source!r} or {destination!r}")
        order = [i for i in range(x.ndim) if i not in src]
        for d, a in sorted(zip(dst, src, strict=True)):
            order.insert(d, a)
        return self.permute_dims(x, tuple(order))  # type: ignore[no-any-return]

    def concat(self, arrays: Sequence[Any], /, *, axis: int | None = 0) -> Tensor:
        """The tensors joined along ``axis`` (flattened first if None), differentiable."""
        if axis is None:
            arrays = [self.reshape(self._tensor(a), (-1,)) for a in arrays]
            axis = 0
        out: Tensor = call(REGISTRY["concat"], (arrays,), {"axis": axis}, self.backend)
        return out

    def expand_dims(self, x: Any, /, axis: int = 0) -> Tensor:
        """``x`` with a size-1 axis inserted at ``axis`` (in ``[-x.ndim - 1, x.ndim]``,
        else IndexError as the standard says), differentiable."""
        x = self._tensor(x)
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise OpError(f"expand_dims: axis must be an int, got {axis!r}")
        if not -x.ndim - 1 <= axis <= x.ndim:
            raise IndexError(
                f"expand_dims: axis {axis} is out of range [{-x.ndim - 1}, {x.ndim}] for "
                f"{describe(x)}"
            )
        out: Tensor = call(REGISTRY["expand_dims"], (x,), {"axis": axis}, self.backend)
        return out

    def scatter_add(self, n: int, index: Any, values: Any) -> Tensor:
        """The backend contract's ``scatter_add(n, index, values)``, differentiable."""
        out: Tensor = call(REGISTRY["scatter_add"], (values, index), {"n": n}, self.backend)
        return out

    def put_rows(self, x: Any, index: Any, values: Any) -> Tensor:
        """The backend contract's ``put_rows(x, index, values)``: a copy of ``x`` with its
        rows at ``index`` set to ``values`` (rows, or a number), differentiable in both."""
        if not isinstance(x, Tensor):
            x = self._const(x)
        args = [x, values, index]
        out: Tensor = call(REGISTRY["setitem_axes"], (args,), {}, self.backend)
        return out

    def all_in_range(self, x: Any, low: int, high: int) -> Any:
        """The backend contract's ``all_in_range(x, low, high)``: whether every element of
        the integer ``x`` lies in ``[low, high)``, a 0-d boolean (no gradient)."""
        return all_in_range(self, self._tensor(x), low, high)  # the formula, on Tensors

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
        """``+x``: a copy of a Tensor (differentiable); a backend array as it is."""
        return self.clone(x) if isinstance(x, Tensor) else x

    def _is_complex(self, x: Tensor) -> bool:
        return bool(self.backend.xp.isdtype(x.dtype, "complex floating"))

    def real(self, x: Any, /) -> Any:
        """The real part. Of a real tensor a copy (the standard allows real input since
        2024.12; differentiable: the identity); of a complex tensor a constant of the
        real dtype (complex tensors carry no gradient). A backend array: the backend's."""
        if not isinstance(x, Tensor):
            return self.backend.xp.real(x)
        if self._is_complex(x):
            return self._const(self.backend.xp.real(x.data))
        return self.clone(x)

    def imag(self, x: Any, /) -> Any:
        """The imaginary part. Of a real tensor zeros of its dtype (a constant: the
        derivative is 0); of a complex tensor a constant of the real dtype."""
        if not isinstance(x, Tensor):
            return self.backend.xp.imag(x)
        if self._is_complex(x):
            return self._const(self.backend.xp.imag(x.data))
        return self.zeros_like(x)

    def conj(self, x: Any, /) -> Any:
        """The complex conjugate. Of a real tensor a copy (differentiable: the
        identity); of a complex tensor a constant."""
        if not isinstance(x, Tensor):
            return self.backend.xp.conj(x)
        if self._is_complex(x):
            return self._const(self.backend.xp.conj(x.data))
        return self.clone(x)

    @property
    def special(self) -> Special:
        """Differentiable ``scipy.special`` functions for SciPy's dispatch
        (:class:`Special`)."""
        return Special(self)

    def square(self, x: Any, /) -> Tensor:
        return self.multiply(x, x)  # type: ignore[no-any-return]

    def reciprocal(self, x: Any, /) -> Tensor:
        return self.divide(1.0, x)  # type: ignore[no-any-return]

    def log2(self, x: Any, /) -> Tensor:
        """Base-2 logarithm: ``log(x) / log(2)`` (differentiable); of a complex tensor
        the backend's (a constant; a complex quotient would turn ``log(0)``'s imaginary
        0 into NaN)."""
        if isinstance(x, Tensor) and self._is_complex(x):
            return self._const(self.backend.xp.log2(x.data))
        return self.divide(self.log(x), _math.log(2.0))  # type: ignore[no-any-return]

    def log10(self, x: Any, /) -> Tensor:
        """Base-10 logarithm: ``log(x) / log(10)``; of a complex tensor the backend's."""
        if isinstance(x, Tensor) and self._is_complex(x):
            return self._const(self.backend.xp.log10(x.data))
        return self.divide(self.log(x), _math.log(10.0))  # type: ignore[no-any-return]

    def logaddexp(self, x1: Any, x2: Any, /) -> Tensor:
        """``log(exp(x1) + exp(x2))`` without overflow (``inf`` for two ``inf``)."""
        m = self.maximum(x1, x2)
        # equal inputs differ by 0: both are zeroed before the subtraction, so inf - inf
        # (nan, and NumPy's "invalid value" warning) is never computed; where's gradient
        # there is 0, as abs's at 0 was: the ties' 1/2 each comes from maximum
        # (zeros in m's dtype, so that a Python scalar x1 or x2 keeps the promoted dtype)
        tie, zero = self.equal(x1, x2), self.zeros_like(m)
        d = self.subtract(self.where(tie, zero, x1), self.where(tie, zero, x2))
        return m + self.log1p(self.exp(-self.abs(d)))  # type: ignore[no-any-return]

    def vecdot(self, x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
        """``sum(conj(x1) * x2, axis=axis)`` in the inputs' promoted dtype (no integer
        widening), differentiable for real floating inputs."""
        a, b = self._tensor(x1), self._tensor(x2)
        n = min(a.ndim, b.ndim)
        if isinstance(axis, bool) or not isinstance(axis, int) or not -n <= axis < 0:
            raise OpError(
                f"vecdot: axis must be an int in [-{n}, -1] (counted from the end, within "
                f"the smaller rank), got {axis!r} for {describe(a)} and {describe(b)}"
            )
        if a.shape[axis] != b.shape[axis]:
            raise OpError(
                f"vecdot: axis {axis} has size {a.shape[axis]} in {describe(a)} but "
                f"{b.shape[axis]} in {describe(b)}; it must be the same (no broadcasting)"
            )
        products = self.multiply(self.conj(a), b)
        return self.sum(products, axis=axis, dtype=products.dtype)

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

    def finfo(self, type: Any, /) -> FInfo:
        """Machine limits of a floating dtype (or of a tensor's dtype), as Python
        floats; ``dtype`` is the real dtype (float32 for complex64)."""
        f = self.backend.xp.finfo(type.data if isinstance(type, Tensor) else type)
        return FInfo(
            int(f.bits),
            float(f.eps),
            float(f.max),
            float(f.min),
            float(f.smallest_normal),
            self._as_dtype(f.dtype),
        )

    def _as_dtype(self, dtype: Any) -> Any:
        """A dtype as this backend's dtype object (torch's finfo names it by string)."""
        return getattr(self.backend.xp, dtype) if isinstance(dtype, str) else dtype

    def result_type(self, *arrays_and_dtypes: Any) -> Any:
        """The dtype the standard's promotion gives the inputs (arrays, Tensors by their
        dtype, dtypes, Python scalars), as the backend's own ``result_type`` says."""
        return self.backend.xp.result_type(
            *(a.data if isinstance(a, Tensor) else a for a in arrays_and_dtypes)
        )

    def can_cast(self, from_: Any, to: Any, /) -> bool:
        """Whether ``from_`` (a dtype or a tensor) casts to ``to`` by the standard's
        promotion rules: within one kind and never to a narrower type (bool only to
        bool; uint to a wider int; real float to complex). Mixed kinds (int to float),
        which the standard leaves undefined, are False, as array-api-strict says."""
        array = hasattr(from_, "shape") and not isinstance(from_, type | np.dtype)
        src = _dtype_kind_bits(from_.dtype if array else from_)
        dst = _dtype_kind_bits(to)
        if src == dst:
            return True
        (ks, bs), (kt, bt) = src, dst
        if "b" in (ks, kt):
            return False
        if ks in "iu" and kt in "iu":
            return bs <= bt if ks == kt else ks == "u" and bs < bt
        if ks in "fc" and kt in "fc":
            return (ks, kt) != ("c", "f") and (bs // 2 if ks == "c" else bs) <= (
                bt // 2 if kt == "c" else bt
            )
        return False

    def iinfo(self, type: Any, /) -> IInfo:
        """Machine limits of an integer dtype (or of a tensor's dtype), as Python ints."""
        i = self.backend.xp.iinfo(type.data if isinstance(type, Tensor) else type)
        return IInfo(int(i.bits), int(i.max), int(i.min), self._as_dtype(i.dtype))

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
        """``start, start + step, ...`` below ``stop``, a Tensor without graph (like every
        creation function of the namespace); without ``dtype`` the default integer dtype
        if every bound is an int, else the default floating dtype (the standard)."""
        be = self.backend
        dtype = _dtype(be, dtype, "arange")
        if dtype is None:
            bounds = (start, stop, step)
            if any(isinstance(b, float) for b in bounds):
                dtype = be.dtype
            elif all(b is None or isinstance(b, int) for b in bounds):
                dtype = self.__array_namespace_info__().default_dtypes()["integral"]
        return self._const(be.xp.arange(start, stop, step, dtype=dtype, device=device or be.device))

    def zeros(self, shape: Sequence[int] | int, *, dtype: Any = None, device: Any = None) -> Tensor:
        return self.full(shape, 0.0, dtype=dtype, device=device)

    def ones(self, shape: Sequence[int] | int, *, dtype: Any = None, device: Any = None) -> Tensor:
        return self.full(shape, 1.0, dtype=dtype, device=device)

    empty = zeros

    def full(
        self, shape: Sequence[int] | int, fill_value: Any, *, dtype: Any = None, device: Any = None
    ) -> Tensor:
        be = self.backend
        dtype = _dtype(be, dtype, "full")
        if dtype is None:
            dtype = self._default_dtype_for(fill_value)
        return self._const(be.xp.full(shape, fill_value, dtype=dtype, device=device or be.device))

    def _default_dtype_for(self, value: Any) -> Any:
        """The standard's dtype for a Python scalar: bool, the default integer dtype, the
        backend's default floating (or complex) dtype."""
        if isinstance(value, bool):
            return self.backend.xp.bool
        if isinstance(value, int):
            return self.__array_namespace_info__().default_dtypes()["integral"]
        if isinstance(value, complex):
            return self.__array_namespace_info__().default_dtypes()["complex floating"]
        return self.backend.dtype

    def full_like(
        self, x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None
    ) -> Any:
        if isinstance(x, Tensor):
            dtype = _dtype(x._backend, dtype, "full_like")
            out = x._backend.xp.full_like(x.data, fill_value, dtype=dtype, device=device)
            return Tensor._make(out, x._backend, None)
        dtype = _dtype(self.backend, dtype, "full_like")
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
            dtype = _dtype(obj._backend, dtype, "asarray")
            return self.astype(out, dtype) if dtype is not None and dtype != obj.dtype else out
        be = self.backend
        dtype = _dtype(be, dtype, "asarray")
        if dtype is None:
            dtype = self._python_dtype(obj)
        if dtype is not None and (type(obj) in _PY_SCALARS or isinstance(obj, list | tuple)):
            try:
                host = np.asarray(obj)
            except (ValueError, OverflowError):  # ragged, or beyond int64: the library says
                host = None
            if host is not None and host.dtype.kind in "iuf" and host.size:
                check_numbers_fit(host, be, dtype, "asarray")
        return self._const(be.xp.asarray(obj, dtype=dtype, device=device or be.device, copy=copy))

    def _python_dtype(self, obj: Any) -> Any:
        """The standard's dtype for a Python scalar or nested sequence of them (the
        widest kind present: bool, the default integer, floating or complex dtype);
        None for anything else (arrays keep their dtype)."""
        if type(obj) in _PY_SCALARS:  # not NumPy scalars: they have a dtype
            return self._default_dtype_for(obj)
        if not isinstance(obj, list | tuple):
            return None
        leaves: list[Any] = []
        stack = [obj]
        while stack:
            for item in stack.pop():
                if isinstance(item, list | tuple):
                    stack.append(item)
                elif type(item) in _PY_SCALARS:
                    leaves.append(item)
                else:
                    return None
        if not leaves:
            return self.backend.dtype
        for kind in (complex, float, int):
            found = next((v for v in leaves if type(v) is kind), None)
            if found is not None:
                return self._default_dtype_for(found)
        return self.backend.xp.bool

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
        dtype = be.resolve_dtype(dtype, "eye")  # None: the default float dtype
        return self._const(be.xp.eye(n_rows, n_cols, k=k, dtype=dtype, device=device or be.device))

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
            start,
            stop,
            num,
            dtype=be.resolve_dtype(dtype, "linspace"),
            device=device or be.device,
            endpoint=endpoint,
        )
        return self._const(arr)


def _dtype(be: Backend, dtype: Any, who: str) -> Any:
    """``dtype=`` of a creation function of the namespace as ``be``'s library's dtype,
    read as minitorch's creation functions read it (:meth:`Backend.resolve_dtype`: a
    name, a NumPy type, any library's dtype object); None stays None."""
    return None if dtype is None else be.resolve_dtype(dtype, who)


_NAMESPACES: dict[Backend, Namespace] = {}


def namespace(backend: Backend | None = None) -> Namespace:
    """The differentiable namespace of ``backend`` (default: the current backend)."""
    be = backend if backend is not None else get_backend()
    ns = _NAMESPACES.get(be)
    if ns is None:
        ns = _NAMESPACES[be] = Namespace(be)
    return ns


register_namespace(namespace)


def __array_namespace_info__() -> Info:
    """The info object of the current backend's namespace (Array API 2024.12)."""
    return namespace().__array_namespace_info__()


def __getattr__(name: str) -> Any:
    try:
        return getattr(namespace(), name)
    except AttributeError:
        raise AttributeError(
            f"module 'minitorch.array_api' has no attribute {name!r}: {name} is not provided "
            f"by minitorch's differentiable namespace (write it with the functions it has, "
            f"or declare it as an op with minitorch.defop)"
        ) from None
