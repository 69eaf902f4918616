"""``minitorch demo``: train an MLP to name the tense of English verb phrases.

The data is the grammar grid of :mod:`minitorch.examples.grammar` (70 verbs x 3 persons
x 5 tenses). A cell's input is ``one-hot(verb) ⊕ one-hot(person) ⊕ features of the
conjugated form`` (auxiliaries, relation to the base form, endings, word identity among
training verbs); its target is the tense index 0..4. Validation uses 18 held-out verbs,
so the model must generalise to verbs it never saw, irregular ones included.

Everything in the model and the training loop is minitorch: Xavier (Glorot) uniform
initialisation from :func:`minitorch.rand`, ``x @ W + b`` and ReLU, softmax
cross-entropy, ``backward()``, gradient clipping by global norm and plain SGD
(:func:`minitorch.optim.clip_grad_norm_` and :class:`minitorch.optim.SGD`), on any
backend and dtype.

Outputs, in ``--out`` (default ``demo-out``): ``metrics.csv`` and ``metrics.json`` (one row
per epoch: losses, accuracies, per-layer gradient norms, weight statistics), ``best.npz``
(the weights of the best validation epoch; :meth:`MLP.load` reads them back),
``graph.dot``/``graph.svg`` (one forward/backward of a two-phrase batch, drawn with
:func:`minitorch.viz.render`) and PNG plots (with the ``plots`` extra).

Run ``minitorch demo --help`` for the options.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import importlib.util
import io
import itertools
import json
import math
import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

import minitorch
from minitorch import Tensor, distributed, optim, viz
from minitorch._atomic import atomic_path, write_text
from minitorch.errors import DistributedError, FileFormatError
from minitorch.serialization import read_npz

from .grammar import HELD_OUT, PERSONS, TENSES, VERBS, Dataset, build_dataset

__all__ = [
    "MLP",
    "Config",
    "TrainResult",
    "clip_grad_norm",
    "main",
    "sgd_step",
    "train",
    "train_step",
]

#: every file the demo writes into its output folder
OUTPUTS = (
    "metrics.csv",
    "metrics.json",
    "best.npz",
    "graph.dot",
    "graph.svg",
    "loss.png",
    "accuracy.png",
    "grad_norms.png",
    "weights.png",
    "overview.png",
)
PLOTS_HINT = "pip install 'minitorch[plots]' for plots"


# --------------------------------------------------------------------------- model
class MLP:
    """A multilayer perceptron: ``x @ W + b`` per layer, ReLU between layers.

    Weights use Xavier (Glorot) uniform initialisation, ``U(-a, a)`` with
    ``a = sqrt(6 / (fan_in + fan_out))``, drawn with :func:`minitorch.rand` (seed it with
    :func:`minitorch.manual_seed`: draws are made on the host, so a seed gives the same
    weights on every backend). Biases start at zero. Parameters are leaf tensors of the
    current backend, named ``layer1.weight``, ``layer1.bias``, ...

    Parameters
    ----------
    sizes : sequence of int
        Layer widths from input to output, e.g. ``(256, 32, 5)``.
    dtype : str, optional
        ``"float32"`` or ``"float64"``; the backend's default if omitted.

    Examples
    --------
    >>> _ = minitorch.manual_seed(0)
    >>> model = MLP([4, 8, 3])
    >>> model(minitorch.ones(2, 4)).shape
    (2, 3)
    >>> [name for name, _ in model.named_parameters()]
    ['layer1.weight', 'layer1.bias', 'layer2.weight', 'layer2.bias']
    """

    def __init__(self, sizes: Sequence[int], *, dtype: str | None = None) -> None:
        if len(sizes) < 2:
            raise ValueError(f"MLP: sizes needs an input and an output width, got {sizes}")
        self.sizes = tuple(int(s) for s in sizes)
        self.layers: list[tuple[Tensor, Tensor]] = []
        for i, (fan_in, fan_out) in enumerate(itertools.pairwise(self.sizes)):
            bound = math.sqrt(6.0 / (fan_in + fan_out))
            w = minitorch.rand(fan_in, fan_out, dtype=dtype) * (2.0 * bound) - bound
            w.requires_grad_()
            b = minitorch.zeros(fan_out, dtype=dtype, requires_grad=True)
            w.name, b.name = f"layer{i + 1}.weight", f"layer{i + 1}.bias"
            self.layers.append((w, b))

    def __call__(self, x: Tensor, *, retain: bool = False) -> Tensor:
        """The logits for a batch ``x`` of shape ``(n, sizes[0])``.

        With ``retain=True`` every intermediate is named, keeps its gradient
        (``retain_grad()``) and is kept in ``self.retained``, for drawing the graph.
        """
        self.retained: list[Tensor] = []
        h = x
        last = len(self.layers) - 1
        for i, (w, b) in enumerate(self.layers):
            hw = h @ w
            z = hw + b
            if retain:
                hw.name = f"h{i} @ W{i + 1}"
                hw.retain_grad()
                self.retained.append(hw)
                z.name = "logits" if i == last else f"z{i + 1} = h{i} @ W{i + 1} + b{i + 1}"
                z.retain_grad()
                self.retained.append(z)
            if i < last:
                h = z.relu()
                if retain:
                    h.name = f"h{i + 1} = relu(z{i + 1})"
                    h.retain_grad()
                    self.retained.append(h)
            else:
                h = z
        return h

    def parameters(self) -> list[Tensor]:
        """Every weight and bias, in layer order."""
        return [p for layer in self.layers for p in layer]

    def named_parameters(self) -> list[tuple[str, Tensor]]:
        """``(name, tensor)`` pairs, in layer order."""
        return [(p.name or f"param{i}", p) for i, p in enumerate(self.parameters())]

    def num_parameters(self) -> int:
        return sum(p.size for p in self.parameters())

    def zero_grad(self) -> None:
        """Clear every parameter's ``.grad`` (the next backward starts afresh)."""
        for p in self.parameters():
            p.zero_grad()

    def state_dict(self) -> dict[str, np.ndarray]:
        """Host (NumPy) copies of the parameters, keyed by name."""
        return {name: p.numpy() for name, p in self.named_parameters()}

    def load_state_dict(self, state: dict[str, np.ndarray]) -> None:
        """Replace the parameters' values with ``state`` (as written by :meth:`state_dict`)."""
        params = dict(self.named_parameters())
        if set(state) != set(params):
            raise KeyError(
                f"load_state_dict: expected the keys {sorted(params)}, got {sorted(state)}"
            )
        for name, p in params.items():
            arr = np.array(state[name], copy=True)  # later edits of `state` stay there
            if tuple(arr.shape) != p.shape:
                raise ValueError(
                    f"load_state_dict: {name} has shape {p.shape} in the model but "
                    f"{tuple(arr.shape)} in the saved state"
                )
            p.data = p.backend.from_numpy(arr, p.data.dtype, p.device)
            p.grad = None

    def save(self, path: str | os.PathLike[str]) -> pathlib.Path:
        """Write the parameters to an ``.npz`` file (NumPy arrays keyed by name)."""
        out = pathlib.Path(path)
        state: dict[str, Any] = self.state_dict()
        with atomic_path(out) as tmp, tmp.open("wb") as f:  # whole, or the old file stays
            np.savez(f, **state)
        return out

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, dtype: str | None = None) -> MLP:
        """A model on the current backend with the weights saved in ``path`` (``.npz``).

        Examples
        --------
        >>> import tempfile, pathlib
        >>> _ = minitorch.manual_seed(1)
        >>> model = MLP([3, 4, 2])
        >>> with tempfile.TemporaryDirectory() as d:
        ...     again = MLP.load(model.save(pathlib.Path(d) / "w.npz"))
        >>> x = minitorch.ones(1, 3)
        >>> bool((again(x) == model(x)).all())
        True
        """
        state = _read_weights(pathlib.Path(path))
        model = cls(_layer_sizes(state, path), dtype=dtype)
        model.load_state_dict(state)
        return model


