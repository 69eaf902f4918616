"""The pure-Python picture (``minigrad.layout``): reading DOT, the layered layout's
geometry, the SVG it writes, how ``render_dot`` picks Graphviz or it, and the demo's
``graph.svg`` on a machine without Graphviz."""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
import pathlib
import random
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

import minitorch
from minigrad import DotGraph, Value, layout, render_dot
from minigrad import viz as mviz
from minitorch import viz

needs_dot = pytest.mark.skipif(
    shutil.which("dot") is None, reason="Graphviz 'dot' not installed (system package graphviz)"
)
SVG = "{http://www.w3.org/2000/svg}"
NUM = re.compile(r"-?\d+(?:\.\d+)?")


@dataclasses.dataclass
class Box:
    x0: float
    y0: float
    x1: float
    y1: float
    texts: list[str]
    round: bool  # an ellipse

    def on_side(self, point: tuple[float, float], side: str) -> bool:
        """Whether ``point`` is on the outline, on the ``side`` facing another layer."""
        x, y = point
        if self.round:  # on the ellipse, in the half facing that side
            rx, ry = (self.x1 - self.x0) / 2, (self.y1 - self.y0) / 2
            on = ((x - self.cx) / rx) ** 2 + ((y - self.cy) / ry) ** 2
            half = {"bottom": y >= self.cy, "top": y <= self.cy, "right": x >= self.cx}
            return abs(on - 1) < 0.02 and half.get(side, x <= self.cx)
        if side in ("bottom", "top"):
            edge = self.y1 if side == "bottom" else self.y0
            return abs(y - edge) < 0.11 and self.x0 - 0.1 <= x <= self.x1 + 0.1
        edge = self.x1 if side == "right" else self.x0
        return abs(x - edge) < 0.11 and self.y0 - 0.1 <= y <= self.y1 + 0.1

    @property
    def cx(self) -> float:
        return (self.x0 + self.x1) / 2

    @property
    def cy(self) -> float:
        return (self.y0 + self.y1) / 2


@dataclasses.dataclass
class Edge:
    tail: str
    head: str
    path: list[tuple[float, float]]  # M point, then the three points of each C
    tip: tuple[float, float] | None
    dashed: bool


def drawing(svg: str) -> tuple[dict[str, Box], list[Edge]]:
    """The boxes (by node id) and edges of an SVG that minigrad.layout wrote."""
    boxes, edge_list = {}, []
    for g in ET.fromstring(svg).iter(f"{SVG}g"):
        title = g.find(f"{SVG}title")
        name = title.text if title is not None and title.text else ""
        if g.get("class") == "node":
            rect, ell = g.find(f"{SVG}rect"), g.find(f"{SVG}ellipse")
            if rect is not None:
                x, y = float(rect.get("x", 0)), float(rect.get("y", 0))
                w, h = float(rect.get("width", 0)), float(rect.get("height", 0))
            else:
                assert ell is not None
                rx, ry = float(ell.get("rx", 0)), float(ell.get("ry", 0))
                x, y, w, h = (
                    float(ell.get("cx", 0)) - rx,
                    float(ell.get("cy", 0)) - ry,
                    2 * rx,
                    2 * ry,
                )
            texts = [t.text or "" for t in g.iter(f"{SVG}text")]
            boxes[name] = Box(x, y, x + w, y + h, texts, rect is None)
        elif g.get("class") == "edge":
            path, poly = g.find(f"{SVG}path"), g.find(f"{SVG}polygon")
            assert path is not None
            nums = [float(v) for v in NUM.findall(path.get("d", ""))]
            tip = None
            if poly is not None:
                first = [float(v) for v in NUM.findall(poly.get("points", ""))[:2]]
                tip = (first[0], first[1])
            tail, head = name.split("->")
            edge_list.append(
                Edge(
                    tail,
                    head,
                    list(zip(nums[::2], nums[1::2], strict=True)),
                    tip,
                    path.get("stroke-dasharray") is not None,
                )
            )
    return boxes, edge_list


def overlap(a: Box, b: Box) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def label_lines(label: str) -> list[str]:
    """What a node's escaped DOT label draws, line by line (independent of the layout)."""
    out = []
    for line in re.split(r"\\[nlr]", label):
        if line:
            out.append(re.sub(r"\\(.)", r"\1", line))
    return out


