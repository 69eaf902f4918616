"""The Tensor Ops Lab's logic (no Streamlit needed): every expression's values and
gradients against PyTorch float64, the finite-difference check, the in-place error demo
against hand-derived "naive engine" numbers, and the ``minitorch lab`` command.

These run on the backend under test (``--backend``), on its default device.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from minitorch.lab import core

EXPRS = sorted(core.EXPRESSIONS)

# values away from relu's kink and with distinct logits
VALUES = {
    "tanh": {"a": 0.7, "b": -1.3, "c": 0.4},
    "neuron": {"w": [0.8, -0.5, 0.3], "x": [1.2, 0.5, -1.5], "b": 0.9},
    "cross_entropy": {"a": 1.1, "b": -0.4, "c": 0.3},
}


@pytest.fixture
def name(backend):
    """The backend under test, on its default device, as the lab uses it."""
    try:
        core.lab_backend(backend.name)
    except Exception as exc:  # pragma: no cover - e.g. CuPy without a GPU
        pytest.skip(f"{backend.name}: the lab cannot load it on its default device: {exc}")
    return backend.name


def _torch_graph(key: str, vals: dict, target: int = 0):
    """The same expression in PyTorch float64, with every intermediate's gradient."""
    torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")
    leaves = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in vals.items()}
    if key == "tanh":
        ab = leaves["a"] * leaves["b"]
        s = ab + leaves["c"]
        inner = {"a*b": ab, "a*b + c": s, "out": torch.tanh(s)}
    elif key == "neuron":
        wx = leaves["w"] @ leaves["x"]
        z = wx + leaves["b"]
        inner = {"w·x": wx, "w·x + b": z, "out": torch.relu(z)}
    else:
        z = torch.stack([leaves["a"], leaves["b"], leaves["c"]])
        p = torch.softmax(z, dim=0)
        pt = p[target]
        lp = torch.log(pt)
        inner = {"logits": z, "p": p, f"p[{target}]": pt, f"log p[{target}]": lp, "loss": -lp}
    for t in inner.values():
        t.retain_grad()
    list(inner.values())[-1].backward()
    return leaves, inner


@pytest.mark.parametrize("key", EXPRS)
def test_forward_and_backward_match_torch(key, name):
    vals = VALUES[key]
    res = core.run(key, vals, name, backward=True)
    leaves, inner = _torch_graph(key, vals)
    assert res.backend == name and res.dtype == "float64"
    assert res.output == pytest.approx(float(list(inner.values())[-1].detach()), abs=1e-12)
    ref = {**leaves, **inner}
    assert [n.name for n in res.nodes] == list(ref)
    for node in res.nodes:
        np.testing.assert_allclose(node.value, ref[node.name].detach().numpy(), atol=1e-12)
        assert node.grad is not None, f"{node.name}: no gradient after backward"
        np.testing.assert_allclose(node.grad, ref[node.name].grad.numpy(), atol=1e-12)
    kinds = {n.name: n.kind for n in res.nodes}
    assert [k for k, v in kinds.items() if v == "leaf"] == list(leaves)
    assert kinds[list(inner)[-1]] == "output"


@pytest.mark.parametrize("key", EXPRS)
def test_gradient_check_rows(key, name):
    res = core.run(key, VALUES[key], name, backward=True)
    leaves, _ = _torch_graph(key, VALUES[key])
    expected = np.concatenate([t.grad.numpy().reshape(-1) for t in leaves.values()])
    labels = [lbl for s in core.EXPRESSIONS[key].inputs for lbl in s.labels]
    assert [r.label for r in res.checks] == labels
    np.testing.assert_allclose([r.autograd for r in res.checks], expected, atol=1e-12)
    # central differences with h = 1e-6 in float64: error ~ h^2 f''' + eps/h ~ 1e-10
    np.testing.assert_allclose([r.finite_diff for r in res.checks], expected, atol=1e-7)
    assert 0.0 < res.max_abs_err < 1e-7


def test_finite_differences_hand_derived(name):
    # tanh(a*b + c) at a*b + c = 0: d/da = b, d/db = a, d/dc = 1
    fd = core.finite_differences("tanh", {"a": 2.0, "b": 3.0, "c": -6.0}, name)
    assert float(fd["a"]) == pytest.approx(3.0, abs=1e-7)
    assert float(fd["b"]) == pytest.approx(2.0, abs=1e-7)
    assert float(fd["c"]) == pytest.approx(1.0, abs=1e-7)


