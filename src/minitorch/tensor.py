"""The Tensor: one backend array, its gradient, and the node that produced it."""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from . import _grad_mode
from .autograd import Node

if TYPE_CHECKING:
    from .backend import Backend

__all__ = ["Tensor"]

Operand = Union["Tensor", float, int, Any]
Axis = int | tuple[int, ...] | None


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
        "_node",
        "_version",
        "data",
        "grad",
        "name",
        "requires_grad",
    )

    # NumPy must not treat a Tensor as an object array: `ndarray * Tensor` and
    # `np.float64(2) * Tensor` defer to Tensor.__rmul__.
    __array_ufunc__ = None
    __array_priority__ = 1000

    data: Any
    grad: Any
    requires_grad: bool
    name: str | None
    _node: Node | None
    _version: int
    _backend: Backend

    def __init__(
        self, data: Any, requires_grad: bool = False, *, dtype: Any = None, name: str | None = None
    ) -> None:
        from .creation import tensor

        t = tensor(data, dtype=dtype, requires_grad=requires_grad)
        self.data = t.data
        self.grad = None
        self.requires_grad = t.requires_grad
        self._node = None
        self._version = 0
        self._backend = t._backend
        self.name = name

    @classmethod
    def _make(cls, data: Any, backend: Backend, node: Node | None) -> Tensor:
        t = object.__new__(cls)
        t.data = data
        t.grad = None
        t.requires_grad = node is not None
        t._node = node
        t._version = 0
        t._backend = backend
        t.name = None
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
    def version(self) -> int:
        """How many in-place operations have modified this tensor."""
        return self._version

    @property
    def T(self) -> Tensor:
        """All axes reversed (differentiable)."""
        from .ops.shape import permute_dims

        return permute_dims(self, tuple(range(self.ndim - 1, -1, -1)))

    @property
    def mT(self) -> Tensor:
        """The last two axes swapped (differentiable)."""
        from .ops.shape import matrix_transpose

        out: Tensor = matrix_transpose(self)
        return out

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        """minitorch's differentiable Array API namespace (functions on Tensors)."""
        from . import array_api

        return array_api

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
        _autograd.backward(self, gradient, retain_graph)

    def detach(self) -> Tensor:
        """The same data, cut from the graph (no copy)."""
        return Tensor._make(self.data, self._backend, None)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` of this leaf in place (floating-point tensors only)."""
        if self._node is not None and not requires_grad:
            raise RuntimeError(
                "requires_grad_(False) on a non-leaf tensor: use .detach() to cut it from the graph"
            )
        if requires_grad:
            _check_float(self, "requires_grad_")
        self.requires_grad = requires_grad
        return self

    def retain_grad(self) -> None:
        """Also fill ``.grad`` of this non-leaf tensor during backward."""
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
        return float(self.item())

    def __int__(self) -> int:
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

    def to(self, backend: str | Backend, *, dtype: Any = None, device: Any = None) -> Tensor:
        """Move to another backend (and/or dtype, device); differentiable.

        Examples
        --------
        >>> import minitorch
        >>> x = minitorch.tensor([1.0, 2.0])
        >>> x.to("numpy", dtype="float64").dtype
        dtype('float64')
        """
        from .backend import Backend, resolve
        from .ops.elementwise import astype
        from .ops.shape import move

        if isinstance(backend, Backend):
            dst = backend
            if device is not None:
                dst = resolve(dst.name, dst.dtype, device)
        else:
            dst = resolve(backend, None, device)
        out = self
        if dst.name != self._backend.name or (
            device is not None and str(dst.device) != str(self.device)
        ):
            out = move(self, backend=dst, source=self._backend)
        if dtype is not None:
            out = astype(out, dst.resolve_dtype(dtype))
        return out

    # ---------------------------------------------------------------- in-place
    def _rebase(self, result: Tensor, what: str) -> Tensor:
        """Make ``self`` hold ``result`` (an out-of-place result) and bump the version.

        Buffers are never written in place: arrays saved for backward keep their values.
        Version counters still make backward refuse gradients that used a value the
        user has since changed, exactly as PyTorch does.
        """
        if result.data.dtype != self.data.dtype:
            result = result.astype(self.data.dtype)
        old = self._node
        self.data = result.data
        self._version += 1
        if old is not None and old.saves_output() and old.out_modified is None:
            label = f"tensor {self.name!r}" if self.name else "tensor"
            old.out_modified = (
                f"{label} of shape {self.shape} and dtype "
                f"{self._backend.dtype_name(self.data.dtype)}",
                self._version,
                weakref.ref(self),  # later in-place ops bump the version reported
            )
        if _grad_mode._state.enabled and result._node is not None:
            node = result._node
            self._node = node
            self.requires_grad = True
            # the in-place op saw `self` at its new version: expect that one
            node.checks = tuple(
                (self, self._version, i) if t is self or t is result else (t, v, i)
                for t, v, i in node.checks
            )
        return self

    def _check_inplace(self, what: str) -> None:
        if self.requires_grad and self._node is None and _grad_mode._state.enabled:
            raise RuntimeError(
                f"{what}: a leaf tensor that requires grad (shape {self.shape}) cannot be "
                f"modified in place while grad mode is on; do it under `with "
                f"minitorch.no_grad():` (e.g. for a parameter update), or on a .detach()ed copy"
            )

    def add_(self, other: Any, *, alpha: float = 1.0) -> Tensor:
        """In place: ``self += alpha * other``; bumps the version counter."""
        self._check_inplace("add_")
        return self._rebase(self + (other * alpha if alpha != 1.0 else other), "add_")

    def sub_(self, other: Any, *, alpha: float = 1.0) -> Tensor:
        """In place: ``self -= alpha * other``; bumps the version counter."""
        self._check_inplace("sub_")
        return self._rebase(self - (other * alpha if alpha != 1.0 else other), "sub_")

    def mul_(self, other: Any) -> Tensor:
        """In place: ``self *= other``; bumps the version counter."""
        self._check_inplace("mul_")
        return self._rebase(self * other, "mul_")

    def div_(self, other: Any) -> Tensor:
        """In place: ``self /= other``; bumps the version counter."""
        self._check_inplace("div_")
        return self._rebase(self / other, "div_")

    def zero_(self) -> Tensor:
        """In place: set every element to 0 (also inf and NaN); bumps the version."""
        self._check_inplace("zero_")
        return self._rebase(self._filled(0), "zero_")

    def fill_(self, value: float) -> Tensor:
        """In place: set every element to ``value``; bumps the version counter."""
        self._check_inplace("fill_")
        return self._rebase(self._filled(value), "fill_")

    def _filled(self, value: float) -> Tensor:
        # `self * 0.0 + value` would turn inf and NaN into NaN; `where` with an all-False
        # mask gives `value` everywhere, and a zero gradient to the old graph
        xp = self._backend.xp
        if not xp.isdtype(self.data.dtype, "real floating"):
            full = xp.full(self.data.shape, value, dtype=self.data.dtype, device=self.data.device)
            return Tensor._make(full, self._backend, None)
        from .ops.elementwise import where

        never = xp.zeros(self.data.shape, dtype=xp.bool, device=self.data.device)
        return where(Tensor._make(never, self._backend, None), self, float(value))

    __iadd__ = add_
    __isub__ = sub_
    __imul__ = mul_
    __itruediv__ = div_

    def __setitem__(self, key: Any, value: Any) -> None:
        from .ops.indexing import setitem

        self._check_inplace("__setitem__")
        self._rebase(setitem(self, value, key=key), "__setitem__")

    # ---------------------------------------------------------------- display
    def __repr__(self) -> str:
        try:
            arr = self._backend.to_numpy(self.data)
            body = np.array2string(np.asarray(arr), separator=", ", prefix="tensor(")
        except Exception:  # pragma: no cover - e.g. a device that cannot be read
            body = f"<{self.shape}>"
        extra = [
            f"dtype={self._backend.dtype_name(self.data.dtype)}",
            f"backend={self._backend.name}",
        ]
        if self._backend.name != "numpy":
            extra.append(f"device={self.device}")
        if self._node is not None:
            extra.append(f"grad_fn=<{self._node.op.name}>")
        elif self.requires_grad:
            extra.append("requires_grad=True")
        return f"tensor({body}, {', '.join(extra)})"

    if TYPE_CHECKING:
        # Methods and operators bound from the op registry (src/minitorch/ops/), declared
        # here for type checkers only; tests/test_public_api.py keeps the two in step.
        def add(self, other: Operand) -> Tensor: ...
        def sub(self, other: Operand) -> Tensor: ...
        def mul(self, other: Operand) -> Tensor: ...
        def div(self, other: Operand) -> Tensor: ...
        def pow(self, other: Operand) -> Tensor: ...
        def neg(self) -> Tensor: ...
        def __add__(self, other: Operand) -> Tensor: ...
        def __radd__(self, other: Operand) -> Tensor: ...
        def __sub__(self, other: Operand) -> Tensor: ...
        def __rsub__(self, other: Operand) -> Tensor: ...
        def __mul__(self, other: Operand) -> Tensor: ...
        def __rmul__(self, other: Operand) -> Tensor: ...
        def __truediv__(self, other: Operand) -> Tensor: ...
        def __rtruediv__(self, other: Operand) -> Tensor: ...
        def __pow__(self, other: Operand) -> Tensor: ...
        def __rpow__(self, other: Operand) -> Tensor: ...
        def __matmul__(self, other: Operand) -> Tensor: ...
        def __rmatmul__(self, other: Operand) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __invert__(self) -> Tensor: ...
        def __eq__(self, other: object) -> Tensor: ...  # type: ignore[override]
        def __ne__(self, other: object) -> Tensor: ...  # type: ignore[override]
        def __lt__(self, other: Operand) -> Tensor: ...
        def __le__(self, other: Operand) -> Tensor: ...
        def __gt__(self, other: Operand) -> Tensor: ...
        def __ge__(self, other: Operand) -> Tensor: ...
        def __getitem__(self, key: Any) -> Tensor: ...
        def exp(self) -> Tensor: ...
        def log(self) -> Tensor: ...
        def log1p(self) -> Tensor: ...
        def sqrt(self) -> Tensor: ...
        def abs(self) -> Tensor: ...
        def sign(self) -> Tensor: ...
        def erf(self) -> Tensor: ...
        def isfinite(self) -> Tensor: ...
        def maximum(self, other: Operand) -> Tensor: ...
        def minimum(self, other: Operand) -> Tensor: ...
        def clip(self, min: float | None = None, max: float | None = None) -> Tensor: ...
        def astype(self, dtype: Any) -> Tensor: ...
        def clone(self) -> Tensor: ...
        def relu(self) -> Tensor: ...
        def leaky_relu(self, negative_slope: float = 0.01) -> Tensor: ...
        def sigmoid(self) -> Tensor: ...
        def tanh(self) -> Tensor: ...
        def gelu(self, approximate: str = "none") -> Tensor: ...
        def softplus(self) -> Tensor: ...
        def silu(self) -> Tensor: ...
        def softmax(self, axis: int = -1) -> Tensor: ...
        def log_softmax(self, axis: int = -1) -> Tensor: ...
        def sum(self, axis: Axis = None, keepdims: bool = False) -> Tensor: ...
        def mean(self, axis: Axis = None, keepdims: bool = False) -> Tensor: ...
        def max(self, axis: Axis = None, keepdims: bool = False) -> Tensor: ...
        def min(self, axis: Axis = None, keepdims: bool = False) -> Tensor: ...
        def var(
            self, axis: Axis = None, keepdims: bool = False, correction: float = 0.0
        ) -> Tensor: ...
        def logsumexp(self, axis: Axis = None, keepdims: bool = False) -> Tensor: ...
        def argmax(self, axis: int | None = None, keepdims: bool = False) -> Tensor: ...
        def argmin(self, axis: int | None = None, keepdims: bool = False) -> Tensor: ...
        def all(self, axis: Axis = None, keepdims: bool = False) -> Tensor: ...
        def any(self, axis: Axis = None, keepdims: bool = False) -> Tensor: ...
        def take(self, indices: Any, axis: int | None = None) -> Tensor: ...
        def matmul(self, other: Operand) -> Tensor: ...
        def reshape(self, *shape: Any) -> Tensor: ...
        def view(self, *shape: Any) -> Tensor: ...
        def permute(self, *dims: Any) -> Tensor: ...
        def permute_dims(self, axes: Sequence[int]) -> Tensor: ...
        def transpose(self, axes: Sequence[int] | None = None) -> Tensor: ...
        def broadcast_to(self, shape: Sequence[int]) -> Tensor: ...
        def expand_dims(self, axis: int = 0) -> Tensor: ...
        def squeeze(self, axis: int | tuple[int, ...] | None = None) -> Tensor: ...
        def flip(self, axis: int | tuple[int, ...] | None = None) -> Tensor: ...


def _check_float(t: Tensor, who: str) -> None:
    xp = t._backend.xp
    if not xp.isdtype(t.data.dtype, "real floating"):
        raise RuntimeError(
            f"{who}: only floating-point tensors can require grad, got dtype "
            f"{t._backend.dtype_name(t.data.dtype)} (shape {t.shape}); convert it first, "
            f"e.g. minitorch.tensor(data, dtype='float32', requires_grad=True)"
        )


from . import autograd as _autograd  # noqa: E402

_autograd._Tensor = Tensor
