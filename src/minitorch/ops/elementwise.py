"""Elementwise arithmetic: each op's forward, VJP and facts, together."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from ..backend import Backend, get_backend
from ..backend._fallback import int_range
from ..backend.promotion import fit_number
from ..errors import OpError
from ..tensor import Tensor
from ._registry import Facts, InputError, Sample, defop

# Samples shared by the binary ops: shapes that broadcast in every way.
BINARY = (
    Sample(((3, 4), (3, 4))),
    Sample(((), (3,))),
    Sample(((4, 1), (1, 3))),
    Sample(((2, 1, 3), (4, 3))),
)
UNARY = (Sample(((3, 4),)), Sample(((),)), Sample(((2, 0),)))


def _is_scalar(v: Any) -> bool:
    # a Python number; not a NumPy scalar (np.float64 subclasses float, and NumPy ops on
    # 0-d arrays return them: such an operand is tensor data and may need a gradient)
    return type(v) in (int, float, bool)


def refuse_booleans(xp: Any, name: str, x: Any, y: Any) -> None:
    """``x // y``, ``x % y``, ``x ** y`` of two booleans: refused on every backend, as
    PyTorch and the Array API refuse them (NumPy gave int8)."""
    if all(type(v) is bool or (not _is_scalar(v) and xp.isdtype(v.dtype, "bool")) for v in (x, y)):
        raise InputError(
            f"{name}: not defined for booleans (PyTorch and the Array API refuse them); "
            f"convert first, e.g. x.astype('int64')"
        )


# ------------------------------------------------------------------ add, sub, neg
def _add(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise ``x + y`` with broadcasting."""
    return x + y, ()


def _add_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any, Any]:
    return g, g


add = defop(
    "add",
    _add,
    _add_vjp,
    nin=2,
    promote="operands",
    method=True,
    dunders=["__add__"],
    rdunders=["__radd__"],
    scalars=True,
    bools=lambda xp, x, y: xp.logical_or(x, y),  # as NumPy and torch: True + True is True
    facts=Facts(ref=lambda torch, x, y: x + y, samples=BINARY, kind="binary", formula="g, g"),
)


