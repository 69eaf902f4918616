"""The Tensor Ops Lab's logic, without any web page: expressions, forward and backward
passes, finite-difference checks and the in-place modification demo.

The Streamlit page (:mod:`minitorch.lab.app`) only draws what these functions return,
so everything here runs (and is tested) without Streamlit.

Examples
--------
>>> from minitorch.lab import core
>>> res = core.run("tanh", {"a": 0.5, "b": -1.0, "c": 0.25}, "numpy", backward=True)
>>> round(res.output, 6)
-0.244919
>>> [(row.label, round(row.autograd, 6), round(row.finite_diff, 6)) for row in res.checks]
[('a', -0.940015, -0.940015), ('b', 0.470007, 0.470007), ('c', 0.940015, 0.940015)]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

import minitorch
from minitorch.backend import resolve
from minitorch.engine import Node, run_backward
from minitorch.tensor import Tensor
from minitorch.viz import to_dot

__all__ = [
    "EXPRESSIONS",
    "ErrorDemo",
    "Expression",
    "GradPair",
    "GradRow",
    "InputSpec",
    "LabResult",
    "NodeRow",
    "backend_choices",
    "default_values",
    "finite_differences",
    "graph_dot",
    "lab_backend",
    "naive_backward",
    "run",
    "simulate_error",
    "snapshot",
]

Values = Mapping[str, Any]


# ---------------------------------------------------------------------------- expressions
@dataclasses.dataclass(frozen=True)
class InputSpec:
    """One leaf tensor of an expression: a scalar (``size == 0``) or a short vector."""

    name: str
    size: int
    default: tuple[float, ...]
    help: str = ""

    @property
    def labels(self) -> list[str]:
        """One label per element: ``a`` for a scalar, ``w[0]``, ``w[1]``, ... for a vector."""
        return [self.name] if self.size == 0 else [f"{self.name}[{i}]" for i in range(self.size)]


@dataclasses.dataclass(frozen=True)
class Expression:
    """An expression the lab can build, differentiate and break.

    ``build(leaves, **options)`` returns the named tensors of the graph in the order they
    are computed; the last one is the (scalar) output. ``tamper(tensors)`` modifies one
    tensor that the graph saved, in place, as ``tamper_code`` says.
    """

    key: str
    title: str
    description: str
    inputs: tuple[InputSpec, ...]
    build: Callable[..., dict[str, Tensor]]
    tamper: Callable[[dict[str, Tensor]], None]
    tamper_code: str
    tamper_why: str
    options: dict[str, tuple[Any, ...]] = dataclasses.field(default_factory=dict)


def _build_tanh(t: dict[str, Tensor]) -> dict[str, Tensor]:
    ab = t["a"] * t["b"]
    s = ab + t["c"]
    return {"a*b": ab, "a*b + c": s, "out": s.tanh()}


def _tamper_tanh(t: dict[str, Tensor]) -> None:
    with minitorch.no_grad():
        t["a"].add_(1.0)


def _build_neuron(t: dict[str, Tensor]) -> dict[str, Tensor]:
    wx = t["w"] @ t["x"]
    z = wx + t["b"]
    return {"w·x": wx, "w·x + b": z, "out": minitorch.relu(z)}


def _tamper_neuron(t: dict[str, Tensor]) -> None:
    with minitorch.no_grad():
        t["x"][0] = 0.0


def _build_ce(t: dict[str, Tensor], target: int = 0) -> dict[str, Tensor]:
    z = minitorch.stack([t["a"], t["b"], t["c"]])
    p = minitorch.softmax(z)
    pt = p[target]
    logp = pt.log()
    return {"logits": z, "p": p, f"p[{target}]": pt, f"log p[{target}]": logp, "loss": -logp}


def _tamper_ce(t: dict[str, Tensor]) -> None:
    t["p"].add_(0.1)


EXPRESSIONS: dict[str, Expression] = {
    e.key: e
    for e in (
        Expression(
            key="tanh",
            title="(a*b + c).tanh()",
            description="Three scalars through a product, a sum and tanh.",
            inputs=(
                InputSpec("a", 0, (0.5,)),
                InputSpec("b", 0, (-1.0,)),
                InputSpec("c", 0, (0.25,)),
            ),
            build=_build_tanh,
            tamper=_tamper_tanh,
            tamper_code=(
                "with minitorch.no_grad():\n    a.add_(1.0)   # e.g. an update step before backward"
            ),
            tamper_why="mul saved a to compute d(a*b)/db = a",
        ),
        Expression(
            key="neuron",
            title="relu(w·x + b)",
            description="A tiny neuron: weights w and inputs x (3 each), a bias b, and relu.",
            inputs=(
                InputSpec("w", 3, (0.8, -0.5, 0.3), "weights"),
                InputSpec("x", 3, (1.0, 0.5, -1.5), "inputs"),
                InputSpec("b", 0, (0.6,), "bias"),
            ),
            build=_build_neuron,
            tamper=_tamper_neuron,
            tamper_code=(
                "with minitorch.no_grad():\n    x[0] = 0.0   # e.g. reusing an input buffer"
            ),
            tamper_why="matmul saved x to compute d(w·x)/dw = x",
        ),
        Expression(
            key="cross_entropy",
            title="-log(softmax([a, b, c])[target])",
            description="Softmax cross-entropy of three logits a, b, c against a target class.",
            inputs=(
                InputSpec("a", 0, (1.0,), "logit of class 0"),
                InputSpec("b", 0, (-0.5,), "logit of class 1"),
                InputSpec("c", 0, (0.3,), "logit of class 2"),
            ),
            build=_build_ce,
            tamper=_tamper_ce,
            tamper_code=(
                "p = softmax(logits)\np.add_(0.1)   # e.g. smoothing the probabilities in place"
            ),
            tamper_why="softmax saved its output p to compute its gradient p * (g - sum(g * p))",
            options={"target": (0, 1, 2)},
        ),
    )
}


def default_values(key: str) -> dict[str, list[float]]:
    """The starting slider values of an expression, one list per input.

    Examples
    --------
    >>> from minitorch.lab import core
    >>> core.default_values("neuron")
    {'w': [0.8, -0.5, 0.3], 'x': [1.0, 0.5, -1.5], 'b': [0.6]}
    """
    return {s.name: list(s.default) for s in _expression(key).inputs}


def _expression(key: str) -> Expression:
    try:
        return EXPRESSIONS[key]
    except KeyError:
        raise ValueError(
            f"unknown lab expression {key!r}; choose one of {', '.join(EXPRESSIONS)}"
        ) from None


# ---------------------------------------------------------------------------- backends
def backend_choices() -> list[str]:
    """The installed backends the lab offers (cupy only where a GPU answers).

    Examples
    --------
    >>> from minitorch.lab import core
    >>> "numpy" in core.backend_choices()
    True
    """
    out = []
    for name in minitorch.available_backends():
        try:
            lab_backend(name)
        except Exception:
            continue
        out.append(name)
    return out


def lab_backend(name: str) -> minitorch.Backend:
    """The backend the lab computes with: float64 where the library allows it (JAX needs
    ``JAX_ENABLE_X64=1``), float32 otherwise, on the library's default device.

    Raises whatever loading the backend raises (e.g. CuPy without a GPU).

    Examples
    --------
    >>> from minitorch.lab import core
    >>> be = core.lab_backend("numpy")
    >>> be.dtype_name(be.dtype)
    'float64'
    """
    try:
        be = resolve(name, "float64")
    except ValueError:  # no float64 (JAX without JAX_ENABLE_X64=1)
        be = resolve(name, "float32")
    # a tiny probe: CuPy imports without a GPU but fails on the first array
    be.from_numpy(np.zeros(1), be.dtype, be.device)
    return be


def _host(be: minitorch.Backend, x: Any) -> np.ndarray:
    return np.array(be.to_numpy(x), dtype=np.float64, copy=True)


# ---------------------------------------------------------------------------- results
@dataclasses.dataclass(frozen=True)
class NodeRow:
    """One tensor of the graph: a leaf, an intermediate or the output."""

    name: str
    kind: str  # "leaf", "intermediate" or "output"
    op: str  # the op that produced it ("" for a leaf)
    value: np.ndarray
    grad: np.ndarray | None


@dataclasses.dataclass(frozen=True)
class GradRow:
    """d(output)/d(one leaf element): autograd next to central finite differences."""

    label: str
    autograd: float
    finite_diff: float

    @property
    def abs_err(self) -> float:
        return abs(self.autograd - self.finite_diff)


@dataclasses.dataclass(frozen=True)
class LabResult:
    """What a forward (and optionally backward) pass shows."""

    expression: str
    backend: str
    dtype: str
    output: float
    dot: str
    nodes: tuple[NodeRow, ...]
    checks: tuple[GradRow, ...]  # empty after a forward pass only

    @property
    def backward_done(self) -> bool:
        return bool(self.checks)

    @property
    def max_abs_err(self) -> float:
        return max((r.abs_err for r in self.checks), default=0.0)


@dataclasses.dataclass(frozen=True)
class GradPair:
    """d(output)/d(one leaf element): the correct value and what a naive engine gives."""

    label: str
    correct: float
    naive: float

    @property
    def wrong(self) -> bool:
        return not np.isclose(self.correct, self.naive, rtol=1e-9, atol=1e-12)


@dataclasses.dataclass(frozen=True)
class ErrorDemo:
    """The in-place modification demo: minitorch's error and the naive engine's numbers."""

    expression: str
    backend: str
    tamper_code: str
    tamper_why: str
    error_type: str
    message: str
    rows: tuple[GradPair, ...]
    dot: str


# ---------------------------------------------------------------------------- building
def _leaves(expr: Expression, values: Values, be: minitorch.Backend) -> dict[str, Tensor]:
    leaves = {}
    for spec in expr.inputs:
        if spec.name not in values:
            raise ValueError(f"lab {expr.key!r}: no value for input {spec.name!r}")
        arr = np.asarray(values[spec.name], dtype=np.float64).reshape(-1)
        n = max(spec.size, 1)
        if arr.size != n:
            raise ValueError(
                f"lab {expr.key!r}: input {spec.name!r} needs {n} value(s), got {arr.size}"
            )
        data = be.from_numpy(arr.reshape(() if spec.size == 0 else (n,)), be.dtype, be.device)
        t = Tensor._make(data, be, None)
        t.requires_grad = True
        t.name = spec.name
        leaves[spec.name] = t
    return leaves


def _options(expr: Expression, options: Mapping[str, Any] | None) -> dict[str, Any]:
    out = {k: v[0] for k, v in expr.options.items()}
    for k, v in (options or {}).items():
        if k not in expr.options:
            continue
        if v not in expr.options[k]:
            raise ValueError(f"lab {expr.key!r}: option {k}={v!r} must be one of {expr.options[k]}")
        out[k] = v
    return out


def _build(
    expr: Expression, values: Values, be: minitorch.Backend, options: Mapping[str, Any] | None
) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    leaves = _leaves(expr, values, be)
    inner = expr.build(dict(leaves), **_options(expr, options))
    for name in list(inner):
        t = inner[name]
        t.name = name
        t.retain_grad()  # show every node's gradient, the output's too
    return leaves, inner


def graph_dot(root: Tensor) -> str:
    """The DOT text of ``root``'s graph, from :func:`minitorch.viz.to_dot`."""
    return to_dot(root)


