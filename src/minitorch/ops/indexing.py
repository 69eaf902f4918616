"""Indexing: getitem (NumPy semantics on every backend), take, embedding, setitem.

Backends disagree on indexing: torch refuses negative slice steps, array-api-strict
refuses integer arrays on some axes of an N-d array and Python lists. minitorch gives
every backend NumPy's rules. *Basic* keys (ints, slices with positive steps, None,
Ellipsis) run natively. Any other key is resolved on the host: the flat source
position of every output element is ``arange(n).reshape(shape)[key]``, and the forward
is one standard ``take`` of those positions. Backward scatter-adds ``g`` into the
positions, so repeated indices accumulate. Integer Tensors side by side, with slices,
ints or ``...`` around them (``x[idx]``, ``x[:, rows, cols]``, ``x[idx, 1:]``), skip the
host: the rest of the key indexes first, then :func:`gather_axes` takes them on the
device.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .._grad_mode import is_grad_enabled
from ..backend import to_host
from ..backend._fallback import index_array
from ..errors import OpError
from ..tensor import Tensor
from ._registry import Facts, InputError, Sample, defop, tensor_method
from .elementwise import fill_number, where

_BASIC = (int, slice, type(None), type(Ellipsis))


def _is_basic(key: tuple[Any, ...]) -> bool:
    for k in key:
        if isinstance(k, bool) or not isinstance(k, _BASIC):
            return False
        if isinstance(k, slice) and k.step is not None and k.step < 0:
            return False
    return True


def _host_index(k: Any) -> Any:
    """A key element as something NumPy can index with."""
    if isinstance(k, _BASIC) and not isinstance(k, bool):
        return k
    if isinstance(k, Tensor):
        return k._backend.to_numpy(k.data)
    host = to_host(k)
    if isinstance(k, list) and host.size == 0 and host.dtype.kind == "f":
        # an empty list selects nothing, as NumPy reads it (not a float index)
        host = host.astype(np.int64)
    return host


def prepare_key(key: Any, op: str = "getitem") -> tuple[tuple[Any, ...], bool]:
    """Normalise a user's key: a tuple, and whether it is basic (native everywhere)."""
    if not isinstance(key, tuple):
        key = (key,)
    if _is_basic(key):
        # strict needs an explicit trailing ... when fewer axes than ndim are indexed
        if not any(k is Ellipsis for k in key):
            key = (*key, Ellipsis)
        return key, True
    for k in key:
        if isinstance(k, float | complex | str | bytes):
            raise IndexOpError(
                f"{op}: {k!r} ({type(k).__name__}) is no index: indices are ints, slices, "
                f"..., None, and integer or boolean arrays or Tensors"
                + (f" (int({k!r}) for the position)" if isinstance(k, float) else "")
            )
    host = tuple(_host_index(k) for k in key)
    for k in host:
        if isinstance(k, np.ndarray) and k.dtype.kind not in "iub":
            raise IndexOpError(
                f"{op}: index arrays must be integer or boolean, got dtype {k.dtype}; "
                f"convert it first (idx.astype('int64'))"
            )
    return host, False


