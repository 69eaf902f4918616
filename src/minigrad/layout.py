"""Draw a DOT graph as SVG in pure Python: a small layered (Sugiyama-style) layout.

:func:`minigrad.viz.render_dot` uses this when Graphviz's ``dot`` program is not installed.
It reads the DOT subset that :class:`minigrad.viz.DotGraph` writes (:func:`parse`: one
``digraph`` of ``key=value`` statements, ``graph``/``node``/``edge`` defaults, nodes and
edge chains; no subgraphs) and draws it in five steps, as ``dot`` does, only simpler:

1. **Layers.** Edges that close a cycle are turned around (those a depth-first search
   meets going back up). Each node gets the layer of its longest path from a source,
   then moves down to just above its nearest successor, so that an input sits next to
   the op that uses it. With edge labels the layers are doubled: every labelled edge then
   has a middle layer, where its label is placed like a node.
2. **Dummy nodes.** An edge spanning several layers becomes a chain through one invisible
   point per layer crossed, so that every edge joins adjacent layers.
3. **Order.** Layer by layer, down then up, nodes are sorted by the barycenter (mean
   position) of their neighbours in the layer just sorted; the order with the fewest
   edge crossings of a few such sweeps is kept.
4. **Coordinates.** Each node wants to sit at the mean position of its neighbours in
   the layer just placed (an op centred under its inputs, then inputs centred over their
   op), and edges between dummy nodes weigh more, so that long edges run straight. The
   positions closest to these wishes (least squares) that keep the order and a gap
   between boxes are found exactly by pooling adjacent violators. A layer is as thick
   as its tallest box.
5. **SVG.** Boxes are sized from their text (an upper estimate of each character's
   width) and drawn with the DOT attributes' fill colours, rounded/dashed/filled styles
   and record fields; edges are smooth curves (Catmull-Rom splines through the dummy
   points) with arrowheads, labels and styles; the graph's label is its title.

``rankdir`` may be ``TB`` (top to bottom, the default) or ``LR`` (left to right).

Examples
--------
>>> svg = to_svg(parse('digraph { rankdir="LR"; a -> b [label="x > 0"]; }'))
>>> svg.startswith("<?xml") and "x &gt; 0" in svg
True
"""

from __future__ import annotations

import bisect
import dataclasses
import html
import itertools
import math
import re

__all__ = ["Graph", "parse", "to_svg"]

Attrs = dict[str, str]


@dataclasses.dataclass
class Graph:
    """A DOT digraph. Attribute values are kept as DOT writes them (escaped)."""

    name: str = ""
    attrs: Attrs = dataclasses.field(default_factory=dict)
    node_defaults: Attrs = dataclasses.field(default_factory=dict)
    edge_defaults: Attrs = dataclasses.field(default_factory=dict)
    nodes: dict[str, Attrs] = dataclasses.field(default_factory=dict)
    edges: list[tuple[str, str, Attrs]] = dataclasses.field(default_factory=list)


# ------------------------------------------------------------------------- reading DOT
_TOKEN = re.compile(
    r'\s+|//[^\n]*|/\*.*?\*/|"((?:[^"\\]|\\.)*)"|(->|--|[{}\[\];,=])|(-?[\w.]+)|(.)', re.S
)


