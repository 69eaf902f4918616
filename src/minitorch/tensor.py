"""The Tensor: one backend array, its gradient, and the node that produced it; and
``apply``, which runs an op forward and records its Node.

Ops, the differentiable namespace and the methods bound from the op registry live in
the layers above: this module imports none of them. ``Tensor.__array_namespace__``
reaches the namespace through :func:`register_namespace`, which
:mod:`minitorch.array_api` calls when it is imported.
"""

from __future__ import annotations

import math
import numbers
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from . import _grad_mode, engine
from .backend import (
    Backend,
    array_result,
    as_array,
    device_name,
    get_backend,
    is_array_of,
    on_device,
    resolve,
)
from .backend._fallback import int_range
from .backend.promotion import NUMBERS as _NUMBERS
from .backend.promotion import promote
from .engine import Node, Op, record
from .errors import TENSOR_SPELLINGS, BackendMismatchError, CaptureError, OpError, missing_attribute

__all__ = ["Tensor", "apply", "describe", "namespace_of", "register_namespace"]

Operand = Union["Tensor", float, int, Any]
#: the Array API versions ``__array_namespace__(api_version=)`` accepts
_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")
Axis = int | tuple[int, ...] | None


#: Tensor and its subclasses: ``type(x) in TENSOR_TYPES`` is the ops' fast type test
TENSOR_TYPES: set[type] = set()


