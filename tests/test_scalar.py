"""Tests of the scalar engine ``minigrad.scalar``: every op against PyTorch float64.

One catalog entry per op (``OPS``) drives the generic forward/gradient checks; hand-derived
values check the graph machinery (fan-out, diamonds, deep chains, repeated ``backward``).
"""

from __future__ import annotations

import doctest
import fractions
import importlib
import math
import random
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from minigrad import Value, topological_order, zero_grad
from minigrad.nn import MLP, Layer, Neuron, sgd_step, squared_error

TOL = 1e-9


def close(actual: float, expected: float, tol: float = TOL) -> bool:
    """Relative tolerance, absolute below magnitude 1 (infinities must match exactly)."""
    if math.isinf(expected) or math.isinf(actual):
        return actual == expected
    return abs(actual - expected) <= tol * max(1.0, abs(expected))


# --------------------------------------------------------------------------- op catalog
def uniform(lo: float, hi: float, n: int = 1) -> Callable[[random.Random], tuple[float, ...]]:
    return lambda rng: tuple(rng.uniform(lo, hi) for _ in range(n))


def nonzero(lo: float, hi: float, n: int = 1) -> Callable[[random.Random], tuple[float, ...]]:
    """Magnitude in [lo, hi], random sign: away from poles and kinks at 0."""
    return lambda rng: tuple(rng.choice((-1.0, 1.0)) * rng.uniform(lo, hi) for _ in range(n))


def pair(
    a: Callable[[random.Random], tuple[float, ...]], b: Callable[[random.Random], tuple[float, ...]]
) -> Callable[[random.Random], tuple[float, ...]]:
    return lambda rng: a(rng) + b(rng)


@dataclass(frozen=True)
class OpCase:
    """One op: a function written with operators/methods shared by Value and torch.Tensor."""

    name: str
    fn: Callable[..., Any]
    sample: Callable[[random.Random], tuple[float, ...]]


OPS = [
    OpCase("add", lambda a, b: a + b, uniform(-3, 3, 2)),
    OpCase("sub", lambda a, b: a - b, uniform(-3, 3, 2)),
    OpCase("mul", lambda a, b: a * b, uniform(-3, 3, 2)),
    OpCase("truediv", lambda a, b: a / b, pair(uniform(-3, 3), nonzero(0.2, 3))),
    OpCase("add_const", lambda a: a + 0.75, uniform(-3, 3)),
    OpCase("radd", lambda a: 0.75 + a, uniform(-3, 3)),
    OpCase("sub_const", lambda a: a - 1.25, uniform(-3, 3)),
    OpCase("rsub", lambda a: 1.25 - a, uniform(-3, 3)),
    OpCase("mul_const", lambda a: a * -1.5, uniform(-3, 3)),
    OpCase("rmul", lambda a: -1.5 * a, uniform(-3, 3)),
    OpCase("truediv_const", lambda a: a / 0.3, uniform(-3, 3)),
    OpCase("rtruediv", lambda a: 2.0 / a, nonzero(0.2, 3)),
    OpCase("neg", lambda a: -a, uniform(-3, 3)),
    OpCase("pow_2", lambda a: a**2, uniform(-3, 3)),
    OpCase("pow_3", lambda a: a**3, uniform(-3, 3)),
    OpCase("pow_-1", lambda a: a**-1, nonzero(0.2, 3)),
    OpCase("pow_-2.0", lambda a: a**-2.0, nonzero(0.2, 3)),
    OpCase("pow_0.5", lambda a: a**0.5, uniform(0.05, 4)),
    OpCase("pow_2.5", lambda a: a**2.5, uniform(0.05, 4)),
    OpCase("pow_0", lambda a: a**0, uniform(-3, 3)),
    OpCase("rpow", lambda a: 2.0**a, uniform(-3, 3)),
    OpCase("rpow_frac", lambda a: 0.3**a, uniform(-3, 3)),
    OpCase("exp", lambda a: a.exp(), uniform(-5, 5)),
    OpCase("log", lambda a: a.log(), uniform(0.01, 10)),
    OpCase("relu", lambda a: a.relu(), nonzero(0.01, 3)),
    OpCase("tanh", lambda a: a.tanh(), uniform(-4, 4)),
    OpCase("sigmoid", lambda a: a.sigmoid(), uniform(-8, 8)),
    OpCase("sigmoid_far", lambda a: a.sigmoid(), nonzero(30, 800)),
]

