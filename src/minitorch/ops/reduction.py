"""Reductions: sum, mean, max, min, var, logsumexp (axis None / int / tuple, keepdims)."""

from __future__ import annotations

import builtins
import math
from typing import Any

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


def _sum(xp: Any, x: Any, axis: Axis = None, keepdims: bool = False) -> tuple[Any, tuple[Any, ...]]:
    """Sum over ``axis`` (all axes by default)."""
    axes = normalize_axes(axis, x.ndim, "sum")
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
        samples=REDUCE,
        kind="reduction",
        formula="broadcast g back",
    ),
)


def _mean(
    xp: Any, x: Any, axis: Axis = None, keepdims: bool = False
) -> tuple[Any, tuple[Any, ...]]:
    """Mean over ``axis`` (all axes by default)."""
    axes = normalize_axes(axis, x.ndim, "mean")
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
    return (xp.broadcast_to(expand_reduced(xp, g, shape, axes, keepdims) / n, shape),)


mean = defop(
    "mean",
    _mean,
    _mean_vjp,
    method=True,
    facts=Facts(
        ref=lambda torch, x, axis=None, keepdims=False: (
            torch.mean(x, dim=axis, keepdim=keepdims)
            if axis is not None
            else (torch.mean(x).reshape([1] * x.ndim) if keepdims else torch.mean(x))
        ),
        samples=(*REDUCE[:-1], Sample(((),))),
        kind="reduction",
        formula="broadcast g/n back",
    ),
)


def _extremum(name: str, fn_name: str) -> Any:
    def fwd(
        xp: Any, x: Any, axis: Axis = None, keepdims: bool = False
    ) -> tuple[Any, tuple[Any, ...]]:
        axes = normalize_axes(axis, x.ndim, name)
        if builtins.any(x.shape[a] == 0 for a in axes):
            raise OpError(f"{name}: cannot reduce over a zero-size axis (shape {tuple(x.shape)})")
        out = getattr(xp, fn_name)(x, axis=axes, keepdims=keepdims)
        return out, (x, out, axes)

    def vjp(
        xp: Any,
        g: Any,
        saved: tuple[Any, ...],
        needs: tuple[bool, ...],
        axis: Axis = None,
        keepdims: bool = False,
    ) -> tuple[Any]:
        # the gradient is split evenly between tied extrema (as torch.amax / amin)
        x, out, axes = saved
        shape = tuple(x.shape)
        hit = x == expand_reduced(xp, out, shape, axes, keepdims)
        mask = xp.astype(hit, g.dtype)
        count = xp.sum(mask, axis=axes, keepdims=True)
        return (mask * (expand_reduced(xp, g, shape, axes, keepdims) / count),)

    fwd.__doc__ = (
        f"The {fn_name}imum over ``axis``; ties split the gradient evenly "
        f"(as ``torch.a{fn_name}``)."
    )
    fwd.__module__ = vjp.__module__ = __name__
    return fwd, vjp


def _torch_extremum(fn: str) -> Any:
    def ref(torch: Any, x: Any, axis: Axis = None, keepdims: bool = False) -> Any:
        dim = tuple(range(x.ndim)) if axis is None else axis
        return getattr(torch, fn)(x, dim=dim, keepdim=keepdims)

    return ref


max = defop(
    "max",
    *_extremum("max", "max"),
    method=True,
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
    return xp.var(x, axis=axes, keepdims=keepdims, correction=correction), (x, axes)


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
    d = builtins.max(math.prod(x.shape[i] for i in axes) - correction, 0)
    return (x - xp.mean(x, axis=axes, keepdims=True)) * (a / d if d else math.inf)


def _torch_spread(fn: str) -> Any:
    """PyTorch's ``var`` or ``std`` with the Array API's arguments (the reference)."""

    def ref(
        torch: Any, x: Any, axis: Axis = None, keepdims: bool = False, correction: float = 0.0
    ) -> Any:
        dim = tuple(range(x.ndim)) if axis is None else axis
        return getattr(torch, fn)(x, dim=dim, keepdim=keepdims, correction=correction)

    return ref


SPREAD = (*REDUCE[:4], Sample(((4, 5),), {"axis": 0, "correction": 1.0}))


var = defop(
    "var",
    _var,
    _var_vjp,
    method=True,
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
    out = xp.std(x, axis=axes, keepdims=keepdims, correction=correction)
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
    if builtins.any(x.shape[a] == 0 for a in axes):
        kept = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
        out = xp.full(kept, -math.inf, dtype=x.dtype, device=x.device)
        return (
            out
            if keepdims
            else xp.reshape(out, tuple(n for i, n in enumerate(kept) if i not in axes))
        )
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
    facts=Facts(
        ref=lambda torch, x, axis=None, keepdims=False: torch.logsumexp(
            x, dim=tuple(range(x.ndim)) if axis is None else axis, keepdim=keepdims
        ),
        samples=REDUCE[:4],
        kind="reduction",
        formula="g*exp(x - out)",
    ),
)


# ------------------------------------------------------------------ no gradient
def _argmax(
    xp: Any, x: Any, axis: int | None = None, keepdims: bool = False
) -> tuple[Any, tuple[Any, ...]]:
    """Index of the maximum (over the flattened tensor if ``axis`` is None)."""
    return xp.argmax(x, axis=axis, keepdims=keepdims), ()


argmax = defop("argmax", _argmax, None, method=True)


def _argmin(
    xp: Any, x: Any, axis: int | None = None, keepdims: bool = False
) -> tuple[Any, tuple[Any, ...]]:
    """Index of the minimum (over the flattened tensor if ``axis`` is None)."""
    return xp.argmin(x, axis=axis, keepdims=keepdims), ()


argmin = defop("argmin", _argmin, None, method=True)


def _all(xp: Any, x: Any, axis: Axis = None, keepdims: bool = False) -> tuple[Any, tuple[Any, ...]]:
    """Whether every element is true (nonzero)."""
    return xp.all(x, axis=axis, keepdims=keepdims), ()


all = defop("all", _all, None, method=True)


def _any(xp: Any, x: Any, axis: Axis = None, keepdims: bool = False) -> tuple[Any, tuple[Any, ...]]:
    """Whether any element is true (nonzero)."""
    return xp.any(x, axis=axis, keepdims=keepdims), ()


any = defop("any", _any, None, method=True)
