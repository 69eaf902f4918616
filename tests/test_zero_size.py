"""Zero-size inputs, every op: the catalog's samples with one dimension made 0.

``zero_size_samples`` derives variants from each op's catalog samples; the catalog adds
explicit zero-size samples where a derived one does not reach a case (a reduction over
the zero-size axis itself, a non-empty input with an empty result). Each is held against
PyTorch float64: where PyTorch returns a result, the values (nan for nan, -inf for -inf)
and gradients (empty ones, or zeros for inputs that are not empty) must match, with no
warning from the backend, and gradcheck and gradgradcheck pass; where PyTorch refuses
the input, minitorch must refuse it too, with an OpError of its own that names the op
and the input's shape (not a backend's error passed on).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch.errors import OpError
from minitorch.ops import REGISTRY
from minitorch.ops._registry import InputError, OpDef, Sample
from minitorch.testing import assert_close, check_op, gradcheck, gradgradcheck
from minitorch.testing._reference import torch_args
from minitorch.testing._samples import (
    ZERO_SIZE,
    _zeroed,
    call,
    checked_samples,
    grad_inputs,
    sample_arrays,
    sample_tensors,
    zero_size_samples,
)

torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")

FAST = os.environ.get("MINITORCH_GRADCHECK_FAST") == "1"
BUILTIN = sorted((name, op) for name, op in REGISTRY.items() if op.builtin)


def _is_zero_size(op: OpDef, sample: Sample) -> bool:
    return any(isinstance(a, np.ndarray) and a.size == 0 for a in sample_arrays(op, sample))


def _zero_size_cases(op: OpDef) -> list[tuple[int, Sample]]:
    """The op's zero-size samples, explicit and derived, with their seeds."""
    return [(k, s) for k, s in enumerate(checked_samples(op)) if _is_zero_size(op, s)]


OPS = [pytest.param(op, id=name) for name, op in BUILTIN if _zero_size_cases(op)]


def _shape_text(shape: tuple[int, ...]) -> str:
    """A shape as the messages print it: ``(0, 4)``, ``(0,)``."""
    return str(tuple(shape))


def _written_by_minitorch(exc: BaseException) -> bool:
    """Whether minitorch's own code said what is wrong: an OpError it raised, or the
    InputError of the op's own check, which the engine reports as an OpError (adding the
    inputs' shapes, dtypes and backend); not an array library's error passed on."""
    return " failed on inputs " not in str(exc) or isinstance(exc.__cause__, InputError)


def _run_torch(op: OpDef, arrays: list[Any], want: tuple[int, ...], params: dict[str, Any]) -> Any:
    """PyTorch's output (the reference), or the exception it raised."""
    targs = torch_args(torch, arrays, want)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # var(): "degrees of freedom is <= 0"
            return targs, op.facts.ref(torch, *targs, **params)
    except Exception as exc:  # PyTorch refuses these inputs
        return targs, exc


def _check_variant(op: OpDef, k: int, sample: Sample, backend: Any) -> None:
    """One zero-size sample against PyTorch: refused as PyTorch refuses it, or the same
    values and gradients."""
    what = f"{op.name} {sample.name} {sample.params or ''} on {backend.name}"
    arrays = sample_arrays(op, sample, seed=k)
    want = grad_inputs(op, arrays) if op.differentiable else ()
    inputs = sample_tensors(op, sample, backend, "float64", seed=k)
    targs, tout = _run_torch(op, arrays, want, sample.params)
    if isinstance(tout, Exception):
        with pytest.raises(OpError) as info:
            call(op, inputs, sample.params)
        msg = str(info.value)
        assert msg.startswith(op.name), f"{what}: the error does not name the op: {msg}"
        assert _written_by_minitorch(info.value), f"{what}: a backend's error passed on: {msg}"
        shapes = [_shape_text(a.shape) for a in arrays if isinstance(a, np.ndarray)]
        assert any(s in msg for s in shapes), f"{what}: the error names no input shape: {msg}"
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "mean of empty slice", no "divide by zero"
        out = call(op, inputs, sample.params)
        atol, rtol = op.facts.tol.get("float64", (1e-7, 1e-7))
        assert_close(out, tout, atol=atol, rtol=rtol, msg=f"{what} forward: ")
        if not (want and out.requires_grad):
            return
        g = np.random.default_rng(100 + k).standard_normal(tuple(tout.shape))
        out.backward(g)
    tgrads = torch.autograd.grad(tout, [targs[i] for i in want], torch.tensor(g), allow_unused=True)
    for i, tg in zip(want, tgrads, strict=True):
        got = inputs[i].grad
        assert got is not None, f"{what}: input {i} got no gradient"
        expected = np.zeros(arrays[i].shape) if tg is None else tg
        assert_close(backend.to_numpy(got), expected, msg=f"{what} grad of input {i}: ")
        assert tuple(got.shape) == inputs[i].shape and got.dtype == inputs[i].data.dtype
        assert str(got.device) == str(inputs[i].data.device), what

    fresh = sample_tensors(op, sample, backend, "float64", seed=k)

    def fn(*a: Any) -> Any:
        return call(op, list(a), sample.params)

    assert gradcheck(fn, fresh, fast_mode=FAST)
    assert gradgradcheck(fn, fresh, fast_mode=FAST, seed=k)