def _sub(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise ``x - y`` with broadcasting."""
    return x - y, ()


def _sub_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any, Any]:
    return g, (-g if needs[1] else None)


sub = defop(
    "sub",
    _sub,
    _sub_vjp,
    api="subtract",
    nin=2,
    promote="operands",
    method=True,
    dunders=["__sub__"],
    rdunders=["__rsub__"],
    scalars=True,
    facts=Facts(ref=lambda torch, x, y: x - y, samples=BINARY, kind="binary", formula="g, -g"),
)


def _neg(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise ``-x``."""
    return -x, ()


def _neg_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    return (-g,)


neg = defop(
    "neg",
    _neg,
    _neg_vjp,
    api="negative",
    method=True,
    dunders=["__neg__"],
    facts=Facts(ref=lambda torch, x: -x, samples=UNARY, kind="unary", formula="-g"),
)


# ------------------------------------------------------------------ mul, div
def _mul(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise ``x * y`` with broadcasting."""
    # a Python number has no gradient, so the other operand need not be kept
    return x * y, (None if _is_scalar(y) else x, None if _is_scalar(x) else y)


def _mul_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any, Any]:
    x, y = saved
    return (g * y if needs[0] else None), (g * x if needs[1] else None)


mul = defop(
    "mul",
    _mul,
    _mul_vjp,
    api="multiply",
    nin=2,
    promote="operands",
    method=True,
    dunders=["__mul__"],
    rdunders=["__rmul__"],
    scalars=True,
    bools=lambda xp, x, y: xp.logical_and(x, y),
    facts=Facts(ref=lambda torch, x, y: x * y, samples=BINARY, kind="binary", formula="g*y, g*x"),
)


def _div(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise ``x / y`` with broadcasting."""
    # xp.divide, not `x / y`: torch computes `number / tensor` as
    # `reciprocal(tensor) * number`, an ulp or more away from a true division
    return xp.divide(x, y), (x, y)


def _div_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any, Any]:
    x, y = saved
    gx = g / y if needs[0] else None
    # -g * x / y^2 as PyTorch orders it, (x / y) / y: y * y overflows or underflows
    # long before the gradient does (y = 2e20 in float32 gave -0 for -2.5e-21)
    gy = -(g * (xp.divide(x, y) / y)) if needs[1] else None
    return gx, gy


div = defop(
    "div",
    _div,
    _div_vjp,
    api="divide",
    nin=2,
    promote="division",
    method=True,
    dunders=["__truediv__"],
    rdunders=["__rtruediv__"],
    scalars=True,
    facts=Facts(
        ref=lambda torch, x, y: x / y,
        samples=BINARY,
        kind="binary",
        domain=(0.5, 2.0),
        formula="g/y, -g*x/y^2",
    ),
)


# ------------------------------------------------------------------ pow
def _pow(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise ``x ** y``: tensor ** number, number ** tensor or tensor ** tensor.

    A float tensor to the power 0.5 is ``sqrt(x)`` and to -0.5 is ``1 / sqrt(x)``, as in
    PyTorch: so ``(-inf) ** 0.5`` is nan, where C's ``pow`` gives inf.
    """
    refuse_booleans(xp, "pow", x, y)
    if _is_scalar(y) and y in (0.5, -0.5) and xp.isdtype(x.dtype, "real floating"):
        out = _root(xp, x, y)
    else:
        out = x**y
    return out, (x, y, out)


def _root(xp: Any, x: Any, p: float) -> Any:
    """``x ** p`` for ``p`` of +-0.5 through ``sqrt``, as PyTorch computes it."""
    return xp.sqrt(x) if p > 0 else 1.0 / xp.sqrt(x)


def _log_number(v: float) -> float:
    """``log`` of a Python number base, as ``torch.log``: -inf at 0, nan below."""
    return math.log(v) if v > 0 else (-math.inf if v == 0 else math.nan)


def _pow_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any, Any]:
    """PyTorch's masks: d/dx is 0 where ``y == 0`` (not ``0 * x**-1``, nan at ``x = 0``),
    and d/dy is 0 where ``x == 0`` and ``y >= 0`` (not ``0 * log(0)``)."""
    x, y, out = saved
    gx = gy = None
    if needs[0]:
        if not _is_scalar(y):
            gx = xp.where(y == 0, 0.0, g * y * x ** (y - 1.0))
        elif y == 0:
            gx = xp.zeros_like(g)
        elif y in (1.5, 0.5) and xp.isdtype(x.dtype, "real floating"):
            gx = g * y * _root(xp, x, y - 1)
        else:
            gx = g * y * x ** (y - 1)
    if needs[1]:
        if _is_scalar(x):
            gy = g * out * _log_number(x)
            if x == 0:
                gy = xp.where(y >= 0, 0.0, gy)
        else:
            gy = g * xp.where((x == 0) & (y >= 0), 0.0, out * xp.log(x))
    return gx, gy


pow = defop(
    "pow",
    _pow,
    _pow_vjp,
    nin=2,
    promote="operands",
    method=True,
    dunders=["__pow__"],
    rdunders=["__rpow__"],
    scalars=True,
    facts=Facts(
        ref=lambda torch, x, y: x**y,
        samples=(
            Sample(((3, 4), (3, 4))),
            Sample(((4, 1), (1, 3))),
            Sample(((3,), 3)),
            Sample(((3,), 0.5)),
            Sample(((2, 3), -1.5)),
            Sample((2.0, (3,))),
        ),
        kind="binary",
        domain=(0.5, 2.0),
        formula="g*y*x^(y-1), g*x^y*log(x)",
    ),
)


# ------------------------------------------------------------------ exp, log, sqrt
def _exp(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise ``e ** x``."""
    out = xp.exp(x)
    return out, (out,)


def _exp_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (out,) = saved
    return (g * out,)


exp = defop(
    "exp",
    _exp,
    _exp_vjp,
    method=True,
    promote="float",
    facts=Facts(ref=lambda torch, x: torch.exp(x), samples=UNARY, kind="unary", formula="g*exp(x)"),
)


def _log(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise natural logarithm."""
    return xp.log(x), (x,)


def _log_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (x,) = saved
    return (g / x,)


log = defop(
    "log",
    _log,
    _log_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x: torch.log(x),
        samples=UNARY,
        kind="unary",
        domain=(0.2, 3.0),
        formula="g/x",
    ),
)


def _sqrt(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise square root."""
    out = xp.sqrt(x)
    return out, (out,)


def _sqrt_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (out,) = saved
    return (g * 0.5 / out,)


sqrt = defop(
    "sqrt",
    _sqrt,
    _sqrt_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x: torch.sqrt(x),
        samples=UNARY,
        kind="unary",
        domain=(0.2, 3.0),
        formula="g/(2*sqrt(x))",
    ),
)


def _rsqrt(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise reciprocal square root ``1 / sqrt(x)``, as ``torch.rsqrt``: inf at 0
    (where the gradient is -inf), nan below 0.

    Examples
    --------
    >>> import minitorch
    >>> x = minitorch.tensor([0.25, 1.0, 4.0], requires_grad=True)
    >>> y = minitorch.rsqrt(x)
    >>> y.sum().backward()
    >>> x.grad
    array([-4.    , -0.5   , -0.0625], dtype=float32)
    """
    out = 1.0 / xp.sqrt(x)
    return out, (out,)


def _rsqrt_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (out,) = saved
    return (g * -0.5 * out**3,)  # d/dx x^(-1/2) = -x^(-3/2) / 2, as PyTorch's rule


rsqrt = defop(
    "rsqrt",
    _rsqrt,
    _rsqrt_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x: torch.rsqrt(x),
        samples=UNARY,
        kind="unary",
        domain=(0.2, 3.0),
        formula="-g*rsqrt(x)^3/2",
    ),
)


# ------------------------------------------------------------------ sin, cos
def _sin(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise sine (of an angle in radians)."""
    return xp.sin(x), (x,)


def _sin_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (x,) = saved
    return (g * xp.cos(x),)


sin = defop(
    "sin",
    _sin,
    _sin_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x: torch.sin(x),
        samples=UNARY,
        kind="unary",
        domain=(-4.0, 4.0),
        formula="g*cos(x)",
    ),
)


def _cos(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise cosine (of an angle in radians)."""
    return xp.cos(x), (x,)


def _cos_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (x,) = saved
    return (-(g * xp.sin(x)),)


cos = defop(
    "cos",
    _cos,
    _cos_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x: torch.cos(x),
        samples=UNARY,
        kind="unary",
        domain=(-4.0, 4.0),
        formula="-g*sin(x)",
    ),
)


def _abs(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise absolute value; the gradient at 0 is 0 (PyTorch's subgradient)."""
    return xp.abs(x), (x,)


def _abs_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (x,) = saved
    # sign(x) with sign(nan) = 0, as PyTorch's sgn: a nan input gets gradient 0
    return (g * (xp.astype(x > 0, g.dtype) - xp.astype(x < 0, g.dtype)),)


abs = defop(
    "abs",
    _abs,
    _abs_vjp,
    method=True,
    dunders=["__abs__"],
    bools=lambda xp, x: xp.asarray(x, copy=True),  # as NumPy: the booleans themselves
    facts=Facts(
        ref=lambda torch, x: torch.abs(x),
        samples=UNARY,
        kind="unary",
        kinks=(0.0,),
        formula="g*sign(x)",
        second_order="zero (undefined at 0)",
    ),
)


# ------------------------------------------------------------------ maximum, minimum, clip
def _maximum(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise maximum; at ties each input gets half the gradient (as PyTorch)."""
    return xp.maximum(x, y), (x, y)


def _maximum_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]
) -> tuple[Any, Any]:
    x, y = saved
    # PyTorch's masks: a nan operand (neither larger nor smaller) passes g to both
    tie = xp.where(x == y, g * 0.5, g)
    gx = xp.where(x < y, 0.0, tie) if needs[0] else None
    gy = xp.where(y < x, 0.0, tie) if needs[1] else None
    return gx, gy


maximum = defop(
    "maximum",
    _maximum,
    _maximum_vjp,
    nin=2,
    promote="operands",
    method=True,
    bools=lambda xp, x, y: xp.logical_or(x, y),
    facts=Facts(
        ref=lambda torch, x, y: torch.maximum(x, y),
        samples=BINARY,
        kind="binary",
        formula="g*[x>y] (+g/2 at ties)",
        second_order="zero",
    ),
)


def _minimum(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise minimum; at ties each input gets half the gradient (as PyTorch)."""
    return xp.minimum(x, y), (x, y)


def _minimum_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]
) -> tuple[Any, Any]:
    x, y = saved
    tie = xp.where(x == y, g * 0.5, g)
    gx = xp.where(x > y, 0.0, tie) if needs[0] else None
    gy = xp.where(y > x, 0.0, tie) if needs[1] else None
    return gx, gy


minimum = defop(
    "minimum",
    _minimum,
    _minimum_vjp,
    nin=2,
    promote="operands",
    bools=lambda xp, x, y: xp.logical_and(x, y),
    method=True,
    facts=Facts(
        ref=lambda torch, x, y: torch.minimum(x, y),
        samples=BINARY,
        kind="binary",
        formula="g*[x<y] (+g/2 at ties)",
        second_order="zero",
    ),
)


def _clip(
    xp: Any, x: Any, min: float | None = None, max: float | None = None
) -> tuple[Any, tuple[Any, ...]]:
    """Clamp to ``[min, max]``; the gradient passes where ``min <= x <= max`` (as PyTorch)."""
    out = x
    # an integer or boolean x keeps its dtype (the standard): its bounds stay ints
    floating = xp.isdtype(x.dtype, "real floating")
    if min is not None:
        out = xp.maximum(out, _bound(min, "min", floating, x.dtype))
    if max is not None:
        out = xp.minimum(out, _bound(max, "max", floating, x.dtype))
    return out, (x,)


def _bound(v: Any, name: str, floating: bool, dtype: Any) -> float | int:
    """``clip``'s bound ``v`` as a Python number of x's kind, or a clear error: a
    fractional bound of an integer tensor would be cut to an int (clip(x, min=0.5) left
    a 0 below it)."""
    if getattr(v, "ndim", 0) != 0 or isinstance(v, str | bytes):
        raise InputError(
            f"clip: {name} must be a number (or None), got {type(v).__name__}"
            f"{' of shape ' + str(tuple(v.shape)) if hasattr(v, 'shape') else ''}; for "
            f"bounds that vary by element use maximum(minimum(x, hi), lo)"
        )
    if getattr(v, "requires_grad", False):  # its gradient was dropped, silently
        raise InputError(
            f"clip: {name} is a tensor that requires grad, and clip gives no gradient to "
            f"its bounds; use maximum(minimum(x, hi), lo) to differentiate through them"
        )
    f = float(v)
    if floating:
        return f
    if f != f or f in (math.inf, -math.inf) or f != int(f):
        raise InputError(
            f"clip: {name}={v!r} is not an integer, and x has dtype {dtype}: convert x "
            f"to a float dtype first (x.astype('float32').clip(...)), as PyTorch would"
        )
    return int(f)


def _clip_vjp(
    xp: Any,
    g: Any,
    saved: tuple[Any, ...],
    needs: tuple[bool, ...],
    min: float | None = None,
    max: float | None = None,
) -> tuple[Any]:
    (x,) = saved
    if min is not None:
        g = xp.where(x >= min, g, 0.0)
    if max is not None:
        g = xp.where(x <= max, g, 0.0)
    return (g,)


def _clip_booleans(xp: Any, x: Any, min: float | None = None, max: float | None = None) -> Any:
    """``clip`` of a boolean tensor, as NumPy and PyTorch answer it: the booleans as
    int64 0 and 1, clipped (array-api-strict refuses the maximum of booleans)."""
    return _clip(xp, xp.astype(x, xp.int64), min, max)[0]


clip = defop(
    "clip",
    _clip,
    _clip_vjp,
    method=True,
    bools=_clip_booleans,
    facts=Facts(
        ref=lambda torch, x, min=None, max=None: torch.clamp(x, min, max),
        samples=(Sample(((3, 4),), {"min": -0.5, "max": 0.5}), Sample(((5,),), {"min": 0.0})),
        kind="unary",
        kinks=(-0.5, 0.0, 0.5),
        formula="g*[min<=x<=max]",
        second_order="zero",
    ),
)


# ------------------------------------------------------------------ where
def _where(xp: Any, cond: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
    """``x`` where ``cond`` is true, else ``y`` (broadcasting); ``cond`` must be boolean."""
    if not (type(cond) is bool or xp.isdtype(cond.dtype, "bool")):
        raise OpError(
            f"where: the condition must be boolean, got dtype {cond.dtype}; compare first, "
            f"e.g. where(c != 0, x, y)"
        )
    return xp.where(cond, x, y), (cond,)


def _where_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]
) -> tuple[Any, Any, Any]:
    (cond,) = saved
    gx = xp.where(cond, g, 0.0) if needs[1] else None
    gy = xp.where(cond, 0.0, g) if needs[2] else None
    return None, gx, gy


def _where_sample(rng: Any) -> tuple[Any, ...]:
    return rng.random((3, 4)) > 0.5, rng.uniform(-2, 2, (3, 4)), rng.uniform(-2, 2, (4,))


where = defop(
    "where",
    _where,
    _where_vjp,
    nin=3,
    promote="values",
    scalars=True,
    facts=Facts(
        ref=lambda torch, c, x, y: torch.where(c, x, y),
        samples=(Sample(make=_where_sample),),
        grad_inputs=(1, 2),
        formula="0, g*c, g*!c",
        second_order="zero",
    ),
)


# ------------------------------------------------------------------ masked_fill
def _masked_fill(xp: Any, x: Any, mask: Any, value: float = 0.0) -> tuple[Any, tuple[Any, ...]]:
    """``value`` where ``mask`` is true, else ``x``, as ``torch.Tensor.masked_fill``.

    ``mask`` is a boolean tensor that broadcasts with ``x``; ``value`` is a Python number
    (e.g. ``-inf`` to mask attention scores), cast to ``x``'s dtype as PyTorch does (an
    integer tensor truncates it). The gradient of ``x`` is 0 where ``mask`` is true; the
    mask gets none.

    Examples
    --------
    >>> import minitorch
    >>> x = minitorch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> mask = minitorch.tensor([True, False, True])
    >>> y = x.masked_fill(mask, -1.0)
    >>> y.sum().backward()
    >>> x.grad
    array([0., 1., 0.], dtype=float32)
    """
    if not xp.isdtype(mask.dtype, "bool"):
        raise OpError(
            f"masked_fill: the mask must be boolean, got dtype {mask.dtype}; compare first, "
            f"e.g. masked_fill(x, m != 0, value)"
        )
    if not isinstance(value, numbers.Real):
        raise OpError(
            f"masked_fill: value must be a Python number, got {type(value).__name__}; "
            f"for a tensor of values use where(mask, values, x)"
        )
    return xp.where(mask, fill_number(xp, x.dtype, value, "masked_fill"), x), (mask,)


def fill_number(xp: Any, dtype: Any, value: Any, who: str) -> Any:
    """A Python number written into an array of ``dtype`` (``masked_fill``'s value,
    ``x[key] = value``) as :func:`~minitorch.backend.promotion.fit_number` makes it (a
    float into an integer dtype truncated, as NumPy and PyTorch do; array-api-strict
    takes no other kind); what the dtype cannot hold is an OpError, as PyTorch refuses
    it ("value cannot be converted ... without overflow"), where a where() wrapped it
    (-10000 into int8 became -16) or overflowed it to inf. Anything but a number is
    returned as it is."""
    if not isinstance(value, numbers.Number | np.bool_):
        return value
    try:
        return fit_number(xp, dtype, value)
    except (OverflowError, ValueError, TypeError) as exc:
        raise OpError(
            f"{who}: the tensor's dtype cannot hold the value: {exc}; pick a value that "
            f"fits, or convert the tensor to a wider dtype first (x.astype('float64'))"
        ) from None


def _masked_fill_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], value: float = 0.0
) -> tuple[Any, None]:
    (mask,) = saved
    return (xp.where(mask, 0.0, g) if needs[0] else None), None