class WeightsFileError(FileFormatError):
    """A file given to :meth:`MLP.load` is not weights written by :meth:`MLP.save`."""


def _read_weights(path: pathlib.Path) -> dict[str, np.ndarray]:
    """The arrays of an ``.npz`` file, or a WeightsFileError naming the file and the fault."""
    return read_npz(path, "MLP.load", "a weights archive written by MLP.save", WeightsFileError)


def _layer_sizes(state: dict[str, np.ndarray], path: str | os.PathLike[str]) -> list[int]:
    """The layer widths the weights in ``state`` describe; a clear error if they do not
    chain (``layer{i}.weight`` of shape (in, out) and ``layer{i}.bias`` of shape (out,))."""
    n = len(state) // 2
    expected = {f"layer{i + 1}.{kind}" for i in range(n) for kind in ("weight", "bias")}
    if n == 0 or set(state) != expected:
        raise WeightsFileError(
            f"MLP.load: {path} holds the arrays {sorted(state)}; MLP.save writes "
            f"layer1.weight, layer1.bias, ... layerN.weight, layerN.bias"
        )
    sizes: list[int] = []
    for i in range(1, n + 1):
        w, b = state[f"layer{i}.weight"], state[f"layer{i}.bias"]
        fits = w.ndim == 2 and b.shape == w.shape[1:] and (not sizes or w.shape[0] == sizes[-1])
        if not fits or w.dtype.kind != "f":
            raise WeightsFileError(
                f"MLP.load: in {path}, layer{i}.weight {w.shape} {w.dtype} and layer{i}.bias "
                f"{b.shape} do not make a layer after width {sizes[-1] if sizes else '?'}: "
                f"a weight is (in, out) floats and its bias (out,)"
            )
        sizes = [*sizes, int(w.shape[1])] if sizes else [int(w.shape[0]), int(w.shape[1])]
    return sizes


# --------------------------------------------------------------------- optimisation
def _sum_squares(p: Tensor) -> float:
    xp = p.backend.xp
    return float(xp.sum(p.grad * p.grad))


def grad_norms(model: MLP) -> list[float]:
    """The gradient norm of each layer, ``sqrt(|dW|^2 + |db|^2)`` (0 without gradients)."""
    return [
        math.sqrt(sum(_sum_squares(p) for p in layer if p.grad is not None))
        for layer in model.layers
    ]


def clip_grad_norm(params: Iterable[Tensor], max_norm: float) -> float:
    """Scale all gradients together so that their global norm is at most ``max_norm``.

    Like ``torch.nn.utils.clip_grad_norm_``: the factor is ``max_norm / (norm + 1e-6)``,
    applied only when it is below 1. ``max_norm <= 0`` turns clipping off.

    Returns
    -------
    float
        The global norm before clipping.

    Examples
    --------
    >>> w = minitorch.tensor([3.0, 4.0], requires_grad=True)
    >>> (w * w).sum().backward()           # grad [6, 8], norm 10
    >>> clip_grad_norm([w], 1.0)
    10.0
    >>> np.round(w.grad, 4)
    array([0.6, 0.8], dtype=float32)
    """
    # off: an infinite bound measures the norm and scales nothing
    return float(optim.clip_grad_norm_(params, max_norm if max_norm > 0 else math.inf))