@pytest.mark.parametrize("op", OPS)
def test_zero_size_variants_match_pytorch(op: OpDef, backend: Any) -> None:
    reason = op.facts.skips.get(backend.name)
    if reason:
        pytest.skip(f"{op.name} on {backend.name}: {reason}")
    for k, sample in _zero_size_cases(op):
        _check_variant(op, k, sample, backend)


@pytest.mark.parametrize(
    ("shapes", "variants"),
    [
        ([(3, 4)], [((0, 4),)]),
        ([(3, 4), (3, 4)], [((0, 4), (0, 4))]),
        ([(), (3,)], [((), (0,))]),
        ([(3,), None], [((0,), None)]),  # a number stays
        ([(4, 1), (1, 3)], [((0, 1), (0, 3)), ((0, 1), (1, 3))]),
        ([(4,), (3, 4)], [((4,), (0, 4))]),  # axis 0 of both would not broadcast
        ([(6, 4), (6,)], [((0, 4), (0,))]),  # a batch (logits, targets): axis 0 of both
        ([(3, 4), (4, 5)], [((0, 4), (0, 5))]),  # matmul: PyTorch refuses it, so must we
        ([(2, 0)], []),  # zero-size already
        ([()], []),  # nothing to make 0
    ],
)
def test_how_a_variant_is_derived(shapes: list[Any], variants: list[Any]) -> None:
    assert _zeroed(shapes) == variants


def test_every_sample_has_its_zero_size_variants() -> None:
    """Each variant of each catalog sample is checked once: derived, or in the catalog."""
    for _, op in BUILTIN:
        derived = zero_size_samples(op)
        assert checked_samples(op) == (*op.facts.samples, *derived)
        for sample in derived:
            assert sample.name.startswith(ZERO_SIZE) and _is_zero_size(op, sample), sample
        keys = [_key(op, s) for s in checked_samples(op)]
        empty = [_key(op, s) for k, s in _zero_size_cases(op)]
        assert len(set(empty)) == len(empty), f"{op.name}: a zero-size case is checked twice"
        for sample in op.facts.samples:
            given = [a.shape if isinstance(a, np.ndarray) else a for a in sample_arrays(op, sample)]
            arrays = [s if isinstance(s, tuple) else None for s in given]
            for zeroed in _zeroed(arrays):
                shown = tuple(g if z is None else z for g, z in zip(given, zeroed, strict=True))
                assert (shown, _params(sample)) in keys, (op.name, sample, zeroed)


def _params(sample: Sample) -> str:
    return repr(sorted(sample.params.items()))


def _key(op: OpDef, sample: Sample) -> tuple[Any, str]:
    """A sample's input shapes (numbers as they are) and parameters."""
    arrays = sample_arrays(op, sample)
    return tuple(a.shape if isinstance(a, np.ndarray) else a for a in arrays), _params(sample)


def test_every_op_is_tried_with_zero_size_inputs() -> None:
    """Each op with a catalog has a zero-size sample, derived or explicit, that PyTorch
    accepts: the variants are not all refusals."""
    missing = []
    for name, op in BUILTIN:
        if op.facts.ref is None:
            continue
        ok = False
        for k, sample in enumerate(checked_samples(op)):
            if not _is_zero_size(op, sample):
                continue
            arrays = sample_arrays(op, sample, seed=k)
            _, tout = _run_torch(op, arrays, (), sample.params)
            ok = ok or not isinstance(tout, Exception)
        if not ok:
            missing.append(name)
    assert not missing, f"no zero-size sample that PyTorch accepts: {missing}"


