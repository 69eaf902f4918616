"""The Tensor Ops Lab page, driven by Streamlit's ``AppTest`` (no browser): every view,
every expression, live recomputation on slider changes, the step-by-step backward pass,
the backend selector and the error path.

Streamlit is the optional ``lab`` extra. The numpy session installs it
(``backends/numpy.toml``) and runs these tests once; the other backend sessions neither
install nor run them (the page's logic is tested there by ``test_lab_core.py``).
"""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

pytest.importorskip(
    "streamlit",
    reason="streamlit (the 'lab' extra) is not installed: the lab's AppTest tests run in the "
    "numpy session only (backends/numpy.toml installs it); pip install 'minitorch[lab]'",
)
from streamlit.testing.v1 import AppTest

from minitorch.lab import APP, core

pytestmark = pytest.mark.backend_independent
TIMEOUT = 120  # the first run imports every installed backend


@pytest.fixture
def at() -> AppTest:
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    app.run()
    assert not app.exception
    return app


def _graphs(at: AppTest) -> list[str]:
    return [el.proto.spec for el in at.get("graphviz_chart")]


def _text(at: AppTest) -> str:
    return "\n".join(m.value for m in at.markdown)


def _md(label: str) -> str:
    """A label as the page's Markdown tables write it."""
    return label.replace("[", "\\[").replace("]", "\\]")


def _cell(text: str) -> str:
    """Text as the page's Markdown tables escape it."""
    for ch in "\\|*_`[]<>":
        text = text.replace(ch, "\\" + ch)
    return text


def _fmt(v) -> str:
    """A value as the page's node table writes it (6 significant digits, signed)."""
    a = np.asarray(v, dtype=np.float64)
    if a.ndim == 0:
        return f"{float(a):.6g}"
    return "[" + ", ".join(f"{float(x):.6g}" for x in a.reshape(-1)) + "]"


def _click(at: AppTest, key: str) -> AppTest:
    at.button(key=key).click().run()
    assert not at.exception, at.exception
    return at


def _select_expr(at: AppTest, key: str) -> None:
    at.selectbox(key="expr").select(key).run()
    assert not at.exception


def _progress(at: AppTest) -> list[str]:
    return [el.proto.text for el in at.get("progress")]


def test_initial_page_shows_the_forward_pass(at):
    assert [b.label for b in at.button] == [
        "Forward pass",
        "Backward pass",
        "Backward step by step",
        "Simulate error",
    ]
    assert [b.proto.type for b in at.button] == ["primary", "secondary", "secondary", "secondary"]
    assert [s.label for s in at.sidebar.slider] == ["a", "b", "c"]
    assert at.selectbox(key="expr").options == [e.title for e in core.EXPRESSIONS.values()]
    assert at.selectbox(key="backend").options == core.backend_choices()
    assert at.selectbox(key="backend").value == "numpy"
    # a graph at once: no button to find first
    assert _graphs(at) == [core.run("tanh", core.default_values("tanh")).dot]
    assert f"Output = **{math.tanh(-0.25):.6g}**" in _text(at)


@pytest.mark.parametrize("key", sorted(core.EXPRESSIONS))
def test_forward_draws_the_graph(at, key):
    _select_expr(at, key)
    assert [s.label for s in at.sidebar.slider] == [
        lbl for s in core.EXPRESSIONS[key].inputs for lbl in s.labels
    ]
    (dot,) = _graphs(at)  # the view follows the expression
    expected = core.run(key, core.default_values(key))
    assert dot == expected.dot
    for spec in core.EXPRESSIONS[key].inputs:
        assert f'label="{spec.name}\\n' in dot
    assert f"Output = **{expected.output:.6g}**" in _text(at)
    assert not at.success  # no gradient check before backward
    text = _text(at)
    for d in expected.locals:  # the local derivatives table
        assert f"| {_cell(d.symbol)} | {_cell(d.formula or '—')} | {_cell(d.value_text)} |" in text


