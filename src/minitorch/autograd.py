"""The engine: graph nodes, ``apply`` (forward + recording) and the backward pass.

A Node records one op application: the op, its parameters, what the forward saved,
and one *edge* per input: the input's Node (an intermediate result), the input Tensor
itself (a leaf that requires grad), or None (no gradient needed). Nodes never point at
intermediate Tensors, so a long chain keeps only what its VJPs saved.

The backward pass visits nodes in topological order with an explicit stack (no
recursion: graphs 10^5+ deep are fine), sums fan-out gradients, reduces broadcast
gradients to each input's shape, checks version counters of saved tensors, and frees
saved arrays unless ``retain_graph=True``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import _grad_mode
from .errors import BackendMismatchError, OpError, describe

if TYPE_CHECKING:
    from .ops._registry import OpDef
    from .tensor import Tensor

__all__ = ["Node", "apply", "backward", "grad", "unbroadcast"]

Array = Any
_Tensor: Any = None  # minitorch.tensor.Tensor, bound when that module is imported
# one tuple object per distinct output shape, shared by every node: less memory per node
_SHAPES: dict[tuple[int, ...], tuple[int, ...]] = {}
_NEEDS1: tuple[bool, ...] = (True,)
_TAGS_OUT: tuple[int | None, ...] = (-1,)
_new = object.__new__


class Node:
    """One recorded op application (PyTorch calls this a ``grad_fn``).

    ``saved`` is None once backward has freed it. ``checks`` holds ``(tensor, version,
    input index)`` for every input the op saved, and ``out_modified`` describes an
    in-place change of the op's own (saved) output: backward refuses to use either.
    """

    __slots__ = (
        "backend",
        "checks",
        "edges",
        "op",
        "out_modified",
        "params",
        "retain",
        "saved",
        "shape",
        "tags",
    )

    # set by apply(), the only place that creates nodes (no __init__: it is the hot path)
    op: OpDef
    params: dict[str, Any]
    saved: tuple[Any, ...] | None
    edges: tuple[Any, ...]
    shape: tuple[int, ...]
    backend: Any
    tags: tuple[int | None, ...] | None
    checks: tuple[tuple[Any, int, int], ...]
    out_modified: tuple[str, int, Any] | None
    retain: Any

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def next_nodes(self) -> tuple[Any, ...]:
        """The inputs' nodes (or leaf tensors, or None), one per input."""
        return self.edges

    def saves_output(self) -> bool:
        return self.tags is not None and -1 in self.tags

    def __repr__(self) -> str:
        return f"<{self.op.name}>"


def _mix_error(op: OpDef, args: Sequence[Any]) -> BackendMismatchError:
    from .tensor import Tensor

    names = sorted({a._backend.name for a in args if isinstance(a, Tensor)})
    inputs = "; ".join(describe(a) for a in args)
    return BackendMismatchError(
        f"{op.name}: cannot combine tensors from different backends ({' and '.join(names)}); "
        f"inputs: {inputs}. Move one with .to({names[0]!r}) first."
    )


def _forward_error(
    op: OpDef, args: Sequence[Any], params: dict[str, Any], exc: Exception
) -> OpError:
    from .tensor import Tensor

    tensors = [a for a in args if isinstance(a, Tensor)]
    devices = {str(t.device) for t in tensors}
    inputs = "; ".join(describe(a) for a in args)
    shown = {k: v for k, v in params.items() if not hasattr(v, "shape")}
    extra = f" with {shown}" if shown else ""
    if len(devices) > 1:
        return BackendMismatchError(
            f"{op.name}: tensors are on different devices ({' and '.join(sorted(devices))}); "
            f"inputs: {inputs}. Move them to one device first."
        )
    return OpError(f"{op.name}{extra} failed on inputs {inputs}: {type(exc).__name__}: {exc}")


