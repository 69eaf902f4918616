"""Central-difference gradient checks that work on every backend."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._grad_mode import no_grad
from ..tensor import Tensor

__all__ = ["GradcheckError", "assert_close", "gradcheck"]

_DEFAULTS = {  # dtype name -> (eps, atol, rtol)
    "float64": (1e-6, 1e-5, 1e-3),
    "float32": (1e-2, 1e-2, 1e-2),
}


class GradcheckError(AssertionError):
    """Analytic and numeric gradients disagree; the message says where and by how much."""


def _host(x: Any) -> np.ndarray:
    if isinstance(x, Tensor):
        return np.asarray(x._backend.to_numpy(x.data))
    if hasattr(x, "detach") and hasattr(x, "numpy"):  # a torch tensor
        return np.asarray(x.detach().cpu().numpy())
    if type(x).__module__.startswith("array_api_strict"):
        import array_api_strict

        return np.asarray(x.to_device(array_api_strict.Device("CPU_DEVICE")))
    return np.asarray(x)


def assert_close(
    actual: Any, expected: Any, *, atol: float = 1e-7, rtol: float = 1e-7, msg: str = ""
) -> None:
    """Assert ``|actual - expected| <= atol + rtol * |expected|`` elementwise.

    Accepts Tensors, arrays of any backend, torch tensors and Python numbers; shapes
    must match exactly. The error names the worst element.

    Examples
    --------
    >>> import minitorch
    >>> from minitorch.testing import assert_close
    >>> assert_close(minitorch.tensor([1.0, 2.0]), [1.0, 2.0])
    """
    a = _host(actual).astype(np.float64) if _host(actual).dtype != bool else _host(actual)
    e = np.asarray(_host(expected))
    if a.shape != e.shape:
        raise AssertionError(f"{msg}shape mismatch: actual {a.shape}, expected {e.shape}")
    if a.dtype == bool or e.dtype == bool:
        if not np.array_equal(a, e):
            raise AssertionError(f"{msg}boolean arrays differ")
        return
    e = e.astype(np.float64)
    same_inf = (a == e) | (np.isnan(a) & np.isnan(e))
    err = np.where(same_inf, 0.0, np.abs(a - e))
    bound = atol + rtol * np.abs(e)
    bad = ~(err <= bound)
    if bad.any():
        excess = np.where(bad, err - bound, -np.inf)
        i = np.unravel_index(int(np.argmax(np.nan_to_num(excess, nan=np.inf))), a.shape) if a.ndim else ()
        raise AssertionError(
            f"{msg}{int(bad.sum())} of {a.size} elements differ beyond atol={atol:g}, "
            f"rtol={rtol:g}; worst at index {tuple(int(k) for k in i)}: actual {a[i]!r}, "
            f"expected {e[i]!r} (abs err {err[i]:.3g})"
        )


def _new_like(t: Tensor, values: np.ndarray) -> Tensor:
    be = t._backend
    return Tensor._make(be.from_numpy(values.astype(_host(t).dtype), t.data.dtype, t.device), be, None)


def gradcheck(
    fn: Callable[..., Tensor],
    inputs: Sequence[Tensor],
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
    the analytic and numeric values.

    Examples
    --------
    >>> import minitorch
    >>> from minitorch.testing import gradcheck
    >>> x = minitorch.tensor([0.3, -1.2], dtype="float64", requires_grad=True)
    >>> gradcheck(lambda t: (t.tanh() * t).sum(), [x])
    True
    """
    inputs = list(inputs)
    checked = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input requires grad")
    dname = inputs[checked[0]]._backend.dtype_name(inputs[checked[0]].data.dtype)
    d_eps, d_atol, d_rtol = _DEFAULTS.get(dname, _DEFAULTS["float32"])
    eps = d_eps if eps is None else eps
    atol = d_atol if atol is None else atol
    rtol = d_rtol if rtol is None else rtol
    rng = np.random.default_rng(seed)

    out = fn(*inputs)
    if not isinstance(out, Tensor):
        raise TypeError(f"gradcheck: fn must return a Tensor, got {type(out).__name__}")
    out_host = _host(out).astype(np.float64)
    n_out = out_host.size

    def evaluate(k: int, values: np.ndarray) -> np.ndarray:
        args = list(inputs)
        args[k] = _new_like(inputs[k], values)
        with no_grad():
            return _host(fn(*args)).astype(np.float64)

    def analytic_vjp(v: np.ndarray) -> list[np.ndarray]:
        fresh = [t.detach().requires_grad_() if i in checked else t for i, t in enumerate(inputs)]
        y = fn(*fresh)
        if not y.requires_grad:
            return [np.zeros(_host(fresh[i]).shape) for i in checked]
        y.backward(_new_like(y, v.reshape(out_host.shape)))
        res = []
        for i in checked:
            g = fresh[i].grad
            res.append(np.zeros(_host(fresh[i]).shape) if g is None else np.asarray(fresh[i]._backend.to_numpy(g), dtype=np.float64))
        return res

    if fast_mode:
        v = rng.standard_normal(out_host.shape)
        grads = analytic_vjp(v)
        for k, i in enumerate(checked):
            x0 = _host(inputs[i]).astype(np.float64)
            u = rng.standard_normal(x0.shape)
            numeric = float(np.sum((evaluate(i, x0 + eps * u) - evaluate(i, x0 - eps * u)) * v) / (2 * eps))
            analytic = float(np.sum(grads[k] * u))
            if not abs(analytic - numeric) <= atol + rtol * abs(numeric):
                raise GradcheckError(
                    f"gradcheck (fast mode) failed for input {i}: the projection v^T J u is "
                    f"{analytic!r} analytically but {numeric!r} numerically"
                )
        return True

    # full Jacobians, row by row: analytic via one backward per output element
    analytic_rows = []
    for j in range(n_out):
        v = np.zeros(n_out)
        v[j] = 1.0
        analytic_rows.append(analytic_vjp(v))
    for k, i in enumerate(checked):
        x0 = _host(inputs[i]).astype(np.float64)
        numeric = np.zeros((n_out, x0.size))
        flat = x0.reshape(-1)
        for e in range(x0.size):
            plus, minus = flat.copy(), flat.copy()
            plus[e] += eps
            minus[e] -= eps
            numeric[:, e] = (
                (evaluate(i, plus.reshape(x0.shape)) - evaluate(i, minus.reshape(x0.shape))).reshape(-1)
                / (2 * eps)
            )
        analytic = np.stack([row[k].reshape(-1) for row in analytic_rows]) if n_out else numeric
        err = np.abs(analytic - numeric)
        bound = atol + rtol * np.abs(numeric)
        bad = ~(err <= bound)
        if bad.any():
            j, e = np.unravel_index(int(np.argmax(np.where(bad, err - bound, -np.inf))), err.shape)
            elem = tuple(int(q) for q in np.unravel_index(int(e), x0.shape)) if x0.ndim else ()
            raise GradcheckError(
                f"gradcheck failed for input {i} (shape {x0.shape}): d out[{int(j)}] / d x[{elem}] "
                f"is {analytic[j, e]!r} analytically but {numeric[j, e]!r} numerically "
                f"(|diff| {err[j, e]:.3g} > atol {atol:g} + rtol {rtol:g} * |numeric|; "
                f"{int(bad.sum())} of {bad.size} Jacobian entries differ)"
            )
    return True