def _masked_fill_sample(shape: tuple[int, ...], mask_shape: tuple[int, ...]) -> Any:
    def make(rng: Any) -> tuple[Any, ...]:
        return rng.uniform(-2, 2, shape), rng.random(mask_shape) > 0.5

    return make


masked_fill = defop(
    "masked_fill",
    _masked_fill,
    _masked_fill_vjp,
    nin=2,
    method=True,
    facts=Facts(
        ref=lambda torch, x, mask, value=0.0: x.masked_fill(mask, value),
        samples=(
            Sample(make=_masked_fill_sample((3, 4), (3, 4)), params={"value": -1e4}),
            Sample(make=_masked_fill_sample((2, 3, 4), (3, 1)), params={"value": 0.5}),
            Sample(make=_masked_fill_sample((4,), (3, 4)), name="mask broadcasts x"),
        ),
        grad_inputs=(0,),
        formula="g*!mask, 0",
        second_order="zero",
    ),
)


# ------------------------------------------------------------------ casts and copies
def _astype(xp: Any, x: Any, dtype: Any) -> tuple[Any, tuple[Any, ...]]:
    """Cast to ``dtype``; the gradient is cast back to the input's dtype."""
    return xp.astype(x, dtype), (x.dtype,)


def _astype_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], dtype: Any
) -> tuple[Any]:
    (src,) = saved
    return (xp.astype(g, src),)


