"""The Tensor Ops Lab's chain-rule views (no Streamlit needed): local derivatives against
PyTorch's Jacobians and hand-derived formulas, the step-by-step backward pass against the
real ``backward()``, finite differences and PyTorch's intermediate gradients, the
highlighted graphs, and the readable names the lab writes.

These run on the backend under test (``--backend``), on its default device.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from test_lab_core import VALUES, _torch_graph

from minitorch.engine import run_backward
from minitorch.lab import core
from minitorch.tensor import Tensor

EXPRS = sorted(core.EXPRESSIONS)
EXACT = {"atol": 1e-12, "rtol": 0.0}


@pytest.fixture
def name(backend):
    """The backend under test, on its default device, as the lab uses it."""
    try:
        core.lab_backend(backend.name)
    except Exception as exc:  # pragma: no cover - e.g. CuPy without a GPU
        pytest.skip(f"{backend.name}: the lab cannot load it on its default device: {exc}")
    return backend.name


def _real_backward(key: str, vals: dict, name: str, options=None) -> dict[str, np.ndarray]:
    """Every leaf's .grad after the engine's own backward() on a fresh graph."""
    be = core.lab_backend(name)
    leaves, inner = core._build(core.EXPRESSIONS[key], vals, be, options)
    list(inner.values())[-1].backward()
    return {n: np.asarray(be.to_numpy(t.grad), dtype=np.float64) for n, t in leaves.items()}


def _summed(walk: core.Walkthrough) -> dict[str, np.ndarray]:
    """The sum of every contribution each tensor received, over all the steps."""
    out: dict[str, np.ndarray] = {}
    for step in walk.steps:
        for c in step.contributions:
            name = c.local.input
            out[name] = out[name] + c.value if name in out else c.value
    return out


# ---------------------------------------------------------------------------- the walk
@pytest.mark.parametrize("key", EXPRS)
def test_steps_sum_to_what_backward_computes(key, name):
    walk = core.backward_steps(key, VALUES[key], name)
    real = _real_backward(key, VALUES[key], name)
    summed = _summed(walk)
    assert list(walk.leaves) == list(real)
    for leaf, grad in real.items():
        np.testing.assert_allclose(summed[leaf], grad, **EXACT)
        np.testing.assert_allclose(walk.steps[-1].grads[leaf], grad, **EXACT)
        np.testing.assert_allclose(walk.backward_grads[leaf], grad, **EXACT)


@pytest.mark.parametrize("key", EXPRS)
def test_steps_match_finite_differences(key, name):
    walk = core.backward_steps(key, VALUES[key], name)
    fd = core.finite_differences(key, VALUES[key], name)
    summed = _summed(walk)
    for leaf in walk.leaves:  # h = 1e-6 in float64: error ~ 1e-10
        np.testing.assert_allclose(summed[leaf], fd[leaf], atol=1e-7, rtol=0.0)


@pytest.mark.parametrize("key", EXPRS)
def test_every_step_matches_torch(key, name):
    walk = core.backward_steps(key, VALUES[key], name)
    leaves, inner = _torch_graph(key, VALUES[key])
    ref = {**leaves, **inner}
    assert sorted(s.name for s in walk.steps) == sorted(inner)  # every op, once
    for step in walk.steps:  # the gradient flowing into the op: dL/d(its output)
        np.testing.assert_allclose(step.upstream, ref[step.name].grad.numpy(), **EXACT)
    for n, g in walk.steps[-1].grads.items():  # every gradient at the end
        np.testing.assert_allclose(g, ref[n].grad.numpy(), **EXACT)


@pytest.mark.parametrize("key", EXPRS)
def test_steps_are_in_topological_order(key, name):
    walk = core.backward_steps(key, VALUES[key], name)
    at = {s.name: s.index for s in walk.steps}
    assert [s.index for s in walk.steps] == list(range(1, len(walk.steps) + 1))
    assert walk.steps[0].name == walk.output_name == core.run(key, VALUES[key], name).nodes[-1].name
    for step in walk.steps:
        for c in step.contributions:
            if c.local.input in at:  # an op's output: visited after every op that used it
                assert at[c.local.input] > step.index, (step.name, c.local.input)
    # the forward pass's order, numbered: the output's op ran last
    assert sorted(s.node_id for s in walk.steps) == list(range(len(walk.steps)))
    assert walk.steps[0].node_id == len(walk.steps) - 1


@pytest.mark.parametrize("key", EXPRS)
def test_steps_visit_the_ops_in_the_engines_order(key, name):
    be = core.lab_backend(name)
    _, inner = core._build(core.EXPRESSIONS[key], VALUES[key], be, None)
    walk = core.backward_steps(key, VALUES[key], name)
    assert [s.name for s in walk.steps] == _engine_order(inner)


def _engine_order(inner: dict) -> list[str]:
    """The names of the ops in the order the engine's backward visits them."""
    root = list(inner.values())[-1]
    visited = []

    def record(node):  # the engine calls this once per op, as it visits it
        visited.append(node)
        return node.backend.xp, node.saved

    seed = root.backend.xp.ones_like(root.data)
    run_backward([root], [seed], retain_graph=True, vjp_args=record)
    names = {id(t.grad_fn): n for n, t in inner.items()}
    return [names[id(n)] for n in visited]


