"""``minitorch.viz``: DOT text of tensor graphs on the backend under test; pictures with
Graphviz ``dot`` or minigrad's own layout (more in ``test_viz_layout.py``)."""

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
SVG = "{http://www.w3.org/2000/svg}"


def nodes(text: str) -> dict[str, str]:
    """node id -> its (escaped) label."""
    return dict(NODE.findall(text))


def edges(text: str) -> list[tuple[str, str]]:
    return EDGE.findall(text)


def lines_of(text: str) -> dict[str, list[str]]:
    """node id -> the lines of its label (the legend's left-justified ones too)."""
    return {nid: re.split(r"\\[nl]", label) for nid, label in nodes(text).items()}


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
    labels = lines_of(text)
    op_lines = [lines for nid, lines in labels.items() if nid.startswith("op")]
    assert len(op_lines) == 4
    for op in ("a @ b", "a + b", "relu", "sum"):
        assert sum(op in lines for lines in op_lines) == 1, op
    leaves = {nid: lines[0] for nid, lines in labels.items() if nid.startswith("t")}
    assert sorted(leaves.values()) == ["W", "b"]
    # data flows input -> op -> ... -> loss: 2 leaves + 1 constant + 3 op-to-op edges
    assert len(edges(text)) == 6
    by_name = {v: k for k, v in leaves.items()}
    targets = {dst for src, dst in edges(text) if src in (by_name["W"], by_name["b"])}
    assert len(targets) == 2  # W feeds matmul, b feeds add
    root = [nid for nid, lines in labels.items() if "sum" in lines]
    assert len(root) == 1 and all(src != root[0] for src, _ in edges(text))
    assert 'fillcolor="#d4f0d4"' in text  # the output is marked
    assert "legend" in labels and not any(e == "legend" for pair in edges(text) for e in pair)


def test_values_and_grad_norms_match_hand_derivation() -> None:
    loss, t = _mlp_loss()
    x, w = t["x"].numpy().astype(np.float64), t["w"].numpy().astype(np.float64)
    z = x @ w + t["b"].numpy()
    mask = (z > 0).astype(np.float64)  # d loss / d z = 1 where z > 0
    gw, gb = x.T @ mask, mask.sum(axis=0)
    by_first = {lines[0]: lines for lines in lines_of(viz.to_dot(loss)).values()}
    assert f"‖grad‖₂ {np.linalg.norm(gw):.4g}" in by_first["W"]
    assert f"‖grad‖₂ {np.linalg.norm(gb):.4g}" in by_first["b"]
    assert "data [0.1, -0.2, 0.3, 0.4, ...]" in by_first["W"]
    assert "(3, 2) float64" in by_first["W"] and "(2,) float64" in by_first["b"]
    # the retained intermediate shows its op, values and d loss / d z
    assert by_first["z"][:3] == ["z", "a + b", "(2, 2) float64"]
    assert f"‖grad‖₂ {math.sqrt(mask.sum()):.4g}" in by_first["z"]
    assert f"data [{z[0, 0]:.4g}" in by_first["z"][3]
    # the root shows its value, and no gradient: it was not retained
    root = next(lines for lines in by_first.values() if "sum" in lines)
    assert root == ["sum", "() float64", f"data {float(np.maximum(z, 0).sum()):.4g}"]


def test_one_element_gradients_are_signed() -> None:
    # tanh(a * b + c) at a = 0.5, b = -1, c = 0.25: d/da = b * (1 - tanh(-0.25)**2)
    a = minitorch.tensor(0.5, requires_grad=True, name="a")
    b = minitorch.tensor(-1.0, requires_grad=True, name="b")
    c = minitorch.tensor([0.25], requires_grad=True, name="c")
    y = (a * b + c).tanh()
    y.retain_grad()
    y.name = "y"
    y.sum().backward()
    slope = 1 - math.tanh(-0.25) ** 2  # 0.94
    by_first = {lines[0]: lines for lines in lines_of(viz.to_dot(y)).values()}
    assert by_first["a"] == ["a", "() float64", "data 0.5", f"grad {-slope:.4g}"]
    assert by_first["a"][-1] == "grad -0.94"
    assert by_first["b"][-1] == f"grad {0.5 * slope:.4g}"
    assert by_first["c"][-1] == f"grad {slope:.4g}"  # shape (1,): one element, signed too
    assert by_first["y"][-1] == "grad 1"  # d y.sum() / d y
    legend = lines_of(viz.to_dot(y))["legend"]
    assert legend[0] == "legend" and any(line.startswith("grad v: ") for line in legend)
    assert not any("‖grad‖₂" in line for line in legend)  # no norm drawn: none explained


