"""Shape ops: reshape, permute_dims/transpose, broadcast_to, expand_dims, squeeze,
flip, concat/cat, stack, and moving between backends."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..backend import BACKENDS, Backend, on_device, resolve, shape_arg
from ..errors import OpError
from ..tensor import Tensor
from ._registry import Facts, InputError, Sample, defop, missing_parameters, tensor_method
from .elementwise import astype
from .reduction import normalize_axes


def _reshape(xp: Any, x: Any, shape: Sequence[int]) -> tuple[Any, tuple[Any, ...]]:
    """The same elements in a new shape (one entry may be -1)."""
    if any(isinstance(s, bool) or not isinstance(s, int | np.integer) for s in shape):
        raise OpError(f"reshape: the new shape must be ints, got {tuple(shape)!r}")
    shape = tuple(int(s) for s in shape)
    known = math.prod(s for s in shape if s != -1)
    total = math.prod(x.shape)
    if (
        shape.count(-1) > 1
        or (-1 not in shape and known != total)
        or (-1 in shape and (known == 0 or total % known))
    ):
        raise OpError(
            f"reshape: cannot reshape a tensor of shape {tuple(x.shape)} ({total} elements) "
            f"into {shape}; the new shape must hold as many elements (one entry may be -1, "
            f"where the others are not 0)"
        )
    return xp.reshape(x, shape), (tuple(x.shape),)


def _reshape_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], **params: Any
) -> tuple[Any]:
    (src,) = saved
    return (xp.reshape(g, src),)


reshape = defop(
    "reshape",
    _reshape,
    _reshape_vjp,
    facts=Facts(
        ref=lambda torch, x, shape: torch.reshape(x, shape),
        samples=(
            Sample(((3, 4),), {"shape": (2, 6)}),
            Sample(((2, 3, 2),), {"shape": (-1,)}),
            Sample(((),), {"shape": (1, 1)}),
            Sample(((2, 0, 3),), {"shape": (0, 6)}, name="zero-size"),
            Sample(((3, 0),), {"shape": (5, -1, 2)}, name="zero-size, -1"),
        ),
        formula="reshape(g, x.shape)",
    ),
)


def _given(who: str, name: str, sizes: tuple[Any, ...]) -> tuple[Any, ...]:
    """The ``*sizes`` of a method such as ``x.reshape(2, 3)`` as one tuple, or the
    registry's error for a missing parameter where none came (``x.reshape()`` was the
    0-d shape, as PyTorch refuses it too); ``x.reshape(())`` is the 0-d shape."""
    if not sizes:
        raise missing_parameters(who, [name])
    return shape_arg(sizes)


@tensor_method("reshape")
def _reshape_method(self: Tensor, *shape: Any) -> Tensor:
    """``x.reshape(2, 3)`` or ``x.reshape((2, 3))``."""
    out: Tensor = reshape(self, _given("reshape", "shape", shape))
    return out


@tensor_method("view")
def _view_method(self: Tensor, *shape: Any) -> Tensor:
    """``x.view(2, -1)``: PyTorch's spelling of ``reshape`` (always a differentiable copy
    or view; never shares writes, as in-place ops rebind ``.data``)."""
    out: Tensor = reshape(self, _given("view", "shape", shape))
    return out


def _permute_dims(xp: Any, x: Any, axes: Sequence[int]) -> tuple[Any, tuple[Any, ...]]:
    """Reorder the axes: output axis ``i`` is input axis ``axes[i]``."""
    n = x.ndim
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, int):
            raise OpError(f"permute_dims: an axis must be an int, got {a!r} in {tuple(axes)}")
        if not -n <= a < n:
            raise OpError(
                f"permute_dims: axes {tuple(axes)} are out of range for the {n} axes of "
                f"{tuple(x.shape)} (each must be in [{-n}, {n}))"
            )
    axes = tuple(int(a) % n for a in axes)
    if sorted(axes) != list(range(n)):
        raise OpError(
            f"permute_dims: {axes} is not a permutation of the {x.ndim} axes of {tuple(x.shape)}"
        )
    return xp.permute_dims(x, axes), (axes,)


def _permute_dims_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], axes: Any = None
) -> tuple[Any]:
    (perm,) = saved
    inverse = [0] * len(perm)
    for i, a in enumerate(perm):
        inverse[a] = i
    return (xp.permute_dims(g, tuple(inverse)),)


permute_dims = defop(
    "permute_dims",
    _permute_dims,
    _permute_dims_vjp,
    method=True,
    facts=Facts(
        ref=lambda torch, x, axes: torch.permute(x, axes),
        samples=(Sample(((2, 3, 4),), {"axes": (2, 0, 1)}), Sample(((3, 4),), {"axes": (1, 0)})),
        formula="permute_dims(g, inverse(axes))",
    ),
)


@tensor_method("permute")
def _permute_method(self: Tensor, *dims: Any) -> Tensor:
    """``x.permute(2, 0, 1)`` (PyTorch spelling of ``permute_dims``)."""
    out: Tensor = permute_dims(self, _given("permute", "dims", dims))
    return out


def _transpose(x: Any, axes: Sequence[int] | None = None) -> Any:
    """Reverse the axes, or permute them by ``axes`` (NumPy's ``transpose``)."""
    if axes is None:
        axes = tuple(range(x.ndim - 1, -1, -1))
    return permute_dims(x, tuple(axes))


transpose = defop(
    "transpose",
    compose=_transpose,
    method=True,
    facts=Facts(
        ref=lambda torch, x, axes=None: x.permute(
            *(axes if axes is not None else range(x.ndim - 1, -1, -1))
        ),
        samples=(Sample(((2, 3, 4),)), Sample(((2, 3, 4),), {"axes": (1, 0, 2)})),
        formula="composed: permute_dims",
    ),
)


def _matrix_transpose(x: Any) -> Any:
    """Swap the last two axes (``x.mT``)."""
    if x.ndim < 2:
        raise OpError(f"matrix_transpose: needs at least 2 dimensions, got shape {tuple(x.shape)}")
    axes = (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2)
    return permute_dims(x, axes)


matrix_transpose = defop(
    "matrix_transpose",
    compose=_matrix_transpose,
    facts=Facts(
        ref=lambda torch, x: torch.transpose(x, -1, -2),
        samples=(Sample(((3, 4),)), Sample(((2, 3, 4),))),
        formula="composed: permute_dims",
    ),
)


@tensor_method("T", as_property=True)
def _t_property(self: Tensor) -> Tensor:
    """All axes reversed (differentiable)."""
    out: Tensor = permute_dims(self, tuple(range(self.ndim - 1, -1, -1)))
    return out


@tensor_method("mT", as_property=True)
def _mt_property(self: Tensor) -> Tensor:
    """The last two axes swapped (differentiable)."""
    out: Tensor = matrix_transpose(self)
    return out


def _broadcast_to(xp: Any, x: Any, shape: Sequence[int]) -> tuple[Any, tuple[Any, ...]]:
    """Broadcast to ``shape``; the engine sums the gradient back down."""
    try:
        return xp.broadcast_to(x, tuple(shape)), ()
    except Exception as exc:  # the engine names the input's shape, dtype and backend
        raise InputError(
            f"cannot broadcast shape {tuple(x.shape)} to {tuple(shape)}: aligned from the "
            f"right, each axis must have size 1 or the target's size (a zero-size axis "
            f"broadcasts only to 0)"
        ) from exc


def _identity_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], **params: Any
) -> tuple[Any]:
    return (g,)


