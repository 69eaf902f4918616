"""Softmax, log-softmax, losses and dropout."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import creation
from ..backend import as_array, get_backend
from ..backend._fallback import at_targets, index_array, is_target
from ..creation import Generator, host_rng
from ..errors import OpError
from ..tensor import Tensor, describe
from ._registry import Facts, Sample, defop
from .reduction import mean, normalize_axes


def _one_axis(x: Any, axis: int, op: str) -> int | None:
    """The softmax family's ``axis`` checked; ``None`` for a 0-d tensor (one element)."""
    if axis is None or isinstance(axis, tuple | list):  # normalize_axes takes these
        raise OpError(
            f"{op}: axis must be one int (the axis to normalise along), got {axis!r}; "
            f"for all the elements at once, reshape first: {op}(x.reshape(-1)).reshape(x.shape)"
        )
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
    return (xp.softmax_backward(g, out, ax),)  # one kernel on torch


SOFT = (
    Sample(((3, 5),)),
    Sample(((2, 3, 4),), {"axis": 1}),
    Sample(((4,),)),
    Sample(((5, 0, 0),), name="(5, 0, 0): zero-size"),
    Sample(((3, 0),), {"axis": 0}, name="(3, 0) along its non-empty axis"),
)

softmax = defop(
    "softmax",
    _softmax,
    _softmax_vjp,
    method=True,
    promote="float",
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
    if 0 in x.shape:  # nothing to normalise (and no log of a sum over nothing)
        return x, (x,)
    s = _shifted(xp, x, ax)
    out = s - xp.log(xp.sum(xp.exp(s), axis=ax, keepdims=True))
    return out, (out,)


def _log_softmax_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], axis: int = -1
) -> tuple[Any]:
    """J^T g = g - softmax * sum(g)."""
    (out,) = saved
    ax = _one_axis(out, axis, "log_softmax")
    return (xp.log_softmax_backward(g, out, ax),)  # one kernel on torch


log_softmax = defop(
    "log_softmax",
    _log_softmax,
    _log_softmax_vjp,
    method=True,
    promote="float",
    facts=Facts(
        ref=lambda torch, x, axis=-1: torch.log_softmax(x, dim=axis),
        samples=SOFT,
        formula="g - exp(out)*sum(g)",
    ),
)


_REDUCTIONS = ("mean", "sum", "none")


def _desc(a: Any) -> str:
    """``(3, 4) float64``: an array's shape and dtype, named alike on every backend."""
    return f"{tuple(a.shape)} {str(a.dtype).rsplit('.', 1)[-1]}"


