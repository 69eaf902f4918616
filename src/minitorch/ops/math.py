"""The rest of the Array API's elementwise math: trigonometric and hyperbolic functions,
rounding, floor division and remainder, sign and special-value tests, and the bitwise
ops. Each op's forward, VJP and facts, together.

Rounding ops (``floor``, ``ceil``, ``round``, ``trunc``, ``floor_divide``) are piecewise
constant: their gradient is zero, as PyTorch's. Tests of values (``signbit``,
``isinf``, ``nextafter``) and the bitwise ops have no gradient (``logical_xor`` is with
its siblings in elementwise.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..tensor import Operand, Tensor
from ._registry import Facts, InputError, Sample, defop, tensor_method
from .elementwise import BINARY, SPECIAL, UNARY, _booleans, _is_scalar, refuse_booleans
from .elementwise import pow as _pow_op

Fwd = Callable[..., tuple[Any, tuple[Any, ...]]]
Grads = tuple[Any, ...]


def _torch_floats(torch: Any, *args: Any) -> list[Any]:
    """A reference's arguments with Python numbers made float64 torch tensors (some
    torch functions take no numbers)."""
    return [torch.as_tensor(a, dtype=torch.float64) if _is_scalar(a) else a for a in args]


# ------------------------------------------------------------------ unary functions
def _named(name: str, doc: str, fwd: Callable[..., Any], vjp: Callable[..., Any] | None) -> None:
    """Name the forward (and VJP) a factory below made as if written in this module as
    ``_<name>`` and ``_<name>_vjp``, the forward documented by ``doc``."""
    fwd.__doc__ = doc
    fwd.__module__ = __name__
    fwd.__qualname__ = f"_{name}"
    if vjp is not None:
        vjp.__module__ = __name__
        vjp.__qualname__ = f"_{name}_vjp"


def _unary(
    name: str,
    doc: str,
    grad: Callable[[Any, Any, Any, Any], Any],
    *,
    formula: str,
    domain: tuple[float, float] = (-2.0, 2.0),
    saves_output: bool = False,
) -> Callable[..., Tensor]:
    """A differentiable unary function ``xp.<name>``; ``grad(xp, g, x, out)`` is its VJP
    (``x`` or ``out`` is None for the one that is not saved)."""

    def fwd(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
        out = getattr(xp, name)(x)
        return out, ((out,) if saves_output else (x,))

    def vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> Grads:
        (s,) = saved
        return (grad(xp, g, None, s) if saves_output else grad(xp, g, s, None),)

    _named(name, doc, fwd, vjp)
    return defop(
        name,
        fwd,
        vjp,
        method=True,
        promote="float",
        facts=Facts(
            ref=lambda torch, x: getattr(torch, name)(x),
            samples=UNARY,
            kind="unary",
            domain=domain,
            formula=formula,
        ),
    )


tan = _unary(
    "tan",
    "Elementwise tangent (of an angle in radians).",
    lambda xp, g, x, out: g * (1.0 + out * out),
    formula="g*(1+tan(x)^2)",
    domain=(-1.3, 1.3),
    saves_output=True,
)
asin = _unary(
    "asin",
    "Elementwise inverse sine, in radians; defined on [-1, 1].",
    lambda xp, g, x, out: g / xp.sqrt(1.0 - x * x),
    formula="g/sqrt(1-x^2)",
    domain=(-0.9, 0.9),
)
acos = _unary(
    "acos",
    "Elementwise inverse cosine, in radians; defined on [-1, 1].",
    lambda xp, g, x, out: -g / xp.sqrt(1.0 - x * x),
    formula="-g/sqrt(1-x^2)",
    domain=(-0.9, 0.9),
)
atan = _unary(
    "atan",
    "Elementwise inverse tangent, in radians.",
    lambda xp, g, x, out: g / (1.0 + x * x),
    formula="g/(1+x^2)",
    domain=(-3.0, 3.0),
)
sinh = _unary(
    "sinh",
    "Elementwise hyperbolic sine.",
    lambda xp, g, x, out: g * xp.cosh(x),
    formula="g*cosh(x)",
)
cosh = _unary(
    "cosh",
    "Elementwise hyperbolic cosine.",
    lambda xp, g, x, out: g * xp.sinh(x),
    formula="g*sinh(x)",
)
asinh = _unary(
    "asinh",
    "Elementwise inverse hyperbolic sine.",
    lambda xp, g, x, out: g / xp.sqrt(x * x + 1.0),
    formula="g/sqrt(x^2+1)",
    domain=(-3.0, 3.0),
)
acosh = _unary(
    "acosh",
    "Elementwise inverse hyperbolic cosine; defined on [1, inf).",
    lambda xp, g, x, out: g / xp.sqrt((x - 1.0) * (x + 1.0)),
    formula="g/sqrt(x^2-1)",
    domain=(1.2, 3.0),
)
atanh = _unary(
    "atanh",
    "Elementwise inverse hyperbolic tangent; defined on [-1, 1].",
    lambda xp, g, x, out: g / (1.0 - x * x),
    formula="g/(1-x^2)",
    domain=(-0.9, 0.9),
)
expm1 = _unary(
    "expm1",
    "Elementwise ``exp(x) - 1``, accurate for small ``x``.",
    lambda xp, g, x, out: g * (out + 1.0),
    formula="g*exp(x)",
    saves_output=True,
)


# ------------------------------------------------------------------ rounding (zero gradient)
def _int_sample(lo: int, hi: int, *shapes: tuple[int, ...]) -> Callable[..., tuple[Any, ...]]:
    """A ``Sample.make`` of int64 arrays in ``[lo, hi)``."""

    def make(rng: np.random.Generator) -> tuple[Any, ...]:
        return tuple(rng.integers(lo, hi, s, dtype=np.int64) for s in shapes)

    return make


def _rounding(name: str, doc: str, kinks: tuple[float, ...]) -> Callable[..., Tensor]:
    """``xp.<name>``: an integer input is returned as it is (Array API); the gradient is
    zero (the function is piecewise constant), as PyTorch's."""

    def fwd(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
        if xp.isdtype(x.dtype, "bool"):  # as an integer (NumPy's round gave float16)
            return xp.asarray(x, copy=True), ()
        return getattr(xp, name)(x), ()

    def vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> Grads:
        return (xp.zeros_like(g),)

    _named(name, doc, fwd, vjp)
    return defop(
        name,
        fwd,
        vjp,
        method=True,
        facts=Facts(
            ref=lambda torch, x: getattr(torch, name)(x),
            samples=UNARY,
            kind="unary",
            domain=(-3.0, 3.0),
            kinks=kinks,
            formula="0",
            second_order="zero",
        ),
    )


_INTEGERS = tuple(float(k) for k in range(-3, 4))
floor = _rounding("floor", "Elementwise largest integer not above ``x``.", _INTEGERS)
ceil = _rounding("ceil", "Elementwise smallest integer not below ``x``.", _INTEGERS)
trunc = _rounding("trunc", "Elementwise integer part (rounded toward zero).", _INTEGERS)
round = _rounding(
    "round",
    "Elementwise nearest integer; halves round to the even one (``round(2.5) == 2``).",
    tuple(k + 0.5 for k in range(-4, 4)),
)


# ------------------------------------------------------------------ floor_divide, remainder
def _away_from_ints(*shapes: Any) -> Callable[..., tuple[Any, ...]]:
    """A ``Sample.make`` for ``x // y`` and ``x % y`` (a shape is a float array in
    +-[0.5, 2.5], a number passes as it is), redrawn until every broadcast ``x / y`` is
    at least 0.05 from an integer: gradients are checked away from the jumps."""

    def draw(rng: np.random.Generator, s: Any) -> Any:
        if isinstance(s, int | float):
            return s
        return np.asarray(rng.uniform(0.5, 2.5, s) * rng.choice([-1.0, 1.0], s))

    def make(rng: np.random.Generator) -> tuple[Any, ...]:
        for _ in range(1000):
            x, y = (draw(rng, s) for s in shapes)
            q = np.asarray(x, dtype=np.float64) / np.asarray(y, dtype=np.float64)
            if np.all(np.abs(q - np.round(q)) > 0.05):
                return x, y
        raise AssertionError("no sample away from the jumps of x // y")  # pragma: no cover

    return make


DIVISION = (
    Sample(make=_away_from_ints((3, 4), (3, 4)), name="(3, 4), (3, 4)"),
    Sample(make=_away_from_ints((), (3,)), name="(), (3,)"),
    Sample(make=_away_from_ints((4, 1), (1, 3)), name="(4, 1), (1, 3)"),
    Sample(make=_away_from_ints((2, 3), 1.5), name="with a number"),
    Sample(make=_away_from_ints(-2.5, (3,)), name="a number with a tensor"),
)


def _floor_divide(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise ``x // y``: the quotient rounded down (toward -inf), for integers
    too (``-7 // 2 == -4``). The gradient is zero, as PyTorch's ``div(rounding_mode=
    "floor")``. A zero quotient has the sign of ``x / y`` (``-0.0 // 1.0 == -0.0``), as
    the Array API standard says."""
    refuse_booleans(xp, "floor_divide", x, y)
    out = xp.floor_divide(x, y)
    if xp.isdtype(out.dtype, "real floating"):
        # JAX gives +0.0 for -0.0 // 1.0
        out = xp.where(out == 0, xp.copysign(out, x / y), out)
    return out, ()


def _floor_divide_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> Grads:
    zero = xp.zeros_like(g)
    return (zero if needs[0] else None), (zero if needs[1] else None)


floor_divide = defop(
    "floor_divide",
    _floor_divide,
    _floor_divide_vjp,
    nin=2,
    promote="operands",
    method=True,
    dunders=["__floordiv__"],
    rdunders=["__rfloordiv__"],
    scalars=True,
    facts=Facts(
        ref=lambda torch, x, y: torch.div(*_torch_floats(torch, x, y), rounding_mode="floor"),
        samples=DIVISION,
        formula="0, 0",
        second_order="zero",
    ),
)


def _remainder(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise ``x % y``, with the sign of the divisor ``y`` (Python's and PyTorch's
    ``remainder``: ``-7 % 2 == 1``), i.e. ``x - floor(x / y) * y``. A zero takes the
    divisor's sign too (``0.0 % -1.0 == -0.0``), as the Array API standard says."""
    refuse_booleans(xp, "remainder", x, y)
    out = xp.remainder(x, y)
    if xp.isdtype(out.dtype, "real floating"):
        # PyTorch gives zeros the dividend's sign
        out = xp.where(out == 0, xp.copysign(out, y), out)
    return out, (x, y)


def _remainder_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> Grads:
    x, y = saved
    gy = -g * xp.floor_divide(x, y) if needs[1] else None
    return (g if needs[0] else None), gy


remainder = defop(
    "remainder",
    _remainder,
    _remainder_vjp,
    nin=2,
    promote="operands",
    method=True,
    dunders=["__mod__"],
    rdunders=["__rmod__"],
    scalars=True,
    facts=Facts(
        ref=lambda torch, x, y: torch.remainder(*_torch_floats(torch, x, y)),
        samples=DIVISION,
        formula="g, -g*floor(x/y)",
        second_order="zero",
    ),
)


# ------------------------------------------------------------------ atan2, hypot, copysign
def _atan2(xp: Any, x1: Any, x2: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise angle of the point ``(x2, x1)``, in radians in ``[-pi, pi]``: the
    inverse tangent of ``x1 / x2`` in the right quadrant."""
    return xp.atan2(x1, x2), (x1, x2)


def _atan2_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> Grads:
    x1, x2 = saved
    # 0 where x1^2 + x2^2 is 0 (at the origin, or underflowed), as PyTorch: the
    # division there is by a 1 (a nan gradient to the where's other branch otherwise)
    r2 = x1 * x1 + x2 * x2
    at_zero = r2 == 0.0
    w = xp.where(at_zero, 0.0, g / xp.where(at_zero, 1.0, r2))
    return (w * x2 if needs[0] else None), (-(w * x1) if needs[1] else None)


atan2 = defop(
    "atan2",
    _atan2,
    _atan2_vjp,
    nin=2,
    promote="division",  # ints and bools: the default float
    method=True,
    scalars=True,
    facts=Facts(
        ref=lambda torch, x1, x2: torch.atan2(*_torch_floats(torch, x1, x2)),
        samples=(*BINARY, Sample(((3,), 1.5)), Sample((-0.5, (3,)))),
        kind="binary",
        kinks=(0.0,),
        formula="g*x2/(x1^2+x2^2), -g*x1/(x1^2+x2^2)",
    ),
)


def _hypot(xp: Any, x1: Any, x2: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise ``sqrt(x1**2 + x2**2)``, without overflow or underflow in between."""
    out = xp.hypot(x1, x2)
    return out, (x1, x2, out)


def _hypot_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> Grads:
    x1, x2, out = saved
    # g * (x / out), not (g / out) * x: a subnormal out made g / out inf (hypot(0, 5e-324))
    return (g * (x1 / out) if needs[0] else None), (g * (x2 / out) if needs[1] else None)


hypot = defop(
    "hypot",
    _hypot,
    _hypot_vjp,
    nin=2,
    promote="division",  # ints and bools: the default float
    method=True,
    scalars=True,
    facts=Facts(
        ref=lambda torch, x1, x2: torch.hypot(*_torch_floats(torch, x1, x2)),
        samples=(*BINARY, Sample(((3,), 1.5))),
        kind="binary",
        kinks=(0.0,),
        formula="g*x1/hypot, g*x2/hypot",
    ),
)


def _copysign(xp: Any, x1: Any, x2: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise ``|x1|`` with the sign of ``x2`` (-0.0 counts as negative)."""
    return xp.copysign(x1, x2), (x1, x2)


def _copysign_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> Grads:
    """PyTorch's: ``g * (copysign(x1, x2) / x1)`` (the ratio +-1, 0 at ``x1 == 0``,
    nan at ``x1`` = +-inf or nan) for the magnitude; 0 for the sign input."""
    x1, x2 = saved
    gx1 = gx2 = None
    if needs[0]:
        flips = xp.signbit(x1) != (
            (x2 < 0 or math.copysign(1.0, x2) < 0) if _is_scalar(x2) else xp.signbit(x2)
        )
        finite = xp.abs(x1) < math.inf  # else the ratio is inf / inf or nan: nan
        sign = xp.where(finite, xp.where(flips, -g, g), xp.full_like(g, math.nan))
        gx1 = xp.where(x1 == 0, g * 0.0, sign)  # g * 0: nan for g = inf, as PyTorch
    if needs[1]:
        gx2 = xp.zeros_like(g)
    return gx1, gx2


copysign = defop(
    "copysign",
    _copysign,
    _copysign_vjp,
    nin=2,
    promote="division",  # ints and bools: the default float
    method=True,
    scalars=True,
    facts=Facts(
        ref=lambda torch, x1, x2: torch.copysign(*_torch_floats(torch, x1, x2)),
        samples=(*BINARY, Sample(((3,), -1.5))),
        kind="binary",
        kinks=(0.0,),
        formula="g*sign(x1*x2) (0 at x1=0), 0",
        second_order="zero",
    ),
)


# ------------------------------------------------------------------ tests of values (no gradient)
def _signbit(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise: is the sign bit set (true for -0.0 and -inf; for integers, whether
    negative: never for unsigned ones and bools), as ``torch.signbit``; no gradient."""
    if xp.isdtype(x.dtype, "real floating"):
        return xp.signbit(x), ()
    if xp.isdtype(x.dtype, "signed integer"):  # (the standard's signbit takes floats only)
        return x < 0, ()
    if xp.isdtype(x.dtype, ("unsigned integer", "bool")):
        return xp.zeros(x.shape, dtype=xp.bool, device=x.device), ()
    return xp.signbit(x), ()  # complex: the library's own error


signbit = defop(
    "signbit",
    _signbit,
    None,
    method=True,
    facts=Facts(ref=lambda torch, x: torch.signbit(x), samples=SPECIAL),
)


def _isinf(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise: is ``x`` infinite (+inf or -inf); no gradient."""
    return xp.isinf(x), ()


isinf = defop(
    "isinf",
    _isinf,
    None,
    method=True,
    bools=lambda xp, x: xp.full(x.shape, False, dtype=xp.bool, device=x.device),
    facts=Facts(ref=lambda torch, x: torch.isinf(x), samples=SPECIAL),
)


def _nextafter_sample(rng: np.random.Generator) -> tuple[Any, ...]:
    x = rng.uniform(-2, 2, (3, 4))
    y = rng.uniform(-2, 2, (3, 4))
    x[0, :3] = (0.0, 1.0, -0.0)
    y[0, :3] = (1.0, 1.0, -1.0)  # the smallest subnormal, x itself, -subnormal
    y[1] = np.inf
    return x, y


def _nextafter(xp: Any, x1: Any, x2: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise the next floating-point value after ``x1`` toward ``x2``; no
    gradient."""
    return xp.nextafter(x1, x2), ()


nextafter = defop(
    "nextafter",
    _nextafter,
    None,
    nin=2,
    promote="division",  # ints and bools: the default float (NumPy made int8 float16)
    method=True,
    scalars=True,
    facts=Facts(
        ref=lambda torch, x1, x2: torch.nextafter(*_torch_floats(torch, x1, x2)),
        samples=(
            Sample(make=_nextafter_sample, name="edge cases"),
            Sample(((4, 1), (1, 3))),
            Sample(((3,), 0.0)),
        ),
    ),
)


# ------------------------------------------------------------------ bitwise ops
def _dtype_name(v: Any) -> str:
    # "torch.float32", "array_api_strict.float32", "float32": the last part
    return type(v).__name__ if _is_scalar(v) else str(v.dtype).rsplit(".", 1)[-1]


def _check_integers(xp: Any, name: str, args: tuple[Any, ...], bools: bool) -> None:
    """Refuse floating (and, for shifts, boolean) inputs to a bitwise op."""
    for v in args:
        if _is_scalar(v):
            ok = type(v) is int or (bools and type(v) is bool)
        else:
            ok = xp.isdtype(v.dtype, ("integral", "bool") if bools else "integral")
        if not ok:
            takes = "integer or boolean" if bools else "integer"
            raise InputError(
                f"{name} takes {takes} tensors, got {_dtype_name(v)}; convert first, e.g. "
                f"x.astype('int64')"
                + (", or compare floating tensors to get booleans (x > 0)" if bools else "")
            )


def _bitwise(name: str, symbol: str, dunder: str | None, bools: bool) -> Callable[..., Tensor]:
    def fwd(xp: Any, x1: Any, x2: Any) -> tuple[Any, tuple[Any, ...]]:
        _check_integers(xp, name, (x1, x2), bools)
        return getattr(xp, name)(x1, x2), ()

    takes = "integer or boolean" if bools else "integer"
    _named(name, f"Elementwise ``x1 {symbol} x2`` of {takes} tensors (no gradient).", fwd, None)
    return defop(
        name,
        fwd,
        None,
        nin=2,
        promote="operands",
        method=True,
        dunders=[f"__{dunder}__"] if dunder else [],
        rdunders=[f"__r{dunder}__"] if dunder else [],
        scalars=True,
        facts=Facts(
            ref=lambda torch, x1, x2: getattr(torch, name)(
                torch.as_tensor(x1), torch.as_tensor(x2)
            ),
            samples=_bitwise_samples(bools),
        ),
    )


def _shift_sample(*shapes: tuple[int, ...]) -> Callable[..., tuple[Any, ...]]:
    """Integers to shift, and shifts in [0, 6) (a negative shift is undefined)."""

    def make(rng: np.random.Generator) -> tuple[Any, ...]:
        return (
            rng.integers(-100, 100, shapes[0], dtype=np.int64),
            rng.integers(0, 6, shapes[1], dtype=np.int64),
        )

    return make


def _bitwise_samples(bools: bool) -> tuple[Sample, ...]:
    if not bools:  # shifts
        return (
            *(
                Sample(make=_shift_sample(*s.shapes), name=", ".join(map(str, s.shapes)))
                for s in BINARY
            ),
            Sample(
                make=lambda rng: (rng.integers(-100, 100, (4,), dtype=np.int64), 3), name="by 3"
            ),
            Sample(make=lambda rng: (1, rng.integers(0, 6, (4,), dtype=np.int64)), name="1 by"),
        )
    return (
        *(
            Sample(make=_int_sample(-100, 100, *s.shapes), name=", ".join(map(str, s.shapes)))
            for s in BINARY
        ),
        Sample(make=_booleans((3, 4), (3, 4)), name="bool"),
        Sample(make=lambda rng: (rng.integers(-100, 100, (4,), dtype=np.int64), 6), name="with 6"),
        Sample(
            make=lambda rng: (-3, rng.integers(-100, 100, (4,), dtype=np.int64)), name="-3 with"
        ),
    )


# `&`, `|` and `~` stay bound to logical_and, logical_or and logical_not (ops/elementwise.py)
bitwise_and = _bitwise("bitwise_and", "&", "and", bools=True)
bitwise_or = _bitwise("bitwise_or", "|", "or", bools=True)
bitwise_xor = _bitwise("bitwise_xor", "^", "xor", bools=True)
bitwise_left_shift = _bitwise("bitwise_left_shift", "<<", "lshift", bools=False)
bitwise_right_shift = _bitwise("bitwise_right_shift", ">>", "rshift", bools=False)


def _bitwise_invert(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Elementwise ``~x``: every bit flipped (``-x - 1``) for integers, ``not`` for
    booleans; no gradient."""
    _check_integers(xp, "bitwise_invert", (x,), True)
    return xp.bitwise_invert(x), ()


bitwise_invert = defop(
    "bitwise_invert",
    _bitwise_invert,
    None,
    method=True,
    dunders=["__invert__"],
    facts=Facts(
        ref=lambda torch, x: torch.bitwise_not(x),
        samples=(
            Sample(make=_int_sample(-100, 100, (3, 4)), name="int64"),
            Sample(make=_int_sample(-100, 100, ()), name="0-d int64"),
            Sample(make=_booleans((3, 4)), name="bool"),
        ),
    ),
)


# ------------------------------------------------------------------ in-place operators
def _inplace(attr: str, symbol: str, fn: Callable[..., Tensor]) -> None:
    """Bind ``Tensor.<attr>`` (``x <symbol>= y``) as the existing in-place operators
    are: the result replaces the value and the version counter goes up."""
    what = f"{attr} (x {symbol}= y)"

    def method(self: Tensor, other: Operand) -> Tensor:
        self._check_inplace(what)
        return self._rebase(fn(self, other), what)

    method.__name__ = method.__qualname__ = attr
    method.__doc__ = f"In place: ``self {symbol}= other``; bumps the version counter."
    method.__module__ = __name__
    tensor_method(attr)(method)


_inplace("__ipow__", "**", _pow_op)  # in place, as PyTorch's (`@=` is not, there either)
_inplace("__ifloordiv__", "//", floor_divide)
_inplace("__imod__", "%", remainder)
_inplace("__iand__", "&", bitwise_and)
_inplace("__ior__", "|", bitwise_or)
_inplace("__ixor__", "^", bitwise_xor)
_inplace("__ilshift__", "<<", bitwise_left_shift)
_inplace("__irshift__", ">>", bitwise_right_shift)
