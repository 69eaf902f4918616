"""Draw the graph of a small grammar loss, forward and backward.

The loss is the squared error over the five tense logits of one verb, ``had walked``,
whose tense is *past perfect*: ``sum_k (logit_k - target_k) ** 2``. After ``backward()``
each node shows its value and ``d loss / d node``; the logits' gradients are
``2 * (logit_k - target_k)``.

Run ``python -m minigrad.examples.grammar_graph docs/graph-example.svg`` to regenerate the
picture committed in ``docs/`` (needs the Graphviz ``dot`` program).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from minigrad.examples.tense import TENSES, one_hot
from minigrad.scalar import Value
from minigrad.viz import render, to_dot

__all__ = ["LOGITS", "TARGET", "VERB", "grammar_loss", "main"]

VERB = "had walked"
TARGET = TENSES.index("past perfect")
LOGITS = (0.1, -0.3, 0.2, 0.4, 0.6)
"""Scores a half-trained model might give ``had walked`` for each tense."""


def grammar_loss(logits: Sequence[float] = LOGITS) -> tuple[Value, list[Value]]:
    """Build the loss graph and run ``backward()``; return ``(loss, logit_leaves)``.

    Examples
    --------
    >>> loss, leaves = grammar_loss()
    >>> round(loss.data, 4), [round(v.grad, 4) for v in leaves]
    (0.46, [0.2, -0.6, 0.4, 0.8, -0.8])
    """
    target = one_hot(TARGET)
    leaves = [Value(x, label=f"logit[{t}]") for x, t in zip(logits, TENSES, strict=True)]
    squares = []
    for leaf, t, name in zip(leaves, target, TENSES, strict=True):
        err = leaf - t
        err.label = f"logit[{name}] - {t:g}"
        sq = err**2
        sq.label = f"({name} error)^2"
        squares.append(sq)
    loss = Value.sum(squares)
    loss.label = "loss"
    loss.backward()
    return loss, leaves


def main(argv: Sequence[str] | None = None) -> int:
    """Write the picture to the path given (``docs/graph-example.svg`` by default)."""
    args = list(sys.argv[1:] if argv is None else argv)
    path = args[0] if args else "docs/graph-example.svg"
    loss, _ = grammar_loss()
    title = f'squared error over the 5 tense logits of "{VERB}" -> {TENSES[TARGET]}'
    if path == "-":
        print(to_dot(loss, title=title), end="")
    else:
        print(render(loss, path, title=title))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
