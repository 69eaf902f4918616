"""Forward and gradient errors of an op against a float64 reference.

The reference is PyTorch in float64 (``Facts.ref``) where torch is installed, else the
same op computed on the NumPy backend in float64. Inputs (and the upstream gradient)
are drawn on host NumPy with the sample's seed and rounded to the dtype under test
first, so the error measures the op, not the rounding of its inputs. Used by
``minitorch check`` and ``bench/max_error_vs_torch.py``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..backend import Backend, resolve
from ..errors import OpError
from ..ops._registry import OpDef
from ..tensor import Tensor
from ._check import _host
from ._samples import call, checked_samples, grad_inputs, sample_arrays, sample_tensors

__all__ = [
    "ReferenceErrors",
    "default_reference",
    "errors_vs_reference",
    "reference_label",
    "torch_args",
]

#: dtype name -> (atol, rtol) for the forward check when Facts.tol names none
FORWARD_TOL = {"float64": (1e-7, 1e-7), "float32": (1e-5, 1e-5)}


@dataclasses.dataclass(frozen=True)
class ReferenceErrors:
    """Max abs errors of one op sample against its reference.

    ``grad`` is None where the sample has no differentiable input; ``reference`` is
    ``"torch"`` or ``"numpy"``; ``forward_ok`` applies the op's tolerance.

    ``refused`` is the reference's error where it refuses the sample's inputs (a
    zero-size variant PyTorch has no value for, e.g. a max over no elements); then
    ``forward_ok`` says whether the op refused them too, with an ``OpError``
    (``forward`` is 0 if so, inf if the op returned a result), and ``raised`` is the
    op's error.
    """

    forward: float
    grad: float | None
    forward_ok: bool
    reference: str
    refused: str = ""
    raised: str = ""


class _Refused(Exception):
    """The reference refuses the inputs (its own error is the cause)."""


def default_reference() -> str:
    """``"torch"`` if PyTorch is installed, else ``"numpy"``."""
    return "torch" if importlib.util.find_spec("torch") is not None else "numpy"


def reference_label(reference: str) -> str:
    """A human-readable name of the reference, with its version."""
    if reference == "torch":
        import torch

        return f"PyTorch {torch.__version__} float64"
    return f"minitorch on NumPy {np.__version__} float64"


def _max_abs(a: np.ndarray, e: np.ndarray) -> float:
    a = np.asarray(a, dtype=np.float64)
    e = np.asarray(e, dtype=np.float64)
    if a.shape != e.shape:
        return float("inf")
    if a.size == 0:
        return 0.0
    same = (a == e) | (np.isnan(a) & np.isnan(e))
    with np.errstate(invalid="ignore"):
        return float(np.max(np.where(same, 0.0, np.abs(a - e))))


def torch_args(torch: Any, arrays: Sequence[Any], want: Sequence[int]) -> list[Any]:
    """A sample's arguments for a PyTorch reference (``Facts.ref``): each NumPy array
    becomes a torch tensor (a floating one in float64, others as ``torch.tensor`` makes
    them) that requires grad when its index is in ``want``; anything else (a Python
    number) is passed as it is.

    ``torch`` is the PyTorch module, imported by the caller (PyTorch is optional).
    """
    out: list[Any] = []
    for i, a in enumerate(arrays):
        if isinstance(a, np.ndarray):
            t = torch.tensor(a, dtype=torch.float64) if a.dtype.kind == "f" else torch.tensor(a)
            out.append(t.requires_grad_(True) if i in want else t)
        else:
            out.append(a)
    return out


def _torch_outputs(
    op: OpDef,
    arrays: list[Any],
    want: tuple[int, ...],
    params: dict[str, Any],
    g: np.ndarray | None,
) -> tuple[np.ndarray, list[np.ndarray]]:
    import torch

    targs = torch_args(torch, arrays, want)
    assert op.facts.ref is not None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # var(): "degrees of freedom is <= 0"
            tout = op.facts.ref(torch, *targs, **params)
    except Exception as exc:
        raise _Refused(f"{type(exc).__name__}: {exc}") from exc
    out = tout.detach().numpy().astype(np.float64)
    grads: list[np.ndarray] = []
    if want and g is not None and tout.requires_grad:
        tg = torch.autograd.grad(tout, [targs[i] for i in want], torch.tensor(g), allow_unused=True)
        grads = [
            np.zeros(arrays[i].shape) if t is None else t.numpy()
            for i, t in zip(want, tg, strict=True)
        ]
    return out, grads


def _numpy_outputs(
    op: OpDef,
    arrays: list[Any],
    want: tuple[int, ...],
    params: dict[str, Any],
    g: np.ndarray | None,
) -> tuple[np.ndarray, list[np.ndarray]]:
    be = resolve("numpy", "float64", None)
    inputs: list[Any] = []
    for i, a in enumerate(arrays):
        if isinstance(a, np.ndarray):
            kind = "float64" if a.dtype.kind == "f" else "bool" if a.dtype == bool else "int64"
            dt = be.resolve_dtype(kind)
            t = Tensor._make(be.from_numpy(a, dt, be.device), be, None)
            if i in want:
                t.requires_grad = True
            inputs.append(t)
        else:
            inputs.append(a)
    try:
        out = call(op, inputs, params)
    except OpError as exc:
        raise _Refused(f"{type(exc).__name__}: {exc}") from exc
    grads: list[np.ndarray] = []
    if want and g is not None and out.requires_grad:
        ob = out._backend
        out.backward(Tensor._make(ob.from_numpy(g, ob.dtypes["float64"], out.device), ob, None))
        grads = [
            np.zeros(arrays[i].shape) if inputs[i].grad is None else _host(inputs[i].grad)
            for i in want
        ]
    return out.numpy().astype(np.float64), grads


def errors_vs_reference(
    op: OpDef,
    k: int,
    backend: Backend,
    dtype: str = "float64",
    *,
    reference: str | None = None,
    seed: int | None = None,
) -> ReferenceErrors:
    """Run sample ``k`` of ``op`` on ``backend`` in ``dtype`` and compare its output and
    gradients (for a random upstream gradient) with the reference.

    ``k`` counts the catalog's samples, then their zero-size variants
    (:func:`~minitorch.testing._samples.checked_samples`). Where the reference refuses
    the inputs, the op must refuse them too (``ReferenceErrors.refused``); where only the
    op refuses them, this raises an AssertionError that says so.

    Examples
    --------
    >>> import minitorch
    >>> from minitorch.testing._reference import errors_vs_reference
    >>> be = minitorch.backend.resolve("numpy", "float64")
    >>> r = errors_vs_reference(minitorch.REGISTRY["exp"], 0, be, reference="numpy")
    >>> r.forward, r.grad, r.forward_ok
    (0.0, 0.0, True)
    """
    reference = reference or default_reference()
    if reference == "torch" and op.facts.ref is None:
        reference = "numpy"
    seed = k if seed is None else seed
    sample = checked_samples(op)[k]
    host = sample_arrays(op, sample, seed=seed)
    want = grad_inputs(op, host)
    np_dtype = np.dtype(dtype)
    # what the backend will see: floating inputs rounded to the dtype under test
    rounded = [
        a.astype(np_dtype).astype(np.float64)
        if isinstance(a, np.ndarray) and a.dtype.kind == "f"
        else a
        for a in host
    ]
    inputs = sample_tensors(op, sample, backend, dtype, seed=seed)
    ref_fn = _torch_outputs if reference == "torch" else _numpy_outputs
    try:
        out = call(op, inputs, sample.params)
    except OpError as exc:
        try:
            ref_fn(op, rounded, (), sample.params, None)
        except _Refused as refused:
            return ReferenceErrors(0.0, None, True, reference, str(refused), str(exc))
        raise AssertionError(
            f"{op.name} refuses {sample.name or 'the sample'} ({type(exc).__name__}: {exc}), "
            f"but the {reference} reference computes it"
        ) from exc
    out_host = _host(out)
    g = None
    if out.requires_grad:
        g = np.random.default_rng(100 + seed).standard_normal(out_host.shape)
        g = np.asarray(g.astype(np_dtype).astype(np.float64))
        ob = out._backend  # (move's output is on another backend than its input)
        out.backward(Tensor._make(ob.from_numpy(g, ob.resolve_dtype(dtype), out.device), ob, None))
    try:
        ref_out, ref_grads = ref_fn(op, rounded, want if g is not None else (), sample.params, g)
    except _Refused as refused:
        return ReferenceErrors(math.inf, None, False, reference, str(refused))
    fwd = _max_abs(out_host, ref_out)
    atol, rtol = op.facts.tol.get(dtype, FORWARD_TOL.get(dtype, FORWARD_TOL["float32"]))
    with np.errstate(invalid="ignore"):
        a64 = np.asarray(out_host, dtype=np.float64)
        same = (a64 == ref_out) | (np.isnan(a64) & np.isnan(ref_out))
        ok = bool(
            a64.shape == ref_out.shape
            and np.all(same | (np.abs(a64 - ref_out) <= atol + rtol * np.abs(ref_out)))
        )
    grad_err: float | None = None
    if g is not None and ref_grads:
        grad_err = 0.0
        for i, rg in zip(want, ref_grads, strict=True):
            got = inputs[i].grad
            got_host = None if got is None else backend.to_numpy(got)
            grad_err = max(grad_err, float("inf") if got_host is None else _max_abs(got_host, rg))
    return ReferenceErrors(fwd, grad_err, ok, reference)
