"""Hypothesis fuzzing of every differentiable op in the registry, on the backend under test.

``Facts.kind`` picks the strategy:

* ``unary``: a random shape (0-d, size-1 and zero-size axes included, <= 3 dims, <= 4
  per dim) and one of the op's sample parameter sets;
* ``binary``: two mutually broadcastable shapes, and for ops that take Python numbers
  also ``tensor op number`` and ``number op tensor``;
* ``reduction``: a random shape, a random ``axis`` (None, an int or a tuple, negative
  ones included) and ``keepdims``;
* ``other``: one of the op's catalog samples, with fresh random values.

Shapes and axes come from ``hypothesis.extra.array_api`` (a strategies namespace made
from the backend's own Array API namespace); values are drawn on host NumPy from a
hypothesis-chosen seed, inside the op's ``Facts.domain`` and away from its
``Facts.kinks``, then moved to the backend, so every example reproduces on every
backend. Each example checks the forward and the gradients (random upstream gradient)
against PyTorch float64 at the op's tolerance (default 1e-7), and runs a
central-difference gradcheck (full Jacobian when it is small, a random projection
otherwise, and always in the sessions that set ``MINITORCH_GRADCHECK_FAST=1``).

Examples per op: the hypothesis profile's ``max_examples`` (100 with ``CI`` set, 25
otherwise). JAX compiles every primitive once per new shape (~60 ms each), so its
session draws ``JAX_EXAMPLES`` examples per op from sides of at most ``JAX_MAX_SIDE``
(still 0-d, zero-size and size-1 axes, and every broadcasting pattern).
"""

from __future__ import annotations

import os
import warnings
import zlib
from typing import Any

import array_api_compat
import numpy as np
import pytest

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisWarning
from hypothesis.extra.array_api import make_strategies_namespace

import minitorch
from minitorch.ops import REGISTRY
from minitorch.ops._registry import OpDef
from minitorch.testing import assert_close, gradient_error
from minitorch.testing._reference import torch_args
from minitorch.testing._samples import _draw, call, grad_inputs, sample_arrays

FAST = os.environ.get("MINITORCH_GRADCHECK_FAST") == "1"
#: gradcheck compares the full Jacobian when it costs at most this many evaluations
#: (one backward per output element, two forwards per input element), else one projection
FULL_JACOBIAN_MAX_EVALS = 24
MAX_DIMS, MAX_SIDE = 3, 4
#: on JAX: examples per op, and the largest side (few distinct shapes = few compilations)
JAX_EXAMPLES, JAX_MAX_SIDE = 10, 2

OPS = [
    pytest.param(op, id=name)
    for name, op in sorted(REGISTRY.items())
    if op.builtin and op.differentiable and op.facts.samples
]


def test_every_differentiable_op_is_fuzzed() -> None:
    """Only ops with no catalog samples (nothing to draw from) are left out."""
    fuzzed = {p.values[0].name for p in OPS}
    left_out = {n for n, op in REGISTRY.items() if op.builtin and op.differentiable} - fuzzed
    assert left_out <= {"astype", "move"}, left_out
    kinds = {p.values[0].facts.kind for p in OPS}
    assert kinds == {"unary", "binary", "reduction", "other"}, kinds


@pytest.fixture(scope="session")
def xps(backend: Any) -> Any:
    """The hypothesis strategies namespace of the backend's Array API namespace."""
    probe = backend.from_numpy(np.zeros(1), backend.dtype, backend.device)
    ns = array_api_compat.array_namespace(probe)
    with warnings.catch_warnings():
        # compat.torch: "Could not determine whether module ... is an Array API library"
        warnings.simplefilter("ignore", HypothesisWarning)
        return make_strategies_namespace(ns)


def _examples(backend: Any) -> int:
    n = settings().max_examples
    return min(n, JAX_EXAMPLES) if backend.name == "jax" else n


# ---------------------------------------------------------------- drawing inputs
def _values(rng: np.random.Generator, shape: tuple[int, ...], op: OpDef) -> np.ndarray:
    return _draw(rng, shape, op)  # uniform in Facts.domain, nudged away from Facts.kinks


def _number(rng: np.random.Generator, op: OpDef) -> float:
    return float(_values(rng, (), op))