def astype_dtype(be: Backend, dtype: Any) -> Any:
    """``astype``'s dtype as ``be``'s library's own (PyTorch's and array-api-strict's
    ``astype`` take no strings), by the rule of ``dtype=`` (:meth:`Backend.resolve_dtype`).
    What is no dtype (``3``, ``None``, an array) is a TypeError naming astype, as a
    creation function's; a dtype the backend does not take a ValueError naming astype."""
    if dtype is None:  # the default dtype to a creation function; astype needs one
        raise TypeError(f"astype: {be.not_a_dtype(dtype)}")
    return be.resolve_dtype(dtype, "astype")


def _prepare_astype(tensors: Any, params: dict[str, Any]) -> dict[str, Any]:
    """The dtype by :func:`astype_dtype`, for the library of the tensor, or of the
    backend a non-tensor input becomes a tensor of."""
    x = tensors[0]
    be = x._backend if isinstance(x, Tensor) else get_backend()
    return {**params, "dtype": astype_dtype(be, params["dtype"])}


astype = defop(
    "astype",
    _astype,
    _astype_vjp,
    method=True,
    prepare=_prepare_astype,
    facts=Facts(
        ref=lambda torch, x, dtype="float64": x.to(getattr(torch, str(dtype).rsplit(".", 1)[-1])),
        # a cast to the checked dtype (float64): a float32 cast would leave central
        # differences nothing to measure
        samples=(Sample(((3, 4),), {"dtype": "float64"}), Sample(((5,),), {"dtype": "float64"})),
        kind="unary",
        formula="astype(g, x.dtype)",
    ),
)