COMPOSITES = [
    OpCase(
        "neuron",
        lambda w1, w2, b, x: (w1 * x + w2 * (x * x) + b).tanh() * 2.0 - w1 / (b * b + 1.0),
        uniform(-2, 2, 4),
    ),
    OpCase(
        "softplus_log",
        lambda a, b, c: ((a * b).exp() + 1.0).log() - (c.sigmoid() * a + 3.0).log() ** 2,
        uniform(-2, 2, 3),
    ),
    OpCase(
        "rational",
        lambda a, b, c: (a - b) / (c * c + 0.5) + 1.0 / (a * a + b * b + 1.0) - (a * c) ** 3,
        uniform(-2, 2, 3),
    ),
    OpCase(
        "activations",
        lambda a, b: (a * 2.0 - b).relu() * b.tanh() + (a + b).sigmoid() * 2.0**a,
        pair(uniform(1.0, 2.0), uniform(-0.5, 0.5)),
    ),
    OpCase(
        "fanout",
        lambda a, b: (lambda t: t * t + t.exp() - t / (t * t + 1.0))(a * b + a),
        uniform(-1.5, 1.5, 2),
    ),
]


def torch_reference(fn: Callable[..., Any], inputs: Sequence[float]) -> tuple[float, list[float]]:
    """Forward value and input gradients of ``fn`` from PyTorch in float64."""
    torch = pytest.importorskip("torch")
    xs = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in inputs]
    out = fn(*xs)
    out.backward()
    return out.item(), [0.0 if x.grad is None else x.grad.item() for x in xs]


def minigrad_result(fn: Callable[..., Any], inputs: Sequence[float]) -> tuple[float, list[float]]:
    xs = [Value(x) for x in inputs]
    out = fn(*xs)
    out.backward()
    return out.data, [x.grad for x in xs]


def assert_matches_torch(fn: Callable[..., Any], inputs: Sequence[float]) -> None:
    value, grads = minigrad_result(fn, inputs)
    ref_value, ref_grads = torch_reference(fn, inputs)
    assert close(value, ref_value), (inputs, value, ref_value)
    for i, (g, r) in enumerate(zip(grads, ref_grads, strict=True)):
        assert close(g, r), f"d/dx{i} at {inputs}: minigrad {g!r}, torch {r!r}"


@pytest.mark.parametrize("case", OPS, ids=lambda c: c.name)
def test_op_matches_torch_float64(case: OpCase) -> None:
    rng = random.Random(f"op-{case.name}")
    for _ in range(25):
        assert_matches_torch(case.fn, case.sample(rng))


@pytest.mark.parametrize("case", COMPOSITES, ids=lambda c: c.name)
def test_composite_matches_torch_float64(case: OpCase) -> None:
    rng = random.Random(f"composite-{case.name}")
    for _ in range(25):
        assert_matches_torch(case.fn, case.sample(rng))


@pytest.mark.parametrize(
    ("fn", "x"),
    [
        (lambda a: a.relu(), 0.0),  # kink: subgradient 0, as in PyTorch
        (lambda a: a**0.5, 0.0),  # infinite slope at 0
        (lambda a: a**0, 0.0),  # constant function: zero gradient everywhere
        (lambda a: a**2, 0.0),
        (lambda a: a**3, -2.0),  # negative base, integer exponent
        (lambda a: a**-3, -0.5),
        (lambda a: a.sigmoid(), 0.0),
        (lambda a: a.tanh(), 25.0),  # saturated: gradient exactly 0
    ],
    ids=["relu@0", "sqrt@0", "pow0@0", "square@0", "cube@-2", "pow-3@-0.5", "sigmoid@0", "tanh@25"],
)
def test_special_points_match_torch(fn: Callable[..., Any], x: float) -> None:
    assert_matches_torch(fn, [x])


def test_hand_derived_values() -> None:
    x, y = Value(2.0), Value(-3.0)
    z = (x * y + x**3) / y  # (xy + x^3) / y = x + x^3 / y
    z.backward()
    assert z.data == pytest.approx(2.0 + 8.0 / -3.0, rel=1e-15)
    assert x.grad == pytest.approx(1.0 + 3 * 4.0 / -3.0, rel=1e-15)  # 1 + 3x^2/y
    assert y.grad == pytest.approx(-8.0 / 9.0, rel=1e-15)  # -x^3/y^2


