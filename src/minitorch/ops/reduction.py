"""Reductions: sum, mean, max, min, var, logsumexp (axis None / int / tuple, keepdims)."""

from __future__ import annotations

import builtins
import math
import warnings
from typing import Any

import numpy as np

from ..errors import OpError
from ._registry import Facts, Sample, defop

Axis = int | tuple[int, ...] | None

REDUCE = (
    Sample(((3, 4),)),
    Sample(((3, 4),), {"axis": 1}),
    Sample(((2, 3, 4),), {"axis": (0, 2), "keepdims": True}),
    Sample(((2, 3, 4),), {"axis": -1}),
    Sample(((),)),
)
#: a reduction over a zero-size axis (sum: 0, mean: nan, logsumexp: -inf; not a sample of
#: max and min, which refuse it as PyTorch does); the tests derive REDUCE's zero-size
#: variants (testing.zero_size_samples)
OVER_NOTHING = Sample(((3, 0),), {"axis": 1, "keepdims": True}, name="over a zero-size axis")


def normalize_axes(axis: Axis, ndim: int, op: str) -> tuple[int, ...]:
    """``axis`` as a sorted tuple of non-negative ints; a clear error if out of range.

    A 0-d tensor takes axis 0 or -1 (as PyTorch) and has nothing to reduce: ``()``.
    """
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    out = []
    for a in axes:
        if isinstance(a, bool) or not isinstance(a, int):
            raise OpError(f"{op}: an axis must be an int, got {a!r} ({type(a).__name__})")
        if not -builtins.max(ndim, 1) <= a < builtins.max(ndim, 1):
            raise OpError(f"{op}: axis {a!r} is out of range for a tensor with {ndim} dimensions")
        out.append(a % ndim if ndim else a)
    if len(set(out)) != len(out):
        raise OpError(f"{op}: repeated axis in {axis!r}")
    return tuple(sorted(out)) if ndim else ()


def expand_reduced(
    xp: Any, g: Any, shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool
) -> Any:
    """Put back the reduced axes of ``g`` as size-1 axes (if ``keepdims`` was False)."""
    if keepdims or not axes:
        return g
    return xp.reshape(g, tuple(1 if i in axes else n for i, n in enumerate(shape)))


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    """The shape of a reduction's result over ``axes``."""
    if keepdims:
        return tuple(1 if i in axes else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in axes)


def over_nothing(x: Any, axes: tuple[int, ...]) -> bool:
    """Whether a reduction of ``x`` over ``axes`` reduces no elements (a zero-size axis
    among them): one tuple lookup for a tensor that is not zero-size."""
    return 0 in x.shape and builtins.any(x.shape[a] == 0 for a in axes)


def _filled(xp: Any, x: Any, axes: tuple[int, ...], keepdims: bool, value: float) -> Any:
    """A reduction's result of ``value`` everywhere (the value of a reduction over no
    elements: nan for a mean, -inf for logsumexp), in ``x``'s dtype and device."""
    shape = reduced_shape(tuple(x.shape), axes, keepdims)
    return xp.full(shape, value, dtype=x.dtype, device=x.device)


def _sum(xp: Any, x: Any, axis: Axis = None, keepdims: bool = False) -> tuple[Any, tuple[Any, ...]]:
    """Sum over ``axis`` (all axes by default); of booleans, the count of True as int64
    (as ``torch.sum``: ``(pred == y).sum()``; the standard's sum takes numbers only)."""
    axes = normalize_axes(axis, x.ndim, "sum")
    if x.dtype == xp.bool:
        x = xp.astype(x, xp.int64)
    return xp.sum(x, axis=axes, keepdims=keepdims), (tuple(x.shape), axes)


def _sum_vjp(
    xp: Any,
    g: Any,
    saved: tuple[Any, ...],
    needs: tuple[bool, ...],
    axis: Axis = None,
    keepdims: bool = False,
) -> tuple[Any]:
    shape, axes = saved
    return (xp.broadcast_to(expand_reduced(xp, g, shape, axes, keepdims), shape),)


sum = defop(
    "sum",
    _sum,
    _sum_vjp,
    method=True,
    facts=Facts(
        ref=lambda torch, x, axis=None, keepdims=False: (
            torch.sum(x, dim=axis, keepdim=keepdims)
            if axis is not None
            else (torch.sum(x).reshape([1] * x.ndim) if keepdims else torch.sum(x))
        ),
        samples=(*REDUCE, OVER_NOTHING),
        kind="reduction",
        formula="broadcast g back",
    ),
)


