"""The Tensor Ops Lab page, driven by Streamlit's ``AppTest`` (no browser): every button,
every expression, slider changes, the backend selector and the error path.

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


def _click(at: AppTest, key: str) -> AppTest:
    at.button(key=key).click().run()
    assert not at.exception, at.exception
    return at


def _select_expr(at: AppTest, key: str) -> None:
    at.selectbox(key="expr").select(key).run()
    assert not at.exception


def test_initial_page(at):
    assert [b.label for b in at.button] == [
        "Run forward pass",
        "Run backward pass",
        "Simulate error",
    ]
    assert [s.label for s in at.sidebar.slider] == ["a", "b", "c"]
    assert at.selectbox(key="expr").options == [e.title for e in core.EXPRESSIONS.values()]
    assert at.selectbox(key="backend").options == core.backend_choices()
    assert at.selectbox(key="backend").value == "numpy"
    assert _graphs(at) == []
    assert "Run forward pass" in _text(at)


@pytest.mark.parametrize("key", sorted(core.EXPRESSIONS))
def test_forward_draws_the_graph(at, key):
    _select_expr(at, key)
    assert [s.label for s in at.sidebar.slider] == [
        lbl for s in core.EXPRESSIONS[key].inputs for lbl in s.labels
    ]
    _click(at, "forward")
    (dot,) = _graphs(at)
    expected = core.run(key, core.default_values(key))
    assert dot == expected.dot
    for spec in core.EXPRESSIONS[key].inputs:
        assert f'label="{spec.name}\\n' in dot
    assert f"Output = **{expected.output:.6g}**" in _text(at)
    assert not at.success  # no gradient check before backward


def test_forward_tanh_value(at):
    _click(at, "forward")
    # defaults a = 0.5, b = -1, c = 0.25: tanh(-0.25)
    assert f"Output = **{math.tanh(-0.25):.6g}**" in _text(at)
    assert "| a\\*b | intermediate | mul | -0.5 | — |" in _text(at)


@pytest.mark.parametrize("key", sorted(core.EXPRESSIONS))
def test_backward_fills_gradients_and_checks_them(at, key):
    _select_expr(at, key)
    _click(at, "forward")
    _click(at, "backward")
    (dot,) = _graphs(at)
    assert "grad" in dot and dot == core.run(key, core.default_values(key), backward=True).dot
    (ok,) = at.success
    assert ok.value.startswith("Gradients match finite differences")
    text = _text(at)
    res = core.run(key, core.default_values(key), backward=True)
    for row in res.checks:
        assert f"| {_md(row.label)} | {row.autograd:.10g} | {row.finite_diff:.10g} |" in text


def test_backward_tanh_hand_derived(at):
    _click(at, "backward")  # backward without a forward first: it runs both
    y = math.tanh(0.5 * -1.0 + 0.25)
    d = 1.0 - y * y
    text = _text(at)
    for label, g in (("a", d * -1.0), ("b", d * 0.5), ("c", d)):
        assert f"| {label} | {g:.10g} | {g:.10g} |" in text


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


def test_slider_change_clears_the_graph(at):
    _click(at, "backward")
    assert len(_graphs(at)) == 1
    at.slider(key="tanh.a").set_value(1.0).run()
    assert not at.exception
    assert _graphs(at) == [] and not at.success
    assert any("the old graph was cleared" in i.value for i in at.info)
    _click(at, "forward")
    assert f"Output = **{math.tanh(1.0 * -1.0 + 0.25):.6g}**" in _text(at)
    assert not at.info  # fresh again


def test_vector_slider_and_target_change(at):
    _select_expr(at, "neuron")
    _click(at, "forward")
    at.slider(key="neuron.x[1]").set_value(2.0).run()
    assert _graphs(at) == []
    _click(at, "backward")
    x = [1.0, 2.0, -1.5]
    w = [0.8, -0.5, 0.3]
    assert f"Output = **{max(0.0, float(np.dot(w, x)) + 0.6):.6g}**" in _text(at)
    _select_expr(at, "cross_entropy")
    _click(at, "backward")
    at.selectbox(key="cross_entropy.target").select(2).run()
    assert _graphs(at) == []
    _click(at, "backward")
    z = np.array([1.0, -0.5, 0.3])
    p = np.exp(z) / np.exp(z).sum()
    assert f"Output = **{-math.log(p[2]):.6g}**" in _text(at)


def test_switching_expression_clears_the_graph(at):
    _click(at, "forward")
    _select_expr(at, "neuron")
    assert _graphs(at) == []


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


def test_a_failing_computation_is_shown_not_raised(at, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("backend exploded")

    monkeypatch.setattr(core, "run", boom)
    _click(at, "forward")
    (err,) = at.error
    assert "forward on backend 'numpy' failed: RuntimeError: backend exploded" in err.value
    assert _graphs(at) == []


ACTIONS = ("forward", "backward", "simulate", "slider", "expr", "backend")


def _act(at: AppTest, action: str, rng: random.Random) -> None:
    if action in ("forward", "backward", "simulate"):
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
    for seq in seqs[:12]:
        for action in seq:
            _act(at, action, rng)
            graphs, errors = _graphs(at), [e.value for e in at.error]
            # a graph shows only after a click, and an error only from the simulation
            assert len(graphs) <= 1
            assert all(e.startswith("RuntimeError: one of the tensors") for e in errors)
            if action in ("slider", "expr", "backend"):
                assert graphs == [] and errors == []
            else:
                assert len(graphs) == 1
