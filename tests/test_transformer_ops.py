"""Explicit values of the ops a transformer needs (sin, cos, rsqrt, tril, triu,
masked_fill, embedding's scale_grad_by_freq) against PyTorch float64, on the backend
under test. The generic suites (test_catalog, test_hypothesis, test_higher_order) check
them from their Facts too (scale_grad_by_freq apart: its gradient is no derivative)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from helpers import tensor_f64, torch_f64

import minitorch
from minitorch import autograd
from minitorch.errors import OpError
from minitorch.testing import assert_close, gradgradcheck

torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")

INF = math.inf


def _bool_tensor(a: Any, backend: Any) -> minitorch.Tensor:
    arr = backend.from_numpy(
        np.asarray(a, dtype=bool), backend.resolve_dtype("bool"), backend.device
    )
    return minitorch.Tensor._make(arr, backend, None)


def _host(t: Any, backend: Any) -> np.ndarray:
    return np.asarray(backend.to_numpy(t.data if isinstance(t, minitorch.Tensor) else t))


# ------------------------------------------------------------------ tril, triu
@pytest.mark.parametrize("k", [-1, 0, 1])
@pytest.mark.parametrize("name", ["tril", "triu"])
def test_triangle_value_and_gradient(name: str, k: int, backend: Any) -> None:
    rng = np.random.default_rng(k + 10)
    a = rng.standard_normal((2, 3, 4))
    up = rng.standard_normal((2, 3, 4))
    x = tensor_f64(a, backend, requires_grad=True)
    y = getattr(minitorch, name)(x, k)
    y.backward(tensor_f64(up, backend))

    tx = torch_f64(a, requires_grad=True)
    ty = getattr(torch, name)(tx, diagonal=k)
    ty.backward(torch_f64(up))
    assert_close(y, ty, atol=0, rtol=0, msg=f"{name}(k={k}): ")
    assert_close(_host(x.grad, backend), tx.grad, atol=0, rtol=0, msg=f"{name}(k={k}) grad: ")
    assert str(y.device) == str(x.device)


def test_triangle_methods_and_keyword(backend: Any) -> None:
    a = np.arange(12.0).reshape(3, 4) + 1.0
    x = tensor_f64(a, backend)
    assert_close(x.tril(k=1), torch.tril(torch_f64(a), diagonal=1), atol=0, rtol=0)
    assert_close(x.triu(-1), torch.triu(torch_f64(a), diagonal=-1), atol=0, rtol=0)
    # a diagonal beyond the matrix keeps all, or nothing
    assert_close(x.tril(10), a, atol=0, rtol=0)
    assert_close(x.triu(10), np.zeros((3, 4)), atol=0, rtol=0)


def test_triangle_keeps_inf_and_nan_where_kept(backend: Any) -> None:
    """The masked elements are 0 even where x is inf or nan (a where, not a product)."""
    a = np.array([[INF, -INF], [math.nan, 1.0]])
    x = tensor_f64(a, backend)
    assert_close(x.triu(), torch.triu(torch_f64(a)), atol=0, rtol=0)
    assert_close(x.tril(), torch.tril(torch_f64(a)), atol=0, rtol=0)


def test_triangle_of_boolean_and_integer_tensors(backend: Any) -> None:
    m = _bool_tensor(np.ones((3, 3), dtype=bool), backend)
    got = _host(minitorch.tril(m), backend)
    assert got.dtype == bool
    np.testing.assert_array_equal(got, np.tril(np.ones((3, 3), dtype=bool)))
    i = minitorch.Tensor._make(
        backend.from_numpy(
            np.arange(9).reshape(3, 3), backend.resolve_dtype("int64"), backend.device
        ),
        backend,
        None,
    )
    np.testing.assert_array_equal(_host(i.triu(1), backend), np.triu(np.arange(9).reshape(3, 3), 1))


def test_causal_mask_for_attention(backend: Any) -> None:
    """The usual use: mask scores above the diagonal with -inf, then softmax."""
    rng = np.random.default_rng(0)
    s = rng.standard_normal((2, 4, 4))
    scores = tensor_f64(s, backend, requires_grad=True)
    ones = tensor_f64(np.ones((4, 4)), backend)
    future = ones.triu(1) != 0.0
    probs = minitorch.softmax(scores.masked_fill(future, -INF), axis=-1)
    (probs * tensor_f64(s, backend)).sum().backward()

    ts = torch_f64(s, requires_grad=True)
    tfuture = torch.triu(torch.ones(4, 4, dtype=torch.bool), diagonal=1)
    tprobs = torch.softmax(ts.masked_fill(tfuture, -INF), dim=-1)
    (tprobs * torch_f64(s)).sum().backward()
    assert_close(probs, tprobs, atol=1e-12, rtol=1e-12)
    assert_close(_host(scores.grad, backend), ts.grad, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("name", ["tril", "triu"])
def test_triangle_refuses_bad_input(name: str, backend: Any) -> None:
    fn = getattr(minitorch, name)
    with pytest.raises(OpError, match=rf"{name}: needs at least 2 dimensions"):
        fn(tensor_f64([1.0, 2.0], backend))
    with pytest.raises(OpError, match=rf"{name}: k .* must be an int"):
        fn(tensor_f64(np.ones((2, 2)), backend), 0.5)


# ------------------------------------------------------------------ masked_fill
@pytest.mark.parametrize(
    ("x_shape", "mask_shape", "value"),
    [((2, 3, 4), (3, 4), -1e9), ((2, 3, 4), (3, 1), 0.25), ((4,), (3, 4), -INF)],
)
def test_masked_fill_value_and_gradient(
    x_shape: tuple[int, ...], mask_shape: tuple[int, ...], value: float, backend: Any
) -> None:
    rng = np.random.default_rng(len(x_shape))
    a = rng.standard_normal(x_shape)
    m = rng.random(mask_shape) > 0.5
    out_shape = np.broadcast_shapes(x_shape, mask_shape)
    up = rng.standard_normal(out_shape)

    x = tensor_f64(a, backend, requires_grad=True)
    y = x.masked_fill(_bool_tensor(m, backend), value)
    y.backward(tensor_f64(up, backend))

    tx = torch_f64(a, requires_grad=True)
    ty = tx.masked_fill(torch.from_numpy(m), value)
    ty.backward(torch_f64(up))
    assert_close(y, ty, atol=0, rtol=0, msg="masked_fill: ")
    assert_close(_host(x.grad, backend), tx.grad, atol=0, rtol=0, msg="masked_fill grad: ")


def test_masked_fill_function_and_default_value(backend: Any) -> None:
    x = tensor_f64([1.0, 2.0, 3.0], backend)
    y = minitorch.masked_fill(x, _bool_tensor([False, True, False], backend))
    assert_close(y, [1.0, 0.0, 3.0], atol=0, rtol=0)


def test_masked_fill_refuses_non_boolean_mask(backend: Any) -> None:
    x = tensor_f64([1.0, 2.0], backend)
    with pytest.raises(OpError, match=r"masked_fill: the mask must be boolean, got dtype .*64"):
        x.masked_fill(tensor_f64([1.0, 0.0], backend), 0.0)
    with pytest.raises(OpError, match=r"masked_fill: value must be a Python number"):
        x.masked_fill(_bool_tensor([True, False], backend), tensor_f64(1.0, backend))  # type: ignore[arg-type]


# ------------------------------------------------------------------ sin, cos, rsqrt
POINTS = [0.0, math.pi / 6, math.pi / 2, -1.3, 3.0, 10.0]


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_cos_values_and_gradients(name: str, backend: Any) -> None:
    x = tensor_f64(POINTS, backend, requires_grad=True)
    y = getattr(x, name)()
    y.sum().backward()
    tx = torch_f64(POINTS, requires_grad=True)
    ty = getattr(torch, name)(tx)
    ty.sum().backward()
    assert_close(y, ty, atol=1e-15, rtol=1e-15, msg=f"{name}: ")
    assert_close(_host(x.grad, backend), tx.grad, atol=1e-15, rtol=1e-15, msg=f"{name} grad: ")


@pytest.mark.parametrize("name", ["sin", "cos"])
def test_sin_cos_second_derivative(name: str, backend: Any) -> None:
    """d^2/dx^2 sin = -sin and d^2/dx^2 cos = -cos (through the differentiable namespace)."""
    x = tensor_f64(POINTS, backend, requires_grad=True)
    fn = getattr(minitorch, name)
    (g,) = autograd.grad(fn(x).sum(), x, create_graph=True)
    assert g is not None
    (h,) = autograd.grad(g.sum(), x)
    want = -getattr(np, name)(np.asarray(POINTS))
    assert_close(h, want, atol=1e-15, rtol=1e-15)


def test_rsqrt_values_and_gradients(backend: Any) -> None:
    """rsqrt(0) = inf with gradient -inf, rsqrt(inf) = 0 with gradient -0, nan below 0."""
    pts = [0.0, 0.25, 1.0, 4.0, 2.0, INF, -1.0]
    x = tensor_f64(pts, backend, requires_grad=True)
    with warnings.catch_warnings():  # NumPy warns of the division by 0 and sqrt(-1)
        warnings.simplefilter("ignore", RuntimeWarning)
        y = minitorch.rsqrt(x)
        y.sum().backward()
    tx = torch_f64(pts, requires_grad=True)
    ty = torch.rsqrt(tx)
    ty.sum().backward()
    assert_close(y, ty, atol=0, rtol=1e-15, msg="rsqrt: ")
    grad = _host(x.grad, backend)
    assert_close(grad, tx.grad, atol=0, rtol=1e-15, msg="rsqrt grad: ")
    assert grad[0] == -INF
    assert math.isnan(grad[-1])
    # second derivative: d^2/dx^2 x^(-1/2) = 3/4 x^(-5/2)
    z = tensor_f64([0.25, 1.0, 4.0], backend, requires_grad=True)
    (g,) = autograd.grad(z.rsqrt().sum(), z, create_graph=True)
    assert g is not None
    (h,) = autograd.grad(g.sum(), z)
    assert_close(h, 0.75 * np.array([0.25, 1.0, 4.0]) ** -2.5, atol=1e-12, rtol=1e-12)


# ------------------------------------------------------------------ embedding
#: 3 four times, 0 twice, 1 and 5 once, 2 and 4 not at all
IDS = np.array([[0, 3, 3, 5], [3, 1, 0, 3]])


def _freq_scaled(ids: np.ndarray, g: np.ndarray, n: int) -> np.ndarray:
    """The weight's gradient with scale_grad_by_freq, in NumPy: each row of ``g``
    divided by the count of its index, summed into the index's row."""
    flat = ids.ravel()
    rows = g.reshape(flat.size, -1) / np.bincount(flat, minlength=n)[flat, None]
    out = np.zeros((n, rows.shape[1]))
    np.add.at(out, flat, rows)
    return out