class Tensor:
    """An n-dimensional array of some backend, recorded for reverse-mode autograd.

    Parameters
    ----------
    data : array_like
        Python numbers, nested lists, a NumPy array or an array of the current backend.
    requires_grad : bool
        Record operations on this tensor so that ``backward()`` can fill ``.grad``.
    dtype : str or dtype, optional
        Defaults as in :func:`minitorch.tensor`.

    Attributes
    ----------
    data : array
        The backend array (NumPy, torch, array-api-strict, JAX or CuPy).
    grad : array or None
        The accumulated gradient: a backend array of the same shape, dtype and device.
    requires_grad : bool
    name : str or None
        An optional label, shown in error messages and graph pictures.

    Examples
    --------
    >>> import minitorch
    >>> x = minitorch.Tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> y = (x * x).sum()
    >>> y.backward()
    >>> x.grad
    array([2., 4., 6.], dtype=float32)
    """

    __slots__ = (
        "__weakref__",
        "_backend",
        "_grad",
        "_node",
        "_requires_grad",
        "_version",
        "data",
        "name",
    )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # a subclass (a model library's Parameter) takes the ops' fast paths too
        super().__init_subclass__(**kwargs)
        TENSOR_TYPES.add(cls)

    # NumPy must not treat a Tensor as an object array: `ndarray * Tensor` and
    # `np.float64(2) * Tensor` defer to Tensor.__rmul__.
    __array_ufunc__ = None
    __array_priority__ = 1000

    data: Any
    name: str | None
    _grad: Any
    _requires_grad: bool
    _node: Node | None
    _version: int
    _backend: Backend

    def __init__(
        self,
        data: Any,
        requires_grad: bool = False,
        *,
        dtype: Any = None,
        device: Any = None,
        name: str | None = None,
    ) -> None:
        be = on_device(
            data._backend if isinstance(data, Tensor) else get_backend(), device, "tensor"
        )
        dt = be.resolve_dtype(dtype, "tensor") if dtype is not None else None
        with be.on_device():  # CuPy: made on the tensor's GPU, wherever the current one is
            _init(self, _fresh_array(data, be, dt, device), be, None)
        self.name = name
        if _flag(requires_grad, "tensor(requires_grad=...)"):
            _check_float(self, "tensor(requires_grad=True)")
            self._requires_grad = True

    @classmethod
    def _make(cls, data: Any, backend: Backend, node: Node | None) -> Tensor:
        """A Tensor around a backend array as it is (no copy): the internal constructor."""
        t = _new(cls)
        _init(t, data, backend, node)
        return t

    # ---------------------------------------------------------------- attributes
    @property
    def shape(self) -> tuple[int, ...]:
        """The size of each axis, as a tuple of ints."""
        return tuple(self.data.shape)

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return len(self.data.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return math.prod(self.data.shape)

    def numel(self) -> int:
        """The number of elements (PyTorch's spelling of ``size``)."""
        return self.size

    @property
    def dtype(self) -> Any:
        """The backend dtype of ``.data``."""
        return self.data.dtype

    @property
    def device(self) -> Any:
        """The backend device of ``.data``."""
        return self.data.device

    @property
    def backend(self) -> Backend:
        """The :class:`~minitorch.Backend` this tensor's array belongs to."""
        return self._backend

    @property
    def is_leaf(self) -> bool:
        """True unless this tensor was produced by a recorded op."""
        return self._node is None

    @property
    def grad_fn(self) -> Node | None:
        """The graph node that produced this tensor (None for leaves and constants)."""
        return self._node

    @property
    def requires_grad(self) -> bool:
        """Whether ops on this tensor record the graph that ``backward()`` follows.

        Settable on a floating-point leaf (as ``requires_grad_``); a non-leaf always
        requires grad.
        """
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(_flag(value, "requires_grad"))

    @property
    def grad(self) -> Any:
        """The accumulated gradient: an array of this tensor's backend with its shape,
        dtype and device, or None. Assigning anything else raises (as PyTorch)."""
        return self._grad

    @grad.setter
    def grad(self, value: Any) -> None:
        self._grad = None if value is None else _checked_grad(self, value)

    @property
    def version(self) -> int:
        """How many in-place operations have modified this tensor."""
        return self._version

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        """minitorch's differentiable Array API namespace for this tensor's backend
        and device: functions on Tensors, creation functions making tensors like it."""
        if api_version is not None and api_version not in _API_VERSIONS:
            raise ValueError(
                f"__array_namespace__: api_version {api_version!r} is not supported; "
                f"minitorch's namespace implements {', '.join(_API_VERSIONS)}"
            )
        return namespace_of(self._backend)

    def to_device(self, device: Any, /, *, stream: Any = None) -> Tensor:
        """This tensor on ``device`` of its backend (differentiable), as the Array API
        ``to_device``; itself if it is there already."""
        if stream is not None:
            raise ValueError(
                f"to_device: streams are not supported (got stream={stream!r}); leave it out"
            )
        if str(device) == str(self.device):
            return self
        return self.to(device=device)

    # ---------------------------------------------------------------- autograd
    def backward(self, gradient: Any = None, retain_graph: bool = False) -> None:
        """Accumulate the gradient of this tensor into every leaf's ``.grad``.

        Parameters
        ----------
        gradient : Tensor or array, optional
            d(something)/d(self); required unless this tensor has one element.
        retain_graph : bool
            Keep the saved arrays so that backward can run through the graph again.

        Examples
        --------
        >>> import minitorch
        >>> x = minitorch.tensor([1.0, 2.0], requires_grad=True)
        >>> (x * 3).sum().backward()
        >>> x.grad
        array([3., 3.], dtype=float32)
        """
        seed = seed_gradient(self, gradient, "backward")
        engine.run_backward([self], [seed], retain_graph=retain_graph)

    def detach(self) -> Tensor:
        """The same data, cut from the graph (no copy)."""
        return Tensor._make(self.data, self._backend, None)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` of this leaf in place (floating-point tensors only);
        ``requires_grad`` must be a bool (as PyTorch: ``"yes"`` or None raise TypeError)."""
        requires_grad = _flag(requires_grad, "requires_grad_")
        if self._node is not None and not requires_grad:
            raise RuntimeError(
                "requires_grad_(False) on a non-leaf tensor: use .detach() to cut it from the graph"
            )
        if requires_grad:
            _check_float(self, "requires_grad_")
        self._requires_grad = requires_grad
        return self

    def retain_grad(self) -> None:
        """Also fill ``.grad`` of this non-leaf tensor during backward (a leaf that
        requires grad gets its ``.grad`` anyway).

        A tensor that does not require grad has no gradient to keep: RuntimeError, as
        PyTorch's "can't retain_grad on Tensor that has requires_grad=False". Under
        ``no_grad()`` a floating-point one is let be (nothing records a graph there, so
        code that builds the same expression with and without grad mode can call it
        either way); its ``.grad`` stays None."""
        if not self._requires_grad:
            if not self._backend.xp.isdtype(self.data.dtype, "real floating"):
                raise RuntimeError(
                    f"retain_grad: {describe(self)} can never have a gradient: only "
                    f"floating-point tensors require grad; convert it first "
                    f"(.astype('float32')) and compute it from a tensor with requires_grad=True"
                )
            if _grad_mode.is_grad_enabled():
                raise RuntimeError(
                    f"retain_grad: {describe(self)} does not require grad, so backward gives "
                    f"it no gradient to keep; call it on a result computed from a tensor "
                    f"with requires_grad=True, or on a leaf after .requires_grad_()"
                )
        if self._node is None:
            return
        self._node.retain = weakref.ref(self)

    def zero_grad(self) -> None:
        """Set ``.grad`` to None (the next backward starts a fresh gradient)."""
        self.grad = None

    # ---------------------------------------------------------------- conversion
    def numpy(self) -> np.ndarray:
        """A NumPy copy of the data (on the host)."""
        return np.array(self._backend.to_numpy(self.data), copy=True)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """``np.asarray(t)``: the host data. On the NumPy backend without ``copy=True``
        it is the tensor's own array (no copy); elsewhere a host copy, so ``copy=False``
        raises there (NumPy 2's protocol). A tensor that requires grad is refused while
        grad mode is on (as PyTorch does): the host array would leave the graph, and a
        library that converts its input this way would silently return no gradient."""
        if self._requires_grad and _grad_mode._state.enabled:
            raise RuntimeError(
                f"np.asarray(t) of a tensor that requires grad ({describe(self)}): the "
                f"NumPy array would leave the graph, so no gradient would flow through "
                f"whatever uses it (e.g. a SciPy function without an Array API path for "
                f"minitorch). Use t.detach() or t.numpy() for the values, or convert under "
                f"`with minitorch.no_grad():`"
            )
        host = self._backend.name == "numpy"
        if copy is False and not host:
            raise ValueError(
                f"np.asarray(copy=False): a {self._backend.name} tensor's data is not host "
                f"memory; a copy is needed (leave copy unset, or use t.numpy())"
            )
        arr = self.data if host else self._backend.to_numpy(self.data)
        if dtype is not None and arr.dtype != np.dtype(dtype):
            return np.array(arr, dtype=dtype)
        return np.array(arr, copy=True) if copy else np.asarray(arr)

    def __dlpack__(
        self,
        /,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: Any = None,
        copy: bool | None = None,
    ) -> Any:
        """DLPack export of the data (zero-copy where the library allows); the keywords
        given are passed on to the backend array's ``__dlpack__``."""
        given = (
            ("stream", stream),
            ("max_version", max_version),
            ("dl_device", dl_device),
            ("copy", copy),
        )
        return self.data.__dlpack__(**{k: v for k, v in given if v is not None})

    def __dlpack_device__(self) -> Any:
        return self.data.__dlpack_device__()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle (and ``copy.copy``/``copy.deepcopy``) as host data plus backend,
        dtype, device, ``requires_grad``, the gradient and the name; a non-leaf becomes
        a leaf holding its data (the graph is not kept), as in PyTorch."""
        be = self._backend
        grad = None if self._grad is None else np.array(be.to_numpy(self._grad), copy=True)
        return _rebuild, (
            be.name,
            device_name(be, self.device),
            np.array(be.to_numpy(self.data), copy=True),
            be.dtype_name(self.data.dtype),
            self._requires_grad,
            grad,
            self.name,
        )

    def item(self) -> float | int | bool:
        """The single element as a Python number."""
        if self.size != 1:  # before any copy to the host
            raise ValueError(
                f"item(): only a tensor with one element can be converted to a Python "
                f"number; this one has shape {self.shape}"
            )
        return self._backend.to_numpy(self.data).item()  # type: ignore[no-any-return]

    def tolist(self) -> Any:
        """The data as (nested) Python lists."""
        return self.numpy().tolist()

    def __float__(self) -> float:
        """A one-element real or boolean tensor as a Python float; a complex one is
        refused with TypeError (the Array API standard)."""
        self._no_complex("__float__", "float(t.real)")
        return float(self.item())

    def __int__(self) -> int:
        """A one-element real or boolean tensor as a Python int: NaN raises ValueError
        and an infinity OverflowError, a complex tensor TypeError (the standard)."""
        self._no_complex("__int__", "int(t.real)")
        return int(self.item())

    def _no_complex(self, who: str, instead: str) -> None:
        if self._backend.xp.isdtype(self.data.dtype, "complex floating"):
            raise TypeError(
                f"{who}: a complex tensor ({describe(self)}) has no real value to convert; "
                f"take its real part first, e.g. {instead}, or use complex(t)"
            )

    def __pos__(self) -> Tensor:
        """``+t``: a copy of ``t`` (differentiable)."""
        out: Tensor = self.__array_namespace__().positive(self)
        return out

    def __complex__(self) -> complex:
        return complex(self.item())

    def __index__(self) -> int:
        """A 0-d integer tensor as a Python int (``range(t)``, ``seq[t]``); anything
        else is refused with TypeError, as the Array API standard says."""
        xp = self._backend.xp
        if self.data.ndim != 0 or not xp.isdtype(self.data.dtype, "integral"):
            raise TypeError(
                f"__index__: only a 0-d tensor of an integer dtype can be used as an index, "
                f"got {describe(self)}; use int(t) to convert a number, or .astype('int64')"
            )
        return int(self.item())

    def __bool__(self) -> bool:
        if self.size != 1:
            raise ValueError(
                f"the truth value of a tensor with {self.size} elements is ambiguous; "
                f"use .any() or .all()"
            )
        return bool(self.item())

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return int(self.data.shape[0])

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    __hash__ = object.__hash__

    # ---------------------------------------------------------------- in-place
    def _rebase(self, result: Tensor, what: str) -> Tensor:
        """Make ``self`` hold ``result`` (an out-of-place result) and bump the version.

        Buffers are never written in place: arrays saved for backward keep their values.
        Version counters still make backward refuse gradients that used a value the
        user has since changed, exactly as PyTorch does.
        """
        if result.shape != self.shape:  # the other operand broadcast self to a new shape
            raise RuntimeError(
                f"{what}: the result has shape {result.shape}, which cannot be stored in "
                f"place in a tensor of shape {self.shape}: in place, the other operand must "
                f"broadcast to {self.shape}; compute it out of place (y = x + other)"
            )
        if result.data.dtype != self.data.dtype:
            _check_inplace_cast(self, result, what)
            result = self.__array_namespace__().astype(result, self.data.dtype)
        old = self._node
        self.data = result.data
        self._version += 1
        if old is not None:
            old.output_modified(self)
        if _grad_mode._state.enabled and result._node is not None:
            self._node = result._node
            self._requires_grad = True
            # the in-place op saw `self` at its new version: expect that one
            result._node.expect_version(self, result)
        return self

    def _check_inplace(self, what: str) -> None:
        if self._requires_grad and self._node is None and _grad_mode._state.enabled:
            raise RuntimeError(
                f"{what}: a leaf tensor that requires grad (shape {self.shape}) cannot be "
                f"modified in place while grad mode is on; do it under `with "
                f"minitorch.no_grad():` (e.g. for a parameter update), or on a .detach()ed copy"
            )

    def add_(self, other: Any, *, alpha: float = 1.0) -> Tensor:
        """In place: ``self += alpha * other``; bumps the version counter."""
        self._check_inplace("add_")
        _check_alpha(alpha, "add_")
        return self._rebase(self + (other * alpha if alpha != 1.0 else other), "add_")

    def sub_(self, other: Any, *, alpha: float = 1.0) -> Tensor:
        """In place: ``self -= alpha * other``; bumps the version counter."""
        self._check_inplace("sub_")
        _check_alpha(alpha, "sub_")
        return self._rebase(self - (other * alpha if alpha != 1.0 else other), "sub_")

    def mul_(self, other: Any) -> Tensor:
        """In place: ``self *= other``; bumps the version counter."""
        self._check_inplace("mul_")
        return self._rebase(self * other, "mul_")

    def div_(self, other: Any) -> Tensor:
        """In place: ``self /= other``; bumps the version counter."""
        self._check_inplace("div_")
        return self._rebase(self / other, "div_")

    def copy_(self, src: Any) -> Tensor:
        """In place: the values of ``src`` (a Tensor of any backend or device, an array
        or Python data), broadcast to this shape and cast to this dtype; bumps the
        version counter and is differentiable in ``src`` (as ``torch.Tensor.copy_``)."""
        self._check_inplace("copy_")
        source = src if isinstance(src, Tensor) else Tensor(src)
        ns = self.__array_namespace__()
        if source._backend.name != self._backend.name or str(source.device) != str(self.device):
            source = source.to(self._backend.name, device=self.device)
        if source.data.dtype != self.data.dtype:
            source = ns.astype(source, self.data.dtype)
        try:
            value = ns.broadcast_to(source, self.shape)
        except Exception as exc:
            raise OpError(
                f"copy_: cannot broadcast {describe(src)} to this tensor's shape {self.shape}"
            ) from exc
        return self._rebase(ns.clone(value), "copy_")  # clone: never a view of src's array

    def zero_(self) -> Tensor:
        """In place: set every element to 0 (also inf and NaN); bumps the version."""
        self._check_inplace("zero_")
        return self._rebase(self._filled(0), "zero_")

    def fill_(self, value: float) -> Tensor:
        """In place: set every element to ``value``; bumps the version counter.

        ``value`` is a real number or bool (a NumPy scalar, or a 0-d Tensor or NumPy
        array, is read as its number), as PyTorch: a string, None, a complex number or
        an array with elements along an axis raises TypeError."""
        value = _number_of(value)
        if not isinstance(value, bool | int | float):
            got = (
                describe(value)
                if isinstance(value, Tensor | np.ndarray)
                else f"{type(value).__name__} {value!r}"
            )
            raise TypeError(
                f"fill_: value must be a real number (int, float or bool) or a 0-d tensor, "
                f"got {got}; convert it first (float(...), or .item() of a one-element "
                f"tensor) to fill {describe(self)}"
            )
        self._check_inplace("fill_")
        return self._rebase(self._filled(value), "fill_")

    def _filled(self, value: float) -> Tensor:
        # `self * 0.0 + value` would turn inf and NaN into NaN; `where` with an all-False
        # mask gives `value` everywhere, and a zero gradient to the old graph
        xp = self._backend.xp
        if not xp.isdtype(self.data.dtype, "real floating"):
            full = xp.full(self.data.shape, value, dtype=self.data.dtype, device=self.data.device)
            return Tensor._make(full, self._backend, None)
        never = xp.zeros(self.data.shape, dtype=xp.bool, device=self.data.device)
        out: Tensor = self.__array_namespace__().where(never, self, float(value))
        return out

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_

    # ---------------------------------------------------------------- display
    def __format__(self, spec: str) -> str:
        """``f"{t:.4f}"``: a one-element tensor formats as its Python number (as
        PyTorch's 0-d tensors do); without a spec, any tensor formats as ``str(t)``."""
        if not spec:
            return str(self)
        if self.size != 1:
            raise TypeError(
                f"format spec {spec!r}: only a tensor with one element formats as a "
                f"number; this one is {describe(self)}. Format its elements "
                f"(t.tolist()), or its value after a reduction (f'{{t.mean():{spec}}}')"
            )
        return format(self.item(), spec)

    def __repr__(self) -> str:
        try:
            arr = self._backend.to_numpy(self.data)
            body = np.array2string(np.asarray(arr), separator=", ", prefix="tensor(")
        except CaptureError:  # printing inside a captured step reads the value on the host
            raise
        except Exception:  # pragma: no cover - e.g. a device that cannot be read
            body = f"<{self.shape}>"
        extra = [
            f"dtype={self._backend.dtype_name(self.data.dtype)}",
            f"backend={self._backend.name}",
        ]
        if self._backend.name != "numpy":  # as device= takes it: cuda:0, not <CUDA Device 0>
            extra.append(f"device={device_name(self._backend, self.device)}")
        if self._node is not None:
            extra.append(f"grad_fn=<{self._node.op.name}>")
        elif self.requires_grad:
            extra.append("requires_grad=True")
        return f"tensor({body}, {', '.join(extra)})"

    if TYPE_CHECKING:
        # Methods and operators bound from the op registry (src/minitorch/ops/), declared
        # here for type checkers only.
        # <regen:methods> generated by `nox -s regen`: do not edit
        @property
        def T(self) -> Tensor: ...
        def abs(self) -> Tensor: ...
        def acos(self) -> Tensor: ...
        def acosh(self) -> Tensor: ...
        def add(self, y: Operand) -> Tensor: ...
        def all(self, axis: Axis = None, keepdims: bool = False) -> Tensor: ...
        def any(self, axis: Axis = None, keepdims: bool = False) -> Tensor: ...
        def argmax(self, axis: int | None = None, keepdims: bool = False) -> Tensor: ...
        def argmin(self, axis: int | None = None, keepdims: bool = False) -> Tensor: ...
        def asin(self) -> Tensor: ...
        def asinh(self) -> Tensor: ...
        def astype(self, dtype: Any) -> Tensor: ...
        def atan(self) -> Tensor: ...
        def atan2(self, x2: Operand) -> Tensor: ...
        def atanh(self) -> Tensor: ...
        def bitwise_and(self, x2: Operand) -> Tensor: ...
        def bitwise_invert(self) -> Tensor: ...
        def bitwise_left_shift(self, x2: Operand) -> Tensor: ...
        def bitwise_or(self, x2: Operand) -> Tensor: ...
        def bitwise_right_shift(self, x2: Operand) -> Tensor: ...
        def bitwise_xor(self, x2: Operand) -> Tensor: ...
        def broadcast_to(self, shape: Sequence[int]) -> Tensor: ...
        def ceil(self) -> Tensor: ...
        def clip(self, min: float | None = None, max: float | None = None) -> Tensor: ...
        def clone(self) -> Tensor: ...
        def copysign(self, x2: Operand) -> Tensor: ...
        def cos(self) -> Tensor: ...
        def cosh(self) -> Tensor: ...
        def div(self, y: Operand) -> Tensor: ...
        def erf(self) -> Tensor: ...
        def exp(self) -> Tensor: ...
        def expand_dims(self, axis: int = 0) -> Tensor: ...
        def expm1(self) -> Tensor: ...
        def flip(self, axis: int | tuple[int, ...] | None = None) -> Tensor: ...
        def floor(self) -> Tensor: ...
        def floor_divide(self, y: Operand) -> Tensor: ...
        def gelu(self, approximate: str = "none") -> Tensor: ...
        def hardtanh(self, min_val: float = -1.0, max_val: float = 1.0) -> Tensor: ...
        def hypot(self, x2: Operand) -> Tensor: ...
        def isfinite(self) -> Tensor: ...
        def isinf(self) -> Tensor: ...
        def leaky_relu(self, negative_slope: float = 0.01) -> Tensor: ...
        def log(self) -> Tensor: ...
        def log1p(self) -> Tensor: ...
        def log_softmax(self, axis: int = -1) -> Tensor: ...
        def logsumexp(self, axis: Axis = None, keepdims: bool = False) -> Tensor: ...
        @property
        def mT(self) -> Tensor: ...
        def masked_fill(self, mask: Operand, value: float = 0.0) -> Tensor: ...
        def matmul(self, y: Operand) -> Tensor: ...
        def max(self, axis: Axis = None, keepdims: bool = False) -> Tensor: ...
        def maximum(self, y: Operand) -> Tensor: ...
        def mean(self, axis: Axis = None, keepdims: bool = False) -> Tensor: ...
        def min(self, axis: Axis = None, keepdims: bool = False) -> Tensor: ...
        def minimum(self, y: Operand) -> Tensor: ...
        def mish(self) -> Tensor: ...
        def mul(self, y: Operand) -> Tensor: ...
        def neg(self) -> Tensor: ...
        def nextafter(self, x2: Operand) -> Tensor: ...
        def permute(self, *dims: Any) -> Tensor: ...
        def permute_dims(self, axes: Sequence[int]) -> Tensor: ...
        def pow(self, y: Operand) -> Tensor: ...
        def relu(self) -> Tensor: ...
        def remainder(self, y: Operand) -> Tensor: ...
        def reshape(self, *shape: Any) -> Tensor: ...
        def round(self) -> Tensor: ...
        def rsqrt(self) -> Tensor: ...
        def sigmoid(self) -> Tensor: ...
        def sign(self) -> Tensor: ...
        def signbit(self) -> Tensor: ...
        def silu(self) -> Tensor: ...
        def sin(self) -> Tensor: ...
        def sinh(self) -> Tensor: ...
        def softmax(self, axis: int = -1) -> Tensor: ...
        def softplus(self) -> Tensor: ...
        def sqrt(self) -> Tensor: ...
        def squeeze(self, axis: int | tuple[int, ...] | None = None) -> Tensor: ...
        def std(
            self, axis: Axis = None, keepdims: bool = False, correction: float = 0.0
        ) -> Tensor: ...
        def sub(self, y: Operand) -> Tensor: ...
        def sum(self, axis: Axis = None, keepdims: bool = False) -> Tensor: ...
        def take(self, indices: Operand, axis: int | None = None) -> Tensor: ...
        def tan(self) -> Tensor: ...
        def tanh(self) -> Tensor: ...
        def to(
            self, backend: str | Backend | None = None, *, device: Any = None, dtype: Any = None
        ) -> Tensor: ...
        def transpose(self, axes: Sequence[int] | None = None) -> Tensor: ...
        def tril(self, k: int = 0) -> Tensor: ...
        def triu(self, k: int = 0) -> Tensor: ...
        def trunc(self) -> Tensor: ...
        def var(
            self, axis: Axis = None, keepdims: bool = False, correction: float = 0.0
        ) -> Tensor: ...
        def view(self, *shape: Any) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __add__(self, other: Operand) -> Tensor: ...
        def __and__(self, other: Operand) -> Tensor: ...
        def __eq__(self, other: object) -> Tensor: ...  # type: ignore[override]
        def __floordiv__(self, other: Operand) -> Tensor: ...
        def __ge__(self, other: Operand) -> Tensor: ...
        def __getitem__(self, key: Any) -> Tensor: ...
        def __gt__(self, other: Operand) -> Tensor: ...
        def __iand__(self, other: Operand) -> Tensor: ...
        def __ifloordiv__(self, other: Operand) -> Tensor: ...
        def __ilshift__(self, other: Operand) -> Tensor: ...
        def __imod__(self, other: Operand) -> Tensor: ...
        def __invert__(self) -> Tensor: ...
        def __ior__(self, other: Operand) -> Tensor: ...
        def __ipow__(self, other: Operand) -> Tensor: ...
        def __irshift__(self, other: Operand) -> Tensor: ...
        def __ixor__(self, other: Operand) -> Tensor: ...
        def __le__(self, other: Operand) -> Tensor: ...
        def __lshift__(self, other: Operand) -> Tensor: ...
        def __lt__(self, other: Operand) -> Tensor: ...
        def __matmul__(self, other: Operand) -> Tensor: ...
        def __mod__(self, other: Operand) -> Tensor: ...
        def __mul__(self, other: Operand) -> Tensor: ...
        def __ne__(self, other: object) -> Tensor: ...  # type: ignore[override]
        def __neg__(self) -> Tensor: ...
        def __or__(self, other: Operand) -> Tensor: ...
        def __pow__(self, other: Operand) -> Tensor: ...
        def __radd__(self, other: Operand) -> Tensor: ...
        def __rand__(self, other: Operand) -> Tensor: ...
        def __rfloordiv__(self, other: Operand) -> Tensor: ...
        def __rlshift__(self, other: Operand) -> Tensor: ...
        def __rmatmul__(self, other: Operand) -> Tensor: ...
        def __rmod__(self, other: Operand) -> Tensor: ...
        def __rmul__(self, other: Operand) -> Tensor: ...
        def __ror__(self, other: Operand) -> Tensor: ...
        def __rpow__(self, other: Operand) -> Tensor: ...
        def __rrshift__(self, other: Operand) -> Tensor: ...
        def __rshift__(self, other: Operand) -> Tensor: ...
        def __rsub__(self, other: Operand) -> Tensor: ...
        def __rtruediv__(self, other: Operand) -> Tensor: ...
        def __rxor__(self, other: Operand) -> Tensor: ...
        def __setitem__(self, key: Any, value: Any) -> None: ...
        def __sub__(self, other: Operand) -> Tensor: ...
        def __truediv__(self, other: Operand) -> Tensor: ...
        def __xor__(self, other: Operand) -> Tensor: ...

        # </regen:methods>