def _rows(leaves: dict[str, Tensor], inner: dict[str, Tensor]) -> tuple[NodeRow, ...]:
    rows = []
    last = list(inner)[-1]
    for name, t in [*leaves.items(), *inner.items()]:
        be = t.backend
        kind = "leaf" if t.is_leaf else "output" if name == last else "intermediate"
        op = "" if t.grad_fn is None else t.grad_fn.name
        grad = None if t.grad is None else _host(be, t.grad)
        rows.append(NodeRow(name, kind, op, _host(be, t.data), grad))
    return tuple(rows)


def finite_differences(
    key: str,
    values: Values,
    backend: str = "numpy",
    *,
    options: Mapping[str, Any] | None = None,
    h: float | None = None,
) -> dict[str, np.ndarray]:
    """Central differences ``(f(x + h) - f(x - h)) / 2h`` of the output, one per leaf
    element, evaluated with minitorch on ``backend`` (no autograd involved).

    Examples
    --------
    >>> from minitorch.lab import core
    >>> fd = core.finite_differences("tanh", {"a": 2.0, "b": 3.0, "c": -6.0})
    >>> round(float(fd["c"]), 6)   # d tanh(s)/dc = 1 - tanh(0)^2
    1.0
    """
    expr = _expression(key)
    be = lab_backend(backend)
    if h is None:
        h = 1e-6 if be.dtype_name(be.dtype) == "float64" else 1e-2
    base = {s.name: np.asarray(values[s.name], dtype=np.float64).reshape(-1) for s in expr.inputs}

    def f(vals: dict[str, np.ndarray]) -> float:
        with minitorch.no_grad():
            _, inner = _build(expr, vals, be, options)
        return float(_host(be, list(inner.values())[-1].data))

    out = {}
    for spec in expr.inputs:
        grad = np.zeros(base[spec.name].shape)
        for i in range(grad.size):
            step = h * max(1.0, abs(float(base[spec.name][i])))
            hi = {k: v.copy() for k, v in base.items()}
            lo = {k: v.copy() for k, v in base.items()}
            hi[spec.name][i] += step
            lo[spec.name][i] -= step
            grad[i] = (f(hi) - f(lo)) / (2.0 * step)
        out[spec.name] = grad.reshape(() if spec.size == 0 else grad.shape)
    return out


