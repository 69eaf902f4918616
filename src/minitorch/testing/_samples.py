"""Test inputs generated from an op's catalog entry (used by the test suites and
``minitorch check``). Inputs are drawn on host NumPy with a seed and then moved to the
backend, so a failure reproduces on every backend."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..backend import Backend
from ..ops._registry import OpDef, Sample
from ..tensor import Tensor

#: what a zero-size variant's name starts with (``checked_samples``)
ZERO_SIZE = "zero-size"


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


# ---------------------------------------------------------------- zero-size variants
Shape = tuple[int, ...]


def _zeroed(shapes: Sequence[Shape | None]) -> list[tuple[Shape | None, ...]]:
    """One dimension of a sample's inputs replaced by 0, in the ways inputs line up.

    * By their first axis (a batch: cross-entropy's logits and targets, take's indices,
      matmul's operands): axis 0 of every input that has one.
    * As broadcasting aligns them, if they broadcast together (an elementwise op, where's
      condition and values): the leading axis of the result, in every input that has it
      with a size other than 1 (in all of them if each has 1). The first way is kept for
      such inputs only where its shapes still broadcast.

    ``None`` stands for an argument that is not an array (a number); it stays. Inputs
    that are already zero-size, or all 0-d, have no variant.
    """
    arrays = [s for s in shapes if s is not None]
    if not any(arrays) or any(0 in s for s in arrays):
        return []
    first = tuple(None if s is None else (0, *s[1:]) if s else s for s in shapes)
    if not _broadcast(arrays):
        return [first]
    nd = max(len(s) for s in arrays)
    lead = [s is not None and len(s) == nd for s in shapes]
    if any(ok and s is not None and s[0] != 1 for ok, s in zip(lead, shapes, strict=True)):
        lead = [ok and s is not None and s[0] != 1 for ok, s in zip(lead, shapes, strict=True)]
    aligned = tuple(
        (0, *s[1:]) if s is not None and z else s for s, z in zip(shapes, lead, strict=True)
    )
    keep_first = first != aligned and _broadcast([s for s in first if s is not None])
    return [first, aligned] if keep_first else [aligned]


def _broadcast(shapes: Sequence[Shape]) -> bool:
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        return False
    return True


@dataclasses.dataclass(frozen=True)
class _Sliced:
    """A ``Sample.make`` that draws the original sample and keeps the leading
    ``shapes`` of each array (a zero-size slice of it; the integer indices among them
    stay valid)."""

    make: Callable[[np.random.Generator], tuple[Any, ...]]
    shapes: tuple[Shape | None, ...]

    def __call__(self, rng: np.random.Generator) -> tuple[Any, ...]:
        out: list[Any] = []
        for a, s in zip(self.make(rng), self.shapes, strict=True):
            out.append(a if s is None or not s else a[tuple(slice(0, n) for n in s)])
        return tuple(out)


def _shapes_text(shapes: Sequence[Any]) -> str:
    return ", ".join(str(s) for s in shapes)


@functools.cache
def zero_size_samples(op: OpDef) -> tuple[Sample, ...]:
    """Zero-size variants of ``op``'s catalog samples, derived automatically.

    For each sample, one dimension of its inputs becomes 0 (see :func:`_zeroed`: the
    first axis of each input, or the leading axis as broadcasting lines them up), with
    the sample's parameters; variants already in the catalog, or derived twice, appear
    once. A sample whose inputs are made by ``Sample.make`` is drawn and sliced.

    A variant may be one that PyTorch refuses (a reshape to a fixed shape, a max over no
    elements): minitorch must then refuse it too, with a clear error. The generic tests
    and ``minitorch check`` hold each variant against the reference either way.

    Examples
    --------
    >>> import minitorch
    >>> [s.shapes for s in zero_size_samples(minitorch.REGISTRY["add"])][:3]
    [((0, 4), (0, 4)), ((), (0,)), ((0, 1), (0, 3))]
    """
    seen: set[str] = set()
    for s in op.facts.samples:
        seen.add(_shapes_text(_input_shapes(op, s)) + repr(sorted(s.params.items())))
    out: list[Sample] = []
    for k, sample in enumerate(op.facts.samples):
        given = _input_shapes(op, sample)
        arrays_only = [s if isinstance(s, tuple) else None for s in given]
        for shapes in _zeroed(arrays_only):
            shown = [g if s is None else s for g, s in zip(given, shapes, strict=True)]
            key = _shapes_text(shown) + repr(sorted(sample.params.items()))
            if key in seen:
                continue
            seen.add(key)
            name = f"{ZERO_SIZE} {_shapes_text(shown)} (from sample {k})"
            if sample.make is not None:
                variant = Sample(
                    params=sample.params, make=_Sliced(sample.make, tuple(shapes)), name=name
                )
            else:
                new = tuple(
                    orig if s is None else s for orig, s in zip(sample.shapes, shapes, strict=True)
                )
                variant = Sample(new, sample.params, name=name)
            out.append(variant)
    return tuple(out)


def _input_shapes(op: OpDef, sample: Sample) -> list[Any]:
    """The shape of each array input of a sample (numbers as they are)."""
    if sample.make is None:
        return [s if isinstance(s, int | float) else tuple(s) for s in sample.shapes]
    return [
        tuple(a.shape) if isinstance(a, np.ndarray) else a
        for a in sample.make(np.random.default_rng(0))
    ]


def checked_samples(op: OpDef) -> tuple[Sample, ...]:
    """What the generic tests and ``minitorch check`` run: the catalog's samples, then
    their zero-size variants (:func:`zero_size_samples`); sample ``k`` is drawn with seed
    ``k``."""
    return (*op.facts.samples, *zero_size_samples(op))