class _Spelling:
    """A PyTorch name minitorch writes the Array API way (``x.unsqueeze``, ``x.float``):
    reading it raises the AttributeError that says how (so ``hasattr`` is False). A
    descriptor per name rather than ``Tensor.__getattr__``: a class with that hook loses
    CPython's specialised attribute reads on every Tensor (6% of the per-op time)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        where = f"{type(obj).__name__!r} object" if obj is not None else f"type {owner!r}"
        raise missing_attribute(where, self.name, TENSOR_SPELLINGS, obj)


for _name in TENSOR_SPELLINGS:
    setattr(Tensor, _name, _Spelling(_name))  # (not seen by type checkers: they report it)


def _check_float(t: Tensor, who: str) -> None:
    xp = t._backend.xp
    if xp.isdtype(t.data.dtype, "complex floating"):
        raise RuntimeError(
            f"{who}: complex autograd is not supported: minitorch carries gradients only "
            f"for real floating-point tensors, got dtype "
            f"{t._backend.dtype_name(t.data.dtype)} (shape {t.shape}); differentiate the "
            f"real and imaginary parts as two real tensors instead"
        )
    if not xp.isdtype(t.data.dtype, "real floating"):
        raise RuntimeError(
            f"{who}: only floating-point tensors can require grad, got dtype "
            f"{t._backend.dtype_name(t.data.dtype)} (shape {t.shape}); convert it first, "
            f"e.g. minitorch.tensor(data, dtype='float32', requires_grad=True)"
        )


def _check_inplace_cast(t: Tensor, result: Tensor, what: str) -> None:
    """In place, a result may only be cast within its kind (float64 -> float32), as in
    PyTorch: a float result into an integer tensor, or a number into a bool, is refused."""
    xp = t._backend.xp
    rank = {"bool": 0, "integral": 1, "real floating": 2}  # each kind holds those before it

    def kind(dtype: Any) -> int:
        return next((r for k, r in rank.items() if xp.isdtype(dtype, k)), 3)

    src, dst = kind(result.data.dtype), kind(t.data.dtype)
    if src > dst or (src == 3) != (dst == 3):
        raise RuntimeError(
            f"{what}: the result has dtype {t._backend.dtype_name(result.data.dtype)}, which "
            f"cannot be stored in place in a tensor of dtype "
            f"{t._backend.dtype_name(t.data.dtype)} (shape {t.shape}); compute it out of "
            f"place (y = x + other) or convert first (x = x.astype("
            f"'{t._backend.dtype_name(result.data.dtype)}'))"
        )


_new = object.__new__
TENSOR_TYPES.add(Tensor)


def _init(t: Tensor, data: Any, backend: Backend, node: Node | None) -> None:
    """Every slot of a new Tensor: the one place that sets them."""
    t.data = data
    t._grad = None
    t._requires_grad = node is not None
    t._node = node
    t._version = 0
    t._backend = backend
    t.name = None


def _rebuild(
    backend: str,
    device: str,
    data: np.ndarray,
    dtype: str,
    requires_grad: bool,
    grad: np.ndarray | None,
    name: str | None,
) -> Tensor:
    """A Tensor from what :meth:`Tensor.__reduce__` pickled."""
    try:
        be = resolve(backend, None, device)
    except ImportError as exc:
        raise ImportError(
            f"this pickled minitorch tensor belongs to the {backend!r} backend: {exc}"
        ) from exc
    t = from_host(be, data, dtype, requires_grad, grad)
    t.name = name
    return t


def from_host(
    be: Backend, data: np.ndarray, dtype: str, requires_grad: bool, grad: np.ndarray | None
) -> Tensor:
    """A leaf Tensor of ``be`` (on its device) from host arrays, as pickles and
    ``minitorch.load`` store it; ``grad`` and ``requires_grad`` go through the checked
    setters."""
    dt = be.named_dtype(dtype)
    t = Tensor._make(be.from_numpy(data, dt, be.device), be, None)
    if grad is not None:
        t.grad = be.from_numpy(grad, dt, be.device)
    t.requires_grad_(requires_grad)
    return t


def _checked_grad(t: Tensor, value: Any) -> Any:
    """``value`` as ``t.grad``: an array (or Tensor) of ``t``'s backend, shape, dtype and
    device, or a clear error (PyTorch refuses such an assignment too)."""
    be = t._backend
    if isinstance(value, Tensor):
        value = value.data
    value = array_result(value, be)  # NumPy's scalar result for a 0-d tensor: an array
    if not is_array_of(value, be):
        raise TypeError(
            f".grad of a {be.name} tensor must be an array of {be.name} (or None), got "
            f"{describe(value)}; convert it first, e.g. x.grad = minitorch.tensor(a).to("
            f"{be.name!r}).data"
        )
    problems = [
        f"{what} {got} where the tensor has {want}"
        for what, got, want in (
            ("shape", tuple(value.shape), tuple(t.data.shape)),
            ("dtype", be.dtype_name(value.dtype), be.dtype_name(t.data.dtype)),
            ("device", str(getattr(value, "device", "cpu")), str(t.device)),
        )
        if got != want
    ]
    if problems:
        raise ValueError(f"assigned .grad has {'; '.join(problems)}: it must match the tensor")
    return value


def _host_data(data: Any, floats: bool = False) -> np.ndarray:
    """Python numbers / nested lists as a NumPy array of numbers, or a clear error;
    with ``floats`` (a float dtype was asked for) ints beyond int64 are read as floats,
    as ``torch.tensor(2**63, dtype=torch.float32)`` reads them."""
    cause: Exception | None = None
    try:
        arr = np.asarray(data)
    except ValueError as exc:  # NumPy >= 1.24 refuses ragged nested lists
        arr, cause = np.empty(0, dtype=object), exc
    # 2**63 alone reads as uint64 on NumPy (which array-api-strict then wrapped to -2**63)
    big = _int_beyond_int64(data) if arr.dtype == object or arr.dtype == np.uint64 else None
    if big is not None and floats and cause is None:
        return np.asarray(data, dtype=np.float64)
    if big is not None:
        try:
            hint = f"; write it as a float ({float(big):g}) for a float tensor"
        except OverflowError:  # beyond every float too
            hint = ""
        raise OverflowError(
            f"tensor(): the integer {big} does not fit in int64, the dtype of Python ints "
            f"(from {INT64_MIN} to {INT64_MAX}){hint}"
        ) from cause
    if arr.dtype == object:
        raise TypeError(
            "tensor(): could not make a rectangular array of numbers from the data "
            "(ragged nested lists, or Tensors inside a list?)"
        ) from cause
    return arr


#: (backend, dtype, a NumPy dtype of Python data) -> the range that data must lie in for
#: the dtype (low, high, the dtype's name, integral), or None: every value fits
_LIMITS: dict[tuple[str, Any, str], tuple[float, float, str, bool] | None] = {}


def _limits(
    be: Backend, dtype: Any, source: np.dtype[Any]
) -> tuple[float, float, str, bool] | None:
    xp = be.xp
    if be.dtype_name(dtype) == source.name:
        return None
    if xp.isdtype(dtype, "integral"):
        low, high, name = int_range(xp, dtype)
        if source.kind in "iu" and np.iinfo(source).min >= low and np.iinfo(source).max <= high:
            return None
        return low, high, name, True
    if xp.isdtype(dtype, "real floating") and source.kind == "f":
        info = xp.finfo(dtype)
        biggest = float(info.max)
        if float(np.finfo(source).max) <= biggest:
            return None
        return -biggest, biggest, be.dtype_name(getattr(info, "dtype", dtype)), False
    return None


def check_numbers_fit(host: np.ndarray, be: Backend, dtype: Any, who: str = "tensor()") -> None:
    """Refuse Python numbers (``host``, as NumPy read them) that ``dtype`` cannot hold,
    by the rule of :func:`~minitorch.backend.promotion.fit_number` (``full``'s fill
    value): 300 into int8 wrapped to 44 silently (``torch.tensor`` and ``np.array``
    refuse it), 1e300 into float32 became inf with NumPy's overflow warning, 127.5 into
    int8 became 127. nan and the infinities are values of every float dtype."""
    key = (be.name, dtype, host.dtype.char)
    try:
        limits = _LIMITS[key]
    except KeyError:
        limits = _LIMITS[key] = _limits(be, dtype, host.dtype)
    except TypeError:  # (a dtype object that cannot be hashed)
        limits = _limits(be, dtype, host.dtype)
    if limits is None:
        return
    low, high, name, integral = limits
    if host.ndim == 0:  # one number: no array passes
        bad = host.item()
        finite = math.isfinite(bad)
        if (low <= bad <= high and finite) or (not finite and not integral):
            return
    else:
        flat = host.reshape(-1)
        finite = bool(np.isfinite(flat).all()) if host.dtype.kind == "f" else True
        if not finite and not integral:
            flat = flat[np.isfinite(flat)]
            finite = True
        if finite and (not flat.size or (flat.min() >= low and flat.max() <= high)):
            return
        if finite:
            bad = flat[np.argmax(np.abs(flat))].item() if not integral else None
            if integral:
                least, most = flat.min(), flat.max()
                bad = (most if most > high else least).item()
    if not finite:
        raise ValueError(
            f"{who}: nan and the infinities are not values of {name}, an integer dtype; "
            f"give finite numbers, or a floating dtype"
        )
    holds = f"from {low} to {high}" if integral else f"finite values up to {high:g} in magnitude"
    raise OverflowError(
        f"{who}: {bad!r} does not fit in {name} ({holds}); give a dtype that holds it "
        f"(dtype='{'int64' if integral else 'float64'}'), or numbers within range"
    )


#: the range of int64, the widest integer dtype every backend has
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _int_beyond_int64(data: Any) -> int | None:
    """A Python int in ``data`` (a number, nested lists) beyond int64 (None: none)."""
    stack: list[Any] = [data]
    while stack:
        v = stack.pop()
        if isinstance(v, list | tuple):
            stack.extend(reversed(v))
        elif isinstance(v, int) and not isinstance(v, bool) and not INT64_MIN <= v <= INT64_MAX:
            return v
    return None


def _fresh_array(data: Any, be: Backend, dt: Any, device: Any) -> Any:
    """``Tensor(data)``'s array: of ``be`` (and dtype ``dt``, where given), and always a
    copy, so that later changes to the caller's array never reach it."""
    if isinstance(data, Tensor):
        arr = as_array(data.data, be, dt, data.device if device is None else be.device)
    elif isinstance(data, np.generic):  # a NumPy scalar keeps its dtype, as an array's
        arr = as_array(np.asarray(data), be, dt)
    elif isinstance(data, bool | int | float) or (
        isinstance(data, Sequence) and not isinstance(data, str | bytes)
    ):
        floats = dt is not None and be.xp.isdtype(dt, "real floating")
        host = _host_data(data, floats)
        target = be.dtype if dt is None and host.dtype.kind == "f" else dt
        if target is not None and host.dtype.kind in "iuf" and host.size:
            check_numbers_fit(host, be, target)
        arr = as_array(host, be, target)
    else:
        arr = as_array(data, be, dt)
    return be.xp.asarray(arr, copy=True)