@pytest.mark.parametrize("key", EXPRS)
def test_forward_only_has_no_gradients(key, name):
    res = core.run(key, VALUES[key], name)
    assert not res.backward_done and res.checks == ()
    assert all(n.grad is None for n in res.nodes)
    for spec in core.EXPRESSIONS[key].inputs:
        assert f'label="{spec.name}\\n' in res.dot, f"leaf {spec.name} missing from the graph"
    grad_line = re.compile(r"\\n(grad|‖grad‖₂) ")  # a gradient's line in a box
    assert not grad_line.search(res.dot)
    after = core.run(key, VALUES[key], name, backward=True)
    assert len(grad_line.findall(after.dot)) == len(res.nodes)  # every node's gradient


@pytest.mark.parametrize("key", EXPRS)
def test_graph_boxes_show_signed_gradients(key, name):
    """A one-element gradient is drawn with its sign (-0.94 reads -0.94, not 0.94); a
    larger one by its norm, labelled as such."""
    res = core.run(key, VALUES[key], name, backward=True)
    leaves, inner = _torch_graph(key, VALUES[key])
    negative = 0
    for n, t in {**leaves, **inner}.items():
        g = t.grad.numpy()
        line = f"grad {g:.4g}" if g.size == 1 else f"‖grad‖₂ {np.linalg.norm(g):.4g}"
        assert f"\\n{line}" in res.dot, (n, line)
        negative += g.size == 1 and g < 0
    # where the sign matters (the neuron's one-element gradients are all positive here)
    assert negative > 0 or key == "neuron"


def test_neuron_relu_off_gives_zero_gradients(name):
    vals = {"w": [1.0, 1.0, 1.0], "x": [-1.0, -1.0, -1.0], "b": 0.5}  # w·x + b = -2.5
    res = core.run("neuron", vals, name, backward=True)
    assert res.output == 0.0
    assert all(r.autograd == 0.0 and abs(r.finite_diff) < 1e-9 for r in res.checks)


def test_cross_entropy_target_option(name):
    vals = VALUES["cross_entropy"]
    z = np.array([vals["a"], vals["b"], vals["c"]])
    p = np.exp(z) / np.exp(z).sum()
    for t in (0, 1, 2):
        res = core.run("cross_entropy", vals, name, backward=True, options={"target": t})
        assert res.output == pytest.approx(-math.log(p[t]), abs=1e-12)
        np.testing.assert_allclose([r.autograd for r in res.checks], p - np.eye(3)[t], atol=1e-12)
        assert f"p[{t}]" in [n.name for n in res.nodes]


# ---------------------------------------------------------------------------- the error demo
def _tanh_naive(a, b, c):
    y = math.tanh(a * b + c)
    d = 1.0 - y * y
    # mul saved a; it became a + 1: d/db reads it, d/da (= b) and d/dc do not
    return [d * b, d * (a + 1.0), d]


def _neuron_naive(w, x, b):
    on = float(np.dot(w, x) + b > 0.0)
    x_mod = np.array(x, dtype=float)
    x_mod[0] = 0.0  # matmul saved x; x[0] = 0 changes d/dw only
    return [*(on * x_mod), *(on * np.array(w)), on]


def _ce_naive(a, b, c, t=0):
    z = np.array([a, b, c])
    p = np.exp(z) / np.exp(z).sum()
    g = np.zeros(3)
    g[t] = -1.0 / p[t]  # log saved p[t] (a separate tensor): unaffected
    q = p + 0.1  # softmax saved its output p, which became p + 0.1
    return list(q * (g - np.sum(g * q)))


NAIVE = {"tanh": _tanh_naive, "neuron": _neuron_naive, "cross_entropy": _ce_naive}
MESSAGES = {
    "tanh": ("the tensor 'a' of shape ()", "input 0 of mul, is at version 1; expected version 0"),
    "neuron": (
        "the tensor 'x' of shape (3,)",
        "input 1 of matmul, is at version 1; expected version 0",
    ),
    "cross_entropy": (
        "the tensor 'p' of shape (3,)",
        "output of softmax, is at version 1; expected version 0",
    ),
}


@pytest.mark.parametrize("key", EXPRS)
def test_simulate_error(key, name):
    vals = VALUES[key]
    demo = core.simulate_error(key, vals, name)
    assert demo.error_type == "RuntimeError"
    assert demo.message.startswith("one of the tensors needed for gradient computation has been")
    for part in MESSAGES[key]:
        assert part in demo.message
    leaves, _ = _torch_graph(key, vals)
    correct = np.concatenate([t.grad.numpy().reshape(-1) for t in leaves.values()])
    np.testing.assert_allclose([r.correct for r in demo.rows], correct, atol=1e-12)
    naive = NAIVE[key](*vals.values())
    np.testing.assert_allclose([r.naive for r in demo.rows], naive, atol=1e-12)
    wrong = [r.label for r in demo.rows if r.wrong]
    expected_wrong = {"tanh": ["b"], "neuron": ["w[0]"], "cross_entropy": ["a", "b", "c"]}
    assert wrong == expected_wrong[key]
    assert demo.tamper_code and demo.tamper_why and "digraph" in demo.dot