def run(
    key: str,
    values: Values,
    backend: str = "numpy",
    *,
    backward: bool = False,
    options: Mapping[str, Any] | None = None,
) -> LabResult:
    """Build the expression from slider ``values`` on ``backend`` and run the forward pass
    (and the backward pass, checked against finite differences, if ``backward``).

    Examples
    --------
    >>> from minitorch.lab import core
    >>> res = core.run("neuron", core.default_values("neuron"), "numpy")
    >>> round(res.output, 6), res.backward_done
    (0.7, False)
    """
    expr = _expression(key)
    be = lab_backend(backend)
    leaves, inner = _build(expr, values, be, options)
    root = list(inner.values())[-1]
    checks: tuple[GradRow, ...] = ()
    if backward:
        root.backward()
        fd = finite_differences(key, values, backend, options=options)
        rows = []
        for spec in expr.inputs:
            g = leaves[spec.name].grad
            ag = np.zeros(max(spec.size, 1)) if g is None else _host(be, g).reshape(-1)
            num = np.asarray(fd[spec.name]).reshape(-1)
            rows += [
                GradRow(label, float(ag[i]), float(num[i])) for i, label in enumerate(spec.labels)
            ]
        checks = tuple(rows)
    return LabResult(
        expression=key,
        backend=be.name,
        dtype=be.dtype_name(be.dtype),
        output=float(_host(be, root.data)),
        dot=graph_dot(root),
        nodes=_rows(leaves, inner),
        checks=checks,
    )


