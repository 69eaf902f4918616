"""Activation functions."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

from ..tensor import _number_of, describe
from ._registry import Facts, Sample, defop
from .elementwise import UNARY, mul


def _numbers(who: str, *names: str) -> Callable[[Any, dict[str, Any]], dict[str, Any]]:
    """A ``prepare=`` that reads the parameters ``names`` as PyTorch does: a real number,
    or a 0-d tensor or array that needs no gradient (as its value); anything else is a
    TypeError (a tensor of several slopes was broadcast over x, silently)."""

    def prepare(tensors: Any, params: dict[str, Any]) -> dict[str, Any]:
        for k in names:
            v = params[k]
            if type(v) is float or type(v) is int:
                continue
            n = v if getattr(v, "requires_grad", False) else _number_of(v)
            if not isinstance(n, numbers.Real):
                raise TypeError(
                    f"{who}: {k} must be a real number (or a 0-d tensor that does not "
                    f"require grad), got {describe(v)}"
                    + (
                        "; no gradient flows to it"
                        if n is v and hasattr(v, "requires_grad")
                        else ""
                    )
                    + f"; for values that vary by element write it with where(), as PyTorch's "
                    f"{who} refuses it too"
                )
            params = {**params, k: n}
        return params

    return prepare


def _sigmoid_of(xp: Any, x: Any) -> Any:
    # 1/(1+e^-x) for x >= 0 and e^x/(1+e^x) for x < 0: no overflow for any x
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0.0, 1.0 / (1.0 + e), e / (1.0 + e))


def _softplus_of(xp: Any, x: Any) -> Any:
    # log(1 + e^x) as max(x, 0) + log1p(e^-|x|): no overflow for any x
    return xp.maximum(x, 0.0) + xp.log1p(xp.exp(-xp.abs(x)))


def _relu(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """``max(x, 0)``; the gradient at 0 is 0 (PyTorch's subgradient)."""
    out = xp.maximum(x, 0.0)
    return out, (out,)


def _relu_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (out,) = saved
    # g where out is not 0 (a where(), not a multiply by the mask: a nan gradient at an
    # inactive unit gives 0, a nan input passes g, as PyTorch): one kernel on torch
    return (xp.relu_backward(g, out),)


relu = defop(
    "relu",
    _relu,
    _relu_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x: torch.relu(x),
        samples=UNARY,
        kind="unary",
        kinks=(0.0,),
        formula="g*[x>0]",
        second_order="zero (undefined at 0)",
    ),
)


def _leaky_relu(xp: Any, x: Any, negative_slope: float = 0.01) -> tuple[Any, tuple[Any, ...]]:
    """Leaky ReLU: ``x`` where ``x > 0``, else ``negative_slope * x``, as
    ``torch.nn.functional.leaky_relu``; the gradient at 0 is ``negative_slope``
    (PyTorch's subgradient).

    Examples
    --------
    >>> import minitorch
    >>> x = minitorch.tensor([-2.0, 0.0, 3.0], requires_grad=True)
    >>> y = minitorch.leaky_relu(x, 0.1)
    >>> y.sum().backward()
    >>> x.grad
    array([0.1, 0.1, 1. ], dtype=float32)
    """
    return xp.where(x > 0.0, x, x * negative_slope), (x,)


def _leaky_relu_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], negative_slope: float = 0.01
) -> tuple[Any]:
    (x,) = saved
    return (xp.where(x > 0.0, g, g * negative_slope),)


leaky_relu = defop(
    "leaky_relu",
    _leaky_relu,
    _leaky_relu_vjp,
    method=True,
    promote="float",
    prepare=_numbers("leaky_relu", "negative_slope"),
    facts=Facts(
        ref=lambda torch, x, negative_slope=0.01: torch.nn.functional.leaky_relu(x, negative_slope),
        samples=(*UNARY, Sample(((3, 4),), {"negative_slope": 0.2})),
        kind="unary",
        kinks=(0.0,),
        formula="g*[x>0] + slope*g*[x<=0]",
        second_order="zero (undefined at 0)",
    ),
)


def _sigmoid(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """The logistic function ``1 / (1 + exp(-x))``, computed without overflow."""
    out = _sigmoid_of(xp, x)
    return out, (out,)


def _sigmoid_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (out,) = saved
    return (xp.sigmoid_backward(g, out),)  # g * out * (1 - out), one kernel on torch


sigmoid = defop(
    "sigmoid",
    _sigmoid,
    _sigmoid_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x: torch.sigmoid(x),
        samples=UNARY,
        kind="unary",
        domain=(-4.0, 4.0),
        formula="g*s*(1-s)",
    ),
)


def _tanh(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """Hyperbolic tangent."""
    out = xp.tanh(x)
    return out, (out,)


def _tanh_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (out,) = saved
    return (xp.tanh_backward(g, out),)  # g * (1 - out^2), one kernel on torch


tanh = defop(
    "tanh",
    _tanh,
    _tanh_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x: torch.tanh(x), samples=UNARY, kind="unary", formula="g*(1-tanh^2)"
    ),
)

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_K1 = 0.5 * _SQRT_2_OVER_PI
_GELU_K3 = 1.5 * 0.044715 * _SQRT_2_OVER_PI