broadcast_to = defop(
    "broadcast_to",
    _broadcast_to,
    _identity_vjp,
    method=True,
    facts=Facts(
        ref=lambda torch, x, shape: torch.broadcast_to(x, shape),
        samples=(
            Sample(((3, 1),), {"shape": (2, 3, 4)}),
            Sample(((),), {"shape": (3,)}),
            Sample(((3, 1),), {"shape": (2, 3, 0)}, name="to zero-size: zero gradient"),
            Sample(((0, 1),), {"shape": (2, 0, 4)}, name="zero-size"),
        ),
        formula="sum g down to x.shape",
    ),
)


def _expand_dims(xp: Any, x: Any, axis: int = 0) -> tuple[Any, tuple[Any, ...]]:
    """Insert a size-1 axis at ``axis``."""
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise OpError(f"expand_dims: axis must be an int, got {axis!r}")
    return xp.expand_dims(x, axis=axis), (tuple(x.shape),)


expand_dims = defop(
    "expand_dims",
    _expand_dims,
    _reshape_vjp,
    method=True,
    facts=Facts(
        ref=lambda torch, x, axis=0: torch.unsqueeze(x, axis),
        samples=(Sample(((3, 4),), {"axis": 1}), Sample(((3, 4),), {"axis": -1})),
        formula="reshape(g, x.shape)",
    ),
)


def _squeeze(
    xp: Any, x: Any, axis: int | tuple[int, ...] | None = None
) -> tuple[Any, tuple[Any, ...]]:
    """Remove size-1 axes (all of them, or those in ``axis``)."""
    if axis is None:
        axes = tuple(i for i, n in enumerate(x.shape) if n == 1)
    else:
        axes = normalize_axes(axis, x.ndim, "squeeze")
        bad = [a for a in axes if x.shape[a] != 1]
        if bad:
            raise OpError(f"squeeze: axis {bad[0]} of shape {tuple(x.shape)} does not have size 1")
    return xp.squeeze(x, axis=axes) if axes else x, (tuple(x.shape),)