def clamp_slices(key: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[Any, ...]:
    """A basic key with the bounds of each slice clamped to its axis, as NumPy reads
    them (``x[1:3]`` of an axis of size 0 selects nothing); ints, None and ... stay.

    The Array API leaves slice bounds beyond the axis unspecified and array-api-strict
    refuses them; a slice that selects nothing becomes ``0:0``.
    """
    indexed = sum(1 for k in key if k is not None and k is not Ellipsis)
    out: list[Any] = []
    axis = 0
    for k in key:
        if k is Ellipsis:
            axis += len(shape) - indexed
        elif k is not None:
            if isinstance(k, slice) and axis < len(shape):
                n = shape[axis]
                start, stop, _ = k.indices(n)
                if stop <= start:
                    k = slice(0, 0)
                else:
                    k = slice(start or None, None if stop == n else stop, k.step)
            axis += 1
        out.append(k)
    return tuple(out)


class IndexOpError(OpError, IndexError):
    """An index that does not fit the tensor: an OpError naming the op and the shape, and
    an IndexError, as the Array API standard asks (``x[mask]`` of a wrong shape)."""


def flat_positions(shape: tuple[int, ...], key: tuple[Any, ...], op: str = "getitem") -> np.ndarray:
    """For each element of ``x[key]``, its flat position in ``x`` (NumPy semantics).

    The position is ``sum(coordinate_d * stride_d)``; each axis's coordinates are
    indexed out of a broadcast (zero-memory) view, so only the result is allocated:
    three rows of a 3000x3000 tensor cost three rows, not a grid of the whole tensor.
    """
    try:
        if not shape:
            zero: np.ndarray = np.zeros((), dtype=np.int64)[key]
            return zero
        pos: np.ndarray | None = None
        stride = 1
        for d in reversed(range(len(shape))):
            axis = np.arange(shape[d], dtype=np.int64).reshape(
                tuple(n if i == d else 1 for i, n in enumerate(shape))
            )
            term = np.broadcast_to(axis, shape)[key] * stride
            pos = term if pos is None else pos + term
            stride *= shape[d]
        assert pos is not None
        return pos
    except IndexError as exc:
        raise IndexOpError(
            f"{op}: index {key!r} is invalid for a tensor of shape {shape}: {exc}"
        ) from exc


def check_ints(key: tuple[Any, ...], shape: Any, op: str) -> None:
    """Refuse an int of a basic key beyond its axis, as NumPy and PyTorch do, before
    any library sees it: JAX clamps it (``x[5]`` of 3 elements read the last one) and
    drops the assignment (``x[5] = 1.0`` did nothing), silently."""
    if shape is None:
        return
    axis = 0
    for k in key:
        if k is Ellipsis:
            axis += len(shape) - sum(1 for k in key if k is not None and k is not Ellipsis)
        elif k is not None:
            if type(k) is int and axis < len(shape) and not -shape[axis] <= k < shape[axis]:
                raise IndexOpError(
                    f"{op}: index {k} is out of range for axis {axis} of size {shape[axis]} "
                    f"(a tensor of shape {tuple(shape)}); valid: {-shape[axis]} to "
                    f"{shape[axis] - 1}"
                )
            axis += 1


def _prepare_getitem(tensors: Any, params: dict[str, Any]) -> dict[str, Any]:
    key, basic = prepare_key(params["key"])
    if basic:
        check_ints(key, getattr(tensors[0], "shape", None), "getitem")
    return {"key": key, "basic": basic}


def _device_positions(xp: Any, x: Any, key: Any, op: str) -> tuple[Any, tuple[int, ...]]:
    """For a key that is not basic (resolved on the host): the flat position in ``x`` of
    every element of ``x[key]``, as a 1-D array on ``x``'s device, and ``x[key]``'s
    shape."""
    pos = flat_positions(tuple(x.shape), key, op)
    return xp.asarray(pos.reshape(-1), device=x.device), pos.shape


def _getitem(xp: Any, x: Any, key: Any = None, basic: bool = True) -> tuple[Any, tuple[Any, ...]]:
    """``x[key]`` with NumPy's rules on every backend: ints, slices (negative steps
    too), None, Ellipsis, integer arrays on any axis, boolean masks."""
    shape = tuple(x.shape)
    if basic:
        try:
            return x[key], (shape, key, None)
        except IndexError:
            # array-api-strict refuses slice bounds beyond the axis (x[1:3] of an empty
            # axis), which NumPy clamps: clamp them (the backward uses this key too)
            key = clamp_slices(key, shape)
        try:
            return x[key], (shape, key, None)
        except IndexError as exc:
            raise IndexOpError(
                f"getitem: index [{_key_text(key)}] is out of range for a tensor of shape "
                f"{shape}: {exc}"
            ) from exc
    idx, selected = _device_positions(xp, x, key, "getitem")
    out = xp.reshape(xp.take(xp.reshape(x, (-1,)), idx, axis=0), selected)
    return out, (shape, None, idx)


def _getitem_vjp(
    xp: Any,
    g: Any,
    saved: tuple[Any, ...],
    needs: tuple[bool, ...],
    key: Any = None,
    basic: bool = True,
) -> tuple[Any]:
    shape, bkey, idx = saved
    if idx is None:  # a basic key selects each element at most once: put g back there
        if None in bkey:  # its new axes are g's axes of size 1 (no setitem key has None)
            bkey, new = _without_new_axes(bkey, len(shape))
            g = xp.reshape(g, tuple(n for i, n in enumerate(g.shape) if i not in new))
        return (xp.zeros_with(shape, bkey, g),)
    flat = xp.scatter_add(math.prod(shape), idx, xp.reshape(g, (-1,)))
    return (xp.reshape(flat, shape),)


def _without_new_axes(key: tuple[Any, ...], ndim: int) -> tuple[tuple[Any, ...], set[int]]:
    """A basic key without its ``None`` entries, and the axes of ``x[key]`` they made."""
    indexed = sum(1 for k in key if k is not None and k is not Ellipsis)
    new, axis = set(), 0
    for k in key:
        if k is None:
            new.add(axis)
        if k is Ellipsis:
            axis += ndim - indexed
        elif type(k) is not int:
            axis += 1
    return tuple(k for k in key if k is not None), new


getitem = defop(
    "getitem",
    _getitem,
    _getitem_vjp,
    prepare=_prepare_getitem,
    facts=Facts(
        ref=lambda torch, x, key=None, basic=True: x.reshape(-1)[
            torch.as_tensor(flat_positions(tuple(x.shape), key).copy())
        ],
        samples=(
            Sample(((4, 5),), {"key": (slice(1, 3), 2)}),
            Sample(((4, 5),), {"key": (slice(None, None, -2), None, Ellipsis)}),
            Sample(((4, 5),), {"key": (np.array([0, 2, 2, 3]),)}),
            Sample(((4, 5),), {"key": (slice(None), np.array([[1, 1], [4, 0]]))}),
            Sample(((3, 4),), {"key": (np.array([[True, False, True, True]] * 3),)}),
            Sample(((3, 4),), {"key": (np.zeros((3, 4), bool),)}, name="a mask of no element"),
            Sample(((4, 5),), {"key": (slice(2, 2),)}, name="an empty slice"),
            Sample(((4, 5),), {"key": (slice(1, 3), np.zeros(0, np.int64))}, name="no index"),
        ),
        formula="scatter-add g at the indexed positions",
    ),
)


#: how the errors of x[idx] with integer Tensors name the op
_GATHER = "gather_axes (x[...] with integer Tensors)"


def _gather_axes(xp: Any, *arrays: Any, axis: int = 0) -> tuple[Any, tuple[Any, ...]]:
    """``x[..., i0, i1, ...]``: integer index arrays on the consecutive axes from
    ``axis`` on, by NumPy's rules (they broadcast together and their shape replaces the
    axes they index; a negative index counts from the end). One ``take`` on the device,
    of ``x`` viewed as ``(prod(axes before), prod(indexed axes), *axes after)``. Every
    index is checked with one host read (a GPU sync; PyTorch asserts on the device);
    the index itself stays where it is (getitem copies it to the host).

    ``arrays``: ``x`` and then the index arrays, one for each axis from ``axis`` on."""
    x, *indices = arrays
    blocks, flat, selected = _index_rows(xp, tuple(x.shape), indices, axis, _GATHER)
    out = xp.take(_reshaped(xp, x, blocks), flat, axis=1)
    return _reshaped(xp, out, selected), (tuple(x.shape), blocks, flat)


def _gather_axes_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], axis: int = 0
) -> tuple[Any, ...]:
    shape, (p, n, *rest), flat = saved
    # the rows of x viewed as (p * n, *rest) that the gather took, in g's order
    pos = _row_positions(xp, flat, p, n)
    summed = xp.scatter_add(p * n, pos, _reshaped(xp, g, (pos.shape[0], *rest)))
    return (_reshaped(xp, summed, shape), *(None,) * (len(needs) - 1))