# name -> (minitorch call, PyTorch call, input shape, what the message must say)
Refusal = tuple[Any, Any, tuple[int, ...], tuple[str, ...]]
REFUSALS: dict[str, Refusal] = {
    "max over a zero-size axis": (
        lambda x: minitorch.max(x, axis=1),
        lambda t: torch.amax(t, dim=1),
        (3, 0),
        ("max: ", "axis 1", "size 0", "(3, 0)", "reduce over non-empty axes"),
    ),
    "min of a zero-size tensor": (
        minitorch.min,
        lambda t: torch.amin(t, dim=(0, 1)),
        (0, 4),
        ("min: ", "all axes", "(0, 4)", "give axis= a non-empty axis"),
    ),
    "argmax over a zero-size axis": (
        lambda x: minitorch.argmax(x, axis=0),
        lambda t: torch.argmax(t, dim=0),
        (0, 3),
        ("argmax: ", "axis 0", "(0, 3)"),
    ),
    "argmin of a zero-size tensor": (
        minitorch.argmin,
        torch.argmin,
        (2, 0),
        ("argmin: ", "all axes", "(2, 0)"),
    ),
    "reshape of zero-size with -1": (
        lambda x: x.reshape(0, -1),
        lambda t: t.reshape(0, -1),
        (3, 0),
        ("reshape: ", "(3, 0)", "0 elements", "-1"),
    ),
}


@pytest.mark.parametrize("name", list(REFUSALS))
def test_refusals_say_what_and_what_to_do(name: str, backend: Any) -> None:
    fn, ref, shape, says = REFUSALS[name]
    with pytest.raises(Exception):  # noqa: B017 (PyTorch's own error types differ)
        ref(torch.zeros(shape, dtype=torch.float64))
    x = minitorch.Tensor._make(
        backend.from_numpy(np.zeros(shape), backend.resolve_dtype("float64"), backend.device),
        backend,
        None,
    )
    with pytest.raises(OpError) as info:
        fn(x)
    for text in says:
        assert text in str(info.value), (text, str(info.value))


def test_check_op_checks_the_zero_size_variants_on_request(backend: Any) -> None:
    """``check_op(..., zero_size=True)``: the catalog's samples, then the variants; those
    PyTorch refuses are reported as refused (minitorch refuses them too)."""
    op = REGISTRY["max"]
    report = check_op(minitorch.max, backend, zero_size=True, second_order=False)
    assert [r.sample for r in report] == list(range(len(checked_samples(op))))
    refused = [r for r in report if r.refused]
    assert {r.label for r in refused} == {
        "zero-size (0, 4) (from sample 0)",
        "zero-size (0, 3, 4) (from sample 2)",
    }
    assert all(r.refused.startswith("max: cannot reduce") for r in refused)
    assert "refused, as by torch: max: cannot reduce" in str(refused[0])
    assert len(check_op(minitorch.max, backend, second_order=False)) == len(op.facts.samples)


def test_a_backend_error_passed_on_is_told_apart(backend: Any) -> None:
    """The refusal check above can fail: stack's shape error is the array library's,
    matmul's is minitorch's own (both reach the user as an OpError naming the inputs)."""

    def t(shape: tuple[int, ...]) -> minitorch.Tensor:
        dt = backend.resolve_dtype("float64")
        return minitorch.Tensor._make(
            backend.from_numpy(np.zeros(shape), dt, backend.device), backend, None
        )

    with pytest.raises(OpError) as stacked:
        minitorch.stack([t((2, 3)), t((2, 0))])
    with pytest.raises(OpError) as multiplied:
        minitorch.matmul(t((2, 3)), t((0, 2)))
    assert not _written_by_minitorch(stacked.value), str(stacked.value)
    assert _written_by_minitorch(multiplied.value), str(multiplied.value)
    assert "x @ y needs x.shape[-1] == y.shape[-2], got 3 and 0" in str(multiplied.value)