def sgd_step(params: Iterable[Tensor], lr: float) -> None:
    """Plain gradient descent, ``p <- p - lr * p.grad`` for every parameter with a
    gradient: one step of :class:`minitorch.optim.SGD` (no momentum, no weight decay).

    Examples
    --------
    >>> w = minitorch.tensor([1.0, 2.0], requires_grad=True)
    >>> (w * w).sum().backward()
    >>> sgd_step([w], 0.25)
    >>> w.data
    array([0.5, 1. ], dtype=float32)
    """
    optim.SGD(params, lr).step()


def train_step(
    model: MLP,
    x: Tensor,
    y: Tensor,
    lr: float,
    clip: float,
    *,
    ddp: distributed.DataParallel | None = None,
    global_batch: int = 0,
) -> tuple[float, list[float]]:
    """One SGD step on the batch ``(x, y)``: zero the gradients, cross-entropy forward,
    backward, clip by global norm, update.

    With ``ddp`` (data-parallel training), ``(x, y)`` is this rank's share of a global
    batch of ``global_batch`` rows: each rank's loss is its rows' sum over
    ``global_batch``, and the gradients and the loss are summed over the ranks, so every
    rank steps with the global batch's mean gradient, whatever its share.

    Returns
    -------
    loss : float
        The batch loss before the update.
    norms : list of float
        Each layer's gradient norm before clipping.

    Examples
    --------
    >>> _ = minitorch.manual_seed(0)
    >>> model = MLP([4, 8, 3])
    >>> x, y = minitorch.ones(2, 4), minitorch.tensor([0, 2])
    >>> first, _ = train_step(model, x, y, lr=0.5, clip=0.0)
    >>> second, _ = train_step(model, x, y, lr=0.5, clip=0.0)
    >>> second < first
    True
    """
    model.zero_grad()
    if ddp is None:
        loss = minitorch.cross_entropy(model(x), y)
        loss.backward()
        value = float(loss)
    else:
        value = 0.0
        if x.shape[0]:  # an empty share adds zeros
            loss = minitorch.cross_entropy(model(x), y, reduction="sum") / global_batch
            loss.backward()
            value = float(loss)
        ddp.all_reduce_gradients(average=False)
        (value,) = distributed.all_reduce_floats([value])
    norms = grad_norms(model)
    clip_grad_norm(model.parameters(), clip)
    sgd_step(model.parameters(), lr)
    return value, norms


def _accuracy(logits: Tensor, y: np.ndarray) -> float:
    return float(np.mean(logits.argmax(axis=1).numpy() == y))


# ------------------------------------------------------------------------- training
@dataclasses.dataclass
class Config:
    """The demo's options (the command-line flags, with the same defaults)."""

    epochs: int = 20
    lr: float = 0.2
    hidden: int = 32
    batch_size: int = 32
    seed: int = 0
    backend: str = "numpy"
    dtype: str = "float32"
    device: Any = None
    clip: float = 0.5
    out: str = "demo-out"
    nproc: int = 1


@dataclasses.dataclass
class TrainResult:
    """What :func:`train` returns.

    Attributes
    ----------
    model : MLP
        The model after the last epoch.
    history : list of dict
        One row per epoch: ``epoch, loss, val_loss, train_acc, val_acc``, then per layer
        ``grad_norm_<layer>`` (mean over the epoch's steps, before clipping),
        ``grad_norm_total`` (the global norm, likewise), ``clipped`` (fraction of clipped
        steps) and ``w_<stat>_<layer>`` weight statistics (mean, std, min, max).
    best_epoch, best_state
        The epoch with the best validation accuracy (lowest validation loss among ties)
        and its weights.
    init_state : dict
        The initial weights.
    baseline : (str, float)
        The majority class and its validation accuracy.
    diverged : int or None
        The epoch in which a training loss became nan or infinite (training stopped
        there; ``history`` holds the epochs before it), else None.
    """

    config: Config
    data: Dataset
    model: MLP
    history: list[dict[str, float]]
    best_epoch: int
    best_state: dict[str, np.ndarray]
    init_state: dict[str, np.ndarray]
    baseline: tuple[str, float]
    backend: str
    seconds: float
    diverged: int | None = None

    @property
    def final(self) -> dict[str, float]:
        return self.history[-1]

    @property
    def best(self) -> dict[str, float]:
        return self.history[self.best_epoch - 1]


def _weight_stats(model: MLP) -> dict[str, float]:
    row: dict[str, float] = {}
    for i, (w, _) in enumerate(model.layers):
        a = w.numpy().astype(np.float64)
        for stat, value in (
            ("mean", a.mean()),
            ("std", a.std()),
            ("min", a.min()),
            ("max", a.max()),
        ):
            row[f"w_{stat}_layer{i + 1}"] = float(value)
    return row