# ---------------------------------------------------------------- apply: forward + record
_GRAD_MODE = _grad_mode._state  # thread-local: each thread reads its own .enabled


def apply(op: Any, args: Sequence[Any], params: dict[str, Any]) -> Tensor:
    """Run ``op`` forward on ``args`` (Tensors and Python scalars) and record a Node.

    A result requires grad iff grad mode is on, the op is differentiable and some input
    requires grad; otherwise nothing is saved.
    """
    be = None
    needs_grad = False
    datas: list[Any] = []
    edges: list[Any] = []
    for a in args:
        if type(a) is Tensor or isinstance(a, Tensor):
            if be is None:
                be = a._backend
            elif a._backend is not be and (
                a._backend.name != be.name or a._backend.device != be.device
            ):
                raise _mix_error(op, args)
            datas.append(a.data)
            if a._requires_grad:
                needs_grad = True
                edges.append(a._node or a)
            else:
                edges.append(None)
        else:
            datas.append(a)
            edges.append(None)
    if be is None:
        raise OpError(f"{op.name}: needs at least one Tensor input")
    inputs = datas
    promote_at = op.promote
    try:  # (free in Python 3.11 where nothing is raised)
        if promote_at is not None:
            # x + y of one float dtype, x * 2.0, exp(x) of a float x: nothing to promote
            # (checked inline, as every arithmetic op passes here); anything else goes
            # through the table
            n = len(datas)
            if n == 1:  # one input, a Tensor's array: only an integer or boolean one changes
                if datas[0].dtype not in be.floating:
                    inputs = promote(be, datas, 0, op.promote_float, op.promote_compares)
            elif n == 2 and promote_at == 0:
                x, y = datas
                fl = be.floating
                if type(y) in _NUMBERS:  # a bool is an int to a non-bool tensor (promote)
                    same = x.dtype in fl and type(y) is not bool
                elif type(x) in _NUMBERS:
                    same = y.dtype in fl and type(x) is not bool
                else:
                    dt = x.dtype
                    same = (dt is y.dtype or dt == y.dtype) and dt in fl
                if not same:
                    inputs = promote(be, datas, 0, op.promote_float, op.promote_compares)
            else:
                inputs = promote(be, datas, promote_at, op.promote_float, op.promote_compares)
    except (TypeError, OverflowError) as exc:  # no common dtype (uint64 with int8), or
        # a Python int the integer dtype cannot hold (int8 + 300)
        raise _forward_error(op, args, params, exc) from None
    try:
        if be.scope is None:
            out, saved = op.fwd(be.xp, *inputs, **params) if params else op.fwd(be.xp, *inputs)
        else:  # CuPy: on the tensors' GPU, wherever the current device is
            with be.scope(be.device):
                out, saved = op.fwd(be.xp, *inputs, **params)
    except (OpError, CaptureError):  # a CaptureError: a host read inside a captured step
        raise
    except Exception as exc:
        if op.bools is None or isinstance(exc, ValueError) or not _booleans(be, inputs):
            raise _forward_error(op, args, params, exc) from exc
        out, saved = _boolean_answer(op, be, inputs, params, args), ()
    if op.moves:
        be = params["backend"]
    res = _new(Tensor)
    if not needs_grad or op.vjp is None or not _GRAD_MODE.enabled:
        _init(res, out, be, None)
    elif out.dtype not in be.floating:  # e.g. astype(int64): no gradient, as PyTorch
        if be.xp.isdtype(out.dtype, "complex floating"):
            raise _complex_error(op, args)
        _init(res, out, be, None)
    else:
        _init(res, out, be, record(op, params, saved, edges, out, be, args, inputs))
    return res


