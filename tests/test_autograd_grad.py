"""``minitorch.autograd.grad``: PyTorch's semantics and errors, second-order results
against PyTorch in float64 at 1e-7, and flat memory over many create_graph steps."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import numpy as np
import pytest
from helpers import tensor_f64 as _t
from helpers import torch_f64 as _tt

import minitorch
from minitorch import autograd, func
from minitorch.testing import assert_close

torch = pytest.importorskip("torch")


# ------------------------------------------------------------------ semantics
def test_results_are_tensors_and_grad_is_untouched(backend: Any) -> None:
    x = _t([1.0, 2.0], backend, requires_grad=True)
    (g,) = autograd.grad((x * x).sum(), x)
    assert isinstance(g, minitorch.Tensor) and not g.requires_grad
    assert g.dtype == x.dtype and str(g.device) == str(x.device)
    assert_close(g, [2.0, 4.0])
    assert x.grad is None


def test_backward_after_create_graph_keeps_grad_a_backend_array(backend: Any) -> None:
    x = _t([1.0, 2.0], backend, requires_grad=True)
    (g,) = autograd.grad((x**3).sum(), x, create_graph=True)
    (g * g).sum().backward()
    assert not isinstance(x.grad, minitorch.Tensor)
    assert backend.owns(x.grad) or hasattr(x.grad, "shape")
    # d/dx sum((3x^2)^2) = 36 x^3
    assert_close(backend.to_numpy(x.grad), 36 * np.array([1.0, 8.0]), rtol=1e-12)


def test_unused_input(backend: Any) -> None:
    x = _t([1.0], backend, requires_grad=True)
    z = _t([2.0], backend, requires_grad=True)
    y = (x * 3.0).sum()
    with pytest.raises(RuntimeError, match="was not used"):
        autograd.grad(y, [x, z], retain_graph=True)
    gx, gz = autograd.grad(y, [x, z], allow_unused=True, retain_graph=True)
    assert gz is None
    assert_close(gx, [3.0])
    gx, gz = autograd.grad(y, [x, z], materialize_grads=True)
    assert_close(gz, [0.0])


def test_errors_name_the_problem(backend: Any) -> None:
    x = _t([1.0, 2.0], backend, requires_grad=True)
    c = _t([1.0, 2.0], backend)
    with pytest.raises(RuntimeError, match=r"input 0 .* does not require grad"):
        autograd.grad((x * c).sum(), c)
    with pytest.raises(RuntimeError, match=r"output 0 .* does not require grad"):
        autograd.grad(c * 2.0, x)
    with pytest.raises(RuntimeError, match="only for outputs with one"):
        autograd.grad(x * 2.0, x)
    with pytest.raises(RuntimeError, match="gradient has shape"):
        autograd.grad(x * 2.0, x, _t([1.0], backend))
    with pytest.raises(ValueError, match=r"1 output.* but 2 grad_outputs"):
        autograd.grad([x * 2.0], x, [None, None])
    with pytest.raises(TypeError, match="input 0 must be a Tensor"):
        autograd.grad(x.sum(), [np.ones(2)])


def test_retain_graph_defaults_to_create_graph(backend: Any) -> None:
    x = _t([0.5], backend, requires_grad=True)
    y = x.exp().sum()
    autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="second time"):
        autograd.grad(y, x)
    y = x.exp().sum()
    autograd.grad(y, x, create_graph=True)
    (g,) = autograd.grad(y, x)  # retained
    assert_close(g, np.exp([0.5]), rtol=1e-12)


def test_several_outputs_and_grad_outputs(backend: Any) -> None:
    x = _t([1.0, 2.0], backend, requires_grad=True)
    a, b = x * x, x.exp()
    v = _t([1.0, -1.0], backend)
    (g,) = autograd.grad([a, b], x, [v, _t([0.5, 0.5], backend)])
    assert_close(g, 2 * np.array([1.0, 2.0]) * [1.0, -1.0] + 0.5 * np.exp([1.0, 2.0]), rtol=1e-12)


def test_repeated_and_intermediate_inputs(backend: Any) -> None:
    x = _t([1.0, 2.0], backend, requires_grad=True)
    h = x * 3.0
    y = (h * h).sum()
    g1, g2, gh = autograd.grad(y, [x, x, h])
    assert_close(g1, 18 * np.array([1.0, 2.0]))
    assert_close(g2, g1)
    assert_close(gh, 6 * np.array([1.0, 2.0]))


def test_only_the_part_leading_to_inputs_is_visited(backend: Any) -> None:
    """A branch that does not reach the inputs is not differentiated (nor freed)."""
    x = _t([1.0, 2.0], backend, requires_grad=True)
    w = _t([3.0, 4.0], backend, requires_grad=True)
    a = w.exp()
    y = (a * x).sum()
    (g,) = autograd.grad(y, x)  # frees what it visited; a's node was not visited
    assert_close(g, np.exp([3.0, 4.0]), rtol=1e-12)
    (gw,) = autograd.grad(a.sum(), w)
    assert_close(gw, np.exp([3.0, 4.0]), rtol=1e-12)


def test_create_graph_under_no_grad(backend: Any) -> None:
    x = _t([2.0], backend, requires_grad=True)
    y = (x**3).sum()
    with minitorch.no_grad():
        (g,) = autograd.grad(y, x, create_graph=True)
    assert g.requires_grad
    (h,) = autograd.grad(g.sum(), x)
    assert_close(h, [12.0])


def test_grad_outputs_that_require_grad(backend: Any) -> None:
    """The VJP is differentiable in the upstream gradient too (linear in it)."""
    x = _t([0.2, -0.4], backend, requires_grad=True)
    v = _t([1.5, 2.5], backend, requires_grad=True)
    (g,) = autograd.grad(x.tanh(), x, v, create_graph=True)
    (gv,) = autograd.grad(g.sum(), v)
    assert_close(gv, 1 - np.tanh([0.2, -0.4]) ** 2, rtol=1e-12)


@pytest.mark.parametrize("given", [[2, -3], [True, False], [0.1, 0.3]])
def test_a_gradient_of_another_dtype_is_cast_to_the_outputs_as_pytorch_does(
    backend: Any, given: list[Any]
) -> None:
    """An int64, bool or float32 gradient of a float64 output: PyTorch casts it to the
    output's dtype, and so does every backend (array-api-strict's arithmetic refuses to
    mix int64 and float64, NumPy's and torch's would promote)."""
    xs = [0.2, -0.4]
    seed = minitorch.tensor(given)
    tseed = torch.tensor(given, dtype=torch.float32 if isinstance(given[0], float) else None)
    tx = _tt(xs, requires_grad=True)
    ((tx.tanh() * tx) ** 2).backward(tseed)
    (tgg,) = torch.autograd.grad(
        torch.autograd.grad((tx.tanh() * tx) ** 2, tx, tseed, create_graph=True)[0].sum(), tx
    )

    x = _t(xs, backend, requires_grad=True)
    ((x.tanh() * x) ** 2).backward(seed)
    assert_close(x.grad, tx.grad.numpy(), rtol=1e-12)
    (g,) = autograd.grad((x.tanh() * x) ** 2, x, seed)
    assert g.dtype == x.dtype
    assert_close(g, tx.grad.numpy(), rtol=1e-12)
    (g,) = autograd.grad((x.tanh() * x) ** 2, x, seed, create_graph=True)
    (gg,) = autograd.grad(g.sum(), x)
    assert_close(gg, tgg.numpy(), rtol=1e-12)


def test_a_complex_gradient_of_a_real_output_is_refused(backend: Any) -> None:
    # PyTorch: "For complex Tensors, both grad_output and output are required to have
    # the same dtype"; a cast would drop the imaginary part
    x = _t([0.2, -0.4], backend, requires_grad=True)
    seed = minitorch.tensor([1 + 1j, 2 + 0j])
    with pytest.raises(TypeError, match=r"backward: the gradient has dtype complex128 but the"):
        (x * x).backward(seed)
    with pytest.raises(
        TypeError, match=r"autograd\.grad \(output 0\): the gradient has dtype complex128"
    ):
        autograd.grad(x * x, x, seed)
    assert x.grad is None


# ------------------------------------------------------------------ against PyTorch, float64
def _mlp_data(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "x": rng.standard_normal((5, 4)),
        "w1": rng.standard_normal((4, 3)) * 0.7,
        "b1": rng.standard_normal(3) * 0.1,
        "w2": rng.standard_normal((3, 3)) * 0.7,
        "b2": rng.standard_normal(3) * 0.1,
        "y": rng.integers(0, 3, 5),
    }


def test_hessian_of_mlp_cross_entropy_wrt_first_layer(backend: Any) -> None:
    d = _mlp_data()
    x, b1, w2, b2 = (_t(d[k], backend) for k in ("x", "b1", "w2", "b2"))
    y = minitorch.Tensor._make(
        backend.from_numpy(d["y"], backend.resolve_dtype("int64"), backend.device), backend, None
    )

    def loss(w1: Any) -> Any:
        h = minitorch.tanh(x @ w1 + b1)
        return minitorch.cross_entropy(h @ w2 + b2, y)

    hess = func.hessian(loss)(_t(d["w1"], backend))
    tx, tb1, tw2, tb2 = (_tt(d[k]) for k in ("x", "b1", "w2", "b2"))
    ty = torch.tensor(d["y"])

    def tloss(w1: Any) -> Any:
        h = torch.tanh(tx @ w1 + tb1)
        return torch.nn.functional.cross_entropy(h @ tw2 + tb2, ty)

    expected = torch.autograd.functional.hessian(tloss, _tt(d["w1"]))
    assert hess.shape == (4, 3, 4, 3)
    assert_close(hess, expected, atol=1e-7, rtol=1e-7)
    assert float(np.abs(expected.numpy()).max()) > 1e-2  # not a vacuous comparison


def test_jacobian_of_softmax(backend: Any) -> None:
    xs = np.array([[0.3, -1.2, 2.0, 0.1], [1.0, 0.5, -0.5, 0.0]])
    jac = func.jacobian(lambda t: minitorch.softmax(t, axis=-1))(_t(xs, backend))
    expected = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, dim=-1), _tt(xs))
    assert jac.shape == (2, 4, 2, 4)
    assert_close(jac, expected, atol=1e-7, rtol=1e-7)


def test_hessian_vector_product(backend: Any) -> None:
    rng = np.random.default_rng(3)
    a, xs, vs = rng.standard_normal((4, 4)), rng.standard_normal(4), rng.standard_normal(4)

    def f(t: Any, m: Any, lib: Any) -> Any:
        u = m @ t
        return (lib.sigmoid(u) * u).sum() + (t * t * t).sum() / 3.0

    x = _t(xs, backend, requires_grad=True)
    (g,) = autograd.grad(f(x, _t(a, backend), minitorch), x, create_graph=True)
    (hv,) = autograd.grad(g, x, _t(vs, backend))
    _, expected = torch.autograd.functional.hvp(lambda t: f(t, _tt(a), torch), _tt(xs), _tt(vs))
    assert_close(hv, expected, atol=1e-7, rtol=1e-7)
    # the same product as a jvp of the gradient (forward-over-reverse by double VJP)
    _, hv2 = func.jvp(
        func.grad(lambda t: f(t, _t(a, backend), minitorch)), (_t(xs, backend),), (_t(vs, backend),)
    )
    assert_close(hv2, expected, atol=1e-7, rtol=1e-7)


def _penalty(lib: Any, w: Any, b: Any, x: Any, mine: bool) -> Any:
    """A WGAN-GP style term: (||d critic / d x|| - 1)^2, differentiated again below."""
    critic = (lib.tanh(x @ w + b) ** 2).sum()
    if mine:
        (gx,) = autograd.grad(critic, x, create_graph=True)
    else:
        (gx,) = torch.autograd.grad(critic, x, create_graph=True)
    norm = ((gx * gx).sum() + 1e-12) ** 0.5
    return (norm - 1.0) ** 2


def test_gradient_penalty(backend: Any) -> None:
    rng = np.random.default_rng(7)
    ws, bs, xs = (
        rng.standard_normal((3, 2)),
        rng.standard_normal(2) * 0.1,
        rng.standard_normal((4, 3)),
    )
    w, b, x = _t(ws, backend, True), _t(bs, backend, True), _t(xs, backend, True)
    p = _penalty(minitorch, w, b, x, mine=True)
    gw, gb = autograd.grad(p, [w, b])
    tw, tb, tx = _tt(ws, True), _tt(bs, True), _tt(xs, True)
    tp = _penalty(torch, tw, tb, tx, mine=False)
    tgw, tgb = torch.autograd.grad(tp, [tw, tb])
    assert_close(p, tp, atol=1e-7, rtol=1e-7)
    assert_close(gw, tgw, atol=1e-7, rtol=1e-7)
    assert_close(gb, tgb, atol=1e-7, rtol=1e-7)
    # and through backward(): .grad stays a backend array
    _penalty(minitorch, w, b, x, mine=True).backward()
    assert_close(backend.to_numpy(w.grad), tgw, atol=1e-7, rtol=1e-7)


# ------------------------------------------------------------------ memory
def _live_nodes() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is autograd.Node)


def _penalty_step(backend: Any) -> Any:
    rng = np.random.default_rng(0)
    w = _t(rng.standard_normal((3, 2)), backend, True)
    b = _t(rng.standard_normal(2) * 0.1, backend, True)
    x = _t(rng.standard_normal((4, 3)), backend, True)

    def step() -> None:
        p = _penalty(minitorch, w, b, x, mine=True)
        gw, gb = autograd.grad(p, [w, b])
        with minitorch.no_grad():
            w.sub_(gw * 1e-3)
            b.sub_(gb * 1e-3)

    return step


def test_create_graph_loop_frees_every_graph(backend: Any) -> None:
    """Gradient-penalty steps in a loop (1,000 on NumPy, 100 on the slower backends):
    with the cycle collector off, no Node survives its step, so every graph is freed
    by reference counting alone (no reference cycles)."""
    step = _penalty_step(backend)
    step()
    gc.collect()
    gc.disable()
    try:
        nodes0 = _live_nodes()
        for _ in range(1000 if backend.name == "numpy" else 100):
            step()
        assert _live_nodes() == nodes0
    finally:
        gc.enable()


def test_create_graph_loop_traced_memory_is_flat(backend: Any) -> None:
    if backend.name != "numpy":
        pytest.skip(
            f"{backend.name}: tracemalloc traces Python allocations, the same on every "
            f"backend; measured in the numpy session (bench/bench_create_graph_memory.py "
            f"measures 1,000+ steps on any backend)"
        )
    step = _penalty_step(backend)
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        for _ in range(50):
            step()
        # fill CPython's free lists (up to 2,000 tuples of each small size), which would
        # otherwise look like growth
        junk = [(*range(k), i) for k in range(8) for i in range(4000)]
        del junk
        base, _ = tracemalloc.get_traced_memory()
        for _ in range(150):
            step()
        now, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        gc.enable()
    assert now - base < 16 * 1024, f"traced memory grew by {now - base} bytes over 150 steps"
