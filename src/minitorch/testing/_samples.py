"""Test inputs generated from an op's catalog entry (used by the test suites and
``minitorch check``). Inputs are drawn on host NumPy with a seed and then moved to the
backend, so a failure reproduces on every backend."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backend import Backend
from ..ops._registry import OpDef, Sample
from ..tensor import Tensor


def _draw(rng: np.random.Generator, shape: tuple[int, ...], op: OpDef) -> np.ndarray:
    lo, hi = op.facts.domain
    x = rng.uniform(lo, hi, shape)
    for k in op.facts.kinks:  # keep away from points where the op has no derivative
        near = np.abs(x - k) < 0.05
        x = np.where(near, x + np.where(x >= k, 0.1, -0.1), x)
    return x


def sample_arrays(op: OpDef, sample: Sample, seed: int = 0) -> list[Any]:
    """Host inputs for one sample: NumPy arrays (float64 or integer/bool) and numbers."""
    rng = np.random.default_rng(seed)
    if sample.make is not None:
        return list(sample.make(rng))
    out: list[Any] = []
    for s in sample.shapes:
        out.append(s if isinstance(s, int | float) else _draw(rng, tuple(s), op))
    return out


def grad_inputs(op: OpDef, arrays: list[Any]) -> tuple[int, ...]:
    """Indices of the differentiable inputs of this sample."""
    if op.facts.grad_inputs is not None:
        return op.facts.grad_inputs
    return tuple(
        i for i, a in enumerate(arrays) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
    )


def sample_tensors(
    op: OpDef,
    sample: Sample,
    backend: Backend,
    dtype: Any = "float64",
    seed: int = 0,
    requires_grad: bool = True,
) -> list[Any]:
    """The sample's inputs as Tensors of ``backend`` (floating ones in ``dtype``)."""
    arrays = sample_arrays(op, sample, seed)
    want = grad_inputs(op, arrays)
    dt = backend.resolve_dtype(dtype)
    out: list[Any] = []
    for i, a in enumerate(arrays):
        if not isinstance(a, np.ndarray):
            out.append(a)
            continue
        kind_dt = (
            dt
            if a.dtype.kind == "f"
            else backend.resolve_dtype("bool" if a.dtype == bool else "int64")
        )
        t = Tensor._make(backend.from_numpy(a, kind_dt, backend.device), backend, None)
        if requires_grad and i in want:
            t.requires_grad = True
        out.append(t)
    return out


def call(op: OpDef, args: list[Any], params: dict[str, Any]) -> Any:
    """Call an op's public function on sample inputs (a list for ``concat``/``stack``)."""
    assert op.fn is not None
    if op.nin == -1:
        return op.fn(args, **params)
    return op.fn(*args, **params)