def _clone(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """A copy with its own memory (differentiable)."""
    return xp.asarray(x, copy=True), ()


def _clone_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    return (g,)


clone = defop(
    "clone",
    _clone,
    _clone_vjp,
    method=True,
    facts=Facts(ref=lambda torch, x: x.clone(), samples=UNARY, kind="unary", formula="g"),
)


# ------------------------------------------------------------------ comparisons (no gradient)
def _small_ints(*shapes: tuple[int, ...]) -> Any:
    """A ``Sample.make`` of floats that are small integers: ties, for comparisons."""

    def make(rng: Any) -> tuple[Any, ...]:
        return tuple(np.asarray(rng.integers(-2, 3, s), dtype=np.float64) for s in shapes)

    return make


COMPARE = (
    *(Sample(make=_small_ints(*s.shapes), name=", ".join(map(str, s.shapes))) for s in BINARY),
    Sample(((3, 4), 0.5), name="with a number"),
)


#: comparison -> its answer for every element of an integer tensor x when the Python
#: int n lies (above, below) x's whole range: x < n for every x, or x > n for every x
_BEYOND = {
    "eq": (False, False),
    "ne": (True, True),
    "lt": (True, False),
    "le": (True, False),
    "gt": (False, True),
    "ge": (False, True),
}
#: the comparison with its operands swapped (n < x is x > n)
_SWAPPED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def _beyond_range(xp: Any, name: str, x: Any, y: Any) -> Any:
    """The answer of ``x <name> y`` where one operand is an integer tensor and the other
    a Python int its dtype cannot hold (``int8_x == 300``: all False, ``int8_x < 300``
    all True, as NumPy 2 and torch answer; array-api-strict refused, torch and JAX
    wrapped the int); None for any other operands."""
    for a, n, op in ((x, y, name), (y, x, _SWAPPED[name])):
        if type(n) is int and not _is_scalar(a) and xp.isdtype(a.dtype, "integral"):
            low, high, _ = int_range(xp, a.dtype)
            if not low <= n <= high:
                value = _BEYOND[op][0 if n > high else 1]
                return xp.full(a.shape, value, dtype=xp.bool, device=a.device)
    return None


#: a comparison of booleans, False < True, in logical operations (array-api-strict
#: refuses ``<`` of booleans)
_BOOL_COMPARE: dict[str, Any] = {
    "lt": lambda xp, x, y: xp.logical_and(xp.logical_not(x), y),
    "le": lambda xp, x, y: xp.logical_or(xp.logical_not(x), y),
    "gt": lambda xp, x, y: xp.logical_and(x, xp.logical_not(y)),
    "ge": lambda xp, x, y: xp.logical_or(x, xp.logical_not(y)),
}


def _compare(name: str, dunder: str, fn: Any) -> Any:
    def fwd(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
        if type(y) is int or type(x) is int:
            beyond = _beyond_range(xp, name, x, y)
            if beyond is not None:
                return beyond, ()
        return fn(x, y), ()

    fwd.__doc__ = f"Elementwise ``x {dunder} y`` (a boolean tensor without gradient)."
    fwd.__module__ = __name__
    return defop(
        name,
        fwd,
        None,
        nin=2,
        dunders=[f"__{name}__"],
        scalars=True,
        promote="comparison",
        bools=_BOOL_COMPARE.get(name),
        facts=Facts(ref=lambda torch, x, y: getattr(torch, name)(x, y), samples=COMPARE),
    )


eq = _compare("eq", "==", lambda x, y: x == y)
ne = _compare("ne", "!=", lambda x, y: x != y)
lt = _compare("lt", "<", lambda x, y: x < y)
le = _compare("le", "<=", lambda x, y: x <= y)
gt = _compare("gt", ">", lambda x, y: x > y)
ge = _compare("ge", ">=", lambda x, y: x >= y)


def _truth(xp: Any, v: Any) -> Any:
    """``v`` as booleans, as PyTorch's logical ops read numbers: nonzero (nan too) is
    True (NumPy, torch and JAX did so, array-api-strict refused anything but bool)."""
    if _is_scalar(v):
        return bool(v)
    return v if xp.isdtype(v.dtype, "bool") else v != 0


def _logical_not(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise logical not (of booleans, or of numbers: nonzero is True)."""
    return xp.logical_not(_truth(xp, x)), ()


def _booleans(*shapes: tuple[int, ...]) -> Any:
    """A ``Sample.make`` of random booleans of the given shapes."""

    def make(rng: Any) -> tuple[Any, ...]:
        return tuple(np.asarray(rng.random(s) < 0.5) for s in shapes)

    return make


logical_not = defop(
    "logical_not",
    _logical_not,
    None,
    facts=Facts(
        ref=lambda torch, x: torch.logical_not(x),
        samples=(Sample(make=_booleans((3, 4)), name="(3, 4)"), Sample(make=_booleans(()))),
    ),
)

LOGICAL = (
    *(Sample(make=_booleans(*s.shapes), name=", ".join(map(str, s.shapes))) for s in BINARY),
    Sample(make=lambda rng: (rng.random((3,)) < 0.5, True), name="with a Python bool"),
)


def _logical(name: str, symbol: str) -> Any:
    """``logical_and`` / ``logical_or`` / ``logical_xor`` of boolean tensors (and Python
    bools): no gradient.
    The operators ``&`` and ``|`` are the bitwise ops (ops/math.py), which are the same
    on booleans and also take integers, as the standard says."""

    def fwd(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
        return getattr(xp, name)(_truth(xp, x), _truth(xp, y)), ()

    fwd.__doc__ = (
        f"Elementwise ``x {symbol} y`` of booleans, or of numbers (nonzero is True, as "
        f"in PyTorch); no gradient."
    )
    fwd.__module__ = __name__
    return defop(
        name,
        fwd,
        None,
        nin=2,
        scalars=True,
        facts=Facts(
            ref=lambda torch, x, y: getattr(torch, name)(x, torch.as_tensor(y)),
            samples=LOGICAL,
        ),
    )


logical_and = _logical("logical_and", "&")
logical_or = _logical("logical_or", "|")
logical_xor = _logical("logical_xor", "^")


def _isfinite(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise: neither infinite nor NaN."""
    return xp.isfinite(x), ()


def _special_values(rng: Any) -> tuple[Any, ...]:
    """Floats with infinities, nan and signed zeros among them."""
    x = rng.uniform(-2, 2, (3, 4))
    x[0, :4] = (math.inf, -math.inf, math.nan, 0.0)
    x[1, :2] = (-0.0, 0.0)
    return (x,)


def _signed_values(rng: Any) -> tuple[Any, ...]:
    """Floats with infinities and zeros among them (no nan: its sign is nan by the Array
    API standard, 0 in PyTorch)."""
    x = rng.uniform(-2, 2, (3, 4))
    x[0, :3] = (math.inf, -math.inf, 0.0)
    return (x,)


SPECIAL = (Sample(make=_special_values, name="inf, -inf, nan, +-0"), Sample(((),)), Sample(((5,),)))

isfinite = defop(
    "isfinite",
    _isfinite,
    None,
    method=True,
    bools=lambda xp, x: xp.full(x.shape, True, dtype=xp.bool, device=x.device),
    facts=Facts(ref=lambda torch, x: torch.isfinite(x), samples=SPECIAL),
)


def _log1p(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise ``log(1 + x)``, accurate for small ``x``."""
    return xp.log1p(x), (x,)


def _log1p_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (x,) = saved
    return (g / (1.0 + x),)


log1p = defop(
    "log1p",
    _log1p,
    _log1p_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x: torch.log1p(x),
        samples=UNARY,
        kind="unary",
        domain=(-0.5, 2.0),
        formula="g/(1+x)",
    ),
)


def _erf(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """The error function (native where the backend has one, else a full-precision
    rational approximation in pure Array API calls)."""
    return xp.erf(x), (x,)


def _erf_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    """d/dx erf(x) = 2/sqrt(pi) * exp(-x^2)."""
    (x,) = saved
    return (g * (2.0 / math.sqrt(math.pi)) * xp.exp(-(x * x)),)


erf = defop(
    "erf",
    _erf,
    _erf_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x: torch.special.erf(x),
        samples=UNARY,
        kind="unary",
        formula="g*2/sqrt(pi)*exp(-x^2)",
    ),
)


def _sign(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise sign (-1, 0 or 1); no gradient."""
    return xp.sign(x), ()


sign = defop(
    "sign",
    _sign,
    None,
    method=True,
    bools=lambda xp, x: xp.asarray(x, copy=True),  # as torch: False is 0, True is 1
    facts=Facts(
        ref=lambda torch, x: torch.sign(x),
        samples=(Sample(make=_signed_values, name="inf, -inf, 0"), *SPECIAL[1:]),
    ),
)
