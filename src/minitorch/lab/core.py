"""The Tensor Ops Lab's logic, without any web page: expressions, forward and backward
passes, local derivatives and the chain rule, the backward pass one step at a time,
finite-difference checks and the in-place modification demo.

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
>>> print(res.chain[-3].text)   # the chain rule, with the numbers
dL/da = dL/d(a*b) · ∂(a*b)/∂a = 0.94 × -1 = -0.94

:func:`backward_steps` runs the same backward pass one op at a time, as data:

>>> walk = core.backward_steps("tanh", {"a": 0.5, "b": -1.0, "c": 0.25})
>>> [(s.name, s.expression) for s in walk.steps]
[('out', 'tanh(a*b + c)'), ('a*b + c', 'a*b + c'), ('a*b', 'a * b')]
>>> for c in walk.steps[2].contributions:
...     print(c.text)
dL/da += dL/d(a*b) · ∂(a*b)/∂a = 0.94 × -1 = -0.94
dL/db += dL/d(a*b) · ∂(a*b)/∂b = 0.94 × 0.5 = 0.47
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np

import minitorch
from minitorch.backend import resolve
from minitorch.engine import Node, graph_leaves, run_backward, unbroadcast
from minitorch.ops import REGISTRY, OpDef
from minitorch.tensor import Tensor
from minitorch.viz import to_dot

__all__ = [
    "EXPRESSIONS",
    "STEP_STYLES",
    "BackwardStep",
    "ChainRule",
    "Contribution",
    "ErrorDemo",
    "Expression",
    "GradPair",
    "GradRow",
    "InputSpec",
    "LabResult",
    "LocalDerivative",
    "NodeRow",
    "NodeState",
    "Walkthrough",
    "backend_choices",
    "backward_steps",
    "default_values",
    "finite_differences",
    "fmt",
    "grad_symbol",
    "graph_dot",
    "lab_backend",
    "local_derivatives",
    "naive_backward",
    "op_expression",
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


# ---------------------------------------------------------------------------- readable names
_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "matmul": "@", "pow": "**"}
_PREFIX = {"neg": "-"}
_LIST_OPS = frozenset({"stack", "concat"})
#: a name that needs no parentheses as an operand or in dL/dx: ``a``, ``p[0]``
_SIMPLE = re.compile(r"\w+(\[[^\]]*\])*")


def _wrap(name: str) -> str:
    """``name`` as an operand: ``a`` stays ``a``, ``a*b + c`` becomes ``(a*b + c)``."""
    return name if _SIMPLE.fullmatch(name) else f"({name})"


def _index_part(p: Any) -> str:
    if p is Ellipsis:
        return "..."
    if p is None:
        return "None"
    if isinstance(p, slice):
        text = ("" if p.start is None else str(p.start)) + ":"
        text += "" if p.stop is None else str(p.stop)
        return text if p.step is None else f"{text}:{p.step}"
    if isinstance(p, bool | int | np.integer):
        return str(p)
    return "idx"  # an index array or a mask


def _index(key: Any) -> str:
    """``[0]`` for the key ``(0, Ellipsis)``: the brackets a person writes."""
    parts = list(key) if isinstance(key, tuple) else [key]
    while parts and parts[-1] is Ellipsis:  # x[0, ...] is x[0]
        parts.pop()
    return "[" + (", ".join(_index_part(p) for p in parts) if parts else "...") + "]"


def _shown_params(op: str, params: Mapping[str, Any]) -> list[str]:
    """``k=v`` for the parameters a person would write: not the defaults, no internals."""
    opdef = REGISTRY.get(op)
    defaults = opdef.defaults if opdef is not None else {}
    shown = []
    for k, v in params.items():
        simple = v is None or isinstance(v, bool | int | float | str)
        simple = simple or (isinstance(v, tuple) and all(isinstance(e, int) for e in v))
        if simple and not (k in defaults and defaults[k] == v):
            shown.append(f"{k}={v!r}")
    return shown


def op_expression(op: str, args: Sequence[str], params: Mapping[str, Any] | None = None) -> str:
    """What a person would write for op ``op`` applied to inputs named ``args``.

    The graph records ops by their registry names and parameters (``getitem`` with
    ``key=(0, Ellipsis), basic=True``); this writes them as code (``p[0]``). Parameters
    left at their defaults are not shown.

    Examples
    --------
    >>> from minitorch.lab.core import op_expression
    >>> op_expression("getitem", ["p"], {"key": (0, Ellipsis), "basic": True})
    'p[0]'
    >>> op_expression("mul", ["a*b + c", "d"]), op_expression("add", ["a*b", "c"])
    ('(a*b + c) * d', 'a*b + c')
    >>> op_expression("neg", ["log p[0]"]), op_expression("tanh", ["a*b + c"])
    ('-(log p[0])', 'tanh(a*b + c)')
    >>> op_expression("stack", ["a", "b"], {"axis": 0})
    'stack([a, b])'
    >>> op_expression("softmax", ["z"], {"axis": 1})
    'softmax(z, axis=1)'
    """
    params = params or {}
    if op in _INFIX and len(args) == 2:
        left, right = args
        if op not in ("add", "sub"):  # a*b + c needs no parentheses in a sum
            left = _wrap(left)
        if op != "add":
            right = _wrap(right)
        return f"{left} {_INFIX[op]} {right}"
    if op in _PREFIX and len(args) == 1:
        return _PREFIX[op] + _wrap(args[0])
    if op == "getitem" and len(args) == 1:
        return _wrap(args[0]) + _index(params.get("key"))
    inside = [f"[{', '.join(args)}]"] if op in _LIST_OPS else list(args)
    return f"{op}({', '.join([*inside, *_shown_params(op, params)])})"


def grad_symbol(name: str) -> str:
    """``dL/dx``: the gradient of the output L with respect to tensor ``name``.

    Examples
    --------
    >>> from minitorch.lab.core import grad_symbol
    >>> grad_symbol("a"), grad_symbol("p[0]"), grad_symbol("a*b + c")
    ('dL/da', 'dL/dp[0]', 'dL/d(a*b + c)')
    """
    return f"dL/d{_wrap(name)}"


def _num(x: float) -> str:
    text = f"{x:.4g}"
    return "0" if text == "-0" else text


def fmt(value: Any) -> str:
    """Signed numbers (4 significant digits) as the lab writes them: ``-0.94``, ``[1, 0]``,
    ``[[0.2, -0.1], [-0.1, 0.2]]``.

    Examples
    --------
    >>> from minitorch.lab.core import fmt
    >>> fmt(-0.9400148), fmt([1.0, -0.0, 2.5]), fmt([[1, 2], [3, 4]])
    ('-0.94', '[1, 0, 2.5]', '[[1, 2], [3, 4]]')
    """
    a = np.asarray(value, dtype=np.float64)
    if a.ndim == 0:
        return _num(float(a))
    return "[" + ", ".join(fmt(x) for x in a) + "]"


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
    op: str  # the registry name of the op that produced it ("" for a leaf)
    value: np.ndarray
    grad: np.ndarray | None
    expression: str = ""  # how it was computed, as code ("p[0]", "a * b"; "" for a leaf)


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
    locals: tuple[LocalDerivative, ...] = ()  # every edge's local derivative
    chain: tuple[ChainRule, ...] = ()  # every gradient by the chain rule (after backward)

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


def graph_dot(
    root: Tensor,
    *,
    edge_label: Callable[[Node, int], str | None] | None = None,
    node_style: Callable[[Node], Mapping[str, str] | None] | None = None,
) -> str:
    """The DOT text of ``root``'s graph, from :func:`minitorch.viz.to_dot` (with its
    ``edge_label`` and ``node_style`` hooks)."""
    return to_dot(root, edge_label=edge_label, node_style=node_style)


def _rows(leaves: dict[str, Tensor], inner: dict[str, Tensor]) -> tuple[NodeRow, ...]:
    rows = []
    last = list(inner)[-1]
    names = _graph_names(leaves, inner)
    for name, t in [*leaves.items(), *inner.items()]:
        be = t.backend
        kind = "leaf" if t.is_leaf else "output" if name == last else "intermediate"
        node = t.grad_fn
        op = "" if node is None else node.name
        expression = "" if node is None else _expression_of(node, names)
        grad = None if t.grad is None else _host(be, t.grad)
        rows.append(NodeRow(name, kind, op, _host(be, t.data), grad, expression))
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

    The graph's edges are labelled with their local derivatives (and, after backward,
    with what backward passed along them); ``chain`` writes every gradient out as the
    chain rule computes it.

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
    walk = _backprop(leaves, inner)  # reads the saved values: before backward frees them
    checks: tuple[GradRow, ...] = ()
    chain: tuple[ChainRule, ...] = ()
    if backward:
        root.backward()
        chain = _chain(walk, leaves)
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
        dot=graph_dot(root, edge_label=_edge_label(walk, len(walk.steps) if backward else 0)),
        nodes=_rows(leaves, inner),
        checks=checks,
        locals=_locals(walk),
        chain=chain,
    )


# ---------------------------------------------------------------------------- the chain rule
#: ∂(output)/∂(input k) in symbols, per op: ``{0}``, ``{1}`` name the inputs, ``{out}`` the
#: output (matmul: of two vectors only)
_RULES: dict[str, tuple[str, ...]] = {
    "add": ("1", "1"),
    "sub": ("1", "-1"),
    "mul": ("{1}", "{0}"),
    "div": ("1/{1}", "-{0}/{1}²"),
    "neg": ("-1",),
    "tanh": ("1 - {out}²",),
    "relu": ("1 if {0} > 0 else 0",),
    "log": ("1/{0}",),
    "exp": ("{out}",),
    "sigmoid": ("{out}·(1 - {out})",),
    "softmax": ("diag({out}) - {out}·{out}ᵀ",),
    "matmul": ("{1}", "{0}"),
}


@dataclasses.dataclass(frozen=True, eq=False)
class LocalDerivative:
    """∂(output)/∂(input): how one op's output moves with one of its inputs, at the values
    of the forward pass (so it is known before backward runs).

    It is computed with the op's own VJP rule, the function backward calls: one call per
    output element with a one-hot upstream gradient gives one row of the Jacobian.
    ``jacobian`` has the shape ``out_shape + input shape``, as
    ``torch.autograd.functional.jacobian`` returns it (a 0-d array for scalar -> scalar).
    """

    output: str  # the op's output ("a*b")
    input: str  # the input ("a")
    index: int  # which input of the op it is
    op: str  # the op's registry name ("mul")
    out_shape: tuple[int, ...]
    jacobian: np.ndarray
    formula: str = ""  # in symbols ("b" for ∂(a*b)/∂a); "" where the lab knows none

    @property
    def symbol(self) -> str:
        """``∂(a*b)/∂a``."""
        return f"∂{_wrap(self.output)}/∂{_wrap(self.input)}"

    @property
    def matrix(self) -> np.ndarray:
        """The Jacobian as a matrix: one row per output element, one column per input
        element (a number for scalar -> scalar)."""
        j = self.jacobian
        if j.ndim == 0:
            return j
        return j.reshape(math.prod(self.out_shape), -1)

    @property
    def value_text(self) -> str:
        """The numbers, compactly: ``-1``; a row ``[1.2, 0.5]`` (scalar output, so the
        shape of the input); a column ``[1, 0, 0]ᵀ`` (scalar input); or a matrix."""
        if not self.out_shape or self.jacobian.ndim == 0:
            return fmt(self.jacobian)
        if self.jacobian.ndim == len(self.out_shape) == 1:  # a scalar input
            return fmt(self.jacobian) + "ᵀ"
        return fmt(self.matrix)

    @property
    def text(self) -> str:
        """``∂(a*b)/∂a = b = -1`` (the formula left out where it is the number)."""
        value = self.value_text
        formula = "" if self.formula == value else self.formula
        return " = ".join(p for p in (self.symbol, formula, value) if p)


@dataclasses.dataclass(frozen=True, eq=False)
class Contribution:
    """What one op passes back to one of its inputs during backward: the op's incoming
    gradient times its local derivative (``g · ∂out/∂x``: the op's VJP), which is added
    to the input's gradient."""

    local: LocalDerivative
    upstream: np.ndarray  # dL/d(output): the op's incoming gradient
    value: np.ndarray  # upstream · local derivative, shaped like the input
    total: np.ndarray  # the input's gradient once this is added

    @property
    def product(self) -> str:
        """``0.94 × -1`` (a scalar gradient) or ``[g0, g1] · J`` (a tensor's)."""
        times = "×" if self.upstream.ndim == 0 else "·"
        return f"{fmt(self.upstream)} {times} {self.local.value_text}"

    @property
    def text(self) -> str:
        """``dL/da += dL/d(a*b) · ∂(a*b)/∂a = 0.94 × -1 = -0.94``."""
        local = self.local
        return (
            f"{grad_symbol(local.input)} += {grad_symbol(local.output)} · {local.symbol} = "
            f"{self.product} = {fmt(self.value)}"
        )


@dataclasses.dataclass(frozen=True, eq=False)
class ChainRule:
    """One tensor's gradient as the chain rule gives it: the sum, over the ops that used
    the tensor, of (that op's gradient) · (its local derivative)."""

    name: str
    terms: tuple[Contribution, ...]  # empty for the output: its gradient is the seed, 1
    grad: np.ndarray

    @property
    def text(self) -> str:
        """``dL/da = dL/d(a*b) · ∂(a*b)/∂a = 0.94 × -1 = -0.94``."""
        lhs = grad_symbol(self.name)
        if not self.terms:
            return f"{lhs} = {fmt(self.grad)}   (L is {self.name} itself: backward starts here)"
        symbols = " + ".join(
            f"{grad_symbol(c.local.output)} · {c.local.symbol}" for c in self.terms
        )
        numbers = " + ".join(c.product for c in self.terms)
        return f"{lhs} = {symbols} = {numbers} = {fmt(self.grad)}"


@dataclasses.dataclass(frozen=True, eq=False)
class BackwardStep:
    """One op visited by the backward pass, in the engine's order: every op that used
    this op's output came before, so its incoming gradient is complete."""

    index: int  # the step's number: 1, 2, ...
    node_id: int  # the op's position in the forward pass (0: the first op computed)
    name: str  # the tensor the op produced ("a*b")
    expression: str  # how it was computed, as code ("a * b")
    op: str  # the op's registry name ("mul")
    rule: str  # the op's VJP rule as its registry entry writes it ("g*y, g*x")
    upstream: np.ndarray  # dL/d(name): the incoming gradient
    contributions: tuple[Contribution, ...]  # one per input that needs a gradient
    grads: Mapping[str, np.ndarray]  # every gradient accumulated so far (after this step)

    @property
    def locals(self) -> tuple[LocalDerivative, ...]:
        return tuple(c.local for c in self.contributions)

    @property
    def title(self) -> str:
        """``out = tanh(a*b + c)``; just ``a*b`` where the name is the expression."""
        same = self.name.replace(" ", "") == self.expression.replace(" ", "")
        return self.name if same else f"{self.name} = {self.expression}"


NodeState = Literal["done", "current", "pending"]


@dataclasses.dataclass(frozen=True, eq=False)
class Walkthrough:
    """The backward pass one op at a time (:func:`backward_steps`): pure data, drawn by
    the page one step per click."""

    expression: str
    backend: str
    dtype: str
    output_name: str  # L, the tensor backward starts from
    output: float
    leaves: tuple[str, ...]
    steps: tuple[BackwardStep, ...]
    chain: tuple[ChainRule, ...]
    dots: tuple[str, ...]  # dots[p]: the graph after p steps, p = 0 .. len(steps)
    backward_grads: Mapping[str, np.ndarray]  # each leaf's .grad from a real backward()

    def grads(self, p: int) -> Mapping[str, np.ndarray]:
        """The gradients accumulated after ``p`` steps (``p = 0``: only the seed 1)."""
        if p == 0:
            return {self.output_name: np.ones(())}
        return self.steps[p - 1].grads

    def states(self, p: int) -> dict[str, NodeState]:
        """Each op (by the name of its output) after ``p`` steps: ``done``, ``current``
        (step ``p``, the one shown) or ``pending``."""
        return {s.name: _state(s.index - 1, p) for s in self.steps}


def _state(i: int, p: int) -> NodeState:
    return "done" if i < p - 1 else "current" if i == p - 1 else "pending"


def _in_shape(e: Any) -> tuple[int, ...]:
    return tuple(e.shape) if isinstance(e, Node) else tuple(e.data.shape)


def _vjp(node: Node, g: Any) -> list[Any]:
    """The engine's step for one op: its VJP on the upstream gradient ``g`` and the
    values the forward saved, each input's gradient summed down to that input's shape
    (None where an input needs none)."""
    if node.saved is None:
        raise RuntimeError(f"the values saved by {node.op.name} were freed by a backward pass")
    node.check_versions()
    vjp = node.op.vjp
    if vjp is None:  # pragma: no cover - only differentiable ops record nodes
        raise RuntimeError(f"{node.op.name} has no VJP")
    xp = node.backend.xp
    needs = tuple(e is not None for e in node.edges)
    gins = vjp(xp, g, node.saved, needs, **node.params)
    out: list[Any] = []
    for e, gi in zip(node.edges, gins, strict=True):
        if e is None or gi is None:
            out.append(None)
            continue
        shape = _in_shape(e)
        out.append(gi if tuple(gi.shape) == shape else unbroadcast(xp, gi, shape))
    return out


def _jacobians(node: Node) -> list[np.ndarray | None]:
    """∂out/∂(input k) for every input that needs a gradient, from the op's VJP with a
    one-hot upstream gradient per output element (shape ``out + input``)."""
    be = node.backend
    size = math.prod(node.shape)
    rows: list[list[np.ndarray] | None] = [[] if e is not None else None for e in node.edges]
    for j in range(size):
        onehot = np.zeros(size)
        onehot[j] = 1.0
        g = be.from_numpy(onehot.reshape(node.shape), be.dtype, be.device)
        for k, gi in enumerate(_vjp(node, g)):
            row = rows[k]
            if row is not None:
                shape = _in_shape(node.edges[k])
                row.append(np.zeros(shape) if gi is None else _host(be, gi).reshape(shape))
    return [
        None if r is None else np.stack(r).reshape(tuple(node.shape) + _in_shape(e))
        for r, e in zip(rows, node.edges, strict=True)
    ]


def _topological(root: Node) -> list[Node]:
    """The ops below ``root`` in the order the engine's backward visits them: an op once
    every op that used its output has been visited (the same counting and stack)."""
    deps: dict[Node, int] = {root: 0}
    stack = [root]
    while stack:
        for e in stack.pop().edges:
            if isinstance(e, Node):
                deps[e] = deps.get(e, 0) + 1
                if deps[e] == 1:
                    stack.append(e)
    order: list[Node] = []
    ready = [root]
    while ready:
        n = ready.pop()
        order.append(n)
        for e in n.edges:
            if isinstance(e, Node):
                deps[e] -= 1
                if deps[e] == 0:
                    ready.append(e)
    return order


def _label(e: Any, names: Mapping[int, str]) -> str:
    """The name of an edge's tensor: its name in the lab, else how it was computed."""
    got = names.get(id(e))
    if got is not None:
        return got
    if isinstance(e, Node):
        return _expression_of(e, names)
    return str(e.name or "leaf")


def _expression_of(node: Node, names: Mapping[int, str]) -> str:
    # "const": an input that needs no gradient (a Python number, a constant tensor)
    args = ["const" if e is None else _label(e, names) for e in node.edges]
    return op_expression(node.op.name, args, node.params)


def _graph_names(leaves: dict[str, Tensor], inner: dict[str, Tensor]) -> dict[int, str]:
    """id(leaf tensor) or id(op node) -> the name the lab gave the tensor."""
    names = {id(t): n for n, t in leaves.items()}
    names.update({id(t.grad_fn): n for n, t in inner.items() if t.grad_fn is not None})
    return names


def _formula(node: Node, k: int, args: Sequence[str], out: str) -> str:
    rules = _RULES.get(node.op.name, ())
    if k >= len(rules) or (node.op.name == "matmul" and node.shape != ()):
        return ""
    return rules[k].format(*[_wrap(a) for a in args], out=_wrap(out))


def _rule(node: Node) -> str:
    op = node.op
    return op.facts.formula if isinstance(op, OpDef) else ""


@dataclasses.dataclass
class _Walk:
    """The backward pass replayed op by op on a graph (nothing written into ``.grad``)."""

    order: list[Node]  # the ops, in the engine's backward order
    steps: list[BackwardStep]
    states: list[dict[int, Any]]  # states[p]: the backend gradients after p steps
    edges: dict[tuple[int, int], Contribution]  # (id(op), input k) -> what flowed there
    into: dict[int, list[Contribution]]  # id(op) or id(leaf) -> what flowed into it


def _backprop(leaves: dict[str, Tensor], inner: dict[str, Tensor]) -> _Walk:
    """Run the backward pass of the graph ``inner`` ends in as the engine does (same
    order, same VJPs, same sums), recording every step."""
    root = list(inner.values())[-1]
    top = root.grad_fn
    if top is None:  # pragma: no cover - every lab expression is built from ops
        raise RuntimeError("the lab's output has no graph")
    be = root.backend
    names = _graph_names(leaves, inner)
    forward = {id(t.grad_fn): i for i, t in enumerate(inner.values())}
    shown = [id(t) for t in leaves.values()] + list(forward)  # the grads' order
    order = _topological(top)
    acc: dict[int, Any] = {id(top): be.xp.ones_like(root.data)}  # the seed dL/dL = 1
    walk = _Walk(order, [], [dict(acc)], {}, {})
    for index, node in enumerate(order, start=1):
        name = _label(node, names)
        g = acc.get(id(node))
        if g is None:  # pragma: no cover - an op whose consumers passed nothing back
            g = be.from_numpy(np.zeros(node.shape), be.dtype, be.device)
        args = ["const" if e is None else _label(e, names) for e in node.edges]
        jac = _jacobians(node)
        contributions = []
        for k, (e, gi) in enumerate(zip(node.edges, _vjp(node, g), strict=True)):
            jk = jac[k]
            if e is None or gi is None or jk is None:
                continue
            prev = acc.get(id(e))
            acc[id(e)] = gi if prev is None else prev + gi  # fan-out: sum, as the engine
            local = LocalDerivative(
                output=name,
                input=args[k],
                index=k,
                op=node.op.name,
                out_shape=tuple(node.shape),
                jacobian=jk,
                formula=_formula(node, k, args, name),
            )
            c = Contribution(local, _host(be, g), _host(be, gi), _host(be, acc[id(e)]))
            contributions.append(c)
            walk.edges[(id(node), k)] = c
            walk.into.setdefault(id(e), []).append(c)
        walk.states.append(dict(acc))
        walk.steps.append(
            BackwardStep(
                index=index,
                node_id=forward.get(id(node), -1),
                name=name,
                expression=_expression_of(node, names),
                op=node.op.name,
                rule=_rule(node),
                upstream=_host(be, g),
                contributions=tuple(contributions),
                grads={names[i]: _host(be, acc[i]) for i in shown if i in acc},
            )
        )
    return walk


def _chain(walk: _Walk, leaves: dict[str, Tensor]) -> tuple[ChainRule, ...]:
    """Each tensor's gradient as a chain-rule formula: the ops in backward order (each
    gradient is complete when its op is visited), then the leaves."""
    rules = [
        ChainRule(s.name, tuple(walk.into.get(id(n), ())), s.upstream)
        for n, s in zip(walk.order, walk.steps, strict=True)
    ]
    for name, t in leaves.items():
        terms = tuple(walk.into.get(id(t), ()))
        grad = terms[-1].total if terms else np.zeros(tuple(t.data.shape))
        rules.append(ChainRule(name, terms, grad))
    return tuple(rules)


def local_derivatives(
    key: str, values: Values, backend: str = "numpy", *, options: Mapping[str, Any] | None = None
) -> tuple[LocalDerivative, ...]:
    """The local derivative on every edge of the expression's graph, in forward order
    (the first op computed first), each from the op's VJP at the slider ``values``.

    Examples
    --------
    >>> from minitorch.lab import core
    >>> for d in core.local_derivatives("tanh", {"a": 0.5, "b": -1.0, "c": 0.25}):
    ...     print(d.text)
    ∂(a*b)/∂a = b = -1
    ∂(a*b)/∂b = a = 0.5
    ∂(a*b + c)/∂(a*b) = 1
    ∂(a*b + c)/∂c = 1
    ∂out/∂(a*b + c) = 1 - out² = 0.94
    """
    expr = _expression(key)
    be = lab_backend(backend)
    walk = _backprop(*_build(expr, values, be, options))
    return _locals(walk)


def _locals(walk: _Walk) -> tuple[LocalDerivative, ...]:
    steps = sorted(walk.steps, key=lambda s: s.node_id)
    return tuple(c.local for s in steps for c in s.contributions)


def _edge_value(local: LocalDerivative) -> str:
    """The local derivative for an edge label: a matrix one row per line."""
    m = local.matrix
    if m.ndim == 2 and m.shape[0] > 1 and m.shape[1] > 1:
        return "\n" + "\n".join(fmt(row) for row in m)
    return local.value_text


def _edge_label(walk: _Walk, p: int) -> Callable[[Node, int], str | None]:
    """Edge labels after ``p`` steps: the local derivative ∂, and once the op was
    visited, what it passed back (g·∂)."""
    pos = {id(n): i for i, n in enumerate(walk.order)}

    def label(node: Node, k: int) -> str | None:
        c = walk.edges.get((id(node), k))
        if c is None:
            return None
        value = _edge_value(c.local)
        text = f"∂ ={value}" if value.startswith("\n") else f"∂ = {value}"
        if pos[id(node)] < p:
            text += f"\ng·∂ = {fmt(c.value)}"
        return text

    return label


#: the step-by-step graph's colours: done, current (the step shown) and pending ops
STEP_STYLES: dict[NodeState, dict[str, str]] = {
    "done": {"fillcolor": "#c8e6c9"},
    "current": {"fillcolor": "#ffb74d", "penwidth": "3"},
    "pending": {"fillcolor": "#f4f4f4", "fontcolor": "#777777"},
}


def _node_style(walk: _Walk, p: int) -> Callable[[Node], Mapping[str, str] | None]:
    pos = {id(n): i for i, n in enumerate(walk.order)}

    def style(node: Node) -> Mapping[str, str] | None:
        i = pos.get(id(node))
        return None if i is None else STEP_STYLES[_state(i, p)]

    return style


def _set_grads(leaves: dict[str, Tensor], inner: dict[str, Tensor], state: dict[int, Any]) -> None:
    """Show the gradients of ``state`` (part way through backward) in the graph's boxes."""
    for t in leaves.values():
        g = state.get(id(t))
        t.grad = None if g is None else t.backend.xp.asarray(g, copy=True)
    for t in inner.values():
        g = state.get(id(t.grad_fn))
        t.grad = None if g is None else t.backend.xp.asarray(g, copy=True)


def backward_steps(
    key: str, values: Values, backend: str = "numpy", *, options: Mapping[str, Any] | None = None
) -> Walkthrough:
    """The backward pass of an expression one op at a time, as data.

    Each :class:`BackwardStep` names the op visited (in the engine's topological order),
    its incoming gradient, its local derivatives, what it adds to each input's gradient,
    and every gradient accumulated so far. ``dots[p]`` is the graph after ``p`` steps:
    done ops green, the current one orange, pending ones grey, each edge labelled with
    its local derivative (and, once visited, what it passed back); the boxes show the
    gradients accumulated so far. ``backward_grads`` are the leaves' gradients from a
    real ``backward()`` on the same values, which the last step's sums equal.

    Examples
    --------
    >>> from minitorch.lab import core
    >>> walk = core.backward_steps("neuron", core.default_values("neuron"))
    >>> [s.title for s in walk.steps]
    ['out = relu(w·x + b)', 'w·x + b', 'w·x = w @ x']
    >>> print(walk.steps[2].contributions[0].text)
    dL/dw += dL/d(w·x) · ∂(w·x)/∂w = 1 × [1, 0.5, -1.5] = [1, 0.5, -1.5]
    >>> walk.states(2)
    {'out': 'done', 'w·x + b': 'current', 'w·x': 'pending'}
    """
    expr = _expression(key)
    be = lab_backend(backend)
    leaves, inner = _build(expr, values, be, options)
    root = list(inner.values())[-1]
    walk = _backprop(leaves, inner)
    dots = []
    for p in range(len(walk.steps) + 1):
        _set_grads(leaves, inner, walk.states[p])
        dots.append(
            graph_dot(root, edge_label=_edge_label(walk, p), node_style=_node_style(walk, p))
        )
    # the real thing on a fresh graph, to compare the sums with
    ref_leaves, ref_inner = _build(expr, values, be, options)
    list(ref_inner.values())[-1].backward()
    backward_grads = {
        n: np.zeros(tuple(t.data.shape)) if t.grad is None else _host(be, t.grad)
        for n, t in ref_leaves.items()
    }
    return Walkthrough(
        expression=key,
        backend=be.name,
        dtype=be.dtype_name(be.dtype),
        output_name=list(inner)[-1],
        output=float(_host(be, root.data)),
        leaves=tuple(leaves),
        steps=tuple(walk.steps),
        chain=_chain(walk, leaves),
        dots=tuple(dots),
        backward_grads=backward_grads,
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
    leaves: list[Tensor] = graph_leaves([node])
    seed = node.backend.xp.ones_like(root.data)
    grads = run_backward([start], [seed], retain_graph=True, inputs=leaves, vjp_args=naive)
    return {id(t): g for t, g in zip(leaves, grads, strict=True) if g is not None}


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
