"""Central-difference gradient checks that work on every backend."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._grad_mode import no_grad
from ..backend import to_host
from ..tensor import Tensor

__all__ = ["GradcheckError", "GradientError", "assert_close", "gradcheck", "gradient_error"]

GRADCHECK_DEFAULTS = {  # dtype name -> (eps, atol, rtol)
    "float64": (1e-6, 1e-5, 1e-3),
    "float32": (1e-2, 1e-2, 1e-2),
}


class GradcheckError(AssertionError):
    """Analytic and numeric gradients disagree; the message says where and by how much."""


def _host(x: Any) -> np.ndarray:
    """Any Tensor, backend array, torch tensor or number as a host NumPy array."""
    if isinstance(x, Tensor):
        return np.asarray(x._backend.to_numpy(x.data))
    return to_host(x)


def _num(v: Any) -> str:
    """A number as plain text (``0.25``, not ``np.float64(0.25)``)."""
    if isinstance(v, np.generic):
        v = v.item()
    return repr(v)


def assert_close(
    actual: Any, expected: Any, *, atol: float = 1e-7, rtol: float = 1e-7, msg: str = ""
) -> None:
    """Assert ``|actual - expected| <= atol + rtol * |expected|`` elementwise.

    Accepts Tensors, arrays of any backend, torch tensors and Python numbers; shapes
    must match exactly. Infinities must match exactly; NaN matches NaN. The error
    names the worst element, both values and the tolerances.

    Parameters
    ----------
    actual, expected : Tensor, array, torch tensor or number
    atol, rtol : float
        Absolute and relative tolerance.
    msg : str
        Prefix for the error message (e.g. the op's name).

    Raises
    ------
    AssertionError
        On a shape mismatch, or when some element is out of tolerance.

    Examples
    --------
    >>> import minitorch
    >>> from minitorch.testing import assert_close
    >>> assert_close(minitorch.tensor([1.0, 2.0]), [1.0, 2.0 + 1e-9])
    """
    a = _host(actual)
    e = _host(expected)
    if a.shape != e.shape:
        raise AssertionError(f"{msg}shape mismatch: actual {a.shape}, expected {e.shape}")
    if a.dtype == bool or e.dtype == bool:
        if not np.array_equal(a, e):
            n_bad = int(np.sum(a != e))
            raise AssertionError(f"{msg}boolean arrays differ in {n_bad} of {a.size} elements")
        return
    a = a.astype(np.float64)
    e = e.astype(np.float64)
    same = (a == e) | (np.isnan(a) & np.isnan(e))  # also equal infinities
    with np.errstate(invalid="ignore"):
        err = np.where(same, 0.0, np.abs(a - e))
        bound = atol + rtol * np.abs(e)
    # an infinity or NaN matches only itself (the bound is inf where expected is inf)
    bad = ~same & (~(err <= bound) | ~np.isfinite(a) | ~np.isfinite(e))
    if bad.any():
        with np.errstate(invalid="ignore"):  # inf - inf: a non-finite mismatch is the worst
            excess = np.nan_to_num(np.where(bad, err - bound, -np.inf), nan=np.inf)
        i = np.unravel_index(int(np.argmax(excess)), a.shape) if a.ndim else ()
        raise AssertionError(
            f"{msg}{int(bad.sum())} of {a.size} elements differ beyond atol={atol:g}, "
            f"rtol={rtol:g}; worst at index {tuple(int(k) for k in i)}: actual {_num(a[i])}, "
            f"expected {_num(e[i])} (abs err {err[i]:.3g})"
        )


@dataclasses.dataclass(frozen=True)
class GradientError:
    """How far the analytic gradients are from central differences.

    Attributes
    ----------
    max_abs : float
        The largest ``|analytic - numeric|`` over every checked Jacobian entry (in fast
        mode: over the random projections ``v^T J u``, one per input).
    ok : bool
        Whether every entry is within ``atol + rtol * |numeric|``.
    message : str
        Empty when ``ok``; otherwise what :func:`gradcheck` raises: the input index, the
        worst element and its analytic and numeric values.
    """

    max_abs: float
    ok: bool
    message: str = ""


def _new_like(t: Tensor, values: np.ndarray) -> Tensor:
    be = t._backend
    host_dtype = _host(t).dtype
    return Tensor._make(be.from_numpy(values.astype(host_dtype), t.data.dtype, t.device), be, None)


def gradient_error(
    fn: Callable[..., Tensor],
    inputs: Sequence[Any],
    *,
    eps: float | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    fast_mode: bool = False,
    seed: int = 0,
) -> GradientError:
    """Compare backward's gradients with central differences and return the error.

    The same comparison as :func:`gradcheck`, which raises where this returns. Every
    input that requires grad is checked. In full mode the whole Jacobian is compared
    (one backward per output element, two evaluations per input element);
    ``fast_mode`` compares one random projection ``v^T J u`` per input.

    Parameters
    ----------
    fn : callable
        Takes the inputs and returns one Tensor.
    inputs : sequence
        Tensors (those with ``requires_grad`` are checked) and other arguments.
    eps, atol, rtol : float, optional
        Step and tolerances; defaults depend on the dtype of the first checked input:
        float64 ``1e-6, 1e-5, 1e-3``; float32 ``1e-2, 1e-2, 1e-2``.
    fast_mode : bool
        One random projection instead of the full Jacobian.
    seed : int
        For the random projections and upstream gradients.

    Returns
    -------
    GradientError

    Examples
    --------
    >>> import minitorch
    >>> from minitorch.testing import gradient_error
    >>> x = minitorch.tensor([0.3, -1.2], dtype="float64", requires_grad=True)
    >>> r = gradient_error(lambda t: (t * t).sum(), [x])
    >>> r.ok, r.max_abs < 1e-8
    (True, True)
    """
    inputs = list(inputs)
    checked = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not checked:
        raise ValueError(
            "gradcheck: no input requires grad; create the inputs to check with requires_grad=True"
        )
    first = inputs[checked[0]]
    dname = first._backend.dtype_name(first.data.dtype)
    d_eps, d_atol, d_rtol = GRADCHECK_DEFAULTS.get(dname, GRADCHECK_DEFAULTS["float32"])
    eps = d_eps if eps is None else eps
    atol = d_atol if atol is None else atol
    rtol = d_rtol if rtol is None else rtol
    rng = np.random.default_rng(seed)

    with no_grad():
        out = fn(*inputs)
    if not isinstance(out, Tensor):
        raise TypeError(f"gradcheck: fn must return a Tensor, got {type(out).__name__}")
    out_host = _host(out).astype(np.float64)
    n_out = out_host.size
    in_host = {i: _host(inputs[i]).astype(np.float64) for i in checked}

    def evaluate(k: int, values: np.ndarray) -> np.ndarray:
        args = list(inputs)
        args[k] = _new_like(inputs[k], values)
        with no_grad():
            return _host(fn(*args)).astype(np.float64)

    def analytic_vjp(v: np.ndarray) -> list[np.ndarray]:
        fresh = [t.detach().requires_grad_() if i in checked else t for i, t in enumerate(inputs)]
        y = fn(*fresh)
        if not y.requires_grad:
            return [np.zeros(in_host[i].shape) for i in checked]
        y.backward(_new_like(y, v.reshape(out_host.shape)))
        res = []
        for i in checked:
            g = fresh[i].grad
            res.append(
                np.zeros(in_host[i].shape)
                if g is None
                else np.asarray(fresh[i]._backend.to_numpy(g), dtype=np.float64)
            )
        return res

    worst = 0.0
    if fast_mode:
        v = rng.standard_normal(out_host.shape)
        grads = analytic_vjp(v)
        for k, i in enumerate(checked):
            x0 = in_host[i]
            u = rng.standard_normal(x0.shape)
            if not x0.size:
                continue  # no elements: the projection is over nothing (and nan - nan is nan)
            diff = evaluate(i, x0 + eps * u) - evaluate(i, x0 - eps * u)
            numeric = float(np.sum(diff * v) / (2 * eps))
            analytic = float(np.sum(grads[k] * u))
            err = abs(analytic - numeric)
            worst = max(worst, err) if err == err else float("nan")
            if not err <= atol + rtol * abs(numeric):
                return GradientError(
                    worst,
                    False,
                    f"gradcheck (fast mode) failed for input {i} (shape {x0.shape}): the "
                    f"random projection v^T J u is {analytic!r} analytically but "
                    f"{numeric!r} numerically (|diff| {err:.3g} > atol {atol:g} + rtol "
                    f"{rtol:g} * |numeric|); run without fast_mode to see the element",
                )
        return GradientError(worst, True)

    # full Jacobians, row by row: analytic via one backward per output element
    analytic_rows = []
    for j in range(n_out):
        v = np.zeros(n_out)
        v[j] = 1.0
        analytic_rows.append(analytic_vjp(v))
    failure = ""
    for k, i in enumerate(checked):
        x0 = in_host[i]
        num_jac = np.zeros((n_out, x0.size))
        flat = x0.reshape(-1)
        for c in range(x0.size):
            plus, minus = flat.copy(), flat.copy()
            plus[c] += eps
            minus[c] -= eps
            fd = evaluate(i, plus.reshape(x0.shape)) - evaluate(i, minus.reshape(x0.shape))
            num_jac[:, c] = fd.reshape(-1) / (2 * eps)
        ana_jac = (
            np.stack([row[k].reshape(-1) for row in analytic_rows])
            if n_out
            else np.zeros((0, x0.size))
        )
        with np.errstate(invalid="ignore"):
            err_jac = np.abs(ana_jac - num_jac)
            bound_jac = atol + rtol * np.abs(num_jac)
        if err_jac.size:
            worst = float("nan") if np.isnan(err_jac).any() else max(worst, float(err_jac.max()))
        bad = ~(err_jac <= bound_jac)
        if bad.any() and not failure:
            excess = np.nan_to_num(np.where(bad, err_jac - bound_jac, -np.inf), nan=np.inf)
            j, e = (int(q) for q in np.unravel_index(int(np.argmax(excess)), err_jac.shape))
            elem = tuple(int(q) for q in np.unravel_index(int(e), x0.shape)) if x0.ndim else ()
            out_idx = (
                tuple(int(q) for q in np.unravel_index(int(j), out_host.shape))
                if out_host.ndim
                else ()
            )
            failure = (
                f"gradcheck failed for input {i} (shape {x0.shape}): the derivative of output "
                f"element {out_idx} with respect to input element {elem} is "
                f"{_num(ana_jac[j, e])} analytically but {_num(num_jac[j, e])} numerically "
                f"(|diff| {err_jac[j, e]:.3g} > atol {atol:g} + rtol {rtol:g} * |numeric|; "
                f"{int(bad.sum())} of {bad.size} Jacobian entries differ)"
            )
    return GradientError(worst, not failure, failure)


def gradcheck(
    fn: Callable[..., Tensor],
    inputs: Sequence[Any],
    *,
    eps: float | None = None,
    atol: float | None = None,
    rtol: float | None = None,
    fast_mode: bool = False,
    seed: int = 0,
) -> bool:
    """Compare the gradients backward computes with central differences.

    Every input that requires grad is checked. In full mode the whole Jacobian is
    compared (one backward per output element, one pair of evaluations per input
    element); ``fast_mode`` compares one random projection ``v^T J u`` instead.

    Parameters
    ----------
    fn : callable
        Takes the inputs (Tensors) and returns one Tensor.
    inputs : sequence of Tensor
    eps, atol, rtol : float, optional
        Defaults depend on the dtype: float64 ``1e-6, 1e-5, 1e-3``; float32
        ``1e-2, 1e-2, 1e-2``.
    fast_mode : bool
    seed : int
        For the random projections.

    Returns
    -------
    True, or raises :class:`GradcheckError` naming the input, the worst element and
    the analytic and num_jac values.

    Examples
    --------
    >>> import minitorch
    >>> from minitorch.testing import gradcheck
    >>> x = minitorch.tensor([0.3, -1.2], dtype="float64", requires_grad=True)
    >>> gradcheck(lambda t: (t.tanh() * t).sum(), [x])
    True
    """
    res = gradient_error(fn, inputs, eps=eps, atol=atol, rtol=rtol, fast_mode=fast_mode, seed=seed)
    if not res.ok:
        raise GradcheckError(res.message)
    return True