def apply(op: OpDef, args: Sequence[Any], params: dict[str, Any]) -> Tensor:
    """Run ``op`` forward on ``args`` (Tensors and Python scalars) and record a Node.

    A result requires grad iff grad mode is on, the op is differentiable and some input
    requires grad; otherwise nothing is saved.
    """
    Tensor = _Tensor
    be = None
    needs_grad = False
    datas = []
    edges = []
    for a in args:
        if isinstance(a, Tensor):
            if be is None:
                be = a._backend
            elif a._backend is not be and a._backend.name != be.name:
                raise _mix_error(op, args)
            datas.append(a.data)
            if a.requires_grad:
                needs_grad = True
                edges.append(a._node or a)
            else:
                edges.append(None)
        else:
            datas.append(a)
            edges.append(None)
    if be is None:
        raise OpError(f"{op.name}: needs at least one Tensor input")
    try:
        out, saved = op.fwd(be.xp, *datas, **params)  # type: ignore[misc]
    except OpError:
        raise
    except Exception as exc:
        raise _forward_error(op, args, params, exc) from exc
    if op.moves:
        be = params["backend"]
    res = _new(Tensor)
    res.data = out
    res.grad = None
    res._version = 0
    res._backend = be
    res.name = None
    if not needs_grad or op.vjp is None or not _grad_mode._state.enabled:
        res.requires_grad = False
        res._node = None
        return res  # type: ignore[no-any-return]
    shape = out.shape
    node = _new(Node)
    node.op = op
    node.params = params
    node.saved = saved
    node.edges = tuple(edges)
    node.shape = _SHAPES.setdefault(shape, shape)
    node.backend = be
    node.tags = None
    node.checks = ()
    node.out_modified = None
    node.retain = None
    res.requires_grad = True
    res._node = node
    if saved:
        if len(saved) == 1 and saved[0] is out:  # e.g. exp, relu: the output only
            node.tags = _TAGS_OUT
        else:
            _tag_saved(node, args, datas, out)
    return res  # type: ignore[no-any-return]


def _tag_saved(node: Node, args: Sequence[Any], datas: list[Any], out: Any) -> None:
    """Remember which saved values are inputs / the output, to check their versions in
    backward and to rebuild graph Tensors from them for create_graph."""
    assert node.saved is not None
    tags: list[int | None] = []
    checks = []
    for j, s in enumerate(node.saved):
        tag = None
        if s is out:
            tag = -1
        elif s is not None:
            # saved[j] is input j where it can be: in x * x.detach() both inputs hold
            # one array, and only input 0 is differentiable
            if j < len(datas) and datas[j] is s and isinstance(args[j], _Tensor):
                tag = j
            else:
                for i, d in enumerate(datas):
                    if s is d and isinstance(args[i], _Tensor):
                        tag = i
                        break
            if tag is not None:
                checks.append((args[tag], args[tag]._version, tag))
        tags.append(tag)
    if checks or -1 in tags:
        node.tags = tuple(tags)
    if checks:
        node.checks = tuple(checks)


# (gradient shape, input shape) -> (axes to sum, whether a reshape follows): a model
# meets the same few pairs every step, so each plan is worked out once
_PLANS: dict[tuple[Any, Any], tuple[tuple[int, ...], bool]] = {}


def unbroadcast(xp: Any, g: Any, shape: tuple[int, ...]) -> Any:
    """Sum ``g`` (of a broadcast result's shape) down to ``shape``."""
    gshape = g.shape
    if gshape == shape:
        return g
    plan = _PLANS.get((gshape, shape))
    if plan is None:
        gshape, shape = tuple(gshape), tuple(shape)
        lead = len(gshape) - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1
        )
        # summing the leading axes alone already gives the shape (e.g. a bias
        # gradient): no reshape, so the result stays a fresh array rather than a view
        kept = [n for i, n in enumerate(gshape) if i not in axes]
        plan = (axes, tuple(kept) != shape)
        if len(_PLANS) > 4096:  # e.g. fuzzing with random shapes
            _PLANS.clear()
        _PLANS[(gshape, shape)] = plan
    axes, reshape = plan
    if axes:
        g = xp.sum(g, axis=axes)
    return xp.reshape(g, tuple(shape)) if reshape else g


def _version_error(node: Node, tensor: Tensor, expected: int, index: int) -> RuntimeError:
    which = "output" if index < 0 else f"input {index}"
    label = f" {tensor.name!r}" if tensor.name else ""
    return RuntimeError(
        f"one of the tensors needed for gradient computation has been modified by an "
        f"in-place operation: the tensor{label} of shape {tuple(tensor.data.shape)} "
        f"and dtype {tensor._backend.dtype_name(tensor.data.dtype)}, which is {which} of "
        f"{node.op.name}, is at version {tensor._version}; expected version {expected}. "
        f"Hint: compute it out of place (e.g. x = x + 1 instead of x += 1), or .clone() "
        f"it before modifying it."
    )


def _output_version_error(node: Node) -> RuntimeError:
    assert node.out_modified is not None
    desc, version, ref = node.out_modified
    t = ref()
    if t is not None:  # the tensor may have been modified again since
        version = t._version
    return RuntimeError(
        f"one of the tensors needed for gradient computation has been modified by an "
        f"in-place operation: the {desc}, which is the output of {node.op.name}, is at "
        f"version {version}; expected version 0. Hint: compute it out of place (e.g. "
        f"y = y + 1 instead of y += 1), or .clone() it before modifying it."
    )