def check_geometry(g: DotGraph, lr: bool) -> tuple[dict[str, Box], list[Edge]]:
    """The invariants of any picture: every node drawn with every line of its label, no
    two boxes overlap, every edge goes from its tail's side to its head's, one layer on."""
    svg = layout.to_svg(g.graph)
    ET.fromstring(svg)  # well-formed XML
    boxes, drawn = drawing(svg)
    assert sorted(boxes) == sorted(g.graph.nodes)
    for node_id, attrs in g.graph.nodes.items():
        assert boxes[node_id].texts == label_lines(attrs.get("label", node_id)), node_id
    for a, b in itertools.combinations(boxes.values(), 2):
        assert not overlap(a, b), (a, b)
    assert sorted((e.tail, e.head) for e in drawn) == sorted((a, b) for a, b, _ in g.graph.edges)
    for e in drawn:  # from the tail's bottom (right) to the head's top (left side)
        t, h = boxes[e.tail], boxes[e.head]
        assert e.tip is not None
        assert h.x0 > t.x1 if lr else h.y0 > t.y1
        assert t.on_side(e.path[0], "right" if lr else "bottom"), e
        assert h.on_side(e.tip, "left" if lr else "top"), e
        assert math.dist(e.path[-1], e.tip) == pytest.approx(layout.ARROW, abs=0.2)  # its base
    return boxes, drawn


def graph(edges: str, rankdir: str = "TB", **labels: str) -> DotGraph:
    """A DotGraph of boxes from ``"a>b b>c"``; node ``n`` gets ``labels[n]`` (or ``n``)."""
    g = DotGraph(rankdir=rankdir)
    for pair in edges.split():
        for n in pair.split(">"):
            if n not in g.graph.nodes:
                g.node(n, labels.get(n, n), shape="box")
        g.edge(*pair.split(">"))
    return g


# ------------------------------------------------------------------------- reading DOT
def test_parse_reads_back_what_dotgraph_writes() -> None:
    g = DotGraph(name='n "q"', rankdir="TB", label="title <b> {x}")
    g.node("a", 'relu(x>0) "q"\nline 2', shape="box", style="rounded,filled", fillcolor="#fff")
    g.node("r", "{ x | data 2.0 | grad \\{1\\} }", raw=True, shape="record")
    g.edge("a", "r", label="d0 > 0", style="dashed")
    g.edge("r", "z")  # z: declared by the edge
    g.node("legend", "left\\lline\\l", raw=True, shape="note")
    assert layout.parse(g.source()) == g.graph
    assert g.graph.nodes["z"] == {} and list(g.graph.nodes) == ["a", "r", "z", "legend"]
    assert g.graph.edges[0] == ("a", "r", {"label": "d0 \\> 0", "style": "dashed"})


def test_parse_plain_dot_and_refusals() -> None:
    g = layout.parse(
        'strict digraph { // a comment\n rankdir=LR; node [shape=box]; a -> b -> "c d"\n'
        '  /* more */ b [label="B", color=red] edge [style=dotted]; -1.5 -> a; }'
    )
    assert g.attrs == {"rankdir": "LR"} and g.node_defaults == {"shape": "box"}
    assert list(g.nodes) == ["a", "b", "c d", "-1.5"]
    assert g.nodes["b"] == {"label": "B", "color": "red"}
    assert [(a, b) for a, b, _ in g.edges] == [("a", "b"), ("b", "c d"), ("-1.5", "a")]
    assert g.edge_defaults == {"style": "dotted"}
    for text, message in [
        ("graph { a -- b }", "only a 'digraph'"),
        ("digraph { a -> { b c } }", "expected 'id'"),
        ("digraph { subgraph s { a } }", "expected"),
        ("digraph { a -> b ", "got 'the end'"),
        ("digraph { a ! b }", "cannot read"),
    ]:
        with pytest.raises(ValueError, match=message):
            layout.parse(text)


# ------------------------------------------------------------------------- layout
def test_layers_follow_the_longest_path_and_inputs_sit_above_their_use() -> None:
    g = graph("a>b b>c c>d x>d")
    boxes, _ = check_geometry(g, lr=False)
    ys = {n: boxes[n].cy for n in "abcdx"}
    assert ys["a"] < ys["b"] < ys["c"] < ys["d"]
    assert ys["x"] == ys["c"]  # a source moves down to just above the node it feeds


def test_a_diamond_is_centred() -> None:
    boxes, _ = check_geometry(graph("a>b a>c b>d c>d"), lr=False)
    a, b, c, d = (boxes[n] for n in "abcd")
    assert b.cy == c.cy and a.cy < b.cy < d.cy
    assert d.cx == pytest.approx((b.cx + c.cx) / 2, abs=0.11)  # d centred under b and c
    assert a.cx == pytest.approx(d.cx, abs=0.11)
    # b and c both want to sit right above d: they touch, one gap (18) apart
    assert max(c.x0 - b.x1, b.x0 - c.x1) == pytest.approx(layout.GAP, abs=0.11)