def test_legend_names_the_norm() -> None:
    loss, _ = _mlp_loss()
    legend = lines_of(viz.to_dot(loss))["legend"]
    assert "‖grad‖₂ v: the L2 norm of a larger gradient, sqrt(sum of squares)" in legend
    assert "grey box, dashed edge: an input that needs no gradient" in legend
    assert legend[-1] == ""  # every line is left-justified: "\l" ends each
    assert nodes(viz.to_dot(loss))["legend"].count("\\l") == len(legend) - 1


def test_readable_op_labels() -> None:
    x = minitorch.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], requires_grad=True)
    cases = {
        "x[0]": x[0],
        "x[:, 1]": x[:, 1],
        "x[::2, ..., None]": x[::2, ..., None],
        "x[[1, 0]]": x[[1, 0]],
        "x[mask]": x[x.detach() > 0],
        "a @ b": x @ x.T,
        "a + b": x + 1.0,
        "a - b": 2.0 - x,
        "a * b": x * x,
        "a / b": x / 2.0,
        "a ** b": x**2,
        "-x": -x,
        "sum": x.sum(),
        "sum(axis=1)": x.sum(axis=1),
        "mean(axis=0, keepdims=True)": x.mean(axis=0, keepdims=True),
        "reshape(3, 2)": x.reshape(3, 2),
        "transpose": x.T,
        "relu": x.relu(),
        "softmax(axis=1)": minitorch.softmax(x, axis=1),
        "cross_entropy(reduction=mean)": minitorch.cross_entropy(x, minitorch.tensor([0, 2])),
        "cross_entropy(reduction=sum)": minitorch.cross_entropy(
            x, minitorch.tensor([0, 2]), reduction="sum"
        ),
        "cross_entropy(reduction=mean, label_smoothing=0.1)": minitorch.cross_entropy(
            x,
            minitorch.tensor([0, 2]),
            weight=minitorch.tensor([1.0, 2.0, 0.5]),
            label_smoothing=0.1,
        ),  # no class weights: an array
        "astype(dtype=float32)": x.astype("float32"),
    }
    for expected, y in cases.items():
        assert y.grad_fn is not None
        assert viz.op_label(y.grad_fn) == expected
        assert (
            viz.to_dot(y).count(f"\\n{expected}\\n") + viz.to_dot(y).count(f'label="{expected}\\n')
            == 1
        ), expected


def test_constant_inputs_shown_while_saved() -> None:
    loss, _ = _mlp_loss(retain_graph=True)
    const = [label for nid, label in nodes(viz.to_dot(loss)).items() if nid.startswith("c")]
    assert const == ["input 0 (no grad)\\n(2, 3) float64\\ndata [1, 2, -1, 0.5, ...]"]
    loss, _ = _mlp_loss(retain_graph=False)  # saved arrays freed by backward
    const = [label for nid, label in nodes(viz.to_dot(loss)).items() if nid.startswith("c")]
    assert const == ["input 0 (no grad)"]


def test_class_targets_of_cross_entropy_shown() -> None:
    """The demo's loss: cross_entropy's class targets are a no-grad input whose box
    shows their shape, dtype and values (they are kept for it, not for the VJP)."""
    logits = minitorch.tensor([[2.0, 0.0, -1.0], [0.0, 1.0, 0.0]], requires_grad=True)
    targets = minitorch.tensor([2, 0])
    loss = minitorch.cross_entropy(logits, targets)
    const = [label for nid, label in nodes(viz.to_dot(loss)).items() if nid.startswith("c")]
    dtype = minitorch.get_backend().dtype_name(targets.data.dtype)
    assert const == [f"input 1 (no grad)\\n(2,) {dtype}\\ndata [2, 0]"]
    loss.backward()  # the gradient is unchanged by keeping them
    be = minitorch.get_backend()
    x = be.to_numpy(logits.data)
    p = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(be.to_numpy(logits.grad), (p - np.eye(3)[[2, 0]]) / 2, rtol=1e-6)


