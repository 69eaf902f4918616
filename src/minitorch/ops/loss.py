"""Softmax, log-softmax, losses and dropout."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..creation import Generator, host_rng
from ..errors import OpError
from ..tensor import Tensor
from ._registry import Facts, Sample, defop
from .reduction import mean, normalize_axes


def _one_axis(x: Any, axis: int, op: str) -> int | None:
    """The softmax family's ``axis`` checked; ``None`` for a 0-d tensor (one element)."""
    axes = normalize_axes(axis, x.ndim, op)
    return axes[0] if axes else None


def _softmax(xp: Any, x: Any, axis: int = -1) -> tuple[Any, tuple[Any, ...]]:
    """``exp(x) / sum(exp(x))`` along ``axis``, shifted by the max (never overflows)."""
    ax = _one_axis(x, axis, "softmax")
    e = xp.exp(_shifted(xp, x, ax))
    out = e / xp.sum(e, axis=ax, keepdims=True)
    return out, (out,)


def _softmax_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], axis: int = -1
) -> tuple[Any]:
    """J^T g = s * (g - sum(g * s))."""
    (out,) = saved
    ax = _one_axis(out, axis, "softmax")
    return (out * (g - xp.sum(g * out, axis=ax, keepdims=True)),)


SOFT = (Sample(((3, 5),)), Sample(((2, 3, 4),), {"axis": 1}), Sample(((4,),)))

softmax = defop(
    "softmax",
    _softmax,
    _softmax_vjp,
    method=True,
    facts=Facts(
        ref=lambda torch, x, axis=-1: torch.softmax(x, dim=axis),
        samples=SOFT,
        formula="s*(g - sum(g*s))",
    ),
)


def _shifted(xp: Any, x: Any, axis: int | None) -> Any:
    """``x - max(x)`` along ``axis``: the softmax family is shift-invariant, and this
    shift keeps ``exp`` finite.

    Subtracting the shift *first* keeps log-softmax and cross-entropy accurate on top
    of a large offset: ``x - logsumexp(x)`` rounds logsumexp at the scale of ``x``
    (in float32, 1e-3 at 1e4), while ``shifted - log(sum(exp(shifted)))`` does not.
    A row whose max is infinite becomes nan, as in PyTorch (its softmax is undefined);
    a zero-size tensor has no max and nothing to shift.
    """
    if math.prod(x.shape) == 0:
        return x
    return x - xp.max(x, axis=axis, keepdims=True)


def _log_softmax(xp: Any, x: Any, axis: int = -1) -> tuple[Any, tuple[Any, ...]]:
    """``x - logsumexp(x)`` along ``axis``, stable and accurate for any magnitude."""
    ax = _one_axis(x, axis, "log_softmax")
    s = _shifted(xp, x, ax)
    out = s - xp.log(xp.sum(xp.exp(s), axis=ax, keepdims=True))
    return out, (out,)


def _log_softmax_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], axis: int = -1
) -> tuple[Any]:
    """J^T g = g - softmax * sum(g)."""
    (out,) = saved
    ax = _one_axis(out, axis, "log_softmax")
    return (g - xp.exp(out) * xp.sum(g, axis=ax, keepdims=True),)


log_softmax = defop(
    "log_softmax",
    _log_softmax,
    _log_softmax_vjp,
    method=True,
    facts=Facts(
        ref=lambda torch, x, axis=-1: torch.log_softmax(x, dim=axis),
        samples=SOFT,
        formula="g - exp(out)*sum(g)",
    ),
)


_REDUCTIONS = ("mean", "sum", "none")