def _mean(
    xp: Any, x: Any, axis: Axis = None, keepdims: bool = False
) -> tuple[Any, tuple[Any, ...]]:
    """Mean over ``axis`` (all axes by default); nan over no elements, as PyTorch."""
    axes = normalize_axes(axis, x.ndim, "mean")
    if 0 in x.shape:  # nan over nothing, or an empty result (without NumPy's warnings)
        return _filled(xp, x, axes, keepdims, math.nan), (tuple(x.shape), axes)
    return xp.mean(x, axis=axes, keepdims=keepdims), (tuple(x.shape), axes)


def _mean_vjp(
    xp: Any,
    g: Any,
    saved: tuple[Any, ...],
    needs: tuple[bool, ...],
    axis: Axis = None,
    keepdims: bool = False,
) -> tuple[Any]:
    shape, axes = saved
    n = math.prod(shape[a] for a in axes)
    g = expand_reduced(xp, g, shape, axes, keepdims)
    # over no elements (n = 0) the input is empty, and so is its gradient
    return (xp.broadcast_to(g / n if n else g, shape),)


mean = defop(
    "mean",
    _mean,
    _mean_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x, axis=None, keepdims=False: (
            torch.mean(x, dim=axis, keepdim=keepdims)
            if axis is not None
            else (torch.mean(x).reshape([1] * x.ndim) if keepdims else torch.mean(x))
        ),
        samples=(*REDUCE, OVER_NOTHING),
        kind="reduction",
        formula="broadcast g/n back",
    ),
)


def _extremum(name: str, fn_name: str) -> Any:
    def fwd(
        xp: Any, x: Any, axis: Axis = None, keepdims: bool = False
    ) -> tuple[Any, tuple[Any, ...]]:
        axes = normalize_axes(axis, x.ndim, name)
        if over_nothing(x, axes):
            raise empty_reduction_error(name, x, axis, axes)
        out = getattr(xp, fn_name)(x, axis=axes, keepdims=keepdims)
        # the backward needs only where the extrema are: saved as a mask, not as x and
        # out, so that writing into either afterwards (SciPy's log_softmax sets the
        # non-finite maxima to 0 in place) cannot invalidate this node
        hit = x == expand_reduced(xp, out, tuple(x.shape), axes, keepdims)
        return out, (hit, axes)

    def vjp(
        xp: Any,
        g: Any,
        saved: tuple[Any, ...],
        needs: tuple[bool, ...],
        axis: Axis = None,
        keepdims: bool = False,
    ) -> tuple[Any]:
        # the gradient is split evenly between tied extrema (as torch.amax / amin)
        hit, axes = saved
        shape = tuple(hit.shape)
        mask = xp.astype(hit, g.dtype)
        count = xp.sum(mask, axis=axes, keepdims=True)
        # g first: with create_graph g is a Tensor and the mask a backend array, which
        # array-api-strict refuses to multiply by a Tensor from the left
        return ((expand_reduced(xp, g, shape, axes, keepdims) / count) * mask,)

    fwd.__doc__ = (
        f"The {fn_name}imum over ``axis``; ties split the gradient evenly "
        f"(as ``torch.a{fn_name}``)."
    )
    fwd.__module__ = vjp.__module__ = __name__
    return fwd, vjp


def empty_reduction_error(name: str, x: Any, axis: Axis, axes: tuple[int, ...]) -> OpError:
    """The error of ``max``/``min``/``argmax``/``argmin`` over no elements: what PyTorch
    refuses too, said with the shape, the axis and what to do."""
    shape = tuple(x.shape)
    what = "the maximum" if "max" in name else "the minimum"
    if axis is None:
        where = f"over all axes of a zero-size tensor of shape {shape}"
        todo = "give axis= a non-empty axis, or skip the call when the tensor is empty"
    else:
        empty = [a for a in axes if shape[a] == 0]
        where = f"over axis {empty[0]}, which has size 0, of a tensor of shape {shape}"
        todo = "reduce over non-empty axes, or skip the call when that axis is empty"
    return OpError(
        f"{name}: cannot reduce {where}: {what} of no elements is undefined (PyTorch "
        f"refuses it too); {todo}"
    )