def _freed_error(node: Node) -> RuntimeError:
    return RuntimeError(
        f"trying to backward through the graph a second time: the values saved by "
        f"{node.op.name} were freed after the first backward. Pass "
        f"retain_graph=True to the first backward() if you need to call it twice."
    )


def _saved_as_tensors(node: Node) -> tuple[Any, ...]:
    """The node's saved values, with inputs/output turned back into graph Tensors."""
    Tensor = _Tensor
    assert node.saved is not None
    derived = node.op.derived
    if node.tags is None and not derived:
        return node.saved
    tags = node.tags if node.tags is not None else (None,) * len(node.saved)
    out: list[Any] = []
    for j, (s, tag) in enumerate(zip(node.saved, tags, strict=True)):
        if j in derived:
            out.append(None)  # the VJP recomputes it, differentiably
        elif tag is None:
            out.append(s)
        elif tag == -1:
            out.append(Tensor._make(s, node.backend, node))
        else:
            edge = node.edges[tag]
            if edge is None:
                out.append(Tensor._make(s, node.backend, None))
            elif isinstance(edge, Node):
                out.append(Tensor._make(s, edge.backend, edge))
            else:
                out.append(edge)
    return tuple(out)


def run_backward(
    roots: Sequence[Tensor],
    root_grads: Sequence[Any],
    *,
    retain_graph: bool,
    create_graph: bool = False,
    inputs: Sequence[Tensor] | None = None,
) -> list[Any]:
    """The backward pass.

    Without ``inputs``, gradients are accumulated into the leaves' ``.grad`` (backend
    arrays). With ``inputs``, nothing is accumulated and the gradient of each input is
    returned instead (None where it was not reached). With ``create_graph``, the root
    gradients and results are Tensors and every VJP is recorded, so results can be
    differentiated again.
    """
    tensor_xp: Any = None  # with create_graph: the differentiable namespace
    if create_graph:
        from . import array_api

        tensor_xp = array_api
    grads: dict[Any, Any] = {}
    leaf_grads: dict[Tensor, Any] = {}
    capture: dict[Any, int] = {}
    if inputs is not None:
        for i, t in enumerate(inputs):
            capture[t._node if t._node is not None else t] = i
    results: list[Any] = [None] * (len(inputs) if inputs is not None else 0)

    def to_leaf(t: Tensor, g: Any) -> None:
        if t in capture:
            i = capture[t]
            results[i] = g if results[i] is None else results[i] + g
        elif inputs is None:
            prev = leaf_grads.get(t)
            leaf_grads[t] = g if prev is None else prev + g

    # 1. count, for every reachable node, how many edges point at it
    deps: dict[Node, int] = {}
    starts: list[Node] = []
    for t, g in zip(roots, root_grads, strict=True):
        n = t._node
        if n is None:
            to_leaf(t, g)
            continue
        grads[n] = grads[n] + g if n in grads else g
        if n not in deps:
            deps[n] = 0
            starts.append(n)
    stack = list(starts)
    while stack:
        for e in stack.pop().edges:
            if type(e) is Node:
                if e in deps:
                    deps[e] += 1
                else:
                    deps[e] = 1
                    stack.append(e)
    # with inputs: only what leads to an input is differentiated (as PyTorch)
    useful = _reaching(starts, deps, capture) if inputs is not None else None
    # 2. visit nodes once all their consumers are done
    ready = [n for n in reversed(starts) if deps[n] == 0]
    while ready:
        node = ready.pop()
        g = grads.pop(node, None)
        if capture and g is not None and node in capture:
            results[capture[node]] = g
        if node.retain is not None and g is not None:
            rt = node.retain()
            if rt is not None:
                rt.grad = g.data if isinstance(g, _Tensor) else g
        saved = node.saved
        if saved is None:
            raise _freed_error(node)
        edges = node.edges
        if useful is not None:
            edges = tuple([e if e is None or e in useful else None for e in edges])
        if g is None:  # nothing flowed into this node: nothing flows out
            gins: Sequence[Any] = (None,) * len(edges)
        else:
            for t, expected, idx in node.checks:
                if t._version != expected:
                    raise _version_error(node, t, expected, idx)
            if node.out_modified is not None:
                raise _output_version_error(node)
            # a one-input node is only recorded if that input needs grad
            if len(edges) == 1:
                needs = _NEEDS1
            elif len(edges) == 2:
                needs = (edges[0] is not None, edges[1] is not None)
            else:
                needs = tuple([e is not None for e in edges])
            vjp = node.op.vjp
            assert vjp is not None  # only differentiable ops record nodes
            if create_graph:
                prev_be = tensor_xp._ctx.backend
                tensor_xp._ctx.backend = node.backend
                try:
                    gins = vjp(tensor_xp, g, _saved_as_tensors(node), needs, **node.params)
                finally:
                    tensor_xp._ctx.backend = prev_be
            else:
                gins = vjp(node.backend.xp, g, saved, needs, **node.params)
        if not retain_graph:
            node.saved = None
        for e, gi in zip(edges, gins, strict=True):
            if e is None:
                continue
            if type(e) is Node:
                if gi is not None:
                    if gi.shape != e.shape:
                        gi = unbroadcast(tensor_xp or e.backend.xp, gi, e.shape)
                    prev = grads.get(e)
                    grads[e] = gi if prev is None else prev + gi
                d = deps[e] - 1
                deps[e] = d
                if d == 0:
                    ready.append(e)
            elif gi is not None:
                if gi.shape != e.data.shape:
                    gi = unbroadcast(tensor_xp or e._backend.xp, gi, e.data.shape)
                if inputs is not None:
                    to_leaf(e, gi)
                else:  # to_leaf, inlined for the common case
                    prev = leaf_grads.get(e)
                    leaf_grads[e] = gi if prev is None else prev + gi
    # 3. leaves: accumulate like PyTorch, as fresh arrays of the leaf's dtype. An array
    # is stored as it is only if it owns its memory and no other leaf received it.
    stored: set[int] = set()
    for t, g in leaf_grads.items():
        be = t._backend
        if g.dtype != t.data.dtype:
            g = be.xp.astype(g, t.data.dtype)
        if t.grad is None:
            if id(g) in stored or not be.owns(g):
                g = be.xp.asarray(g, copy=True)
            stored.add(id(g))
            t.grad = g
        else:
            t.grad = t.grad + g
    return results