def _draw_case(
    data: Any, xps: Any, op: OpDef, max_side: int = MAX_SIDE
) -> tuple[list[Any], dict[str, Any]]:
    """Host inputs (float64 NumPy arrays, numbers, integer arrays) and parameters."""
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    # the op's name goes into the stream so that ops drawing the same seed differ
    rng = np.random.default_rng([seed, zlib.crc32(op.name.encode())])
    kind = op.facts.kind
    samples = op.facts.samples
    if kind == "unary":
        shape = data.draw(
            xps.array_shapes(min_dims=0, max_dims=MAX_DIMS, min_side=0, max_side=max_side),
            label="shape",
        )
        params = data.draw(st.sampled_from([dict(s.params) for s in samples]), label="params")
        return [_values(rng, shape, op)], params
    if kind == "binary":
        shapes = data.draw(
            xps.mutually_broadcastable_shapes(
                2, min_dims=0, max_dims=MAX_DIMS, min_side=0, max_side=max_side
            ),
            label="shapes",
        ).input_shapes
        form = data.draw(
            st.sampled_from(["tensors", "tensor-number", "number-tensor"])
            if op.scalars
            else st.just("tensors"),
            label="form",
        )
        x: Any = _number(rng, op) if form == "number-tensor" else _values(rng, shapes[0], op)
        y: Any = _number(rng, op) if form == "tensor-number" else _values(rng, shapes[1], op)
        return [x, y], {}
    if kind == "reduction":
        shape = data.draw(
            xps.array_shapes(min_dims=0, max_dims=MAX_DIMS, min_side=1, max_side=max_side),
            label="shape",
        )
        ndim = len(shape)
        axis_st: Any = st.just(None)
        if ndim:
            axis_st = st.one_of(
                st.none(),
                st.integers(-ndim, ndim - 1),
                xps.valid_tuple_axes(ndim, min_size=1),
            )
        axis = data.draw(axis_st, label="axis")
        keepdims = data.draw(st.booleans(), label="keepdims")
        params: dict[str, Any] = {"axis": axis, "keepdims": keepdims}
        # other parameters (var's correction): values the catalog uses, defaults included
        for name in op.params:
            if name in params:
                continue
            seen = [s.params[name] for s in samples if name in s.params]
            if name in op.defaults:
                seen.append(op.defaults[name])
            if seen:
                params[name] = data.draw(st.sampled_from(seen), label=name)
        if "correction" in params:
            axes = range(ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
            n = int(np.prod([shape[a] for a in axes]))
            if n <= params["correction"]:  # n - correction <= 0 has no finite variance
                params["correction"] = 0.0
        return [_values(rng, shape, op)], params
    # other: a catalog sample, with fresh random values
    k = data.draw(st.integers(0, len(samples) - 1), label="sample")
    return sample_arrays(op, samples[k], seed=int(rng.integers(2**31))), dict(samples[k].params)


def _to_backend(arrays: list[Any], want: tuple[int, ...], backend: Any) -> list[Any]:
    out: list[Any] = []
    for i, a in enumerate(arrays):
        if not isinstance(a, np.ndarray):
            out.append(a)
            continue
        kind = "float64" if a.dtype.kind == "f" else "bool" if a.dtype == bool else "int64"
        t = minitorch.Tensor._make(
            backend.from_numpy(a, backend.resolve_dtype(kind), backend.device), backend, None
        )
        t.requires_grad = i in want
        out.append(t)
    return out


# ---------------------------------------------------------------- the property
def _check_case(op: OpDef, arrays: list[Any], params: dict[str, Any], backend: Any) -> None:
    want = grad_inputs(op, arrays)
    inputs = _to_backend(arrays, want, backend)
    out = call(op, inputs, params)
    atol, rtol = op.facts.tol.get("float64", (1e-7, 1e-7))
    what = f"{op.name}{tuple(np.shape(a) for a in arrays)} {params}"

    g = None
    if op.facts.ref is not None:
        import torch

        targs = torch_args(torch, arrays, want)
        tout = op.facts.ref(torch, *targs, **params)
        assert_close(out, tout, atol=atol, rtol=rtol, msg=f"{what} forward: ")
        if want and out.requires_grad:
            seed = zlib.crc32(repr(what).encode())
            g = np.random.default_rng(seed).standard_normal(tuple(tout.shape))
            out.backward(  # on the output's backend (move's is not the input's)
                minitorch.Tensor._make(
                    out.backend.from_numpy(g, out.dtype, out.device), out.backend, None
                )
            )
            tgrads = torch.autograd.grad(
                tout, [targs[i] for i in want], torch.tensor(g), allow_unused=True
            )
            for i, tg in zip(want, tgrads, strict=True):
                got = inputs[i].grad
                assert got is not None, f"{what}: input {i} got no gradient"
                assert tuple(got.shape) == tuple(np.shape(arrays[i]))
                expected = np.zeros(np.shape(arrays[i])) if tg is None else tg
                assert_close(
                    backend.to_numpy(got),
                    expected,
                    atol=atol,
                    rtol=rtol,
                    msg=f"{what} grad of input {i}: ",
                )
    if not want:
        return
    fresh = _to_backend(arrays, want, backend)
    n_out = int(np.prod(np.shape(out.data)))
    n_in = sum(int(np.prod(np.shape(arrays[i]))) for i in want)
    fast = FAST or n_out + 2 * n_in > FULL_JACOBIAN_MAX_EVALS
    res = gradient_error(lambda *a: call(op, list(a), params), fresh, fast_mode=fast)
    assert res.ok, f"{what}: {res.message}"


@pytest.mark.parametrize("op", OPS)
def test_fuzz_forward_and_gradients(op: OpDef, backend: Any, xps: Any) -> None:
    reason = op.facts.skips.get(backend.name)
    if reason:
        pytest.skip(f"{op.name} on {backend.name}: {reason}")
    if op.facts.ref is not None:
        pytest.importorskip("torch", reason="PyTorch is the float64 reference")

    max_side = JAX_MAX_SIDE if backend.name == "jax" else MAX_SIDE

    @settings(
        max_examples=_examples(backend),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data())
    def fuzz(data: Any) -> None:
        arrays, params = _draw_case(data, xps, op, max_side)
        _check_case(op, arrays, params, backend)

    fuzz()


def test_strategies_cover_the_edge_shapes(xps: Any) -> None:
    """The shape strategy reaches 0-d tensors and size-1 axes (what broadcasting and
    reductions get wrong most often)."""
    seen: list[tuple[int, ...]] = []

    @settings(max_examples=200, derandomize=True, database=None)
    @given(xps.array_shapes(min_dims=0, max_dims=MAX_DIMS, min_side=0, max_side=MAX_SIDE))
    def collect(shape: tuple[int, ...]) -> None:
        seen.append(shape)

    collect()
    assert () in seen
    assert any(1 in s for s in seen)
    assert any(0 in s for s in seen)
    assert all(len(s) <= MAX_DIMS and all(n <= MAX_SIDE for n in s) for s in seen)
