"""``minitorch.func``: transforms of functions of Tensors, against ``torch.func`` and
hand-derived values in float64."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import tensor_f64 as _t
from helpers import torch_f64 as _tt

import minitorch
from minitorch import func
from minitorch.testing import assert_close

torch = pytest.importorskip("torch")

XS = np.array([0.3, -1.1, 0.8])
YS = np.array([[0.5, -0.2], [1.5, 0.7], [-0.4, 0.9]])


def f_mine(x: Any, y: Any) -> Any:
    return (minitorch.tanh(x @ y) * (x * x).sum()).sum() + minitorch.softplus(y).sum()


def f_torch(x: Any, y: Any) -> Any:
    return (torch.tanh(x @ y) * (x * x).sum()).sum() + torch.nn.functional.softplus(y).sum()


def test_grad_argnums(backend: Any) -> None:
    x, y = _t(XS, backend), _t(YS, backend)
    gx = func.grad(f_mine)(x, y)
    gx2, gy = func.grad(f_mine, argnums=(0, 1))(x, y)
    tgx, tgy = torch.func.grad(f_torch, argnums=(0, 1))(_tt(XS), _tt(YS))
    assert_close(gx, tgx, atol=1e-7, rtol=1e-7)
    assert_close(gx2, tgx, atol=1e-7, rtol=1e-7)
    assert_close(gy, tgy, atol=1e-7, rtol=1e-7)
    assert_close(func.grad(f_mine, argnums=-1)(x, y), tgy, atol=1e-7, rtol=1e-7)
    assert not gx.requires_grad and not x.requires_grad  # inputs untouched


def test_value_and_grad_and_has_aux(backend: Any) -> None:
    x, y = _t(XS, backend), _t(YS, backend)
    v, g = func.value_and_grad(f_mine, argnums=1)(x, y)
    assert_close(v, f_torch(_tt(XS), _tt(YS)), atol=1e-7, rtol=1e-7)
    (g2, aux) = func.grad(lambda a, b: (f_mine(a, b), "aux"), argnums=1, has_aux=True)(x, y)
    assert aux == "aux"
    assert_close(g2, g, atol=0, rtol=0)
    (v3, aux3), g3 = func.value_and_grad(lambda a: (a.sum() * 2.0, a * 3.0), has_aux=True)(x)
    assert_close(v3, 2 * XS.sum())
    assert_close(aux3, 3 * XS)
    assert_close(g3, [2.0, 2.0, 2.0])


def test_vjp(backend: Any) -> None:
    x, y = _t(XS, backend), _t(YS, backend)
    out, vjp_fn = func.vjp(lambda a, b: minitorch.tanh(a @ b), x, y)
    ct = _t([1.0, -2.0], backend)
    gx, gy = vjp_fn(ct)
    gx_again, _ = vjp_fn(ct)  # may be called again
    tout, tvjp = torch.func.vjp(lambda a, b: torch.tanh(a @ b), _tt(XS), _tt(YS))
    tgx, tgy = tvjp(_tt([1.0, -2.0]))
    assert_close(out, tout, atol=1e-7, rtol=1e-7)
    assert_close(gx, tgx, atol=1e-7, rtol=1e-7)
    assert_close(gy, tgy, atol=1e-7, rtol=1e-7)
    assert_close(gx_again, tgx, atol=1e-7, rtol=1e-7)
    (_o1, _o2), vjp2 = func.vjp(lambda a: (a * 2.0, a.exp()), x)
    (g,) = vjp2((_t([1.0, 1.0, 1.0], backend), _t([1.0, 0.0, 0.0], backend)))
    assert_close(g, [2.0 + np.exp(XS[0]), 2.0, 2.0], rtol=1e-12)


def test_jvp_matches_torch(backend: Any) -> None:
    x, y = _t(XS, backend), _t(YS, backend)
    tx, ty = _t([1.0, 0.5, -1.0], backend), _t(np.ones((3, 2)), backend)
    out, jt = func.jvp(lambda a, b: minitorch.tanh(a @ b), (x, y), (tx, ty))
    tout, tjt = torch.func.jvp(
        lambda a, b: torch.tanh(a @ b),
        (_tt(XS), _tt(YS)),
        (_tt([1.0, 0.5, -1.0]), _tt(np.ones((3, 2)))),
    )
    assert_close(out, tout, atol=1e-7, rtol=1e-7)
    assert_close(jt, tjt, atol=1e-7, rtol=1e-7)
    _, jt_lin = func.jvp(lambda a: a * 3.0, (x,), (tx,))  # linear: J t = 3 t
    assert_close(jt_lin, [3.0, 1.5, -3.0])


def test_jacobian_and_hessian_shapes_and_values(backend: Any) -> None:
    x, y = _t(XS, backend), _t(YS, backend)
    jac = func.jacobian(lambda a, b: minitorch.tanh(a @ b), argnums=(0, 1))(x, y)
    tjac = torch.func.jacrev(lambda a, b: torch.tanh(a @ b), argnums=(0, 1))(_tt(XS), _tt(YS))
    assert jac[0].shape == (2, 3) and jac[1].shape == (2, 3, 2)
    assert_close(jac[0], tjac[0], atol=1e-7, rtol=1e-7)
    assert_close(jac[1], tjac[1], atol=1e-7, rtol=1e-7)
    h = func.hessian(f_mine, argnums=1)(x, y)
    th = torch.func.hessian(f_torch, argnums=1)(_tt(XS), _tt(YS))
    assert h.shape == (3, 2, 3, 2)
    assert_close(h, th, atol=1e-7, rtol=1e-7)
    hh = func.hessian(f_mine, argnums=(0, 1))(x, y)
    thh = torch.func.hessian(f_torch, argnums=(0, 1))(_tt(XS), _tt(YS))
    for i in range(2):
        for j in range(2):
            assert_close(hh[i][j], thh[i][j], atol=1e-7, rtol=1e-7, msg=f"H[{i}][{j}]: ")
    scalar = _t(1.5, backend)
    assert func.jacobian(lambda a: a * a)(scalar).shape == ()


def test_transforms_compose_to_any_order(backend: Any) -> None:
    x = _t(0.7, backend)
    d3 = func.grad(func.grad(func.grad(minitorch.tanh)))(x)
    t = np.tanh(0.7)
    assert_close(d3, -2 * (1 - t**2) * (1 - 3 * t**2), atol=1e-12, rtol=1e-12)
    # jacobian of a jacobian equals the hessian
    g = lambda a: (a**3).sum()
    xs = _t([1.0, 2.0], backend)
    assert_close(func.jacobian(func.jacobian(g))(xs), func.hessian(g)(xs), atol=1e-12, rtol=0)


def test_no_perturbation_confusion(backend: Any) -> None:
    """d/dx [x * (d/dy x*y at y=x)] = d/dx x^2 = 2x (6 at 3), not d/dx x * 2x = 4x."""
    x = _t(3.0, backend)
    out = func.grad(lambda a: a * func.grad(lambda b: a * b)(a))(x)
    assert_close(out, 6.0)


def test_results_keep_their_graph_when_inputs_require_grad(backend: Any) -> None:
    w = _t([0.5, -0.5], backend, requires_grad=True)
    g = func.grad(lambda a: (a**3).sum())(w)
    assert g.requires_grad
    (h,) = minitorch.autograd.grad(g.sum(), w)
    assert_close(h, 6 * np.array([0.5, -0.5]))


def test_errors(backend: Any) -> None:
    x = _t(XS, backend)
    with pytest.raises(ValueError, match="scalar"):
        func.grad(lambda a: a * 2.0)(x)
    with pytest.raises(ValueError, match="out of range"):
        func.grad(lambda a: a.sum(), argnums=2)(x)
    with pytest.raises(TypeError, match="must be a minitorch Tensor"):
        func.grad(lambda a: a.sum())(np.ones(3))
    with pytest.raises(TypeError, match="pair"):
        func.grad(lambda a: a.sum(), has_aux=True)(x)
    with pytest.raises(ValueError, match="tangent 0"):
        func.jvp(lambda a: a, (x,), (_t([1.0], backend),))
    # an output that does not depend on the argument: zero gradient
    assert_close(func.grad(lambda a: _t(2.0, backend))(x), np.zeros(3))


def test_grad_returns_a_plain_value_unless_the_input_requires_grad() -> None:
    """As ``torch.func.grad``: no graph for a plain input; a graph (composable with
    autograd) when the input requires grad."""
    torch = pytest.importorskip("torch")
    from torch.func import grad as torch_grad

    f = lambda x: (x**3).sum()
    with minitorch.use_backend("numpy"):
        plain = func.grad(f)(minitorch.tensor([1.0, 2.0]))
        assert plain.grad_fn is None and not plain.requires_grad
        assert torch_grad(f)(torch.tensor([1.0, 2.0])).grad_fn is None
        x = minitorch.tensor([1.0, 2.0], requires_grad=True)
        g = func.grad(f)(x)
        assert g.grad_fn is not None
        assert torch_grad(f)(torch.tensor([1.0, 2.0], requires_grad=True)).grad_fn is not None
        g.sum().backward()
        assert x.grad.tolist() == [6.0, 12.0]  # d/dx sum(3x^2) = 6x
