"""``minitorch.viz``: DOT text of tensor graphs on the backend under test; SVG with dot."""

from __future__ import annotations

import math
import pathlib
import re
import shutil
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np
import pytest

import minigrad.viz
import minitorch
from minitorch import viz

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz 'dot' not installed (system package graphviz)"
)
NODE = re.compile(r'^  "([^"]+)" \[label="((?:[^"\\]|\\.)*)"', re.M)
EDGE = re.compile(r'^  "([^"]+)" -> "([^"]+)"', re.M)


def nodes(text: str) -> dict[str, str]:
    """node id -> its (escaped) label."""
    return dict(NODE.findall(text))


def edges(text: str) -> list[tuple[str, str]]:
    return EDGE.findall(text)


def _mlp_loss(retain_graph: bool = False) -> tuple[minitorch.Tensor, dict[str, Any]]:
    x = minitorch.tensor([[1.0, 2.0, -1.0], [0.5, -0.5, 2.0]], name="x")
    w = minitorch.tensor([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6]], requires_grad=True, name="W")
    b = minitorch.tensor([0.01, -0.02], requires_grad=True, name="b")
    z = x @ w + b
    z.retain_grad()
    z.name = "z"
    loss = z.relu().sum()
    loss.backward(retain_graph=retain_graph)
    return loss, {"x": x, "w": w, "b": b, "z": z}


def test_graph_structure() -> None:
    loss, _ = _mlp_loss()
    text = viz.to_dot(loss)
    labels = nodes(text)
    op_lines = [label.split("\\n") for nid, label in labels.items() if nid.startswith("op")]
    assert len(op_lines) == 4
    for op in ("matmul", "add", "relu", "sum"):
        assert sum(op in lines for lines in op_lines) == 1, op
    leaves = {nid: label.split("\\n")[0] for nid, label in labels.items() if nid.startswith("t")}
    assert sorted(leaves.values()) == ["W", "b"]
    # data flows input -> op -> ... -> loss: 2 leaves + 1 constant + 3 op-to-op edges
    assert len(edges(text)) == 6
    by_name = {v: k for k, v in leaves.items()}
    targets = {dst for src, dst in edges(text) if src in (by_name["W"], by_name["b"])}
    assert len(targets) == 2  # W feeds matmul, b feeds add
    root = [nid for nid, label in labels.items() if "sum" in label]
    assert len(root) == 1 and all(src != root[0] for src, _ in edges(text))
    assert 'fillcolor="#d4f0d4"' in text  # the output is marked


def test_values_and_grad_norms_match_hand_derivation() -> None:
    loss, t = _mlp_loss()
    x, w = t["x"].numpy().astype(np.float64), t["w"].numpy().astype(np.float64)
    z = x @ w + t["b"].numpy()
    mask = (z > 0).astype(np.float64)  # d loss / d z = 1 where z > 0
    gw, gb = x.T @ mask, mask.sum(axis=0)
    text = viz.to_dot(loss)
    labels = nodes(text)
    by_first = {label.split("\\n")[0]: label for label in labels.values()}
    assert f"\\|grad\\| {np.linalg.norm(gw):.4g}" in by_first["W"]
    assert f"\\|grad\\| {np.linalg.norm(gb):.4g}" in by_first["b"]
    assert "data [0.1, -0.2, 0.3, 0.4, ...]" in by_first["W"]
    assert "(3, 2) float64" in by_first["W"] and "(2,) float64" in by_first["b"]
    # the retained intermediate shows its values and d loss / d z
    assert f"\\|grad\\| {math.sqrt(mask.sum()):.4g}" in by_first["z"]
    assert f"data [{z[0, 0]:.4g}" in by_first["z"]
    # the root shows its value
    root = next(label for label in labels.values() if "sum" in label)
    assert f"data {float(np.maximum(z, 0).sum()):.4g}" in root


