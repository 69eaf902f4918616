"""The engine: graph nodes and the backward pass (the chain rule).

A Node records one op application: the op, its parameters, what the forward saved, and
one *edge* per input: the input's Node (an intermediate result), the input Tensor itself
(a leaf that requires grad), or None (no gradient needed). Nodes never point at
intermediate Tensors, so a long chain keeps only what its VJPs saved.

The backward pass visits nodes in topological order with an explicit stack (no
recursion: graphs 10^5+ deep are fine), sums fan-out gradients, reduces broadcast
gradients to each input's shape, checks version counters of saved tensors, and frees
saved arrays unless ``retain_graph=True``.

This module knows no op and no Tensor class: it reads tensors through their attributes
(``data``, ``grad``, ``_node``, ``_version``, ``_backend``) and is handed, by its
caller, how to run a VJP that records its own graph (``create_graph``).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from .backend import Backend, array_result, is_array_of

__all__ = ["Node", "Op", "VjpArgs", "run_backward", "unbroadcast"]

Array = Any
#: ``vjp_args(node) -> (xp, saved)``: the namespace and saved values a node's VJP is
#: called with, where the plain ``(node.backend.xp, node.saved)`` is not wanted.
VjpArgs = Callable[["Node"], tuple[Any, tuple[Any, ...]]]

# one tuple object per distinct output shape, shared by every node: less memory per node
_SHAPES: dict[tuple[int, ...], tuple[int, ...]] = {}
_NEEDS1: tuple[bool, ...] = (True,)
_ROLES_OUT: tuple[int | None, ...] = (-1,)
_new = object.__new__


class Op(Protocol):
    """What the engine needs of an op (``minitorch.ops.OpDef`` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def vjp(self) -> Callable[..., Sequence[Any]] | None: ...
    @property
    def derived(self) -> tuple[int, ...]: ...


class Node:
    """One recorded op application (PyTorch calls this a ``grad_fn``).

    ``saved`` is None once backward has freed it. What each saved value *is* (the op's
    output, input ``i`` or a constant) is read through :meth:`saved_items`; everything
    else (viz, the lab, in-place ops) goes through the methods below.
    """

    __slots__ = (
        "_checks",
        "_out_modified",
        "_roles",
        "backend",
        "edges",
        "op",
        "params",
        "retain",
        "saved",
        "shape",
    )

    # set by record() (no __init__: it is the hot path)
    op: Op
    params: dict[str, Any]
    saved: tuple[Any, ...] | None
    edges: tuple[Any, ...]
    shape: tuple[int, ...]
    backend: Backend
    retain: Any
    # per saved value: -1 the output, i input i, None a constant (None: all constants)
    _roles: tuple[int | None, ...] | None
    # (tensor, version, input index) for every saved input
    _checks: tuple[tuple[Any, int, int], ...]
    # (description, version, weakref) once the saved output was modified in place
    _out_modified: tuple[str, int, Any] | None

    @property
    def name(self) -> str:
        return self.op.name

    @property
    def next_nodes(self) -> tuple[Any, ...]:
        """The inputs' nodes (or leaf tensors, or None), one per input."""
        return self.edges

    def __repr__(self) -> str:
        return f"<{self.op.name}>"

    # ------------------------------------------------------------ what was saved
    def saved_items(self) -> Iterator[tuple[Any, int | None]]:
        """``(value, role)`` per saved value: role -1 is the op's output, ``i`` its
        input ``i``, None a constant (mask, shape, dtype)."""
        if self.saved is None:
            return
        roles = self._roles if self._roles is not None else (None,) * len(self.saved)
        yield from zip(self.saved, roles, strict=True)

    def saved_input(self, k: int) -> Any:
        """The array of input ``k`` if the op saved it and still holds it, else None."""
        for s, role in self.saved_items():
            if role == k:
                return s
        return None

    def saves_output(self) -> bool:
        return self._roles is not None and -1 in self._roles

    def source(self, role: int) -> Any:
        """What a saved value of ``role`` came from: this node (-1), or input's edge."""
        return self if role == -1 else self.edges[role]

    def saved_values(
        self, replace: Callable[[Any, Node, int], Any], keep_derived: bool = False
    ) -> tuple[Any, ...]:
        """The saved values, each input/output ``s`` of role ``r`` replaced by
        ``replace(s, self, r)``; derived values (``defop(derived=...)``) become None
        (the VJP recomputes them) unless ``keep_derived``."""
        assert self.saved is not None
        derived = () if keep_derived else self.op.derived
        if self._roles is None and not derived:
            return self.saved
        return tuple(
            None if j in derived else s if role is None else replace(s, self, role)
            for j, (s, role) in enumerate(self.saved_items())
        )

    # ------------------------------------------------------------ version checks
    def check_versions(self) -> None:
        """Raise if a saved input or the saved output was modified in place since."""
        for t, expected, idx in self._checks:
            if t._version != expected:
                raise _version_error(self, t, expected, idx)
        if self._out_modified is not None:
            raise _output_version_error(self)

    def output_modified(self, tensor: Any) -> None:
        """``tensor`` (this node's output) was changed in place: backward must refuse."""
        if self.saves_output() and self._out_modified is None:
            label = f"tensor {tensor.name!r}" if tensor.name else "tensor"
            self._out_modified = (
                f"{label} of shape {tuple(tensor.data.shape)} and dtype "
                f"{tensor._backend.dtype_name(tensor.data.dtype)}",
                tensor._version,
                weakref.ref(tensor),  # later in-place ops bump the version reported
            )

    def expect_version(self, tensor: Any, replaced: Any) -> None:
        """An in-place op made ``tensor`` hold this node's output (computed from
        ``tensor``'s old value). That old value is saved as it was (arrays are never
        written in place), as PyTorch saves a copy of the original ``self``: later
        in-place changes of ``tensor`` do not concern this node, so its checks of
        ``tensor`` are dropped. A check of ``replaced`` is expected at the new version."""
        self._checks = tuple(
            (tensor, tensor._version, i) if t is replaced else (t, v, i)
            for t, v, i in self._checks
            if t is not tensor
        )


def record(
    op: Op,
    params: dict[str, Any],
    saved: tuple[Any, ...],
    edges: list[Any],
    out: Array,
    backend: Backend,
    args: Sequence[Any],
    datas: list[Any],
) -> Node:
    """A new Node for ``out = op(*args)``; ``datas`` are the arrays the forward saw."""
    node = _new(Node)
    node.op = op
    node.params = params
    node.saved = saved
    node.edges = tuple(edges)
    shape = out.shape
    shared = _SHAPES.get(shape)
    if shared is None:
        if len(_SHAPES) > 4096:  # e.g. fuzzing with random shapes: do not grow forever
            _SHAPES.clear()
        shared = _SHAPES[shape] = shape
    node.shape = shared
    node.backend = backend
    node._roles = None
    node._checks = ()
    node._out_modified = None
    node.retain = None
    if saved:
        if len(saved) == 1 and saved[0] is out:  # e.g. exp, relu: the output only
            node._roles = _ROLES_OUT
        else:
            _assign_roles(node, args, datas, out)
    return node


#: the types of saved values that are never arrays: numbers, shapes and axes, None
_METADATA = frozenset({tuple, int, float, bool, str, type(None)})
#: saved value type -> whether it is an array (what backward frees); learnt per type
_HOLDS_ARRAY: dict[type, bool] = dict.fromkeys(_METADATA, False)


def _assign_roles(node: Node, args: Sequence[Any], datas: list[Any], out: Any) -> None:
    """Remember which saved values are inputs / the output, to check their versions in
    backward and to rebuild graph Tensors from them for create_graph."""
    assert node.saved is not None
    roles: list[int | None] = []
    checks = []
    for j, s in enumerate(node.saved):
        role = None
        if s is out:
            role = -1
        elif type(s) not in _METADATA:  # an array (numbers, shapes and None are no input)
            # saved[j] is input j where it can be: in x * x.detach() both inputs hold
            # one array, and only input 0 is differentiable
            if j < len(datas) and datas[j] is s and hasattr(args[j], "_version"):
                role = j
            else:
                for i, d in enumerate(datas):
                    if s is d and hasattr(args[i], "_version"):
                        role = i
                        break
            if role is not None:
                checks.append((args[role], args[role]._version, role))
        roles.append(role)
    if checks or -1 in roles:
        node._roles = tuple(roles)
    if checks:
        node._checks = tuple(checks)


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


# ---------------------------------------------------------------- the backward pass
def graph_leaves(roots: Sequence[Node]) -> list[Any]:
    """The leaf tensors (those that require grad) of the graph below ``roots``, each
    once, in the order a depth-first walk meets them."""
    leaves: dict[int, Any] = {}
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        n = stack.pop()
        if id(n) in seen:
            continue
        seen.add(id(n))
        for e in n.edges:
            if isinstance(e, Node):
                stack.append(e)
            elif e is not None:
                leaves[id(e)] = e
    return list(leaves.values())


def run_backward(
    roots: Sequence[Any],
    root_grads: Sequence[Any],
    *,
    retain_graph: bool,
    inputs: Sequence[Any] | None = None,
    vjp_args: VjpArgs | None = None,
) -> list[Any]:
    """The backward pass: the chain rule over the graph below ``roots``.

    Without ``inputs``, gradients are accumulated into the leaves' ``.grad`` (backend
    arrays). With ``inputs``, nothing is accumulated and the gradient of each input is
    returned instead (None where it was not reached). ``vjp_args`` replaces how a VJP
    is called (see :data:`VjpArgs`): ``autograd.grad(create_graph=True)`` passes the
    tensors' differentiable namespace and saved values as graph Tensors, so that the
    VJPs record their own graph; it also runs the version checks itself.
    """
    be = getattr(roots[0], "_backend", None) if roots else None
    # CuPy: the gradients made and summed on the root's GPU
    with be.on_device() if be is not None else contextlib.nullcontext():
        return _backward(roots, root_grads, retain_graph, inputs, vjp_args)


def _backward(
    roots: Sequence[Any],
    root_grads: Sequence[Any],
    retain_graph: bool,
    inputs: Sequence[Any] | None,
    vjp_args: VjpArgs | None,
) -> list[Any]:
    acc = _Gradients(inputs)
    grads = acc.grads
    deps, starts = _count_consumers(roots, root_grads, acc)
    # with inputs: only what leads to an input is differentiated (as PyTorch)
    useful = _reaching(starts, deps, acc.capture) if inputs is not None else None
    ready = [n for n in reversed(starts) if deps[n] == 0]
    while ready:  # visit a node once all its consumers are done
        node = ready.pop()
        g = grads.pop(node, None)  # the summed gradient of the node's output
        if g is not None and (acc.capture or node.retain is not None):
            acc.observe(node, g)
        edges = node.edges if useful is None else _pruned(node.edges, useful)
        saved = node.saved
        if saved is None:
            raise _freed_error(node)
        nb = node.backend
        scope = None if nb.scope is None else nb.scope(nb.device)
        if scope is not None:  # CuPy: the VJP and the sums on the node's GPU
            scope.__enter__()
        try:
            xp = None
            if g is None:  # nothing flowed into this node: nothing flows out
                gins: Sequence[Any] = (None,) * len(edges)
            else:
                # the chain rule: the VJP maps g to one gradient per input
                vjp: Any = node.op.vjp  # only differentiable ops record nodes
                needs = _NEEDS1 if len(edges) == 1 else _needs(edges)
                if vjp_args is None:
                    if node._checks or node._out_modified is not None:
                        node.check_versions()
                    params = node.params
                    xb = node.backend.xp
                    gins = (
                        vjp(xb, g, saved, needs, **params) if params else vjp(xb, g, saved, needs)
                    )
                else:
                    xp, saved = vjp_args(node)
                    gins = vjp(xp, g, saved, needs, **node.params)
            if saved and not retain_graph:
                # free the saved arrays; a node that saved none (shapes and axes, as sum
                # does) can run again, as in PyTorch
                for s in saved:
                    holds = _HOLDS_ARRAY.get(type(s))
                    if holds or (holds is None and _learn_type(s)):
                        node.saved = None
                        node._checks = ()  # nor keep the inputs' Tensors (history.append(loss))
                        break
            for e, gi in zip(edges, gins, strict=True):
                if e is None:
                    continue
                if type(e) is Node:  # sum fan-out; visit e once all its consumers are done
                    if gi is not None:
                        if gi.shape != e.shape:
                            gi = unbroadcast(xp or e.backend.xp, gi, e.shape)
                        prev = grads.get(e)
                        grads[e] = gi if prev is None else prev + gi
                    d = deps[e] - 1
                    deps[e] = d
                    if d == 0:
                        ready.append(e)
                elif gi is not None:  # a leaf tensor
                    if gi.shape != e.data.shape:
                        gi = unbroadcast(xp or e._backend.xp, gi, e.data.shape)
                    acc.add_leaf(e, gi)
        finally:
            if scope is not None:
                scope.__exit__(None, None, None)
    if inputs is None:
        acc.store_leaf_grads()
    return acc.results


def _needs(edges: tuple[Any, ...]) -> tuple[bool, ...]:
    """Which inputs need a gradient (a one-input node is only recorded if it does)."""
    if len(edges) == 1:
        return _NEEDS1
    if len(edges) == 2:
        return (edges[0] is not None, edges[1] is not None)
    return tuple([e is not None for e in edges])


def _pruned(edges: tuple[Any, ...], useful: set[Any]) -> tuple[Any, ...]:
    return tuple([e if e is None or e in useful else None for e in edges])


class _Gradients:
    """The gradients in flight: per node, per leaf, and per captured input."""

    __slots__ = ("capture", "grads", "leaf_grads", "results", "to_results")

    def __init__(self, inputs: Sequence[Any] | None) -> None:
        self.grads: dict[Node, Any] = {}
        self.leaf_grads: dict[Any, Any] = {}
        # with inputs: the input's node (or the leaf itself) -> its place in results
        self.capture: dict[Any, int] = {}
        self.to_results = inputs is not None
        if inputs is not None:
            for i, t in enumerate(inputs):
                self.capture[t._node if t._node is not None else t] = i
        self.results: list[Any] = [None] * (len(inputs) if inputs is not None else 0)

    def add_node(self, node: Node, g: Any) -> None:
        prev = self.grads.get(node)
        self.grads[node] = g if prev is None else prev + g

    def add_leaf(self, t: Any, g: Any) -> None:
        if not self.to_results:
            prev = self.leaf_grads.get(t)
            self.leaf_grads[t] = g if prev is None else prev + g
        elif t in self.capture:
            i = self.capture[t]
            self.results[i] = g if self.results[i] is None else self.results[i] + g

    def observe(self, node: Node, g: Any) -> None:
        """``g`` is the gradient of ``node``'s output: capture it for an input, store
        it for a ``retain_grad()`` tensor."""
        if self.capture and node in self.capture:
            self.results[self.capture[node]] = g
        if node.retain is not None:
            rt = node.retain()
            if rt is not None:  # accumulates over backward calls, as a leaf's does
                # a graph Tensor under create_graph, else an array (a CuPy array's own
                # .data is its memory pointer, and a torch tensor's a detached alias)
                gd = g if is_array_of(g, rt._backend) else g.data
                rt._grad = (
                    rt._backend.xp.asarray(gd, copy=True) if rt._grad is None else rt._grad + gd
                )

    def store_leaf_grads(self) -> None:
        """Accumulate into each leaf's ``.grad`` like PyTorch: fresh arrays of the
        leaf's dtype. An array is stored as it is only if it owns its memory and no
        other leaf received it."""
        stored: set[int] = set()
        for t, g in self.leaf_grads.items():
            if not t._requires_grad:  # requires_grad_(False) since the graph was built
                continue
            be = t._backend
            with be.on_device():  # CuPy: on the leaf's GPU (another than the root's after a move)
                if g.dtype != t.data.dtype:
                    g = be.xp.astype(g, t.data.dtype)
                if t._grad is None:
                    if id(g) in stored or not be.owns(g):
                        g = be.xp.asarray(g, copy=True)
                    stored.add(id(g))
                    t._grad = array_result(g, be)  # a NumPy scalar (0-d leaf) as an array
                else:
                    t._grad = array_result(t._grad + g, be)


def _count_consumers(
    roots: Sequence[Any], root_grads: Sequence[Any], acc: _Gradients
) -> tuple[dict[Node, int], list[Node]]:
    """Seed the roots' gradients and count, for every reachable node, the edges that
    point at it (a node is visited once all of its consumers have been)."""
    deps: dict[Node, int] = {}
    starts: list[Node] = []
    for t, g in zip(roots, root_grads, strict=True):
        n = t._node
        if n is None:  # a leaf root: its gradient is the seed itself
            acc.add_leaf(t, g)
            continue
        acc.add_node(n, g)
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
    return deps, starts


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


# ---------------------------------------------------------------- errors
def _version_error(node: Node, tensor: Any, expected: int, index: int) -> RuntimeError:
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
    assert node._out_modified is not None
    desc, version, ref = node._out_modified
    t = ref()
    if t is not None:  # the tensor may have been modified again since
        version = t._version
    return RuntimeError(
        f"one of the tensors needed for gradient computation has been modified by an "
        f"in-place operation: the {desc}, which is the output of {node.op.name}, is at "
        f"version {version}; expected version 0. Hint: compute it out of place (e.g. "
        f"y = y + 1 instead of y += 1), or .clone() it before modifying it."
    )


def _learn_type(s: Any) -> bool:
    """Whether ``s`` is an array (every array library's supports DLPack; dtypes and
    other metadata do not), remembered per type."""
    holds = _HOLDS_ARRAY[type(s)] = hasattr(s, "__dlpack__")
    return holds


def _freed_error(node: Node) -> RuntimeError:
    return RuntimeError(
        f"trying to backward through the graph a second time: the values saved by "
        f"{node.op.name} were freed after the first backward. Pass "
        f"retain_graph=True to the first backward() if you need to call it twice."
    )
