"""Draw the graph behind a tensor: ``to_dot`` (DOT text, no dependency) and ``render``.

The engine records one :class:`~minitorch.autograd.Node` per op application and never
holds intermediate tensors, so the picture shows what the graph knows:

* one box per op: the op as a person writes it (``a @ b``, ``x[0]``, ``sum(axis=1)``, see
  :func:`op_label`) and its output's shape;
* one box per leaf tensor that requires grad (its name, shape, dtype, the first few
  values and its gradient once backward has run);
* one grey box per input that needs no gradient (data, targets, Python numbers), with
  its shape and values while the op still holds them (before backward, or with
  ``retain_graph=True``);
* the dtype, values and gradient of the output tensor itself and of every tensor on
  which ``retain_grad()`` was called, on their op's box;
* a legend: a gradient of one element is shown signed (``grad -0.94``), a larger one by
  its L2 norm (``‖grad‖₂ 1.23``, the square root of the sum of squares).

Labels are escaped (:func:`minigrad.viz.escape_label`), so names such as ``relu(x>0)`` or
``say "hi"`` are drawn as written. Pictures are drawn by :func:`minigrad.viz.render_dot`:
with the Graphviz ``dot`` program when it is installed (any format), else as SVG by a
small layout in pure Python.
"""

from __future__ import annotations

import math
import os
import pathlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from minigrad.viz import DotGraph, escape_label, render_dot

from .backend import to_host
from .engine import Node
from .tensor import Tensor

__all__ = ["escape_label", "op_label", "render", "render_dot", "to_dot"]

_LEAF: dict[str, Any] = {"style": "filled", "fillcolor": "#dbe9f6", "shape": "box"}
_CONST: dict[str, Any] = {
    "style": "filled",
    "fillcolor": "#eeeeee",
    "shape": "box",
    "fontcolor": "#444444",
}
_OP: dict[str, Any] = {"style": "rounded,filled", "fillcolor": "#fff4d6", "shape": "box"}
_ROOT: dict[str, Any] = {"style": "rounded,filled", "fillcolor": "#d4f0d4", "shape": "box"}
_NOTE: dict[str, Any] = {"shape": "note", "fontsize": "10", "fontcolor": "#444444"}

#: ops written as operators (``a`` is input 0, ``b`` input 1)
_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "matmul": "@"}
#: ops whose one parameter is written as positional arguments: ``reshape(2, 3)``
_POSITIONAL = {"reshape": "shape", "broadcast_to": "shape", "permute_dims": "axes"}
#: parameters left at their usual value, not shown (nor None, False and internal flags;
#: a loss shows its reduction, which sets the gradient's scale)
_USUAL = {("correction", 0.0), ("k", 0)}
#: what the legend says, in its order, for each kind of line the picture holds
_LEGEND = {
    "grad": "grad v: the gradient of the output with respect to it (one element)",
    "norm": "‖grad‖₂ v: the L2 norm of a larger gradient, sqrt(sum of squares)",
    "data": "data [...]: its first values, row by row",
    "bare": "op box with a shape only: a result not kept (retain_grad() keeps it)",
    "const": "grey box, dashed edge: an input that needs no gradient",
}


def _number(v: Any) -> str:
    if isinstance(v, bool | np.bool_):
        return str(bool(v))
    if isinstance(v, int | np.integer):
        return str(int(v))
    return f"{float(v):.4g}"


def _values(arr: np.ndarray, max_values: int) -> str:
    """``[a, b, c, ...]`` with at most ``max_values`` numbers (a bare number for one)."""
    flat = np.asarray(arr).reshape(-1)
    if flat.size == 1 and np.ndim(arr) == 0:
        return _number(flat[0])
    shown = ", ".join(_number(v) for v in flat[:max_values])
    more = ", ..." if flat.size > max_values else ""
    return f"[{shown}{more}]"


def _grad(arr: np.ndarray, facts: set[str]) -> str:
    """``grad -0.94`` for one element (signed), else ``‖grad‖₂ 1.23``."""
    a = np.asarray(arr, dtype=np.float64)
    if a.size == 1:
        facts.add("grad")
        return f"grad {_number(a.reshape(-1)[0])}"
    facts.add("norm")
    return f"‖grad‖₂ {_number(math.sqrt(float(np.sum(a * a))))}"


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _index(e: Any, node: Node) -> str:
    """One element of an indexing key as written in ``x[...]``."""
    if e is Ellipsis:
        return "..."
    if isinstance(e, slice):
        text = ":".join("" if v is None else str(v) for v in (e.start, e.stop))
        return text if e.step is None else f"{text}:{e.step}"
    if hasattr(e, "dtype"):  # an index array or a mask
        host = to_host(e)  # the key may hold host arrays on any backend
        if host.dtype == np.bool_:
            return "mask"
        return _values(host, 4)
    return str(e)