def _booleans(be: Backend, inputs: Sequence[Any]) -> bool:
    """Whether every input of an op is boolean (an array, or a Python bool)."""
    bool_dtype = be.dtypes["bool"]
    return all(type(v) is bool or getattr(v, "dtype", None) == bool_dtype for v in inputs)


def _boolean_answer(op: Any, be: Backend, inputs: Sequence[Any], params: Any, args: Any) -> Any:
    """``op``'s answer for boolean inputs that the library refused (``defop(bools=)``),
    as NumPy and PyTorch answer them."""
    xp = be.xp
    device = next(v.device for v in inputs if type(v) is not bool)
    arrays = [xp.asarray(v, dtype=xp.bool, device=device) if type(v) is bool else v for v in inputs]
    try:
        if be.scope is None:
            return op.bools(xp, *arrays, **params)
        with be.scope(be.device):
            return op.bools(xp, *arrays, **params)
    except Exception as exc:
        raise _forward_error(op, args, params, exc) from exc


def describe(x: Any) -> str:
    """A short description of an op argument: shape, dtype and backend of a Tensor."""
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


def _complex_error(op: Op, args: Sequence[Any]) -> OpError:
    inputs = "; ".join(describe(a) for a in args)
    return OpError(
        f"{op.name}: complex autograd is not supported: this op's result is complex and an "
        f"input requires grad (inputs: {inputs}); minitorch differentiates only real "
        f"floating-point results. Compute it under minitorch.no_grad(), or on .detach()ed "
        f"inputs, or keep the real and imaginary parts as two real tensors"
    )