def _torch_extremum(fn: str) -> Any:
    def ref(torch: Any, x: Any, axis: Axis = None, keepdims: bool = False) -> Any:
        dim = tuple(range(x.ndim)) if axis is None else axis
        return getattr(torch, fn)(x, dim=dim, keepdim=keepdims)

    return ref


max = defop(
    "max",
    *_extremum("max", "max"),
    method=True,
    bools=lambda xp, x, axis=None, keepdims=False: xp.any(x, axis=axis, keepdims=keepdims),
    facts=Facts(
        ref=_torch_extremum("amax"),
        samples=REDUCE,
        kind="reduction",
        formula="g*[x==max]/count",
        second_order="zero",
    ),
)
min = defop(
    "min",
    *_extremum("min", "min"),
    method=True,
    bools=lambda xp, x, axis=None, keepdims=False: xp.all(x, axis=axis, keepdims=keepdims),
    facts=Facts(
        ref=_torch_extremum("amin"),
        samples=REDUCE,
        kind="reduction",
        formula="g*[x==min]/count",
        second_order="zero",
    ),
)


def _var(
    xp: Any, x: Any, axis: Axis = None, keepdims: bool = False, correction: float = 0.0
) -> tuple[Any, tuple[Any, ...]]:
    """Variance over ``axis`` with ``correction`` (0: population, 1: sample), as the
    Array API ``var``."""
    axes = normalize_axes(axis, x.ndim, "var")
    if 0 in x.shape:  # nan over nothing, or an empty result (without the warnings)
        return _filled(xp, x, axes, keepdims, math.nan), (x, axes)
    return _variance(xp, x, axes, keepdims, correction, "var"), (x, axes)


def _variance(
    xp: Any, x: Any, axes: tuple[int, ...], keepdims: bool, correction: float, fn: str
) -> Any:
    """``xp.var`` or ``xp.std`` (``fn``), but for what array-api-compat's torch ``var``
    and ``std`` get wrong or refuse: over no axis (a 0-d x: 0 where PyTorch and the
    formula give nan for a correction of 1) and a fractional correction. There it is the
    formula, ``sum(|x - mean|^2) / (n - correction)`` (and its square root), a divisor of
    0 or less giving nan or inf as in PyTorch."""
    if axes and float(correction).is_integer():
        return getattr(xp, fn)(x, axis=axes, keepdims=keepdims, correction=correction)
    n = math.prod(x.shape[i] for i in axes)
    a = xp.abs(x - xp.mean(x, axis=axes, keepdims=True))  # |d|^2: real for complex x too
    ss = xp.sum(a * a, axis=axes, keepdims=keepdims)
    div = builtins.max(n - correction, 0)
    var = ss / div if div else ss * math.inf  # 0 * inf: nan, as 0 / 0
    return xp.sqrt(var) if fn == "std" else var


def _var_vjp(
    xp: Any,
    g: Any,
    saved: tuple[Any, ...],
    needs: tuple[bool, ...],
    axis: Axis = None,
    keepdims: bool = False,
    correction: float = 0.0,
) -> tuple[Any]:
    """d var / dx = 2 (x - mean) / (n - correction)."""
    x, axes = saved
    shape = tuple(x.shape)
    return (expand_reduced(xp, g, shape, axes, keepdims) * _spread(xp, x, axes, 2.0, correction),)


def _spread(xp: Any, x: Any, axes: tuple[int, ...], a: float, correction: float) -> Any:
    """``(x - mean) * a / max(n - correction, 0)`` over the reduced axes (var's gradient
    with ``a = 2``, std's with ``a = 1``, before their scaling by ``g``). The factor is
    inf when the divisor is 0, as in PyTorch: the variance of one element with
    ``correction=1`` is nan, and so is its gradient."""
    if 0 in x.shape:
        return x  # no elements, no gradient (and no mean of nothing to compute)
    d = builtins.max(math.prod(x.shape[i] for i in axes) - correction, 0)
    return (x - xp.mean(x, axis=axes, keepdims=True)) * (a / d if d else math.inf)


def _torch_spread(fn: str) -> Any:
    """PyTorch's ``var`` or ``std`` with the Array API's arguments (the reference)."""

    def ref(
        torch: Any, x: Any, axis: Axis = None, keepdims: bool = False, correction: float = 0.0
    ) -> Any:
        dim = tuple(range(x.ndim)) if axis is None else axis
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "degrees of freedom is <= 0": nan, as here
            return getattr(torch, fn)(x, dim=dim, keepdim=keepdims, correction=correction)

    return ref


