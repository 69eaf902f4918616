"""Numerical stability of softmax, log_softmax, logsumexp and cross_entropy.

Logits of magnitude 1e4 overflow a naive ``exp`` (e^710 is already inf in float64, e^89
in float32); rows with ``-inf`` entries (masked positions) must give zero probability
there. Outputs and gradients stay finite, match PyTorch float64 (computed on the same,
dtype-rounded inputs), and keep the input's dtype (float32 and float64) end to end.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch.testing import assert_close, gradcheck

torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")

DTYPES = ["float32", "float64"]
#: dtype -> (atol, rtol) against the float64 reference (float32 rounds each op at ~6e-8)
TOL = {"float64": (1e-7, 1e-7), "float32": (1e-5, 1e-5)}

# op name -> (minitorch call, torch reference); all along the last axis
OPS: dict[str, tuple[Any, Any]] = {
    "softmax": (lambda x: minitorch.softmax(x, axis=-1), lambda t: torch.softmax(t, dim=-1)),
    "log_softmax": (
        lambda x: minitorch.log_softmax(x, axis=-1),
        lambda t: torch.log_softmax(t, dim=-1),
    ),
    "logsumexp": (
        lambda x: minitorch.logsumexp(x, axis=-1),
        lambda t: torch.logsumexp(t, dim=-1),
    ),
}


def _large_logits(rng: np.random.Generator) -> np.ndarray:
    """Rows of magnitude 1e4: spread out, and O(1) differences on a +-1e4 offset."""
    return np.stack(
        [
            1e4 * rng.standard_normal(6),
            1e4 + rng.standard_normal(6),
            -1e4 + rng.standard_normal(6),
            np.array([1e4, -1e4, 0.0, 1e4 - 1.0, -3e4, 3e4]),
        ]
    )


def _minus_inf_logits(rng: np.random.Generator) -> np.ndarray:
    """Some ``-inf`` entries; every row keeps at least one finite entry."""
    x = rng.standard_normal((4, 5))
    x[0, 1] = x[0, 3] = -np.inf
    x[1, :4] = -np.inf  # a single finite entry
    x[2, 0] = -np.inf
    x[3, 2] = -np.inf
    x[3] += 1e4  # and a large offset with it
    return x


def _run(fn: Any, ref: Any, host: np.ndarray, dtype: str, seed: int) -> tuple[Any, Any, Any, Any]:
    """Forward + backward on minitorch (in ``dtype``) and on torch (float64, same inputs)."""
    rounded = host.astype(dtype).astype(np.float64)
    x = minitorch.tensor(host, dtype=dtype, requires_grad=True)
    out = fn(x)
    g = np.random.default_rng(seed).standard_normal(out.shape).astype(dtype)
    out.backward(g)
    tx = torch.tensor(rounded, dtype=torch.float64, requires_grad=True)
    tout = ref(tx)
    (tg,) = torch.autograd.grad(tout, [tx], torch.tensor(g.astype(np.float64)))
    return x, out, tout, tg


def _host(t: Any) -> np.ndarray:
    return np.asarray(t.backend.to_numpy(t.data))


def _grad_tol(name: str, dtype: str, host: np.ndarray) -> tuple[float, float]:
    """logsumexp's VJP is ``g * exp(x - out)`` (as PyTorch's): ``out`` is rounded at the
    scale of the logits, so in float32 the gradient is only good to ``2**-24 * max|x|``
    relative (PyTorch float32 shows the same ~1e-4 at 1e4)."""
    atol, rtol = TOL[dtype]
    if name == "logsumexp" and dtype == "float32":
        rtol = max(rtol, 2.0**-23 * float(np.max(np.abs(host[np.isfinite(host)]))))
    return atol, rtol


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(OPS))
def test_large_logits_stay_finite_and_match_torch(name: str, dtype: str, backend: Any) -> None:
    fn, ref = OPS[name]
    host = _large_logits(np.random.default_rng(0))
    x, out, tout, tg = _run(fn, ref, host, dtype, seed=1)
    want = backend.resolve_dtype(dtype)
    assert out.dtype == want, f"{name}: output dtype {out.dtype}, input {dtype}"
    assert x.grad is not None and x.grad.dtype == want, f"{name}: grad dtype, input {dtype}"
    assert np.isfinite(_host(out)).all(), f"{name} overflowed: {_host(out)}"
    grad = np.asarray(backend.to_numpy(x.grad))
    assert np.isfinite(grad).all(), f"{name} gradient overflowed: {grad}"
    atol, rtol = TOL[dtype]
    assert_close(out, tout, atol=atol, rtol=rtol, msg=f"{name} {dtype} forward: ")
    atol, rtol = _grad_tol(name, dtype, host)
    assert_close(grad, tg, atol=atol, rtol=rtol, msg=f"{name} {dtype} grad: ")


@pytest.mark.parametrize("name", sorted(OPS))
def test_large_logits_gradcheck(name: str, backend: Any) -> None:
    """Central differences agree too (the O(1) differences on a 1e4 offset)."""
    fn, _ = OPS[name]
    rng = np.random.default_rng(3)
    host = np.stack([1e4 + rng.standard_normal(4), -1e4 + rng.standard_normal(4)])
    x = minitorch.tensor(host, dtype="float64", requires_grad=True)
    assert gradcheck(fn, [x])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(OPS))
def test_minus_inf_entries(name: str, dtype: str, backend: Any) -> None:
    fn, ref = OPS[name]
    host = _minus_inf_logits(np.random.default_rng(4))
    masked = np.isneginf(host)
    x, out, tout, tg = _run(fn, ref, host, dtype, seed=5)
    want = backend.resolve_dtype(dtype)
    assert out.dtype == want and x.grad is not None and x.grad.dtype == want
    got = _host(out)
    grad = np.asarray(backend.to_numpy(x.grad))
    assert not np.isnan(got).any(), f"{name}: NaN in {got}"
    assert np.isfinite(grad).all(), f"{name}: gradient not finite: {grad}"
    if name == "log_softmax":
        # log(0) = -inf exactly at the masked entries, finite elsewhere; d out_j / d x_j
        # is 1 there, so the gradient at a masked entry is g_j (as PyTorch)
        assert (np.isneginf(got) == masked).all(), got
    else:
        assert np.isfinite(got).all(), got
        assert (grad[masked] == 0.0).all(), f"{name}: gradient at -inf entries: {grad[masked]}"
    if name == "softmax":
        assert (got[masked] == 0.0).all()
        assert_close(got.sum(axis=-1), np.ones(4), atol=10 * TOL[dtype][0], rtol=0.0)
    atol, rtol = TOL[dtype]
    assert_close(out, tout, atol=atol, rtol=rtol, msg=f"{name} {dtype} forward: ")
    atol, rtol = _grad_tol(name, dtype, host)
    assert_close(grad, tg, atol=atol, rtol=rtol, msg=f"{name} {dtype} grad: ")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_large_logits(dtype: str, reduction: str, backend: Any) -> None:
    rng = np.random.default_rng(6)
    host = _large_logits(rng)
    targets = np.array([0, 5, 2, 4])
    rounded = host.astype(dtype).astype(np.float64)
    x = minitorch.tensor(host, dtype=dtype, requires_grad=True)
    t = minitorch.tensor(targets, dtype="int64")
    out = minitorch.cross_entropy(x, t, reduction=reduction)
    g = rng.standard_normal(out.shape).astype(dtype)
    out.backward(g)
    want = backend.resolve_dtype(dtype)
    assert out.dtype == want and x.grad is not None and x.grad.dtype == want
    grad = np.asarray(backend.to_numpy(x.grad))
    assert np.isfinite(_host(out)).all() and np.isfinite(grad).all()

    tx = torch.tensor(rounded, dtype=torch.float64, requires_grad=True)
    tout = torch.nn.functional.cross_entropy(tx, torch.tensor(targets), reduction=reduction)
    (tg,) = torch.autograd.grad(tout, [tx], torch.tensor(g.astype(np.float64)))
    # losses reach ~4e4: relative tolerance on the loss, absolute on the gradient
    atol, rtol = TOL[dtype]
    assert_close(out, tout, atol=atol, rtol=rtol, msg=f"cross_entropy {dtype} {reduction}: ")
    assert_close(grad, tg, atol=atol, rtol=rtol, msg=f"cross_entropy {dtype} {reduction} grad: ")


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_with_minus_inf_logits(dtype: str, backend: Any) -> None:
    """Masked (-inf) classes that are not the target: finite loss, zero gradient there."""
    host = _minus_inf_logits(np.random.default_rng(8))
    targets = np.array([0, 4, 1, 0])  # never a masked class
    assert not np.isneginf(host[np.arange(4), targets]).any()
    x = minitorch.tensor(host, dtype=dtype, requires_grad=True)
    out = minitorch.cross_entropy(x, minitorch.tensor(targets, dtype="int64"))
    out.backward()
    grad = np.asarray(backend.to_numpy(x.grad))
    assert np.isfinite(_host(out)).all() and np.isfinite(grad).all()
    assert (grad[np.isneginf(host)] == 0.0).all()

    tx = torch.tensor(host.astype(dtype).astype(np.float64), requires_grad=True)
    tout = torch.nn.functional.cross_entropy(tx, torch.tensor(targets))
    (tg,) = torch.autograd.grad(tout, [tx])
    atol, rtol = TOL[dtype]
    assert_close(out, tout, atol=atol, rtol=rtol, msg=f"cross_entropy {dtype}: ")
    assert_close(grad, tg, atol=atol, rtol=rtol, msg=f"cross_entropy {dtype} grad: ")


@pytest.mark.parametrize("name", [*sorted(OPS), "cross_entropy"])
def test_undefined_rows_are_nan_as_in_pytorch(name: str, backend: Any) -> None:
    """A row with a +inf logit, or with every logit -inf, has no softmax: nan there, as
    PyTorch gives (logsumexp is defined: +inf and -inf); the other rows are unaffected."""
    host = np.array([[np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf], [-np.inf, 2.0, 0.5]])
    t = torch.tensor(host)
    x = minitorch.tensor(host, dtype="float64")
    with np.errstate(invalid="ignore", divide="ignore"):  # NumPy warns on inf - inf
        if name == "cross_entropy":
            targets = np.array([1, 0, 2])
            y = minitorch.tensor(targets, dtype="int64")
            out = minitorch.cross_entropy(x, y, reduction="none")
            want = torch.nn.functional.cross_entropy(t, torch.tensor(targets), reduction="none")
        else:
            fn, ref = OPS[name]
            out, want = fn(x), ref(t)
    np.testing.assert_allclose(_host(out), want.numpy(), rtol=1e-12, atol=0.0, equal_nan=True)
    assert not np.isnan(_host(out)[-1]).any()