def _mix_error(op: Op, args: Sequence[Any]) -> BackendMismatchError:
    names = sorted({a._backend.name for a in args if isinstance(a, Tensor)})
    inputs = "; ".join(describe(a) for a in args)
    if len(names) == 1:  # one backend, two devices: torch would mix a 0-d CPU tensor in
        return _device_error(op, args, inputs)
    return BackendMismatchError(
        f"{op.name}: cannot combine tensors from different backends ({' and '.join(names)}); "
        f"inputs: {inputs}. Move one with .to({names[0]!r}) first."
    )


def _forward_error(op: Op, args: Sequence[Any], params: dict[str, Any], exc: Exception) -> OpError:
    tensors = [a for a in args if isinstance(a, Tensor)]
    devices = {str(t.device) for t in tensors}
    inputs = "; ".join(describe(a) for a in args)
    shown = {k: v for k, v in params.items() if not hasattr(v, "shape")}
    extra = f" with {shown}" if shown else ""
    if len(devices) > 1:
        return _device_error(op, args, inputs)
    hint = ""
    if isinstance(exc, NotImplementedError) and tensors:
        # torch has tensors of uint16, uint32 and uint64 but few kernels for them
        be = tensors[0]._backend
        dtypes = ", ".join(sorted({be.dtype_name(t.dtype) for t in tensors}))
        hint = (
            f" ({be.library.__name__} has no {op.name} for {dtypes}: convert the input "
            f"first, e.g. x.astype('int64') or x.astype('float32'))"
        )
    return OpError(f"{op.name}{extra} failed on inputs {inputs}: {type(exc).__name__}: {exc}{hint}")


