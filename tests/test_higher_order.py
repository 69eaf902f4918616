"""Higher-order derivatives, generated from the op registry for the backend under test.

For every differentiable op and sample: ``gradgradcheck`` (the gradient of the op's
VJP, with respect to the inputs and the upstream gradient, against central
differences in float64). Ops whose ``Facts.second_order`` is not ``"yes"`` also get
their documented behaviour asserted: a second derivative of zero away from the kinks.
Plus third and fourth derivatives against hand-derived values, the differentiable
array namespace, and a check that gradgradcheck catches a wrong rule.
"""

from __future__ import annotations

import gc
import math
import os
from typing import Any

import numpy as np
import pytest
from helpers import tensor_f64 as _t

import minitorch
from minitorch import autograd
from minitorch.ops import REGISTRY
from minitorch.ops._registry import Facts, OpDef
from minitorch.testing import GradcheckError, assert_close, gradgradcheck
from minitorch.testing._samples import call, sample_tensors

FAST = os.environ.get("MINITORCH_GRADCHECK_FAST") == "1"
SECOND_ORDER = ("yes", "zero")  # what Facts.second_order may start with

CASES = [
    pytest.param(op, i, id=f"{name}-{i}")
    for name, op in sorted(REGISTRY.items())
    if op.builtin and op.differentiable
    for i in range(len(op.facts.samples))
]
NOT_YES = [c for c in CASES if c.values[0].facts.second_order != "yes"]


def _skip_if_listed(op: Any, backend: Any) -> None:
    reason = op.facts.skips.get(backend.name)
    if reason:
        pytest.skip(f"{op.name} on {backend.name}: {reason}")


def test_second_order_facts_are_documented() -> None:
    for op in REGISTRY.values():
        if op.builtin and op.differentiable:
            assert op.facts.second_order.startswith(SECOND_ORDER), (op.name, op.facts.second_order)


@pytest.mark.parametrize(("op", "k"), CASES)
def test_gradgradcheck_float64(op: Any, k: int, backend: Any) -> None:
    _skip_if_listed(op, backend)
    if FAST and k > 0:
        pytest.skip(
            f"{backend.name}: light session (MINITORCH_GRADCHECK_FAST=1) checks the first "
            f"sample of each op only; every sample is checked on the other backends"
        )
    sample = op.facts.samples[k]
    inputs = sample_tensors(op, sample, backend, "float64", seed=k)
    if not any(isinstance(t, minitorch.Tensor) and t.requires_grad for t in inputs):
        pytest.skip(f"{op.name} sample {k} has no differentiable input")
    assert gradgradcheck(
        lambda *a: call(op, list(a), sample.params), inputs, fast_mode=FAST, seed=k
    )


@pytest.mark.parametrize(("op", "k"), NOT_YES)
def test_documented_zero_second_derivative(op: Any, k: int, backend: Any) -> None:
    """Away from kinks, ops documented as ``zero`` have a Hessian-vector product of 0."""
    _skip_if_listed(op, backend)
    assert op.facts.second_order.startswith("zero")
    sample = op.facts.samples[k]
    inputs = sample_tensors(op, sample, backend, "float64", seed=k)
    diff = [t for t in inputs if isinstance(t, minitorch.Tensor) and t.requires_grad]
    out = call(op, inputs, sample.params)
    rng = np.random.default_rng(k)
    v = _t(rng.standard_normal(out.shape), backend)
    gs = autograd.grad(out, diff, v, create_graph=True, allow_unused=True)
    # <g, u> for a random direction u; its gradient with respect to the inputs is H u
    total = None
    for g, x in zip(gs, diff, strict=True):
        if g is not None:
            term = (g * _t(rng.standard_normal(x.shape), backend)).sum()
            total = term if total is None else total + term
    assert total is not None, f"{op.name}: no first-order gradient"
    if not total.requires_grad:
        return  # the VJP does not depend on the inputs at all: zero, exactly
    hvs = autograd.grad(total, diff, allow_unused=True, materialize_grads=True)
    for h in hvs:
        assert_close(h, np.zeros(h.shape), atol=0.0, rtol=0.0, msg=f"{op.name} H u: ")


