"""minitorch.linalg and ``xp.linalg``: the Array API linalg extension, differentiable.

Each op is also in the catalog (tests/test_catalog.py: forward and gradient vs PyTorch
float64 at 1e-7, gradcheck; tests/test_higher_order.py: gradgradcheck; zero-size
variants). Here: the named-tuple functions (eigh, svd, qr, slogdet) through the public
module and the namespace, gauge-invariant functions of eigen/singular vectors against
PyTorch's autograd and finite differences, second order through them, the errors at
repeated eigen/singular values and for bad input, and one LAPACK call per decomposition.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
from helpers import tensor_f64

import minitorch
from minitorch.array_api import namespace
from minitorch.errors import OpError
from minitorch.testing import assert_close, gradcheck, gradgradcheck

torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")
FAST = True  # the gauge-invariant losses below are small: fast mode keeps jax quick

STANDARD_LINALG = [
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]


def _sym(rng: np.random.Generator, n: int, batch: tuple[int, ...] = ()) -> np.ndarray:
    """A symmetric matrix with eigenvalues about 1 apart (no repeats)."""
    q, _ = np.linalg.qr(rng.standard_normal((*batch, n, n)))
    w = np.linspace(-1.5, 1.5, n) * (n - 1) / 2 + rng.uniform(-0.1, 0.1, (*batch, n))
    return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)


def _rand(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.uniform(-1.0, 1.0, shape) + 2.0 * np.eye(shape[-2], shape[-1])


def _np(backend: Any, t: Any) -> np.ndarray:
    """A Tensor's or a backend array's values on the host."""
    return np.asarray(backend.to_numpy(t.data if isinstance(t, minitorch.Tensor) else t))


# ---------------------------------------------------------------- the namespace
def test_every_standard_linalg_function_is_there(backend: Any) -> None:
    xp = namespace(backend)
    assert xp.linalg is minitorch.linalg.namespace(backend)
    for name in STANDARD_LINALG:
        assert callable(getattr(xp.linalg, name)), name
        assert callable(getattr(minitorch.linalg, name)), name
    x = tensor_f64([[1.0, 2.0], [3.0, 4.0]], backend)
    assert x.__array_namespace__().linalg is xp.linalg
    assert "``linalg`` extension is provided" in " ".join(
        type(xp.__array_namespace_info__()).__doc__.split()
    )


def test_the_main_namespace_functions_are_the_same(backend: Any) -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 4, 3))
    ta, tb = tensor_f64(a, backend), tensor_f64(b, backend)
    la = namespace(backend).linalg
    assert_close(la.matmul(ta, tb), a @ b, atol=1e-12, rtol=1e-12)
    assert_close(la.matrix_transpose(ta), np.swapaxes(a, -1, -2), atol=0, rtol=0)
    assert_close(
        la.tensordot(ta, tb[0], axes=1), np.tensordot(a, b[0], axes=1), atol=1e-12, rtol=1e-12
    )
    assert_close(la.vecdot(ta, ta, axis=-1), (a * a).sum(-1), atol=1e-12, rtol=1e-12)


def test_raw_backend_arrays_are_constants(backend: Any) -> None:
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    raw = backend.from_numpy(a, backend.resolve_dtype("float64"), backend.device)
    out = namespace(backend).linalg.det(raw)
    assert isinstance(out, minitorch.Tensor) and not out.requires_grad
    assert_close(out, 5.0, atol=1e-12, rtol=1e-12)


# ---------------------------------------------------------------- several results
def test_eigh_values_vectors_and_gradient_against_torch(backend: Any) -> None:
    rng = np.random.default_rng(1)
    a = _sym(rng, 4, (2,))
    x = tensor_f64(a, backend, requires_grad=True)
    w, v = minitorch.linalg.eigh(x)
    assert isinstance(w, minitorch.Tensor) and w.shape == (2, 4) and v.shape == (2, 4, 4)
    assert tuple(minitorch.linalg.eigh(x)._fields) == ("eigenvalues", "eigenvectors")
    tx = torch.tensor(a, requires_grad=True)
    tw, tv = torch.linalg.eigh(tx)
    assert_close(w, tw, atol=1e-10, rtol=1e-10)
    # v diag(w) v^T rebuilds a; each column of v: the largest entry positive
    vn, wn = _np(backend, v), _np(backend, w)
    assert_close((vn * wn[..., None, :]) @ np.swapaxes(vn, -1, -2), a, atol=1e-10, rtol=1e-10)
    first = np.take_along_axis(vn, np.abs(vn).argmax(axis=-2)[..., None, :], axis=-2)
    assert (first > 0).all()
    # a gauge-invariant loss: eigenvalues squared, and the squares of the vectors' entries
    c = rng.standard_normal((4, 4))
    (w * w).sum().backward(retain_graph=True)
    ((v * v) * tensor_f64(c, backend)).sum().backward()
    ((tw * tw).sum() + ((tv * tv) * torch.tensor(c)).sum()).backward()
    assert_close(_np(backend, x.grad), tx.grad, atol=1e-9, rtol=1e-9)


def test_svd_values_vectors_and_gradient_against_torch(backend: Any) -> None:
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 5, 3))
    x = tensor_f64(a, backend, requires_grad=True)
    u, s, vh = minitorch.linalg.svd(x, full_matrices=False)
    assert (u.shape, s.shape, vh.shape) == ((2, 5, 3), (2, 3), (2, 3, 3))
    un, sn, vhn = (_np(backend, t) for t in (u, s, vh))
    assert_close((un * sn[..., None, :]) @ vhn, a, atol=1e-10, rtol=1e-10)
    tx = torch.tensor(a, requires_grad=True)
    tu, ts, tvh = torch.linalg.svd(tx, full_matrices=False)
    assert_close(s, ts, atol=1e-10, rtol=1e-10)
    # gauge-invariant: |U|^2, |Vh|^2 entrywise, U diag(S) Vh itself, and S
    c1, c2, c3 = (
        rng.standard_normal((5, 3)),
        rng.standard_normal((3, 3)),
        rng.standard_normal(a.shape),
    )
    loss = (
        (u * u * tensor_f64(c1, backend)).sum()
        + (vh * vh * tensor_f64(c2, backend)).sum()
        + ((u * minitorch.reshape(s, (2, 1, 3))) @ vh * tensor_f64(c3, backend)).sum()
        + (s**3).sum()
    )
    loss.backward()
    tloss = (
        (tu * tu * torch.tensor(c1)).sum()
        + (tvh * tvh * torch.tensor(c2)).sum()
        + ((tu * ts[..., None, :]) @ tvh * torch.tensor(c3)).sum()
        + (ts**3).sum()
    )
    tloss.backward()
    assert_close(_np(backend, x.grad), tx.grad, atol=1e-9, rtol=1e-9)
    full = minitorch.linalg.svd(tensor_f64(a, backend))  # the standard's default
    assert (full.U.shape, full.S.shape, full.Vh.shape) == ((2, 5, 5), (2, 3), (2, 3, 3))


def test_qr_and_slogdet_against_torch(backend: Any) -> None:
    rng = np.random.default_rng(3)
    a = _rand(rng, 5, 3)
    x = tensor_f64(a, backend, requires_grad=True)
    q, r = minitorch.linalg.qr(x)
    assert_close(_np(backend, q) @ _np(backend, r), a, atol=1e-12, rtol=1e-12)
    assert (np.diag(_np(backend, r)) > 0).all()
    assert_close(np.tril(_np(backend, r), -1), np.zeros((3, 3)), atol=0, rtol=0)
    tx = torch.tensor(a, requires_grad=True)
    tq, tr = torch.linalg.qr(tx)
    sign = torch.sign(torch.diagonal(tr)).detach()
    tq, tr = tq * sign, tr * sign[:, None]
    c1, c2 = rng.standard_normal((5, 3)), rng.standard_normal((3, 3))
    ((q * tensor_f64(c1, backend)).sum() + (r * tensor_f64(c2, backend)).sum()).backward()
    ((tq * torch.tensor(c1)).sum() + (tr * torch.tensor(c2)).sum()).backward()
    assert_close(_np(backend, x.grad), tx.grad, atol=1e-10, rtol=1e-10)

    m = np.array([[[-2.0, 1.0], [0.5, 3.0]], [[1.0, 2.0], [3.0, 4.0]]])
    sign, logabs = minitorch.linalg.slogdet(tensor_f64(m, backend))
    tsign, tlog = torch.linalg.slogdet(torch.tensor(m))
    assert not sign.requires_grad
    assert_close(sign, tsign, atol=0, rtol=0)
    assert_close(logabs, tlog, atol=1e-12, rtol=1e-12)


def test_the_matrix_functions_against_torch(backend: Any) -> None:
    rng = np.random.default_rng(4)
    a, b = _rand(rng, 2, 3, 3), rng.standard_normal((3, 2))
    ta, tb = torch.tensor(a), torch.tensor(b)
    x, y = tensor_f64(a, backend), tensor_f64(b, backend)
    la = minitorch.linalg
    spd = a @ np.swapaxes(a, -1, -2) + np.eye(3)
    pairs = [
        (la.det(x), torch.linalg.det(ta)),
        (la.inv(x), torch.linalg.inv(ta)),
        (la.solve(x, y), torch.linalg.solve(ta, tb)),
        (la.cholesky(tensor_f64(spd, backend)), torch.linalg.cholesky(torch.tensor(spd))),
        (
            la.cholesky(tensor_f64(spd, backend), upper=True),
            torch.linalg.cholesky(torch.tensor(spd), upper=True),
        ),
        (la.pinv(x), torch.linalg.pinv(ta)),
        (la.matrix_power(x, -3), torch.linalg.matrix_power(ta, -3)),
        (la.matrix_norm(x, ord="nuc"), torch.linalg.matrix_norm(ta, ord="nuc")),
        (la.vector_norm(x, axis=(0, 2), ord=3), torch.linalg.vector_norm(ta, ord=3, dim=(0, 2))),
        (la.trace(x, offset=1), torch.diagonal(ta, 1, -2, -1).sum(-1)),
        (la.diagonal(x, offset=-1), torch.diagonal(ta, -1, -2, -1)),
        (la.outer(x[0, 0], x[1, 1]), torch.outer(ta[0, 0], ta[1, 1])),
        (la.cross(x, x[0], axis=-1), torch.linalg.cross(ta, ta[0].expand(2, 3, 3))),
        (la.svdvals(x), torch.linalg.svdvals(ta)),
        (la.eigvalsh(x), torch.linalg.eigvalsh((ta + ta.mT) / 2)),
    ]
    for k, (got, want) in enumerate(pairs):
        assert_close(got, want, atol=1e-10, rtol=1e-10, msg=f"pair {k}: ")
    rank = la.matrix_rank(tensor_f64(np.outer([1.0, 2.0, 3.0], [1.0, -1.0]), backend))
    assert int(rank) == 1 and not rank.requires_grad


# ---------------------------------------------------------------- derivatives
@pytest.mark.parametrize("which", ["eigh", "svd", "qr", "cholesky", "pinv", "slogdet"])
def test_gradcheck_and_gradgradcheck_of_gauge_invariant_losses(which: str, backend: Any) -> None:
    """Finite differences of first and second derivatives through the decompositions
    (the VJPs run again under create_graph, through ``xp.linalg``)."""
    rng = np.random.default_rng(5)
    la = minitorch.linalg
    if which == "eigh":
        a = _sym(rng, 3)
        c = tensor_f64(rng.standard_normal((3, 3)), backend)

        def fn(t: Any) -> Any:
            w, v = la.eigh(t)
            return (w * w).sum() + (v * v * c).sum()

    elif which == "svd":
        a = rng.standard_normal((4, 3))
        c = tensor_f64(rng.standard_normal((4, 3)), backend)

        def fn(t: Any) -> Any:
            u, s, vh = la.svd(t, full_matrices=False)
            return (u * u * c).sum() + (vh * vh).sum(axis=0) @ s

    elif which == "qr":
        a = _rand(rng, 4, 3)
        c = tensor_f64(rng.standard_normal((4, 3)), backend)

        def fn(t: Any) -> Any:
            q, r = la.qr(t)
            return (q * c).sum() + (r * r).sum()

    elif which == "cholesky":
        b = rng.standard_normal((3, 3))
        a = b @ b.T + 3 * np.eye(3)

        def fn(t: Any) -> Any:
            return la.cholesky(t).sum() + la.cholesky(t, upper=True)[0].sum()

    elif which == "pinv":
        a = rng.standard_normal((4, 3))

        def fn(t: Any) -> Any:
            return (la.pinv(t) ** 2).sum()

    else:
        a = _rand(rng, 3, 3)

        def fn(t: Any) -> Any:
            return la.slogdet(t).logabsdet + la.det(t) * la.inv(t).sum()

    x = tensor_f64(a, backend, requires_grad=True)
    assert gradcheck(fn, [x], fast_mode=FAST)
    assert gradgradcheck(fn, [x], fast_mode=FAST)


def test_second_derivative_of_eigenvalues_against_torch(backend: Any) -> None:
    """d/dx of (d sum(w^3) / dx) . u, by create_graph through eigvalsh and eigvecsh."""
    rng = np.random.default_rng(6)
    a, u = _sym(rng, 3), rng.standard_normal((3, 3))
    x = tensor_f64(a, backend, requires_grad=True)
    (g,) = minitorch.autograd.grad(
        (minitorch.linalg.eigvalsh(x) ** 3).sum(), [x], create_graph=True
    )
    (h,) = minitorch.autograd.grad((g * tensor_f64(u, backend)).sum(), [x])
    tx = torch.tensor(a, requires_grad=True)
    (tg,) = torch.autograd.grad((torch.linalg.eigvalsh(tx) ** 3).sum(), [tx], create_graph=True)
    (th,) = torch.autograd.grad((tg * torch.tensor(u)).sum(), [tx])
    assert_close(_np(backend, h.detach()), th, atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("ord", [0.5, -0.5, -1, -2, 1, 1.5, 2, 3, math.inf, -math.inf])
@pytest.mark.parametrize("axis", [-1, None])
def test_vector_norm_at_zero_entries_to_the_second_derivative_against_torch(
    ord: float, axis: int | None, backend: Any
) -> None:
    """Zero entries, a zero norm (for ord < 0 one zero entry makes it), an all-zero
    input: values, gradients and second derivatives are PyTorch's (float64). The
    gradient at a zero entry is 0 (|x|^(ord - 1) is infinite there for ord < 1: the
    subgradient), never nan, in both. The second derivative with respect to a zero entry
    does not exist for ord < 2 but 1 (it is |x|^(ord - 2)): PyTorch's is nan there, and
    so is minitorch's; for ord < 1 it was 0 here (a constant 0 in the gradient), and the
    test compared only the nonzero entries."""
    if axis is None:
        a = np.zeros((2, 3))
        w, u = np.array(2.0), np.arange(6.0).reshape(2, 3) / 6.0 - 0.25
    else:
        a = np.array([[0.0, 3.0, -4.0], [0.0, 0.0, 0.0], [1.0, -2.0, 0.5], [1.0, 0.0, 2.0]])
        w, u = np.array([0.5, -1.0, 2.0, 1.5]), np.arange(12.0).reshape(4, 3) / 9.0 - 0.5
    x = tensor_f64(a, backend, requires_grad=True)
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 ** ord; 0 / 0 as in torch
        y = minitorch.linalg.vector_norm(x, axis=axis, ord=ord)
        (g,) = minitorch.autograd.grad((y * tensor_f64(w, backend)).sum(), [x], create_graph=True)
        h = (
            minitorch.autograd.grad((g * tensor_f64(u, backend)).sum(), [x])[0]
            if g.requires_grad
            else minitorch.zeros_like(x)  # a gradient made of constants: its derivative is 0
        )
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.linalg.vector_norm(tx, ord=ord, dim=axis)
    (tg,) = torch.autograd.grad((ty * torch.tensor(w)).sum(), [tx], create_graph=True)
    (th,) = torch.autograd.grad(
        (tg * torch.tensor(u)).sum(), [tx], allow_unused=True, materialize_grads=True
    )
    assert_close(y, ty.detach(), atol=1e-12, rtol=1e-12)
    assert np.isfinite(_np(backend, g.detach())).all()
    assert_close(_np(backend, g.detach()), tg.detach(), atol=1e-12, rtol=1e-12)
    want = th.numpy(force=True)  # (a ZeroTensor for ord 1 and +-inf)
    # the reference's nan, checked: at the zero entries for ord < 2 but 1 and -inf, at
    # those of an all-zero vector for ord 2, nowhere else
    zero = a == 0.0
    if ord == 2:
        nan = zero & (zero.all(axis=-1, keepdims=True) if axis is not None else zero.all())
    elif ord < 2 and ord not in (1, -math.inf):
        nan = zero
    else:
        nan = np.zeros_like(zero)
    np.testing.assert_array_equal(np.isnan(want), nan)
    np.testing.assert_allclose(_np(backend, h), want, rtol=1e-10, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("axis", [None, -1])
def test_two_norm_second_derivative_at_a_zero_norm_is_nan_as_torch(
    axis: int | None, backend: Any
) -> None:
    """The gradient of the 2-norm at a zero norm is 0 (PyTorch's subgradient); its
    derivative there is nan in PyTorch (grad_x / |x|, 0 / 0) and was 1 here (the
    derivative of g x / 1, the safe denominator's). Rows with a nonzero norm keep
    PyTorch's finite Hessian."""
    a = np.array([[0.0, 0.0, 0.0], [1.0, -2.0, 0.5]]) if axis == -1 else np.zeros((2, 3))
    w = np.array([0.5, -1.5]) if axis == -1 else np.array(2.0)
    u = np.arange(6.0).reshape(2, 3) / 6.0 - 0.25
    x = tensor_f64(a, backend, requires_grad=True)
    y = minitorch.linalg.vector_norm(x, axis=axis)
    (g,) = minitorch.autograd.grad((y * tensor_f64(w, backend)).sum(), [x], create_graph=True)
    with np.errstate(invalid="ignore"):  # 0 / 0 in the second derivative, as in torch
        (h,) = minitorch.autograd.grad((g * tensor_f64(u, backend)).sum(), [x])
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.linalg.vector_norm(tx, dim=axis)
    (tg,) = torch.autograd.grad((ty * torch.tensor(w)).sum(), [tx], create_graph=True)
    (th,) = torch.autograd.grad((tg * torch.tensor(u)).sum(), [tx])
    zero_rows = [0] if axis == -1 else [0, 1]
    assert np.isnan(th.numpy()[zero_rows]).all()  # the reference's, checked
    np.testing.assert_array_equal(_np(backend, g.detach()), tg.detach().numpy())
    got = _np(backend, h)
    assert np.isnan(got[zero_rows]).all(), got
    np.testing.assert_allclose(got, th.numpy(), rtol=1e-12, atol=1e-15, equal_nan=True)
    # a finite second derivative away from the zero norm: by hand, for |x| = 2.291...
    if axis == -1:
        r = a[1]
        n = np.linalg.norm(r)
        hand = w[1] * (np.eye(3) / n - np.outer(r, r) / n**3) @ u[1]
        np.testing.assert_allclose(got[1], hand, rtol=1e-12)


def test_vector_gradients_in_a_stack_of_different_scales_against_torch(backend: Any) -> None:
    """Repeated values are judged per matrix: a stack's large matrix does not make a
    small one's distinct eigen/singular values look equal."""
    a = np.array([np.diag([1e13, 2e13]), np.diag([1e-3, 2e-3])])
    w = np.arange(8.0).reshape(2, 2, 2)
    x = tensor_f64(a, backend, requires_grad=True)
    (minitorch.linalg.eigh(x).eigenvectors * tensor_f64(w, backend)).sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    (torch.linalg.eigh(tx)[1] * torch.tensor(w)).sum().backward()
    assert tx.grad is not None
    want = (tx.grad + tx.grad.mT) / 2  # minitorch's is symmetric (it reads x's symmetric part)
    assert_close(_np(backend, x.grad), want, atol=1e-12, rtol=1e-9)
    x = tensor_f64(a, backend, requires_grad=True)
    (minitorch.linalg.svd(x).U * tensor_f64(w, backend)).sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    (torch.linalg.svd(tx)[0] * torch.tensor(w)).sum().backward()
    assert_close(_np(backend, x.grad), tx.grad, atol=1e-12, rtol=1e-9)


def test_matrix_power_zero_is_the_identity_for_any_input(backend: Any) -> None:
    a = np.array([[[math.inf, 1.0], [2.0, 3.0]], [[1.0, math.nan], [3.0, 4.0]]])
    x = tensor_f64(a, backend, requires_grad=True)
    y = minitorch.linalg.matrix_power(x, 0)
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.linalg.matrix_power(tx, 0)
    assert_close(y, ty.detach(), atol=0, rtol=0)
    (y * tensor_f64(np.arange(8.0).reshape(2, 2, 2), backend)).sum().backward()
    ty.sum().backward()
    assert_close(_np(backend, x.grad), tx.grad, atol=0, rtol=0)  # zeros, not nan


# ---------------------------------------------------------------- degenerate values
def test_eigenvectors_of_repeated_eigenvalues_have_no_gradient(backend: Any) -> None:
    a = np.diag([1.0, 2.0, 2.0])
    x = tensor_f64(a, backend, requires_grad=True)
    w, v = minitorch.linalg.eigh(x)
    w.sum().backward()  # the eigenvalues' gradient exists: the identity
    assert_close(_np(backend, x.grad), np.eye(3), atol=1e-12, rtol=1e-12)
    with pytest.raises(OpError, match=r"eigh: the gradient of the eigenvectors .* equal") as info:
        v[0].sum().backward()
    assert "where two eigenvalues are equal, and (3,) eigenvalues of dtype" in str(info.value)


def test_singular_vectors_of_repeated_singular_values_have_no_gradient(backend: Any) -> None:
    a = np.array([[2.0, 0.0], [0.0, -2.0], [0.0, 0.0]])
    x = tensor_f64(a, backend, requires_grad=True)
    u, s, _ = minitorch.linalg.svd(x, full_matrices=False)
    s.sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    torch.linalg.svdvals(tx).sum().backward()
    assert_close(_np(backend, x.grad), tx.grad, atol=1e-12, rtol=1e-12)
    with pytest.raises(OpError, match=r"svd: the gradient of the singular vectors") as info:
        (u * u).sum(axis=1)[0].backward()
    assert "where two singular values are equal, and (2,) singular values" in str(info.value)
    with pytest.raises(OpError, match="zero singular value"):
        z = tensor_f64([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]], backend, requires_grad=True)
        minitorch.linalg.svd(z, full_matrices=False).Vh[0].sum().backward()


def test_det_gradient_at_a_singular_matrix_is_an_error(backend: Any) -> None:
    x = tensor_f64([[1.0, 2.0], [2.0, 4.0]], backend, requires_grad=True)
    d = minitorch.linalg.det(x)
    assert float(d.item()) == 0.0  # exactly singular in every backend's rounding
    with pytest.raises(OpError, match="singular"):
        d.backward()


# ---------------------------------------------------------------- errors
def _message(call: Any) -> str:
    with pytest.raises(OpError) as info:
        call()
    return str(info.value)


def test_bad_shapes_are_errors_naming_op_shape_dtype_backend(backend: Any) -> None:
    la = minitorch.linalg
    rect = tensor_f64(np.ones((2, 3)), backend)
    for name in ("det", "inv", "cholesky", "eigvalsh"):
        msg = _message(lambda n=name: getattr(la, n)(rect))
        assert msg.startswith(name) and "(2, 3)" in msg and "float64" in msg, msg
        assert backend.name in msg, msg
    msg = _message(
        lambda: la.solve(tensor_f64(np.eye(3), backend), tensor_f64(np.ones(2), backend))
    )
    assert msg.startswith("solve") and "(3, 3)" in msg and "(2,)" in msg, msg
    # the named-tuple functions name themselves, not their building blocks (svd_u, ...)
    vec = tensor_f64(np.ones(3), backend)
    for name, call in (
        ("eigh", lambda: la.eigh(vec)),
        ("eigh", lambda: la.eigh(rect)),
        ("slogdet", lambda: la.slogdet(rect)),
        ("svd", lambda: la.svd(vec)),
        ("qr", lambda: la.qr(vec)),
    ):
        msg = _message(call)
        assert msg.startswith(name + " ") and "float64" in msg and backend.name in msg, msg
        assert not any(b in msg for b in ("eigvalsh", "eigvecsh", "logabsdet", "svd_", "qr_"))


def test_singular_and_indefinite_matrices_are_errors_on_every_backend(backend: Any) -> None:
    la = minitorch.linalg
    singular = tensor_f64([[1.0, 2.0], [2.0, 4.0]], backend)
    for call in (
        lambda: la.inv(singular),
        lambda: la.solve(singular, tensor_f64([1.0, 1.0], backend)),
    ):
        msg = _message(call)
        assert "singular" in msg and "(2, 2)" in msg and backend.name in msg, msg
    indefinite = tensor_f64([[1.0, 2.0], [2.0, 1.0]], backend)
    msg = _message(lambda: la.cholesky(indefinite))
    assert msg.startswith("cholesky") and "not positive definite" in msg, msg


def test_integer_input_is_an_error(backend: Any) -> None:
    arr = backend.from_numpy(
        np.array([[1, 2], [3, 5]]), backend.resolve_dtype("int64"), backend.device
    )
    ints = minitorch.Tensor._make(arr, backend, None)
    for name in ("det", "inv", "svdvals", "vector_norm", "cholesky"):
        msg = _message(lambda n=name: getattr(minitorch.linalg, n)(ints))
        assert msg.startswith(name) and "int64" in msg and "floating" in msg, msg
        # the advice it gives works as written
        advice = re.search(r"e\.g\. x\.astype\('(\w+)'\)$", msg)
        assert advice is not None, msg
        fixed = ints.astype(advice.group(1))
        assert fixed.dtype == backend.resolve_dtype("float64")
        if name != "cholesky":  # (this matrix is not positive definite)
            getattr(minitorch.linalg, name)(fixed)
    msg = _message(lambda: minitorch.linalg.matrix_norm(ints))
    assert "floating" in msg and "int64" in msg, msg


def test_bad_parameters(backend: Any) -> None:
    la = minitorch.linalg
    x = tensor_f64(np.eye(3), backend)
    assert "n must be an int" in _message(lambda: la.matrix_power(x, 1.5))
    assert "ord must be one of" in _message(lambda: la.matrix_norm(x, ord=3))
    assert _message(lambda: la.qr(x, mode="r")).startswith("qr with {'mode': 'r'}")
    msg = _message(lambda: la.svd(x, full_matrices=1))
    assert msg.startswith("svd with") and "full_matrices must be True or False" in msg, msg
    assert "size 3" in _message(
        lambda: la.cross(tensor_f64(np.ones(2), backend), tensor_f64(np.ones(2), backend))
    )
    assert "1-d" in _message(lambda: la.outer(x, x))
    msg = _message(lambda: la.vector_norm(tensor_f64(np.ones((0, 3)), backend), ord=math.inf))
    assert "no elements" in msg


# ---------------------------------------------------------------- one decomposition
def test_each_decomposition_is_computed_once(backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    lib = backend.xp.linalg
    for name in ("eigh", "svd", "qr", "slogdet"):
        real = getattr(lib, name)

        def counted(*args: Any, _real: Any = real, _name: str = name, **kwargs: Any) -> Any:
            calls.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(lib, name, counted)
    rng = np.random.default_rng(7)
    x = tensor_f64(_sym(rng, 3), backend, requires_grad=True)
    minitorch.linalg.eigh(x)
    minitorch.linalg.svd(x)
    minitorch.linalg.svd(x, full_matrices=False)
    minitorch.linalg.qr(x)
    minitorch.linalg.slogdet(x)
    assert calls == ["eigh", "svd", "svd", "qr", "slogdet"]


# ---------------------------------------------------------------- complex, forward only
def _complex(backend: Any, a: np.ndarray) -> minitorch.Tensor:
    arr = backend.from_numpy(a, backend.xp.complex128, backend.device)
    return minitorch.Tensor._make(arr, backend, None)


def _phase_fixed(v: np.ndarray) -> np.ndarray:
    """``v`` with each column scaled by the unit phase making its largest entry real
    and positive: minitorch's convention for complex eigen/singular vectors."""
    idx = np.argmax(np.abs(v), axis=-2)[..., None, :]
    pick = np.take_along_axis(v, idx, axis=-2)
    return v * np.conj(pick / np.abs(pick))


def test_complex_inputs_against_numpy_and_torch(backend: Any) -> None:
    rng = np.random.default_rng(11)
    a = rng.standard_normal((2, 3, 3)) + 1j * rng.standard_normal((2, 3, 3))
    b = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    r = rng.standard_normal((4, 3)) + 1j * rng.standard_normal((4, 3))
    h = a @ np.conj(np.swapaxes(a, -1, -2)) + np.eye(3)  # Hermitian positive definite
    ta, th, tr = torch.tensor(a), torch.tensor(h), torch.tensor(r)
    x, y, hx, rx = (_complex(backend, v) for v in (a, b, h, r))
    la = minitorch.linalg
    sign, logabs = la.slogdet(x)
    tsign, tlog = torch.linalg.slogdet(ta)
    w, v = la.eigh(hx)
    tw, tv = torch.linalg.eigh(th)
    u, s, vh = la.svd(rx, full_matrices=False)
    tu, ts, _ = torch.linalg.svd(tr, full_matrices=False)
    q, rr = la.qr(rx)
    nq, nr = np.linalg.qr(r)
    phase = np.diagonal(nr) / np.abs(np.diagonal(nr))
    pairs = [
        (la.det(x), torch.linalg.det(ta)),
        (sign, tsign),
        (logabs, tlog),
        (la.inv(x), torch.linalg.inv(ta)),
        (la.solve(x, y), torch.linalg.solve(ta, torch.tensor(b))),
        (la.cholesky(hx), torch.linalg.cholesky(th)),
        (la.cholesky(hx, upper=True), torch.linalg.cholesky(th, upper=True)),
        (w, tw),
        (la.eigvalsh(hx), tw),
        (v, _phase_fixed(tv.numpy())),
        (s, ts),
        (la.svdvals(rx), ts),
        (u, _phase_fixed(tu.numpy())),
        (u * s[None, :] @ vh, r),
        (q, nq * phase),
        (rr, np.conj(phase)[:, None] * nr),
        (la.pinv(rx), torch.linalg.pinv(tr)),
        (la.matrix_power(x, -2), torch.linalg.matrix_power(ta, -2)),
        (la.matrix_power(x, 3), torch.linalg.matrix_power(ta, 3)),
        (la.vector_norm(x, axis=(0, 2), ord=3), torch.linalg.vector_norm(ta, ord=3, dim=(0, 2))),
        (la.vector_norm(x), torch.linalg.vector_norm(ta)),
        (la.trace(x, offset=1), torch.diagonal(ta, 1, -2, -1).sum(-1)),
        (la.diagonal(x, offset=-1), torch.diagonal(ta, -1, -2, -1)),
        (la.outer(x[0, 0], x[1, 1]), torch.outer(ta[0, 0], ta[1, 1])),
        (la.cross(x, x[0], axis=-1), torch.linalg.cross(ta, ta[0].expand(2, 3, 3))),
        (la.vecdot(x, x[0]), torch.linalg.vecdot(ta, ta[0])),
        (minitorch.array_api.vecdot(x, x[0]), torch.linalg.vecdot(ta, ta[0])),
    ]
    for ord in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        pairs.append((la.matrix_norm(x, ord=ord), torch.linalg.matrix_norm(ta, ord=ord)))
    for k, (got, want) in enumerate(pairs):
        want = want.numpy() if isinstance(want, torch.Tensor) else want
        assert got.dtype == getattr(backend.xp, str(want.dtype)), f"pair {k}: {got.dtype}"
        got_np, want = _np(backend, got), np.asarray(want)  # (assert_close drops .imag)
        for part in (np.real, np.imag):
            assert_close(part(got_np), part(want), atol=1e-10, rtol=1e-10, msg=f"pair {k}: ")
    for t in (v, u):  # the largest entry of each vector is real and positive
        vals = _np(backend, t)
        idx = np.argmax(np.abs(vals), axis=-2)[..., None, :]
        pick = np.take_along_axis(vals, idx, axis=-2)
        assert (pick.real > 0).all() and np.abs(pick.imag).max() < 1e-12
    rank = la.matrix_rank(_complex(backend, np.outer([1.0, 2j, 3.0], [1.0, -1j])))
    assert int(rank) == 1


def test_complex_results_refuse_gradients(backend: Any) -> None:
    la = minitorch.linalg
    real = tensor_f64([[2.0, 1.0], [1.0, 3.0]], backend, requires_grad=True)
    cb = _complex(backend, np.array([1.0 + 1j, 2.0 - 1j]))
    msg = _message(lambda: la.solve(real, cb))
    assert msg.startswith("solve") and "complex autograd is not supported" in msg, msg
    msg = _message(lambda: la.outer(real[0], cb))
    assert "complex autograd is not supported" in msg, msg
    with minitorch.no_grad():  # under no_grad the same call computes
        got = _np(backend, la.solve(real, cb))
    want = np.linalg.solve([[2.0, 1.0], [1.0, 3.0]], [1.0 + 1j, 2.0 - 1j])
    for part in (np.real, np.imag):
        assert_close(part(got), part(want), atol=1e-12, rtol=1e-12)


class _NoOperatorProduct(np.ndarray):
    """A NumPy array whose ``@`` raises: op code that writes ``x @ y`` on backend arrays
    skips the backend's ``matmul``, and with it the full float32 precision that
    ``matmul`` sets on a GPU (JAX's default precision, torch's and CuPy's TF32 flags)."""

    def __matmul__(self, other: Any) -> Any:
        raise AssertionError("a matrix product written x @ y in op code: use xp.matmul")

    __rmatmul__ = __matmul__


@pytest.mark.backend_independent
def test_the_decompositions_multiply_matrices_through_the_namespace() -> None:
    """Every linalg op's forward and backward (first and second order) with arrays that
    refuse ``@``: their matrix products go through ``xp.matmul``. The VJPs of inv,
    solve, cholesky, eigh, svd, qr, pinv and diagonal wrote ``@`` before."""
    be = minitorch.backend.resolve("numpy", "float64")
    rng = np.random.default_rng(11)

    def leaf(a: Any) -> minitorch.Tensor:
        return minitorch.Tensor._make(np.asarray(a).view(_NoOperatorProduct), be, None)

    a = rng.standard_normal((4, 4))
    spd = a @ a.T + 4 * np.eye(4)
    wide, tall = rng.standard_normal((3, 5)), rng.standard_normal((5, 3))
    la = minitorch.linalg
    cases = [
        (spd, lambda x: la.inv(x)),
        (spd, lambda x: la.solve(x, leaf(np.ones((4, 2))))),
        (spd, lambda x: la.cholesky(x)),
        (spd, lambda x: la.eigh(x).eigenvalues * 1.0 + la.eigh(x).eigenvectors.sum(axis=0)),
        (tall, lambda x: la.svd(x, full_matrices=False).U.sum() + la.svdvals(x)),
        (wide, lambda x: la.svd(x, full_matrices=False).Vh.sum() + la.svdvals(x)),
        (tall, lambda x: la.qr(x).Q.sum() + la.qr(x).R.sum()),
        (wide, lambda x: la.qr(x).Q.sum() + la.qr(x).R.sum()),
        (tall, lambda x: la.pinv(x)),
        (spd, lambda x: la.diagonal(x, offset=1)),
        (spd, lambda x: la.det(x)),
    ]
    for value, f in cases:
        x = leaf(value).requires_grad_()
        y = f(x)
        (g,) = minitorch.autograd.grad((y * y).sum(), [x], create_graph=True)
        (g * g).sum().backward()  # the VJPs' own graph: second order
        assert x.grad is not None and np.all(np.isfinite(np.asarray(x.grad)))