def test_forward_tanh_value(at):
    _click(at, "forward")
    # defaults a = 0.5, b = -1, c = 0.25: tanh(-0.25)
    assert f"Output = **{math.tanh(-0.25):.6g}**" in _text(at)
    text = _text(at)
    assert "| a\\*b | intermediate | a \\* b | -0.5 | — |" in text
    assert "| out | output | tanh(a\\*b + c) | -0.244919 | — |" in text
    assert "| ∂(a\\*b)/∂a | b | -1 |" in text  # ∂(a*b)/∂a = b = -1


@pytest.mark.parametrize("key", sorted(core.EXPRESSIONS))
def test_backward_fills_gradients_and_checks_them(at, key):
    _select_expr(at, key)
    _click(at, "backward")
    (dot,) = _graphs(at)
    res = core.run(key, core.default_values(key), backward=True)
    assert "grad" in dot and dot == res.dot
    (ok,) = at.success
    assert ok.value.startswith("Gradients match finite differences")
    text = _text(at)
    for row in res.checks:
        assert f"| {_md(row.label)} | {row.autograd:.10g} | {row.finite_diff:.10g} |" in text
    for n in res.nodes:  # signed gradients in the table
        assert f"| {_cell(n.name)} | {n.kind} |" in text
        assert f"| {_cell(_fmt(n.value))} | {_cell(_fmt(n.grad))} |" in text
    (chain,) = at.code  # the chain rule, one line per tensor
    assert chain.value == "\n".join(r.text for r in res.chain)


def test_backward_tanh_hand_derived(at):
    _click(at, "backward")
    y = math.tanh(0.5 * -1.0 + 0.25)
    d = 1.0 - y * y
    text = _text(at)
    for label, g in (("a", d * -1.0), ("b", d * 0.5), ("c", d)):
        assert f"| {label} | {g:.10g} | {g:.10g} |" in text
    assert f"| a | leaf | — | 0.5 | {-d:.6g} |" in text  # signed: -0.94, not 0.94
    (chain,) = at.code
    assert f"dL/da = dL/d(a*b) · ∂(a*b)/∂a = {d:.4g} × -1 = {-d:.4g}" in chain.value


@pytest.mark.parametrize(
    ("key", "parts", "wrong"),
    [
        ("tanh", ("'a'", "input 0 of mul, is at version 1; expected version 0"), 1),
        ("neuron", ("'x'", "input 1 of matmul, is at version 1; expected version 0"), 1),
        ("cross_entropy", ("'p'", "output of softmax, is at version 1; expected version 0"), 3),
    ],
)
def test_simulate_error_shows_error_and_naive_numbers(at, key, parts, wrong):
    _select_expr(at, key)
    _click(at, "forward")
    _click(at, "simulate")
    (err,) = at.error
    assert err.value.startswith("RuntimeError: one of the tensors needed for gradient computation")
    for p in parts:
        assert p in err.value
    text = _text(at)
    assert text.count("| WRONG |") == wrong
    demo = core.simulate_error(key, core.default_values(key))
    for r in demo.rows:
        assert f"| {r.correct:.10g} | {r.naive:.10g} |" in text
    (code,) = at.code
    assert code.value == core.EXPRESSIONS[key].tamper_code


def test_simulate_error_tanh_hand_derived(at):
    _click(at, "simulate")
    y = math.tanh(0.5 * -1.0 + 0.25)
    # mul saved a = 0.5; after a += 1 a naive engine uses 1.5 for d/db
    assert f"| b | {(1 - y * y) * 0.5:.10g} | {(1 - y * y) * 1.5:.10g} | WRONG |" in _text(at)


