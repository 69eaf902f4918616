"""Generated from the op registry: every op x every sample x the backend under test.

For each differentiable op: forward and gradients against PyTorch in float64 at 1e-7
(with a random, not all-ones, upstream gradient), float64 central-difference gradcheck,
the .grad shape/dtype/device invariants in float32 and float64, and no graph under
no_grad; for each op without gradient (comparisons, argmax, all ...), its forward
against PyTorch, exactly. Inputs are drawn on host NumPy with a seed and moved to the
backend. The catalog's zero-size samples run here with the others; the zero-size
variants derived from every sample run in test_zero_size.py.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch.ops import REGISTRY
from minitorch.testing import assert_close, gradcheck
from minitorch.testing._reference import torch_args
from minitorch.testing._samples import call, grad_inputs, sample_arrays, sample_tensors

CASES = [
    pytest.param(op, i, id=f"{name}-{i}")
    for name, op in sorted(REGISTRY.items())
    if op.builtin and op.differentiable
    for i in range(len(op.facts.samples))
]
REF_CASES = [c for c in CASES if c.values[0].facts.ref is not None]
FORWARD_CASES = [
    pytest.param(op, i, id=f"{name}-{i}")
    for name, op in sorted(REGISTRY.items())
    if op.builtin and not op.differentiable
    for i in range(len(op.facts.samples))
]
FAST = os.environ.get("MINITORCH_GRADCHECK_FAST") == "1"


def _skip_if_listed(op: Any, backend: Any) -> None:
    reason = op.facts.skips.get(backend.name)
    if reason:
        pytest.skip(f"{op.name} on {backend.name}: {reason}")


def test_registry_has_enough_differentiable_ops() -> None:
    diff = [op for op in REGISTRY.values() if op.builtin and op.differentiable]
    assert len(diff) >= 30, sorted(op.name for op in diff)


def test_every_op_has_samples_and_a_reference() -> None:
    """Every built-in op, differentiable or not, is checked on its catalog samples
    against PyTorch (minitorch check skips none)."""
    for op in REGISTRY.values():
        if op.builtin:
            assert op.facts.samples, f"{op.name} has no samples"
            assert op.facts.ref is not None, f"{op.name} has no PyTorch reference"


@pytest.mark.parametrize(("op", "k"), FORWARD_CASES)
def test_forward_without_gradient_against_torch(op: Any, k: int, backend: Any) -> None:
    """Comparisons, logical ops, argmax/argmin, all/any, sign, isfinite: the same values
    and kind of dtype (bool, integer) as PyTorch."""
    torch = pytest.importorskip("torch")
    _skip_if_listed(op, backend)
    sample = op.facts.samples[k]
    arrays = sample_arrays(op, sample, seed=k)
    out = call(op, sample_tensors(op, sample, backend, "float64", seed=k), sample.params)
    tout = op.facts.ref(torch, *torch_args(torch, arrays, ()), **sample.params)
    assert not out.requires_grad and out.grad_fn is None
    got = out.numpy()
    assert got.dtype.kind == tout.numpy().dtype.kind, (op.name, got.dtype, tout.dtype)
    assert_close(got, tout, atol=0, rtol=0, msg=f"{op.name} sample {k}: ")


@pytest.mark.parametrize(("op", "k"), REF_CASES)
def test_against_torch_float64(op: Any, k: int, backend: Any) -> None:
    torch = pytest.importorskip("torch")
    _skip_if_listed(op, backend)
    sample = op.facts.samples[k]
    arrays = sample_arrays(op, sample, seed=k)
    want = grad_inputs(op, arrays)
    inputs = sample_tensors(op, sample, backend, "float64", seed=k)
    out = call(op, inputs, sample.params)

    targs = torch_args(torch, arrays, want)
    tout = op.facts.ref(torch, *targs, **sample.params)
    atol, rtol = op.facts.tol.get("float64", (1e-7, 1e-7))
    assert_close(out, tout, atol=atol, rtol=rtol, msg=f"{op.name} forward: ")

    if not want:
        return
    rng = np.random.default_rng(100 + k)
    g = rng.standard_normal(tuple(tout.shape))
    out.backward(g)
    tgrads = torch.autograd.grad(tout, [targs[i] for i in want], torch.tensor(g), allow_unused=True)
    for i, tg in zip(want, tgrads, strict=True):
        got = inputs[i].grad
        expected = np.zeros(arrays[i].shape) if tg is None else tg
        assert got is not None, f"{op.name}: input {i} got no gradient"
        assert_close(
            backend.to_numpy(got),
            expected,
            atol=atol,
            rtol=rtol,
            msg=f"{op.name} grad of input {i}: ",
        )


@pytest.mark.parametrize(("op", "k"), CASES)
def test_gradcheck_float64(op: Any, k: int, backend: Any) -> None:
    _skip_if_listed(op, backend)
    sample = op.facts.samples[k]
    inputs = sample_tensors(op, sample, backend, "float64", seed=k)
    if not any(isinstance(t, minitorch.Tensor) and t.requires_grad for t in inputs):
        pytest.skip(f"{op.name} sample {k} has no differentiable input")
    assert gradcheck(lambda *a: call(op, list(a), sample.params), inputs, fast_mode=FAST)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("op", "k"), CASES)
def test_grad_matches_data(op: Any, k: int, dtype: str, backend: Any) -> None:
    """.grad has the shape, dtype and device of .data; the output keeps the dtype."""
    _skip_if_listed(op, backend)
    sample = op.facts.samples[k]
    inputs = sample_tensors(op, sample, backend, dtype, seed=k)
    out = call(op, inputs, sample.params)
    # (an op told its output dtype, astype, makes that dtype instead; move's output is on
    # another backend, with the same dtype)
    ob = out.backend
    if ob.xp.isdtype(out.dtype, "real floating") and "dtype" not in sample.params:
        assert ob.dtype_name(out.dtype) == dtype, f"{op.name}: {out.dtype} != {dtype}"
    if not out.requires_grad:
        pytest.skip("no differentiable input")
    out.sum().backward()
    for t in inputs:
        if isinstance(t, minitorch.Tensor) and t.requires_grad:
            assert t.grad is not None
            assert tuple(t.grad.shape) == t.shape
            assert t.grad.dtype == t.data.dtype
            assert str(t.grad.device) == str(t.data.device)


@pytest.mark.parametrize(("op", "k"), CASES)
def test_no_graph_under_no_grad(op: Any, k: int, backend: Any) -> None:
    sample = op.facts.samples[k]
    inputs = sample_tensors(op, sample, backend, "float64", seed=k)
    with minitorch.no_grad():
        out = call(op, inputs, sample.params)
    assert not out.requires_grad
    assert out.grad_fn is None


#: every op with a parameter that has no default (broadcast_to's shape, astype's dtype)
REQUIRED = [
    pytest.param(op, id=name)
    for name, op in sorted(REGISTRY.items())
    if op.builtin and op.facts.samples and any(p not in op.defaults for p in op.params)
]


@pytest.mark.parametrize("op", REQUIRED)
def test_a_missing_parameter_is_a_type_error_naming_the_op_and_the_parameter(
    op: Any, backend: Any
) -> None:
    """broadcast_to(x), reshape(x) and permute_dims(x) without their shape or axes took
    the fast path of a call with tensors alone (every parameter its default) and failed
    in the forward, as an OpError wrapping "TypeError: _broadcast_to() missing 1
    required positional argument: 'shape'"; the ops with a ``prepare`` (astype,
    matrix_power) already said "astype() missing parameter(s): dtype". Every way to call
    the op now says so: the function, its Tensor methods and the differentiable
    namespace."""
    missing = [p for p in op.params if p not in op.defaults]
    inputs = sample_tensors(op, op.facts.samples[0], backend, "float64", requires_grad=False)
    calls = [
        lambda: call(op, inputs, {}),
        *(
            (lambda m=m: getattr(inputs[0], m)(*inputs[1:]))
            for m in op.methods
            if not m.startswith("__")
        ),
    ]
    for make in calls:
        with pytest.raises(TypeError) as info:
            make()
        assert str(info.value) == f"{op.name}() missing parameter(s): {', '.join(missing)}"
        assert not isinstance(info.value, minitorch.OpError)
    # the namespace: the registry's words, or Python's where the namespace defines the
    # function itself (astype(x, dtype, /), reshape(x, /, shape))
    xp = minitorch.array_api.namespace(backend)
    with pytest.raises(TypeError) as info:
        getattr(xp, op.api or op.name)(*([inputs] if op.nin == -1 else inputs))
    assert not isinstance(info.value, minitorch.OpError)
    message = str(info.value)
    assert f"{op.name}() missing" in message and all(p in message for p in missing), message


def test_shape_methods_without_a_shape_are_refused_as_in_pytorch(backend: Any) -> None:
    """x.reshape() and x.view() were the 0-d shape (an OpError for more than one
    element, a silent 0-d tensor for one), x.permute() the empty permutation; PyTorch
    refuses all three. reshape(()) stays the 0-d shape."""
    x = minitorch.ones(1)
    for who, param, make in (
        ("reshape", "shape", x.reshape),
        ("view", "shape", x.view),
        ("permute", "dims", minitorch.ones(()).permute),
    ):
        with pytest.raises(TypeError, match=rf"^{who}\(\) missing parameter\(s\): {param}$"):
            make()
    assert x.reshape(()).shape == x.view(()).shape == () == minitorch.ones(()).permute(()).shape
