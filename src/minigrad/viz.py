"""Draw computation graphs with Graphviz.

The generic part — :func:`escape_label`, :class:`DotGraph` and :func:`render_dot` — knows
nothing about :class:`~minigrad.scalar.Value` and can draw any graph (minitorch reuses it for
tensor graphs). :func:`to_dot` and :func:`render` draw a scalar graph: one record node per
value (label, data, grad) and one ellipse per operation.

Producing DOT text needs nothing; drawing it needs the Graphviz ``dot`` program, which is a
system package (``apt-get install graphviz``, ``brew install graphviz``), not a Python one.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

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
    unless ``raw=True`` (for record labels whose ``|`` and ``{ }`` are structure).

    Parameters
    ----------
    name : str, optional
        The graph's name.
    rankdir : str, optional
        Layout direction, ``"LR"`` (left to right) by default.
    label : str, optional
        A caption drawn under the graph.

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
      "a" [label="x \\> 0", shape="box"];
      "b" [label="y"];
      "a" -> "b";
    }
    """

    __slots__ = ("_lines", "name")

    def __init__(self, name: str = "graph", rankdir: str = "LR", label: str = "") -> None:
        self.name = name
        self._lines = [
            f'  rankdir="{escape_label(rankdir)}";',
            '  graph [fontname="Helvetica", fontsize="13"];',
            '  node [fontname="Helvetica", fontsize="11"];',
        ]
        if label:
            self._lines.insert(0, f'  label="{escape_label(label)}"; labelloc="t";')

    def node(self, node_id: str, label: str, *, raw: bool = False, **attrs: str) -> None:
        """Add a node; ``attrs`` are DOT attributes such as ``shape="record"``."""
        text = label if raw else escape_label(label)
        extra = {k: escape_label(v) for k, v in attrs.items()}
        self._lines.append(f'  "{escape_label(node_id)}" [{_attrs({"label": text, **extra})}];')

    def edge(self, tail: str, head: str, **attrs: str) -> None:
        """Add an edge ``tail -> head``."""
        spec = f" [{_attrs({k: escape_label(v) for k, v in attrs.items()})}]" if attrs else ""
        self._lines.append(f'  "{escape_label(tail)}" -> "{escape_label(head)}"{spec};')

    def source(self) -> str:
        """Return the DOT document."""
        body = "\n".join(self._lines)
        return f'digraph "{escape_label(self.name)}" {{\n{body}\n}}\n'


def render_dot(dot_text: str, path: str | os.PathLike[str], fmt: str | None = None) -> pathlib.Path:
    """Run Graphviz ``dot`` on ``dot_text`` and write the picture to ``path``.

    Parameters
    ----------
    dot_text : str
        A DOT document, e.g. from :func:`to_dot` or :meth:`DotGraph.source`.
    path : str or os.PathLike
        Output file; parent directories are created.
    fmt : str, optional
        Output format passed as ``dot -T<fmt>``; by default the file suffix (``.svg``,
        ``.png``, ``.pdf``...).

    Returns
    -------
    pathlib.Path
        The written file.

    Raises
    ------
    RuntimeError
        If the ``dot`` program is not installed, or if it rejects the input.

    Examples
    --------
    >>> import tempfile, shutil
    >>> if shutil.which("dot"):
    ...     with tempfile.TemporaryDirectory() as d:
    ...         out = render_dot('digraph { a -> b }', pathlib.Path(d) / "g.svg")
    ...         print(out.read_text().lstrip().startswith("<?xml"))
    ... else:
    ...     print(True)
    True
    """
    out = pathlib.Path(path)
    if fmt is None:
        fmt = out.suffix.lstrip(".").lower()
        if not fmt:
            raise ValueError(
                f"render_dot: cannot tell the output format of {str(out)!r}; "
                "give the file a suffix such as .svg or .png, or pass fmt='svg'"
            )
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError(
            "render_dot needs the Graphviz 'dot' program, which was not found on PATH. "
            "Install the system package 'graphviz' (Debian/Ubuntu: sudo apt-get install "
            "graphviz; macOS: brew install graphviz; conda: conda install graphviz), "
            "or use the DOT text directly."
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    # dot writes a temporary file beside the target, renamed onto it when dot succeeded:
    # an interrupted or failed run never leaves a half-written picture
    tmp = out.with_name(f".{out.stem}.{os.getpid()}.tmp{out.suffix}")
    try:
        result = subprocess.run(
            [exe, f"-T{fmt}", "-o", str(tmp)],
            input=dot_text,
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"Graphviz 'dot -T{fmt}' failed with exit code {result.returncode}: "
                f"{result.stderr.strip()}"
            )
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
    return graph.source()


def render(root: Value, path: str | os.PathLike[str], *, title: str = "") -> pathlib.Path:
    """Draw the graph of ``root`` to ``path`` (format from the suffix) with Graphviz ``dot``.

    Examples
    --------
    >>> import tempfile, shutil
    >>> x = Value(1.5, label="x")
    >>> y = x.tanh()
    >>> y.backward()
    >>> if shutil.which("dot"):
    ...     with tempfile.TemporaryDirectory() as d:
    ...         print(render(y, pathlib.Path(d) / "y.svg").suffix)
    ... else:
    ...     print(".svg")
    .svg
    """
    return render_dot(to_dot(root, title=title), path)