def _scalar_leaf(be, value: float, name: str) -> Tensor:
    x = Tensor._make(be.from_numpy(np.asarray(value), be.dtype, be.device), be, None)
    x.requires_grad = True
    x.name = name
    return x


def test_diamond_graph_in_the_engines_order(name):
    # u = x * x feeds two branches, tanh(u) and exp(u), joined by a product
    be = core.lab_backend(name)
    x = _scalar_leaf(be, 0.3, "x")
    u = x * x
    t, e = u.tanh(), u.exp()
    out = t * e
    inner = {"u": u, "t": t, "e": e, "out": out}
    for n, v in inner.items():
        v.name = n
    walk = core._backprop({"x": x}, inner)
    order = [s.name for s in walk.steps]
    assert order == _engine_order(inner)
    assert order[0] == "out" and order[-1] == "u"  # u only after both of its consumers
    (rule_u,) = [r for r in core._chain(walk, {"x": x}) if r.name == "u"]
    assert len(rule_u.terms) == 2  # dL/du = dL/dt · ∂t/∂u + dL/de · ∂e/∂u
    uu = 0.09
    expected = math.exp(uu) * (1 - math.tanh(uu) ** 2) + math.tanh(uu) * math.exp(uu)
    assert float(rule_u.grad) == pytest.approx(expected, abs=1e-12)
    x.grad = None  # _engine_order's pass accumulated into it
    out.backward()
    np.testing.assert_allclose(walk.steps[-1].grads["x"], be.to_numpy(x.grad), **EXACT)
    assert float(walk.steps[-1].grads["x"]) == pytest.approx(expected * 2 * 0.3, abs=1e-12)


@pytest.mark.parametrize("key", EXPRS)
def test_step_grads_accumulate_the_contributions(key, name):
    walk = core.backward_steps(key, VALUES[key], name)
    assert dict(walk.grads(0)) == {walk.output_name: 1.0}
    for p, step in enumerate(walk.steps, start=1):
        before, after = walk.grads(p - 1), walk.grads(p)
        added = {c.local.input: c.value for c in step.contributions}
        assert set(after) == set(before) | set(added)
        for n, g in after.items():
            expected = before.get(n, 0.0) + added.get(n, 0.0)
            np.testing.assert_allclose(g, expected, **EXACT)
        np.testing.assert_allclose(step.upstream, before[step.name], **EXACT)
        for c in step.contributions:
            np.testing.assert_allclose(c.total, after[c.local.input], **EXACT)
            np.testing.assert_allclose(c.upstream, step.upstream, **EXACT)


@pytest.mark.parametrize("key", EXPRS)
def test_contribution_is_upstream_times_local_derivative(key, name):
    walk = core.backward_steps(key, VALUES[key], name)
    for step in walk.steps:
        for c in step.contributions:  # g · J, contracted over the output's axes
            expected = np.tensordot(c.upstream, c.local.jacobian, axes=c.upstream.ndim)
            np.testing.assert_allclose(c.value, expected, **EXACT)


def test_fan_out_sums_every_path(name):
    # x is used three times: y = x * x, z = y + x; dL/dx = (1 - tanh(z)^2)(2x + 1)
    be = core.lab_backend(name)
    x = _scalar_leaf(be, 1.5, "x")
    y = x * x
    z = y + x
    out = z.tanh()
    inner = {"y": y, "z": z, "out": out}
    for n, t in inner.items():
        t.name = n
    walk = core._backprop({"x": x}, inner)
    rule = core._chain(walk, {"x": x})[-1]
    d = 1.0 - math.tanh(1.5 * 1.5 + 1.5) ** 2
    assert float(rule.grad) == pytest.approx(d * (2 * 1.5 + 1), abs=1e-12)
    assert [c.local.symbol for c in rule.terms] == ["∂z/∂x", "∂y/∂x", "∂y/∂x"]
    assert rule.text == (
        f"dL/dx = dL/dz · ∂z/∂x + dL/dy · ∂y/∂x + dL/dy · ∂y/∂x = "
        f"{d:.4g} × 1 + {d:.4g} × 1.5 + {d:.4g} × 1.5 = {d * 4:.4g}"
    )
    out.backward()
    np.testing.assert_allclose(float(rule.grad), float(be.to_numpy(x.grad)), **EXACT)