def _gather_rows(rng: Any) -> tuple[Any, ...]:
    return rng.uniform(-2, 2, (5, 3)), np.array([0, 4, 4, -1, 2])


def _gather_two_axes(rng: Any) -> tuple[Any, ...]:
    """Two index arrays that broadcast ((2, 2) with (2,)), negative ones, a trailing axis."""
    return rng.uniform(-2, 2, (4, 5, 2)), np.array([[0, 3], [-4, 1]]), np.array([1, -1])


def _gather_every_axis(rng: Any) -> tuple[Any, ...]:
    return rng.uniform(-2, 2, (3, 4)), np.array([2, 0, 2]), np.array([[3], [-4]])


def _gather_middle(rng: Any) -> tuple[Any, ...]:
    """x[:, idx, :] with a 2-d index that repeats a row."""
    return rng.uniform(-2, 2, (2, 5, 3)), np.array([[4, 0], [-1, 2]])


def _gather_nothing(rng: Any) -> tuple[Any, ...]:
    """No index: an empty result, a zero gradient."""
    return rng.uniform(-2, 2, (4, 3)), np.zeros((2, 0), np.int64)


def _gather_ref(torch: Any, x: Any, *idx: Any, axis: int = 0) -> Any:
    return x[(slice(None),) * axis + tuple(idx)]


gather_axes = defop(
    "gather_axes",
    _gather_axes,
    _gather_axes_vjp,
    nin=-1,
    public="x[idx]",
    facts=Facts(
        ref=_gather_ref,
        samples=(
            Sample(make=_gather_rows, name="rows"),
            Sample(make=_gather_two_axes, name="two axes that broadcast"),
            Sample(make=_gather_every_axis, name="every axis"),
            Sample(make=_gather_middle, params={"axis": 1}, name="a middle axis"),
            Sample(make=_gather_two_axes, params={"axis": 1}, name="the last two axes"),
            Sample(make=_gather_nothing, params={"axis": 1}, name="no index"),
        ),
        grad_inputs=(0,),
        formula="scatter-add g's rows at the flat positions",
    ),
)


def _same_place(x: Tensor, t: Tensor) -> bool:
    """Whether ``t`` is on ``x``'s backend and device (a key the device can use)."""
    return t._backend.name == x._backend.name and t.device == x.device


#: x[key] on the device: the basic part of the key first (None: nothing to do), then
#: the index Tensors and the first axis they index in what that left
_Gather = tuple[tuple[Any, ...] | None, tuple[Tensor, ...], int]


def _index_tensors(x: Tensor, key: Any) -> _Gather | None:
    """How ``x[key]`` gathers on the device, where ``key`` has integer Tensors (of
    ``x``'s backend and device) on consecutive axes and otherwise only slices, ints and
    one ``...``: the slices and ints index first (natively: a view), then
    :func:`gather_axes` takes the Tensors, leaving the index on the device. This is
    NumPy's result wherever it puts the Tensors' axes where they stand (the Tensors and
    ints side by side) or first (only ints before the Tensors). Any other key: None
    (getitem's host path)."""
    if isinstance(key, Tensor):
        key = (key,)
    elif type(key) is not tuple or Tensor not in map(type, key):
        return None  # the usual key (ints, slices) leaves here at once
    ellipses = sum(1 for k in key if k is Ellipsis)
    if ellipses > 1 or len(key) - ellipses > x.ndim:
        return None
    be = x._backend
    first = last = -1
    ints: list[int] = []
    whole = True  # every other entry is : or ...
    for i, k in enumerate(key):
        if isinstance(k, Tensor):
            if not (_same_place(x, k) and be.xp.isdtype(k.data.dtype, "integral")):
                return None
            if first < 0:
                first = i
            elif last != i - 1:
                return None  # index arrays apart: NumPy puts their axes first
            last = i
        elif type(k) is int:
            ints.append(i)
            whole = False
        elif type(k) is slice:
            whole = whole and k == slice(None)
        elif k is not Ellipsis:
            return None  # None, a bool, a list, an array: NumPy's rules on the host
    # NumPy keeps the Tensors' axes where they stand when the Tensors and ints form one
    # run; else it puts them first, as here only where nothing but ints comes before
    group = sorted([*ints, *range(first, last + 1)])
    if group[-1] - group[0] != len(group) - 1 and any(type(k) is not int for k in key[:first]):
        return None
    axes = x.ndim - (len(key) - 1)  # of the ...
    axis = sum(axes if k is Ellipsis else type(k) is not int for k in key[:first])
    basic = None if whole else tuple(slice(None) if isinstance(k, Tensor) else k for k in key)
    return basic, tuple(key[first : last + 1]), axis


@tensor_method("__getitem__")
def _tensor_getitem(self: Tensor, key: Any) -> Tensor:
    """``x[key]``: NumPy's indexing rules on every backend (differentiable). Integer
    Tensors on consecutive axes, with slices, ints or ``...`` around them, are gathered
    on the device; any other key (a mask) is resolved on the host."""
    found = _index_tensors(self, key)
    if found is None:
        out: Tensor = getitem(self, key=key)
    else:
        basic, tensors, axis = found
        x = self if basic is None else getitem(self, key=basic)
        out = gather_axes([x, *tensors], axis=axis)
    return out