@pytest.mark.parametrize("scale", [False, True])
def test_embedding_scale_grad_by_freq(scale: bool, backend: Any) -> None:
    """scale_grad_by_freq=True divides the gradient rows of each index by its count in
    the batch (row 3: a quarter of its four rows' sum), as
    torch.nn.functional.embedding(scale_grad_by_freq=True); the output is the same.
    Without indices the gradient is zeros."""
    rng = np.random.default_rng(0)
    w0, g = rng.standard_normal((6, 3)), rng.standard_normal((2, 4, 3))
    w = tensor_f64(w0, backend, requires_grad=True)
    out = minitorch.embedding(minitorch.tensor(IDS), w, scale_grad_by_freq=scale)
    out.backward(tensor_f64(g, backend))
    tw = torch_f64(w0, requires_grad=True)
    tout = torch.nn.functional.embedding(torch.from_numpy(IDS), tw, scale_grad_by_freq=scale)
    tout.backward(torch.from_numpy(g))
    assert_close(out, tout, atol=0, rtol=0, msg="embedding: ")
    grad = _host(w.grad, backend)
    assert_close(grad, tw.grad, atol=1e-15, rtol=1e-15, msg="embedding grad: ")
    if scale:
        assert_close(grad, _freq_scaled(IDS, g, 6), atol=1e-15, rtol=1e-15)
        np.testing.assert_array_equal(grad[[2, 4]], np.zeros((2, 3)))

    w.grad = None
    none = minitorch.embedding(
        minitorch.tensor(np.zeros((2, 0), np.int64)), w, scale_grad_by_freq=scale
    )
    none.sum().backward()
    np.testing.assert_array_equal(_host(w.grad, backend), np.zeros((6, 3)))