def train(
    config: Config | None = None,
    *,
    data: Dataset | None = None,
    on_epoch: Callable[[dict[str, float]], None] | None = None,
    progress: bool = False,
    **overrides: Any,
) -> TrainResult:
    """Train the tense classifier; deterministic for a given seed, backend and dtype.

    Parameters
    ----------
    config : Config, optional
        Options; keyword ``overrides`` replace single fields (``train(epochs=5)``).
    data : Dataset, optional
        The grid's features (:func:`~minitorch.examples.grammar.build_dataset` by default).
    on_epoch : callable, optional
        Called with each epoch's metrics row.
    progress : bool
        Show a tqdm progress bar (only when tqdm is installed and stdout is a terminal).

    Returns
    -------
    TrainResult

    In a process group of :mod:`minitorch.distributed` with more than one rank, the
    ranks train one model together: each takes every ``world_size``-th row of each
    global batch (the same batches as one process), and gradients are summed over the
    ranks before each step, so the result is one process's up to rounding.

    Examples
    --------
    >>> result = train(epochs=3)
    >>> len(result.history), result.final["val_acc"] > result.baseline[1]
    (3, True)
    """
    cfg = dataclasses.replace(config or Config(), **overrides)
    data = data if data is not None else build_dataset()
    start = time.perf_counter()
    with minitorch.use_backend(cfg.backend, dtype=cfg.dtype, device=cfg.device) as be:
        minitorch.manual_seed(cfg.seed)
        shuffle = np.random.default_rng(cfg.seed)
        model = MLP([data.n_features, cfg.hidden, len(TENSES)])
        rank, world = distributed.get_rank(), distributed.get_world_size()
        ddp = distributed.DataParallel(model.parameters()) if world > 1 else None
        init_state = model.state_dict()
        x_train = minitorch.tensor(data.x_train, dtype=cfg.dtype)
        y_train = minitorch.tensor(data.y_train)
        x_val = minitorch.tensor(data.x_val, dtype=cfg.dtype)
        y_val = minitorch.tensor(data.y_val)
        n = len(data.y_train)
        history: list[dict[str, float]] = []
        best_epoch, best_key = 0, (-1.0, math.inf)
        best_state = init_state
        bar = _progress(cfg.epochs, enabled=progress)
        diverged = None
        for epoch in range(1, cfg.epochs + 1):
            perm = shuffle.permutation(n)
            total_loss, clipped, steps = 0.0, 0, 0
            norm_sums = [0.0] * len(model.layers)
            total_norms = 0.0
            for lo in range(0, n, cfg.batch_size):
                batch = perm[lo : lo + cfg.batch_size]
                idx = minitorch.tensor(batch[rank::world])
                xb = minitorch.take(x_train, idx, axis=0)
                yb = minitorch.take(y_train, idx, axis=0)
                loss, norms = train_step(
                    model, xb, yb, cfg.lr, cfg.clip, ddp=ddp, global_batch=len(batch)
                )
                if not math.isfinite(loss):
                    diverged = epoch
                    break
                total_loss += loss * len(batch)
                norm_sums = [s + g for s, g in zip(norm_sums, norms, strict=True)]
                total = math.sqrt(sum(g * g for g in norms))
                total_norms += total
                clipped += cfg.clip > 0 and total > cfg.clip
                steps += 1
            if diverged is not None:
                break
            with minitorch.no_grad():
                train_logits = model(x_train)
                val_logits = model(x_val)
                val_loss = float(minitorch.cross_entropy(val_logits, y_val))
            row: dict[str, float] = {
                "epoch": epoch,
                "loss": total_loss / n,
                "val_loss": val_loss,
                "train_acc": _accuracy(train_logits, data.y_train),
                "val_acc": _accuracy(val_logits, data.y_val),
            }
            for i, s in enumerate(norm_sums):
                row[f"grad_norm_layer{i + 1}"] = s / steps
            row["grad_norm_total"] = total_norms / steps
            row["clipped"] = clipped / steps
            row.update(_weight_stats(model))
            history.append(row)
            key = (row["val_acc"], -val_loss)
            if key > (best_key[0], -best_key[1]):
                best_epoch, best_key = epoch, (row["val_acc"], val_loss)
                best_state = model.state_dict()
            if bar is not None:
                bar.set_postfix(loss=f"{row['loss']:.4f}", val_acc=f"{row['val_acc']:.1%}")
                bar.update(1)
            if on_epoch is not None:
                on_epoch(row)
        if bar is not None:
            bar.close()
        description = be.describe()
    return TrainResult(
        config=cfg,
        data=data,
        model=model,
        history=history,
        best_epoch=best_epoch,
        best_state=best_state,
        init_state=init_state,
        baseline=data.baseline(),
        backend=description,
        seconds=time.perf_counter() - start,
        diverged=diverged,
    )


def _progress(total: int, *, enabled: bool) -> Any:
    """A tqdm bar, or None (tqdm missing, not wanted, or stdout not a terminal)."""
    if not enabled or not sys.stdout.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(
        total=total, desc="training", unit="epoch", leave=False, disable=not sys.stdout.isatty()
    )


# -------------------------------------------------------------------------- outputs
def write_metrics(result: TrainResult, out: pathlib.Path) -> list[pathlib.Path]:
    """Write ``metrics.csv`` (one row per epoch) and ``metrics.json`` (all of it)."""
    out.mkdir(parents=True, exist_ok=True)
    csv_path, json_path = out / "metrics.csv", out / "metrics.json"
    with atomic_path(csv_path) as tmp, tmp.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(result.history[0]))
        writer.writeheader()
        writer.writerows(result.history)
    summary = {
        "task": "tense of English verb phrases (5 classes), held-out verbs for validation",
        "backend": result.backend,
        "config": {
            k: (str(v) if k == "device" and v is not None else v)
            for k, v in dataclasses.asdict(result.config).items()
        },
        "n_train": len(result.data.y_train),
        "n_val": len(result.data.y_val),
        "held_out_verbs": list(HELD_OUT),
        "n_parameters": result.model.num_parameters(),
        "baseline": {"majority_class": result.baseline[0], "val_acc": result.baseline[1]},
        "final": result.final,
        "best_epoch": result.best_epoch,
        "best": result.best,
        "train_seconds": result.seconds,
        "history": result.history,
    }
    write_text(json_path, json.dumps(summary, indent=2) + "\n")
    return [csv_path, json_path]


