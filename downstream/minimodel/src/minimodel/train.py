"""Training a :class:`~minimodel.TinyLM` on a text: batches, the loop, checkpoints.

Every batch is a function of ``(seed, step)`` alone, and so is the dropout mask of the
step (minitorch's generator is reseeded from them before each step). A run that stops
at step k, saves the model and the optimizer, and resumes from the checkpoint takes
exactly the steps of a run that never stopped.
"""

from __future__ import annotations

import dataclasses
import importlib.resources
import math
import os
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np

import minitorch

from .lm import TinyLM

__all__ = [
    "TrainConfig",
    "get_batch",
    "load_checkpoint",
    "load_text",
    "save_checkpoint",
    "step_seed",
    "train",
]


def load_text(name: str = "sonnets.txt") -> str:
    """A text shipped in ``minimodel/data`` (default: Shakespeare's Sonnets 1-18)."""
    return (importlib.resources.files("minimodel") / "data" / name).read_text(encoding="utf-8")


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """How to train: AdamW (``torch.optim.AdamW``'s defaults but ``lr``), batches of
    ``batch_size`` windows of the model's context length, gradient norm clipped to
    ``clip`` (None: no clipping)."""

    steps: int = 1000
    batch_size: int = 16
    lr: float = 1e-2
    weight_decay: float = 0.01
    clip: float | None = 1.0
    seed: int = 0
    log_every: int = 50


def step_seed(seed: int, step: int, stream: int = 0) -> int:
    """A 32-bit seed for step ``step`` of a run seeded ``seed`` (NumPy's SeedSequence):
    ``stream`` 0 draws the batch, 1 the dropout masks (independent of each other)."""
    return int(np.random.SeedSequence([seed, step, stream]).generate_state(1)[0])


def get_batch(
    data: np.ndarray, batch_size: int, block_size: int, seed: int, step: int
) -> tuple[np.ndarray, np.ndarray]:
    """``batch_size`` random windows of ``block_size`` tokens of ``data`` and the same
    windows shifted by one (the next tokens), as int64 arrays ``(batch, block_size)``.

    The windows depend on ``(seed, step)`` only, so a resumed run draws the batches an
    uninterrupted one would.
    """
    if data.ndim != 1 or len(data) <= block_size:
        raise ValueError(
            f"get_batch: the data must be 1-D and longer than block_size={block_size}, "
            f"got shape {data.shape}"
        )
    rng = np.random.default_rng(step_seed(seed, step))
    starts = rng.integers(0, len(data) - block_size, size=batch_size)
    idx = starts[:, None] + np.arange(block_size)
    return data[idx], data[idx + 1]


def train(
    model: TinyLM,
    data: np.ndarray,
    config: TrainConfig | None = None,
    *,
    optimizer: minitorch.optim.Optimizer | None = None,
    start_step: int = 0,
    on_step: Callable[[int, float], None] | None = None,
) -> list[float]:
    """Train ``model`` on the token ids ``data`` for steps ``start_step`` to
    ``config.steps - 1``; returns the loss of each of those steps.

    ``config`` defaults to ``TrainConfig()``; ``optimizer`` to a new
    ``minitorch.optim.AdamW`` over ``model.parameters()`` with its ``lr`` and ``weight_decay``;
    pass one (with its state loaded) to resume. ``on_step(step, loss)`` is called after
    each step. The model is put in training mode.
    """
    config = TrainConfig() if config is None else config
    opt = optimizer or minitorch.optim.AdamW(
        model.parameters(), lr=config.lr, weight_decay=config.weight_decay
    )
    params = list(model.parameters())
    model.train()
    losses: list[float] = []
    for step in range(start_step, config.steps):
        x, y = get_batch(data, config.batch_size, model.config.block_size, config.seed, step)
        minitorch.manual_seed(step_seed(config.seed, step, 1))  # this step's dropout masks
        loss = model.loss(x, y)
        opt.zero_grad()
        loss.backward()
        if config.clip is not None:
            minitorch.optim.clip_grad_norm_(params, config.clip)
        opt.step()
        value = float(loss.item())
        if not math.isfinite(value):
            raise FloatingPointError(
                f"train: the loss is {value} at step {step}; lower the learning rate "
                f"(lr={config.lr}) or keep gradient clipping on"
            )
        losses.append(value)
        if on_step is not None:
            on_step(step, value)
    return losses


def save_checkpoint(
    path: str | os.PathLike[str], model: TinyLM, optimizer: minitorch.optim.Optimizer, step: int
) -> pathlib.Path:
    """Write the model's configuration and state dict, the optimizer's state dict and
    the number of steps taken, with :func:`minitorch.save` (atomic)."""
    return minitorch.save(
        {
            "config": dataclasses.asdict(model.config),
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "step": step,
        },
        path,
    )


def load_checkpoint(
    path: str | os.PathLike[str], model: TinyLM, optimizer: minitorch.optim.Optimizer
) -> int:
    """Load what :func:`save_checkpoint` wrote into ``model`` and ``optimizer``; returns
    the step to resume from. The model's configuration must match the checkpoint's."""
    ckpt: Any = minitorch.load(path)
    if not isinstance(ckpt, dict) or not {"config", "model", "optimizer", "step"} <= set(ckpt):
        raise ValueError(
            f"load_checkpoint: {os.fspath(path)!r} is not a checkpoint written by "
            f"save_checkpoint (it needs 'config', 'model', 'optimizer' and 'step')"
        )
    saved = ckpt["config"]
    ours = dataclasses.asdict(model.config)
    if saved != ours:
        diff = {k: (saved.get(k), v) for k, v in ours.items() if saved.get(k) != v}
        raise ValueError(
            f"load_checkpoint: the checkpoint's model configuration differs from this "
            f"model's (name: (checkpoint, model)): {diff}; build TinyLM(LMConfig(**config)) "
            f"from the checkpoint's 'config'"
        )
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    return int(ckpt["step"])