# ------------------------------------------------------------------ any order
def test_fourth_derivative_of_a_polynomial(backend: Any) -> None:
    """d^n/dx^n x^5 = 5!/(5-n)! x^(5-n), exactly."""
    x = _t([0.5, -1.25, 2.0], backend, requires_grad=True)
    y = (x**5).sum()
    xs = np.array([0.5, -1.25, 2.0])
    for n in range(1, 5):
        (y,) = autograd.grad(y, x, create_graph=True)
        coef = math.factorial(5) / math.factorial(5 - n)
        assert_close(y, coef * xs ** (5 - n), atol=1e-12, rtol=1e-12, msg=f"order {n}: ")
        y = y.sum()


def test_third_derivative_of_tanh(backend: Any) -> None:
    """tanh''' = -2 (1 - t^2)(1 - 3 t^2) with t = tanh(x)."""
    xs = np.array([-1.3, 0.2, 0.9])
    x = _t(xs, backend, requires_grad=True)
    (g1,) = autograd.grad(x.tanh().sum(), x, create_graph=True)
    (g2,) = autograd.grad(g1.sum(), x, create_graph=True)
    (g3,) = autograd.grad(g2.sum(), x)
    t = np.tanh(xs)
    assert_close(g2, -2 * t * (1 - t**2), atol=1e-12, rtol=1e-12)
    assert_close(g3, -2 * (1 - t**2) * (1 - 3 * t**2), atol=1e-12, rtol=1e-12)
    assert not g3.requires_grad  # create_graph=False: a constant


def test_third_order_gradcheck_of_a_composite(backend: Any) -> None:
    """gradgradcheck of a function that is itself a gradient: third derivatives."""
    x = _t([[0.3, -0.7], [1.1, 0.4]], backend, requires_grad=True)
    w = _t([[0.5, -1.0], [0.25, 2.0]], backend, requires_grad=True)

    def first(a: Any, b: Any) -> Any:
        f = minitorch.softplus(a @ b).sum() + (minitorch.gelu(a) * b.sigmoid()).sum()
        (ga,) = autograd.grad(f, a, create_graph=True)
        return ga

    assert gradgradcheck(first, [x, w], fast_mode=FAST)


# ------------------------------------------------------------------ gradgradcheck itself
def test_gradgradcheck_catches_a_vjp_that_uses_a_saved_derived_value(backend: Any) -> None:
    """An exp whose VJP multiplies by a *copy* of the output is right at first order
    and wrong at second order (the copy is a constant to the graph)."""

    def fwd(xp: Any, x: Any) -> Any:
        out = xp.exp(x)
        return out, (out * 1.0,)

    def vjp(xp: Any, g: Any, saved: Any, needs: Any) -> Any:
        return (g * saved[0],)

    bad = OpDef("bad_exp", fwd, vjp, 1, (), {}, False, False, Facts())
    x = _t([0.1, -0.4, 0.8], backend, requires_grad=True)
    f = lambda t: autograd.apply(bad, [t], {})
    minitorch.testing.gradcheck(f, [x])  # first order is right
    with pytest.raises(GradcheckError):
        gradgradcheck(f, [x])


def test_gradgradcheck_rejects_bad_arguments(backend: Any) -> None:
    x = _t([1.0, 2.0], backend)
    with pytest.raises(ValueError, match="no input requires grad"):
        gradgradcheck(lambda t: t * t, [x])
    x.requires_grad_()
    with pytest.raises(ValueError, match="grad_outputs has shape"):
        gradgradcheck(lambda t: t * t, [x], _t([1.0], backend))


# ------------------------------------------------------------------ engine details
def test_constant_operand_sharing_an_array_stays_constant(backend: Any) -> None:
    """x * x.detach(): both inputs hold one array; the second is a constant."""
    x = _t([1.0, 2.0], backend, requires_grad=True)
    (g,) = autograd.grad((x * x.detach()).sum(), x, create_graph=True)
    assert_close(g, [1.0, 2.0])
    assert not g.requires_grad
    (g,) = autograd.grad((x.detach() * x).sum(), x, create_graph=True)
    assert not g.requires_grad