def _device_error(op: Op, args: Sequence[Any], inputs: str) -> BackendMismatchError:
    tensors = [a for a in args if isinstance(a, Tensor)]
    devices = sorted({device_name(t._backend, t.device) for t in tensors})
    return BackendMismatchError(
        f"{op.name}: tensors are on different devices ({' and '.join(devices)}); "
        f"inputs: {inputs}. Move them to one device first: "
        f".to(device={device_name(tensors[0]._backend, tensors[0].device)!r}) on the others."
    )


# ---------------------------------------------------------------- gradients and namespaces
def seed_gradient(t: Tensor, gradient: Any, who: str, as_tensor: bool = False) -> Any:
    """The gradient a backward pass from ``t`` starts with: ``gradient`` checked and
    converted (an array, or a Tensor with ``as_tensor``), or ones for one element."""
    with t._backend.on_device():  # CuPy: made on the output's GPU
        return _seed(t, gradient, who, as_tensor)


def _seed(t: Tensor, gradient: Any, who: str, as_tensor: bool) -> Any:
    if not t.requires_grad:
        raise RuntimeError(
            f"{who}: the tensor (shape {tuple(t.data.shape)}) does not require grad and has "
            f"no graph. Create its inputs with requires_grad=True (and not under no_grad())."
        )
    xp = t._backend.xp
    if gradient is None:
        if math.prod(t.data.shape) != 1:
            raise RuntimeError(
                f"{who}: a gradient can be created implicitly only for outputs with one "
                f"element; this output has shape {tuple(t.data.shape)}. Pass gradient= "
                f"(an array of that shape), or reduce it first, e.g. y.sum().backward()."
            )
        g = xp.ones_like(t.data)
        return Tensor._make(g, t._backend, None) if as_tensor else g
    given = gradient if isinstance(gradient, Tensor) else None
    be = t._backend
    foreign = (
        given._backend.name != be.name
        if given is not None
        # NumPy arrays and Python data are host data, copied to the device as tensor() does
        else not isinstance(gradient, np.ndarray)
        and hasattr(gradient, "shape")
        and not is_array_of(gradient, be)
    )
    if foreign:
        raise BackendMismatchError(
            f"{who}: the gradient is {describe(gradient)} but the output is {describe(t)}; "
            f"give a gradient of the output's backend (e.g. g.to({be.name!r}))"
        )
    native = given.data if given is not None else gradient
    if is_array_of(native, be) and str(native.device) != str(t.device):
        raise BackendMismatchError(
            f"{who}: the gradient is on device {native.device} but the output is on "
            f"{t.device}; move the gradient there first"
        )
    if getattr(native, "dtype", None) is not None and _complex(be, native.dtype):
        name = (
            native.dtype.name if isinstance(native.dtype, np.dtype) else be.dtype_name(native.dtype)
        )
        raise TypeError(
            f"{who}: the gradient has dtype {name} but the output "
            f"{describe(t)} is real; pass a real gradient (PyTorch refuses it too)"
        )
    gd = given.data if given is not None else as_array(gradient, be, t.data.dtype, t.device)
    if tuple(gd.shape) != tuple(t.data.shape):
        raise RuntimeError(
            f"{who}: gradient has shape {tuple(gd.shape)} but the output has shape "
            f"{tuple(t.data.shape)}; they must match."
        )
    if gd.dtype != t.data.dtype:
        # a Tensor gradient of another real or bool dtype is cast to the output's, as in
        # PyTorch (an int64 one of a float32 output too, which strict's arithmetic refuses)
        if as_tensor and given is not None:
            return namespace_of(be).astype(given, t.data.dtype)  # differentiable
        gd, given = xp.astype(gd, t.data.dtype), None
    if as_tensor:
        return given if given is not None else Tensor._make(gd, t._backend, None)
    return xp.asarray(gd, copy=True)


