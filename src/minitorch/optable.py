"""The op table of the docs, generated from the op registry so that it cannot drift.

``nox -s regen`` writes it (with the other text generated from the registry, see
:mod:`minitorch.dev`); ``tests/test_docs.py`` fails when ``docs/ops.md`` differs from
what :func:`render` returns.
"""

from __future__ import annotations

import sys

from .backend import BACKENDS
from .ops import REGISTRY
from .ops._registry import OpDef
from .tensor import Tensor

__all__ = ["render"]

#: Tensor dunder -> (how it is spelled, the op it stands for when not bound to op.fn)
_OPERATORS: dict[str, tuple[str, str]] = {
    "__add__": ("x + y", "add"),
    "__sub__": ("x - y", "sub"),
    "__mul__": ("x * y", "mul"),
    "__truediv__": ("x / y", "div"),
    "__pow__": ("x ** y", "pow"),
    "__matmul__": ("x @ y", "matmul"),
    "__neg__": ("-x", "neg"),
    "__abs__": ("abs(x)", "abs"),
    "__invert__": ("~x", "logical_not"),
    "__and__": ("x & y", "logical_and"),
    "__or__": ("x | y", "logical_or"),
    "__eq__": ("x == y", "eq"),
    "__ne__": ("x != y", "ne"),
    "__lt__": ("x < y", "lt"),
    "__le__": ("x <= y", "le"),
    "__gt__": ("x > y", "gt"),
    "__ge__": ("x >= y", "ge"),
    "__getitem__": ("x[key]", "getitem"),
    "__setitem__": ("x[key] = v", "setitem"),
}

_FAMILY_ORDER = ("elementwise", "activation", "reduction", "shape", "indexing", "linalg", "loss")


def _methods(op: OpDef) -> str:
    """How the op is spelled on a Tensor: ``x.exp()``, ``x + y``; ``-`` if it is not."""
    spelled: list[str] = []
    for name, value in vars(Tensor).items():
        if name.startswith("__"):
            continue
        if value is op.fn or name == op.name:
            spelled.append(f"`x.{name}`" if isinstance(value, property) else f"`x.{name}()`")
    for dunder, (text, opname) in _OPERATORS.items():
        value = vars(Tensor).get(dunder)
        if value is not None and (value is op.fn or opname == op.name):
            spelled.append(f"`{text}`")
    return ", ".join(spelled) or "-"


def _backends(op: OpDef) -> str:
    names = [n for n in BACKENDS if n not in op.facts.skips]
    text = ", ".join(names)
    skipped = [f"not {n}: {why}" for n, why in sorted(op.facts.skips.items())]
    return text + (f" ({'; '.join(skipped)})" if skipped else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render() -> str:
    """The op table as markdown, one row per registered op, grouped by family.

    Returns
    -------
    str
        The text of ``docs/ops.md``.

    Examples
    --------
    >>> from minitorch.optable import render
    >>> print(render().splitlines()[0])
    # Op table
    >>> any(line.startswith("| `exp` ") for line in render().splitlines())
    True
    """

    def order(item: tuple[str, OpDef]) -> tuple[int, str]:
        name, op = item
        fam = _FAMILY_ORDER.index(op.family) if op.family in _FAMILY_ORDER else len(_FAMILY_ORDER)
        return fam, name

    ops = sorted(((n, op) for n, op in REGISTRY.items() if op.builtin), key=order)
    n_diff = sum(1 for _, op in ops if op.differentiable)
    lines = [
        "# Op table",
        "",
        "<!-- Generated from the op registry by `nox -s regen` (python -m minitorch.dev regen);",
        "     do not edit by hand: tests/test_docs.py fails when this file drifts. -->",
        "",
        f"{len(ops)} ops, {n_diff} of them differentiable. *Derivative* is the VJP rule "
        "(`g` is the upstream gradient; *composed* ops get theirs from the chain rule); "
        "*second order* says whether the VJP is itself differentiable; *backends* are "
        "those the op is tested on (every backend unless the catalog names a skip).",
        "",
        "| op | family | derivative (VJP) | Tensor spelling | second order | backends |",
        "|---|---|---|---|---|---|",
    ]
    for name, op in ops:
        if op.differentiable:
            formula = f"`{_cell(op.facts.formula)}`" if op.facts.formula else "?"
            second = _cell(op.facts.second_order)
        else:
            formula, second = "not differentiable", "-"
        spelled = _methods(op)
        if op.public is not True:  # a building block: not minitorch.<name>
            spelled = f"not exported: through `{op.public}`" if op.public else "not exported"
        lines.append(
            f"| `{name}` | {op.family} | {formula} | {_cell(spelled)} | {second} | "
            f"{_cell(_backends(op))} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(render())