@pytest.mark.parametrize("key", EXPRS)
def test_naive_backward_equals_backward_without_modification(key, name):
    expr = core.EXPRESSIONS[key]
    be = core.lab_backend(name)
    leaves, inner = core._build(expr, VALUES[key], be, None)
    root = list(inner.values())[-1]
    naive = core.naive_backward(root, core.snapshot([*leaves.values(), *inner.values()]))
    root.backward()
    for t in leaves.values():
        np.testing.assert_array_equal(be.to_numpy(naive[id(t)]), be.to_numpy(t.grad))


def test_naive_backward_reads_modified_leaf():
    import minitorch

    x = minitorch.tensor([1.0, 2.0], requires_grad=True, dtype="float64")
    y = minitorch.tensor([3.0, -1.0], requires_grad=True, dtype="float64")
    z = (x * y).sum()
    before = core.snapshot([x, y, z])
    with minitorch.no_grad():
        y.mul_(10.0)
    naive = core.naive_backward(z, before)
    np.testing.assert_array_equal(x.backend.to_numpy(naive[id(x)]), [30.0, -10.0])  # y now
    np.testing.assert_array_equal(x.backend.to_numpy(naive[id(y)]), [1.0, 2.0])  # x intact
    with pytest.raises(RuntimeError, match="input 1 of mul, is at version 1; expected version 0"):
        z.backward()


def test_naive_backward_needs_a_graph():
    import minitorch

    with pytest.raises(RuntimeError, match="naive_backward: the tensor has no graph"):
        core.naive_backward(minitorch.tensor(1.0), [])


# ---------------------------------------------------------------------------- inputs, backends
def test_bad_inputs_name_the_problem():
    with pytest.raises(ValueError, match="unknown lab expression 'nope'; choose one of tanh"):
        core.run("nope", {})
    with pytest.raises(ValueError, match="input 'w' needs 3 value"):
        core.run("neuron", {"w": [1.0], "x": [1.0, 2.0, 3.0], "b": 0.0})
    with pytest.raises(ValueError, match="no value for input 'c'"):
        core.run("tanh", {"a": 1.0, "b": 2.0})
    with pytest.raises(ValueError, match=r"option target=5 must be one of \(0, 1, 2\)"):
        core.run("cross_entropy", VALUES["cross_entropy"], options={"target": 5})


def test_default_values_and_labels():
    for key, expr in core.EXPRESSIONS.items():
        vals = core.default_values(key)
        assert list(vals) == [s.name for s in expr.inputs]
        for s in expr.inputs:
            assert len(vals[s.name]) == len(s.labels) == max(s.size, 1)
        core.run(key, vals)  # the defaults build
    assert core.EXPRESSIONS["neuron"].inputs[0].labels == ["w[0]", "w[1]", "w[2]"]


def test_backend_choices():
    import minitorch

    choices = core.backend_choices()
    assert choices[0] == "numpy"
    assert set(choices) <= set(minitorch.available_backends())


def test_values_are_not_mutated(name):
    vals = {"w": [0.8, -0.5, 0.3], "x": [1.2, 0.5, -1.5], "b": 0.9}
    snapshot = {k: list(v) if isinstance(v, list) else v for k, v in vals.items()}
    core.simulate_error("neuron", vals, name)
    core.run("neuron", vals, name, backward=True)
    assert vals == snapshot


# ---------------------------------------------------------------------------- the command
def test_lab_command_without_streamlit(monkeypatch, capsys):
    import importlib.util

    import minitorch.lab as lab

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "streamlit" else real(n, *a)
    )
    assert lab.main([]) == 1
    assert "pip install 'minitorch[lab]'" in capsys.readouterr().err


def test_lab_command_runs_streamlit_on_localhost(monkeypatch):
    import importlib.util

    import minitorch.cli
    import minitorch.lab as lab

    calls = []
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: object() if n == "streamlit" else real(n, *a)
    )
    # POSIX: the command becomes the server (execve); elsewhere a child process
    monkeypatch.setattr(os, "execve", lambda path, cmd, env: calls.append((cmd, env)))
    monkeypatch.setattr(subprocess, "call", lambda cmd, env: calls.append((cmd, env)) or 0)
    assert minitorch.cli.main(["lab", "--port", "8600"]) == 0
    ((cmd, env),) = calls
    assert cmd[:5] == [sys.executable, "-m", "streamlit", "run", str(lab.APP)]
    opts = dict(zip(cmd[5::2], cmd[6::2], strict=True))
    assert opts["--server.address"] == "127.0.0.1"
    assert opts["--server.port"] == "8600"
    assert opts["--server.headless"] == "true"
    assert "JAX_ENABLE_X64" in env  # float64 on the JAX backend
    assert lab.APP.is_file()