def _check_alpha(alpha: Any, who: str) -> None:
    """``alpha`` of ``add_``/``sub_``: a real number (a str times a 0-d int tensor was
    Python's string repetition)."""
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"{who}: alpha must be a real number, got {alpha!r}")


def _flag(value: Any, who: str) -> bool:
    """A ``requires_grad`` value (of a new tensor, ``requires_grad_`` or the setter):
    True or False (NumPy's bools too), as in PyTorch; ``"yes"``, 1 or None were read by
    their truth value."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(
            f"{who}: requires_grad must be True or False, got {type(value).__name__} {value!r}"
        )
    return bool(value)


def _number_of(value: Any) -> Any:
    """A 0-d Tensor, NumPy array or NumPy scalar as the Python number it holds (one read
    on the host), as PyTorch's ``fill_`` and ``full`` take it; anything else as it is."""
    if isinstance(value, Tensor | np.ndarray | np.generic) and value.ndim == 0:
        return value.item()
    return value


def _complex(be: Backend, dtype: Any) -> bool:
    """Whether ``dtype`` (of ``be``'s library, or NumPy's) is complex."""
    if isinstance(dtype, np.dtype):
        return dtype.kind == "c"
    return bool(be.xp.isdtype(dtype, "complex floating"))


# backend -> its differentiable namespace; filled by minitorch.array_api when imported
_namespace: list[Callable[[Backend], Any]] = []


def register_namespace(factory: Callable[[Backend], Any]) -> None:
    """Set how the differentiable namespace of a backend is made (one factory; the
    layer above, :mod:`minitorch.array_api`, registers it)."""
    _namespace[:] = [factory]


def namespace_of(backend: Backend) -> Any:
    """The differentiable Array API namespace of ``backend`` (its dtype and device)."""
    if not _namespace:
        raise RuntimeError("no differentiable namespace registered: `import minitorch` first")
    return _namespace[0](backend)
