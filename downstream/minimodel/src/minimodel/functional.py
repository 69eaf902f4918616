"""Functions the layers are made of: ``layer_norm`` twice over.

* :func:`layer_norm` is a custom op declared with :func:`minitorch.defop`: one fused
  forward and a hand-written VJP (two saved arrays instead of a graph of ten ops). It
  runs on every backend, and, since its VJP uses only operators and ``xp.`` calls,
  differentiates to any order.
* :func:`layer_norm_composed` is the same function written with ordinary minitorch ops;
  the chain rule differentiates it. The tests check the two against each other and
  against ``torch.nn.functional.layer_norm``.
"""

from __future__ import annotations

from typing import Any

import minitorch

__all__ = ["layer_norm", "layer_norm_composed"]


def _normalize(xp: Any, x: Any, eps: float) -> tuple[Any, Any]:
    """``xhat = (x - mean) / sqrt(var + eps)`` over the last axis, and ``rstd``."""
    mean = xp.mean(x, axis=-1, keepdims=True)
    xc = x - mean
    rstd = 1.0 / xp.sqrt(xp.mean(xc * xc, axis=-1, keepdims=True) + eps)
    return xc * rstd, rstd


def _layer_norm(xp: Any, x: Any, weight: Any, bias: Any, eps: float = 1e-5) -> tuple[Any, Any]:
    """Layer normalization over the last axis of ``x``, then ``* weight + bias``, as
    ``torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, eps)``."""
    xhat, rstd = _normalize(xp, x, eps)
    return xhat * weight + bias, (x, weight, xhat, rstd)


def _layer_norm_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], eps: float = 1e-5
) -> tuple[Any, Any, Any]:
    """With ``gh = g * weight`` (the gradient of ``xhat``) and D the last axis:

    * ``dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat))``
      (``xhat`` has mean 0 and mean square 1, which removes two directions);
    * ``dweight = g * xhat`` and ``dbias = g``, in ``x``'s shape: the engine sums them
      down to ``(D,)``.
    """
    x, weight, xhat, rstd = saved
    if xhat is None:  # create_graph=True: recompute the derived values differentiably
        xhat, rstd = _normalize(xp, x, eps)
    gx = gw = gb = None
    if needs[0]:
        gh = g * weight
        gx = rstd * (
            gh
            - xp.mean(gh, axis=-1, keepdims=True)
            - xhat * xp.mean(gh * xhat, axis=-1, keepdims=True)
        )
    if needs[1]:
        gw = g * xhat
    if needs[2]:
        gb = g
    return gx, gw, gb


layer_norm = minitorch.defop(
    "minimodel_layer_norm",  # prefixed: a future built-in layer_norm must not clash
    _layer_norm,
    _layer_norm_vjp,
    nin=3,  # x, weight, bias are tensors; eps is a parameter
    derived=(2, 3),  # saved xhat and rstd are recomputed from x under create_graph
    facts=minitorch.Facts(
        ref=lambda torch, x, weight, bias, eps=1e-5: torch.nn.functional.layer_norm(
            x, (x.shape[-1],), weight, bias, eps
        ),
        samples=(
            minitorch.Sample(((4, 6), (6,), (6,))),
            minitorch.Sample(((2, 3, 5), (5,), (5,)), {"eps": 1e-3}),
            minitorch.Sample(((7,), (7,), (7,)), name="one row"),
        ),
    ),
)
"""``layer_norm(x, weight, bias, eps=1e-5)``: the fused custom op."""


def layer_norm_composed(
    x: minitorch.Tensor, weight: minitorch.Tensor, bias: minitorch.Tensor, eps: float = 1e-5
) -> minitorch.Tensor:
    """:func:`layer_norm` written with ordinary ops (``mean``, ``var``, ``rsqrt``)."""
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)  # population variance (correction=0), as torch
    return (x - mean) * (var + eps).rsqrt() * weight + bias
