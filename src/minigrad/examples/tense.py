"""Train a 2-layer Value MLP on the 5-way tense-identity task.

Each of the five tenses is given as a one-hot vector; the network must return five logits
that reproduce it, under the squared-error loss ``sum_k (logit_k - target_k) ** 2``. The
epoch loss is the mean over the five tenses. Per-tense gradients are *accumulated* into the
parameters by calling ``backward()`` once per tense, which is why minigrad keeps PyTorch's
accumulation semantics.

Run ``python -m minigrad.examples.tense`` (``--help`` for options).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence

from minigrad.nn import MLP, sgd_step, squared_error

__all__ = ["TENSES", "fit", "main", "one_hot", "train"]

TENSES = ("present", "past", "future", "present perfect", "past perfect")
"""The five tense classes, in logit order."""

#: ``walk`` in each tense, for the printout.
FORMS = ("walks", "walked", "will walk", "has walked", "had walked")


def one_hot(index: int, n: int = len(TENSES)) -> list[float]:
    """Return the one-hot vector of length ``n`` with a 1.0 at ``index``.

    Examples
    --------
    >>> one_hot(1)
    [0.0, 1.0, 0.0, 0.0, 0.0]
    """
    return [1.0 if j == index else 0.0 for j in range(n)]


def fit(
    epochs: int = 300, seed: int = 0, hidden: int = 16, lr: float = 0.01
) -> tuple[MLP, list[float]]:
    """Train a ``5-hidden-5`` ReLU MLP with full-batch gradient descent.

    Parameters
    ----------
    epochs : int
        Number of passes over the five tenses (one parameter update each).
    seed : int
        Seed of the weight initialisation; the run is otherwise deterministic.
    hidden : int
        Width of the hidden layer.
    lr : float
        Learning rate.

    Returns
    -------
    model : MLP
        The trained network.
    losses : list of float
        The mean loss over the five tenses at each epoch, measured before that epoch's
        update.

    Examples
    --------
    >>> model, losses = fit(epochs=20, seed=0)
    >>> losses[-1] < losses[0]
    True
    """
    model = MLP(len(TENSES), [hidden, len(TENSES)], activation="relu", rng=random.Random(seed))
    params = model.parameters()
    data = [one_hot(i) for i in range(len(TENSES))]
    scale = 1.0 / len(data)
    losses: list[float] = []
    for _ in range(epochs):
        model.zero_grad()
        total = 0.0
        for x in data:
            loss = squared_error(model(x), x) * scale
            loss.backward()  # accumulates d(mean loss)/d(param) over the five tenses
            total += loss.data
        sgd_step(params, lr)
        losses.append(total)
    return model, losses


def train(epochs: int = 300, seed: int = 0, hidden: int = 16, lr: float = 0.01) -> list[float]:
    """Train as :func:`fit` does and return only the per-epoch losses.

    Examples
    --------
    >>> losses = train(epochs=5)
    >>> len(losses)
    5
    """
    return fit(epochs=epochs, seed=seed, hidden=hidden, lr=lr)[1]


def predict(model: MLP, tense: int) -> list[float]:
    """Return the five logits of ``model`` for the one-hot input of ``tense``.

    Examples
    --------
    >>> model, _ = fit(epochs=1)
    >>> len(predict(model, 0))
    5
    """
    return [v.data for v in model(one_hot(tense))]


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: train and print the loss curve and the predictions."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args(argv)

    model, losses = fit(args.epochs, args.seed, args.hidden, args.lr)
    for epoch in sorted({1, 10, 25, 50, 100, 200, args.epochs}):
        if epoch <= len(losses):
            print(f"epoch {epoch:4d}  loss {losses[epoch - 1]:.6f}")
    below = next((i + 1 for i, loss in enumerate(losses) if loss < 0.5), None)
    print(f"loss first below 0.5 at epoch {below}" if below else "loss never went below 0.5")
    for i, (tense, form) in enumerate(zip(TENSES, FORMS, strict=True)):
        logits = predict(model, i)
        guess = TENSES[max(range(len(logits)), key=logits.__getitem__)]
        shown = " ".join(f"{x:+.2f}" for x in logits)
        print(f"{form!r:>14} {tense:>15} -> {guess:<15} logits [{shown}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