def test_crossings_are_removed() -> None:
    # declared in this order, a1 -> b2 and a2 -> b1 cross; swapping b1 and b2 uncrosses
    g = graph("a1>b2 a2>b1", b1="b1", b2="b2")
    boxes, _ = check_geometry(g, lr=False)
    assert (boxes["a1"].cx < boxes["a2"].cx) == (boxes["b2"].cx < boxes["b1"].cx)
    # declared top a b c and bottom x y z, a -> z, b -> y, c -> x cross three times;
    # reversing the bottom layer crosses nothing
    g = DotGraph(rankdir="TB")
    for n in "abcxyz":
        g.node(n, n, shape="box")
    for a, b in ["az", "by", "cx", "ay"]:
        g.edge(a, b)
    boxes, drawn = check_geometry(g, lr=False)
    ends = sorted((boxes[e.tail].cx, boxes[e.head].cx) for e in drawn)
    crossings = sum(
        (s1 - s2) * (h1 - h2) < 0 for (s1, h1), (s2, h2) in itertools.combinations(ends, 2)
    )
    assert crossings == 0


def test_long_edges_pass_beside_the_layers_they_cross() -> None:
    boxes, drawn = check_geometry(graph("a>b b>c a>c", b="a wide box in the middle"), lr=False)
    (long,) = [e for e in drawn if (e.tail, e.head) == ("a", "c")]
    assert len(long.path) == 1 + 3 * 2  # two curves: through one dummy point
    mx, my = long.path[3]  # the point where the two curves meet: the dummy, in b's layer
    assert my == pytest.approx(boxes["b"].cy, abs=0.11)
    assert not boxes["b"].x0 <= mx <= boxes["b"].x1  # beside b, not through it


@pytest.mark.parametrize("rankdir", ["TB", "LR"])
@pytest.mark.parametrize("seed", range(6))
def test_random_graphs_keep_the_invariants(seed: int, rankdir: str) -> None:
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(rng.randint(5, 30))]
    g = DotGraph(rankdir=rankdir)
    for n in names:
        words = rng.choice(["x", "a longer label", "two\nlines", "x\ny\nz", "matmul"])
        g.node(n, f"{n} {words}", shape=rng.choice(["box", "ellipse", "note"]))
    for i, j in itertools.combinations(range(len(names)), 2):
        if rng.random() < 0.12:
            g.edge(names[i], names[j], **({"label": "lbl"} if rng.random() < 0.2 else {}))
    check_geometry(g, lr=rankdir == "LR")
    svg = layout.to_svg(g.graph)
    labels = [t for t in re.findall(r">([^<>]*)</text>", svg) if t == "lbl"]
    assert len(labels) == sum("label" in attrs for _, _, attrs in g.graph.edges)


def test_records_labels_titles_and_styles_are_drawn() -> None:
    x = Value(2.0, label='relu(x>0) {a|b} <port> "q" back\\slash')
    y = (x * 3).tanh()
    y.label = "y"
    y.backward()
    svg = layout.to_svg(layout.parse(mviz.to_dot(y, title="t & <b>")))  # from the text
    root = ET.fromstring(svg)
    texts = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert 'relu(x>0) {a|b} <port> "q" back\\slash' in texts  # escaped, drawn literally
    assert {"t & <b>", "data 2.0000", "grad 0.0000", "*", "tanh", "y"} <= set(texts)
    boxes, _ = drawing(svg)
    fields = {"v0": 3, "v1": 2, "v2": 3}  # label (if any) | data | grad
    for node_id, n in fields.items():  # one line between two fields
        assert len(boxes[node_id].texts) == n
        assert len(root.findall(f".//{SVG}g[{SVG}title='{node_id}']/{SVG}polyline")) == n - 1
    assert sorted(boxes) == sorted([*fields, "v1_op", "v2_op"])


def test_edge_labels_and_colours_of_a_tensor_graph() -> None:
    a = minitorch.tensor(0.5, requires_grad=True, name="a")
    b = minitorch.tensor(-1.0, requires_grad=True, name="b")
    y = (a * b).tanh()
    y.backward()
    text = viz.to_dot(
        y,
        edge_label=lambda n, k: f"∂/∂in{k} < 1",
        node_style=lambda n: {"fillcolor": "#ffd0d0"} if n.op.name == "tanh" else None,
    )
    svg = layout.to_svg(layout.parse(text))
    boxes, drawn = drawing(svg)
    texts = [t.text for t in ET.fromstring(svg).iter(f"{SVG}text")]
    assert texts.count("∂/∂in0 < 1") == 2 and texts.count("∂/∂in1 < 1") == 1
    assert 'fill="#ffd0d0"' in svg and 'fill="#dbe9f6"' in svg  # tanh's box, the leaves
    assert all(not e.dashed for e in drawn) and 'rx="6"' in svg  # rounded op boxes
    slope = 1 - math.tanh(-0.5) ** 2  # d tanh(a * b) / d a = b * slope
    for line in ("a", f"grad {-slope:.4g}", f"grad {0.5 * slope:.4g}", "tanh", "data -0.4621"):
        assert any(line in box.texts for box in boxes.values()), line