def _reaching(starts: Sequence[Node], deps: dict[Node, int], targets: Any) -> set[Any]:
    """The targets, plus every node (reachable from ``starts``) that leads to one."""
    indeg = dict(deps)
    order: list[Node] = []
    todo = [n for n in starts if indeg[n] == 0]
    while todo:  # topological order: consumers before producers
        n = todo.pop()
        order.append(n)
        for e in n.edges:
            if type(e) is Node:
                indeg[e] -= 1
                if indeg[e] == 0:
                    todo.append(e)
    useful: set[Any] = set(targets)
    for n in reversed(order):
        if n not in useful:
            for e in n.edges:
                if e is not None and e in useful:
                    useful.add(n)
                    break
    return useful


def backward(tensor: Tensor, gradient: Any = None, retain_graph: bool = False) -> None:
    """Accumulate d(tensor)/d(leaf) into every leaf's ``.grad``; see ``Tensor.backward``."""
    seed = _seed(tensor, gradient, "backward")
    run_backward([tensor], [seed], retain_graph=retain_graph)


def _seed(t: Tensor, gradient: Any, who: str, as_tensor: bool = False) -> Any:
    Tensor = _Tensor
    if not t.requires_grad:
        raise RuntimeError(
            f"{who}: the tensor (shape {tuple(t.data.shape)}) does not require grad and has "
            f"no graph. Create its inputs with requires_grad=True (and not under no_grad())."
        )
    xp = t._backend.xp
    if gradient is None:
        if math.prod(t.data.shape) != 1:
            raise RuntimeError(
                f"{who}: a gradient can be created implicitly only for outputs with one "
                f"element; this output has shape {tuple(t.data.shape)}. Pass gradient= "
                f"(an array of that shape), or reduce it first, e.g. y.sum().backward()."
            )
        g = xp.ones_like(t.data)
        return Tensor._make(g, t._backend, None) if as_tensor else g
    if isinstance(gradient, Tensor):
        if as_tensor:
            g_t = gradient
            gd = gradient.data
        else:
            gd = gradient.data
    else:
        from .creation import _as_backend_array

        gd = _as_backend_array(gradient, t._backend, t.data.dtype, t.device)
        g_t = None
    if tuple(gd.shape) != tuple(t.data.shape):
        raise RuntimeError(
            f"{who}: gradient has shape {tuple(gd.shape)} but the output has shape "
            f"{tuple(t.data.shape)}; they must match."
        )
    if as_tensor:
        return g_t if g_t is not None else Tensor._make(gd, t._backend, None)
    return xp.asarray(gd, copy=True)


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Any = None,
    *,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """Gradients of ``outputs`` with respect to ``inputs``, returned as Tensors.

    Like ``torch.autograd.grad``: the sum over ``outputs`` of ``<output, grad_output>``
    is differentiated; nothing is accumulated into any ``.grad``, and only the part
    of the graph that leads to ``inputs`` is visited.

    Parameters
    ----------
    outputs : Tensor or sequence of Tensor
        What to differentiate; each must require grad.
    inputs : Tensor or sequence of Tensor
        Leaves or intermediate results that require grad.
    grad_outputs : Tensor, array or sequence, optional
        One per output, of its shape (None: ones, allowed for one-element outputs).
    retain_graph : bool, optional
        Keep the saved values for another backward; defaults to ``create_graph``.
    create_graph : bool
        Record the backward pass itself, so that the results can be differentiated
        again (to any order). Without it the results are constants.
    allow_unused : bool
        Return None for an input the outputs do not depend on, instead of raising.
    materialize_grads : bool
        Return zeros instead of None for unused inputs (implies ``allow_unused``).

    Returns
    -------
    tuple of Tensor or None
        One gradient per input, of its shape, dtype and backend.

    Examples
    --------
    >>> import minitorch
    >>> x = minitorch.tensor(3.0, requires_grad=True)
    >>> (g,) = minitorch.autograd.grad(x ** 3, x, create_graph=True)
    >>> float(g)
    27.0
    >>> (h,) = minitorch.autograd.grad(g, x)
    >>> float(h)
    18.0
    """
    from .tensor import Tensor

    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    ins = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if not outs or not ins:
        raise ValueError("grad: needs at least one output and one input")
    for what, seq in (("output", outs), ("input", ins)):
        for i, t in enumerate(seq):
            if not isinstance(t, Tensor):
                raise TypeError(f"grad: {what} {i} must be a Tensor, got {type(t).__name__}")
    if grad_outputs is None:
        gouts: list[Any] = [None] * len(outs)
    elif isinstance(grad_outputs, Tensor) or not isinstance(grad_outputs, Sequence):
        gouts = [grad_outputs]
    else:
        gouts = list(grad_outputs)
    if len(gouts) != len(outs):
        raise ValueError(
            f"grad: got {len(outs)} output(s) but {len(gouts)} grad_outputs; pass one per "
            f"output (None for a one-element output)"
        )
    for i, t in enumerate(ins):
        if not t.requires_grad:
            raise RuntimeError(
                f"grad: input {i} (shape {tuple(t.data.shape)}) does not require grad; "
                f"create it with requires_grad=True (or call .requires_grad_()) before "
                f"computing the outputs"
            )
    for i, o in enumerate(outs):
        if not o.requires_grad:
            raise RuntimeError(
                f"grad: output {i} (shape {tuple(o.data.shape)}) does not require grad and "
                f"has no graph: it does not depend on any tensor that requires grad (or "
                f"it was computed under no_grad())"
            )
    if retain_graph is None:
        retain_graph = create_graph
    # the same tensor twice among the inputs gets the same gradient twice
    uniq: list[Tensor] = []
    where: list[int] = []
    for t in ins:
        for k, u in enumerate(uniq):
            if u is t:
                where.append(k)
                break
        else:
            where.append(len(uniq))
            uniq.append(t)
    seeds = [
        _seed(o, g, f"grad (output {i})", as_tensor=create_graph)
        for i, (o, g) in enumerate(zip(outs, gouts, strict=True))
    ]
    if create_graph:
        with _grad_mode.enable_grad():
            res = run_backward(
                outs, seeds, retain_graph=retain_graph, create_graph=True, inputs=uniq
            )
    else:
        res = run_backward(outs, seeds, retain_graph=retain_graph, inputs=uniq)
    out: list[Tensor | None] = []
    for i, t in enumerate(ins):
        r = res[where[i]]
        if r is None:
            if materialize_grads:
                out.append(Tensor._make(t._backend.xp.zeros_like(t.data), t._backend, None))
                continue
            if not allow_unused:
                raise RuntimeError(
                    f"grad: input {i} (shape {tuple(t.data.shape)}) was not used to compute "
                    f"the outputs; pass allow_unused=True to get None for it (or "
                    f"materialize_grads=True for zeros)."
                )
            out.append(None)
            continue
        if isinstance(r, Tensor):
            if r.data.dtype != t.data.dtype:
                from .ops.elementwise import astype

                r = astype(r, t.data.dtype)
        else:
            if r.dtype != t.data.dtype:
                r = t._backend.xp.astype(r, t.data.dtype)
            r = Tensor._make(r, t._backend, None)
        out.append(r)
    return tuple(out)