def _cross_entropy(
    xp: Any,
    logits: Any,
    targets: Any,
    weight: Any = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> tuple[Any, tuple[Any, ...]]:
    """Softmax cross-entropy of ``logits`` against ``targets``, as
    ``torch.nn.functional.cross_entropy``: one fused, stable forward and backward.

    Parameters
    ----------
    logits : Tensor
        Unnormalised scores, (N, C) (or (C,): one unbatched sample).
    targets : Tensor
        Integer class indices in [0, C), (N,) (or ()); or class probabilities, a
        floating tensor of the logits' shape (they get a gradient, as in PyTorch).
    weight : Tensor, optional
        C class weights, a constant (it gets no gradient): the loss of a target of class
        ``k`` is scaled by ``weight[k]``; for probabilities, each class term by its weight.
    ignore_index : int
        Class index targets equal to it add nothing to the loss and get zero gradient
        (with probability targets only the default is allowed, as in PyTorch).
    reduction : str
        ``"mean"``, ``"sum"`` or ``"none"`` (one loss per sample). With class indices
        the mean divides by the summed weights of the targets not ignored (their count
        without ``weight``); with probabilities by N. As in PyTorch, a mean over no
        target (every one ignored) is nan with a zero gradient, and one whose kept
        targets' weights sum to 0 is nan with a nan gradient for the rows kept.
    label_smoothing : float
        In [0, 1]: the target becomes ``(1 - label_smoothing) * target +
        label_smoothing / C`` (for class indices as in PyTorch: that mixture of the
        target's term and the weighted sum over all classes).

    Examples
    --------
    >>> import minitorch
    >>> logits = minitorch.tensor([[2.0, 0.0, -1.0], [0.0, 1.0, 0.0]], requires_grad=True)
    >>> loss = minitorch.cross_entropy(logits, minitorch.tensor([0, -100]))
    >>> print(f"{float(loss):.4f}")  # the second sample is ignored
    0.1698
    >>> loss.backward()
    >>> logits.grad[1]
    array([0., 0., 0.], dtype=float32)
    """
    soft = _check_cross_entropy(xp, logits, targets, weight, ignore_index)
    c = logits.shape[-1]
    x = logits if logits.ndim == 2 else xp.reshape(logits, (1, c))
    n = x.shape[0]
    w = weight if weight is None or weight.dtype == x.dtype else xp.astype(weight, x.dtype)
    eps = label_smoothing
    if not soft:
        t = _class_indices(xp, targets, n)
        kept_1d = _kept_targets(xp, t, c, ignore_index)
        if kept_1d is None and w is None and not eps and n and c:
            # the usual case: every target a class, no weight, no smoothing. The backend's
            # kernel gives each row's loss and its gradient (one fused pass on torch)
            nll, d = xp.softmax_cross_entropy(x, t)
            out = _reduced(xp, xp.reshape(nll, (n,)), n, reduction, logits)
            # no q saved: under create_graph the VJP makes the one-hot targets itself
            return out, (logits, targets, None, None, None, n, None, d)
    s = _shifted(xp, x, 1)
    e = xp.exp(s)
    z = xp.sum(e, axis=1, keepdims=True)
    # no classes: log(0), without the backend's warning (it multiplies nothing)
    log_z = xp.log(z) if c else xp.full(z.shape, -math.inf, dtype=z.dtype, device=z.device)
    # The loss of row i is -sum_c q[i, c] * log_softmax(x)[i, c] for a target
    # distribution q (the one-hot target, weighted and smoothed), so its gradient is
    # softmax(x) * sum_c q[i, c] - q[i, c]: rq holds those row sums (None: all 1).
    rq: Any
    if soft:
        q = _soft_targets(xp, targets, w, eps, x)
        losses = -xp.sum((s - log_z) * q, axis=1)
        rq = xp.sum(q, axis=1, keepdims=True)
        # PyTorch divides by numel / C: nan when there are no classes
        denom: Any = n if c else math.nan
        # q depends on the targets, which may require grad: the VJP recomputes it
        saved: tuple[Any, ...] = (logits, targets, w, None, None, denom, None)
    else:
        # kept: None where every target counts, else which rows do (n, 1)
        kept = None if kept_1d is None else xp.reshape(kept_1d, (n, 1))
        t_safe = t if kept_1d is None else xp.where(kept_1d, t, 0)  # a class for every row
        chosen = is_target(xp, t, c)
        if kept is not None and 0 <= ignore_index < c:
            chosen = xp.logical_and(chosen, kept)
        q = xp.astype(chosen, x.dtype)
        nll = log_z - at_targets(xp, s, t_safe)
        if w is None:
            rq = None if kept is None else xp.astype(kept, x.dtype)
            # the count of kept rows, on the device (as PyTorch: no host read)
            denom = n if rq is None else xp.sum(rq)
        else:
            rq = xp.reshape(xp.take(w, t_safe, axis=0), (n, 1))  # weight[t_i]
            if kept is not None:
                rq = xp.where(kept, rq, 0.0)
            q = q * rq
            nll = rq * nll
            denom = xp.sum(rq)  # an array: read on the host by neither pass, as PyTorch
        if kept is not None:  # an ignored row adds 0, even where its logits are not finite
            nll = xp.where(kept, nll, 0.0)
        losses = nll
        if eps:
            # PyTorch adds eps / C times the weighted sum over all classes of each kept row
            total = c if w is None else xp.sum(w)
            smooth = total * log_z - xp.sum(s if w is None else s * w, axis=1, keepdims=True)
            if kept is not None:
                smooth = xp.where(kept, smooth, 0.0)
            share = eps / c if kept is None else xp.astype(kept, x.dtype) * (eps / c)
            losses = (1 - eps) * losses + (eps / c) * smooth
            q = (1 - eps) * q + share * (1.0 if w is None else w)
            rq = (1 - eps) * (1.0 if rq is None else rq) + share * total
        losses = xp.reshape(losses, (n,))
        # the class targets are kept only to be shown (a graph's "input 1" box): the
        # VJP tells them from probability targets by q, which only they save
        saved = (logits, targets, w, q, rq, denom, kept)
    out = _reduced(xp, losses, denom, reduction, logits)
    # saved[7], the gradient of each row's loss, is *derived*: with create_graph the
    # engine passes None and the VJP recomputes it from the logits, differentiably
    # (no classes: nothing to divide, and 0 / 0 would warn)
    p = e if not c else e / z if rq is None else e * (rq / z)
    return out, (*saved, p - q)


def _class_indices(xp: Any, targets: Any, n: int) -> Any:
    """Class index targets as ``(n,)`` (one unbatched sample's are 0-d), of an integer
    dtype every library indexes with (uint8 and int16 ones widened)."""
    t = targets if targets.ndim == 1 else xp.reshape(targets, (n,))
    return index_array(xp, t)


def _reduced(xp: Any, losses: Any, denom: Any, reduction: str, logits: Any) -> Any:
    """The per-row ``losses`` reduced as ``reduction`` says (a mean divides by
    ``denom``: a count, or an array of summed weights)."""
    if reduction == "mean" and hasattr(denom, "shape"):
        # no weight kept (every target ignored): nan, as PyTorch, without the 0 / 0
        return xp.sum(losses) / xp.where(denom == 0, math.nan, denom)
    if reduction == "mean":
        return xp.sum(losses) / denom if denom else xp.sum(losses) * float("nan")
    if reduction == "sum":
        return xp.sum(losses)
    return losses if logits.ndim == 2 else xp.reshape(losses, ())


def _check_cross_entropy(
    xp: Any, logits: Any, targets: Any, weight: Any, ignore_index: int
) -> bool:
    """Raise for inputs PyTorch refuses; True for probability targets."""
    if logits.ndim not in (1, 2) or not xp.isdtype(logits.dtype, "real floating"):
        raise OpError(
            f"cross_entropy: expected floating logits (N, C) or unbatched (C,), got {_desc(logits)}"
        )
    if xp.isdtype(targets.dtype, "real floating"):
        if targets.shape != logits.shape:
            raise OpError(
                f"cross_entropy: targets must be integer class indices, (N,) for logits "
                f"(N, C), or class probabilities of the logits' shape, got logits "
                f"{_desc(logits)} and targets {_desc(targets)}"
            )
        if ignore_index != -100:
            raise OpError(
                f"cross_entropy: ignore_index applies to class index targets only (as in "
                f"PyTorch), got ignore_index={ignore_index} with probability targets "
                f"{_desc(targets)}"
            )
        soft = True
    elif xp.isdtype(targets.dtype, "integral"):
        if targets.shape != logits.shape[:-1]:
            raise OpError(
                f"cross_entropy: expected logits (N, C) and targets (N,) of class indices "
                f"(unbatched: (C,) and ()), got logits {_desc(logits)} and targets "
                f"{_desc(targets)}"
            )
        soft = False
    else:
        raise OpError(
            f"cross_entropy: targets must be integer class indices or floating class "
            f"probabilities, got {_desc(targets)}"
        )
    c = logits.shape[-1]
    if weight is not None and (
        weight.shape != (c,) or not xp.isdtype(weight.dtype, ("real floating", "integral"))
    ):
        raise OpError(
            f"cross_entropy: weight must be a 1-D tensor of {c} class weights (one per "
            f"class of logits {_desc(logits)}), got {_desc(weight)}"
        )
    return soft


def _kept_targets(xp: Any, t: Any, c: int, ignore_index: int) -> Any:
    """Which class targets count (None: all of them); raise if one lies outside [0, C)
    and is not ``ignore_index`` (a negative target must not wrap around)."""
    n = t.shape[0]
    if n == 0:
        return None
    # the usual case, with one device-to-host read (a GPU sync; PyTorch asserts on the
    # device instead)
    if not 0 <= ignore_index < c and bool(xp.all_in_range(t, 0, c)):
        return None
    kept = t != ignore_index
    bad = xp.logical_and(xp.logical_or(t < 0, t >= c), kept)
    if bool(xp.any(bad)):
        low, high = int(xp.min(xp.where(bad, t, 0))), int(xp.max(xp.where(bad, t, 0)))
        got = " and ".join(str(v) for v in (low, high) if not 0 <= v < c)
        raise OpError(
            f"cross_entropy: targets must lie in [0, {c}) for {c} classes (or equal "
            f"ignore_index={ignore_index}), got {got} in targets {_desc(t)}"
        )
    return kept


def _soft_targets(xp: Any, targets: Any, w: Any, eps: float, x: Any) -> Any:
    """Probability targets as PyTorch uses them: smoothed, then times the class weights."""
    y = targets if targets.ndim == 2 else xp.reshape(targets, x.shape)
    if y.dtype != x.dtype:
        y = xp.astype(y, x.dtype)
    if eps:
        y = y * (1 - eps) + eps / x.shape[1]
    return y if w is None else y * w


def _cross_entropy_vjp(
    xp: Any,
    g: Any,
    saved: tuple[Any, ...],
    needs: tuple[bool, ...],
    weight: Any = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> tuple[Any, Any]:
    """d loss_i / d logits_i = softmax(logits_i) * sum(q_i) - q_i for the target
    distribution q (scaled by g, and 1/denominator for mean); for probability targets,
    d loss_i / d targets_i = -(1 - label_smoothing) * weight * log_softmax(logits_i)."""
    logits, targets, w, q, rq, denom, kept, d = saved
    # probability targets (they may need a gradient), or class indices
    soft = xp.isdtype(targets.dtype, "real floating")
    x = logits if logits.ndim == 2 else xp.reshape(logits, (1, logits.shape[0]))
    if reduction == "none":
        g = xp.reshape(g, (x.shape[0], 1))
    elif reduction == "mean" and hasattr(denom, "shape"):
        # as PyTorch: g / denom for the rows kept, nan where their weights sum to 0
        # (w[t] * g / 0), and 0 for the rows ignored (every row ignored: a 0 gradient);
        # without the 0 / 0 and on the device. No rows: an empty gradient, and g's own
        # derivative through it 0 (an empty sum), not nan
        g = g / xp.where(denom == 0, math.nan if x.shape[0] else math.inf, denom)
        if kept is not None:
            g = xp.where(kept, g, 0.0)
    elif reduction == "mean" and denom == denom:  # (nan: no classes, empty gradients)
        # nothing kept (all ignored): the loss is nan, its gradient 0, as PyTorch
        g = g / denom if denom else g * 0.0
    gx = gt = None
    if needs[0]:
        if d is None:  # create_graph: recompute it, differentiably
            if soft:
                q = _soft_targets(xp, targets, w, label_smoothing, x)
                rq = xp.sum(q, axis=1, keepdims=True)
            elif q is None:  # the backend's kernel made the loss: the one-hot targets
                t = _class_indices(xp, targets, x.shape[0])
                q = xp.astype(is_target(xp, t, x.shape[1]), x.dtype)
            p = _softmax(xp, x, 1)[0]
            d = (p if rq is None else p * rq) - q
        gx = d * g if x is logits else xp.reshape(d * g, logits.shape)
    if soft and needs[1]:
        gt = _log_softmax(xp, x, 1)[0] * ((label_smoothing - 1) * g)
        if w is not None:
            gt = gt * w
        gt = xp.reshape(gt, targets.shape)
    return gx, gt


def _prepare_cross_entropy(tensors: Sequence[Any], params: dict[str, Any]) -> dict[str, Any]:
    """Check the options and make ``weight`` an array of the logits' backend and device.

    Only the options given other values than their defaults are kept (and ``reduction``):
    a graph node (its picture, :mod:`minitorch.viz`) names what was asked for.
    """
    reduction = params["reduction"]
    ignore_index = params["ignore_index"]
    eps = params["label_smoothing"]
    if not isinstance(reduction, str) or reduction not in _REDUCTIONS:
        raise OpError(f"cross_entropy: reduction must be one of {_REDUCTIONS}, got {reduction!r}")
    # (the exact types first: the ABCs' isinstance is a few microseconds a call)
    if type(ignore_index) is not int and (
        isinstance(ignore_index, bool) or not isinstance(ignore_index, numbers.Integral)
    ):
        raise OpError(f"cross_entropy: ignore_index must be an int, got {ignore_index!r}")
    real = type(eps) in (float, int) or (
        not isinstance(eps, bool) and isinstance(eps, numbers.Real)
    )
    if not real or not 0 <= float(eps) <= 1:
        raise OpError(f"cross_entropy: label_smoothing must be a number in [0, 1], got {eps!r}")
    out: dict[str, Any] = {"reduction": reduction}
    if ignore_index != -100:
        out["ignore_index"] = int(ignore_index)
    if eps != 0.0:
        out["label_smoothing"] = float(eps)
    if params["weight"] is not None:
        out["weight"] = _weight_array(params["weight"], tensors[0])
    return out


def _weight_array(weight: Any, logits: Any) -> Any:
    """The class weights as an array beside the logits: a constant, with no gradient."""
    if isinstance(weight, str):
        raise OpError(
            f"cross_entropy: weight (the third argument, as in PyTorch) must be a tensor of "
            f"class weights, got the string {weight!r}; pass reduction by keyword: "
            f"reduction must be one of {_REDUCTIONS}"
        )
    if isinstance(weight, Tensor):
        if isinstance(logits, Tensor) and (
            weight.backend.name != logits.backend.name or str(weight.device) != str(logits.device)
        ):
            raise OpError(
                f"cross_entropy: weight and logits must be on one backend and device, got "
                f"weight {describe(weight)} and logits {describe(logits)}"
            )
        return weight.data
    be = logits.backend if isinstance(logits, Tensor) else get_backend()
    try:
        return as_array(weight, be, None, logits.device if isinstance(logits, Tensor) else None)
    except (TypeError, ValueError) as exc:
        raise OpError(
            f"cross_entropy: weight must be a 1-D tensor of class weights, got "
            f"{type(weight).__name__}: {exc}"
        ) from exc


def _ce_sample(rng: Any) -> tuple[Any, ...]:
    return rng.normal(0, 2, (6, 4)), rng.integers(0, 4, 6)


def _ce_ignored(rng: Any) -> tuple[Any, ...]:
    """Two of six targets are the default ignore_index."""
    logits, t = _ce_sample(rng)
    t[[1, 4]] = -100
    return logits, t


def _ce_class_ignored(rng: Any) -> tuple[Any, ...]:
    """Targets of class 2 among the others (for ignore_index=2)."""
    return rng.normal(0, 2, (6, 4)), np.array([2, 0, 2, 3, 1, 2])


def _ce_probs(rng: Any) -> tuple[Any, ...]:
    return rng.normal(0, 2, (5, 4)), rng.dirichlet(np.ones(4), 5)


def _ce_no_classes(rng: Any) -> tuple[Any, ...]:
    """Three rows of zero classes, probability targets (PyTorch: a loss of 0 each)."""
    return np.zeros((3, 0)), np.zeros((3, 0))


def _ce_unbatched(rng: Any) -> tuple[Any, ...]:
    return rng.normal(0, 2, (4,)), np.array(3)


def _ce_unbatched_probs(rng: Any) -> tuple[Any, ...]:
    return rng.normal(0, 2, (4,)), rng.dirichlet(np.ones(4))


def _ce_ref(
    torch: Any,
    x: Any,
    t: Any,
    weight: Any = None,
    ignore_index: int = -100,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Any:
    return torch.nn.functional.cross_entropy(
        x,
        t,
        weight=None if weight is None else torch.tensor(weight, dtype=x.dtype),
        ignore_index=ignore_index,
        reduction=reduction,
        label_smoothing=label_smoothing,
    )


_W = (0.5, 2.0, 1.0, 1.5)  # class weights of the samples (4 classes)

cross_entropy = defop(
    "cross_entropy",
    _cross_entropy,
    _cross_entropy_vjp,
    nin=2,
    prepare=_prepare_cross_entropy,
    derived=(7,),
    facts=Facts(
        ref=_ce_ref,
        samples=(
            Sample(make=_ce_sample),
            Sample(make=_ce_sample, params={"reduction": "sum"}),
            Sample(make=_ce_sample, params={"reduction": "none"}),
            Sample(make=_ce_sample, params={"weight": _W}, name="class weights"),
            Sample(make=_ce_ignored, params={"weight": _W}, name="weighted mean, ignored"),
            Sample(make=_ce_ignored, params={"reduction": "none"}, name="ignored rows"),
            Sample(make=_ce_ignored, params={"label_smoothing": 0.2}, name="smoothing, ignored"),
            Sample(
                make=_ce_ignored,
                params={"weight": _W, "label_smoothing": 0.1, "reduction": "sum"},
                name="weights, smoothing, ignored, sum",
            ),
            Sample(
                make=_ce_class_ignored,
                params={"weight": _W, "ignore_index": 2, "label_smoothing": 0.3},
                name="ignore_index a class",
            ),
            Sample(make=_ce_probs, name="probabilities"),
            Sample(
                make=_ce_probs,
                params={"weight": _W, "label_smoothing": 0.2, "reduction": "none"},
                name="probabilities, weights, smoothing",
            ),
            Sample(make=_ce_probs, params={"reduction": "sum", "label_smoothing": 0.1}),
            Sample(
                make=_ce_unbatched,
                params={"weight": _W, "label_smoothing": 0.1},
                name="unbatched class",
            ),
            Sample(make=_ce_unbatched_probs, params={"reduction": "none"}, name="unbatched"),
            Sample(make=_ce_no_classes, params={"reduction": "none"}, name="no classes"),
            Sample(make=_ce_no_classes, name="no classes, mean (nan)"),
        ),
        formula="(softmax(x)*sum(q) - q) * g / D, q: weighted, smoothed target",
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
    nin=2,
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
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout: p must be a number in [0, 1], got {p!r}")
    host_rng(generator, "dropout")  # a generator= that is none: an error in eval mode too
    if not training:
        return x  # as PyTorch: the input itself (of any dtype)
    if not x._backend.xp.isdtype(x.dtype, "real floating"):
        raise OpError(
            f"dropout: needs a floating-point tensor, got dtype "
            f"{x._backend.dtype_name(x.dtype)} (the kept elements are scaled by 1/(1-p)); "
            f"convert it first (x.astype('float32'))"
        )
    if p == 0.0:
        return x * 1.0
    if p == 1.0:
        return x * 0.0
    shape, scale = tuple(x.shape), 1.0 / (1.0 - p)

    def sample(rng: np.random.Generator) -> np.ndarray:
        return np.where(rng.random(shape) >= p, scale, 0.0)

    be = x._backend
    # (through the module: minitorch.capture stands in for host_draw while recording)
    mask = creation.host_draw(generator, "dropout", sample, be, x.data.dtype, x.device)
    return x * Tensor._make(mask, be, None)


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
