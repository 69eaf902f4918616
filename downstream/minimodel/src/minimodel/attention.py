"""Causal multi-head self-attention and the pre-LN transformer block."""

from __future__ import annotations

import math

import numpy as np

import minitorch

from .layers import MLP, Dropout, LayerNorm, Linear, _size
from .module import Module

__all__ = ["MultiHeadAttention", "TransformerBlock"]


class MultiHeadAttention(Module):
    """Causal multi-head self-attention over ``x`` of shape ``(B, T, d_model)``.

    One fused ``Linear(d_model, 3 * d_model)`` (``qkv``) makes queries, keys and values
    for all heads at once (rows ``[q; k; v]``, as ``torch.nn.MultiheadAttention``'s
    ``in_proj_weight``); the heads are an axis of one batched product, never a Python
    loop. Position ``t`` attends to positions ``<= t``: the scores above the diagonal
    get ``-inf`` added before the softmax, from a mask made once per context length (and
    backend, device, dtype) and kept.

    ``dropout`` applies to the attention weights and to the output, as
    ``torch.nn.TransformerEncoderLayer``'s ``self_attn`` and ``dropout1`` do.
    """

    def __init__(
        self, d_model: int, n_heads: int, dropout: float = 0.0, *, dtype: str | None = None
    ) -> None:
        super().__init__()
        d_model = _size("MultiHeadAttention", "d_model", d_model, minimum=1)
        n_heads = _size("MultiHeadAttention", "n_heads", n_heads, minimum=1)
        if d_model % n_heads:
            raise ValueError(
                f"MultiHeadAttention: d_model={d_model} must be a multiple of n_heads={n_heads}"
            )
        self.d_model = d_model
        self.n_heads = n_heads
        self.head_dim = d_model // n_heads
        self.qkv = Linear(d_model, 3 * d_model, dtype=dtype)
        self.proj = Linear(d_model, d_model, dtype=dtype)
        self.attn_drop = Dropout(dropout)
        self.resid_drop = Dropout(dropout)
        self._masks: dict[tuple[int, str, str, str], minitorch.Tensor] = {}

    def causal_mask(self, t: int, like: minitorch.Tensor) -> minitorch.Tensor:
        """The ``(t, t)`` additive mask: ``-inf`` above the diagonal (the future), 0 on
        and below it, in the dtype and on the backend and device of ``like``; made once
        and kept. Added to the scores, it costs one addition forward and nothing
        backward (a ``masked_fill`` selects element by element both ways)."""
        key = (t, like.backend.name, str(like.device), str(like.dtype))
        mask = self._masks.get(key)
        if mask is None:
            future = np.triu(np.full((t, t), -math.inf), k=1)
            mask = minitorch.tensor(future).to(like.backend, device=like.device, dtype=like.dtype)
            self._masks[key] = mask
        return mask

    def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
        if x.ndim != 3 or x.shape[-1] != self.d_model:
            raise ValueError(
                f"{type(self).__name__}(d_model={self.d_model}, n_heads={self.n_heads}): "
                f"expected an input of shape (batch, time, {self.d_model}), got {x.shape}"
            )
        b, t, d = x.shape
        h, hd = self.n_heads, self.head_dim
        # (B, T, 3D) -> (3, B, H, T, hd): q, k and v of every head
        qkv = self.qkv(x).reshape(b, t, 3, h, hd).permute_dims((2, 0, 3, 1, 4))
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = (q * (1.0 / math.sqrt(hd))) @ k.mT  # (B, H, T, T)
        scores = scores + self.causal_mask(t, x)  # -inf on the future: weight 0
        weights = self.attn_drop(scores.softmax(axis=-1))
        out = weights @ v  # (B, H, T, hd)
        out = out.permute_dims((0, 2, 1, 3)).reshape(b, t, d)  # heads side by side again
        y: minitorch.Tensor = self.resid_drop(self.proj(out))
        return y

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, n_heads={self.n_heads}, causal=True"


class TransformerBlock(Module):
    """A pre-LN transformer block: ``x + attn(ln1(x))``, then ``x + mlp(ln2(x))``.

    The same function as ``torch.nn.TransformerEncoderLayer(d_model, n_heads,
    dim_feedforward=4 * d_model, activation="gelu", batch_first=True, norm_first=True)``
    with a causal mask (``activation=partial(F.gelu, approximate="tanh")`` for
    ``gelu_approximate="tanh"``).
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        dropout: float = 0.0,
        *,
        fused_layer_norm: bool = True,
        gelu_approximate: str = "none",
        dtype: str | None = None,
    ) -> None:
        super().__init__()
        d_model = _size("TransformerBlock", "d_model", d_model, minimum=1)
        n_heads = _size("TransformerBlock", "n_heads", n_heads, minimum=1)
        self.ln1 = LayerNorm(d_model, fused=fused_layer_norm, dtype=dtype)
        self.attn = MultiHeadAttention(d_model, n_heads, dropout, dtype=dtype)
        self.ln2 = LayerNorm(d_model, fused=fused_layer_norm, dtype=dtype)
        self.mlp = MLP(d_model, dropout=dropout, gelu_approximate=gelu_approximate, dtype=dtype)

    def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
        a: minitorch.Tensor = self.attn(self.ln1(x))
        x = x + a
        m: minitorch.Tensor = self.mlp(self.ln2(x))
        return x + m
