"""A character-level causal language model (a tiny GPT) and its tokenizer."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import minitorch

from .attention import TransformerBlock
from .containers import ModuleList
from .layers import Dropout, Embedding, LayerNorm, Linear, _probability, _size
from .module import Module

__all__ = ["CharTokenizer", "LMConfig", "TinyLM"]


class CharTokenizer:
    """One token per distinct character of a text, numbered in sorted order.

    Examples
    --------
    >>> from minimodel import CharTokenizer
    >>> tok = CharTokenizer("hello")
    >>> tok.vocab_size, tok.encode("hole"), tok.decode([3, 1])
    (4, [1, 3, 2, 0], 'oh')
    """

    def __init__(self, text: str) -> None:
        if not text:
            raise ValueError("CharTokenizer: the text is empty; it defines the vocabulary")
        self.chars: list[str] = sorted(set(text))
        self.stoi: dict[str, int] = {c: i for i, c in enumerate(self.chars)}

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text``; a character outside the vocabulary raises."""
        try:
            return [self.stoi[c] for c in text]
        except KeyError as exc:
            raise ValueError(
                f"CharTokenizer.encode: the character {exc.args[0]!r} is not in the "
                f"vocabulary of {self.vocab_size} characters (those of the training text)"
            ) from None

    def decode(self, ids: Sequence[int] | np.ndarray) -> str:
        """The text of token ids."""
        return "".join(self.chars[int(i)] for i in ids)

    def __repr__(self) -> str:
        return f"CharTokenizer(vocab_size={self.vocab_size})"


@dataclasses.dataclass(frozen=True)
class LMConfig:
    """The shape of a :class:`TinyLM`.

    ``positions`` is ``"learned"`` (an ``Embedding(block_size, d_model)``, added) or
    ``"sinusoidal"`` (the fixed sines and cosines of "Attention is all you need").
    ``fused_layer_norm`` picks the custom-op layer norm (True) or the composed one;
    ``gelu_approximate`` the MLP's GELU: ``"tanh"`` (the approximation GPT-2 uses; the
    default: 5x cheaper than the exact one on NumPy, whose ``erf`` is SciPy's) or
    ``"none"`` (exact, with ``erf``, as ``torch.nn.TransformerEncoderLayer``).
    """

    vocab_size: int
    block_size: int = 64
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    dropout: float = 0.0
    positions: str = "learned"
    fused_layer_norm: bool = True
    gelu_approximate: str = "tanh"

    def __post_init__(self) -> None:
        if self.positions not in ("learned", "sinusoidal"):
            raise ValueError(
                f"LMConfig: positions must be 'learned' or 'sinusoidal', got {self.positions!r}"
            )
        for name in ("vocab_size", "block_size", "d_model", "n_layers", "n_heads"):
            _size("LMConfig", name, getattr(self, name), minimum=1)
        _probability("LMConfig", "dropout", self.dropout)


def sinusoidal_positions(
    block_size: int, d_model: int, *, dtype: str | None = None
) -> minitorch.Tensor:
    """``(block_size, d_model)``: ``sin(t / 10000^(2i/d))`` in even columns and ``cos`` in
    odd ones, computed with :func:`minitorch.sin` and :func:`minitorch.cos`."""
    dt = minitorch.get_backend().dtype if dtype is None else dtype  # floats, not int64
    t = minitorch.arange(block_size, dtype=dt).reshape(block_size, 1)
    i = minitorch.arange(0, d_model, 2, dtype=dt)  # 2i for each sin/cos pair
    angle = t * (i * (-math.log(10000.0) / d_model)).exp()  # (T, ceil(d/2))
    pairs = minitorch.stack([minitorch.sin(angle), minitorch.cos(angle)], axis=-1)
    return pairs.reshape(block_size, -1)[:, :d_model]