SPREAD = (
    *REDUCE[:4],
    Sample(((4, 5),), {"axis": 0, "correction": 1.0}),
    Sample(((3, 0),), {"axis": 1, "correction": 1.0}, name="over a zero-size axis"),
)


var = defop(
    "var",
    _var,
    _var_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=_torch_spread("var"),
        samples=SPREAD,
        kind="reduction",
        formula="g*2(x-mean)/(n-correction)",
    ),
)


def _std(
    xp: Any, x: Any, axis: Axis = None, keepdims: bool = False, correction: float = 0.0
) -> tuple[Any, tuple[Any, ...]]:
    """Standard deviation over ``axis`` with ``correction``, as the Array API ``std``;
    the gradient is 0 where the deviation is 0 (constant data), as in PyTorch."""
    axes = normalize_axes(axis, x.ndim, "std")
    if 0 in x.shape:  # nan over nothing, or an empty result (without the warnings)
        out = _filled(xp, x, axes, keepdims, math.nan)
    else:
        out = _variance(xp, x, axes, keepdims, correction, "std")
    return out, (x, out, axes)


def _std_vjp(
    xp: Any,
    g: Any,
    saved: tuple[Any, ...],
    needs: tuple[bool, ...],
    axis: Axis = None,
    keepdims: bool = False,
    correction: float = 0.0,
) -> tuple[Any]:
    """d std / dx = (x - mean) / ((n - correction) std), masked to 0 where std is 0
    (there ``sqrt``'s infinite slope meets var's zero one: nan, unmasked)."""
    x, out, axes = saved
    shape = tuple(x.shape)
    if 0 in shape:  # an empty gradient, kept apart from out (nan): its derivative is 0
        return (expand_reduced(xp, g, shape, axes, keepdims) * x,)
    zero = out == 0
    scale = xp.where(zero, 0.0, g / xp.where(zero, 1.0, out))
    return (
        expand_reduced(xp, scale, shape, axes, keepdims) * _spread(xp, x, axes, 1.0, correction),
    )


std = defop(
    "std",
    _std,
    _std_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=_torch_spread("std"),
        samples=SPREAD,
        kind="reduction",
        formula="g*(x-mean)/((n-correction)*std), 0 where std=0",
    ),
)


def logsumexp_of(xp: Any, x: Any, axes: tuple[int, ...], keepdims: bool) -> Any:
    """``log(sum(exp(x)))`` over ``axes``, shifted by the max so it never overflows;
    rows of all ``-inf`` give ``-inf``, and so does a reduction over no elements."""
    if over_nothing(x, axes):
        return _filled(xp, x, axes, keepdims, -math.inf)
    m = xp.max(x, axis=axes, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0.0)
    s = xp.sum(xp.exp(x - m), axis=axes, keepdims=True)
    out = xp.log(s) + m
    if not keepdims:
        out = xp.reshape(out, tuple(n for i, n in enumerate(x.shape) if i not in axes))
    return out


def _logsumexp(
    xp: Any, x: Any, axis: Axis = None, keepdims: bool = False
) -> tuple[Any, tuple[Any, ...]]:
    """``log(sum(exp(x), axis))``, numerically stable for large magnitudes."""
    axes = normalize_axes(axis, x.ndim, "logsumexp")
    out = logsumexp_of(xp, x, axes, keepdims)
    return out, (x, out, axes)


def _logsumexp_vjp(
    xp: Any,
    g: Any,
    saved: tuple[Any, ...],
    needs: tuple[bool, ...],
    axis: Axis = None,
    keepdims: bool = False,
) -> tuple[Any]:
    """d/dx logsumexp = softmax(x) = exp(x - out)."""
    x, out, axes = saved
    shape = tuple(x.shape)
    return (
        expand_reduced(xp, g, shape, axes, keepdims)
        * xp.exp(x - expand_reduced(xp, out, shape, axes, keepdims)),
    )


logsumexp = defop(
    "logsumexp",
    _logsumexp,
    _logsumexp_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x, axis=None, keepdims=False: torch.logsumexp(
            x, dim=tuple(range(x.ndim)) if axis is None else axis, keepdim=keepdims
        ),
        samples=(*REDUCE[:4], OVER_NOTHING),
        kind="reduction",
        formula="g*exp(x - out)",
    ),
)


