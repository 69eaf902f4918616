"""The docs that are generated from, or quote, the code cannot drift from it.

Backend-independent (conftest runs files named ``test_docs*`` once, in the numpy session).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
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


# ---------------------------------------------------------------- docs/array-api.md
ARRAY_API_MD = ROOT / "docs" / "array-api.md"
TABLE_START, TABLE_END = "<!-- namespace-table -->", "<!-- /namespace-table -->"

# the namespace's functions that are not ops of the registry, by what their derivative is
NOT_OPS = {
    "any order": (
        "broadcast_arrays conj cumulative_prod cumulative_sum diff log10 log2 logaddexp "
        "meshgrid moveaxis positive prod put_rows real reciprocal repeat roll square "
        "take_along_axis "
        "tensordot tile unstack vecdot zeros_with"
    ),
    "zero": "sort",
    "none": (
        "all_in_range argsort count_nonzero equal greater greater_equal imag isin isnan less "
        "less_equal "
        "nonzero not_equal searchsorted unique_all unique_counts unique_inverse unique_values"
    ),
    "constant": (
        "arange asarray empty empty_like eye from_dlpack full full_like linspace ones "
        "ones_like zeros zeros_like"
    ),
    "inspection": "__array_namespace_info__ can_cast finfo iinfo isdtype result_type",
}
ROWS = {
    "any order": "differentiable, to any order",
    "zero": "differentiable; the second derivative is zero (piecewise linear)",
    "none": "no gradient: boolean, integer or index results, or constants",
    "constant": "creation: constants of the namespace's backend, dtype and device",
    "inspection": "dtypes, constants and inspection (the backend's own)",
    "special": "`special` (SciPy's dispatch): differentiable, to any order",
    "linalg": "the `linalg` extension: as the function of that name above; `eigh`, `qr`, "
    "`svd` are named tuples of the ops `eigvalsh`/`eigvecsh`, `qr_q`/`qr_r`, "
    "`svd_u`/`svdvals`/`svd_vh`, and `slogdet` of a constant sign and `logabsdet`",
}


def _status(op: OpDef) -> str:
    if op.vjp is None and op.compose is None:
        return "none"
    return "any order" if op.facts.second_order == "yes" else "zero"


def namespace_table() -> str:
    """The table of docs/array-api.md: every name of the differentiable namespace by
    the status of its derivative (ops from the registry's facts)."""
    from minitorch.array_api import _NO_GRAD, _PASSTHROUGH, Namespace, Special, namespace

    rows: dict[str, list[str]] = {k: [] for k in ROWS}
    for op in REGISTRY.values():
        if op.builtin:
            label = f"`{op.api}` (`{op.name}`)" if op.api and op.api != op.name else f"`{op.name}`"
            rows[_status(op)].append(label)
    ops = set(REGISTRY) | {op.api for op in REGISTRY.values() if op.api}
    classified = {n: k for k, names in NOT_OPS.items() for n in names.split()}
    methods = {n for n, v in vars(Namespace).items() if not n.startswith("_") and callable(v)}
    for name in sorted((methods | set(_NO_GRAD) | {"__array_namespace_info__"}) - ops):
        assert name in classified, f"{name}: classify it in NOT_OPS in tests/test_docs.py"
        rows[classified[name]].append(f"`{name}`")
    rows["inspection"] += [f"`{n}`" for n in sorted(_PASSTHROUGH - set(classified))]
    rows["special"] = [f"`special.{n}`" for n in vars(Special) if not n.startswith("_")]
    linalg = getattr(namespace(), "linalg", None)
    rows["linalg"] = [
        f"`linalg.{n}`"
        for n in dir(linalg)
        if not n.startswith("_") and callable(getattr(linalg, n))
    ]
    lines = ["| derivative | names |", "|---|---|"]
    lines += [f"| {ROWS[k]} | {', '.join(sorted(v))} |" for k, v in rows.items() if v]
    return "\n".join(lines)


def _write_table() -> None:
    text = ARRAY_API_MD.read_text()
    head, rest = text.split(TABLE_START)
    _, tail = rest.split(TABLE_END)
    ARRAY_API_MD.write_text(f"{head}{TABLE_START}\n{namespace_table()}\n{TABLE_END}{tail}")


def test_array_api_md_table_covers_the_namespace() -> None:
    text = ARRAY_API_MD.read_text()
    block = text.split(TABLE_START)[1].split(TABLE_END)[0].strip()
    assert block == namespace_table(), (
        "docs/array-api.md's table is out of date with the namespace; run "
        "`python tests/test_docs.py` to rewrite it"
    )


def test_array_api_md_example_runs() -> None:
    """The worked example, in a process of its own (SciPy reads SCIPY_ARRAY_API when it
    is imported), prints what the page shows, and the figures are PyTorch's."""
    pytest.importorskip("scipy", minversion="1.17")
    torch = pytest.importorskip("torch")
    text = ARRAY_API_MD.read_text()
    code = "\n".join(re.findall(r"```python\n(.*?)```", text, flags=re.S)[:2])
    shown = re.findall(r"```text\n(.*?)```", text, flags=re.S)[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MINITORCH_")}
    env.pop("SCIPY_ARRAY_API", None)  # the example sets it itself
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == shown

    t64 = torch.float64
    x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.0, -0.5]], dtype=t64, requires_grad=True)
    y = torch.logsumexp(x, 1)
    (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
    (h,) = torch.autograd.grad((g * g).sum(), x)
    t = torch.tensor([-30.0, 0.5, 40.0], dtype=t64, requires_grad=True)
    (d1,) = torch.autograd.grad(torch.nn.functional.softplus(t).sum(), t, create_graph=True)
    (d2,) = torch.autograd.grad(d1.sum(), t)
    w = torch.tensor([1.0, 2.0, 0.5], dtype=t64, requires_grad=True)
    z = torch.nn.functional.layer_norm(x, (3,), w, torch.zeros(3, dtype=t64), 1e-5)
    (gx,) = torch.autograd.grad((z * z * z).sum(), x, create_graph=True)
    (hw,) = torch.autograd.grad((gx * gx).sum(), w)
    printed = [
        [float(v) for v in re.findall(r"-?\d+\.\d+(?:e-?\d+)?", line)]
        for line in done.stdout.splitlines()
    ]
    for got, want in zip(printed, (y, g, h, d1, d2, hw), strict=True):
        np.testing.assert_allclose(got, want.detach().numpy().reshape(-1), atol=1e-6)


if __name__ == "__main__":  # rewrite the table of docs/array-api.md
    _write_table()