def write_graph(result: TrainResult, out: pathlib.Path) -> tuple[list[pathlib.Path], str | None]:
    """Draw one forward/backward of a two-phrase validation batch with the best weights.

    Writes ``graph.dot`` and ``graph.svg`` (with Graphviz when it is installed, else with
    minitorch's own layout). Returns the files and a note (None: nothing to say).
    """
    cfg = result.config
    with minitorch.use_backend(cfg.backend, dtype=cfg.dtype, device=cfg.device):
        model = MLP(result.model.sizes)
        model.load_state_dict(result.best_state)
        rows = [result.data.cells_val.index(c) for c in _showcase(result.data)[:2]]
        x = minitorch.tensor(result.data.x_val[rows], dtype=cfg.dtype)
        y = minitorch.tensor(result.data.y_val[rows])
        loss = minitorch.cross_entropy(model(x, retain=True), y)
        loss.name = "loss"
        loss.retain_grad()  # its box shows d loss / d loss = 1, as every other box its grad
        loss.backward(retain_graph=True)
        phrases = " / ".join(f'"{result.data.cells_val[r].phrase}"' for r in rows)
        text = viz.to_dot(loss, title=f"one forward/backward of {phrases} (best weights)")
    dot_path = out / "graph.dot"
    write_text(dot_path, text)
    return [dot_path, viz.render_dot(text, out / "graph.svg")], None


def _showcase(data: Dataset) -> list[Any]:
    """A few held-out phrases worth showing (irregular forms and auxiliaries)."""
    wanted = ["he swam", "I had gone", "you have written", "he teaches", "I will choose", "he sat"]
    by_phrase = {c.phrase: c for c in data.cells_val}
    return [by_phrase[p] for p in wanted if p in by_phrase]