def test_slider_change_recomputes_live(at):
    _click(at, "backward")
    at.slider(key="tanh.a").set_value(1.0).run()  # no button pressed after this
    assert not at.exception
    vals = {"a": 1.0, "b": -1.0, "c": 0.25}
    res = core.run("tanh", vals, backward=True)
    assert _graphs(at) == [res.dot]
    y = math.tanh(1.0 * -1.0 + 0.25)
    assert f"Output = **{y:.6g}**" in _text(at)
    (ok,) = at.success  # the backward pass was shown: it is run again, checked again
    assert ok.value.startswith("Gradients match finite differences")
    d = 1.0 - y * y
    assert f"| a | {-d:.10g} | " in _text(at)
    (chain,) = at.code
    assert f"dL/db = dL/d(a*b) · ∂(a*b)/∂b = {d:.4g} × 1 = {d:.4g}" in chain.value
    # forward only: the slider updates the forward pass, no gradients appear
    _click(at, "forward")
    at.slider(key="tanh.c").set_value(-0.5).run()
    assert _graphs(at) == [core.run("tanh", {**vals, "c": -0.5}).dot]
    assert f"Output = **{math.tanh(-1.5):.6g}**" in _text(at)
    assert not at.success and not at.code


def test_vector_slider_and_target_change(at):
    _select_expr(at, "neuron")
    _click(at, "backward")
    at.slider(key="neuron.x[1]").set_value(2.0).run()
    x = [1.0, 2.0, -1.5]
    w = [0.8, -0.5, 0.3]
    assert f"Output = **{max(0.0, float(np.dot(w, x)) + 0.6):.6g}**" in _text(at)
    assert _graphs(at) == [core.run("neuron", {"w": w, "x": x, "b": 0.6}, backward=True).dot]
    _select_expr(at, "cross_entropy")
    at.selectbox(key="cross_entropy.target").select(2).run()
    z = np.array([1.0, -0.5, 0.3])
    p = np.exp(z) / np.exp(z).sum()
    assert f"Output = **{-math.log(p[2]):.6g}**" in _text(at)
    for label, g in zip("abc", p - np.eye(3)[2], strict=True):
        assert f"| {label} | {g:.10g} |" in _text(at)


def test_switching_expression_keeps_the_view(at):
    _click(at, "backward")
    _select_expr(at, "neuron")
    assert _graphs(at) == [core.run("neuron", core.default_values("neuron"), backward=True).dot]
    assert at.success