# ---------------------------------------------------------------------------- local derivatives
def _torch_ops(key: str, target: int = 0):
    """Each op of an expression as a PyTorch function of its inputs, by output name."""
    torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")
    if key == "tanh":
        return {"a*b": lambda a, b: a * b, "a*b + c": lambda s, c: s + c, "out": torch.tanh}
    if key == "neuron":
        return {"w·x": lambda w, x: w @ x, "w·x + b": lambda s, b: s + b, "out": torch.relu}
    return {
        "logits": lambda *z: torch.stack(z),
        "p": lambda z: torch.softmax(z, dim=0),
        f"p[{target}]": lambda p: p[target],
        f"log p[{target}]": torch.log,
        "loss": lambda lp: -lp,
    }


@pytest.mark.parametrize("key", EXPRS)
def test_local_derivatives_match_torch_jacobians(key, name):
    torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")
    leaves, inner = _torch_graph(key, VALUES[key])
    values = {n: t.detach() for n, t in {**leaves, **inner}.items()}
    ops = _torch_ops(key)
    walk = core.backward_steps(key, VALUES[key], name)
    seen = 0
    for step in walk.steps:
        args = [values[c.local.input] for c in step.contributions]
        for k, c in enumerate(step.contributions):
            assert c.local.index == k and c.local.output == step.name

            def f(x, k=k, args=args, op=ops[step.name]):
                return op(*args[:k], x, *args[k + 1 :])

            ref = torch.autograd.functional.jacobian(f, args[k]).numpy()
            assert c.local.jacobian.shape == ref.shape
            np.testing.assert_allclose(c.local.jacobian, ref, **EXACT)
            seen += 1
    assert seen == sum(len(s.contributions) for s in walk.steps) >= 5


def test_local_derivatives_hand_derived(name):
    a, b, c = 0.7, -1.3, 0.4
    y = math.tanh(a * b + c)
    local = {d.symbol: d for d in core.local_derivatives("tanh", VALUES["tanh"], name)}
    assert list(local) == [
        "∂(a*b)/∂a",
        "∂(a*b)/∂b",
        "∂(a*b + c)/∂(a*b)",
        "∂(a*b + c)/∂c",
        "∂out/∂(a*b + c)",
    ]
    for symbol, value, formula in (
        ("∂(a*b)/∂a", b, "b"),
        ("∂(a*b)/∂b", a, "a"),
        ("∂(a*b + c)/∂c", 1.0, "1"),
        ("∂out/∂(a*b + c)", 1.0 - y * y, "1 - out²"),
    ):
        assert float(local[symbol].jacobian) == pytest.approx(value, abs=1e-12)
        assert local[symbol].formula == formula
    assert local["∂out/∂(a*b + c)"].text == f"∂out/∂(a*b + c) = 1 - out² = {1 - y * y:.4g}"
    assert local["∂(a*b + c)/∂c"].text == "∂(a*b + c)/∂c = 1"  # formula = number: once


def test_softmax_and_indexing_jacobians_hand_derived(name):
    vals = VALUES["cross_entropy"]
    z = np.array([vals["a"], vals["b"], vals["c"]])
    p = np.exp(z) / np.exp(z).sum()
    local = {d.symbol: d for d in core.local_derivatives("cross_entropy", vals, name)}
    soft = local["∂p/∂logits"]
    np.testing.assert_allclose(soft.jacobian, np.diag(p) - np.outer(p, p), **EXACT)
    assert soft.formula == "diag(p) - p·pᵀ"
    np.testing.assert_allclose(local["∂p[0]/∂p"].jacobian, [1.0, 0.0, 0.0], **EXACT)
    assert local["∂p[0]/∂p"].value_text == "[1, 0, 0]"  # a scalar's gradient: a row
    assert local["∂logits/∂b"].value_text == "[0, 1, 0]ᵀ"  # a vector of a scalar: a column
    assert local["∂(log p[0])/∂p[0]"].jacobian == pytest.approx(1 / p[0], abs=1e-12)
    assert local["∂loss/∂(log p[0])"].text == "∂loss/∂(log p[0]) = -1"