# ---------------------------------------------------------------------------- the error demo
Snapshot = list[tuple[Tensor, Node | None, int]]


def snapshot(tensors: Sequence[Tensor]) -> Snapshot:
    """Remember, for each tensor, the node that produced it and its version now (right
    after the forward pass), so that :func:`naive_backward` can tell what changed."""
    return [(t, t.grad_fn, t.version) for t in tensors]


def naive_backward(root: Tensor, before: Snapshot) -> dict[int, Any]:
    """The gradients an engine *without version counters* would compute.

    Such an engine keeps references to the tensors an op saved and reads them during
    backward, so an in-place modification after the forward pass leaks into the
    gradient. This walks ``root``'s graph (as it was at ``before``) in topological
    order and calls the same VJP rules as the real engine, but wherever a saved input or
    output of an op is one of the ``before`` tensors and was modified in place since, it
    hands the VJP that tensor's *current* values. Nothing is accumulated into ``.grad``;
    the result maps ``id(leaf)`` to its gradient (a backend array).

    Examples
    --------
    >>> import minitorch
    >>> from minitorch.lab import core
    >>> x = minitorch.tensor(3.0, requires_grad=True)
    >>> y = minitorch.tensor(2.0, requires_grad=True)
    >>> z = x * y
    >>> before = core.snapshot([x, y, z])
    >>> with minitorch.no_grad():
    ...     _ = x.add_(1.0)
    >>> float(core.naive_backward(z, before)[id(y)])  # dz/dy read from the modified x: 4, not 3
    4.0
    """
    made = {id(node): t for t, node, _ in before if node is not None}
    changed = {id(t) for t, _, version in before if t.version != version}
    node = next((n for t, n, _ in before if t is root), root.grad_fn)
    if node is None:
        raise RuntimeError(
            "naive_backward: the tensor has no graph (create it from tensors that require grad)"
        )

    def current(s: Any, n: Node, role: int) -> Any:
        # a saved input/output that was modified since the snapshot: its current data
        src = n.source(role)
        t = made.get(id(src)) if isinstance(src, Node) else src
        return t.data if t is not None and id(t) in changed else s

    def naive(n: Node) -> tuple[Any, tuple[Any, ...]]:  # and no version checks
        return n.backend.xp, n.saved_values(current, keep_derived=True)

    # the real engine's backward pass, with the saved values read the naive way
    start = Tensor._make(root.data, node.backend, node)  # the root as it was recorded
    leaves = _graph_leaves(node)
    seed = node.backend.xp.ones_like(root.data)
    grads = run_backward([start], [seed], retain_graph=True, inputs=leaves, vjp_args=naive)
    return {id(t): g for t, g in zip(leaves, grads, strict=True) if g is not None}


