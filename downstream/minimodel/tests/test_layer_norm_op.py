"""The layer norm custom op (fused forward, hand-written VJP) against the composed
version and against PyTorch, and its gradients against central differences, to second
order, on every backend in float64."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from minimodel.functional import layer_norm, layer_norm_composed

import minitorch
from conftest import host
from minitorch.testing import check_op, gradcheck, gradgradcheck

torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")
TOL = {"rtol": 1e-6, "atol": 1e-6}


def _inputs(shape: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    d = shape[-1]
    return [rng.standard_normal(shape) * 2 + 0.5, rng.standard_normal(d), rng.standard_normal(d)]


@pytest.mark.parametrize("shape", [(4, 6), (2, 3, 5), (7,), (2, 1, 64)])
@pytest.mark.parametrize("eps", [1e-5, 1e-2])
def test_fused_equals_composed_equals_torch(
    backend: Any, shape: tuple[int, ...], eps: float
) -> None:
    arrays = _inputs(shape)
    upstream = np.random.default_rng(9).standard_normal(shape)
    results = {}
    for name, fn in (("fused", layer_norm), ("composed", layer_norm_composed)):
        ts = [minitorch.tensor(a, requires_grad=True) for a in arrays]
        y = fn(*ts, eps=eps)
        y.backward(minitorch.tensor(upstream))
        results[name] = [host(y)] + [host(t.grad) for t in ts]
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    ty = torch.nn.functional.layer_norm(tt[0], (shape[-1],), tt[1], tt[2], eps)
    ty.backward(torch.from_numpy(upstream))
    expected = [host(ty)] + [host(t.grad) for t in tt]
    what = ["output", "grad x", "grad weight", "grad bias"]
    for name, got in results.items():
        for w, a, e in zip(what, got, expected, strict=True):
            np.testing.assert_allclose(a, e, **TOL, err_msg=f"{name}: {w}")
    for w, a, b in zip(what, results["fused"], results["composed"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=f"fused vs composed: {w}")


def test_custom_op_is_one_node(backend: Any) -> None:
    x, w, b = (minitorch.tensor(a, requires_grad=True) for a in _inputs((3, 4)))
    y = layer_norm(x, w, b)
    assert y.grad_fn is not None and "minimodel_layer_norm" in repr(y.grad_fn)
    assert minitorch.REGISTRY["minimodel_layer_norm"].fn is layer_norm


@pytest.mark.parametrize("fn", [layer_norm, layer_norm_composed], ids=["fused", "composed"])
def test_gradcheck_and_gradgradcheck(backend: Any, fn: Any) -> None:
    x, w, b = (minitorch.tensor(a, requires_grad=True) for a in _inputs((3, 5), seed=2))
    fast = backend.name == "jax"  # JAX dispatch is slow per op: one random projection
    assert gradcheck(fn, [x, w, b], fast_mode=fast)
    assert gradgradcheck(fn, [x, w, b], fast_mode=fast)


def test_check_op(backend: Any) -> None:
    """minitorch's own op checks (forward and gradients vs PyTorch through Facts.ref,
    gradcheck, gradgradcheck) on every sample of the op's facts."""
    report = check_op(layer_norm, backend)
    assert len(report) == 3
    assert all(r.forward_error < 1e-12 for r in report)
