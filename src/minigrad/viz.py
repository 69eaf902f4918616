"""Draw computation graphs: DOT text, and pictures with Graphviz or without it.

The generic part — :func:`escape_label`, :class:`DotGraph` and :func:`render_dot` — knows
nothing about :class:`~minigrad.scalar.Value` and can draw any graph (minitorch reuses it for
tensor graphs). :func:`to_dot` and :func:`render` draw a scalar graph: one record node per
value (label, data, grad) and one ellipse per operation.

Producing DOT text needs nothing. Drawing it uses the Graphviz ``dot`` program when it is
installed (a system package: ``apt-get install graphviz``, ``brew install graphviz``);
without it, SVG pictures are drawn by :mod:`minigrad.layout`, a small layered layout in
pure Python. PNG and PDF need ``dot``.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
from collections.abc import Callable

from minigrad import layout
from minigrad.scalar import Value, topological_order

__all__ = ["DotGraph", "escape_label", "render", "render_dot", "to_dot"]

# Characters with a meaning in a quoted DOT string or in a record label.
_ESCAPE_TABLE = str.maketrans(
    {
        "\\": "\\\\",
        '"': '\\"',
        "{": "\\{",
        "}": "\\}",
        "|": "\\|",
        "<": "\\<",
        ">": "\\>",
        "\n": "\\n",
        "\r": "\\n",
    }
)


def escape_label(text: str) -> str:
    """Escape ``text`` for use inside a double-quoted DOT label, record shapes included.

    Backslashes, double quotes and the record delimiters ``{ } | < >`` are backslash-escaped
    and line breaks become DOT's centred line break ``\\n``, so arbitrary user text (such as
    ``relu(x>0)``) is drawn literally and cannot break the graph.

    Examples
    --------
    >>> print(escape_label('relu(x>0) | "y"'))
    relu(x\\>0) \\| \\"y\\"
    """
    return text.replace("\r\n", "\n").translate(_ESCAPE_TABLE)


def _attrs(attrs: dict[str, str]) -> str:
    return ", ".join(f'{key}="{value}"' for key, value in attrs.items())


class DotGraph:
    """Build DOT text node by node: a tiny, dependency-free writer.

    Labels passed to :meth:`node` and :meth:`edge` are escaped with :func:`escape_label`
    unless ``raw=True`` (for record labels whose ``|`` and ``{ }`` are structure). The
    same graph is kept as data in :attr:`graph`, which :func:`render_dot` draws without
    reading the text back.

    Parameters
    ----------
    name : str, optional
        The graph's name.
    rankdir : str, optional
        Layout direction, ``"LR"`` (left to right) by default.
    label : str, optional
        A caption drawn above the graph.

    Examples
    --------
    >>> g = DotGraph()
    >>> g.node("a", "x > 0", shape="box")
    >>> g.node("b", "y")
    >>> g.edge("a", "b")
    >>> print(g.source(), end="")
    digraph "graph" {
      rankdir="LR";
      graph [fontname="Helvetica", fontsize="13"];
      node [fontname="Helvetica", fontsize="11"];
      edge [fontname="Helvetica", fontsize="10"];
      "a" [label="x \\> 0", shape="box"];
      "b" [label="y"];
      "a" -> "b";
    }
    >>> g.graph.nodes["a"], g.graph.edges
    ({'label': 'x \\\\> 0', 'shape': 'box'}, [('a', 'b', {})])
    """

    __slots__ = ("_lines", "graph", "name")

    def __init__(self, name: str = "graph", rankdir: str = "LR", label: str = "") -> None:
        self.name = name
        graph_attrs = {"rankdir": escape_label(rankdir), "fontname": "Helvetica", "fontsize": "13"}
        node_attrs = {"fontname": "Helvetica", "fontsize": "11"}
        edge_attrs = {"fontname": "Helvetica", "fontsize": "10"}
        #: the graph as data (values escaped as in the text), for :mod:`minigrad.layout`
        self.graph = layout.Graph(escape_label(name), graph_attrs, node_attrs, edge_attrs)
        self._lines = [
            f'  rankdir="{escape_label(rankdir)}";',
            '  graph [fontname="Helvetica", fontsize="13"];',
            f"  node [{_attrs(node_attrs)}];",
            f"  edge [{_attrs(edge_attrs)}];",
        ]
        if label:
            self.graph.attrs.update(label=escape_label(label), labelloc="t")
            self._lines.insert(0, f'  label="{escape_label(label)}"; labelloc="t";')

    def node(self, node_id: str, label: str, *, raw: bool = False, **attrs: str) -> None:
        """Add a node; ``attrs`` are DOT attributes such as ``shape="record"``."""
        values = {"label": label if raw else escape_label(label)}
        values.update((k, escape_label(v)) for k, v in attrs.items())
        self.graph.nodes.setdefault(escape_label(node_id), {}).update(values)
        self._lines.append(f'  "{escape_label(node_id)}" [{_attrs(values)}];')

    def edge(self, tail: str, head: str, **attrs: str) -> None:
        """Add an edge ``tail -> head``."""
        values = {k: escape_label(v) for k, v in attrs.items()}
        ends = escape_label(tail), escape_label(head)
        for end in ends:
            self.graph.nodes.setdefault(end, {})
        self.graph.edges.append((*ends, values))
        spec = f" [{_attrs(values)}]" if values else ""
        self._lines.append(f'  "{ends[0]}" -> "{ends[1]}"{spec};')

    def source(self) -> str:
        """Return the DOT document."""
        body = "\n".join(self._lines)
        return f'digraph "{escape_label(self.name)}" {{\n{body}\n}}\n'


_ENGINES = ("auto", "dot", "python")
_INSTALL = (
    "Install the system package 'graphviz' (Debian/Ubuntu: sudo apt-get install graphviz; "
    "macOS: brew install graphviz; conda: conda install graphviz)"
)


def render_dot(
    dot_text: str | DotGraph,
    path: str | os.PathLike[str],
    fmt: str | None = None,
    *,
    engine: str = "auto",
) -> pathlib.Path:
    """Draw a DOT graph to ``path``: with Graphviz ``dot``, or in pure Python (SVG only).

    Parameters
    ----------
    dot_text : str or DotGraph
        A DOT document, e.g. from :func:`to_dot` or :meth:`DotGraph.source`, or the
        :class:`DotGraph` itself.
    path : str or os.PathLike
        Output file; parent directories are created. It is written whole or not at all
        (through a temporary file beside it).
    fmt : str, optional
        Output format such as ``svg``, ``png`` or ``pdf`` (``dot -T<fmt>``); by default the
        file suffix.
    engine : str
        ``"auto"`` (default): ``dot`` when it is on PATH, else the pure-Python layout of
        :mod:`minigrad.layout`. ``"dot"``: always Graphviz. ``"python"``: never Graphviz
        (for SVG, and for DOT text as :class:`DotGraph` writes it: no subgraphs).

    Returns
    -------
    pathlib.Path
        The written file.

    Raises
    ------
    RuntimeError
        If Graphviz is needed (``engine="dot"``, or a format other than SVG) but ``dot``
        is not installed, or if ``dot`` rejects the input.
    ValueError
        For an unknown engine, a path without a suffix and no ``fmt``, a format other
        than SVG with ``engine="python"``, or DOT text the Python layout cannot read.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = render_dot('digraph { a -> b }', pathlib.Path(d) / "g.svg", engine="python")
    ...     print(out.read_text().startswith("<?xml"), out.name)
    True g.svg
    """
    if engine not in _ENGINES:
        raise ValueError(f"render_dot: engine must be one of {_ENGINES}, got {engine!r}")
    out = pathlib.Path(path)
    if fmt is None:
        fmt = out.suffix.lstrip(".").lower()
        if not fmt:
            raise ValueError(
                f"render_dot: cannot tell the output format of {str(out)!r}; "
                "give the file a suffix such as .svg or .png, or pass fmt='svg'"
            )
    exe = shutil.which("dot") if engine != "python" else None
    if exe is None and engine == "dot":
        raise RuntimeError(
            "render_dot(engine='dot') needs the Graphviz 'dot' program, which was not found "
            f"on PATH. {_INSTALL}, or use engine='python' for SVG."
        )
    if exe is None and fmt.lower() != "svg":
        if engine == "python":
            raise ValueError(f"render_dot(engine='python') draws SVG only, not {fmt!r}")
        raise RuntimeError(
            f"render_dot: only SVG can be drawn without Graphviz, and its 'dot' program was "
            f"not found on PATH to draw {fmt!r}. {_INSTALL}, or write a .svg file."
        )
    if exe is None:
        graph = dot_text.graph if isinstance(dot_text, DotGraph) else layout.parse(dot_text)
        svg = layout.to_svg(graph).encode()
        return _write(out, lambda tmp: tmp.write_bytes(svg))
    text = dot_text.source() if isinstance(dot_text, DotGraph) else dot_text

    def run_dot(tmp: pathlib.Path) -> None:
        cmd = [exe, f"-T{fmt}", "-o", str(tmp)]  # DOT is UTF-8, whatever the locale
        result = subprocess.run(cmd, input=text.encode(), capture_output=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(
                f"Graphviz 'dot -T{fmt}' failed with exit code {result.returncode}: "
                f"{result.stderr.decode(errors='replace').strip()}"
            )

    return _write(out, run_dot)


def _write(out: pathlib.Path, write: Callable[[pathlib.Path], object]) -> pathlib.Path:
    """``write`` a temporary file beside ``out``, renamed onto it once complete: an
    interrupted or failed run never leaves a half-written picture."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.stem}.{os.getpid()}.tmp{out.suffix}")
    try:
        write(tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out


def _number(x: float) -> str:
    return f"{x:.4f}"


def to_dot(root: Value, *, rankdir: str = "LR", title: str = "") -> str:
    """Return DOT text for the graph that produced ``root``.

    Each value is a record ``label | data … | grad …``; each operation is an ellipse
    between its operands and its result. Nodes are numbered in topological order, so the
    text is deterministic.

    Examples
    --------
    >>> x = Value(2.0, label="x")
    >>> y = (x * 3).relu()
    >>> y.label = "relu(x>0)"
    >>> y.backward()
    >>> text = to_dot(y)
    >>> "relu(x\\\\>0) | data 6.0000 | grad 1.0000" in text
    True
    """
    return _graph(root, rankdir, title).source()


def _graph(root: Value, rankdir: str, title: str) -> DotGraph:
    graph = DotGraph(name="minigrad", rankdir=rankdir, label=title)
    order = topological_order(root)
    ids = {v: f"v{i}" for i, v in enumerate(order)}
    for v in order:
        vid = ids[v]
        fields = [escape_label(v.label)] if v.label else []
        fields += [f"data {_number(v.data)}", f"grad {_number(v.grad)}"]
        graph.node(vid, "{ " + " | ".join(fields) + " }", raw=True, shape="record")
        if v.parents:
            op_id = f"{vid}_op"
            graph.node(op_id, v.op, shape="ellipse")
            for p in v.parents:
                graph.edge(ids[p], op_id)
            graph.edge(op_id, vid)
    return graph


def render(
    root: Value,
    path: str | os.PathLike[str],
    *,
    title: str = "",
    rankdir: str = "LR",
    fmt: str | None = None,
    engine: str = "auto",
) -> pathlib.Path:
    """Draw the graph of ``root`` to ``path`` (format from the suffix): see :func:`render_dot`
    for ``fmt`` and ``engine`` (Graphviz when installed, else SVG in pure Python).

    Examples
    --------
    >>> import tempfile
    >>> x = Value(1.5, label="x")
    >>> y = x.tanh()
    >>> y.backward()
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = render(y, pathlib.Path(d) / "y.svg", engine="python")
    ...     print(out.suffix, "grad 0.1807" in out.read_text())
    .svg True
    """
    return render_dot(_graph(root, rankdir, title), path, fmt, engine=engine)