def test_intermediate_values_need_retain_grad() -> None:
    x = minitorch.tensor([1.0, -2.0, 3.0], requires_grad=True, name="x")
    h = x * 2.0
    y = h.sum()
    y.backward()
    mul = next(label for label in nodes(viz.to_dot(y)).values() if label.startswith("mul"))
    assert mul == "mul\\nout (3,)"  # no values: the engine does not keep intermediates


def test_constant_inputs_shown_while_saved() -> None:
    loss, _ = _mlp_loss(retain_graph=True)
    const = [label for nid, label in nodes(viz.to_dot(loss)).items() if nid.startswith("c")]
    assert const == ["input 0 (no grad)\\n(2, 3) float64\\ndata [1, 2, -1, 0.5, ...]"]
    loss, _ = _mlp_loss(retain_graph=False)  # saved arrays freed by backward
    const = [label for nid, label in nodes(viz.to_dot(loss)).items() if nid.startswith("c")]
    assert const == ["input 0 (no grad)"]


def test_labels_are_escaped() -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True, name="relu(x>0)")
    y = (x * x).sum()
    y.name = 'say "hi" {a|b}'
    y.backward()
    text = viz.to_dot(y, title="<title>")
    assert "relu(x\\>0)" in text and "relu(x>0)" not in text
    assert 'say \\"hi\\" \\{a\\|b\\}' in text
    assert 'label="\\<title\\>"' in text
    assert viz.escape_label is minigrad.viz.escape_label


def test_max_values_and_fan_out() -> None:
    x = minitorch.tensor([1.0, -2.0, 3.0], requires_grad=True, name="x")
    y = (x * x).sum()
    y.backward()
    assert "data [1, -2, ...]" in viz.to_dot(y, max_values=2)
    text = viz.to_dot(y, max_values=0)
    assert "data" not in text and "\\|grad\\| 7.483" in text  # ||2x|| = sqrt(56)
    leaf = [nid for nid in nodes(text) if nid.startswith("t")]
    assert len(leaf) == 1  # one leaf, used twice by mul: two edges
    assert sum(src == leaf[0] for src, _ in edges(text)) == 2


def test_leaf_only_and_before_backward() -> None:
    x = minitorch.tensor([[1.0, 2.0]], requires_grad=True, name="x")
    assert list(nodes(viz.to_dot(x)).values()) == [
        "x\\n(1, 2) float64\\ndata [1, 2]\\ngrad: none yet"
    ]
    y = x.tanh().sum()
    labels = nodes(viz.to_dot(y))
    assert any("grad: none yet" in label for label in labels.values())
    with pytest.raises(TypeError, match="expected a minitorch Tensor"):
        viz.to_dot(np.ones(2))  # type: ignore[arg-type]


def test_deep_graph_is_walked_without_recursion() -> None:
    x = minitorch.tensor([0.5], requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    text = viz.to_dot(y.sum())
    ids = nodes(text)
    assert sum(nid.startswith("op") for nid in ids) == 3000 + 1  # 3000 muls and the sum
    assert sum(nid.startswith("t") for nid in ids) == 1
    assert sum(nid.startswith("c") for nid in ids) == 3000  # the constant 1.0 of each mul


def test_render_without_dot_names_graphviz(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    monkeypatch.setattr(minigrad.viz.shutil, "which", lambda name: None)
    loss, _ = _mlp_loss()
    with pytest.raises(RuntimeError, match="graphviz"):
        viz.render(loss, tmp_path / "g.svg")


@needs_dot
def test_render_svg(tmp_path: pathlib.Path) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True, name='relu(x>0) "q"')
    loss = (x * x).sum()
    loss.backward()
    path = viz.render(loss, tmp_path / "sub" / "g.svg", title="a <b>")
    assert path.exists() and path.stat().st_size > 500
    texts = [t.text or "" for t in ET.parse(path).iter("{http://www.w3.org/2000/svg}text")]
    assert 'relu(x>0) "q"' in texts and "a <b>" in texts and "sum" in texts
    assert "|grad| 4.472" in texts  # ||2x|| = sqrt(20)
