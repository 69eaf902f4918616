"""``check_op``: every check the test suites run on a registered op, as one call.

For each sample of the op's catalog entry (``Facts.samples``) it compares the forward
and the gradients with a float64 reference (:func:`errors_vs_reference`: PyTorch via
``Facts.ref`` where torch is installed, else the op on the NumPy backend), gradchecks
the differentiable inputs against central differences (:func:`gradient_error`) and, for
a differentiable op, checks second derivatives (:func:`gradgradcheck`). It is how a
custom op declared with :func:`minitorch.defop` is tested (docs/custom-ops.md).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..backend import Backend, get_backend, resolve
from ..ops._registry import REGISTRY, OpDef
from ..tensor import Tensor
from ._check import GradcheckError, gradient_error
from ._gradgrad import gradgradcheck
from ._reference import FORWARD_TOL, default_reference, errors_vs_reference
from ._samples import call, checked_samples, sample_tensors

__all__ = ["GRAD_TOL_FACTOR", "SampleCheck", "check_op"]

#: the gradient may differ from the reference by this many times the forward tolerance
#: ``atol + rtol`` (it is one computation further from the inputs)
GRAD_TOL_FACTOR = 10.0


@dataclasses.dataclass(frozen=True)
class SampleCheck:
    """What :func:`check_op` found for one sample of an op.

    Attributes
    ----------
    op : str
        The op's name.
    sample : int
        The sample's index in ``Facts.samples``.
    label : str
        The sample's name, or its shapes.
    backend, dtype : str
        Where it ran.
    reference : str
        ``"torch"``, ``"numpy"`` (the op on the NumPy backend in float64), or ``"self"``
        when that is the backend under test itself (no independent reference).
    forward_error : float
        Max ``|out - reference|``.
    grad_error : float or None
        Max ``|gradient - reference gradient|`` for a random upstream gradient; None
        where the sample has no differentiable input.
    gradcheck_error : float or None
        Max ``|analytic - numeric|`` over the Jacobian (central differences); None where
        no gradient was checked.
    second_order : bool or None
        True where ``gradgradcheck`` passed; None where it was not run.
    skipped : str
        Why nothing was checked (``Facts.skips`` names the backend); empty otherwise.
    refused : str
        The op's error where the reference refuses the inputs and the op does too (a
        zero-size variant that PyTorch has no value for); empty otherwise.
    """

    op: str
    sample: int
    label: str
    backend: str
    dtype: str
    reference: str
    forward_error: float | None
    grad_error: float | None
    gradcheck_error: float | None
    second_order: bool | None
    skipped: str = ""
    refused: str = ""

    def __str__(self) -> str:
        where = f"{self.op} sample {self.sample} ({self.label}) on {self.backend} {self.dtype}"
        if self.skipped:
            return f"{where}: skipped ({self.skipped})"
        if self.refused:
            return f"{where}: refused, as by {self.reference}: {self.refused}"
        parts = [f"forward err {_fmt(self.forward_error)}"]
        if self.grad_error is not None:
            parts.append(f"grad err {_fmt(self.grad_error)}")
        parts[-1] += f" vs {self.reference}"
        if self.gradcheck_error is not None:
            parts.append(f"gradcheck err {_fmt(self.gradcheck_error)}")
        if self.second_order:
            parts.append("gradgradcheck ok")
        return f"{where}: {', '.join(parts)}"


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.2e}"


def _find(fn_or_op: Any) -> OpDef:
    """The OpDef of a public op function (or the OpDef itself)."""
    if isinstance(fn_or_op, OpDef):
        return fn_or_op
    for op in REGISTRY.values():
        if op.fn is fn_or_op:
            return op
    what = getattr(fn_or_op, "__name__", repr(fn_or_op))
    raise ValueError(
        f"check_op: {what} is not the function of a registered op; pass the function "
        f"minitorch.defop returned (or its OpDef, minitorch.REGISTRY[name])"
    )


def _label(op: OpDef, k: int) -> str:
    sample = checked_samples(op)[k]
    if sample.name:
        return sample.name
    if sample.make is not None:
        return "make"
    return ", ".join(str(s) for s in sample.shapes) or "no inputs"


def check_op(
    fn_or_op: Any,
    backend: Backend | str | None = None,
    *,
    dtype: str = "float64",
    reference: str | None = None,
    second_order: bool = True,
    zero_size: bool = False,
) -> list[SampleCheck]:
    """Check an op on every sample of its catalog entry, as the generic test suites do.

    For each ``Sample`` of ``Facts.samples``: the forward and the gradients (for a random
    upstream gradient) against the reference, a central-difference gradcheck of the
    differentiable inputs, and, if ``second_order`` and the op is differentiable, a
    :func:`~minitorch.testing.gradgradcheck` (the VJP differentiated again with
    ``create_graph=True``). Inputs are drawn on host NumPy with the sample's index as
    seed, so a failure reproduces on every backend.

    Parameters
    ----------
    fn_or_op : callable or OpDef
        The op's public function (what :func:`minitorch.defop` returned, e.g.
        ``minitorch.exp``) or its ``OpDef``.
    backend : Backend or str, optional
        Where to run (default: the current backend). Its default dtype does not matter:
        the inputs are made in ``dtype``.
    dtype : str
        ``"float64"`` (default) or ``"float32"``.
    reference : str, optional
        ``"torch"`` (PyTorch float64 through ``Facts.ref``) or ``"numpy"`` (the op on
        the NumPy backend in float64, a cross-backend check only). Default: torch if
        installed; an op without ``Facts.ref`` always uses numpy.
    second_order : bool
        Also run ``gradgradcheck`` (for differentiable ops).
    zero_size : bool
        Also check the zero-size variants of the samples (one dimension made 0), as
        ``minitorch check`` does for the built-in ops: each must match the reference, or
        raise an ``OpError`` where the reference refuses it too.

    Returns
    -------
    list of SampleCheck
        One per sample, with the error figures.

    Raises
    ------
    AssertionError
        The forward, or the gradient, differs from the reference beyond the tolerance
        (``Facts.tol`` for the dtype, else 1e-7 in float64 and 1e-5 in float32, as
        ``atol + rtol * |ref|`` for the forward; the gradient's max error may be
        ``GRAD_TOL_FACTOR`` times ``atol + rtol``). The message names the op, the
        sample, the backend and the figures.
    GradcheckError
        gradcheck or gradgradcheck failed; the message says where and by how much.
    ValueError
        ``fn_or_op`` is not a registered op, or its facts have no samples.

    Examples
    --------
    >>> import minitorch
    >>> from minitorch.testing import check_op
    >>> report = check_op(minitorch.exp, "numpy", reference="numpy")
    >>> len(report) == len(minitorch.REGISTRY["exp"].facts.samples)
    True
    >>> report[0].reference, report[0].forward_error, report[0].second_order
    ('self', 0.0, True)
    """
    op = _find(fn_or_op)
    if isinstance(backend, str):
        backend = resolve(backend, dtype)
    be = backend if backend is not None else get_backend()
    if not op.facts.samples:
        raise ValueError(
            f"check_op: {op.name} has no samples to check; give its Facts "
            f"samples=(minitorch.Sample(shapes, params), ...)"
        )
    ref_name = reference or default_reference()
    skip = op.facts.skips.get(be.name, "")
    results: list[SampleCheck] = []
    n = len(checked_samples(op)) if zero_size else len(op.facts.samples)
    for k in range(n):
        label = _label(op, k)
        if skip:
            results.append(
                SampleCheck(op.name, k, label, be.name, dtype, "", None, None, None, None, skip)
            )
            continue
        results.append(_check_sample(op, k, label, be, dtype, ref_name, second_order))
    return results


def _check_sample(
    op: OpDef, k: int, label: str, be: Backend, dtype: str, reference: str, second_order: bool
) -> SampleCheck:
    where = f"check_op: {op.name} sample {k} ({label}) on {be.name} (device {be.device}, {dtype})"
    ref = errors_vs_reference(op, k, be, dtype, reference=reference)
    same = ref.reference == "numpy" and be.name == "numpy" and dtype == "float64"
    ref_label = "self" if same else ref.reference
    atol, rtol = op.facts.tol.get(dtype, FORWARD_TOL.get(dtype, FORWARD_TOL["float32"]))
    if ref.refused:
        if not ref.forward_ok:
            raise AssertionError(
                f"{where}: the {ref.reference} reference refuses these inputs "
                f"({ref.refused}), but the op returned a result; raise an OpError that "
                f"says why"
            )
        return SampleCheck(
            op.name, k, label, be.name, dtype, ref_label, 0.0, None, None, None, "", ref.raised
        )
    if not ref.forward_ok:
        raise AssertionError(
            f"{where}: the forward differs from the {ref.reference} reference by "
            f"{ref.forward:.3g} (max abs), beyond atol {atol:g} + rtol {rtol:g} * |ref|"
        )
    grad_bound = GRAD_TOL_FACTOR * (atol + rtol)
    if ref.grad is not None and not ref.grad <= grad_bound:
        raise AssertionError(
            f"{where}: the gradient differs from the {ref.reference} reference by "
            f"{ref.grad:.3g} (max abs, for a random upstream gradient), beyond {grad_bound:g}"
        )
    sample = checked_samples(op)[k]
    inputs = sample_tensors(op, sample, be, dtype, seed=k)
    checked = any(isinstance(t, Tensor) and t.requires_grad for t in inputs)
    gc_err: float | None = None
    second: bool | None = None
    if op.differentiable and checked:

        def fn(*args: Any) -> Any:
            return call(op, list(args), sample.params)

        res = gradient_error(fn, inputs)
        gc_err = res.max_abs
        if not res.ok:
            raise GradcheckError(f"{where}: {res.message}")
        if second_order:
            try:
                second = gradgradcheck(fn, inputs, seed=k)
            except GradcheckError as exc:
                raise GradcheckError(f"{where}: second derivatives: {exc}") from exc
    return SampleCheck(
        op.name, k, label, be.name, dtype, ref_label, ref.forward, ref.grad, gc_err, second
    )