def _gelu_parts(xp: Any, x: Any, approximate: str) -> Any:
    """``Phi(x)`` (exact) or ``t = tanh(sqrt(2/pi) (x + 0.044715 x^3))`` (tanh form)."""
    if approximate == "none":
        return 0.5 * (1.0 + xp.erf(x * _INV_SQRT_2))
    if approximate == "tanh":
        return xp.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x))
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def _gelu(xp: Any, x: Any, approximate: str = "none") -> tuple[Any, tuple[Any, ...]]:
    """Gaussian error linear unit: ``x * Phi(x)`` with the exact ``erf`` (``"none"``) or
    the tanh approximation (``"tanh"``), as ``torch.nn.functional.gelu``. ``Phi(x)`` (or
    ``t``) is saved for the backward, which then needs no second ``erf``."""
    part = _gelu_parts(xp, x, approximate)
    out = x * part if approximate == "none" else 0.5 * x * (1.0 + part)
    return out, (x, part)


def _gelu_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], approximate: str = "none"
) -> tuple[Any]:
    """d/dx x*Phi(x) = Phi(x) + x*phi(x);  tanh form: 0.5(1+t) + 0.5x(1-t^2)*du/dx."""
    x, part = saved
    if part is None:  # create_graph: recomputed from x, so that it is differentiated too
        part = _gelu_parts(xp, x, approximate)
    if approximate == "none":
        pdf = xp.exp(-0.5 * x * x) * _INV_SQRT_2PI
        return (g * (part + x * pdf),)
    # 0.5 (1 + t) + (1 - t^2) * x (c/2 + 3ac/2 x^2), c = sqrt(2/pi), a = 0.044715
    # (1 - t^2) * x first, as PyTorch: where t = +-1 it is 0 before x * (...) overflows
    # (x = 1e120 gave 0 * inf = nan)
    slope = ((1.0 - part * part) * x) * (_GELU_K1 + _GELU_K3 * (x * x))
    return (g * ((0.5 + 0.5 * part) + slope),)


gelu = defop(
    "gelu",
    _gelu,
    _gelu_vjp,
    method=True,
    promote="float",
    derived=(1,),
    facts=Facts(
        ref=lambda torch, x, approximate="none": torch.nn.functional.gelu(
            x, approximate=approximate
        ),
        samples=(
            *UNARY,
            Sample(((3, 4),), {"approximate": "tanh"}),
        ),
        kind="unary",
        domain=(-3.0, 3.0),
        formula="g*(Phi(x) + x*phi(x))",
    ),
)


def _softplus(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """``log(1 + exp(x))``, computed stably as ``max(x, 0) + log1p(exp(-|x|))``."""
    return _softplus_of(xp, x), (x,)


def _softplus_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (x,) = saved
    return (g * _sigmoid_of(xp, x),)


softplus = defop(
    "softplus",
    _softplus,
    _softplus_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x: torch.nn.functional.softplus(x),
        samples=UNARY,
        kind="unary",
        domain=(-4.0, 4.0),
        formula="g*sigmoid(x)",
    ),
)


def _silu(x: Any) -> Any:
    """``x * sigmoid(x)`` (also called swish); composed, so its derivative is free."""
    return mul(x, sigmoid(x))


silu = defop(
    "silu",
    compose=_silu,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x: torch.nn.functional.silu(x),
        samples=UNARY,
        kind="unary",
        domain=(-4.0, 4.0),
        formula="composed: x*sigmoid(x)",
    ),
)


def _mish(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """``x * tanh(softplus(x))``, as ``torch.nn.functional.mish``."""
    return x * xp.tanh(_softplus_of(xp, x)), (x,)


def _mish_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    """d/dx x*tanh(sp(x)) = tanh(sp) + x * (1 - tanh(sp)^2) * sigmoid(x)."""
    (x,) = saved
    t = xp.tanh(_softplus_of(xp, x))
    return (g * (t + x * (1.0 - t * t) * _sigmoid_of(xp, x)),)


mish = defop(
    "mish",
    _mish,
    _mish_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x: torch.nn.functional.mish(x),
        samples=UNARY,
        kind="unary",
        domain=(-4.0, 4.0),
        formula="g*(tanh(sp) + x*(1-tanh(sp)^2)*sigmoid(x))",
    ),
)


def _hardtanh(
    xp: Any, x: Any, min_val: float = -1.0, max_val: float = 1.0
) -> tuple[Any, tuple[Any, ...]]:
    """``x`` clamped to ``[min_val, max_val]``, as ``torch.nn.functional.hardtanh``; the
    gradient is 0 at the two corners (PyTorch's subgradient)."""
    if not min_val <= max_val:
        raise ValueError(f"hardtanh: min_val must not be above max_val, got {min_val}, {max_val}")
    return xp.minimum(xp.maximum(x, float(min_val)), float(max_val)), (x,)


def _hardtanh_vjp(
    xp: Any,
    g: Any,
    saved: tuple[Any, ...],
    needs: tuple[bool, ...],
    min_val: float = -1.0,
    max_val: float = 1.0,
) -> tuple[Any]:
    (x,) = saved
    # 0 at and beyond the corners, g elsewhere: a nan x passes g, as in PyTorch
    return (xp.where((x <= min_val) | (x >= max_val), 0.0, g),)


hardtanh = defop(
    "hardtanh",
    _hardtanh,
    _hardtanh_vjp,
    method=True,
    promote="float",
    prepare=_numbers("hardtanh", "min_val", "max_val"),
    facts=Facts(
        ref=lambda torch, x, min_val=-1.0, max_val=1.0: torch.nn.functional.hardtanh(
            x, min_val, max_val
        ),
        samples=(*UNARY, Sample(((3, 4),), {"min_val": -0.5, "max_val": 1.5})),
        kind="unary",
        kinks=(-1.0, -0.5, 1.0, 1.5),
        formula="g*[min<x<max]",
        second_order="zero (undefined at min and max)",
    ),
)
