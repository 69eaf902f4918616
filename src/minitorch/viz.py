"""Draw the graph behind a tensor: ``to_dot`` (DOT text, no dependency) and ``render``.

The engine records one :class:`~minitorch.autograd.Node` per op application and never
holds intermediate tensors, so the picture shows what the graph knows:

* one box per op (its name, parameters such as ``axis=1``, and its output shape);
* one box per leaf tensor that requires grad (its name, shape, dtype, the first few
  values and the norm of ``.grad`` once backward has run);
* one grey box per input that needs no gradient (data, targets, Python numbers), with
  its shape and values while the op still holds them (before backward, or with
  ``retain_graph=True``);
* values and the gradient norm of the output tensor itself and of every tensor on which
  ``retain_grad()`` was called, on their op's box.

Labels are escaped (:func:`minigrad.viz.escape_label`), so names such as ``relu(x>0)`` or
``say "hi"`` are drawn as written. Drawing needs the Graphviz ``dot`` program, a system
package (``apt-get install graphviz``, ``brew install graphviz``).
"""

from __future__ import annotations

import math
import os
import pathlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from minigrad.viz import DotGraph, escape_label, render_dot

from .engine import Node
from .tensor import Tensor

__all__ = ["escape_label", "render", "render_dot", "to_dot"]

_LEAF: dict[str, Any] = {"style": "filled", "fillcolor": "#dbe9f6", "shape": "box"}
_CONST: dict[str, Any] = {
    "style": "filled",
    "fillcolor": "#eeeeee",
    "shape": "box",
    "fontcolor": "#444444",
}
_OP: dict[str, Any] = {"style": "rounded,filled", "fillcolor": "#fff4d6", "shape": "box"}
_ROOT: dict[str, Any] = {"style": "rounded,filled", "fillcolor": "#d4f0d4", "shape": "box"}


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


def _norm(arr: np.ndarray) -> str:
    a = np.asarray(arr, dtype=np.float64)
    return _number(math.sqrt(float(np.sum(a * a))))


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _params(node: Node) -> str:
    shown = []
    for k, v in node.params.items():
        simple = isinstance(v, bool | int | float | str) or (
            isinstance(v, tuple) and all(isinstance(e, int) for e in v)
        )
        if simple and v is not False:  # flags left at False are the usual default
            shown.append(f"{k}={v}")
    return f"({', '.join(shown)})" if shown else ""


def _tensor_lines(t: Tensor, max_values: int, *, with_grad: bool = True) -> list[str]:
    be = t.backend
    lines = [f"{_shape(t.shape)} {be.dtype_name(t.data.dtype)}"]
    if max_values > 0:
        lines.append(f"data {_values(t.numpy(), max_values)}")
    if with_grad:
        if t.grad is None:
            lines.append("grad: none yet")
        else:
            lines.append(f"|grad| {_norm(be.to_numpy(t.grad))}")
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
        Graphviz layout direction: ``"TB"`` (inputs on top) or ``"LR"``.
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
    >>> "7.483" in text               # the norm of x.grad = 2x: sqrt(4 + 16 + 36)
    True
    >>> print(text.count("->"))
    3
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"to_dot: expected a minitorch Tensor, got {type(tensor).__name__}")
    g = DotGraph(name="minitorch", rankdir=rankdir, label=title)
    root_node = tensor.grad_fn
    if root_node is None:
        lines = [tensor.name or "tensor", *_tensor_lines(tensor, max_values)]
        g.node("t0", "\n".join(lines), **_LEAF if tensor.requires_grad else _CONST)
        return g.source()

    nodes = _walk(root_node)
    op_ids = {id(n): f"op{i}" for i, n in enumerate(nodes)}
    leaf_ids: dict[int, str] = {}
    for n in nodes:
        nid = op_ids[id(n)]
        op_line = f"{n.op.name}{_params(n)}"
        known = tensor if n is root_node else (n.retain() if n.retain is not None else None)
        if known is None:
            lines = [op_line, f"out {_shape(n.shape)}"]
        else:
            lines = [known.name] if known.name else []
            lines += [op_line, *_tensor_lines(known, max_values, with_grad=known.grad is not None)]
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
                    g.node(
                        lid, "\n".join([e.name or "leaf", *_tensor_lines(e, max_values)]), **_LEAF
                    )
                g.edge(leaf_ids[id(e)], nid, **extra)
            else:
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
    return g.source()


def render(
    tensor: Tensor,
    path: str | os.PathLike[str],
    *,
    max_values: int = 4,
    title: str = "",
    rankdir: str = "TB",
    fmt: str | None = None,
) -> pathlib.Path:
    """Draw the graph of ``tensor`` to ``path`` (SVG, PNG, PDF... from the suffix).

    Needs the Graphviz ``dot`` program; raises ``RuntimeError`` naming the ``graphviz``
    system package when it is missing.

    Examples
    --------
    >>> import shutil, tempfile
    >>> x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    >>> y = x.tanh().sum()
    >>> if shutil.which("dot"):
    ...     with tempfile.TemporaryDirectory() as d:
    ...         print(render(y, pathlib.Path(d) / "g.svg").suffix)
    ... else:
    ...     print(".svg")
    .svg
    """
    text = to_dot(tensor, max_values=max_values, title=title, rankdir=rankdir)
    return render_dot(text, path, fmt=fmt)