def _take(xp: Any, x: Any, indices: Any, axis: int | None = None) -> tuple[Any, tuple[Any, ...]]:
    """Select ``indices`` (1-D integers, negative allowed) along ``axis`` (of the
    flattened tensor if None), as the Array API ``take``; repeats accumulate in backward."""
    shape = tuple(x.shape)
    if axis is None:
        x = xp.reshape(x, (-1,))
        ax = 0
    else:
        if not -x.ndim <= axis < x.ndim:
            raise OpError(f"take: axis {axis} is out of range for shape {shape}")
        ax = axis % x.ndim
    n = x.shape[ax]
    idx = _check_indices(xp, indices, n, "take")
    return xp.take(x, idx, axis=ax), (shape, idx, ax, axis is None)


def _check_indices(xp: Any, indices: Any, n: int, op: str, negative: bool = True) -> Any:
    """Integer indices in range for an axis of size ``n`` (``[-n, n)``, or ``[0, n)``
    where negative indices are refused, as PyTorch's embedding and index_add do)."""
    return _check_index_arrays(xp, [(indices, n)], op, negative)[0]


def _check_index_arrays(
    xp: Any,
    pairs: list[tuple[Any, int]],
    op: str,
    negative: bool = True,
    shape: tuple[int, ...] | None = None,
    first_axis: int = 0,
) -> list[Any]:
    """Integer index arrays, each in range for its axis of size ``n`` (``[-n, n)``, or
    ``[0, n)`` where negative indices are refused), negative ones counted from the end.
    One device-to-host read (a GPU sync) checks them all; PyTorch asserts on the device.
    ``shape``: the indexed tensor's (``x[rows, cols]``, whose first array indexes axis
    ``first_axis``): the error names the axis and is an IndexError too."""
    for indices, _ in pairs:
        if not xp.isdtype(indices.dtype, "integral"):
            raise OpError(f"{op}: indices must be integers, got dtype {indices.dtype}")
    pairs = [(index_array(xp, a), n) for a, n in pairs]
    if any(math.prod(a.shape) for a, _ in pairs):
        low = [-n if negative else 0 for _, n in pairs]
        inside = [xp.all_in_range(a, lo, n) for (a, n), lo in zip(pairs, low, strict=True)]
        if not bool(inside[0] if len(inside) == 1 else xp.all(xp.stack(inside))):
            # the error's details read more
            d = next(d for d, ok in enumerate(inside) if not bool(ok))
            (a, n), lo = pairs[d], low[d]
            where = "" if shape is None else f" on axis {first_axis + d}"
            of = "" if shape is None else f" for a tensor of shape {shape}"
            error = OpError if shape is None else IndexOpError
            raise error(
                f"{op}: an index{where} is out of range [{lo}, {n}){of} "
                f"(indices go from {int(xp.min(a))} to {int(xp.max(a))})"
            )
    if not negative:
        return [a for a, _ in pairs]
    # in [-n, n): the remainder (the sign of n, the standard's) counts negatives from the
    # end, in one pass where a where() of a < 0 and a + n takes three
    return [xp.remainder(a, n) if n else a for a, n in pairs]


def _take_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], axis: int | None = None
) -> tuple[Any, None]:
    shape, idx, ax, flat = saved
    src = (math.prod(shape),) if flat else shape
    moved = xp.moveaxis(g, ax, 0) if ax else g
    rest = tuple(moved.shape[1:])
    summed = xp.scatter_add(src[ax], idx, moved)
    summed = xp.reshape(summed, (src[ax], *rest))
    if ax:
        summed = xp.moveaxis(summed, 0, ax)
    return xp.reshape(summed, shape), None


def _take_sample(rng: Any) -> tuple[Any, ...]:
    return rng.uniform(-2, 2, (4, 4)), np.array([0, 3, 3, -1, 2])


def _take_nothing(rng: Any) -> tuple[Any, ...]:
    """No indices: an empty result, a zero gradient."""
    return rng.uniform(-2, 2, (4, 4)), np.zeros(0, np.int64)


take = defop(
    "take",
    _take,
    _take_vjp,
    nin=2,
    method=True,
    facts=Facts(
        ref=lambda torch, x, i, axis=None: torch.index_select(
            x.reshape(-1) if axis is None else x,
            0 if axis is None else axis,
            i % (x.numel() if axis is None else x.shape[axis]),
        ),
        samples=(
            Sample(make=_take_sample, params={"axis": 0}),
            Sample(make=_take_sample, params={"axis": 1}),
            Sample(make=_take_sample, params={"axis": None}),
            Sample(make=_take_nothing, params={"axis": 1}, name="no indices"),
        ),
        grad_inputs=(0,),
        formula="scatter-add g at indices",
    ),
)


def _embedding(
    xp: Any, indices: Any, weight: Any, scale_grad_by_freq: bool = False
) -> tuple[Any, tuple[Any, ...]]:
    """Rows of ``weight`` (V, D) picked by integer ``indices`` of any shape, as
    ``torch.nn.functional.embedding``; repeated indices accumulate in backward.

    With ``scale_grad_by_freq=True``, the gradient rows of each index are divided by
    the number of times that index occurs in ``indices`` (the mini-batch), as PyTorch's
    option: a frequent token gets the mean of its gradient rows rather than their sum.
    The forward is the same.

    Examples
    --------
    >>> import minitorch
    >>> w = minitorch.ones(3, 2, requires_grad=True)
    >>> out = minitorch.embedding(minitorch.tensor([2, 0, 2]), w, scale_grad_by_freq=True)
    >>> out.sum().backward()
    >>> w.grad
    array([[1., 1.],
           [0., 0.],
           [1., 1.]], dtype=float32)
    """
    if not isinstance(scale_grad_by_freq, bool):
        raise InputError(
            f"embedding: scale_grad_by_freq must be True or False, got {scale_grad_by_freq!r}"
        )
    if weight.ndim != 2:
        raise OpError(
            f"embedding: weight must be 2-D (num_embeddings, dim), got shape {tuple(weight.shape)}"
        )
    v, d = weight.shape
    flat = _check_indices(xp, xp.reshape(indices, (-1,)), v, "embedding", negative=False)
    out = xp.reshape(xp.take(weight, flat, axis=0), (*indices.shape, d))
    return out, (flat, v, d)