squeeze = defop(
    "squeeze",
    _squeeze,
    _reshape_vjp,
    method=True,
    facts=Facts(
        ref=lambda torch, x, axis=None: (
            torch.squeeze(x) if axis is None else torch.squeeze(x, axis)
        ),
        samples=(Sample(((3, 1, 4, 1),)), Sample(((3, 1, 4),), {"axis": 1})),
        formula="reshape(g, x.shape)",
    ),
)


def _flip(
    xp: Any, x: Any, axis: int | tuple[int, ...] | None = None
) -> tuple[Any, tuple[Any, ...]]:
    """Reverse the order of elements along ``axis`` (all axes by default)."""
    axes = normalize_axes(axis, x.ndim, "flip")
    return xp.flip(x, axis=axes), (axes,)


def _flip_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], axis: Any = None
) -> tuple[Any]:
    (axes,) = saved
    return (xp.flip(g, axis=axes),)


flip = defop(
    "flip",
    _flip,
    _flip_vjp,
    method=True,
    facts=Facts(
        ref=lambda torch, x, axis=None: torch.flip(
            x,
            tuple(range(x.ndim))
            if axis is None
            else (axis if isinstance(axis, tuple) else (axis,)),
        ),
        samples=(Sample(((3, 4),), {"axis": 1}), Sample(((2, 3),))),
        formula="flip(g)",
    ),
)


def _concat(xp: Any, *xs: Any, axis: int = 0) -> tuple[Any, tuple[Any, ...]]:
    """Join tensors along an existing axis."""
    return xp.concat(list(xs), axis=axis), (tuple(x.shape[axis] for x in xs),)


def _concat_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], axis: int = 0
) -> tuple[Any, ...]:
    (sizes,) = saved
    ax = axis % g.ndim
    out = []
    start = 0
    for n, need in zip(sizes, needs, strict=True):
        key = (*(slice(None),) * ax, slice(start, start + n), ...)
        out.append(g[key] if need else None)
        start += n
    return tuple(out)


concat = defop(
    "concat",
    _concat,
    _concat_vjp,
    aliases=("cat",),
    nin=-1,
    promote="operands",  # one dtype by the promotion table (NumPy's and strict's differ)
    facts=Facts(
        ref=lambda torch, *xs, axis=0: torch.cat(xs, dim=axis),
        samples=(
            Sample(((2, 3), (4, 3)), {"axis": 0}),
            Sample(((2, 3), (2, 1), (2, 2)), {"axis": -1}),
            Sample(((2, 3), (0, 3), (1, 3)), {"axis": 0}, name="an empty part"),
        ),
        formula="slices of g",
    ),
)


def _stack(xp: Any, *xs: Any, axis: int = 0) -> tuple[Any, tuple[Any, ...]]:
    """Join tensors of one shape along a new axis."""
    return xp.stack(list(xs), axis=axis), ()


def _stack_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], axis: int = 0
) -> tuple[Any, ...]:
    ax = axis % g.ndim
    return tuple(
        g[(*(slice(None),) * ax, i, ...)] if need else None for i, need in enumerate(needs)
    )


stack = defop(
    "stack",
    _stack,
    _stack_vjp,
    nin=-1,
    promote="operands",  # one dtype by the promotion table (NumPy's and strict's differ)
    facts=Facts(
        ref=lambda torch, *xs, axis=0: torch.stack(xs, dim=axis),
        samples=(
            Sample(((2, 3), (2, 3)), {"axis": 0}),
            Sample(((2, 3), (2, 3), (2, 3)), {"axis": -1}),
        ),
        formula="g[..., i, ...]",
    ),
)


def _move(xp: Any, x: Any, backend: Any = None, source: Any = None) -> tuple[Any, tuple[Any, ...]]:
    """Move to another backend (or device) through host NumPy; the gradient moves back.

    ``backend`` is a :class:`~minitorch.backend.Backend` (its device is the destination),
    a backend's name (``"numpy"``: its default device) or a :class:`MoveTo` (a
    destination relative to the input's backend); ``source`` is the input's backend (by
    default, the one it has). ``x.to(...)`` is the usual way to call it.
    """
    # a copy on the host: the moved tensor never shares memory with the source (torch's
    # .numpy() and NumPy's asarray would), so updating one cannot change the other
    host = np.array(source.to_numpy(x), copy=True)
    return backend.from_numpy(host, None, backend.device), (x.device,)