def _live_nodes() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is autograd.Node)


def test_saved_tensors_make_no_reference_cycles(backend: Any) -> None:
    """Graphs of create_graph results are freed by reference counting alone."""
    gc.collect()
    gc.disable()
    try:
        before = _live_nodes()
        x = _t([0.3, 0.6], backend, requires_grad=True)
        y = (x.tanh() * x.exp()).sum()
        (g,) = autograd.grad(y, x, create_graph=True)
        (h,) = autograd.grad((g * g).sum(), x, create_graph=True)
        assert _live_nodes() > before + 5
        del y, g, h
        assert _live_nodes() == before
    finally:
        gc.enable()


# ------------------------------------------------------------------ the namespace
def test_tensor_namespace_is_its_backends_namespace(backend: Any) -> None:
    x = _t([1.0, 2.0], backend, requires_grad=True)
    xp = x.__array_namespace__()
    assert xp is minitorch.array_api.namespace(x.backend)
    assert xp.backend is x.backend
    y = xp.sum(xp.exp(xp.multiply(x, 2.0)))
    assert isinstance(y, minitorch.Tensor) and y.requires_grad
    (g,) = autograd.grad(y, x)
    assert_close(g, 2 * np.exp(2 * np.array([1.0, 2.0])), rtol=1e-12)


def test_namespace_mixes_raw_arrays_and_tensors(backend: Any) -> None:
    """What VJPs do: masks and constants as raw backend arrays next to Tensors."""
    xpb = backend.xp
    xp = minitorch.array_api
    x = _t([-1.0, 0.5, 2.0], backend, requires_grad=True)
    mask_raw = backend.from_numpy(
        np.array([True, False, True]), backend.resolve_dtype("bool"), backend.device
    )
    scale_raw = backend.from_numpy(
        np.array([1.0, 2.0, 3.0]), backend.resolve_dtype("float64"), backend.device
    )
    # (raw * Tensor works where the library defers to Tensor; array_api_strict raises,
    # so VJPs keep the Tensor on the left or call xp.multiply)
    y = (
        xp.where(mask_raw, x * x, 0.0)
        + x * xp.astype(mask_raw, x.dtype)
        + xp.multiply(scale_raw, x)
    )
    y = xp.sum(y * scale_raw)
    (g,) = autograd.grad(y, x)
    xs = np.array([-1.0, 0.5, 2.0])
    m = np.array([1.0, 0.0, 1.0])
    s = np.array([1.0, 2.0, 3.0])
    assert_close(g, s * (2 * xs * m + m + s), rtol=1e-12)
    assert xp.isdtype(x.dtype, "real floating")
    assert xp.float64 == xpb.float64
    idx = xp.arange(3, device=x.device)  # a constant Tensor, as every creation function
    assert isinstance(idx, minitorch.Tensor) and not idx.requires_grad
    assert idx.tolist() == [0, 1, 2]
    with pytest.raises(AttributeError, match="not provided"):
        _ = xp.no_such_function


def test_move_between_backends_is_differentiable_twice() -> None:
    pytest.importorskip("torch")
    with minitorch.use_backend("numpy", dtype="float64"):
        x = minitorch.tensor([1.0, 2.0], requires_grad=True)
        y = x.to("torch")
        (g,) = autograd.grad((y**3).sum(), x, create_graph=True)
        assert g.backend.name == "numpy"
        assert_close(g, [3.0, 12.0])
        (h,) = autograd.grad(g.sum(), x)
        assert_close(h, [6.0, 12.0])


# ------------------------------------------------------------------ one namespace per backend
def _other_backends(backend: Any) -> list[Any]:
    """Every other installed backend that can make arrays here (float64 where it can)."""
    out = []
    for name in minitorch.available_backends():
        if name == backend.name:
            continue
        try:
            be = minitorch.backend.resolve(name, "float64")
            be.from_numpy(np.zeros(1), be.dtype, be.device)  # CuPy imports without a GPU
        except Exception:
            continue
        out.append(be)
    return out