# ------------------------------------------------------------------ no gradient
def _arg_extremum(name: str) -> Any:
    def fwd(
        xp: Any, x: Any, axis: int | None = None, keepdims: bool = False
    ) -> tuple[Any, tuple[Any, ...]]:
        if 0 in x.shape:  # (a tuple lookup: nothing to pay for on other tensors)
            axes = normalize_axes(axis, x.ndim, name)
            if over_nothing(x, axes):
                raise empty_reduction_error(name, x, axis, axes)
        if x.dtype == xp.bool:  # the first True (False): as NumPy; torch and strict refuse
            x = xp.astype(x, xp.int8)
        return getattr(xp, name)(x, axis=axis, keepdims=keepdims), ()

    what = "maximum" if name == "argmax" else "minimum"
    fwd.__doc__ = (
        f"Index of the {what} (over the flattened tensor if ``axis`` is None); the first "
        f"one where several tie, as PyTorch."
    )
    fwd.__module__ = __name__
    return fwd


def _torch_arg(fn: str) -> Any:
    def ref(torch: Any, x: Any, axis: int | None = None, keepdims: bool = False) -> Any:
        return getattr(torch, fn)(x, dim=axis, keepdim=keepdims)

    return ref


def _ties(rng: Any) -> tuple[Any, ...]:
    """Small integers as floats: ties, which must pick the first index as PyTorch does."""
    return (rng.integers(-2, 3, (4, 5)).astype(np.float64),)


ARG_SAMPLES = (
    Sample(((3, 4),)),
    Sample(((3, 4),), {"axis": 1}),
    Sample(((2, 3, 4),), {"axis": -1, "keepdims": True}),
    Sample(((3, 4),), {"keepdims": True}),
    Sample(make=_ties, params={"axis": 0}, name="ties"),
    Sample(((3, 0),), {"axis": 0}, name="over a non-empty axis of an empty tensor"),
)

argmax = defop(
    "argmax",
    _arg_extremum("argmax"),
    None,
    method=True,
    facts=Facts(ref=_torch_arg("argmax"), samples=ARG_SAMPLES, kind="reduction"),
)
argmin = defop(
    "argmin",
    _arg_extremum("argmin"),
    None,
    method=True,
    facts=Facts(ref=_torch_arg("argmin"), samples=ARG_SAMPLES, kind="reduction"),
)


def _all(xp: Any, x: Any, axis: Axis = None, keepdims: bool = False) -> tuple[Any, tuple[Any, ...]]:
    """Whether every element is true (nonzero); True over no elements."""
    return xp.all(x, axis=axis, keepdims=keepdims), ()


def _torch_logical(fn: str) -> Any:
    def ref(torch: Any, x: Any, axis: Axis = None, keepdims: bool = False) -> Any:
        dim = tuple(range(x.ndim)) if axis is None else axis
        return getattr(torch, fn)(x, dim=dim, keepdim=keepdims) if x.ndim else getattr(torch, fn)(x)

    return ref


def _mostly(rng: Any) -> tuple[Any, ...]:
    """Booleans, true with probability 0.8: rows of all true and rows with a false."""
    return (rng.random((4, 3)) < 0.8,)


def _rarely(rng: Any) -> tuple[Any, ...]:
    """Booleans, true with probability 0.2."""
    return (rng.random((4, 3)) < 0.2,)


LOGICAL_SAMPLES = (
    Sample(make=_mostly),
    Sample(make=_mostly, params={"axis": 1}),
    Sample(make=_rarely, params={"axis": 0, "keepdims": True}),
    Sample(make=_rarely, params={"axis": (0, 1)}),
    Sample(((2, 3),), {"axis": -1}, name="floats: nonzero is true"),
    Sample(((3, 0),), {"axis": 1}, name="over no elements"),
)

all = defop(
    "all",
    _all,
    None,
    method=True,
    facts=Facts(ref=_torch_logical("all"), samples=LOGICAL_SAMPLES, kind="reduction"),
)


def _any(xp: Any, x: Any, axis: Axis = None, keepdims: bool = False) -> tuple[Any, tuple[Any, ...]]:
    """Whether any element is true (nonzero); False over no elements."""
    return xp.any(x, axis=axis, keepdims=keepdims), ()


any = defop(
    "any",
    _any,
    None,
    method=True,
    facts=Facts(ref=_torch_logical("any"), samples=LOGICAL_SAMPLES, kind="reduction"),
)