def _graph_leaves(root: Node) -> list[Tensor]:
    """The leaf tensors (that require grad) of the graph below ``root``."""
    leaves: dict[int, Tensor] = {}
    seen: set[int] = set()
    stack = [root]
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


def simulate_error(
    key: str, values: Values, backend: str = "numpy", *, options: Mapping[str, Any] | None = None
) -> ErrorDemo:
    """Run the forward pass, modify a saved tensor in place, and run backward.

    Returns minitorch's error next to the gradients a naive engine would return (computed
    by :func:`naive_backward` from the modified values) and the correct ones (from an
    unmodified graph). Raises ``AssertionError`` if backward does *not* raise.

    Examples
    --------
    >>> from minitorch.lab import core
    >>> demo = core.simulate_error("tanh", {"a": 0.5, "b": -1.0, "c": 0.25})
    >>> demo.error_type
    'RuntimeError'
    >>> "input 0 of mul, is at version 1; expected version 0" in demo.message
    True
    >>> [(r.label, round(r.correct, 4), round(r.naive, 4)) for r in demo.rows if r.wrong]
    [('b', 0.47, 1.41)]
    """
    expr = _expression(key)
    be = lab_backend(backend)
    correct = run(key, values, backend, backward=True, options=options)
    leaves, inner = _build(expr, values, be, options)
    root = list(inner.values())[-1]
    before = snapshot([*leaves.values(), *inner.values()])
    expr.tamper({**leaves, **inner})
    naive = naive_backward(root, before)
    try:
        root.backward()
    except RuntimeError as exc:
        error_type, message = type(exc).__name__, str(exc)
    else:  # pragma: no cover - the engine's version check is tested elsewhere too
        raise AssertionError(f"lab {key!r}: backward after an in-place modification did not raise")
    by_label = {r.label: r.autograd for r in correct.checks}
    rows = []
    for spec in expr.inputs:
        g = naive.get(id(leaves[spec.name]))
        ng = np.zeros(max(spec.size, 1)) if g is None else _host(be, g).reshape(-1)
        rows += [
            GradPair(label, by_label[label], float(ng[i])) for i, label in enumerate(spec.labels)
        ]
    return ErrorDemo(
        expression=key,
        backend=be.name,
        tamper_code=expr.tamper_code,
        tamper_why=expr.tamper_why,
        error_type=error_type,
        message=message,
        rows=tuple(rows),
        dot=correct.dot,
    )