def _embedding_vjp(
    xp: Any,
    g: Any,
    saved: tuple[Any, ...],
    needs: tuple[bool, ...],
    scale_grad_by_freq: bool = False,
) -> tuple[None, Any]:
    flat, v, d = saved
    n = flat.shape[0]
    rows = xp.reshape(g, (n, d))  # one row of g per index (not -1: (-1, 0) is ambiguous)
    if scale_grad_by_freq and n:
        # each row divided by the count of its index in the whole batch (PyTorch's)
        counts = xp.scatter_add(v, flat, xp.ones_like(flat, dtype=g.dtype))
        rows = rows / xp.reshape(xp.take(counts, flat, axis=0), (n, 1))
    return None, xp.scatter_add(v, flat, rows)


def _embedding_sample(rng: Any) -> tuple[Any, ...]:
    return np.array([[0, 2, 2], [4, 0, 1]]), rng.uniform(-2, 2, (5, 3))


def _embedding_nothing(rng: Any) -> tuple[Any, ...]:
    """No indices: an empty result, a zero gradient of the weight."""
    return np.zeros((2, 0), np.int64), rng.uniform(-2, 2, (5, 3))


embedding = defop(
    "embedding",
    _embedding,
    _embedding_vjp,
    nin=2,
    facts=Facts(
        ref=lambda torch, i, w: torch.nn.functional.embedding(i, w),
        # no scale_grad_by_freq sample: that gradient is not the derivative, which the
        # generic suites check; tests/test_transformer_ops.py holds it against PyTorch
        samples=(Sample(make=_embedding_sample), Sample(make=_embedding_nothing, name="no index")),
        grad_inputs=(1,),
        formula="scatter-add g rows at indices (/ their count: scale_grad_by_freq)",
    ),
)