def test_cycles_are_drawn_with_their_arrows_and_empty_graphs_too() -> None:
    svg = layout.to_svg(layout.parse("digraph { a -> b; b -> c; c -> a; a -> a }"))
    boxes, drawn = drawing(svg)
    assert sorted((e.tail, e.head) for e in drawn) == [("a", "b"), ("b", "c"), ("c", "a")]
    for e in drawn:  # each arrowhead touches its own head, whichever way the edge runs
        assert e.tip is not None
        up = boxes[e.head].cy > boxes[e.tail].cy
        assert boxes[e.head].on_side(e.tip, "top" if up else "bottom")
        assert boxes[e.tail].on_side(e.path[0], "bottom" if up else "top")
    ET.fromstring(layout.to_svg(layout.parse("digraph {}")))


# ------------------------------------------------------------------------- render_dot
def no_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mviz.shutil, "which", lambda name: None)


def test_without_dot_svg_is_drawn_in_python(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    no_dot(monkeypatch)
    out = render_dot("digraph { a -> b }", tmp_path / "sub" / "g.svg")
    assert out == tmp_path / "sub" / "g.svg" and "drawn by minigrad.layout" in out.read_text()
    g = graph("a>b")
    render_dot(g, tmp_path / "g2.svg")  # a DotGraph is drawn without reading text
    assert (tmp_path / "g2.svg").read_text() == layout.to_svg(layout.parse(g.source()))
    with pytest.raises(RuntimeError, match="only SVG can be drawn without Graphviz") as err:
        render_dot("digraph { a -> b }", tmp_path / "g.png")
    assert "apt-get install graphviz" in str(err.value) and "brew install graphviz" in str(
        err.value
    )
    with pytest.raises(RuntimeError, match=r"engine='dot'.*apt-get install graphviz"):
        render_dot("digraph { a -> b }", tmp_path / "g3.svg", engine="dot")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["g.svg", "g2.svg", "sub"]


def test_engine_option_and_atomic_writes(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ValueError, match="engine must be one of"):
        render_dot("digraph { a }", tmp_path / "g.svg", engine="neato")
    with pytest.raises(ValueError, match="draws SVG only"):
        render_dot("digraph { a }", tmp_path / "g.pdf", engine="python")
    target = tmp_path / "g.svg"
    target.write_text("the previous picture")
    with pytest.raises(ValueError, match="only a 'digraph'"):
        render_dot("graph { a -- b }", target, engine="python")
    assert target.read_text() == "the previous picture"
    render_dot("digraph { a -> b }", tmp_path / "g.out", fmt="svg", engine="python")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.out", "g.svg"]  # no leftovers


@needs_dot
def test_dot_is_used_when_installed(tmp_path: pathlib.Path) -> None:
    auto = render_dot(graph("a>b"), tmp_path / "auto.svg")
    assert "Generated by graphviz" in auto.read_text()
    python = render_dot(graph("a>b"), tmp_path / "python.svg", engine="python")
    assert "drawn by minigrad.layout" in python.read_text()


# ------------------------------------------------------------------------- the demo
SCRIPT = shutil.which("minitorch", path=str(pathlib.Path(sys.executable).parent))


@pytest.mark.backend_independent
def test_demo_draws_graph_svg_without_graphviz(tmp_path: pathlib.Path) -> None:
    bare_path = str(pathlib.Path(sys.executable).parent)  # the virtualenv's scripts only
    assert shutil.which("dot", path=bare_path) is None
    cmd = [SCRIPT] if SCRIPT else [sys.executable, "-m", "minitorch"]
    env = {**os.environ, "PATH": bare_path, "MINITORCH_BACKEND": "numpy"}
    out = tmp_path / "out"
    run = subprocess.run(
        [*cmd, "demo", "--epochs", "1", "--no-plots", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "graphviz" not in run.stdout.lower()  # no note: the picture was drawn
    svg = (out / "graph.svg").read_text()
    assert "drawn by minigrad.layout" in svg
    boxes, drawn = drawing(svg)
    g = layout.parse((out / "graph.dot").read_text())
    assert sorted(boxes) == sorted(g.nodes) and len(drawn) == len(g.edges)
    texts = [t for box in boxes.values() for t in box.texts]
    assert {"layer1.weight", "cross_entropy(reduction=mean)", "a @ b", "grad 1", "legend"} <= set(
        texts
    )
    assert any(t.startswith("‖grad‖₂ ") for t in texts)