class TinyLM(Module):
    """A causal language model over ``vocab_size`` tokens: token embedding + position
    embedding, ``n_layers`` pre-LN :class:`~minimodel.TransformerBlock` s, a final
    LayerNorm and a linear head to the logits of the next token.

    ``model(idx)`` takes token ids ``(B, T)`` (a minitorch int Tensor or NumPy array,
    ``T <= block_size``) and returns the logits ``(B, T, vocab_size)``;
    ``model.loss(idx, targets)`` the mean cross-entropy of the next tokens.
    """

    def __init__(self, config: LMConfig, *, dtype: str | None = None) -> None:
        super().__init__()
        self.config = config
        c = config
        self.tok_emb = Embedding(c.vocab_size, c.d_model, dtype=dtype)
        # the sinusoidal table is a buffer that is not saved (it follows from the
        # configuration), so that Module.to moves it with the parameters
        self._pos_table: minitorch.Tensor | None
        if c.positions == "learned":
            self.pos_emb: Embedding | None = Embedding(c.block_size, c.d_model, dtype=dtype)
            self.register_buffer("_pos_table", None, persistent=False)
        else:
            self.pos_emb = None
            table = sinusoidal_positions(c.block_size, c.d_model, dtype=dtype)
            self.register_buffer("_pos_table", table, persistent=False)
        self.drop = Dropout(c.dropout)
        self.blocks: ModuleList[TransformerBlock] = ModuleList(
            TransformerBlock(
                c.d_model,
                c.n_heads,
                c.dropout,
                fused_layer_norm=c.fused_layer_norm,
                gelu_approximate=c.gelu_approximate,
                dtype=dtype,
            )
            for _ in range(c.n_layers)
        )
        self.ln_f = LayerNorm(c.d_model, fused=c.fused_layer_norm, dtype=dtype)
        self.head = Linear(c.d_model, c.vocab_size, dtype=dtype)

    def forward(self, idx: Any) -> minitorch.Tensor:
        shape = tuple(getattr(idx, "shape", ()))
        if len(shape) != 2:
            raise ValueError(
                f"TinyLM: expected token ids of shape (batch, time), got shape {shape}; "
                f"add a batch axis for one sequence, e.g. idx[None]"
            )
        t = shape[1]
        if t > self.config.block_size:
            raise ValueError(
                f"TinyLM: the input has {t} tokens (shape {shape}), more than the context "
                f"length block_size={self.config.block_size}; keep the last "
                f"{self.config.block_size} tokens (idx[:, -{self.config.block_size}:]), as "
                f"generate() does"
            )
        x = self.tok_emb(idx)  # (B, T, D)
        if self.pos_emb is not None:
            # positions 0..T-1 are the first T rows: a slice, not a lookup
            x = x + self.pos_emb.weight[:t]
        else:
            assert self._pos_table is not None
            x = x + self._pos_table[:t]
        x = self.drop(x)
        for block in self.blocks:
            x = block(x)
        logits: minitorch.Tensor = self.head(self.ln_f(x))
        return logits

    def loss(self, idx: Any, targets: Any) -> minitorch.Tensor:
        """The mean cross-entropy of ``targets`` (B, T), the next token at each position."""
        logits = self(idx)
        b, t, v = logits.shape
        if not isinstance(targets, minitorch.Tensor):
            targets = np.asarray(targets)
        if tuple(targets.shape) != (b, t):
            raise ValueError(
                f"TinyLM.loss: targets have shape {tuple(targets.shape)}, but the input's "
                f"is {(b, t)}; they must match (targets are the inputs shifted by one)"
            )
        return minitorch.cross_entropy(logits.reshape(b * t, v), targets.reshape(b * t))

    @minitorch.no_grad()
    def generate(
        self,
        idx: Sequence[int] | np.ndarray,
        max_new_tokens: int,
        *,
        temperature: float = 1.0,
        top_k: int | None = None,
        rng: np.random.Generator | int | None = None,
    ) -> list[int]:
        """Continue the token ids ``idx`` by ``max_new_tokens`` sampled tokens.

        Each new token is drawn from the softmax of the last logits divided by
        ``temperature`` (only the ``top_k`` largest, if given), on the host with
        ``rng`` (a NumPy Generator or a seed). The context is cropped to the last
        ``block_size`` tokens. Runs in eval mode and restores the previous mode.
        Returns ``idx`` followed by the new tokens.
        """
        if temperature <= 0:
            raise ValueError(f"TinyLM.generate: temperature must be > 0, got {temperature}")
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        tokens = [int(i) for i in idx]
        if not tokens:
            raise ValueError("TinyLM.generate: give at least one token to start from")
        was_training = self.training
        self.eval()
        try:
            for _ in range(max_new_tokens):
                context = np.asarray(tokens[-self.config.block_size :], dtype=np.int64)[None]
                logits = self(context)[0, -1].numpy().astype(np.float64) / temperature
                if top_k is not None and top_k < logits.size:
                    cutoff = np.sort(logits)[-top_k]
                    logits = np.where(logits < cutoff, -np.inf, logits)
                p = np.exp(logits - logits.max())
                tokens.append(int(gen.choice(p.size, p=p / p.sum())))
        finally:
            self.train(was_training)
        return tokens

    def extra_repr(self) -> str:
        c = self.config
        return f"vocab_size={c.vocab_size}, block_size={c.block_size}, positions={c.positions}"