def _setitem(
    xp: Any, x: Any, value: Any, key: Any = None, basic: bool = True
) -> tuple[Any, tuple[Any, ...]]:
    """A copy of ``x`` with ``x[key] = value`` (what ``Tensor.__setitem__`` records), by
    NumPy's rules on every backend. A basic key assigns natively; any other (integer
    arrays, masks, negative steps) is resolved on the host, as getitem's: the flat
    position of every element of ``x[key]``, whose elements ``put_rows`` sets (a
    repeated position: the library's choice of its values, NumPy's the last)."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        if value.dtype != x.dtype:
            value = xp.astype(value, x.dtype)
    elif type(value) in (bool, int, float):  # minitorch.setitem(x, 1.5, key=k) into int8
        value = fill_number(xp, x.dtype, value, "setitem")
    if not basic:
        idx, selected = _device_positions(xp, x, key, "setitem")
        rows = (math.prod(x.shape),)

        def refuse(exc: Exception) -> Exception:
            return _setitem_error(x, value, key, exc)

        return _put(xp, x, rows, idx, value, selected, refuse), (None, (rows, idx, selected), None)
    shape: tuple[int, ...] | None = None  # x[key]'s, where the key has None
    if None in key:  # no setitem key has None (array-api-strict): drop its new axes
        shape, key, value = _new_axes_dropped(xp, x, key, value)
    try:
        return xp.setitem(x, key, value), (key, None, shape)
    except IndexError:
        # array-api-strict refuses slice bounds beyond the axis, which NumPy clamps: clamp
        # them (the backward uses this key too)
        key = clamp_slices(key, tuple(x.shape)) if type(key) is tuple else key
    except Exception as exc:
        raise _setitem_error(x, value, key, exc) from exc
    try:
        return xp.setitem(x, key, value), (key, None, shape)
    except Exception as exc:
        raise _setitem_error(x, value, key, exc) from exc


def _new_axes_dropped(
    xp: Any, x: Any, key: tuple[Any, ...], value: Any
) -> tuple[tuple[int, ...] | None, tuple[Any, ...], Any]:
    """For ``x[key] = value`` with ``None`` in a basic key: the shape of ``x[key]``, the
    key without ``None``, and the value broadcast to that shape without the new axes
    (the same places get the same values). A key that does not fit ``x``: unchanged."""
    try:
        selected = tuple(np.broadcast_to(np.empty((), np.int8), tuple(x.shape))[key].shape)
    except IndexError:
        return None, key, value  # setitem names the key
    key, new = _without_new_axes(key, x.ndim)
    if hasattr(value, "shape"):
        try:
            value = xp.broadcast_to(value, selected)
        except (ValueError, RuntimeError, TypeError) as exc:
            raise _setitem_error(x, value, key, exc) from exc
        value = xp.reshape(value, tuple(n for i, n in enumerate(selected) if i not in new))
    return selected, key, value


def _setitem_error(x: Any, value: Any, key: Any, exc: Exception) -> InputError:
    """(The engine makes it an OpError that names the inputs' shapes, dtypes, backend.)"""
    return InputError(
        f"cannot assign a value of shape {tuple(getattr(value, 'shape', ()))} to "
        f"x[{_key_text(key)}] of shape {tuple(x.shape)}: {type(exc).__name__}: {exc}"
    )


def _key_text(key: Any) -> str:
    """A key as it is written in brackets: ``1:3, 0, ...``."""
    parts = []
    for k in key if isinstance(key, tuple) else (key,):
        if isinstance(k, slice):
            start = "" if k.start is None else k.start
            stop = "" if k.stop is None else k.stop
            parts.append(f"{start}:{stop}" + ("" if k.step is None else f":{k.step}"))
        elif k is Ellipsis:
            parts.append("...")
        elif hasattr(k, "shape"):
            parts.append(f"<array of shape {tuple(k.shape)}>")
        else:
            parts.append(repr(k))
    return ", ".join(parts)


def _setitem_vjp(
    xp: Any,
    g: Any,
    saved: tuple[Any, ...],
    needs: tuple[bool, ...],
    key: Any = None,
    basic: bool = True,
) -> tuple[Any, Any]:
    # the basic key the forward used (slices clamped, no None), or _put's; the shape of
    # x[key] where the key had None
    bkey, put, selected = saved
    if put is not None:
        return _put_vjp(xp, g, put, needs)
    gx = xp.setitem(g, bkey, 0.0) if needs[0] else None
    gv = g[bkey] if needs[1] else None
    if gv is not None and selected is not None:
        gv = xp.reshape(gv, selected)
    return gx, gv


def _torch_setitem(torch: Any, x: Any, value: Any, key: Any = None, basic: bool = True) -> Any:
    """The reference: PyTorch's ``x[key] = value`` on a copy (differentiable in both),
    through the key's flat positions (PyTorch takes no negative step)."""
    out = x.clone()
    pos = torch.as_tensor(flat_positions(tuple(x.shape), key).copy())
    if isinstance(value, torch.Tensor):
        value = value.broadcast_to(tuple(pos.shape)).reshape(-1)
    out.reshape(-1)[pos.reshape(-1)] = value
    return out


def _prepare_setitem(tensors: Any, params: dict[str, Any]) -> dict[str, Any]:
    key, basic = prepare_key(params["key"], "setitem")
    if basic:
        check_ints(key, getattr(tensors[0], "shape", None), "setitem")
    return {"key": key, "basic": basic}


setitem = defop(
    "setitem",
    _setitem,
    _setitem_vjp,
    nin=2,
    scalars=True,
    prepare=_prepare_setitem,
    facts=Facts(
        ref=_torch_setitem,
        samples=(
            Sample(((4, 5), (2, 5)), {"key": (slice(1, 3),)}),
            Sample(((4, 5), ()), {"key": (0, 1)}),
            Sample(((4, 5), (0, 5)), {"key": (slice(2, 2),)}, name="an empty slice"),
            Sample(((4, 5), (3, 5)), {"key": (np.array([3, 0, -3]),)}, name="index rows"),
            Sample(
                ((4, 5), (4, 2)),
                {"key": (slice(None, None, -1), np.array([4, 0]))},
                name="a negative step, index columns",
            ),
            Sample(((3, 4), (4,)), {"key": (np.array([True, False, True]),)}, name="a mask"),
        ),
        formula="g with zeros at key, g[key]",
    ),
)


def _mask_and_value(x: Tensor, key: Any, value: Any) -> tuple[Tensor, Any] | None:
    """For ``x[mask] = value`` with a boolean Tensor on ``x``'s backend and device that
    covers ``x``'s leading axes, and a value that is the same at every masked place (a
    number of ``x``'s kind, or a Tensor of at most the other axes): the mask, shaped to
    broadcast with ``x``, and the value as ``x``'s dtype. ``x[mask] = value`` is then
    ``where(mask, value, x)``, on the device, as PyTorch's masked_fill. Else None."""
    mask = key[0] if type(key) is tuple and len(key) == 1 else key
    if not isinstance(mask, Tensor):
        return None
    be = x._backend
    if not (
        _same_place(x, mask)
        and be.xp.isdtype(mask.data.dtype, "bool")
        and mask.shape == x.shape[: mask.ndim]
    ):
        return None
    rest = x.ndim - mask.ndim
    if isinstance(value, Tensor):
        if not _same_place(x, value) or value.ndim > rest:
            return None
        if value.data.dtype != x.data.dtype:
            value = value.astype(be.dtype_name(x.data.dtype))
    elif isinstance(value, bool):
        if not be.xp.isdtype(x.data.dtype, "bool"):
            return None
    elif isinstance(value, int):
        if not be.xp.isdtype(x.data.dtype, ("integral", "real floating")):
            return None
    elif not (isinstance(value, float) and be.xp.isdtype(x.data.dtype, "real floating")):
        return None
    return (mask.reshape((*mask.shape, *(1,) * rest)) if rest else mask), value


#: how the errors of x[idx] = v with integer Tensors name the op
_PUT = "setitem_axes (x[...] = v with integer Tensors)"


def _setitem_axes(xp: Any, *arrays: Any, axis: int = 0) -> tuple[Any, tuple[Any, ...]]:
    """A copy of ``x`` with ``x[..., i0, i1, ...] = value``: integer index arrays on the
    consecutive axes from ``axis`` on, by NumPy's rules (they broadcast together; a
    negative index counts from the end; ``value`` broadcasts to what ``x[key]`` would
    be). One ``put_rows`` on the device, of ``x`` viewed as rows: ``(prod(axes before
    and indexed), *axes after)``. Where an index repeats, which of its values lands is
    the library's choice (NumPy: the last), as in PyTorch.

    ``arrays``: ``x``, ``value`` (an array or a Python number), then the index arrays."""
    x, value, *indices = arrays
    shape = tuple(x.shape)
    (p, n, *rest), flat, selected = _index_rows(xp, shape, indices, axis, _PUT)
    rows, pos = (p * n, *rest), _row_positions(xp, flat, p, n)

    def refuse(exc: Exception) -> Exception:
        return IndexOpError(
            f"{_PUT}: a value of shape {tuple(value.shape)} does not broadcast to the shape "
            f"{selected} of x[key] (x of shape {shape})"
        )

    return _put(xp, x, rows, pos, value, selected, refuse), (rows, pos, selected)


def _setitem_axes_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], axis: int = 0
) -> tuple[Any, ...]:
    return (*_put_vjp(xp, g, saved, needs), *(None,) * (len(needs) - 2))


