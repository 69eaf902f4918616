"""The docs that are generated from, or quote, the code cannot drift from it.

Backend-independent (conftest runs files named ``test_docs*`` once, in the numpy session).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from minitorch.backend import BACKENDS
from minitorch.ops import REGISTRY
from minitorch.ops._registry import Facts, OpDef
from minitorch.optable import render

ROOT = Path(__file__).resolve().parents[1]
OPS_MD = ROOT / "docs" / "ops.md"
ADDING = ROOT / "docs" / "adding-an-op.md"
REGENERATE = "nox -s regen"


def _table_rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\| `(\w+)` \|", line)
        if m:
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            assert m.group(1) not in rows, f"{m.group(1)} listed twice"
            rows[m.group(1)] = cells
    return rows


def test_ops_md_is_generated_from_the_registry() -> None:
    assert OPS_MD.exists(), f"docs/ops.md is missing; run `{REGENERATE}`"
    assert OPS_MD.read_text() == render(), (
        f"docs/ops.md is out of date with the op registry; run `{REGENERATE}`"
    )


def test_the_module_writes_the_same_text() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "minitorch.optable"], capture_output=True, text=True, check=True
    )
    assert done.stdout == render()


def test_every_registered_op_has_one_row() -> None:
    rows = _table_rows(render())
    assert set(rows) == {n for n, op in REGISTRY.items() if op.builtin}
    assert all(len(cells) == 6 for cells in rows.values())


def test_row_contents_come_from_the_facts() -> None:
    rows = _table_rows(render())
    _, family, formula, spelling, second, backends = rows["leaky_relu"]
    assert family == "activation"
    assert formula == f"`{REGISTRY['leaky_relu'].facts.formula}`"
    assert spelling == "`x.leaky_relu()`"
    assert second == REGISTRY["leaky_relu"].facts.second_order
    assert backends == ", ".join(BACKENDS)
    assert rows["add"][3] == "`x.add()`, `x + y`"
    assert rows["argmax"][2] == "not differentiable"
    assert rows["silu"][2].startswith("`composed:")


def test_skipped_backends_are_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = OpDef(
        name="fake_op",
        fwd=None,
        vjp=None,
        nin=1,
        params=(),
        defaults={},
        scalars=False,
        moves=False,
        family="elementwise",
        module="minitorch.ops.elementwise",
        facts=Facts(formula="g|x", skips={"cupy": "no kernel yet"}),
        compose=lambda x: x,
    )
    monkeypatch.setitem(REGISTRY, "fake_op", fake)
    cells = _table_rows(render())["fake_op"]
    assert cells[2] == r"`g\|x`"  # a | in a formula does not break the table
    assert "cupy," not in cells[5] and cells[5].endswith("(not cupy: no kernel yet)")
    assert cells[5].startswith(", ".join(n for n in BACKENDS if n != "cupy"))


def test_adding_an_op_quotes_the_real_leaky_relu() -> None:
    """The worked example in docs/adding-an-op.md is the code in ops/activation.py, and
    the doc names the one command that derives everything else."""
    text = ADDING.read_text()
    source = (ROOT / "src" / "minitorch" / "ops" / "activation.py").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    declaration = next(b for b in blocks if "def _leaky_relu" in b)
    assert declaration.strip() in source, "docs/adding-an-op.md no longer matches activation.py"
    assert REGENERATE in text