def test_intermediates_not_kept_show_their_shape() -> None:
    x = minitorch.tensor([1.0, -2.0, 3.0], requires_grad=True, name="x")
    h = x * 2.0
    y = h.sum()
    y.backward()
    text = viz.to_dot(y)
    mul = next(lines for lines in lines_of(text).values() if lines[0] == "a * b")
    assert mul == ["a * b", "(3,)"]  # no values: the engine does not keep intermediates
    assert (
        "op box with a shape only: a result not kept (retain_grad() keeps it)"
        in (lines_of(text)["legend"])
    )


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
    assert "data" not in text and "‖grad‖₂ 7.483" in text  # ||2x|| = sqrt(56)
    leaf = [nid for nid in nodes(text) if nid.startswith("t")]
    assert len(leaf) == 1  # one leaf, used twice by mul: two edges
    assert sum(src == leaf[0] for src, _ in edges(text)) == 2


def test_leaf_only_and_before_backward() -> None:
    x = minitorch.tensor([[1.0, 2.0]], requires_grad=True, name="x")
    assert lines_of(viz.to_dot(x))["t0"] == ["x", "(1, 2) float64", "data [1, 2]", "grad: none yet"]
    y = x.tanh().sum()
    labels = nodes(viz.to_dot(y))
    assert any("grad: none yet" in label for label in labels.values())
    with pytest.raises(TypeError, match="expected a minitorch Tensor"):
        viz.to_dot(np.ones(2))  # type: ignore[arg-type]


def test_edge_label_and_node_style_hooks() -> None:
    a = minitorch.tensor(2.0, requires_grad=True, name="a")
    b = minitorch.tensor(3.0, requires_grad=True, name="b")
    y = (a * b).tanh()
    seen: list[tuple[str, int]] = []

    def label(node: Any, k: int) -> str | None:
        seen.append((node.op.name, k))
        return f"d{k} > 0" if node.op.name == "mul" else None

    def style(node: Any) -> dict[str, str] | None:
        return {"fillcolor": "#ffd0d0"} if node.op.name == "tanh" else None

    text = viz.to_dot(y, edge_label=label, node_style=style)
    assert sorted(seen) == [("mul", 0), ("mul", 1), ("tanh", 0)]
    labelled = re.findall(r'^  "(t\d)" -> "(op\d)" \[label="([^"]*)"\];$', text, re.M)
    names = {nid: lines[0] for nid, lines in lines_of(text).items()}
    assert sorted((names[t], lab) for t, _, lab in labelled) == [
        ("a", "d0 \\> 0"),
        ("b", "d1 \\> 0"),
    ]
    tanh = next(line for line in text.splitlines() if 'label="tanh' in line)
    assert 'fillcolor="#ffd0d0"' in tanh and 'fillcolor="#d4f0d4"' not in tanh


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


def svg_texts(path: pathlib.Path) -> list[str]:
    return [t.text or "" for t in ET.parse(path).iter(f"{SVG}text")]


def test_render_without_dot_draws_svg_and_refuses_png(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    monkeypatch.setattr(minigrad.viz.shutil, "which", lambda name: None)
    loss, _ = _mlp_loss()
    out = viz.render(loss, tmp_path / "g.svg", title="a <b>")
    assert "drawn by minigrad.layout" in out.read_text()
    texts = svg_texts(out)
    assert {"a <b>", "a @ b", "W", "legend"} <= set(texts)
    with pytest.raises(RuntimeError, match=r"only SVG can be drawn without Graphviz.*graphviz"):
        viz.render(loss, tmp_path / "g.png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.svg"]


@needs_dot
def test_render_svg(tmp_path: pathlib.Path) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True, name='relu(x>0) "q"')
    loss = (x * x).sum()
    loss.backward()
    path = viz.render(loss, tmp_path / "sub" / "g.svg", title="a <b>")
    assert path.exists() and path.stat().st_size > 500
    assert "Generated by graphviz" in path.read_text()  # dot is used when installed
    texts = svg_texts(path)
    assert 'relu(x>0) "q"' in texts and "a <b>" in texts and "sum" in texts
    assert "‖grad‖₂ 4.472" in texts  # ||2x|| = sqrt(20)