def _put(
    xp: Any,
    x: Any,
    rows: tuple[int, ...],
    pos: Any,
    value: Any,
    selected: tuple[int, ...],
    refuse: Callable[[Exception], Exception],
) -> Any:
    """A copy of ``x``, viewed as ``rows``, with its rows at ``pos`` set to ``value``
    (a number, or an array broadcast to ``selected``, the shape of ``x[key]``, as
    ``x``'s dtype); ``refuse(exc)`` is the error where it does not broadcast. What
    ``x[key] = value`` records, for setitem's keys resolved on the host and for
    setitem_axes."""
    if hasattr(value, "shape"):
        if value.dtype != x.dtype:
            value = xp.astype(value, x.dtype)
        if tuple(value.shape) != selected:
            try:
                value = xp.broadcast_to(value, selected)
            except (ValueError, RuntimeError, TypeError) as exc:
                raise refuse(exc) from exc
        value = _reshaped(xp, value, (pos.shape[0], *rows[1:]))
    return _reshaped(xp, xp.put_rows(_reshaped(xp, x, rows), pos, value), tuple(x.shape))


def _put_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any, Any]:
    """The gradients of :func:`_put` (``saved``: its ``rows``, ``pos`` and ``selected``):
    ``g`` with zeros at the rows set, and ``g``'s rows there for the value."""
    rows, pos, selected = saved
    g_rows = _reshaped(xp, g, rows)
    gx = _reshaped(xp, xp.put_rows(g_rows, pos, 0.0), tuple(g.shape)) if needs[0] else None
    gv = _reshaped(xp, xp.take(g_rows, pos, axis=0), selected) if needs[1] else None
    return gx, gv


def _reshaped(xp: Any, a: Any, shape: tuple[int, ...]) -> Any:
    """``a`` in ``shape``: itself where it has it (NumPy's reshape would give a view,
    which a leaf's ``.grad`` then copies)."""
    return a if tuple(a.shape) == shape else xp.reshape(a, shape)


def _broadcast_indices(indices: list[Any], op: str) -> tuple[int, ...]:
    """The shape the index arrays broadcast to, or an IndexError naming theirs."""
    if len(indices) == 1:
        return tuple(indices[0].shape)
    shapes = [tuple(i.shape) for i in indices]
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError as exc:
        raise IndexOpError(
            f"{op}: the index arrays' shapes {shapes} do not broadcast together: {exc}"
        ) from exc


def _row_positions(xp: Any, flat: Any, p: int, n: int) -> Any:
    """The rows ``p * n + flat[j]`` of a tensor viewed as ``(p * n, ...)``, for each
    of the ``p`` blocks of ``n`` rows (``flat`` itself where ``p`` is 1, or where ``n``
    is 0: then it is empty, as an index into an empty axis must be)."""
    if p == 1 or n == 0:
        return flat
    starts = xp.arange(0, p * n, n, dtype=flat.dtype, device=flat.device)
    return xp.reshape(xp.reshape(starts, (p, 1)) + flat, (p * flat.shape[0],))


_Rows = tuple[tuple[int, ...], Any, tuple[int, ...]]


def _index_rows(xp: Any, shape: tuple[int, ...], indices: list[Any], axis: int, op: str) -> _Rows:
    """For index arrays on the axes of ``shape`` from ``axis`` on: ``shape`` viewed as
    ``(p, n, *rest)`` blocks (the axes before, the indexed axes, the axes after, each
    run taken as one), the 1-D positions they pick among a block's ``n`` rows (negative
    indices counted from the end), and the shape of ``x[key]``. One host read checks
    their range; a bad count, shape or index raises an IndexError naming ``op`` and the
    axis."""
    k = len(indices)
    if not (k >= 1 and axis >= 0 and axis + k <= len(shape)):
        raise IndexOpError(f"{op}: {k} index arrays from axis {axis} for a tensor of shape {shape}")
    bshape = _broadcast_indices(indices, op)
    pre, lead, rest = shape[:axis], shape[axis : axis + k], shape[axis + k :]
    broadcast = [i if tuple(i.shape) == bshape else xp.broadcast_to(i, bshape) for i in indices]
    pairs = list(zip(broadcast, lead, strict=True))
    idx = _check_index_arrays(xp, pairs, op, shape=shape, first_axis=axis)
    blocks = (math.prod(pre), math.prod(lead), *rest)
    return blocks, _flat_rows(xp, idx, lead), (*pre, *bshape, *rest)


def _flat_rows(xp: Any, idx: list[Any], lead: tuple[int, ...]) -> Any:
    """The 1-D row positions in ``lead``'s axes taken as one (C order) of index arrays of
    one shape, each in range ``[0, n)`` for its axis."""
    flat = None
    stride = 1
    for a, n in zip(reversed(idx), reversed(lead), strict=True):
        term = xp.astype(a, xp.int64, copy=False)
        term = term * stride if stride != 1 else term
        flat = term if flat is None else flat + term
        stride *= n
    assert flat is not None
    return xp.reshape(flat, (-1,))


def _put_rows(rng: Any) -> tuple[Any, ...]:
    """Rows, one value for all (a repeated index would count its row's gradient twice
    for the value, as in PyTorch, where finite differences count it once)."""
    return rng.uniform(-2, 2, (5, 3)), rng.uniform(-2, 2, (3,)), np.array([0, 4, -2, 2])