def test_embedding_scale_grad_by_freq_under_create_graph(backend: Any) -> None:
    """With create_graph=True the VJP runs on Tensors (the counts a constant): the same
    gradient, itself differentiable in the upstream gradient (gradgradcheck; PyTorch's
    double backward drops the scaling, so it is no reference there)."""
    rng = np.random.default_rng(1)
    w0, g = rng.standard_normal((6, 3)), rng.standard_normal((2, 4, 3))
    w = tensor_f64(w0, backend, requires_grad=True)
    ids = minitorch.tensor(IDS)
    out = minitorch.embedding(ids, w, scale_grad_by_freq=True)
    (gw,) = autograd.grad(out, w, tensor_f64(g, backend), create_graph=True)
    assert gw is not None
    assert_close(gw, _freq_scaled(IDS, g, 6), atol=1e-15, rtol=1e-15)
    assert gradgradcheck(lambda t: minitorch.embedding(ids, t, scale_grad_by_freq=True), [w])


def test_embedding_scale_grad_by_freq_must_be_a_bool(backend: Any) -> None:
    w = tensor_f64(np.ones((3, 2)), backend, requires_grad=True)
    with pytest.raises(
        OpError, match=r"embedding: scale_grad_by_freq must be True or False, got 'yes'"
    ):
        minitorch.embedding(minitorch.tensor([0, 1]), w, scale_grad_by_freq="yes")  # type: ignore[arg-type]