def parse(text: str) -> Graph:
    """Read the DOT subset :class:`~minigrad.viz.DotGraph` writes (values stay escaped).

    >>> g = parse('digraph "g" { node [shape="box"]; a -> b -> c [style="dashed"]; }')
    >>> list(g.nodes), g.node_defaults, g.edges[1]
    (['a', 'b', 'c'], {'shape': 'box'}, ('b', 'c', {'style': 'dashed'}))
    """
    toks: list[tuple[str, str]] = []  # ("id", text) or (punctuation, "")
    for m in _TOKEN.finditer(text):
        quoted, punctuation, word, other = m.groups()
        if other is not None:
            raise ValueError(f"DOT: cannot read {text[m.start() : m.start() + 20]!r}")
        if quoted is not None or word is not None:
            toks.append(("id", quoted if quoted is not None else word))
        elif punctuation is not None:
            toks.append((punctuation, ""))
    toks.append(("the end", ""))
    g, i = Graph(), 0

    def take(kind: str) -> str:
        nonlocal i
        if toks[i][0] != kind:
            got = toks[i][1] or toks[i][0]
            raise ValueError(f"DOT: expected {kind!r}, got {got!r} (only a plain digraph)")
        i += 1
        return toks[i - 1][1]

    def attr_list() -> Attrs:
        nonlocal i
        attrs: Attrs = {}
        while toks[i][0] == "[":
            i += 1
            while toks[i][0] != "]":
                key = take("id")
                take("=")
                attrs[key] = take("id")
                i += toks[i][0] in (",", ";")
            i += 1
        return attrs

    i += toks[0] == ("id", "strict")
    if take("id") != "digraph":
        raise ValueError("DOT: only a 'digraph' can be drawn")
    g.name = take("id") if toks[i][0] == "id" else ""
    take("{")
    while toks[i][0] != "}":
        if toks[i][0] == ";":
            i += 1
            continue
        first = take("id")
        if toks[i][0] == "=":  # a graph attribute: key=value
            i += 1
            g.attrs[first] = take("id")
        elif first in ("graph", "node", "edge") and toks[i][0] == "[":
            kind = {"graph": g.attrs, "node": g.node_defaults, "edge": g.edge_defaults}
            kind[first].update(attr_list())
        else:
            chain = [first]
            while toks[i][0] == "->":
                i += 1
                chain.append(take("id"))
            attrs = attr_list()
            for node in chain:
                g.nodes.setdefault(node, {})
            if len(chain) == 1:
                g.nodes[first].update(attrs)
            g.edges += [(a, b, dict(attrs)) for a, b in itertools.pairwise(chain)]
    take("}")
    return g


