"""Tests of ``minigrad.viz``: DOT text always; pictures when Graphviz ``dot`` is installed."""

from __future__ import annotations

import pathlib
import re
import shutil
import xml.etree.ElementTree as ET

import pytest

from minigrad import Value, escape_label, render, render_dot, to_dot, viz
from minigrad.examples import grammar_graph

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None,
    reason="Graphviz 'dot' program not installed (system package 'graphviz')",
)

SVG = "{http://www.w3.org/2000/svg}"
REPO = pathlib.Path(__file__).resolve().parents[1]
WEIRD = 'relu(x>0) {a|b} <port> "q" back\\slash \\n'


def svg_texts(path: pathlib.Path) -> list[str]:
    """Every text run drawn in an SVG written by ``dot``."""
    return [t.text or "" for t in ET.parse(path).iter(f"{SVG}text")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x", "x"),
        ("relu(x>0)", "relu(x\\>0)"),
        ('say "hi"', 'say \\"hi\\"'),
        ("a\\b", "a\\\\b"),
        ("{a|b}", "\\{a\\|b\\}"),
        ("<f0>", "\\<f0\\>"),
        ("line1\nline2", "line1\\nline2"),
        ("dos\r\nline", "dos\\nline"),
        ("", ""),
    ],
)
def test_escape_label(text: str, expected: str) -> None:
    assert escape_label(text) == expected


def small_graph() -> tuple[Value, Value, Value]:
    x = Value(2.0, label="x")
    w = Value(-3.0, label="w")
    y = (x * w + 1.0).relu()
    y.label = "relu(x>0)"
    z = y + x  # x fans out
    z.label = "z"
    z.backward()
    return x, w, z


def test_to_dot_shows_data_grad_and_ops() -> None:
    x, w, z = small_graph()
    assert (x.grad, w.grad) == (1.0, 0.0)  # relu is off: only the skip path carries gradient
    text = to_dot(z)
    assert text.startswith('digraph "minigrad" {') and text.rstrip().endswith("}")
    assert '"v0" [label="{ x | data 2.0000 | grad 1.0000 }", shape="record"];' in text
    assert '"v1" [label="{ w | data -3.0000 | grad 0.0000 }", shape="record"];' in text
    assert "{ relu(x\\>0) | data 0.0000 | grad 1.0000 }" in text
    assert "{ z | data 2.0000 | grad 1.0000 }" in text
    ops = re.findall(r'"v\d+_op" \[label="([^"]*)", shape="ellipse"\]', text)
    assert ops == ["*", "+", "relu", "+"]
    # 6 values; edges: 2 into '*', 1 into each unary '+'/relu, 2 into the last '+',
    # plus one edge from each op to its result.
    assert text.count('shape="record"') == 6
    assert text.count(" -> ") == 2 + 1 + 1 + 2 + 4
    assert to_dot(z) == text  # deterministic


def test_to_dot_escapes_every_label() -> None:
    x = Value(1.0, label=WEIRD)
    y = x.exp()
    y.label = "line\nbreak"
    text = to_dot(y, title='title "quoted" -> {x}')
    assert escape_label(WEIRD) in text
    assert "line\\nbreak" in text and "line\nbreak" not in text
    assert 'label="title \\"quoted\\" -\\> \\{x\\}"' in text


def test_missing_dot_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setattr(viz.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match=r"system package 'graphviz'.*apt-get install graphviz"):
        render_dot("digraph { a }", tmp_path / "g.png")  # SVG is drawn without dot
    assert not (tmp_path / "g.png").exists()


def test_render_dot_needs_a_format(tmp_path) -> None:
    with pytest.raises(ValueError, match="suffix"):
        render_dot("digraph { a }", tmp_path / "graph")


@needs_dot
def test_render_draws_labels_literally(tmp_path) -> None:
    x = Value(1.5, label=WEIRD)
    y = x.tanh()
    y.label = "relu(x>0)"
    y.backward()
    out = render(y, tmp_path / "sub" / "weird.svg", title="a {title}")
    assert out == tmp_path / "sub" / "weird.svg"
    texts = svg_texts(out)
    assert WEIRD in texts
    assert {"relu(x>0)", "tanh", "a {title}", "data 1.5000", "grad 0.1807"} <= set(texts)


@needs_dot
def test_render_dot_formats_and_errors(tmp_path) -> None:
    png = render_dot("digraph { a -> b }", tmp_path / "g.png")
    assert png.read_bytes().startswith(b"\x89PNG")
    svg = render_dot("digraph { a -> b }", tmp_path / "g.out", fmt="svg")
    assert "<svg" in svg.read_text()
    with pytest.raises(RuntimeError, match="dot -Tsvg' failed"):
        render_dot("digraph { a -> ", tmp_path / "broken.svg")


def test_grammar_loss_hand_derived() -> None:
    loss, leaves = grammar_graph.grammar_loss()
    errors = [0.1, -0.3, 0.2, 0.4, 0.6 - 1.0]  # logits minus one-hot(past perfect)
    assert loss.data == pytest.approx(sum(e * e for e in errors), rel=1e-15)
    for leaf, e in zip(leaves, errors, strict=True):
        assert leaf.grad == pytest.approx(2 * e, rel=1e-15)
    text = to_dot(loss)
    assert "{ logit[past perfect] | data 0.6000 | grad -0.8000 }" in text
    assert "{ loss | data 0.4600 | grad 1.0000 }" in text


def test_committed_example_picture_shows_values_and_gradients() -> None:
    picture = REPO / "docs" / "graph-example.svg"
    if not picture.exists():
        pytest.skip("docs/graph-example.svg is not in this checkout")
    texts = svg_texts(picture)
    for expected in ["logit[past perfect]", "data 0.4600", "grad -0.8000", "sum", "**2"]:
        assert expected in texts
    assert any("had walked" in t for t in texts)


@needs_dot
def test_grammar_graph_main_writes_the_picture(tmp_path, capsys) -> None:
    assert grammar_graph.main([str(tmp_path / "g.svg")]) == 0
    assert "grad -0.8000" in svg_texts(tmp_path / "g.svg")
    assert grammar_graph.main(["-"]) == 0
    assert "digraph" in capsys.readouterr().out