def op_label(node: Node) -> str:
    """How a person writes ``node``'s op: ``a @ b``, ``x[0, 1:]``, ``sum(axis=1)``, ``relu``.

    Binary operators name their inputs ``a`` (input 0) and ``b`` (input 1), indexing and
    negation the input ``x``; other ops show their name and the parameters that are not
    at their usual value.

    Examples
    --------
    >>> x = minitorch.tensor([[1.0, 2.0]], requires_grad=True)
    >>> ys = [x @ x.T, x[0, 1:], x[:, [1, 0]], x.sum(axis=1), -x, x.reshape(2, 1), x.T]
    >>> [op_label(y.grad_fn) for y in ys]
    ['a @ b', 'x[0, 1:]', 'x[:, [1, 0]]', 'sum(axis=1)', '-x', 'reshape(2, 1)', 'transpose']
    """
    name, params = node.op.name, node.params
    if name in _INFIX:
        return f"a {_INFIX[name]} b"
    if name == "neg":
        return "-x"
    if name == "getitem":
        key = list(params["key"])
        if len(key) > 1 and key[-1] is Ellipsis:  # added by the op: x[0] is x[0, ...]
            key.pop()
        return f"x[{', '.join(_index(e, node) for e in key)}]"
    if name == "permute_dims" and list(params["axes"]) == list(range(len(params["axes"])))[::-1]:
        return "transpose"
    if name in _POSITIONAL and isinstance(params.get(_POSITIONAL[name]), tuple):
        return f"{name}({', '.join(str(s) for s in params[_POSITIONAL[name]])})"
    shown = []
    for k, v in params.items():
        simple = isinstance(v, bool | int | float | str) or (
            isinstance(v, tuple) and all(isinstance(e, int) for e in v)
        )
        # a dtype of the node's library (by identity: an array of weights compares
        # elementwise)
        dtype = next((n for n, d in node.backend.dtypes.items() if d is v), None)
        if dtype is not None:
            shown.append(f"{k}={dtype}")
        elif simple and v is not False and (k, v) not in _USUAL:  # no arrays (class weights)
            shown.append(f"{k}={_number(v) if isinstance(v, float) else v}")
    return f"{name}({', '.join(shown)})" if shown else name


def _tensor_lines(t: Tensor, max_values: int, facts: set[str], *, with_grad: bool) -> list[str]:
    """Shape and dtype, the first values and the gradient of a tensor the graph holds."""
    be = t.backend
    lines = [f"{_shape(t.shape)} {be.dtype_name(t.data.dtype)}"]
    if max_values > 0:
        facts.add("data")
        lines.append(f"data {_values(t.numpy(), max_values)}")
    if t.grad is not None:
        lines.append(_grad(be.to_numpy(t.grad), facts))
    elif with_grad:
        lines.append("grad: none yet")
    return lines


def _walk(root: Node) -> list[Node]:
    """Every node reachable from ``root``, in a deterministic depth-first order."""
    order: list[Node] = []
    seen: set[int] = set()
    stack = [root]
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        order.append(n)
        stack.extend(e for e in reversed(n.edges) if isinstance(e, Node))
    return order


EdgeLabel = Callable[[Node, int], str | None]
NodeStyle = Callable[[Node], Mapping[str, str] | None]


def to_dot(
    tensor: Tensor,
    *,
    max_values: int = 4,
    title: str = "",
    rankdir: str = "TB",
    edge_label: EdgeLabel | None = None,
    node_style: NodeStyle | None = None,
) -> str:
    """DOT text for the graph that produced ``tensor``.

    Parameters
    ----------
    tensor : Tensor
        The output to draw (usually a loss); leaves and ops it depends on are drawn.
    max_values : int
        How many values of a tensor to print (0: none).
    title : str
        A caption for the picture.
    rankdir : str
        Layout direction: ``"TB"`` (inputs on top) or ``"LR"``.
    edge_label : callable, optional
        ``edge_label(node, k)``: a label for the edge from input ``k`` of op ``node``
        (the lab writes local derivatives there); ``None`` draws no label.
    node_style : callable, optional
        ``node_style(node)``: extra Graphviz attributes for op ``node``'s box (e.g.
        ``{"fillcolor": "#ffd0d0"}``), overriding the defaults; ``None`` keeps them.

    Returns
    -------
    str
        A ``digraph``: pass it to :func:`render_dot`, or use :func:`render`.

    Examples
    --------
    >>> x = minitorch.tensor([1.0, -2.0, 3.0], requires_grad=True, name="x")
    >>> y = (x * x).sum()
    >>> y.backward()
    >>> text = to_dot(y)
    >>> "‖grad‖₂ 7.483" in text       # the norm of x.grad = 2x: sqrt(4 + 16 + 36)
    True
    >>> print(text.count("->"))
    3
    """
    return _graph(tensor, max_values, title, rankdir, edge_label, node_style).source()


