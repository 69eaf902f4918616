"""Layers: ``Linear``, ``Embedding``, ``LayerNorm``, ``Dropout`` and the transformer's
``MLP``, with PyTorch's parameter names, shapes and initialization.

Parameters are drawn from minitorch's seeded generator (:func:`minitorch.manual_seed`)
on the current backend, in its default float dtype unless ``dtype=`` says otherwise:
build a model inside ``with minitorch.use_backend(...)`` to place it there.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Sequence
from typing import Any

import minitorch

from .functional import layer_norm, layer_norm_composed
from .module import Module, Parameter

__all__ = ["MLP", "Dropout", "Embedding", "LayerNorm", "Linear"]


def _size(where: str, name: str, value: Any, minimum: int = 0) -> int:
    """``value``, a size argument of ``where``, as an int: a Python or NumPy integer (not
    a bool) of at least ``minimum``, else a TypeError or ValueError that names it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{where}: {name} must be an int >= {minimum}, got {value!r} ({type(value).__name__})"
        )
    size = operator.index(value)
    if size < minimum:
        raise ValueError(f"{where}: {name} must be an int >= {minimum}, got {size}")
    return size


def _probability(where: str, name: str, value: Any) -> float:
    """``value``, a probability argument of ``where``, as a float in [0, 1], else a
    TypeError or ValueError that names it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{where}: {name} must be a float in [0, 1], got {value!r} ({type(value).__name__})"
        )
    p = float(value)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{where}: {name} must be a probability in [0, 1], got {value}")
    return p


def _uniform(shape: tuple[int, ...], bound: float, dtype: str | None) -> minitorch.Tensor:
    """Draws from U(-bound, bound)."""
    return (minitorch.rand(*shape, dtype=dtype) * 2.0 - 1.0) * bound


class Linear(Module):
    """``y = x @ weight.T + bias`` on the last axis, as ``torch.nn.Linear``.

    ``weight`` is ``(out_features, in_features)`` and ``bias`` ``(out_features,)``, both
    drawn from U(-1/sqrt(in_features), 1/sqrt(in_features)) (PyTorch's default).
    Leading axes are batch axes: ``(..., in_features) -> (..., out_features)``.
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, *, dtype: str | None = None
    ) -> None:
        super().__init__()
        in_features = _size("Linear", "in_features", in_features)
        out_features = _size("Linear", "out_features", out_features)
        self.in_features = in_features
        self.out_features = out_features
        bound = 1.0 / math.sqrt(in_features) if in_features else 0.0
        self.weight = Parameter(_uniform((out_features, in_features), bound, dtype))
        self.bias: Parameter | None = (
            Parameter(_uniform((out_features,), bound, dtype)) if bias else None
        )

    def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
        if x.ndim == 0 or x.shape[-1] != self.in_features:
            raise ValueError(
                f"{self!r}: the input has shape {x.shape}, but its last axis must have "
                f"in_features={self.in_features} elements; reshape the input, or build "
                f"Linear({x.shape[-1] if x.ndim else '?'}, {self.out_features})"
            )
        y = x @ self.weight.T  # (..., in) @ (in, out): minitorch makes it one 2-D product
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Embedding(Module):
    """Rows of ``weight`` ``(num_embeddings, embedding_dim)`` picked by integer indices,
    as ``torch.nn.Embedding``; ``weight`` is drawn from N(0, 1) (PyTorch's default).

    The indices are an integer Tensor (or NumPy array) of any shape ``S``; the result has
    shape ``(*S, embedding_dim)``.

    ``padding_idx`` (negative counts from the end; stored non-negative) names a row, as
    in PyTorch, that starts as zeros and gets no gradient: a padding token adds nothing
    to the training of the table (its row is still looked up as it is).

    With ``max_norm``, each forward first renormalizes, in place and untracked by
    autograd, every row it looks up whose ``norm_type``-norm exceeds ``max_norm``: the
    row is multiplied by ``max_norm / (norm + 1e-7)``, as ``torch.nn.functional.
    embedding`` does; the output and the gradient are then those of the renormalized
    table.

    With ``scale_grad_by_freq=True``, the gradient rows of each index are divided by the
    number of times it occurs in the forward's indices (the mini-batch), as in PyTorch
    (:func:`minitorch.embedding`'s option of the same name); with ``padding_idx`` the
    padding row still gets no gradient.

    ``sparse=True`` (PyTorch's sparse gradient of the table) is refused: minitorch has
    no sparse gradients. ``weight.grad`` is a dense array of the table's shape, zero in
    the rows not looked up, with the values a sparse gradient holds.

    Examples
    --------
    >>> import minitorch
    >>> from minimodel import Embedding
    >>> emb = Embedding(4, 2, padding_idx=-1)
    >>> emb
    Embedding(4, 2, padding_idx=3)
    >>> emb(minitorch.tensor([3, 3], dtype="int64")).numpy()
    array([[0., 0.],
           [0., 0.]], dtype=float32)
    >>> capped = Embedding(4, 2, max_norm=1.0)
    >>> _ = capped(minitorch.tensor([0, 2], dtype="int64"))
    >>> bool(minitorch.vector_norm(capped.weight[0]) <= 1.0)
    True
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        *,
        dtype: str | None = None,
    ) -> None:
        super().__init__()
        num_embeddings = _size("Embedding", "num_embeddings", num_embeddings)
        embedding_dim = _size("Embedding", "embedding_dim", embedding_dim)
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = _padding_index(padding_idx, num_embeddings)
        self.max_norm = _max_norm(max_norm)
        self.norm_type = _norm_type(norm_type)
        self.scale_grad_by_freq = _flag("scale_grad_by_freq", scale_grad_by_freq)
        self.sparse = _flag("sparse", sparse)
        if self.sparse:
            raise ValueError(
                f"Embedding({num_embeddings}, {embedding_dim}): sparse=True is not "
                f"supported: minitorch has no sparse gradients. Leave sparse=False (the "
                f"default): weight.grad is then a dense array of shape ({num_embeddings}, "
                f"{embedding_dim}) holding what a sparse gradient would (zeros in the rows "
                f"not looked up), for minitorch.optim's optimizers (there is no SparseAdam: "
                f"Adam moves every row)"
            )
        weight = minitorch.randn(num_embeddings, embedding_dim, dtype=dtype)
        if self.padding_idx is not None:
            weight[self.padding_idx] = 0.0  # drawn first, then zeroed: PyTorch's draws
        self.weight = Parameter(weight)

    def forward(self, indices: Any) -> minitorch.Tensor:
        try:
            if self.max_norm is not None:
                self._renorm(indices, self.max_norm)
            out = minitorch.embedding(
                indices, self.weight, scale_grad_by_freq=self.scale_grad_by_freq
            )
        except minitorch.OpError as exc:
            problem = _index_problem(indices, self.num_embeddings, exc)
            raise ValueError(f"{self!r}: {problem}") from exc
        if self.padding_idx is None:
            return out
        # the rows looked up for padding_idx, detached: the same values, no gradient to
        # the padding row (one comparison and one select over the output, not the table)
        ids = (
            indices
            if isinstance(indices, minitorch.Tensor)
            else self.weight.__array_namespace__().asarray(indices)
        )
        keep = (ids != self.padding_idx).reshape(*ids.shape, 1)
        return minitorch.where(keep, out, out.detach())

    def _renorm(self, indices: Any, max_norm: float) -> None:
        """Scale each row of ``weight`` that ``indices`` look up whose norm exceeds
        ``max_norm`` by ``max_norm / (norm + 1e-7)``, in place, without recording it
        (``torch.nn.functional.embedding``'s renormalization); bad indices raise the
        OpError of the lookup, before anything changes."""
        w = self.weight
        with minitorch.no_grad():
            ids = (
                indices
                if isinstance(indices, minitorch.Tensor)
                else w.__array_namespace__().asarray(indices)
            )
            flat = ids.reshape(-1)
            rows = minitorch.embedding(flat, w)  # (n, dim); checks the indices
            if flat.size == 0 or self.embedding_dim == 0:
                return
            norms = minitorch.vector_norm(rows, axis=-1, keepdims=True, ord=self.norm_type)
            scale = minitorch.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
            # a repeated index writes the same row each time; the others are rewritten
            # as they are (scale 1)
            w[flat] = rows * scale

    def extra_repr(self) -> str:
        out = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            out += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            out += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            out += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            out += ", scale_grad_by_freq=True"
        return out


def _padding_index(padding_idx: Any, n: int) -> int | None:
    """``padding_idx`` of an ``n``-row Embedding as a row in ``[0, n)`` (negative counts
    from the end), or None; else a TypeError or ValueError that names it."""
    if padding_idx is None:
        return None
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, numbers.Integral):
        raise TypeError(
            f"Embedding: padding_idx must be an int or None, got {padding_idx!r} "
            f"({type(padding_idx).__name__})"
        )
    k = operator.index(padding_idx)
    if not -n <= k < n:
        raise ValueError(
            f"Embedding: padding_idx={k} is out of range for num_embeddings={n}: it must "
            f"lie in [-{n}, {n}) (negative counts from the end), or be None for no padding row"
        )
    return k % n


def _max_norm(max_norm: Any) -> float | None:
    """``max_norm`` of an Embedding: None, or a number > 0 (kept as given, for the repr);
    else a TypeError or ValueError that names it."""
    if max_norm is None:
        return None
    if isinstance(max_norm, bool) or not isinstance(max_norm, numbers.Real):
        raise TypeError(
            f"Embedding: max_norm must be a number > 0 or None, got {max_norm!r} "
            f"({type(max_norm).__name__})"
        )
    if not float(max_norm) > 0:  # also NaN
        raise ValueError(
            f"Embedding: max_norm must be > 0 (the largest norm a looked-up row keeps), got "
            f"{max_norm}; leave it None for no renormalization"
        )
    return max_norm  # type: ignore[return-value]


def _norm_type(norm_type: Any) -> float:
    """``norm_type`` of an Embedding: the order ``p`` of the norm, a number (``inf``
    too) other than NaN; else a TypeError or ValueError that names it."""
    if isinstance(norm_type, bool) or not isinstance(norm_type, numbers.Real):
        raise TypeError(
            f"Embedding: norm_type must be a number (the p of the p-norm, e.g. 2.0 or "
            f"math.inf), got {norm_type!r} ({type(norm_type).__name__})"
        )
    if math.isnan(norm_type):
        raise ValueError("Embedding: norm_type must be a number (the p of the p-norm), got nan")
    return norm_type  # type: ignore[return-value]


def _flag(name: str, value: Any) -> bool:
    """A True/False argument ``name`` of an Embedding; else a TypeError that names it."""
    if not isinstance(value, bool):
        raise TypeError(
            f"Embedding: {name} must be True or False, got {value!r} ({type(value).__name__})"
        )
    return value


def _index_problem(indices: Any, n: int, error: Exception) -> str:
    """Why ``indices`` cannot pick rows of an ``n``-row table (only on the error path),
    read from their values. Inside the recording of a ``minitorch.capture``d step the
    values cannot be read on the host (the capture refuses it): the op's own ``error``
    then says what it saw."""
    shape = tuple(getattr(indices, "shape", ()))
    try:
        ids = indices.numpy() if isinstance(indices, minitorch.Tensor) else indices
    except minitorch.CaptureError:
        return (
            f"indices (shape {shape}) must be integers in [0, {n}) ({error}); encode the "
            f"input with the tokenizer the model was built for, or make num_embeddings "
            f"larger than the largest index"
        )
    dtype = getattr(ids, "dtype", type(ids))
    kind = getattr(dtype, "kind", "")
    if kind not in ("i", "u"):
        return (
            f"indices (shape {shape}) must be integers, got dtype {dtype}; convert them, e.g. "
            f"minitorch.tensor(ids, dtype='int64')"
        )
    low, high = int(ids.min()), int(ids.max())
    problems = []
    if low < 0:
        problems.append(f"index {low} is negative (indices do not count from the end)")
    if high >= n:
        problems.append(f"index {high} is out of range for num_embeddings={n}")
    fix = "encode the input with the tokenizer the model was built for"
    if low >= 0:
        fix += f", or make num_embeddings larger than {high}"
    return (
        f"indices (shape {shape}) go from {low} to {high}, but they must lie in [0, {n}): "
        f"{' and '.join(problems)}; {fix}"
    )


class LayerNorm(Module):
    """Layer normalization over the last axis, as ``torch.nn.LayerNorm(normalized_shape)``:
    ``weight`` (ones) and ``bias`` (zeros) of shape ``(normalized_shape,)``.

    ``fused=True`` uses the custom op :func:`minimodel.functional.layer_norm` (one node,
    a hand-written VJP); ``fused=False`` the composition of ordinary ops
    :func:`minimodel.functional.layer_norm_composed`. Both compute the same function.
    """

    def __init__(
        self,
        normalized_shape: int | Sequence[int],
        eps: float = 1e-5,
        *,
        fused: bool = True,
        dtype: str | None = None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, Sequence) and not isinstance(normalized_shape, str):
            if len(normalized_shape) != 1:
                raise ValueError(
                    f"LayerNorm: normalized_shape must be an int or a 1-element tuple (it "
                    f"normalizes over the last axis only), got {tuple(normalized_shape)}"
                )
            (normalized_shape,) = normalized_shape
        self.normalized_shape = _size("LayerNorm", "normalized_shape", normalized_shape)
        self.eps = eps
        self.fused = fused
        self.weight = Parameter(minitorch.ones(normalized_shape, dtype=dtype))
        self.bias = Parameter(minitorch.zeros(normalized_shape, dtype=dtype))

    def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
        if x.ndim == 0 or x.shape[-1] != self.normalized_shape:
            raise ValueError(
                f"{self!r}: the input has shape {x.shape}, but its last axis must have "
                f"{self.normalized_shape} elements"
            )
        if self.fused:
            return layer_norm(x, self.weight, self.bias, eps=self.eps)
        return layer_norm_composed(x, self.weight, self.bias, eps=self.eps)

    def extra_repr(self) -> str:
        fused = "" if self.fused else ", fused=False"
        return f"({self.normalized_shape},), eps={self.eps}{fused}"


class Dropout(Module):
    """Zero each element with probability ``p`` while training and scale the rest by
    ``1/(1-p)``, as ``torch.nn.Dropout``; the identity in eval mode. The masks come
    from minitorch's seeded generator (:func:`minitorch.manual_seed`)."""

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        self.p = _probability("Dropout", "p", p)

    def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
        if self.p == 0.0 or not self.training:
            return x
        return minitorch.dropout(x, p=self.p, training=True)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class MLP(Module):
    """The transformer's feed-forward block: ``Linear(d, hidden)``, GELU,
    ``Linear(hidden, d)``, dropout; ``hidden`` defaults to ``4 * d``. The same function as
    ``torch.nn.TransformerEncoderLayer``'s ``linear1``, ``gelu``, ``linear2``.

    ``gelu_approximate`` is ``"none"`` (the exact GELU, with ``erf``) or ``"tanh"`` (its
    tanh approximation, as GPT-2), as in ``torch.nn.GELU(approximate=...)``.
    """

    def __init__(
        self,
        d_model: int,
        hidden: int | None = None,
        dropout: float = 0.0,
        *,
        gelu_approximate: str = "none",
        dtype: str | None = None,
    ) -> None:
        super().__init__()
        if gelu_approximate not in ("none", "tanh"):
            raise ValueError(
                f"MLP: gelu_approximate must be 'none' or 'tanh', got {gelu_approximate!r}"
            )
        d_model = _size("MLP", "d_model", d_model)
        hidden = 4 * d_model if hidden is None else _size("MLP", "hidden", hidden)
        self.gelu_approximate = gelu_approximate
        self.fc = Linear(d_model, hidden, dtype=dtype)
        self.proj = Linear(hidden, d_model, dtype=dtype)
        self.drop = Dropout(dropout)

    def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
        h = minitorch.gelu(self.fc(x), approximate=self.gelu_approximate)
        out: minitorch.Tensor = self.drop(self.proj(h))
        return out

    def extra_repr(self) -> str:
        return "" if self.gelu_approximate == "none" else "gelu_approximate='tanh'"