# ---------------------------------------------------------------------------- step by step
def _step_heading(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Step ")) or ""


@pytest.mark.parametrize("key", sorted(core.EXPRESSIONS))
def test_step_by_step_backward(at, key):
    _select_expr(at, key)
    _click(at, "steps")
    walk = core.backward_steps(key, core.default_values(key))
    n = len(walk.steps)
    assert _progress(at) == [f"Step 0 of {n}"]
    assert _graphs(at) == [walk.dots[0]]
    assert "Before the first step" in _text(at)
    assert at.button(key="reset").disabled and not at.button(key="next").disabled
    for p in range(1, n + 1):
        _click(at, "next")
        step = walk.steps[p - 1]
        assert _progress(at) == [f"Step {p} of {n}"]
        assert _step_heading(at).startswith(f"**Step {p} of {n}: `{step.title}`**")
        assert _graphs(at) == [walk.dots[p]]  # current orange, done green, rest grey
        text = _text(at)
        assert (
            f"Incoming gradient `{core.grad_symbol(step.name)}` = **{core.fmt(step.upstream)}**"
            in (text)
        )
        (code,) = at.code  # what this step adds to each input's gradient
        assert code.value == "\n".join(c.text for c in step.contributions)
        for c in step.contributions:
            assert f"| {_cell(c.local.input)} | {_cell(c.local.text)} |" in text
        assert bool(at.success) == (p == n)
    assert at.button(key="next").disabled
    assert "pending" not in walk.states(n).values()
    (done,) = at.success
    assert done.value.startswith(f"Backward is complete after {n} steps")
    real = core.run(key, core.default_values(key), backward=True)
    text = _text(at)
    for n_ in real.nodes:  # every gradient so far = backward()'s, signed
        assert f"| {_cell(n_.name)} | {_cell(core.fmt(n_.grad))} |" in text
    _click(at, "reset")
    assert _progress(at) == [f"Step 0 of {n}"] and _graphs(at) == [walk.dots[0]]


def test_step_by_step_follows_the_sliders(at):
    _click(at, "steps")
    _click(at, "next")
    _click(at, "next")
    at.slider(key="tanh.b").set_value(2.0).run()  # live: same step, new numbers
    assert not at.exception
    vals = {"a": 0.5, "b": 2.0, "c": 0.25}
    walk = core.backward_steps("tanh", vals)
    assert _progress(at) == ["Step 2 of 3"]
    assert _graphs(at) == [walk.dots[2]]
    d = 1.0 - math.tanh(0.5 * 2.0 + 0.25) ** 2
    assert f"**{d:.4g}**" in _text(at)  # the incoming gradient of a*b + c
    _select_expr(at, "neuron")  # another graph: its steps start over
    assert _progress(at) == ["Step 0 of 3"]
    _click(at, "steps")
    _click(at, "next")
    assert _progress(at) == ["Step 1 of 3"]
    _click(at, "steps")  # the button starts the walk over
    assert _progress(at) == ["Step 0 of 3"]


@pytest.mark.parametrize("backend", core.backend_choices())
def test_backend_selector_same_graph_and_gradients(at, backend):
    at.selectbox(key="backend").select(backend).run()
    _click(at, "backward")
    res = core.run("tanh", core.default_values("tanh"), backend, backward=True)
    ref = core.run("tanh", core.default_values("tanh"), "numpy", backward=True)
    assert f"computed on `{backend}`" in _text(at)
    assert _graphs(at) == [res.dot]
    tol = 1e-12 if res.dtype == "float64" else 1e-6
    np.testing.assert_allclose(
        [r.autograd for r in res.checks], [r.autograd for r in ref.checks], atol=tol
    )
    _click(at, "steps")  # the walk-through on this backend, to its end
    walk = core.backward_steps("tanh", core.default_values("tanh"), backend)
    for _ in walk.steps:
        _click(at, "next")
    assert _graphs(at) == [walk.dots[-1]]
    (done,) = at.success
    assert done.value.startswith("Backward is complete after 3 steps")


def test_a_failing_computation_is_shown_not_raised(at, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("backend exploded")

    monkeypatch.setattr(core, "run", boom)
    _click(at, "forward")
    (err,) = at.error
    assert "Forward pass on backend 'numpy' failed: RuntimeError: backend exploded" in err.value
    assert _graphs(at) == []


ACTIONS = ("forward", "backward", "steps", "simulate", "next", "reset", "slider", "expr")
ACTIONS += ("backend",)


def _act(at: AppTest, action: str, rng: random.Random) -> None:
    if action in ("next", "reset"):
        buttons = [b for b in at.button if b.key == action and not b.disabled]
        if buttons:
            _click(at, action)
    elif action in ("forward", "backward", "steps", "simulate"):
        _click(at, action)
    elif action == "slider":  # always a new value, so the inputs really change
        s = rng.choice(list(at.sidebar.slider))
        s.set_value(rng.choice([v / 20 for v in range(-60, 61) if v / 20 != s.value])).run()
    else:
        box = at.selectbox(key=action if action == "backend" else "expr")
        keys = core.backend_choices() if action == "backend" else list(core.EXPRESSIONS)
        current = keys[box.index]
        box.select(rng.choice([k for k in keys if k != current])).run()
    assert not at.exception, f"{action}: {at.exception}"


def test_any_sequence_of_clicks(at):
    rng = random.Random(7)
    seqs = list(itertools.permutations(ACTIONS, 3))
    rng.shuffle(seqs)
    view = "forward"
    for seq in seqs[:15]:
        for action in seq:
            _act(at, action, rng)
            if action in ("forward", "backward", "steps", "simulate"):
                view = action
            graphs, errors = _graphs(at), [e.value for e in at.error]
            # always exactly one graph, for the current inputs; an error only when simulated
            assert len(graphs) == 1, action
            assert all(e.startswith("RuntimeError: one of the tensors") for e in errors)
            assert bool(errors) == (view == "simulate")
            assert bool(_progress(at)) == (view == "steps")