def _put_middle(rng: Any) -> tuple[Any, ...]:
    """x[:, rows, cols] = value of the selection's shape."""
    x = rng.uniform(-2, 2, (2, 4, 5, 3))
    return x, rng.uniform(-2, 2, (2, 2, 2, 3)), np.array([[0, 3], [-2, 1]]), np.array([1, -1])


def _put_nothing(rng: Any) -> tuple[Any, ...]:
    """No index: x unchanged, a zero gradient for the value."""
    return rng.uniform(-2, 2, (4, 3)), rng.uniform(-2, 2, (3,)), np.zeros(0, np.int64)


def _torch_put(torch: Any, x: Any, value: Any, *idx: Any, axis: int = 0) -> Any:
    out = x.clone()
    out[(slice(None),) * axis + tuple(idx)] = value
    return out


setitem_axes = defop(
    "setitem_axes",
    _setitem_axes,
    _setitem_axes_vjp,
    nin=-1,
    scalars=True,
    public="x[idx] = v",
    facts=Facts(
        ref=_torch_put,
        samples=(
            Sample(make=_put_rows, name="rows"),
            Sample(make=_put_middle, params={"axis": 1}, name="two middle axes"),
            Sample(make=_put_nothing, name="no index"),
        ),
        grad_inputs=(0, 1),
        formula="g with zeros at the rows, g's rows",
    ),
)


@tensor_method("__setitem__")
def _tensor_setitem(self: Tensor, key: Any, value: Any) -> None:
    """``x[key] = value``: in place (bumps the version counter), differentiable in both.
    On the device: a boolean Tensor mask with one value for every masked place
    (``x[mask] = 0.0``: ``where``), and integer Tensors where ``x[key]`` gathers them
    (``x[idx] = v``, ``x[:, idx] = v``, ``x[idx, 0] = v``: :func:`setitem_axes`, into
    ``x[rest of the key]`` where the key has ints or partial slices, written back with
    :func:`setitem`); any other key goes through :func:`setitem`."""
    self._check_inplace("__setitem__")
    value = fill_number(self._backend.xp, self.data.dtype, value, "x[key] = value")
    if _written_in_place(self, key, value):
        return
    masked = _mask_and_value(self, key, value)
    if masked is not None:
        self._rebase(where(masked[0], masked[1], self), "__setitem__")
        return
    found = _index_tensors(self, key)
    if found is None:
        self._rebase(setitem(self, value, key=key), "__setitem__")
        return
    basic, indices, axis = found
    part = self if basic is None else getitem(self, key=basic)
    new = setitem_axes([part, value, *indices], axis=axis)
    self._rebase(new if basic is None else setitem(self, new, key=basic), "__setitem__")


def _written_in_place(x: Tensor, key: Any, value: Any) -> bool:
    """``x[key] = value`` written into ``x``'s own array by the backend's ``setitem_``
    (NumPy), where no graph is involved (``x`` is no op's result, and the value needs no
    gradient or grad mode is off) and nothing else sees the array (no graph saved it, no
    view or name holds it: its reference count says so), with the key's and the
    value's Tensors on ``x``'s backend and device. True where done (the version
    bumped); False, with nothing written, for the general path (a new array)."""
    data, write = x.data, x._backend.setitem_
    if write is None or x._node is not None or sys.getrefcount(data) > 3:
        return False  # (the references: x's slot, `data` and getrefcount's argument)
    if isinstance(value, Tensor):
        if not _same_place(x, value) or (value._requires_grad and is_grad_enabled()):
            return False
        value = value.data
    # (what else the key and value hold, the backend's setitem_ checks: it refuses a
    # list, a bool, an array of another library)
    entries = []
    for k in key if type(key) is tuple else (key,):
        if isinstance(k, Tensor):
            if not _same_place(x, k):
                return False
            k = k.data
        entries.append(k)
    if not write(data, tuple(entries) if type(key) is tuple else entries[0], value):
        return False
    x._version += 1
    return True


def _scatter_add(xp: Any, values: Any, index: Any, n: int = 0) -> tuple[Any, tuple[Any, ...]]:
    """Sum the rows of ``values`` (m, ...) into ``n`` rows at the 1-D integer ``index``;
    repeated indices accumulate. (The backward of ``take``; its own VJP is ``take``.)"""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise OpError(f"scatter_add: n must be an int >= 0, got {n!r}")
    if index.ndim != 1 or index.shape[0] != values.shape[0]:
        raise OpError(
            f"scatter_add: index must be 1-D with one entry per row of values "
            f"{tuple(values.shape)}, got shape {tuple(index.shape)}"
        )
    index = _check_indices(xp, index, n, "scatter_add", negative=False)
    return xp.scatter_add(n, index, values), (index,)


def _scatter_add_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], n: int = 0
) -> tuple[Any, None]:
    (index,) = saved
    return xp.take(g, index, axis=0), None


def _scatter_sample(rng: Any) -> tuple[Any, ...]:
    return rng.uniform(-2, 2, (5, 3)), np.array([0, 2, 2, 3, 0])


def _scatter_nothing(rng: Any) -> tuple[Any, ...]:
    """No rows to add: zeros."""
    return rng.uniform(-2, 2, (0, 2)), np.zeros(0, np.int64)


scatter_add = defop(
    "scatter_add",
    _scatter_add,
    _scatter_add_vjp,
    nin=2,
    facts=Facts(
        ref=lambda torch, v, i, n=0: torch.zeros((n, *v.shape[1:]), dtype=v.dtype).index_add(
            0, i, v
        ),
        samples=(
            Sample(make=_scatter_sample, params={"n": 4}),
            Sample(make=_scatter_nothing, params={"n": 3}, name="no rows"),
        ),
        grad_inputs=(0,),
        formula="take(g, index)",
    ),
)
