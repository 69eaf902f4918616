"""Second-order gradient checks: the gradient of a VJP against central differences."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from .._grad_mode import enable_grad
from ..autograd import grad
from ..backend import as_array
from ..ops.shape import concat, reshape
from ..tensor import Tensor
from ._check import gradcheck

__all__ = ["gradgradcheck"]


def _vjp_function(
    fn: Callable[..., Tensor], inputs: Sequence[Any], diff: Sequence[int]
) -> Callable[..., Tensor]:
    """``(*inputs, *grad_outputs) -> concat(flattened d<fn, grad_outputs>/d inputs[diff])``.

    The first-order gradients are taken with ``create_graph=True``, so the result is
    differentiable in both the inputs and the grad_outputs. Inputs that arrive without
    ``requires_grad`` (the numeric evaluations of gradcheck) are detached copies made to
    require it, so the function always computes the same values.
    """
    n = len(inputs)

    def vjp_fn(*args: Any) -> Tensor:
        xs = list(args[:n])
        vs = list(args[n:])
        with enable_grad():
            for i in diff:
                if not xs[i].requires_grad:
                    xs[i] = xs[i].detach().requires_grad_()
            out = fn(*xs)
            if not isinstance(out, Tensor):
                raise TypeError(f"gradgradcheck: fn must return a Tensor, got {type(out).__name__}")
            if not out.requires_grad:
                raise ValueError(
                    "gradgradcheck: fn's output does not depend on any input that requires grad"
                )
            gs = grad(out, [xs[i] for i in diff], vs[0], create_graph=True, materialize_grads=True)
            # an input not reached has a zero gradient (a constant): materialized, no None
            flat = [reshape(cast(Tensor, g), (-1,)) for g in gs]
            return concat(flat) if len(flat) > 1 else flat[0]

    return vjp_fn


def gradgradcheck(
    fn: Callable[..., Tensor],
    inputs: Sequence[Any],
    grad_outputs: Any = None,
    *,
    eps: float | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    fast_mode: bool = False,
    seed: int = 0,
) -> bool:
    """Check second derivatives: the gradient of ``fn``'s VJP against central differences.

    Like ``torch.autograd.gradgradcheck``: the function checked is
    ``(inputs, v) -> d<fn(inputs), v>/d inputs``, computed with
    ``autograd.grad(..., create_graph=True)``, and :func:`gradcheck` compares its
    gradient with respect to both the inputs and the upstream gradient ``v`` with
    finite differences. This proves that every VJP on the way is itself differentiable
    and correct.

    Parameters
    ----------
    fn : callable
        Takes the inputs (Tensors and Python values) and returns one Tensor.
    inputs : sequence
        The inputs; those that require grad (floating, preferably float64) are checked.
    grad_outputs : Tensor, optional
        The upstream gradient ``v`` (the output's shape). Random normal by default
        (seeded by ``seed``), so a bug hidden by ``v = 1`` still shows.
    eps, atol, rtol : float, optional
        As for :func:`gradcheck` (defaults by dtype).
    fast_mode : bool
        Compare one random projection instead of the whole Jacobian of the VJP.
    seed : int

    Returns
    -------
    True, or raises :class:`~minitorch.testing.GradcheckError`.

    Examples
    --------
    >>> import minitorch
    >>> from minitorch.testing import gradgradcheck
    >>> x = minitorch.tensor([0.3, -1.2], dtype="float64", requires_grad=True)
    >>> gradgradcheck(lambda t: (t.tanh() * t).sum(), [x])
    True
    """
    inputs = list(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not diff:
        raise ValueError("gradgradcheck: no input requires grad")
    with enable_grad():
        out = fn(*inputs)
    if not isinstance(out, Tensor):
        raise TypeError(f"gradgradcheck: fn must return a Tensor, got {type(out).__name__}")
    be = out._backend
    if grad_outputs is None:
        v = np.random.default_rng(seed + 1).standard_normal(tuple(out.shape))
        v_t = Tensor._make(be.from_numpy(v, out.data.dtype, out.device), be, None)
    elif isinstance(grad_outputs, Tensor):
        v_t = grad_outputs.detach()
    else:
        v_t = Tensor._make(as_array(grad_outputs, be, out.data.dtype, out.device), be, None)
    if tuple(v_t.shape) != tuple(out.shape):
        raise ValueError(
            f"gradgradcheck: grad_outputs has shape {tuple(v_t.shape)} but fn's output has "
            f"shape {tuple(out.shape)}"
        )
    v_t.requires_grad = True
    checked = [
        inputs[i].detach().requires_grad_() if i in diff else inputs[i] for i in range(len(inputs))
    ]
    return gradcheck(
        _vjp_function(fn, checked, diff),
        [*checked, v_t],
        eps=eps,
        atol=atol,
        rtol=rtol,
        fast_mode=fast_mode,
        seed=seed,
    )
