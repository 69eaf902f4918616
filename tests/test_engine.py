"""Engine semantics: when a graph is recorded, backward() and its arguments, deep
graphs, fan-out, accumulation, freeing saved values, broadcasting, version checks.

Expected values are hand-derived (closed forms) or computed by PyTorch in float64.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

import minitorch


def _grad(backend: Any, t: minitorch.Tensor) -> np.ndarray:
    assert t.grad is not None
    return np.asarray(backend.to_numpy(t.grad))


# ------------------------------------------------------------------ recording


def test_result_requires_grad_iff_an_input_does(backend: Any) -> None:
    a = minitorch.tensor([1.0, 2.0], requires_grad=True)
    b = minitorch.tensor([3.0, 4.0])
    ab, bb, ba = a * b, b * b, b + a
    assert ab.requires_grad and ab.grad_fn is not None and ab.grad_fn.name == "mul"
    assert ba.requires_grad and ba.grad_fn.name == "add"
    assert not bb.requires_grad and bb.grad_fn is None and bb.is_leaf
    assert not (a * 2.0).detach().requires_grad
    with minitorch.no_grad():
        c = a * b
    assert not c.requires_grad and c.grad_fn is None
    assert a.requires_grad  # no_grad does not change existing tensors


def test_no_node_records_no_saved_arrays(backend: Any) -> None:
    a = minitorch.tensor([1.0, 2.0])
    y = a.exp() * a
    assert y.grad_fn is None
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    z = (x * a).exp()
    assert z.grad_fn is not None and z.grad_fn.saved is not None


# ------------------------------------------------------------------ backward()


def test_backward_scalar_and_values(backend: Any) -> None:
    x = minitorch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    loss = (x * x * x).sum()  # d/dx = 3 x^2
    loss.backward()
    np.testing.assert_allclose(_grad(backend, x), [0.75, 3.0, 12.0], rtol=1e-15)


def test_backward_needs_scalar_or_gradient(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    with pytest.raises(RuntimeError, match=r"only for outputs with one element.*\(2,\)"):
        y.backward()
    with pytest.raises(RuntimeError, match=r"gradient has shape \(3,\).*\(2,\)"):
        y.backward(np.ones(3))
    assert x.grad is None
    # a one-element, not 0-d, output is fine
    (x.sum(keepdims=True) * 2.0).backward()
    np.testing.assert_array_equal(_grad(backend, x), [2.0, 2.0])


@pytest.mark.parametrize("kind", ["tensor", "backend array", "numpy array", "list"])
def test_backward_gradient_argument(backend: Any, kind: str) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    g_host = np.array([0.5, -3.0])
    g: Any = {
        "tensor": minitorch.tensor(g_host),
        "backend array": backend.from_numpy(g_host, backend.dtypes["float64"], backend.device),
        "numpy array": g_host,
        "list": [0.5, -3.0],
    }[kind]
    y.backward(g)
    np.testing.assert_array_equal(_grad(backend, x), 2.0 * np.array([1.0, 2.0]) * g_host)
    np.testing.assert_array_equal(g_host, [0.5, -3.0])  # the caller's gradient is untouched


def test_backward_on_tensor_without_grad(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        x.sum().backward()
    w = minitorch.tensor([1.0], requires_grad=True)
    with minitorch.no_grad():
        y = (w * 2.0).sum()
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.backward()


def test_backward_on_a_leaf(backend: Any) -> None:
    x = minitorch.tensor(3.0, requires_grad=True)
    x.backward()
    assert float(backend.to_numpy(x.grad)) == 1.0


def test_deep_chain_no_recursion_error(backend: Any) -> None:
    """100,000 ops deep: the iterative backward pass needs no recursion."""
    # JAX dispatches each op in ~0.1 ms: a 20,000-deep chain there (the engine's walk is
    # the same code on every backend; a recursive one would fail beyond ~1,000)
    n = 20_000 if backend.name == "jax" else 100_000
    c = 1.0001
    x = minitorch.tensor(1.5, requires_grad=True)
    y = x
    for _ in range(n):
        y = y * c
    # the same IEEE operations in Python floats: forward 1.5 * c * c ..., backward 1 * c * c ...
    fwd = 1.5
    bwd = 1.0
    for _ in range(n):
        fwd *= c
        bwd *= c
    assert math.isclose(bwd, c**n, rel_tol=1e-10)
    assert y.item() == fwd
    y.backward()
    assert float(backend.to_numpy(x.grad)) == bwd
    assert math.isclose(float(backend.to_numpy(x.grad)), math.exp(n * math.log(c)), rel_tol=1e-10)


def test_diamond_and_fan_out_accumulate(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 2.0  # two paths from x through a, one more directly
    b = a * a  # 4 x^2
    c = a + x  # 3 x
    out = (b * c + x).sum()  # 12 x^3 + x -> 36 x^2 + 1
    out.backward()
    np.testing.assert_array_equal(_grad(backend, x), 36.0 * np.array([1.0, 4.0, 9.0]) + 1.0)
    # the same tensor used twice as the inputs of one op
    y = minitorch.tensor([3.0], requires_grad=True)
    (y * y).sum().backward()
    np.testing.assert_array_equal(_grad(backend, y), [6.0])
    z = minitorch.tensor([3.0], requires_grad=True)
    (z + z + z).sum().backward()
    np.testing.assert_array_equal(_grad(backend, z), [3.0])


def test_grad_accumulates_across_backward_calls(backend: Any) -> None:
    x = minitorch.tensor([1.0, -2.0], requires_grad=True)
    (x * x).sum().backward()
    first = x.grad
    np.testing.assert_array_equal(_grad(backend, x), [2.0, -4.0])
    (x * 3.0).sum().backward()
    np.testing.assert_array_equal(_grad(backend, x), [5.0, -1.0])
    np.testing.assert_array_equal(backend.to_numpy(first), [2.0, -4.0])  # not written in place
    x.zero_grad()
    assert x.grad is None
    (x * 3.0).sum().backward()
    np.testing.assert_array_equal(_grad(backend, x), [3.0, 3.0])


def test_grad_is_not_shared_between_leaves(backend: Any) -> None:
    a = minitorch.tensor([1.0, 2.0], requires_grad=True)
    b = minitorch.tensor([3.0, 4.0], requires_grad=True)
    (a + b).sum().backward()
    np.testing.assert_array_equal(_grad(backend, a), [1.0, 1.0])
    (a * 5.0).sum().backward()
    np.testing.assert_array_equal(_grad(backend, a), [6.0, 6.0])
    np.testing.assert_array_equal(_grad(backend, b), [1.0, 1.0])


def test_saved_arrays_freed_after_backward(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    z = (y * x).sum()
    mul_node = z.grad_fn.next_nodes[0]
    assert mul_node.name == "mul" and mul_node.saved is not None
    z.backward()
    assert mul_node.saved is None
    assert y.grad_fn.saved is None
    with pytest.raises(RuntimeError, match=r"second time.*retain_graph=True"):
        z.backward()
    # a new graph built on the same leaves is fine
    (x * 2.0).sum().backward()


def test_retain_graph_allows_second_backward(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    z = (x.exp() * x).sum()  # d/dx = e^x (1 + x)
    expected = np.exp([1.0, 2.0]) * (1.0 + np.array([1.0, 2.0]))
    z.backward(retain_graph=True)
    assert z.grad_fn.saved is not None
    np.testing.assert_allclose(_grad(backend, x), expected, rtol=1e-15)
    z.backward()
    np.testing.assert_allclose(_grad(backend, x), 2.0 * expected, rtol=1e-15)
    with pytest.raises(RuntimeError, match="second time"):
        z.backward()


# ------------------------------------------------------------------ broadcasting


@pytest.mark.parametrize(
    ("sa", "sb"),
    [((3, 1), (1, 4)), ((), (2, 3)), ((2, 1, 3), (4, 3)), ((4, 3), (3,)), ((1, 1), (2, 5))],
)
def test_broadcast_gradients_reduce_to_input_shapes(backend: Any, sa: tuple, sb: tuple) -> None:
    rng = np.random.default_rng(0)
    a_np, b_np = rng.standard_normal(sa), rng.standard_normal(sb)
    a = minitorch.tensor(a_np, requires_grad=True)
    b = minitorch.tensor(b_np, requires_grad=True)
    out = a * b + a
    g = rng.standard_normal(np.broadcast_shapes(sa, sb))
    out.backward(g)
    # hand-derived: d/da = g * b + g and d/db = g * a, summed down to each input's shape
    ga, gb = _sum_to(g * b_np + g, sa), _sum_to(g * a_np, sb)
    assert a.grad.shape == sa and b.grad.shape == sb
    np.testing.assert_allclose(_grad(backend, a), ga, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(_grad(backend, b), gb, rtol=1e-13, atol=1e-14)


def _sum_to(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Sum the leading axes away, then the axes where ``shape`` has size 1."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1)
    return np.asarray(g.sum(axis=axes, keepdims=True) if axes else g)


def test_broadcast_against_torch(backend: Any) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a_np, b_np, c_np = (rng.standard_normal(s) for s in ((2, 1, 3), (4, 1), (3,)))
    a, b, c = (minitorch.tensor(v, requires_grad=True) for v in (a_np, b_np, c_np))
    ta, tb, tc = (torch.tensor(v, requires_grad=True) for v in (a_np, b_np, c_np))
    ((a * b - c) / (c * c + 1.0)).exp().sum().backward()
    ((ta * tb - tc) / (tc * tc + 1.0)).exp().sum().backward()
    for mine, ref in ((a, ta), (b, tb), (c, tc)):
        np.testing.assert_allclose(_grad(backend, mine), ref.grad.numpy(), rtol=1e-13)


# ------------------------------------------------------------------ versions, in-place


def test_modified_output_raises_naming_op_and_versions(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.add_(1.0)
    with pytest.raises(RuntimeError) as info:
        y.sum().backward()
    msg = str(info.value)
    assert "exp" in msg and "output" in msg, msg
    assert "is at version 1; expected version 0" in msg, msg
    assert "in-place" in msg, msg


def test_modified_input_raises_naming_op_and_input(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    b = minitorch.tensor([3.0, 4.0], requires_grad=True)
    a = x * 2.0  # a non-leaf
    z = a * b  # saves a and b
    a.mul_(3.0)
    with pytest.raises(RuntimeError) as info:
        z.sum().backward()
    msg = str(info.value)
    assert "mul" in msg and "input 0" in msg and "shape (2,)" in msg, msg
    assert "is at version 1; expected version 0" in msg, msg


def test_modified_named_tensor_is_named(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    c = minitorch.tensor([5.0, 6.0], name="scale")
    z = x * c
    c[0] = 0.0
    with pytest.raises(
        RuntimeError, match=r"'scale'.*input 1 of mul.*version 1; expected version 0"
    ):
        z.sum().backward()


def test_setitem_twice_reports_version_two(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y[0] = 1.0
    y[1] = 1.0
    with pytest.raises(RuntimeError, match="is at version 2; expected version 0"):
        y.sum().backward()


def test_saved_output_modified_under_no_grad_still_raises(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    with minitorch.no_grad():
        y.mul_(2.0)
        y.mul_(2.0)
    with pytest.raises(RuntimeError, match=r"output of exp, is at version 2; expected version 0"):
        y.sum().backward()


def test_inplace_on_unsaved_non_leaf_gives_torch_gradients(backend: Any) -> None:
    torch = pytest.importorskip("torch")
    x_np = np.array([0.5, -1.0, 2.0])
    x = minitorch.tensor(x_np, requires_grad=True)
    y = x * 2.0
    y += 1.0
    (y * y).sum().backward()
    tx = torch.tensor(x_np, requires_grad=True)
    ty = tx * 2.0
    ty += 1.0
    (ty * ty).sum().backward()
    np.testing.assert_array_equal(_grad(backend, x), tx.grad.numpy())
    np.testing.assert_array_equal(_grad(backend, x), 8.0 * x_np + 4.0)


def test_inplace_chain_on_non_leaf_against_torch(backend: Any) -> None:
    torch = pytest.importorskip("torch")
    x_np = np.array([[0.5, -1.0], [2.0, 0.25]])
    x = minitorch.tensor(x_np, requires_grad=True)
    y = x + 0.0
    y *= 3.0
    y[0, 1] = 7.0
    y.sub_(x, alpha=0.5)
    (y.tanh() * x).sum().backward()
    tx = torch.tensor(x_np, requires_grad=True)
    ty = tx + 0.0
    ty *= 3.0
    ty[0, 1] = 7.0
    ty.sub_(tx, alpha=0.5)
    (ty.tanh() * tx).sum().backward()
    np.testing.assert_allclose(_grad(backend, x), tx.grad.numpy(), rtol=1e-14, atol=1e-15)
    assert y.version == 3


def test_zero_and_fill_on_non_leaf_against_torch(backend: Any) -> None:
    torch = pytest.importorskip("torch")
    x_np = np.array([0.5, -1.0, 2.0])
    x = minitorch.tensor(x_np, requires_grad=True)
    a, b = x * 3.0, x * x
    a.zero_()
    b.fill_(2.0)
    (a * x + b * x + x).sum().backward()
    tx = torch.tensor(x_np, requires_grad=True)
    ta, tb = tx * 3.0, tx * tx
    ta.zero_()
    tb.fill_(2.0)
    (ta * tx + tb * tx + tx).sum().backward()
    np.testing.assert_array_equal(_grad(backend, x), tx.grad.numpy())
    np.testing.assert_array_equal(_grad(backend, x), [3.0, 3.0, 3.0])


def test_setitem_gradients_against_torch(backend: Any) -> None:
    torch = pytest.importorskip("torch")
    x_np = np.arange(6.0).reshape(2, 3) / 4.0
    v_np = np.array([1.5, -2.0, 0.5])
    x = minitorch.tensor(x_np, requires_grad=True)
    v = minitorch.tensor(v_np, requires_grad=True)
    y = x * 1.0
    y[1] = v * 2.0
    (y * y).sum().backward()
    tx = torch.tensor(x_np, requires_grad=True)
    tv = torch.tensor(v_np, requires_grad=True)
    ty = tx * 1.0
    ty[1] = tv * 2.0
    (ty * ty).sum().backward()
    np.testing.assert_array_equal(_grad(backend, x), tx.grad.numpy())
    np.testing.assert_array_equal(_grad(backend, v), tv.grad.numpy())


def test_version_counter_on_values_saved_after_modification(backend: Any) -> None:
    """Modifying before use is fine: the op saves the new version."""
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1.0
    a.add_(2.0)
    z = (a * a).sum()  # saved a at version 1
    z.backward()
    np.testing.assert_array_equal(_grad(backend, x), 2.0 * (np.array([1.0, 2.0]) + 2.0))