def epoch_ticks(epochs: int) -> list[int]:
    """Epoch ticks for the plots: the first and the last epoch, and round ones between
    (about six).

    Examples
    --------
    >>> epoch_ticks(20), epoch_ticks(3), epoch_ticks(37), epoch_ticks(11)
    ([1, 5, 10, 15, 20], [1, 2, 3], [1, 10, 20, 30, 37], [1, 2, 4, 6, 8, 11])
    """
    steps = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
    step = next((s for s in steps if epochs / s <= 6), -(-epochs // 6))
    ticks = [1, *range(step, epochs, step), epochs]
    if len(ticks) > 2 and epochs - ticks[-2] <= step / 2:  # keep the last one clear
        ticks.pop(-2)
    return sorted(set(ticks))


def write_plots(result: TrainResult, out: pathlib.Path) -> list[pathlib.Path]:
    """PNG plots with matplotlib (object API, Agg: no display and no global state).

    ``loss.png``, ``accuracy.png``, ``grad_norms.png``, ``weights.png`` and
    ``overview.png`` (the four together). Raises ImportError without matplotlib.
    """
    from matplotlib.figure import Figure

    hist = result.history
    epochs = [r["epoch"] for r in hist]
    layers = len(result.model.layers)
    paths = []

    def loss_ax(ax: Any) -> None:
        ax.plot(epochs, [r["loss"] for r in hist], label="train")
        ax.plot(epochs, [r["val_loss"] for r in hist], label="validation (held-out verbs)")
        ax.set_yscale("log")
        ax.set(xlabel="epoch", ylabel="cross-entropy", title="loss")
        ax.legend()

    def acc_ax(ax: Any) -> None:
        ax.plot(epochs, [100 * r["train_acc"] for r in hist], label="train")
        ax.plot(epochs, [100 * r["val_acc"] for r in hist], label="validation")
        ax.axhline(
            100 * result.baseline[1],
            color="grey",
            ls="--",
            label=f"majority baseline ({result.baseline[0]})",
        )
        ax.set(xlabel="epoch", ylabel="accuracy (%)", title="accuracy", ylim=(0, 102))
        ax.legend(loc="center right")  # the curves are above it, the baseline below

    def grad_ax(ax: Any) -> None:
        for i in range(layers):
            ax.plot(epochs, [r[f"grad_norm_layer{i + 1}"] for r in hist], label=f"layer {i + 1}")
        ax.plot(epochs, [r["grad_norm_total"] for r in hist], color="black", lw=1, label="global")
        if result.config.clip > 0:
            ax.axhline(result.config.clip, color="grey", ls="--", label="clip (global norm)")
        ax.set_yscale("log")
        ax.margins(y=0.15)
        ax.set(xlabel="epoch", ylabel="mean gradient norm", title="gradient norm per layer")
        ax.legend()

    def weight_ax(ax: Any) -> None:
        for i in range(layers):
            key = f"layer{i + 1}.weight"
            init, best = result.init_state[key].ravel(), result.best_state[key].ravel()
            n_bins = int(np.clip(np.sqrt(init.size), 10, 40))
            bins = np.linspace(min(init.min(), best.min()), max(init.max(), best.max()), n_bins + 1)
            color = f"C{i}"
            ax.hist(
                init,
                bins=bins,
                histtype="step",
                density=True,
                color=color,
                lw=1.5,
                label=f"layer {i + 1} at init",
            )
            ax.hist(
                best,
                bins=bins,
                histtype="stepfilled",
                density=True,
                color=color,
                alpha=0.35,
                label=f"layer {i + 1} trained (best)",
            )
        ax.set(xlabel="weight", ylabel="density", title="weight histograms (init vs best)")
        ax.legend(fontsize="small")

    def integer_epochs(ax: Any) -> None:
        if ax.get_xlabel() == "epoch":
            ax.set_xticks(epoch_ticks(len(epochs)))

    for name, draw in (
        ("loss", loss_ax),
        ("accuracy", acc_ax),
        ("grad_norms", grad_ax),
        ("weights", weight_ax),
    ):
        fig = Figure(figsize=(6, 4), dpi=100, layout="constrained")
        ax = fig.add_subplot()
        draw(ax)
        integer_epochs(ax)
        paths.append(out / f"{name}.png")
        with atomic_path(paths[-1]) as tmp:
            fig.savefig(tmp)
    fig = Figure(figsize=(11, 7.5), dpi=80, layout="constrained")
    axes = fig.subplots(2, 2)
    for ax, draw in zip(axes.ravel(), (loss_ax, acc_ax, grad_ax, weight_ax), strict=True):
        draw(ax)
        integer_epochs(ax)
    fig.suptitle(f"minitorch demo: tense classifier, {result.backend}")
    paths.append(out / "overview.png")
    with atomic_path(paths[-1]) as tmp:
        fig.savefig(tmp)
    return paths


# ----------------------------------------------------------------------------- CLI
def _epoch_line(row: dict[str, float], epochs: int, layers: int) -> str:
    grads = " ".join(f"{row[f'grad_norm_layer{i + 1}']:.3f}" for i in range(layers))
    stds = " ".join(f"{row[f'w_std_layer{i + 1}']:.3f}" for i in range(layers))
    return (
        f"epoch {int(row['epoch']):3d}/{epochs}  loss {row['loss']:.4f}  "
        f"train {row['train_acc']:6.1%}  val {row['val_acc']:6.1%}  "
        f"|grad| {grads}  std(W) {stds}"
    )


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    rule = "-" * len(lines[0])
    return "\n".join([lines[0], rule, *lines[1:]])


def summary_table(result: TrainResult) -> str:
    """The final summary: results, then one row per layer."""
    fin, best = result.final, result.best
    rows = [
        ["", f"final (epoch {int(fin['epoch'])})", f"best (epoch {result.best_epoch})"],
        ["train loss", f"{fin['loss']:.4f}", f"{best['loss']:.4f}"],
        ["validation loss", f"{fin['val_loss']:.4f}", f"{best['val_loss']:.4f}"],
        ["train accuracy", f"{fin['train_acc']:.1%}", f"{best['train_acc']:.1%}"],
        ["validation accuracy", f"{fin['val_acc']:.1%}", f"{best['val_acc']:.1%}"],
        [f"majority baseline ({result.baseline[0]})", f"{result.baseline[1]:.1%}", ""],
    ]
    layer_rows = [["layer", "shape", "|grad| last epoch", "W mean", "W std", "W min", "W max"]]
    for i, (w, _) in enumerate(result.model.layers):
        k = f"layer{i + 1}"
        layer_rows.append(
            [k, "x".join(str(s) for s in w.shape), f"{fin[f'grad_norm_{k}']:.4f}"]
            + [
                f"{fin[f'w_{s}_{k}']:{'.4f' if s == 'std' else '+.4f'}}"
                for s in ("mean", "std", "min", "max")
            ]
        )
    return _table(rows) + "\n\n" + _table(layer_rows)


def _positive(text: str) -> float:
    """argparse type: a positive, finite number (the learning rate)."""
    value = float(text)
    if not (value > 0.0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text}")
    return value


def _non_negative(text: str) -> float:
    """argparse type: a finite number >= 0 (the clipping norm; 0 turns clipping off)."""
    value = float(text)
    if not (value >= 0.0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0 (0: off), got {text}")
    return value


def _seed(text: str) -> int:
    """argparse type: a seed, an integer >= 0 (what NumPy's generators take)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text}")
    return value


def _writable_folder(out: pathlib.Path) -> str | None:
    """Why the demo cannot write its results into ``out`` (None if it can): checked
    before training, so that a long run never ends in a failed write."""
    if out.exists() and not out.is_dir():
        return f"--out {out}: exists and is not a folder; give a folder path"
    try:
        out.mkdir(parents=True, exist_ok=True)
        with atomic_path(out / ".minitorch-write-test") as tmp:
            tmp.write_bytes(b"")
        (out / ".minitorch-write-test").unlink()
    except OSError as exc:
        why = exc.strerror or exc
        return f"--out {out}: cannot write there ({why}); give a folder you can write to"
    return None


def _usable_device(be: minitorch.Backend) -> str | None:
    """Why the backend's device cannot hold an array (None if it can): a CPU build of
    PyTorch parses ``cuda`` but fails at the first tensor."""
    try:
        be.xp.zeros((1,), dtype=be.dtype, device=be.device)
    except Exception as exc:
        return f"--device {be.device}: the {be.name} backend cannot use it ({exc})"
    return None


def _parser() -> argparse.ArgumentParser:
    d = Config()
    p = argparse.ArgumentParser(
        prog="minitorch demo",
        description="Train an MLP with minitorch to name the tense of English verb phrases "
        "(70 verbs x 3 persons x 5 tenses; validation on 18 held-out verbs).",
    )
    p.add_argument(
        "--epochs", type=int, default=d.epochs, help=f"passes over the data (default {d.epochs})"
    )
    p.add_argument("--lr", type=_positive, default=d.lr, help=f"SGD learning rate (default {d.lr})")
    p.add_argument(
        "--hidden", type=int, default=d.hidden, help=f"hidden units (default {d.hidden})"
    )
    p.add_argument(
        "--batch-size",
        type=int,
        default=d.batch_size,
        help=f"mini-batch size (default {d.batch_size})",
    )
    p.add_argument(
        "--seed",
        type=_seed,
        default=d.seed,
        help=f"initialisation and shuffling (default {d.seed})",
    )
    p.add_argument(
        "--backend",
        default=d.backend,
        choices=list(minitorch.backend.BACKENDS),
        help="array library (default numpy)",
    )
    p.add_argument(
        "--dtype", default=d.dtype, choices=["float32", "float64"], help="(default float32)"
    )
    p.add_argument(
        "--device", default=None, help="the backend's device, e.g. cuda:0 (default: the backend's)"
    )
    p.add_argument(
        "--clip",
        type=_non_negative,
        default=d.clip,
        help=f"clip gradients to this global norm; 0: off (default {d.clip})",
    )
    p.add_argument("--out", default=d.out, help=f"output folder (default {d.out})")
    p.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    p.add_argument(
        "--nproc",
        type=int,
        default=d.nproc,
        help="train data-parallel in this many local processes on torch.distributed "
        "(needs torch; default 1). Under torchrun, leave it out: the ranks come from "
        "the environment",
    )
    return p


def _without_nproc(argv: Sequence[str]) -> list[str]:
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--nproc":
            skip = True
        elif not a.startswith("--nproc="):
            out.append(a)
    return out


def launch(nproc: int, argv: Sequence[str]) -> int:
    """``minitorch demo --nproc N``: start ``N`` ranks of the demo on this machine (as
    ``torchrun --nproc-per-node N`` would: ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
    ``MASTER_ADDR``/``MASTER_PORT`` on a free loopback port) and wait for them. When one
    rank fails, the others stop at their next collective (at most
    :data:`minitorch.distributed.DEFAULT_TIMEOUT` seconds later) or are ended; the exit
    status is the first failure's."""
    port = distributed.free_port()
    cmd = [sys.executable, "-m", "minitorch", "demo", *_without_nproc(argv)]
    procs = []
    for rank in range(nproc):
        env = {
            **os.environ,
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(nproc),
            "LOCAL_WORLD_SIZE": str(nproc),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
        procs.append(subprocess.Popen(cmd, env=env))
    failed: int | None = None
    deadline = math.inf
    try:
        while any(p.poll() is None for p in procs):
            for p in procs:
                if failed is None and p.returncode not in (None, 0):
                    failed = p.returncode
                    deadline = time.monotonic() + distributed.DEFAULT_TIMEOUT + 5
            if time.monotonic() > deadline:
                for p in procs:
                    if p.poll() is None:
                        p.kill()
            time.sleep(0.05)
    except KeyboardInterrupt:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
        return 130
    codes = [p.returncode for p in procs]
    return failed if failed is not None else next((c for c in codes if c), 0)


def main(argv: Sequence[str] | None = None) -> int:
    """``minitorch demo [options]``: train, print the story, write the outputs."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    if args.epochs < 1 or args.batch_size < 1 or args.hidden < 1 or args.nproc < 1:
        print(
            "minitorch demo: --epochs, --batch-size, --hidden and --nproc must be positive",
            file=sys.stderr,
        )
        return 2
    world = int(os.environ.get("WORLD_SIZE", "1") or "1")
    rank = int(os.environ.get("RANK", "0") or "0") if world > 1 else 0
    if (args.nproc > 1 or world > 1) and importlib.util.find_spec("torch") is None:
        print(
            "minitorch demo: training in several processes runs on torch.distributed, and "
            "torch is not installed: pip install 'minitorch[torch]'",
            file=sys.stderr,
        )
        return 2
    if args.backend == "jax" and args.dtype == "float64":
        _enable_jax_x64()
    cfg = Config(
        epochs=args.epochs,
        lr=args.lr,
        hidden=args.hidden,
        batch_size=args.batch_size,
        seed=args.seed,
        backend=args.backend,
        dtype=args.dtype,
        device=args.device,
        clip=args.clip,
        out=args.out,
    )
    try:
        be = minitorch.backend.resolve(cfg.backend, cfg.dtype, cfg.device)
    except (ImportError, ValueError) as exc:
        print(f"minitorch demo: {exc}", file=sys.stderr)
        return 2
    problem = _usable_device(be) or (rank == 0 and _writable_folder(pathlib.Path(cfg.out)))
    if problem:
        print(f"minitorch demo: {problem}", file=sys.stderr)
        return 2
    if args.nproc > 1 and world == 1:
        return launch(args.nproc, argv)
    if world == 1:
        return _run(args, cfg, be)
    try:
        minitorch.set_backend(cfg.backend, dtype=cfg.dtype, device=cfg.device)
        distributed.init_process_group()  # Gloo, or NCCL with a GPU per LOCAL_RANK
        cfg.device = minitorch.get_backend().device
        cfg.nproc = world
        if rank == 0:
            return _run(args, cfg, minitorch.get_backend())
        with contextlib.redirect_stdout(io.StringIO()):  # rank 0 alone speaks and writes
            return _run(args, cfg, minitorch.get_backend())
    except DistributedError as exc:
        print(f"minitorch demo: {exc}", file=sys.stderr)
        return 1
    finally:
        distributed.destroy_process_group()


def _run(args: argparse.Namespace, cfg: Config, be: minitorch.Backend) -> int:
    """Train and report (rank 0, or the only process); the other ranks train only."""
    rank = distributed.get_rank()
    wall = time.perf_counter()
    data = build_dataset()
    n_irregular = sum(not v.regular for v in VERBS)
    print(f"minitorch demo: the tense of English verb phrases, on {be.describe()}")
    print(
        f"grid: {len(VERBS)} verbs ({len(VERBS) - n_irregular} regular, {n_irregular} irregular) "
        f"x {len(PERSONS)} persons x {len(TENSES)} tenses; train on {len(data.y_train)} phrases, "
        f"validate on {len(data.y_val)} of {len(HELD_OUT)} held-out verbs"
    )
    sizes = [data.n_features, cfg.hidden, len(TENSES)]
    n_params = sum(a * b + b for a, b in itertools.pairwise(sizes))
    print(
        f"model: MLP {' -> '.join(map(str, sizes))} (ReLU), {n_params:,} parameters, Xavier init; "
        f"SGD lr {cfg.lr}, batch {cfg.batch_size}, clip {cfg.clip}, {cfg.epochs} epochs, "
        f"seed {cfg.seed}"
    )
    if cfg.nproc > 1:
        print(
            f"data parallel: {cfg.nproc} processes on torch.distributed "
            f"({distributed.backend_name()}), each takes 1/{cfg.nproc} of every batch; "
            f"gradients summed before each step"
        )
    layers = len(sizes) - 1
    every = max(1, cfg.epochs // 5)
    bar_shown = sys.stdout.isatty()

    def on_epoch(row: dict[str, float]) -> None:
        e = int(row["epoch"])
        if e == 1 or e % every == 0 or e == cfg.epochs:
            line = _epoch_line(row, cfg.epochs, layers)
            if bar_shown:
                try:
                    from tqdm import tqdm

                    tqdm.write(line)
                    return
                except ImportError:
                    pass
            print(line, flush=True)

    result = train(cfg, data=data, on_epoch=on_epoch, progress=True)
    if result.diverged is not None:
        print(
            f"minitorch demo: the training loss became nan or infinite in epoch "
            f"{result.diverged} of {cfg.epochs} (lr {cfg.lr}, clip {cfg.clip}); stopped. "
            f"Nothing was written: {cfg.out} keeps what it held. Try a smaller --lr, or "
            f"--clip to bound each step.",
            file=sys.stderr if rank == 0 else io.StringIO(),
        )
        return 1
    if rank != 0:
        return 0
    print()
    print(summary_table(result))
    print()
    with minitorch.use_backend(cfg.backend, dtype=cfg.dtype, device=cfg.device):
        probe = MLP(result.model.sizes)
        probe.load_state_dict(result.best_state)
        with minitorch.no_grad():
            logits = probe(minitorch.tensor(data.x_val, dtype=cfg.dtype))
        said = [TENSES[int(g)] for g in logits.argmax(axis=1).numpy()]
    n_val = len(said)
    wrong = [(c, t) for c, t in zip(data.cells_val, said, strict=True) if t != c.tense]
    print(f"held-out verbs, best weights: {n_val - len(wrong)} of {n_val} phrases right, e.g.")
    cells = _showcase(data)
    pairs = [f'"{c.phrase}" -> {said[data.cells_val.index(c)]}' for c in cells]
    for i in range(0, len(pairs), 3):
        print("  " + "   ".join(pairs[i : i + 3]))
    if wrong:
        shown = ", ".join(f'"{c.phrase}" ({c.tense}, said {t})' for c, t in wrong[:6])
        print(f"  wrong: {shown}{', ...' if len(wrong) > 6 else ''}")
    out = pathlib.Path(cfg.out)
    written = write_metrics(result, out)
    written.append(probe.save(out / "best.npz"))
    notes = []
    graph_files, note = write_graph(result, out)
    written += graph_files
    if note:
        notes.append(note)
    if not args.no_plots:
        try:
            written += write_plots(result, out)
        except ImportError:
            notes.append(PLOTS_HINT)
    names = ", ".join(p.name for p in written)
    print(f"wrote {out}{os.sep}: {names}")
    kept = {p.name for p in written}
    stale = [out / n for n in OUTPUTS if n not in kept and (out / n).is_file()]
    for path in stale:  # a run owns its folder: nothing of an earlier run stays beside it
        path.unlink()
    if stale:
        print(f"removed what an earlier run left there: {', '.join(p.name for p in stale)}")
    for note in notes:
        print(f"note: {note}")
    print(f"done in {time.perf_counter() - wall:.1f} s (training {result.seconds:.1f} s)")
    return 0


def _enable_jax_x64() -> None:
    """float64 on JAX needs x64 mode, switched on before the first array is made."""
    try:
        import jax
    except ImportError:
        return
    config: Any = jax.config
    config.update("jax_enable_x64", True)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