def _plain(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def _lines(text: str) -> list[tuple[str, str]]:
    r"""An escaped DOT label as ``(line, align)`` pairs: ``\n`` centres a line, ``\l``
    and ``\r`` justify it left and right; ``\x`` is ``x`` for any other character."""
    out, cur, chars = [], "", iter(text)
    for ch in chars:
        if ch == "\\":
            ch = next(chars, "\\")
            if ch in "nlr":
                out.append((cur, {"n": "middle", "l": "start", "r": "end"}[ch]))
                cur = ""
                continue
        cur += ch
    return [*out, (cur, "middle")] if cur or not out else out


def _record_fields(label: str) -> tuple[list[str], bool]:
    """The top-level fields of a record label, and whether they were in ``{ }``."""
    label = label.strip()
    flipped = label.startswith("{") and label.endswith("}") and not label.endswith("\\}")
    fields, cur = [], ""
    for part in re.findall(r"\\.|.", label[1:-1] if flipped else label, re.S):
        if part == "|":
            fields.append(cur)
            cur = ""
        elif part not in "{}":  # nested fields are drawn as text
            cur += part
    return [re.sub(r"(?<!\\)<[^>]*>", "", f).strip() for f in [*fields, cur]], flipped


# ------------------------------------------------------------------------- sizes
_EM = {
    **dict.fromkeys("ijl.,:;'|!", 0.3),
    **dict.fromkeys('frt()[]{}-/ I*"', 0.4),
    **dict.fromkeys("mwMW@%", 0.95),
}
PAD_X, PAD_Y, GAP, RANKSEP, MARGIN, ARROW = 9.0, 5.0, 18.0, 36.0, 12.0, 9.0
ROUND = ("ellipse", "oval", "circle")
BARE = ("plaintext", "plain", "none")


def text_width(line: str, size: float) -> float:
    """An upper estimate of a line's width in a sans-serif font of ``size`` points."""
    return size * sum(_EM.get(ch, 0.74 if ch.isupper() else 0.62) for ch in line)


def _block(lines: list[tuple[str, str]], size: float) -> tuple[float, float]:
    return max(text_width(t, size) for t, _ in lines), len(lines) * size * 1.25


@dataclasses.dataclass
class _Box:
    """A node as drawn: attributes, text (a block per record field), size and centre."""

    attrs: Attrs
    fields: list[list[tuple[str, str]]]
    horizontal: bool  # record fields side by side
    parts: list[float]  # their extents
    w: float
    h: float
    x: float = 0.0
    y: float = 0.0


def _box(node_id: str, attrs: Attrs, lr: bool) -> _Box:
    """A node's box; ``node_id`` as DOT writes it (``\\N`` in a label stands for it)."""
    shape, size = attrs.get("shape", "ellipse"), float(attrs.get("fontsize", "14"))
    label = attrs.get("label", "\\N").replace("\\N", node_id)
    texts, flipped = _record_fields(label) if "record" in shape else ([label], lr)
    horizontal = lr == flipped  # as in dot: LR turns record fields, { } turn them back
    fields = [_lines(t) for t in texts]
    sizes = [_block(f, size) for f in fields]
    ws, hs = [w + 2 * PAD_X for w, _ in sizes], [h + 2 * PAD_Y for _, h in sizes]
    w, h = (sum(ws), max(hs)) if horizontal else (max(ws), sum(hs))
    if shape in ROUND:
        w, h = (max(w, h) * 1.3,) * 2 if shape == "circle" else (w * 1.3, h * 1.3)
    if shape not in BARE:
        w, h = max(w, 54.0), max(h, 36.0)
    return _Box(attrs, fields, horizontal, ws if horizontal else hs, w, h)


# ------------------------------------------------------------------------- layout
def _layers(n: int, edges: list[tuple[int, int]]) -> tuple[list[int], set[int]]:
    """A layer per node, and the indices of the edges turned around to break cycles."""
    out: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for k, (a, b) in enumerate(edges):
        out[a].append((b, k))
    state, back = [0] * n, set()  # state 0: unseen, 1: on the DFS stack, 2: done
    for root in range(n):
        if state[root]:
            continue
        state[root], stack = 1, [(root, iter(out[root]))]
        while stack:  # depth-first, without recursion: an edge to the stack closes a cycle
            v, todo = stack[-1]
            for w, k in todo:
                if state[w] == 1:
                    back.add(k)
                elif state[w] == 0:
                    state[w] = 1
                    stack.append((w, iter(out[w])))
                    break
            else:
                state[v] = 2
                stack.pop()
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg, rank = [0] * n, [0] * n
    for k, (a, b) in enumerate(edges):
        a, b = (b, a) if k in back else (a, b)
        succ[a].append(b)
        indeg[b] += 1
    topo = [v for v in range(n) if indeg[v] == 0]
    for v in topo:  # Kahn's topological order (the list grows while it is read)
        for w in succ[v]:
            rank[w] = max(rank[w], rank[v] + 1)  # the longest path from a source
            indeg[w] -= 1
            if indeg[w] == 0:
                topo.append(w)
    for v in reversed(topo):  # down to just above the nearest successor
        if succ[v]:
            rank[v] = min(rank[w] for w in succ[v]) - 1
    return rank, back


def _crossings(layers: list[list[int]], succ: list[list[int]], pos: list[int]) -> int:
    """Edge crossings between consecutive layers: pairs of edges whose ends swap order."""
    count = 0
    for layer in layers[:-1]:
        seen: list[int] = []  # the lower ends of the edges met so far, sorted
        for v in layer:
            for p in sorted(pos[w] for w in succ[v]):
                count += len(seen) - bisect.bisect_right(seen, p)
                bisect.insort(seen, p)
    return count


def _order(layers: list[list[int]], pred: list[list[int]], succ: list[list[int]]) -> None:
    """Reorder ``layers`` in place to cross few edges (barycenter sweeps)."""
    pos = [0] * len(pred)
    for layer in layers:
        for i, v in enumerate(layer):
            pos[v] = i
    best, best_order = _crossings(layers, succ, pos), [list(layer) for layer in layers]
    for sweep in range(8):
        down = sweep % 2 == 0
        near = pred if down else succ
        for layer in layers[1:] if down else layers[-2::-1]:
            layer.sort(
                key=lambda v: sum(pos[w] for w in near[v]) / len(near[v]) if near[v] else pos[v]
            )
            for i, v in enumerate(layer):
                pos[v] = i
        if (c := _crossings(layers, succ, pos)) < best:
            best, best_order = c, [list(layer) for layer in layers]
    layers[:] = best_order


def _fit(want: list[float], weight: list[float], gap: list[float]) -> list[float]:
    """Positions ``x`` closest to ``want`` (weighted least squares) with ``x[i + 1] -
    x[i] >= gap[i]``: an isotonic regression, solved by pooling adjacent violators."""
    offset = [0.0, *itertools.accumulate(gap)]
    blocks: list[tuple[float, float, int]] = []  # (value, weight, count)
    for t, o, w in zip(want, offset, weight, strict=True):
        value, total, count = t - o, w, 1
        while blocks and blocks[-1][0] >= value:  # merge with the block before
            v, ww, c = blocks.pop()
            value, total, count = (v * ww + value * total) / (ww + total), ww + total, c + count
        blocks.append((value, total, count))
    flat = [v for v, _, c in blocks for _ in range(c)]
    return [v + o for v, o in zip(flat, offset, strict=True)]


@dataclasses.dataclass
class _Vertices:
    """The layered graph: nodes ``0 .. n-1``, then dummy vertices. Per vertex: its layer,
    its extent before and after the point where edges pass it, across the layers (a box:
    half its size each way; a label: after the edge), its thickness along the layers, and
    its neighbours in the layers before and after its own."""

    n: int
    rank: list[int]
    lo: list[float]
    hi: list[float]
    thick: list[float]
    pred: list[list[int]]
    succ: list[list[int]]

    def add(self, rank: int, size: float = 0.0, depth: float = 0.0) -> int:
        """A new dummy vertex (``size``: a label's, after the edge); returns its index."""
        self.rank.append(rank)
        self.lo.append(0.0)
        self.hi.append(size)
        self.thick.append(depth)
        self.pred.append([])
        self.succ.append([])
        return len(self.rank) - 1


def _place(vs: _Vertices, layers: list[list[int]]) -> list[float]:
    """Each vertex's position across the layers: sweeps of least-squares fits."""
    u = [0.0] * len(vs.rank)

    def gaps(layer: list[int]) -> list[float]:  # half a gap beside a bare dummy vertex
        pairs = itertools.pairwise(layer)
        return [
            vs.hi[a] + vs.lo[b] + GAP / (1 + (vs.hi[a] == 0 or vs.hi[b] == 0)) for a, b in pairs
        ]

    for layer in layers:
        for v, x in zip(layer, itertools.accumulate(gaps(layer), initial=0.0), strict=False):
            u[v] = x
    for sweep in range(16):
        down = sweep % 2 == 0
        near = vs.pred if down else vs.succ
        for layer in layers[1:] if down else layers[-2::-1]:
            want, weight = [], []
            for v in layer:  # edges between dummy vertices weigh most: long edges run straight
                ws = [
                    1 + (v >= vs.n) + (w >= vs.n) + 4 * (v >= vs.n and w >= vs.n) for w in near[v]
                ]
                weight.append(sum(ws) if ws else 0.1)  # a vertex with no neighbour there: stay
                want.append(
                    sum(u[w] * c for w, c in zip(near[v], ws, strict=True)) / weight[-1]
                    if ws
                    else u[v]
                )
            for v, x in zip(layer, _fit(want, weight, gaps(layer)), strict=True):
                u[v] = x
    return u


@dataclasses.dataclass
class _Layout:
    boxes: list[_Box]
    # per edge: ``tail->head``, its points, whether they run from its head, its
    # attributes, which point its label is beside (-1: none)
    chains: list[tuple[str, list[tuple[float, float]], bool, Attrs, int]]
    width: float
    height: float


def _layout(graph: Graph, lr: bool) -> _Layout:
    ids = list(graph.nodes)
    n, index = len(ids), {node_id: i for i, node_id in enumerate(ids)}
    boxes = [_box(i, {**graph.node_defaults, **graph.nodes[i]}, lr) for i in ids]
    edges = [  # self-loops are not drawn
        (index[a], index[b], {**graph.edge_defaults, **attrs}, f"{_plain(a)}->{_plain(b)}")
        for a, b, attrs in graph.edges
        if a != b
    ]
    rank, back = _layers(n, [(a, b) for a, b, _, _ in edges])
    labelled = any("label" in attrs for _, _, attrs, _ in edges)
    if labelled:  # a middle layer for every edge's label
        rank = [2 * r for r in rank]
    half = [b.h / 2 if lr else b.w / 2 for b in boxes]
    thick = [b.w if lr else b.h for b in boxes]
    vs = _Vertices(n, rank, half, list(half), thick, [[] for _ in boxes], [[] for _ in boxes])
    chains: list[tuple[str, list[int], bool, Attrs, int]] = []
    for k, (a, b, attrs, title) in enumerate(edges):
        a, b = (b, a) if k in back else (a, b)
        chain, at, span = [a], -1, rank[b] - rank[a]
        for j in range(span - 1):  # a dummy vertex per layer crossed
            if "label" in attrs and j == span // 2 - 1:  # the middle one carries the label
                lw, lh = _block(_lines(attrs["label"]), float(attrs.get("fontsize", "14")))
                at = len(chain)
                chain.append(vs.add(rank[a] + j + 1, *((lh + 8, lw) if lr else (lw + 10, lh))))
            else:
                chain.append(vs.add(rank[a] + j + 1))
        chain.append(b)
        for v, w in itertools.pairwise(chain):
            vs.succ[v].append(w)
            vs.pred[w].append(v)
        chains.append((title, chain, k in back, attrs, at))
    layers: list[list[int]] = [[] for _ in range(max(rank, default=0) + 1)]
    for v, r in enumerate(rank):
        layers[r].append(v)
    _order(layers, vs.pred, vs.succ)
    u = _place(vs, layers)
    along, at_v = [], MARGIN  # each layer's centre along the layers
    sep = RANKSEP / 2 if labelled else RANKSEP
    for layer in layers:
        t = max((vs.thick[v] for v in layer), default=0.0)
        along.append(at_v + t / 2)
        at_v += t + sep
    low = min((x - lo for x, lo in zip(u, vs.lo, strict=True)), default=0.0) - MARGIN
    across = max((x + hi for x, hi in zip(u, vs.hi, strict=True)), default=0.0) - low + MARGIN

    def point(v: int) -> tuple[float, float]:
        return (along[rank[v]], u[v] - low) if lr else (u[v] - low, along[rank[v]])

    for v, box in enumerate(boxes):
        box.x, box.y = point(v)
    drawn = []
    for title, chain, turned, attrs, at in chains:
        pts = [point(v) for v in chain]
        pts[0], pts[-1] = _clip(boxes[chain[0]], pts[1], lr), _clip(boxes[chain[-1]], pts[-2], lr)
        drawn.append((title, pts, turned, attrs, at))
    length = at_v - sep + MARGIN
    return _Layout(boxes, drawn, *((length, across) if lr else (across, length)))


# ------------------------------------------------------------------------- SVG
def _el(tag: str, text: str | None = None, **attrs: object) -> str:
    """An SVG element: ``stroke_width=1.0`` is written ``stroke-width="1.0"``."""
    spec = " ".join(
        f'{k.replace("_", "-")}="{f"{v:.1f}" if isinstance(v, float) else html.escape(str(v))}"'
        for k, v in attrs.items()
    )
    return f"<{tag} {spec}/>" if text is None else f"<{tag} {spec}>{html.escape(text)}</{tag}>"


def _xy(*points: tuple[float, float]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


def to_svg(graph: Graph) -> str:
    """The SVG picture of ``graph`` (see the module's docstring for how it is laid out)."""
    lr = _plain(graph.attrs.get("rankdir", "TB")) in ("LR", "RL")
    lay = _layout(graph, lr)
    title = _lines(graph.attrs["label"]) if "label" in graph.attrs else []
    size = float(graph.attrs.get("fontsize", "14"))
    tw, th = _block(title, size) if title else (0.0, 0.0)
    width, height = max(lay.width, tw + 2 * MARGIN), lay.height + th
    top = th if _plain(graph.attrs.get("labelloc", "b")) == "t" else 0.0
    out = [
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.1f} {height:.1f}">',
        "<!-- drawn by minigrad.layout (Graphviz's dot was not used) -->",
        f"<title>{html.escape(_plain(graph.name))}</title>",
        _el("rect", width="100%", height="100%", fill="white"),
        f'<g transform="translate({(width - lay.width) / 2:.1f} {top:.1f})">',
    ]
    for edge, points, turned, attrs, at in lay.chains:
        out += _edge(edge, points[::-1] if turned else list(points), attrs)
        if at >= 0:  # the label, beside the edge's middle point
            (x, y), lines, fs = (
                points[at],
                _lines(attrs["label"]),
                float(attrs.get("fontsize", "14")),
            )
            lw, lh = _block(lines, fs)
            cx, cy = (x, y + 4 + lh / 2) if lr else (x + 5 + lw / 2, y)
            out += _text(lines, cx, cy, lw, fs, attrs)
    for b, node_id in zip(lay.boxes, graph.nodes, strict=True):
        out += _node(b, _plain(node_id))
    out.append("</g>")
    if title:
        y = th / 2 + MARGIN / 2 if top else lay.height + th / 2 - MARGIN / 2
        out += _text(title, width / 2, y, tw, size, graph.attrs)
    return "\n".join([*out, "</svg>", ""])


def _text(
    lines: list[tuple[str, str]], cx: float, cy: float, w: float, size: float, attrs: Attrs
) -> list[str]:
    """One ``<text>`` per line of a block ``w`` wide centred at ``(cx, cy)``."""
    font = html.escape(_plain(attrs.get("fontname", "Helvetica")) + ",Arial,sans-serif")
    color = html.escape(_plain(attrs.get("fontcolor", "black")))
    paint = f'font-family="{font}" font-size="{size:g}" fill="{color}"'
    out = []
    for i, (line, align) in enumerate(lines):
        x = {"middle": cx, "start": cx - w / 2, "end": cx + w / 2}[align]
        y = cy + (i - (len(lines) - 1) / 2) * size * 1.25 + size * 0.35
        at = f'text-anchor="{align}" x="{x:.1f}" y="{y:.1f}"'
        out.append(f"<text {at} {paint}>{html.escape(line)}</text>")
    return out


def _stroke(attrs: Attrs) -> tuple[set[str], dict[str, str]]:
    """The style's words, and the SVG attributes of the lines it asks for."""
    style = {s.strip() for s in _plain(attrs.get("style", "")).split(",")}
    paint = {"stroke": _plain(attrs.get("color", "black"))}
    paint["stroke_width"] = _plain(attrs.get("penwidth", "2" if "bold" in style else "1"))
    if "dashed" in style or "dotted" in style:
        paint["stroke_dasharray"] = "5,3" if "dashed" in style else "1,3"
    return style, paint


def _node(b: _Box, node_id: str) -> list[str]:
    style, stroke = _stroke(b.attrs)
    if "invis" in style:
        return []
    shape, size = b.attrs.get("shape", "ellipse"), float(b.attrs.get("fontsize", "14"))
    fill = _plain(b.attrs.get("fillcolor", b.attrs.get("color", "lightgrey")))
    paint = {"fill": fill if "filled" in style else "none", **stroke}
    if shape in BARE:
        paint["stroke"] = "none"
    x0, y0 = b.x - b.w / 2, b.y - b.h / 2
    out = [f'<g class="node"><title>{html.escape(node_id)}</title>']
    if shape in ROUND:
        out.append(_el("ellipse", cx=b.x, cy=b.y, rx=b.w / 2, ry=b.h / 2, **paint))
    else:
        r = 6 if "rounded" in style or shape == "Mrecord" else 0
        out.append(_el("rect", x=x0, y=y0, width=b.w, height=b.h, rx=r, **paint))
    if shape == "note":  # a folded corner
        x1 = x0 + b.w
        corner = _xy((x1 - 8, y0), (x1 - 8, y0 + 8), (x1, y0 + 8))
        out.append(_el("polyline", points=corner, fill="none", **stroke))
    # record fields share the box in proportion to their own sizes
    scale, at = (b.w if b.horizontal else b.h) / sum(b.parts), 0.0
    for k, (lines, part) in enumerate(zip(b.fields, b.parts, strict=True)):
        part *= scale
        if k:  # a line between two fields
            end = (x0 + at, y0 + b.h) if b.horizontal else (x0 + b.w, y0 + at)
            start = (x0 + at, y0) if b.horizontal else (x0, y0 + at)
            out.append(_el("polyline", points=_xy(start, end), **stroke))
        if b.horizontal:
            out += _text(lines, x0 + at + part / 2, b.y, part - 2 * PAD_X, size, b.attrs)
        else:
            out += _text(lines, b.x, y0 + at + part / 2, b.w - 2 * PAD_X, size, b.attrs)
        at += part
    return [*out, "</g>"]


def _clip(b: _Box, toward: tuple[float, float], lr: bool) -> tuple[float, float]:
    """Where an edge toward a point leaves ``b``: on the ray from an ellipse's centre,
    on the side of a box that faces the next layer."""
    dx, dy = toward[0] - b.x, toward[1] - b.y
    hw, hh = b.w / 2, b.h / 2
    if (dx if lr else dy) == 0:
        return b.x, b.y
    if b.attrs.get("shape", "ellipse") in ROUND:
        t = 1 / math.hypot(dx / hw, dy / hh)
        return b.x + t * dx, b.y + t * dy
    if lr:
        return b.x + math.copysign(hw, dx), b.y + max(-hh, min(hh, dy * hw / abs(dx)))
    return b.x + max(-hw, min(hw, dx * hh / abs(dy))), b.y + math.copysign(hh, dy)


def _edge(title: str, pts: list[tuple[float, float]], attrs: Attrs) -> list[str]:
    """A smooth path through ``pts`` (Catmull-Rom, as cubic Béziers) and its arrowhead."""
    style, stroke = _stroke(attrs)
    if "invis" in style:
        return []
    (ex, ey), (px, py) = pts[-1], pts[-2]
    length = math.hypot(ex - px, ey - py) or 1.0
    dx, dy = (ex - px) / length, (ey - py) / length  # the direction of arrival
    arrow = _plain(attrs.get("arrowhead", "normal")) != "none"
    if arrow:  # the path stops where the arrowhead begins
        pts[-1] = (ex - ARROW * dx, ey - ARROW * dy)
    d = f"M{_xy(pts[0])}"
    for i in range(len(pts) - 1):
        (x0, y0), (x1, y1), (x2, y2) = pts[max(i - 1, 0)], pts[i], pts[i + 1]
        x3, y3 = pts[min(i + 2, len(pts) - 1)]
        c2 = (x2 - (x3 - x1) / 6, y2 - (y3 - y1) / 6)
        if i == len(pts) - 2:  # arrive along the arrowhead
            third = math.hypot(x2 - x1, y2 - y1) / 3
            c2 = (x2 - dx * third, y2 - dy * third)
        d += f" C{_xy((x1 + (x2 - x0) / 6, y1 + (y2 - y0) / 6), c2, (x2, y2))}"
    out = [f'<g class="edge"><title>{html.escape(title)}</title>']
    out.append(_el("path", d=d, fill="none", **stroke))
    if arrow:
        bx, by = pts[-1]
        tip = _xy((ex, ey), (bx - 4 * dy, by + 4 * dx), (bx + 4 * dy, by - 4 * dx))
        out.append(_el("polygon", points=tip, fill=stroke["stroke"], **stroke))
    return [*out, "</g>"]