def test_relu_local_derivative_is_zero_when_off(name):
    vals = {"w": [1.0, 1.0, 1.0], "x": [-1.0, -1.0, -1.0], "b": 0.5}  # w·x + b = -2.5
    local = {d.symbol: d for d in core.local_derivatives("neuron", vals, name)}
    assert float(local["∂out/∂(w·x + b)"].jacobian) == 0.0
    np.testing.assert_allclose(local["∂(w·x)/∂w"].jacobian, vals["x"], **EXACT)
    np.testing.assert_allclose(local["∂(w·x)/∂x"].jacobian, vals["w"], **EXACT)


@pytest.mark.parametrize("key", EXPRS)
def test_run_shows_local_derivatives_before_backward(key, name):
    fwd = core.run(key, VALUES[key], name)
    bwd = core.run(key, VALUES[key], name, backward=True)
    assert fwd.chain == () and len(fwd.locals) == len(bwd.locals) >= 3
    for d0, d1 in zip(fwd.locals, bwd.locals, strict=True):
        assert d0.symbol == d1.symbol
        np.testing.assert_allclose(d0.jacobian, d1.jacobian, **EXACT)
    # forward only: every edge labelled with ∂, nothing flowed back yet
    assert fwd.dot.count('label="∂ =') == len(fwd.locals)
    assert "g·∂" not in fwd.dot
    assert bwd.dot.count("g·∂ =") == len(bwd.locals)


# ---------------------------------------------------------------------------- the chain rule
def test_chain_rule_text_tanh_hand_derived(name):
    a, b, c = 0.7, -1.3, 0.4
    d = 1.0 - math.tanh(a * b + c) ** 2
    res = core.run("tanh", VALUES["tanh"], name, backward=True)
    text = {r.name: r.text for r in res.chain}
    assert list(text) == ["out", "a*b + c", "a*b", "a", "b", "c"]
    assert text["out"].startswith("dL/dout = 1 ")
    assert text["a*b + c"] == f"dL/d(a*b + c) = dL/dout · ∂out/∂(a*b + c) = 1 × {d:.4g} = {d:.4g}"
    assert text["a"] == f"dL/da = dL/d(a*b) · ∂(a*b)/∂a = {d:.4g} × {b:.4g} = {d * b:.4g}"
    assert text["b"] == f"dL/db = dL/d(a*b) · ∂(a*b)/∂b = {d:.4g} × {a:.4g} = {d * a:.4g}"
    assert text["c"] == f"dL/dc = dL/d(a*b + c) · ∂(a*b + c)/∂c = {d:.4g} × 1 = {d:.4g}"
    assert d * b < 0 and f"= {d * b:.4g}" in text["a"]  # the sign is kept: -0.x, not 0.x


@pytest.mark.parametrize("key", EXPRS)
def test_chain_rule_grads_match_torch(key, name):
    res = core.run(key, VALUES[key], name, backward=True)
    leaves, inner = _torch_graph(key, VALUES[key])
    ref = {**leaves, **inner}
    assert sorted(r.name for r in res.chain) == sorted(ref)
    for r in res.chain:
        np.testing.assert_allclose(r.grad, ref[r.name].grad.numpy(), **EXACT)
        if r.terms:  # the sum of its terms
            np.testing.assert_allclose(sum(t.value for t in r.terms), r.grad, **EXACT)
            assert r.text.endswith(f"= {core.fmt(r.grad)}")
        else:  # the output: the seed
            assert r.name == res.nodes[-1].name and float(r.grad) == 1.0


def test_cross_entropy_steps_for_another_target(name):
    vals = VALUES["cross_entropy"]
    z = np.array([vals["a"], vals["b"], vals["c"]])
    p = np.exp(z) / np.exp(z).sum()
    walk = core.backward_steps("cross_entropy", vals, name, options={"target": 2})
    assert [s.title for s in walk.steps] == [
        "loss = -(log p[2])",
        "log p[2] = log(p[2])",
        "p[2]",
        "p = softmax(logits)",
        "logits = stack([a, b, c])",
    ]
    final = walk.steps[-1].grads
    np.testing.assert_allclose([final[k] for k in "abc"], p - np.eye(3)[2], **EXACT)


# ---------------------------------------------------------------------------- the graphs
def _fill(style: str) -> str:
    return f'fillcolor="{core.STEP_STYLES[style]["fillcolor"]}"'