def _move_vjp(
    xp: Any,
    g: Any,
    saved: tuple[Any, ...],
    needs: tuple[bool, ...],
    backend: Any = None,
    source: Any = None,
) -> tuple[Any]:
    (device,) = saved
    if hasattr(g, "_backend"):  # create_graph: g is a Tensor, and moving it back is an op
        if str(source.device) != str(device):
            source = resolve(source.name, source.dtype, device)
        return (move(g, backend=source, source=backend),)
    return (source.from_numpy(backend.to_numpy(g), None, device),)


@dataclasses.dataclass(frozen=True)
class MoveTo:
    """A destination of :func:`move` chosen from the backend of the tensor moved: how a
    catalog sample says "another device of the backend under test" on every backend.

    Attributes
    ----------
    label : str
        What it is, for sample labels and graph pictures.
    pick : callable
        ``pick(source_backend) -> Backend``.
    """

    label: str
    pick: Callable[[Backend], Backend]

    def __repr__(self) -> str:
        return self.label


#: the default device of the tensor's own backend: another device where the tensor is
#: not on it (array-api-strict's device1, a GPU), else a copy on the same device
DEFAULT_DEVICE = MoveTo("its backend's default device", lambda be: resolve(be.name, be.dtype, None))


def _prepare_move(tensors: Sequence[Any], params: dict[str, Any]) -> dict[str, Any]:
    """``backend`` and ``source`` as Backends: a name or a :class:`MoveTo` resolved, and
    the source the input's backend where it is not given."""
    x = tensors[0]
    source = params["source"]
    if source is None:
        if not isinstance(x, Tensor):
            raise OpError(f"move: moves a Tensor, got {type(x).__name__}")
        source = x._backend
    dst = params["backend"]
    if isinstance(dst, str):
        dst = resolve(dst)
    elif isinstance(dst, MoveTo):
        dst = dst.pick(source)
    if not isinstance(dst, Backend):
        raise OpError(
            f"move: backend must be a Backend, a backend name ({', '.join(BACKENDS)}) or a "
            f"MoveTo, got {type(dst).__name__}; or call x.to(backend, device=...)"
        )
    return {"backend": dst, "source": source}


move = defop(
    "move",
    _move,
    _move_vjp,
    moves=True,
    prepare=_prepare_move,
    facts=Facts(
        # moving copies the values; the gradient comes back as it is
        ref=lambda torch, x, backend=None, source=None: x.clone(),
        samples=(
            Sample(((3, 4),), {"backend": "numpy"}, name="(3, 4) to numpy"),
            Sample(((2, 3),), {"backend": DEFAULT_DEVICE}, name="(2, 3) to the default device"),
        ),
        formula="move g back",
    ),
)


@tensor_method("to")
def _to(
    self: Tensor, backend: str | Backend | None = None, *, device: Any = None, dtype: Any = None
) -> Tensor:
    """Move to another backend, device and/or dtype; differentiable. A move to another
    backend or device always copies; with nothing to change, the tensor itself.

    ``backend`` may also be a device of this tensor's backend (``x.to("cpu")`` on the
    NumPy or torch backend, ``x.to("cuda:0")`` on torch or CuPy), as in PyTorch.

    Examples
    --------
    >>> import minitorch
    >>> x = minitorch.tensor([1.0, 2.0])
    >>> x.to("numpy", dtype="float64").dtype
    dtype('float64')
    >>> x.to(dtype="float64").dtype, x.to("cpu") is x
    (dtype('float64'), True)
    """
    src = self._backend
    if isinstance(backend, str) and backend not in BACKENDS:
        if device is not None:
            raise ValueError(f"to({backend!r}, device={device!r}): {backend!r} is not a backend")
        try:
            src.parse_device(backend)
        except Exception as exc:
            raise ValueError(
                f"to({backend!r}): not a backend ({', '.join(BACKENDS)}) nor a device of "
                f"this tensor's backend {src.name!r}; write x.to('torch', device='cuda') "
                f"or x.to(device=...)"
            ) from exc
        backend, device = None, backend
    if isinstance(backend, Backend):
        dst = on_device(backend, device, "to")
    else:
        # a move keeps the TF32 choice of the tensor's backend; a device the backend
        # lacks is named with the devices it has
        name = src.name if backend is None else backend
        dst = on_device(resolve(name, None, None, src.tf32), device, "to")
    out = self
    if dst.name != src.name or (device is not None and str(dst.device) != str(self.device)):
        out = move(self, backend=dst, source=src)
    if dtype is not None:
        dt = dst.resolve_dtype(dtype, "to")
        if dt != out.data.dtype:
            out = astype(out, dt)
    return out