def _graph(
    tensor: Tensor,
    max_values: int,
    title: str,
    rankdir: str,
    edge_label: EdgeLabel | None,
    node_style: NodeStyle | None,
) -> DotGraph:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dot: expected a minitorch Tensor, got {type(tensor).__name__}")
    g = DotGraph(name="minitorch", rankdir=rankdir, label=title)
    facts: set[str] = set()  # the kinds of lines drawn, for the legend
    root_node = tensor.grad_fn
    if root_node is None:
        lines = [tensor.name or "tensor", *_tensor_lines(tensor, max_values, facts, with_grad=True)]
        g.node("t0", "\n".join(lines), **_LEAF if tensor.requires_grad else _CONST)
        _legend(g, facts)
        return g

    nodes = _walk(root_node)
    op_ids = {id(n): f"op{i}" for i, n in enumerate(nodes)}
    leaf_ids: dict[int, str] = {}
    for n in nodes:
        nid = op_ids[id(n)]
        known = tensor if n is root_node else (n.retain() if n.retain is not None else None)
        if known is None:
            facts.add("bare")
            lines = [op_label(n), _shape(n.shape)]
        else:
            lines = [known.name] if known.name else []
            lines.append(op_label(n))
            lines += _tensor_lines(known, max_values, facts, with_grad=n.retain is not None)
        style = dict(_ROOT if n is root_node else _OP)
        if node_style is not None:
            style.update(node_style(n) or {})
        g.node(nid, "\n".join(lines), **style)
        for k, e in enumerate(n.edges):
            extra: dict[str, str] = {}
            if edge_label is not None and (text := edge_label(n, k)):
                extra["label"] = text
            if isinstance(e, Node):
                g.edge(op_ids[id(e)], nid, **extra)
            elif isinstance(e, Tensor):
                if id(e) not in leaf_ids:
                    lid = leaf_ids[id(e)] = f"t{len(leaf_ids)}"
                    lines = [e.name or "leaf", *_tensor_lines(e, max_values, facts, with_grad=True)]
                    g.node(lid, "\n".join(lines), **_LEAF)
                g.edge(leaf_ids[id(e)], nid, **extra)
            else:
                facts.add("const")
                cid = f"c{nid[2:]}_{k}"
                lines = [f"input {k} (no grad)"]
                arr = n.saved_input(k)
                if arr is not None:
                    host = np.asarray(n.backend.to_numpy(arr))
                    lines.append(f"{_shape(tuple(host.shape))} {n.backend.dtype_name(arr.dtype)}")
                    if max_values > 0:
                        lines.append(f"data {_values(host, max_values)}")
                g.node(cid, "\n".join(lines), **_CONST)
                g.edge(cid, nid, style="dashed", **extra)
    _legend(g, facts)
    return g


def _legend(g: DotGraph, facts: set[str]) -> None:
    """A note that says what the lines of the boxes mean (left-aligned lines)."""
    if not facts:
        return
    lines = ["legend", *(text for key, text in _LEGEND.items() if key in facts)]
    g.node("legend", "".join(escape_label(line) + "\\l" for line in lines), raw=True, **_NOTE)


def render(
    tensor: Tensor,
    path: str | os.PathLike[str],
    *,
    max_values: int = 4,
    title: str = "",
    rankdir: str = "TB",
    fmt: str | None = None,
    engine: str = "auto",
    edge_label: EdgeLabel | None = None,
    node_style: NodeStyle | None = None,
) -> pathlib.Path:
    """Draw the graph of ``tensor`` to ``path`` (SVG, PNG, PDF... from the suffix).

    The options are :func:`to_dot`'s, and ``fmt`` and ``engine`` those of
    :func:`render_dot`: by default the Graphviz ``dot`` program draws the picture when it
    is installed, else (SVG only) a small layout in pure Python. A format other than SVG
    without ``dot`` raises ``RuntimeError`` naming the ``graphviz`` system package.

    Examples
    --------
    >>> import tempfile
    >>> x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    >>> y = x.tanh().sum()
    >>> with tempfile.TemporaryDirectory() as d:
    ...     out = render(y, pathlib.Path(d) / "g.svg", engine="python")
    ...     print(out.suffix, "tanh" in out.read_text())
    .svg True
    """
    g = _graph(tensor, max_values, title, rankdir, edge_label, node_style)
    return render_dot(g, path, fmt, engine=engine)