@pytest.mark.parametrize("key", EXPRS)
def test_step_graphs_highlight_done_current_pending(key, name):
    walk = core.backward_steps(key, VALUES[key], name)
    n = len(walk.steps)
    assert len(walk.dots) == n + 1
    for p, dot in enumerate(walk.dots):
        assert dot.count(_fill("done")) == max(p - 1, 0)
        assert dot.count(_fill("current")) == (1 if p else 0)
        assert dot.count(_fill("pending")) == n - p
        states = walk.states(p)
        assert list(states.values()).count("pending") == n - p
        if p:
            assert states[walk.steps[p - 1].name] == "current"
        # every edge shows ∂; those of the ops done so far also what flowed back
        assert dot.count('label="∂ =') == sum(len(s.contributions) for s in walk.steps)
        assert dot.count("g·∂ =") == sum(len(s.contributions) for s in walk.steps[:p])
    assert "pending" not in walk.states(n).values()


def test_step_graphs_show_the_gradients_so_far(name):
    walk = core.backward_steps("tanh", VALUES["tanh"], name)
    d = 1.0 - math.tanh(0.7 * -1.3 + 0.4) ** 2
    leaf_a = re.compile(r'label="a\\n[^"]*"')
    assert "grad: none yet" in leaf_a.search(walk.dots[2]).group(0)  # a*b not visited
    after = leaf_a.search(walk.dots[3]).group(0)
    assert "none yet" not in after and f"\\ngrad {d * -1.3:.4g}" in after  # signed
    for p in range(4):  # the output's box holds the seed, 1, from the start
        assert re.search(r'label="out\\n[^"]*\\ngrad 1"', walk.dots[p])


# ---------------------------------------------------------------------------- readable names
def test_node_rows_say_what_a_person_writes(name):
    res = core.run("cross_entropy", VALUES["cross_entropy"], name)
    assert {n.name: n.expression for n in res.nodes} == {
        "a": "",
        "b": "",
        "c": "",
        "logits": "stack([a, b, c])",
        "p": "softmax(logits)",
        "p[0]": "p[0]",
        "log p[0]": "log(p[0])",
        "loss": "-(log p[0])",
    }
    assert [n.op for n in res.nodes if n.op] == ["stack", "softmax", "getitem", "log", "neg"]


@pytest.mark.parametrize("key", EXPRS)
def test_no_internal_jargon_in_the_lab_texts(key, name):
    walk = core.backward_steps(key, VALUES[key], name)
    res = core.run(key, VALUES[key], name, backward=True)
    texts = [n.expression for n in res.nodes] + [r.text for r in res.chain]
    texts += [d.text for d in res.locals]
    for s in walk.steps:
        texts += [s.title, *(c.text for c in s.contributions)]
    for text in texts:
        for jargon in ("getitem", "basic=", "Ellipsis", "axis=-1", "axis=0"):
            assert jargon not in text, text


@pytest.mark.parametrize(
    ("op", "args", "params", "expected"),
    [
        ("getitem", ["x"], {"key": (0, Ellipsis), "basic": True}, "x[0]"),
        ("getitem", ["x"], {"key": (slice(1, 3), 0), "basic": True}, "x[1:3, 0]"),
        ("getitem", ["x"], {"key": (Ellipsis, slice(None, None, 2))}, "x[..., ::2]"),
        ("getitem", ["a*b"], {"key": 1}, "(a*b)[1]"),
        ("mul", ["a", "b + c"], {}, "a * (b + c)"),
        ("sub", ["a + b", "c - d"], {}, "a + b - (c - d)"),
        ("add", ["a*b", "c"], {}, "a*b + c"),
        ("div", ["x", "y"], {}, "x / y"),
        ("matmul", ["W", "x"], {}, "W @ x"),
        ("neg", ["x"], {}, "-x"),
        ("sum", ["x"], {"axis": None, "keepdims": False}, "sum(x)"),
        ("sum", ["x"], {"axis": 1, "keepdims": True}, "sum(x, axis=1, keepdims=True)"),
        ("concat", ["x", "y"], {"axis": 1}, "concat([x, y], axis=1)"),
        ("myop", ["x"], {"alpha": 0.5}, "myop(x, alpha=0.5)"),
    ],
)
def test_op_expression(op, args, params, expected):
    assert core.op_expression(op, args, params) == expected


def test_fmt_and_grad_symbol():
    assert core.fmt(-0.94001) == "-0.94"
    assert core.fmt(-0.0) == "0"
    assert core.fmt(np.array([[1.0, -2.5], [1e-9, 3]])) == "[[1, -2.5], [1e-09, 3]]"
    assert core.grad_symbol("w·x + b") == "dL/d(w·x + b)"
    assert core.grad_symbol("x") == "dL/dx"