def _cross_entropy(
    xp: Any, logits: Any, targets: Any, reduction: str = "mean"
) -> tuple[Any, tuple[Any, ...]]:
    """Softmax cross-entropy of ``logits`` (N, C) against integer class ``targets`` (N,),
    as ``torch.nn.functional.cross_entropy``; one fused, stable backward."""
    if reduction not in _REDUCTIONS:
        raise OpError(f"cross_entropy: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if logits.ndim != 2 or targets.ndim != 1 or targets.shape[0] != logits.shape[0]:
        raise OpError(
            f"cross_entropy: expected logits (N, C) and targets (N,), got "
            f"{tuple(logits.shape)} and {tuple(targets.shape)}"
        )
    if not xp.isdtype(targets.dtype, "integral"):
        raise OpError(f"cross_entropy: targets must be integer class indices, got {targets.dtype}")
    n, c = logits.shape
    is_target = xp.reshape(targets, (n, 1)) == xp.arange(
        c, dtype=targets.dtype, device=targets.device
    )
    onehot = xp.astype(is_target, logits.dtype)
    # every row of onehot holds one 1, unless its target lies outside [0, C)
    if n and float(xp.sum(onehot)) != n:
        raise OpError(f"cross_entropy: targets must lie in [0, {c}) for {c} classes")
    s = _shifted(xp, logits, 1)
    e = xp.exp(s)
    z = xp.sum(e, axis=1, keepdims=True)
    # where(), not s * onehot: s may hold -inf, and -inf * 0 is nan
    losses = xp.log(z) - xp.sum(xp.where(is_target, s, 0.0), axis=1, keepdims=True)
    if reduction == "mean":
        out = xp.sum(losses) / n if n else xp.sum(losses) * float("nan")
    elif reduction == "sum":
        out = xp.sum(losses)
    else:
        out = xp.reshape(losses, (n,))
    # saved[2], the gradient of each row's loss, is *derived*: with create_graph the
    # engine passes None and the VJP recomputes it from the logits, differentiably
    return out, (logits, onehot, e / z - onehot)


def _cross_entropy_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], reduction: str = "mean"
) -> tuple[Any, None]:
    """d loss_i / d logits_i = softmax(logits_i) - onehot_i (scaled by g, and 1/N for mean)."""
    logits, onehot, d = saved
    if d is None:
        d = _softmax(xp, logits, 1)[0] - onehot
    if reduction == "none":
        return d * xp.expand_dims(g, axis=1), None
    return d * (g / logits.shape[0] if reduction == "mean" else g), None


def _ce_sample(rng: Any) -> tuple[Any, ...]:
    return rng.normal(0, 2, (6, 4)), rng.integers(0, 4, 6)


cross_entropy = defop(
    "cross_entropy",
    _cross_entropy,
    _cross_entropy_vjp,
    nin=2,
    derived=(2,),
    facts=Facts(
        ref=lambda torch, x, t, reduction="mean": torch.nn.functional.cross_entropy(
            x, t, reduction=reduction
        ),
        samples=(
            Sample(make=_ce_sample),
            Sample(make=_ce_sample, params={"reduction": "sum"}),
            Sample(make=_ce_sample, params={"reduction": "none"}),
        ),
        grad_inputs=(0,),
        formula="(softmax(x) - onehot(t)) * g / N",
    ),
)


def _mse_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    """Mean squared error, as ``torch.nn.functional.mse_loss`` (composed)."""
    if reduction not in _REDUCTIONS:
        raise OpError(f"mse_loss: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    if input.shape != target.shape:
        raise OpError(
            f"mse_loss: input {input.shape} and target {target.shape} must have the same shape"
        )
    d = input - target
    sq = d * d
    if reduction == "mean":
        return mean(sq)
    if reduction == "sum":
        return sq.sum()
    return sq


mse_loss = defop(
    "mse_loss",
    compose=_mse_loss,
    facts=Facts(
        ref=lambda torch, x, y, reduction="mean": torch.nn.functional.mse_loss(
            x, y, reduction=reduction
        ),
        samples=(
            Sample(((3, 4), (3, 4))),
            Sample(((5,), (5,)), {"reduction": "sum"}),
            Sample(((2, 3), (2, 3)), {"reduction": "none"}),
        ),
        formula="composed: mean((x-y)^2)",
    ),
)


def _dropout(
    x: Any, p: float = 0.5, training: bool = True, generator: Generator | None = None
) -> Any:
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``.

    The mask is drawn in the forward from ``generator`` (a :class:`minitorch.Generator`;
    without one, from the seeded :data:`minitorch.default_generator`); the gradient
    flows through the kept elements.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    rng = host_rng(generator, "dropout")
    if not training:
        return x  # as PyTorch: the input itself
    if p == 0.0:
        return x * 1.0
    if p == 1.0:
        return x * 0.0
    keep = rng.random(tuple(x.shape)) >= p
    scale = np.where(keep, 1.0 / (1.0 - p), 0.0)
    be = x._backend
    mask = Tensor._make(be.from_numpy(scale, x.data.dtype, x.device), be, None)
    return x * mask


dropout = defop(
    "dropout",
    compose=_dropout,
    facts=Facts(
        ref=lambda torch, x, p=0.5, training=True, generator=None: torch.nn.functional.dropout(
            x, p, training
        ),
        # the deterministic cases (the random mask itself is tested in test_engine.py)
        samples=(
            Sample(((3, 4),), {"p": 0.0}),
            Sample(((3, 4),), {"p": 1.0}),
        ),
        formula="composed: x * mask / (1-p)",
    ),
)