# ----------------------------------------------------------------- graph machinery
def test_fan_out_accumulates() -> None:
    x = Value(3.0)
    (x + x).backward()
    assert x.grad == 2.0
    x = Value(3.0)
    (x * x).backward()  # one node with the same parent twice
    assert x.grad == 6.0
    x = Value(3.0)
    Value.sum([x, x * 2.0, x.exp()]).backward()
    assert x.grad == pytest.approx(3.0 + math.exp(3.0), rel=1e-15)


def test_diamond_hand_derived() -> None:
    # a feeds two branches that meet again: d = (2a)(3a) = 6a^2 with a = x + 1
    x = Value(2.0)
    a = x + 1.0
    d = (a * 2.0) * (a * 3.0)
    d.backward()
    assert d.data == 54.0
    assert x.grad == 36.0  # 12 a
    assert a.grad == 36.0


def test_diamond_matches_torch() -> None:
    def f(x: Any, y: Any) -> Any:
        a = x * y  # fans out three times
        b, c = a.tanh(), a.exp()
        e = b * c + a / (c + 1.0)
        return e * x + e.sigmoid()  # e fans out twice, x reaches the output by 3 paths

    rng = random.Random(7)
    for _ in range(25):
        assert_matches_torch(f, [rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5)])


def test_deep_chain_has_no_recursion_error() -> None:
    depth = 100_000
    assert sys.getrecursionlimit() < depth
    x = Value(0.5)
    y = x
    for i in range(depth):
        y = y * 1.000001 if i % 2 else y + 0.25
    y.backward()
    assert x.grad == pytest.approx(1.000001 ** (depth // 2), rel=1e-9)
    assert len(topological_order(y)) == depth + 1
    del y  # freeing a deep chain must not crash either


def test_topological_order_is_deterministic() -> None:
    def build() -> Value:
        a, b, c = Value(1.0, "a"), Value(2.0, "b"), Value(3.0, "c")
        ab = a * b
        ab.label = "ab"
        bc = b + c
        bc.label = "bc"
        out = ab * bc - a
        out.label = "out"
        return out

    orders = [[v.label or v.op for v in topological_order(build())] for _ in range(3)]
    # creation order: leaves first, then the ops in the order the program ran them
    assert orders[0] == ["a", "b", "c", "ab", "bc", "*", "out"]
    assert orders[0] == orders[1] == orders[2]


def test_each_node_comes_after_its_parents() -> None:
    rng = random.Random(3)
    leaves = [Value(rng.uniform(-1, 1)) for _ in range(6)]
    nodes = list(leaves)
    for _ in range(300):
        a, b = rng.choice(nodes), rng.choice(nodes)
        nodes.append((a * b).tanh() if rng.random() < 0.5 else a + b)
    order = topological_order(nodes[-1])
    position = {id(v): i for i, v in enumerate(order)}
    assert len(position) == len(order)  # no duplicates
    for v in order:
        for p in v.parents:
            assert position[id(p)] < position[id(v)]


# ------------------------------------------------------------- repeated backward()
def test_second_backward_accumulates_into_leaves_like_torch() -> None:
    torch = pytest.importorskip("torch")
    x, y = Value(1.5), Value(-0.5)
    h = (x * y).tanh()
    z = h * x + y
    z.backward()
    first = (x.grad, y.grad, h.grad)
    z.backward()
    # leaves accumulate: exactly twice the gradient of one pass
    assert (x.grad, y.grad) == (2 * first[0], 2 * first[1])
    # interior nodes are reset at the start of each pass
    assert h.grad == first[2]

    tx = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    ty = torch.tensor(-0.5, dtype=torch.float64, requires_grad=True)
    tz = (tx * ty).tanh() * tx + ty
    tz.backward(retain_graph=True)
    tz.backward()
    assert close(x.grad, tx.grad.item()) and close(y.grad, ty.grad.item())

    zero_grad([x, y])
    assert (x.grad, y.grad) == (0.0, 0.0)
    z.backward()
    assert (x.grad, y.grad, h.grad) == first


def test_backward_of_two_losses_sums_their_gradients() -> None:
    x = Value(2.0)
    shared = x * x  # interior node used by both losses
    (shared * 3.0).backward()
    assert shared.grad == 3.0
    (shared + 1.0).backward()
    assert x.grad == 6.0 * 2.0 + 1.0 * 4.0  # 3 * 2x + 1 * 2x
    assert shared.grad == 1.0  # interior: the latest pass only


def test_backward_on_a_leaf_accumulates_the_seed() -> None:
    x = Value(4.0)
    x.backward()
    x.backward()
    assert x.grad == 2.0


def test_module_zero_grad() -> None:
    model = MLP(3, [4, 2], rng=random.Random(0))
    squared_error(model([1.0, -1.0, 0.5]), [0.0, 1.0]).backward()
    assert any(p.grad != 0.0 for p in model.parameters())
    model.zero_grad()
    assert all(p.grad == 0.0 for p in model.parameters())


@pytest.mark.parametrize(
    ("make", "ref"),
    [
        (lambda v: 2.0**v, lambda t: 2.0**t),  # found by the random trees: 2 ** 1024
        (lambda v: v**2.0, lambda t: t**2.0),
        (lambda v: (-v) ** 3.0, lambda t: (-t) ** 3.0),  # an odd power of a negative
    ],
)
def test_powers_too_large_for_a_float_are_infinite_like_torch(
    make: Callable[[Any], Any], ref: Callable[[Any], Any]
) -> None:
    """Python's ``**`` raises OverflowError; IEEE floats (and PyTorch) give infinity."""
    torch = pytest.importorskip("torch")
    x = 1024.0 if make(Value(1.0)).data == 2.0 else 1e200
    v = Value(x)
    out = make(v)
    out.backward()
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    r = ref(t)
    r.backward()
    assert t.grad is not None
    assert out.data == r.item() and math.isinf(out.data)
    assert v.grad == t.grad.item()


# ------------------------------------------------------------------------ errors
@pytest.mark.parametrize("x", [0.0, -1.0, -1e-300])
def test_log_of_non_positive_raises(x: float) -> None:
    with pytest.raises(ValueError, match=r"Value\.log.*positive"):
        Value(x).log()


def test_value_exponent_is_rejected_with_a_hint() -> None:
    with pytest.raises(TypeError, match=r"exponent must be a plain number.*\.log\(\)\)\.exp\(\)"):
        Value(2.0) ** Value(3.0)  # type: ignore[operator]


@pytest.mark.parametrize(
    ("thunk", "error", "pattern"),
    [
        (lambda: Value(-8.0) ** 0.5, ValueError, "negative base"),
        (lambda: Value(0.0) ** -1, ZeroDivisionError, "negative power"),
        (lambda: (-2.0) ** Value(1.0), ValueError, "base must be positive"),
        (lambda: Value(1.0) / Value(0.0), ZeroDivisionError, "division by zero"),
        (lambda: Value(1.0) / 0, ZeroDivisionError, "division by zero"),
        (lambda: 1.0 / Value(0.0), ZeroDivisionError, "division by zero"),
        (lambda: Value(1000.0).exp(), OverflowError, r"exp\(1000\.0\) overflows"),
    ],
    ids=["neg-base", "zero-neg-pow", "rpow-neg-base", "div0", "div0-const", "rdiv0", "exp"],
)
def test_domain_errors(thunk: Callable[[], Any], error: type[Exception], pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        thunk()


@pytest.mark.parametrize(
    "thunk",
    [
        lambda: Value(1.0) + "2",
        lambda: "2" + Value(1.0),
        lambda: Value(1.0) - None,
        lambda: None - Value(1.0),
        lambda: Value(1.0) * [2.0],
        lambda: [2.0] * Value(1.0),
        lambda: Value(1.0) / "x",
        lambda: "x" / Value(1.0),
        lambda: Value(1.0) ** "2",
        lambda: "2" ** Value(1.0),
        lambda: Value(1.0) + complex(1, 1),
    ],
)
def test_non_numeric_operands_raise_type_error(thunk: Callable[[], Any]) -> None:
    with pytest.raises(TypeError, match="Value"):  # Python names the operand types
        thunk()


@pytest.mark.parametrize("bad", ["3", None, [1.0], complex(1, 0)])
def test_constructor_rejects_non_numbers(bad: Any) -> None:
    with pytest.raises(TypeError, match="real number"):
        Value(bad)


def test_constructor_rejects_value_and_bad_label() -> None:
    with pytest.raises(TypeError, match="real number"):
        Value(Value(1.0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="label must be a str"):
        Value(1.0, label=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cannot add str"):
        Value.sum([Value(1.0), "2"])  # type: ignore[list-item]


def test_numeric_types_are_accepted() -> None:
    np = pytest.importorskip("numpy")
    assert Value(3).data == 3.0 and type(Value(3).data) is float
    assert (Value(1.0) + fractions.Fraction(1, 4)).data == 1.25
    assert (Value(1.0) * np.float32(2.0)).data == 2.0
    assert (Value(1.0) + True).data == 2.0
    assert type(Value(np.int64(7)).data) is float


def test_introspection_and_repr() -> None:
    a, b = Value(2.0, "a"), Value(5.0, "b")
    c = a * b
    assert c.parents == (a, b) and c.op == "*" and c.local_grads == (5.0, 2.0)
    assert a.is_leaf and not c.is_leaf and a.op == ""
    assert (a**2).op == "**2"
    assert repr(a) == "Value(data=2.0, grad=0.0, label='a')"
    assert repr(c) == "Value(data=10.0, grad=0.0, op='*')"
    assert not hasattr(a, "__dict__")  # __slots__: no per-node dict


# ------------------------------------------------------------------------ nn
def test_mlp_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    model = MLP(3, [4, 2], activation="tanh", rng=random.Random(1))
    x, target = [0.5, -1.0, 2.0], [1.0, -1.0]
    loss = squared_error(model(x), target)
    loss.backward()

    l1, l2 = model.layers
    w1 = torch.tensor([[p.data for p in n.w] for n in l1.neurons], dtype=torch.float64)
    b1 = torch.tensor([n.b.data for n in l1.neurons], dtype=torch.float64)
    w2 = torch.tensor([[p.data for p in n.w] for n in l2.neurons], dtype=torch.float64)
    b2 = torch.tensor([n.b.data for n in l2.neurons], dtype=torch.float64)
    for t in (w1, b1, w2, b2):
        t.requires_grad_()
    tx = torch.tensor(x, dtype=torch.float64)
    out = (w1 @ tx + b1).tanh() @ w2.T + b2
    tloss = ((out - torch.tensor(target, dtype=torch.float64)) ** 2).sum()
    tloss.backward()

    assert close(loss.data, tloss.item())
    ref = [*w1.grad.flatten(), *b1.grad, *w2.grad.flatten(), *b2.grad]
    ours = [p.grad for n in l1.neurons for p in n.w]
    ours += [n.b.grad for n in l1.neurons]
    ours += [p.grad for n in l2.neurons for p in n.w]
    ours += [n.b.grad for n in l2.neurons]
    assert len(ours) == len(ref) == 26
    for g, r in zip(ours, ref, strict=True):
        assert close(g, r.item())


def test_nn_structure_and_determinism() -> None:
    model = MLP(5, [16, 5], rng=random.Random(0))
    assert len(model.parameters()) == 5 * 16 + 16 + 16 * 5 + 5
    again = MLP(5, [16, 5], rng=random.Random(0))
    assert [p.data for p in model.parameters()] == [p.data for p in again.parameters()]
    assert [layer.neurons[0].activation for layer in model.layers] == ["relu", "linear"]
    assert all(-1.0 <= p.data <= 1.0 for p in model.parameters())
    assert len(Layer(2, 3).parameters()) == 9
    with pytest.raises(ValueError, match="expects 2 inputs, got 3"):
        Neuron(2)([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="unknown activation"):
        Neuron(2, activation="gelu")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="2 outputs but 1 targets"):
        squared_error([Value(1.0), Value(2.0)], [1.0])


def test_neuron_activations_hand_derived() -> None:
    for activation, expected in [
        ("linear", -1.75),
        ("relu", 0.0),
        ("tanh", math.tanh(-1.75)),
        ("sigmoid", 1 / (1 + math.exp(1.75))),
    ]:
        n = Neuron(2, activation=activation, rng=random.Random(0))  # type: ignore[arg-type]
        n.w[0].data, n.w[1].data, n.b.data = 0.5, -1.0, 0.25
        assert n([2.0, 3.0]).data == pytest.approx(expected, rel=1e-15)


def test_sgd_step() -> None:
    p, q = Value(1.0), Value(-2.0)
    p.grad, q.grad = 0.5, -4.0
    sgd_step([p, q], lr=0.25)
    assert (p.data, q.data) == (0.875, -1.0)


# ------------------------------------------------------------------------ doctests
@pytest.mark.parametrize(
    "module",
    [
        "minigrad",
        "minigrad.scalar",
        "minigrad.nn",
        "minigrad.viz",
        "minigrad.examples.tense",
        "minigrad.examples.grammar_graph",
    ],
)
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


# ------------------------------------------------------------- hypothesis fuzzing
# A random expression tree over three variables is evaluated twice, with Values and with
# float64 torch tensors, through the same operators; gradients must agree. Trees whose
# evaluation leaves the domain of an op (or nears a kink or pole) are rejected.

UNARY = ("neg", "exp", "log", "relu", "tanh", "sigmoid")
BINARY = ("add", "sub", "mul", "truediv")
POWERS = (2, 3, -1, 0.5, 1.5, -2.0)

leaf = st.integers(0, 2).map(lambda i: ("var", i))
constant = st.floats(-3.0, 3.0, allow_nan=False).map(lambda c: ("const", c))


def extend(children: st.SearchStrategy[tuple[Any, ...]]) -> st.SearchStrategy[tuple[Any, ...]]:
    return st.one_of(
        st.tuples(st.sampled_from(UNARY), children),
        st.tuples(st.just("pow"), children, st.sampled_from(POWERS)),
        st.tuples(st.just("rpow"), st.sampled_from((2.0, 0.5, math.e)), children),
        st.tuples(st.sampled_from(BINARY), children, children),
        st.tuples(st.sampled_from(BINARY), children, constant),
        st.tuples(st.sampled_from(BINARY), constant, children),
    )


trees = st.recursive(leaf, extend, max_leaves=10)


class Rejected(Exception):
    """The tree leaves the region where a float64 gradient check is meaningful."""


def evaluate(tree: tuple[Any, ...], env: Sequence[Any], check: bool) -> Any:
    """Evaluate ``tree`` on Values (``check=True`` guards domains) or on torch tensors."""
    kind = tree[0]
    if kind == "var":
        return env[tree[1]]
    if kind == "const":
        return tree[1]
    if kind == "pow":
        x = evaluate(tree[1], env, check)
        p = tree[2]
        if check and (abs(x.data) < 1e-2 or (x.data < 0 and not float(p).is_integer())):
            raise Rejected
        out = x**p
    elif kind == "rpow":
        out = tree[1] ** evaluate(tree[2], env, check)
    elif kind in UNARY:
        x = evaluate(tree[1], env, check)
        if check and (
            (kind == "log" and x.data < 1e-2)
            or (kind == "relu" and abs(x.data) < 1e-6)
            or (kind == "exp" and x.data > 20)
        ):
            raise Rejected
        out = -x if kind == "neg" else getattr(x, kind)()
    else:
        a, b = (evaluate(t, env, check) for t in tree[1:])
        if kind == "truediv":
            denominator = b.data if isinstance(b, Value) else b
            if check and abs(denominator) < 1e-2:
                raise Rejected
            out = a / b
        else:
            out = {"add": a + b, "sub": a - b, "mul": a * b}[kind]
    if check and isinstance(out, Value) and not abs(out.data) < 1e4:
        raise Rejected
    return out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(tree=trees, xs=st.lists(st.floats(-2.0, 2.0), min_size=3, max_size=3))
def test_random_expression_trees_match_torch(tree: tuple[Any, ...], xs: list[float]) -> None:
    torch = pytest.importorskip("torch")
    values = [Value(x) for x in xs]
    try:
        out = evaluate(tree, values, check=True)
    except Rejected:
        assume(False)
    out.backward()

    tensors = [torch.tensor(x, dtype=torch.float64, requires_grad=True) for x in xs]
    ref = evaluate(tree, tensors, check=False)
    ref.backward()
    assert close(out.data, ref.item()), (tree, xs)
    for v, t in zip(values, tensors, strict=True):
        expected = 0.0 if t.grad is None else t.grad.item()
        assert close(v.grad, expected), (tree, xs, v.grad, expected)