def test_namespace_makes_tensors_of_its_own_backend_whatever_is_current(backend: Any) -> None:
    """``x.__array_namespace__().zeros`` is ``x``'s backend and device even while
    another backend is the current one, so ``x + z`` works."""
    others = _other_backends(backend)
    if not others:
        pytest.skip(f"{backend.name}: no other backend installed in this session")
    x = _t([1.0, 2.0], backend, requires_grad=True)
    for other in others:
        with minitorch.use_backend(other.name):
            xp = x.__array_namespace__()
            z = xp.zeros((2,))
            assert z.backend is x.backend and str(z.device) == str(x.device), other.name
            assert xp.ones((2,)).backend is x.backend
            assert xp.asarray([3.0, 4.0]).backend is x.backend
            y = x + z + xp.full((2,), 1.0)
            assert y.backend.name == backend.name
            assert_close(y, np.array([2.0, 3.0]), rtol=0)


def test_create_graph_uses_the_nodes_backend_not_the_current_one(backend: Any) -> None:
    """Second derivatives of ops whose VJPs make constants, computed while another
    backend is current, are those of the tensors' backend (and correct)."""
    others = _other_backends(backend)
    if not others:
        pytest.skip(f"{backend.name}: no other backend installed in this session")
    data = np.array([[0.3, -1.2, 2.0], [1.5, 0.1, -0.4]])
    for other in others:
        x = _t(data, backend, requires_grad=True)
        with minitorch.use_backend(other.name):
            y = (minitorch.log_softmax(x, axis=-1) * x).sum() + minitorch.relu(x).max()
            (g,) = autograd.grad(y, x, create_graph=True)
            assert g.backend is x.backend
            (h,) = autograd.grad((g * g).sum(), x)
        assert h.backend is x.backend
        # the same numbers as with the tensors' own backend current
        x2 = _t(data, backend, requires_grad=True)
        y2 = (minitorch.log_softmax(x2, axis=-1) * x2).sum() + minitorch.relu(x2).max()
        (g2,) = autograd.grad(y2, x2, create_graph=True)
        (h2,) = autograd.grad((g2 * g2).sum(), x2)
        assert_close(h, backend.to_numpy(h2.data), rtol=1e-12)


def test_boolean_operators_on_tensors(backend: Any) -> None:
    a = minitorch.Tensor._make(
        backend.from_numpy(np.array([True, True, False]), backend.dtypes["bool"], backend.device),
        backend,
        None,
    )
    b = minitorch.Tensor._make(
        backend.from_numpy(np.array([True, False, False]), backend.dtypes["bool"], backend.device),
        backend,
        None,
    )
    assert (a & b).tolist() == [True, False, False]
    assert (a | b).tolist() == [True, True, False]
    assert (~a).tolist() == [False, False, True]
    assert (a & True).tolist() == [True, True, False]
    assert (False | b).tolist() == [True, False, False]
    x = _t([-1.0, 0.5, 2.0], backend, requires_grad=True)
    inside = (x > 0.0) & (x < 1.0)
    assert inside.tolist() == [False, True, False]


def _band(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """x^2 on 0 < x < 1, else 0 (a test op whose VJP combines masks with &)."""
    inside = (x > 0.0) & (x < 1.0)
    return xp.where(inside, x * x, 0.0), (x,)


def _band_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (x,) = saved
    inside = (x > 0.0) & (x < 1.0) | (x == 0.5)  # & and | on masks: Tensors under create_graph
    return (xp.where(inside, 2.0 * x * g, 0.0),)


band = minitorch.defop("test_band", _band, _band_vjp)


def test_a_vjp_using_boolean_operators_runs_under_create_graph(backend: Any) -> None:
    x = _t([-0.5, 0.25, 0.75, 1.5], backend, requires_grad=True)
    (g,) = autograd.grad(band(x).sum(), x, create_graph=True)
    assert_close(g, np.array([0.0, 0.5, 1.5, 0.0]), rtol=1e-12)
    (h,) = autograd.grad(g.sum(), x)
    assert_close(h, np.array([0.0, 2.0, 2.0, 0.0]), rtol=1e-12)
