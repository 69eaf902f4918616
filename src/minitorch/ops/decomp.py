"""Linear algebra of the Array API ``linalg`` extension: determinants, inverses, solves,
the decompositions (Cholesky, QR, symmetric eigen, SVD), the pseudo-inverse, norms and
the small helpers (diagonal, trace, outer, cross, matrix_power, matrix_rank).

A decomposition with several results (``eigh``, ``svd``, ``qr``, ``slogdet``) is
several ops here, one per differentiable result (``eigvalsh`` and ``eigvecsh``;
``svd_u``, ``svdvals`` and ``svd_vh``; ``qr_q`` and ``qr_r``; ``logabsdet``), because a
graph node has one output. These building blocks (all but ``eigvalsh`` and ``svdvals``,
which are standard functions) are ops of the registry and the catalog but not
top-level names (``public="minitorch.linalg.svd"`` ...): reach them through
``minitorch.linalg``. They share one forward: :func:`sharing` (which
``minitorch.linalg.eigh`` and the others use) lets the second op reuse the
decomposition the first computed. Each VJP follows the standard references (M. Giles,
"Collected matrix derivative results", 2008; I. Murray, "Differentiation of the Cholesky
decomposition", 2016; J. Townsend, "Differentiating the singular value decomposition",
2016; H.-J. Liao et al., "Differentiable programming tensor networks", 2019 for QR), as
PyTorch implements them, written in namespace calls so that they differentiate again.

Conventions (each is PyTorch's where PyTorch has one):

* ``eigh``, ``eigvalsh`` and ``cholesky`` read the symmetric part ``(x + x^T) / 2`` of
  their input (that is ``x`` itself for a symmetric ``x``, as the standard requires):
  their gradient is symmetric, as PyTorch's.
* Eigenvectors and singular vectors are unique up to sign: minitorch makes the largest
  (first, on ties) entry of each eigenvector and left singular vector positive, and ``R``
  of ``qr`` has a positive diagonal, so every backend gives the same result.
* Complex floating inputs compute forward only (no gradient): ``(x + x^H) / 2`` is read
  for ``eigh``/``cholesky``, ``cholesky(upper=True)`` is ``L^H``, and the sign
  convention above becomes a phase one: each vector is scaled by the unit-modulus
  factor that makes its largest entry real and positive (``R``'s diagonal real and
  positive). ``eigvalsh``, ``svdvals``, ``vector_norm``, ``matrix_norm`` and
  ``slogdet``'s ``logabsdet`` are real; ``slogdet``'s ``sign`` is complex.
* The gradient of eigenvectors or singular vectors at repeated eigen/singular values
  (and of singular vectors at a zero singular value of a non-square matrix) does not
  exist: it is an OpError (PyTorch returns inf/nan there).
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..errors import OpError
from ..tensor import Tensor, describe
from ._registry import Facts, InputError, Sample, defop
from .elementwise import abs as _abs
from .elementwise import clone as _clone
from .elementwise import where as _where
from .linalg import batch_error
from .reduction import expand_reduced, normalize_axes
from .reduction import max as _max
from .reduction import min as _min
from .reduction import sum as _sum
from .shape import reshape as _reshape
from .shape import stack as _stack

# ---------------------------------------------------------------- shared forwards
_MEMO = threading.local()


@contextlib.contextmanager
def sharing() -> Iterator[None]:
    """Inside the block, a decomposition computed by one op's forward is reused by the
    next op that needs the same one of the same array (``eigh``'s values and vectors,
    ``svd``'s three factors): one LAPACK call per decomposition."""
    prev = getattr(_MEMO, "table", None)
    _MEMO.table = {} if prev is None else prev
    try:
        yield
    finally:
        _MEMO.table = prev


def _cached(kind: str, x: Any, params: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
    table = getattr(_MEMO, "table", None)
    if table is None:
        return compute()
    key = (kind, id(x), params)
    hit = table.get(key)
    if hit is not None and hit[0] is x:  # the array itself is held: its id is not reused
        return hit[1]
    value = compute()
    table[key] = (x, value)
    return value


# ---------------------------------------------------------------- checks and helpers
def _floating(xp: Any, x: Any, name: str) -> None:
    if not xp.isdtype(x.dtype, ("real floating", "complex floating")):
        raise InputError(
            f"{name} needs a floating-point input (float32, float64, or complex64, "
            f"complex128 without gradients), got dtype {x.dtype}; convert it first, e.g. "
            f"x.astype('float64')"
        )


def _is_complex(xp: Any, a: Any) -> bool:
    return bool(xp.isdtype(a.dtype, "complex floating"))


def _mH(xp: Any, a: Any) -> Any:
    """The conjugate transpose of (a stack of) matrices (the transpose of real ones)."""
    t = xp.matrix_transpose(a)
    return xp.conj(t) if _is_complex(xp, a) else t


def _matrices(xp: Any, x: Any, name: str) -> None:
    _floating(xp, x, name)
    if x.dtype not in (xp.float32, xp.float64, xp.complex64, xp.complex128):
        # float16, bfloat16: no LAPACK routine takes them (NumPy's refusal was reported
        # as a singular matrix); PyTorch refuses them too
        raise InputError(
            f"{name} needs float32 or float64 matrices (or complex64, complex128), got "
            f"dtype {str(x.dtype).rsplit('.', 1)[-1]}, which LAPACK (NumPy's and PyTorch's "
            f"linear algebra) does not take; convert it first, e.g. x.astype('float32')"
        )
    if x.ndim < 2:
        raise InputError(
            f"{name} needs (a stack of) matrices, shape (..., m, n), got shape {tuple(x.shape)}"
        )


def _square(xp: Any, x: Any, name: str) -> None:
    _matrices(xp, x, name)
    if x.shape[-1] != x.shape[-2]:
        raise InputError(
            f"{name} needs (a stack of) square matrices, shape (..., n, n), got shape "
            f"{tuple(x.shape)}"
        )


def _mT(xp: Any, a: Any) -> Any:
    return xp.matrix_transpose(a)


def check_decomposition(x: Tensor, who: str, *, square: bool = False, **params: Any) -> None:
    """Refuse, as an OpError naming ``who`` (the public function: ``eigh``, ``svd``,
    ``qr``, ``slogdet``) and the input's shape, dtype and backend, what its building
    blocks (``eigvecsh``, ``svd_u``, ...) would refuse: a public function's error never
    names an op the user cannot find."""
    xp = x._backend.xp
    try:
        (_square if square else _matrices)(xp, x.data, who)
        if "mode" in params:
            _qr_check(x, params["mode"], who)
        if "full_matrices" in params:
            _check_full(x, params["full_matrices"], who)
    except InputError as exc:
        shown = f" with {params}" if params else ""
        raise OpError(f"{who}{shown} failed on inputs {describe(x)}: InputError: {exc}") from None


def _sym(xp: Any, a: Any) -> Any:
    """The symmetric part ``(a + a^T) / 2`` (Hermitian part ``(a + a^H) / 2`` if complex)."""
    return (a + _mH(xp, a)) * 0.5


def _eye(xp: Any, n: int, like: Any, m: int | None = None, k: int = 0) -> Any:
    return xp.eye(n, m, k=k, dtype=like.dtype, device=like.device)


def _all_finite(xp: Any, a: Any) -> bool:
    return bool(xp.all(xp.isfinite(a)))


# a failure of the device, not of the matrix: out of memory, or a CUDA library's status
# (a singular matrix is not one: CuPy reports it in a status word, not by raising)
_DEVICE_FAILURES = ("OutOfMemory", "CUBLAS", "CUSOLVER", "CUDA", "Accelerator")


def _attempt(compute: Callable[[], Any], why: str) -> Any:
    """``compute()``, with a library's refusal (NumPy and PyTorch raise) reported as
    ``why``; a failure of the device (out of memory) passes as it is."""
    try:
        return compute()
    except Exception as exc:
        name = type(exc).__name__
        if isinstance(exc, MemoryError) or any(f in name for f in _DEVICE_FAILURES):
            raise
        raise InputError(f"{why} ({name}: {exc})") from exc


def _checked(xp: Any, x: Any, compute: Callable[[], Any], why: str) -> Any:
    """``compute()``, with a library's refusal (NumPy and PyTorch raise) or a non-finite
    result from finite input (JAX returns nan/inf) reported as ``why``."""
    out = _attempt(compute, why)
    parts = out if isinstance(out, tuple) else (out,)
    if not all(_all_finite(xp, p) for p in parts) and _all_finite(xp, x):
        raise InputError(why)
    return out


_SINGULAR = (
    "the matrix is singular (not invertible); a pseudo-inverse (linalg.pinv) or a "
    "least-squares solution handles rank-deficient matrices"
)


def _inv_for_grad(xp: Any, a: Any, who: str) -> Any:
    """``inv(a)`` in a VJP; a singular ``a`` is an OpError naming ``who``."""
    try:
        out = xp.linalg.inv(a)
    except OpError:
        raise
    except Exception as exc:
        raise OpError(
            f"{who}: the gradient needs the inverse of the {tuple(a.shape)} matrix, which is "
            f"singular ({type(exc).__name__}: {exc})"
        ) from exc
    if not _all_finite(xp, out) and _all_finite(xp, a):
        raise OpError(
            f"{who}: the gradient needs the inverse of the {tuple(a.shape)} matrix, which is "
            f"singular"
        )
    return out


def _bsolve(xp: Any, a: Any, b: Any) -> Any:
    """``solve(a, b)`` for matrices ``b``, the batch dimensions broadcast explicitly."""
    batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    if tuple(a.shape[:-2]) != batch:
        a = xp.broadcast_to(a, (*batch, *a.shape[-2:]))
    if tuple(b.shape[:-2]) != batch:
        b = xp.broadcast_to(b, (*batch, *b.shape[-2:]))
    return xp.linalg.solve(a, b)


def _diag_embed(xp: Any, v: Any) -> Any:
    """Matrices with ``v`` (..., n) on the diagonal."""
    n = v.shape[-1]
    return _eye(xp, n, v) * xp.expand_dims(v, axis=-2)


def _column_signs(xp: Any, v: Any) -> Any:
    """+1/-1 per column of ``v`` (..., m, k), shape (..., 1, k): the sign that makes
    each column's largest entry (the first of equal ones) positive. For complex ``v``,
    the unit-modulus phase that makes that entry real and positive."""
    idx = xp.argmax(xp.abs(v), axis=-2, keepdims=True)
    pick = xp.take_along_axis(v, idx, axis=-2)
    one = xp.ones_like(pick)
    if _is_complex(xp, v):
        return xp.conj(_phase(xp, pick))
    return xp.where(pick < 0.0, -one, one)


def _phase(xp: Any, a: Any) -> Any:
    """``a / |a|`` of a complex array, 1 where ``a`` is 0."""
    mag = xp.abs(a)
    zero = mag == 0.0
    safe = xp.where(zero, xp.ones_like(mag), mag)
    return xp.where(zero, xp.ones_like(a), a / xp.astype(safe, a.dtype))


def _no_repeats(xp: Any, w: Any, who: str, kind: str) -> None:
    """Refuse (an OpError) ``kind`` (``"eigen"`` or ``"singular "``) values ``w``
    (..., k, sorted) with two equal to within rounding: the vectors' gradient does not
    exist there."""
    k = w.shape[-1]
    if k < 2 or math.prod(w.shape) == 0:
        return
    gaps = xp.abs(w[..., 1:] - w[..., :-1])
    scale = xp.max(xp.abs(w), axis=-1, keepdims=True)  # per matrix of a stack
    tol = scale * (k * xp.finfo(w.dtype).eps)
    if bool(xp.any(gaps <= tol)):
        raise OpError(
            f"{who}: the gradient of the {kind}vectors does not exist where two {kind}values "
            f"are equal, and {tuple(w.shape)} {kind}values of dtype {w.dtype} have two "
            f"equal to within rounding; differentiate a function of the values alone (or "
            f"of a whole eigenspace), or perturb the input (PyTorch gives inf/nan here)"
        )


def _triangle(xp: Any, like: Any, k: int, lower: bool) -> Any:
    """The boolean mask of ``like``'s last two axes on and below (``lower``) or on and
    above diagonal ``k``: a backend array in both runs of a VJP (``arange`` makes backend
    arrays in the differentiable namespace too)."""
    n, m = like.shape[-2], like.shape[-1]
    rows = xp.arange(n, device=like.device)[:, None]
    cols = xp.arange(m, device=like.device)[None, :]
    return (cols - rows) <= k if lower else (cols - rows) >= k


def _expand(xp: Any, a: Any, *axes: int) -> Any:
    for ax in axes:
        a = xp.expand_dims(a, axis=ax)
    return a


# ---------------------------------------------------------------- samples
def _well_conditioned(*shape: int) -> Callable[[np.random.Generator], tuple[Any, ...]]:
    """A random matrix (stack) plus 3 on its main diagonal: far from singular."""

    def make(rng: np.random.Generator) -> tuple[Any, ...]:
        m, n = shape[-2:]
        return (rng.uniform(-1.0, 1.0, shape) + 3.0 * np.eye(m, n),)

    return make


def _spd(*shape: int) -> Callable[[np.random.Generator], tuple[Any, ...]]:
    """A random symmetric positive definite matrix (stack)."""

    def make(rng: np.random.Generator) -> tuple[Any, ...]:
        b = rng.uniform(-1.0, 1.0, shape)
        return (b @ np.swapaxes(b, -1, -2) + shape[-1] * np.eye(shape[-1]),)

    return make


def _orthonormal(rng: np.random.Generator, batch: tuple[int, ...], m: int, k: int) -> Any:
    q, _ = np.linalg.qr(rng.standard_normal((*batch, m, k)))
    return q


def _spread_eigen(*shape: int) -> Callable[[np.random.Generator], tuple[Any, ...]]:
    """A random symmetric matrix (stack) whose eigenvalues are at least 0.5 apart."""

    def make(rng: np.random.Generator) -> tuple[Any, ...]:
        n, batch = shape[-1], shape[:-2]
        q = _orthonormal(rng, batch, n, n)
        w = np.linspace(-2.0, 2.0, n) + rng.uniform(-0.2, 0.2, (*batch, n))
        return ((q * w[..., None, :]) @ np.swapaxes(q, -1, -2),)

    return make


def _spread_singular(*shape: int) -> Callable[[np.random.Generator], tuple[Any, ...]]:
    """A random matrix (stack) whose singular values are in [1, 3], 0.5 apart or more."""

    def make(rng: np.random.Generator) -> tuple[Any, ...]:
        m, n = shape[-2:]
        batch, k = shape[:-2], min(m, n)
        u = _orthonormal(rng, batch, m, k)
        v = _orthonormal(rng, batch, n, k)
        s = np.linspace(3.0, 1.0, k) + rng.uniform(-0.2, 0.2, (*batch, k))
        return ((u * s[..., None, :]) @ np.swapaxes(v, -1, -2),)

    return make


def _low_rank(m: int, n: int, r: int) -> Callable[[np.random.Generator], tuple[Any, ...]]:
    def make(rng: np.random.Generator) -> tuple[Any, ...]:
        return (rng.uniform(-1.0, 1.0, (m, r)) @ rng.uniform(-1.0, 1.0, (r, n)),)

    return make


def _solve_pair(
    a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> Callable[[np.random.Generator], tuple[Any, ...]]:
    def make(rng: np.random.Generator) -> tuple[Any, ...]:
        n = a_shape[-1]
        a = rng.uniform(-1.0, 1.0, a_shape) + 3.0 * np.eye(n)
        return a, rng.uniform(-2.0, 2.0, b_shape)

    return make


# torch references with minitorch's sign conventions (the signs carry no gradient)
def _t_signs(torch: Any, v: Any) -> Any:
    if v.numel() == 0:
        return torch.ones((*v.shape[:-2], 1, v.shape[-1]), dtype=v.dtype)
    idx = v.detach().abs().argmax(dim=-2, keepdim=True)
    pick = torch.take_along_dim(v.detach(), idx, dim=-2)
    return torch.where(pick < 0, -1.0, 1.0).to(v.dtype)


def _t_eigh(torch: Any, x: Any) -> Any:
    w, v = torch.linalg.eigh((x + x.mT) / 2)
    return w, v * _t_signs(torch, v)


def _t_svd(torch: Any, x: Any, full_matrices: bool) -> Any:
    u, s, vh = torch.linalg.svd(x, full_matrices=full_matrices)
    k = s.shape[-1]
    su = _t_signs(torch, u)
    sv = _t_signs(torch, vh.mT).mT
    sv = torch.cat([su[..., :k].mT, sv[..., k:, :]], dim=-2)
    return u * su, s, vh * sv


def _t_qr(torch: Any, x: Any, mode: str) -> Any:
    q, r = torch.linalg.qr(x, mode=mode)
    k = min(x.shape[-2], x.shape[-1])
    d = torch.diagonal(r, dim1=-2, dim2=-1)[..., :k].detach()
    s = torch.where(d < 0, -1.0, 1.0).to(x.dtype)
    ones_q = torch.ones((*s.shape[:-1], q.shape[-1] - k), dtype=x.dtype)
    ones_r = torch.ones((*s.shape[:-1], r.shape[-2] - k), dtype=x.dtype)
    sq = torch.cat([s, ones_q], dim=-1)
    sr = torch.cat([s, ones_r], dim=-1)
    return q * sq[..., None, :], r * sr[..., :, None]


# ================================================================ det, slogdet
def _det(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """The determinant of (a stack of) square matrices, ``linalg.det`` (the gradient is
    ``g * det(x) * inv(x)^T``; at an exactly singular matrix it is an OpError).

    Examples
    --------
    >>> import minitorch
    >>> x = minitorch.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
    >>> y = minitorch.det(x)
    >>> y.backward()
    >>> y.item(), x.grad.tolist()
    (5.0, [[3.0, -1.0], [-1.0, 2.0]])
    """
    _square(xp, x, "det")
    out = xp.asarray(xp.linalg.det(x))
    return out, (x, out)


def _det_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    x, d = saved
    if math.prod(x.shape) and bool(xp.any(d == 0.0)):
        raise OpError(
            f"det: the gradient at an exactly singular matrix (determinant 0, of the "
            f"{tuple(x.shape)} input of dtype {x.dtype}) is not implemented; perturb the "
            f"matrix, or use slogdet where it is invertible"
        )
    return (_expand(xp, g * d, -1, -1) * _mT(xp, _inv_for_grad(xp, x, "det")),)


det = defop(
    "det",
    _det,
    _det_vjp,
    facts=Facts(
        ref=lambda torch, x: torch.linalg.det(x),
        samples=(
            Sample(make=_well_conditioned(3, 3)),
            Sample(make=_well_conditioned(2, 4, 4)),
            Sample(make=_well_conditioned(1, 1)),
        ),
        formula="g * det(x) * inv(x)^T",
    ),
)


def _logabsdet(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """``log |det(x)|`` of (a stack of) square matrices: the ``logabsdet`` of
    ``linalg.slogdet`` (whose ``sign`` has no gradient); the gradient is
    ``g * inv(x)^T``.

    Examples
    --------
    >>> import minitorch
    >>> x = minitorch.tensor([[2.0, 0.0], [0.0, 4.0]], requires_grad=True)
    >>> y = minitorch.linalg.slogdet(x).logabsdet
    >>> y.backward()
    >>> x.grad.tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    _square(xp, x, "logabsdet")
    r = _cached("slogdet", x, (), lambda: xp.linalg.slogdet(x))
    return xp.asarray(r[1]), (x,)


def _logabsdet_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (x,) = saved
    return (_expand(xp, g, -1, -1) * _mT(xp, _inv_for_grad(xp, x, "slogdet")),)


logabsdet = defop(
    "logabsdet",
    _logabsdet,
    _logabsdet_vjp,
    public="minitorch.linalg.slogdet",
    facts=Facts(
        ref=lambda torch, x: torch.linalg.slogdet(x).logabsdet,
        samples=(
            Sample(make=_well_conditioned(3, 3)),
            Sample(make=_well_conditioned(2, 4, 4)),
        ),
        formula="g * inv(x)^T",
    ),
)


def sign_of_det(xp: Any, x: Any) -> Any:
    """The ``sign`` of ``slogdet(x)`` (a backend array; the decomposition is shared
    with :func:`logabsdet` inside :func:`sharing`)."""
    return xp.asarray(_cached("slogdet", x, (), lambda: xp.linalg.slogdet(x))[0])


# ================================================================ inv, solve
def _inv(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """The inverse of (a stack of) square matrices, ``linalg.inv``; a singular matrix is
    an OpError on every backend. The gradient is ``-inv(x)^T g inv(x)^T``.

    Examples
    --------
    >>> import minitorch
    >>> minitorch.inv(minitorch.tensor([[2.0, 0.0], [0.0, 4.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    _square(xp, x, "inv")
    out = _checked(xp, x, lambda: xp.linalg.inv(x), _SINGULAR)
    return out, (out,)


def _inv_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    (b,) = saved
    bt = _mT(xp, b)
    return (-xp.matmul(xp.matmul(bt, g), bt),)


inv = defop(
    "inv",
    _inv,
    _inv_vjp,
    facts=Facts(
        ref=lambda torch, x: torch.linalg.inv(x),
        samples=(Sample(make=_well_conditioned(3, 3)), Sample(make=_well_conditioned(2, 4, 4))),
        formula="-inv(x)^T g inv(x)^T",
    ),
)


def _solve(xp: Any, x1: Any, x2: Any) -> tuple[Any, tuple[Any, ...]]:
    """The solution ``x`` of ``x1 @ x = x2``, ``linalg.solve``: ``x1`` (..., n, n), and
    ``x2`` a vector (n,) or (a stack of) matrices (..., n, k); batch dimensions broadcast.
    A singular ``x1`` is an OpError. Gradients: ``solve(x1^T, g)`` for ``x2``, ``-that @
    x^T`` for ``x1``.

    Examples
    --------
    >>> import minitorch
    >>> a = minitorch.tensor([[2.0, 0.0], [0.0, 4.0]])
    >>> minitorch.solve(a, minitorch.tensor([1.0, 1.0])).tolist()
    [0.5, 0.25]
    """
    _square(xp, x1, "solve")
    _floating(xp, x2, "solve")
    n = x1.shape[-1]
    vector = x2.ndim == 1
    if x2.ndim == 0 or x2.shape[0 if vector else -2] != n:
        raise InputError(
            f"solve needs x2 of shape ({n},) or (..., {n}, k) for x1 of shape "
            f"{tuple(x1.shape)}, got shape {tuple(x2.shape)}"
        )
    b = xp.expand_dims(x2, axis=-1) if vector else x2
    if (error := batch_error(x1, b, "x1 and x2")) is not None:
        raise error
    out = _checked(xp, x1, lambda: _bsolve(xp, x1, b), _SINGULAR)
    if vector:
        out = out[..., 0]
    return out, (x1, out, vector)


def _solve_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any, Any]:
    a, x, vector = saved
    g2 = xp.expand_dims(g, axis=-1) if vector else g
    x2 = xp.expand_dims(x, axis=-1) if vector else x
    try:
        gb = _bsolve(xp, _mT(xp, a), g2)
    except OpError:
        raise
    except Exception as exc:
        raise OpError(f"solve: the gradient needs x1^T, which is singular ({exc})") from exc
    ga = -xp.matmul(gb, _mT(xp, x2)) if needs[0] else None
    if vector:
        gb = gb[..., 0]
    return ga, (gb if needs[1] else None)


solve = defop(
    "solve",
    _solve,
    _solve_vjp,
    nin=2,
    promote="operands",
    facts=Facts(
        ref=lambda torch, x1, x2: torch.linalg.solve(x1, x2),
        samples=(
            Sample(make=_solve_pair((3, 3), (3, 2))),
            Sample(make=_solve_pair((2, 3, 3), (3,))),
            Sample(make=_solve_pair((2, 3, 3), (3, 2))),
            Sample(make=_solve_pair((3, 3), (2, 3, 1))),
        ),
        formula="ga = -solve(a^T, g) x^T, gb = solve(a^T, g)",
    ),
)


# ================================================================ cholesky
def _cholesky(xp: Any, x: Any, upper: bool = False) -> tuple[Any, tuple[Any, ...]]:
    """The Cholesky factor of (a stack of) symmetric positive definite matrices,
    ``linalg.cholesky``: lower ``L`` with ``x = L L^T`` (``upper=True``: ``U = L^T``).
    It reads the symmetric part of ``x``; a matrix that is not positive definite is an
    OpError on every backend. The gradient (Murray 2016) is symmetric, as PyTorch's.

    Examples
    --------
    >>> import minitorch
    >>> minitorch.cholesky(minitorch.tensor([[4.0, 2.0], [2.0, 2.0]])).tolist()
    [[2.0, 0.0], [1.0, 1.0]]
    """
    _square(xp, x, "cholesky")
    if not isinstance(upper, bool):
        raise InputError(f"cholesky: upper must be True or False, got {upper!r}")
    a = _sym(xp, x)
    why = "the matrix is not positive definite (its symmetric part has an eigenvalue <= 0)"
    low = _attempt(lambda: xp.linalg.cholesky(a), why)
    d = xp.linalg.diagonal(low)
    positive = xp.all((xp.real(d) if xp.isdtype(d.dtype, "complex floating") else d) > 0)
    # one host read (a GPU sync) where the factor is good: CuPy factors a singular
    # matrix, a zero on the diagonal; JAX returns nan. A non-finite factor of a
    # non-finite input is returned as it is, as by the libraries that do not raise
    if not bool(positive & xp.all(xp.isfinite(low))) and (not bool(positive) or _all_finite(xp, x)):
        raise InputError(why)
    out = _mH(xp, low) if upper else low
    return out, (out,)


def _cholesky_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], upper: bool = False
) -> tuple[Any]:
    (out,) = saved
    low = _mT(xp, out) if upper else out
    gl = _mT(xp, g) if upper else g
    lt = _mT(xp, low)
    phi = xp.matmul(lt, gl)
    p = (
        xp.where(_triangle(xp, phi, 0, True), phi, 0.0)
        + _mT(xp, xp.where(_triangle(xp, phi, -1, True), phi, 0.0))
    ) * 0.5
    y = _bsolve(xp, lt, p)  # L^-T P
    ga = _mT(xp, _bsolve(xp, lt, _mT(xp, y)))  # L^-T P L^-1
    return (_sym(xp, ga),)


cholesky = defop(
    "cholesky",
    _cholesky,
    _cholesky_vjp,
    facts=Facts(
        ref=lambda torch, x, upper=False: torch.linalg.cholesky((x + x.mT) / 2, upper=upper),
        samples=(
            Sample(make=_spd(3, 3)),
            Sample(make=_spd(2, 4, 4)),
            Sample(make=_spd(3, 3), params={"upper": True}),
        ),
        formula="L^-T Phi(L^T g) L^-1, symmetric",
    ),
)


# ================================================================ eigh
def _eigh_of(xp: Any, x: Any) -> tuple[Any, Any]:
    """Eigenvalues (ascending) and sign-fixed eigenvectors of the symmetric part of x."""

    def compute() -> tuple[Any, Any]:
        w, v = xp.linalg.eigh(_sym(xp, x))[:2]
        if math.prod(v.shape):
            v = v * _column_signs(xp, v) + 0.0  # (+ 0.0: no negative zeros)
        return w, v

    out: tuple[Any, Any] = _cached("eigh", x, (), compute)
    return out


def _eigvalsh(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """The eigenvalues, ascending, of (a stack of) symmetric matrices,
    ``linalg.eigvalsh`` (the ``eigenvalues`` of ``linalg.eigh``); it reads the symmetric
    part of ``x``. The gradient is ``V diag(g) V^T``, defined at repeated eigenvalues too.

    Examples
    --------
    >>> import minitorch
    >>> minitorch.eigvalsh(minitorch.tensor([[2.0, 1.0], [1.0, 2.0]])).tolist()
    [1.0, 3.0]
    """
    _square(xp, x, "eigvalsh")
    w, v = _eigh_of(xp, x)
    return w, (x, v)


def _eigvalsh_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    x, v = saved
    if v is None:  # create_graph: recomputed, so that the second derivative sees it
        v = xp.linalg.eigh(x)[1]
    return (xp.matmul(v * xp.expand_dims(g, axis=-2), _mT(xp, v)),)


eigvalsh = defop(
    "eigvalsh",
    _eigvalsh,
    _eigvalsh_vjp,
    derived=(1,),
    facts=Facts(
        ref=lambda torch, x: torch.linalg.eigvalsh((x + x.mT) / 2),
        samples=(
            Sample(make=_spread_eigen(3, 3)),
            Sample(make=_spread_eigen(2, 4, 4)),
            Sample(((3, 3),), name="a general matrix: its symmetric part"),
        ),
        formula="V diag(g) V^T",
    ),
)


def _eigvecsh(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """The eigenvectors (columns, in the order of ascending eigenvalues) of (a stack of)
    symmetric matrices: the ``eigenvectors`` of ``linalg.eigh``. Each has its largest
    entry positive; it reads the symmetric part of ``x``. The gradient ``V (skew(V^T g)
    / (w_j - w_i)) V^T`` does not exist at repeated eigenvalues: an OpError there.

    Examples
    --------
    >>> import minitorch
    >>> v = minitorch.linalg.eigh(minitorch.tensor([[2.0, 0.0], [0.0, 1.0]])).eigenvectors
    >>> v.tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    """
    _square(xp, x, "eigvecsh")
    w, v = _eigh_of(xp, x)
    return v, (x, v, w)


def _eigvecsh_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    x, v, w = saved
    if w is None:
        w = xp.linalg.eigvalsh(x)
    _no_repeats(xp, w, "eigh", "eigen")
    n = w.shape[-1]
    vtg = xp.matmul(_mT(xp, v), g)
    skew = (vtg - _mT(xp, vtg)) * 0.5
    gaps = xp.expand_dims(w, axis=-2) - xp.expand_dims(w, axis=-1) + _eye(xp, n, w)
    return (xp.matmul(xp.matmul(v, skew / gaps), _mT(xp, v)),)


eigvecsh = defop(
    "eigvecsh",
    _eigvecsh,
    _eigvecsh_vjp,
    public="minitorch.linalg.eigh",
    derived=(2,),
    facts=Facts(
        ref=lambda torch, x: _t_eigh(torch, x)[1],
        samples=(Sample(make=_spread_eigen(3, 3)), Sample(make=_spread_eigen(2, 4, 4))),
        formula="V (skew(V^T g) / (w_j - w_i)) V^T",
    ),
)


# ================================================================ svd
def _svd_of(xp: Any, x: Any, full_matrices: bool) -> tuple[Any, Any, Any]:
    """U, S, Vh of x with minitorch's signs: each column of U has its largest entry
    positive (row i of Vh follows column i of U; Vh's extra rows get their own)."""

    def compute() -> tuple[Any, Any, Any]:
        u, s, vh = xp.linalg.svd(x, full_matrices=full_matrices)[:3]
        k = s.shape[-1]
        if math.prod(u.shape) and math.prod(vh.shape):
            su = _column_signs(xp, u)
            sv = _mT(xp, _column_signs(xp, _mT(xp, vh)))
            su_k = _mT(xp, su[..., :k])
            sv = xp.concat(
                [xp.conj(su_k) if _is_complex(xp, su) else su_k, sv[..., k:, :]], axis=-2
            )
            u, vh = u * su + 0.0, vh * sv + 0.0
        return u, s, vh

    out: tuple[Any, Any, Any] = _cached("svd", x, (full_matrices,), compute)
    return out


def _svd_backward(
    xp: Any, x: Any, u: Any, s: Any, vh: Any, gu: Any, gs: Any, gvh: Any, who: str
) -> Any:
    """The gradient of ``x`` (..., m, n) from those of its reduced SVD (PyTorch's
    ``svd_backward``, real case; any of ``gu``, ``gs``, ``gvh`` may be None)."""
    m, n = x.shape[-2], x.shape[-1]
    if gu is None and gvh is None:
        return xp.matmul(u * xp.expand_dims(gs, axis=-2), vh)
    _no_repeats(xp, s, who, "singular ")
    if m != n and math.prod(s.shape) and bool(xp.any(s <= 0.0)):
        raise OpError(
            f"{who}: the gradient of the singular vectors of the {tuple(x.shape)} matrix "
            f"(not square) does not exist at a zero singular value; it has one"
        )
    k = s.shape[-1]
    v = _mT(xp, vh)
    s_row = xp.expand_dims(s, axis=-2)  # (..., 1, k)
    s_col = xp.expand_dims(s, axis=-1)  # (..., k, 1)
    s2 = s * s
    e = xp.expand_dims(s2, axis=-2) - xp.expand_dims(s2, axis=-1) + _eye(xp, k, s)
    core = None
    if gu is not None:
        uhgu = xp.matmul(_mT(xp, u), gu)
        core = (uhgu - _mT(xp, uhgu)) * s_row
    gv = _mT(xp, gvh) if gvh is not None else None
    if gv is not None:
        vhgv = xp.matmul(_mT(xp, v), gv)
        term = s_col * (vhgv - _mT(xp, vhgv))
        core = term if core is None else core + term
    assert core is not None
    ga = core / e
    if gs is not None:
        ga = ga + _diag_embed(xp, gs)
    if m > n and gu is not None:
        ga = xp.matmul(u, ga)
        gusinv = gu / s_row
        ga = ga + gusinv - xp.matmul(u, xp.matmul(_mT(xp, u), gusinv))
        return xp.matmul(ga, vh)
    if m < n and gv is not None:
        ga = xp.matmul(ga, vh)
        gvsinv = gv / s_row
        ga = ga + _mT(xp, gvsinv) - xp.matmul(xp.matmul(_mT(xp, gvsinv), v), vh)
        return xp.matmul(u, ga)
    return xp.matmul(xp.matmul(u, ga), vh)


def _check_full(x: Any, full_matrices: bool, who: str) -> None:
    if not isinstance(full_matrices, bool):
        raise InputError(f"{who}: full_matrices must be True or False, got {full_matrices!r}")


def _svdvals(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    """The singular values, descending, of (a stack of) matrices, ``linalg.svdvals``
    (the ``S`` of ``linalg.svd``). The gradient is ``U diag(g) Vh``, defined at repeated
    singular values too.

    Examples
    --------
    >>> import minitorch
    >>> minitorch.svdvals(minitorch.tensor([[3.0, 0.0], [0.0, -4.0]])).tolist()
    [4.0, 3.0]
    """
    _matrices(xp, x, "svdvals")
    table = getattr(_MEMO, "table", None) or {}
    full = table.get(("svd", id(x), (True,)))
    if full is not None and full[0] is x:  # svd(full_matrices=True) computed it already
        u, s, vh = full[1]
        k = s.shape[-1]
        u, vh = u[..., :, :k], vh[..., :k, :]
    else:
        u, s, vh = _svd_of(xp, x, False)
    return s, (x, u, vh)


def _svdvals_vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
    x, u, vh = saved
    if u is None:
        u, _, vh = xp.linalg.svd(x, full_matrices=False)[:3]
    return (xp.matmul(u * xp.expand_dims(g, axis=-2), vh),)


svdvals = defop(
    "svdvals",
    _svdvals,
    _svdvals_vjp,
    derived=(1, 2),
    facts=Facts(
        ref=lambda torch, x: torch.linalg.svdvals(x),
        samples=(
            Sample(make=_spread_singular(3, 3)),
            Sample(make=_spread_singular(4, 2)),
            Sample(make=_spread_singular(2, 2, 4)),
            Sample(((3, 4),), name="a random matrix"),
        ),
        formula="U diag(g) Vh",
    ),
)


def _svd_u(xp: Any, x: Any, full_matrices: bool = True) -> tuple[Any, tuple[Any, ...]]:
    """The left singular vectors ``U`` of ``linalg.svd(x, full_matrices=...)``, each
    column with its largest entry positive. The gradient (Townsend 2016, as PyTorch's)
    needs distinct singular values, nonzero for a non-square ``x`` (an OpError
    otherwise); with ``full_matrices=True``, the columns past ``min(m, n)`` (not unique)
    get none, as in PyTorch.

    Examples
    --------
    >>> import minitorch
    >>> minitorch.linalg.svd(minitorch.tensor([[0.0, 2.0], [1.0, 0.0]])).U.tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    _matrices(xp, x, "svd_u")
    _check_full(x, full_matrices, "svd_u")
    u, s, vh = _svd_of(xp, x, full_matrices)
    return u, (x, u, s, vh)


def _svd_u_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], full_matrices: bool = True
) -> tuple[Any]:
    x, u, s, vh = saved
    if s is None:
        _, s, vh = xp.linalg.svd(x, full_matrices=False)[:3]
    k = s.shape[-1]  # with full_matrices, U's extra columns get no gradient (as PyTorch)
    u, g, vh = u[..., :, :k], g[..., :, :k], vh[..., :k, :]
    return (_svd_backward(xp, x, u, s, vh, g, None, None, "svd"),)


def _svd_vh(xp: Any, x: Any, full_matrices: bool = True) -> tuple[Any, tuple[Any, ...]]:
    """The right singular vectors ``Vh`` (rows) of ``linalg.svd(x, full_matrices=...)``,
    row ``i`` with the sign of column ``i`` of ``U``. The gradient needs distinct
    singular values, nonzero for a non-square ``x`` (an OpError otherwise); with
    ``full_matrices=True``, the rows past ``min(m, n)`` get none, as in PyTorch.

    Examples
    --------
    >>> import minitorch
    >>> minitorch.linalg.svd(minitorch.tensor([[0.0, 2.0], [1.0, 0.0]])).Vh.tolist()
    [[0.0, 1.0], [1.0, 0.0]]
    """
    _matrices(xp, x, "svd_vh")
    _check_full(x, full_matrices, "svd_vh")
    u, s, vh = _svd_of(xp, x, full_matrices)
    return vh, (x, u, s, vh)


def _svd_vh_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], full_matrices: bool = True
) -> tuple[Any]:
    x, u, s, vh = saved
    if s is None:
        u, s, _ = xp.linalg.svd(x, full_matrices=False)[:3]
    k = s.shape[-1]  # with full_matrices, Vh's extra rows get no gradient (as PyTorch)
    u, g, vh = u[..., :, :k], g[..., :k, :], vh[..., :k, :]
    return (_svd_backward(xp, x, u, s, vh, None, None, g, "svd"),)


_SVD_VECTOR_SAMPLES = (
    Sample(make=_spread_singular(3, 3)),
    Sample(make=_spread_singular(4, 2), params={"full_matrices": False}),
    Sample(make=_spread_singular(2, 4), params={"full_matrices": False}),
    Sample(make=_spread_singular(2, 3, 3), params={"full_matrices": False}),
)

svd_u = defop(
    "svd_u",
    _svd_u,
    _svd_u_vjp,
    public="minitorch.linalg.svd",
    derived=(2, 3),
    facts=Facts(
        ref=lambda torch, x, full_matrices=True: _t_svd(torch, x, full_matrices)[0],
        samples=(
            *_SVD_VECTOR_SAMPLES,
            Sample(make=_spread_singular(2, 4), name="full_matrices: U is square"),
        ),
        formula="U (F o skew(U^T g)) S Vh + (I - U U^T) g S^-1 Vh",
    ),
)

svd_vh = defop(
    "svd_vh",
    _svd_vh,
    _svd_vh_vjp,
    public="minitorch.linalg.svd",
    derived=(1, 2),
    facts=Facts(
        ref=lambda torch, x, full_matrices=True: _t_svd(torch, x, full_matrices)[2],
        samples=(
            *_SVD_VECTOR_SAMPLES,
            Sample(make=_spread_singular(4, 2), name="full_matrices: Vh is square"),
        ),
        formula="U S (F o skew(V^T g^T)) Vh + U S^-1 g (I - V Vh)",
    ),
)


# ================================================================ qr
def _qr_of(xp: Any, x: Any, mode: str) -> tuple[Any, Any]:
    """Q and R of x with minitorch's signs: R's diagonal is positive (or zero)."""

    def compute() -> tuple[Any, Any]:
        q, r = xp.linalg.qr(x, mode=mode)[:2]
        k = min(x.shape[-2], x.shape[-1])
        if k and math.prod(r.shape):
            d = xp.sum(r[..., :k, :k] * _eye(xp, k, r), axis=-1)  # (..., k)
            one = xp.ones_like(d)
            cplx = _is_complex(xp, d)
            s = _phase(xp, d) if cplx else xp.where(d < 0.0, -one, one)
            pad_q = xp.ones((*s.shape[:-1], q.shape[-1] - k), dtype=s.dtype, device=s.device)
            pad_r = xp.ones((*s.shape[:-1], r.shape[-2] - k), dtype=s.dtype, device=s.device)
            sr = xp.concat([xp.conj(s) if cplx else s, pad_r], axis=-1)
            q = q * xp.expand_dims(xp.concat([s, pad_q], axis=-1), axis=-2) + 0.0
            r = r * xp.expand_dims(sr, axis=-1) + 0.0
        return q, r

    out: tuple[Any, Any] = _cached("qr", x, (mode,), compute)
    return out


def _qr_check(x: Any, mode: str, who: str) -> None:
    if mode not in ("reduced", "complete"):
        raise InputError(f"{who}: mode must be 'reduced' or 'complete', got {mode!r}")


def _qr_square_backward(xp: Any, gq: Any, gr: Any, q: Any, r: Any, who: str) -> Any:
    """The gradient of ``a = q r`` with ``r`` square (m >= n): ``(gq + q copyltu(M))
    r^-T``, ``M = r gr^T - gq^T q`` (Liao et al. 2019; PyTorch's ``linalg_qr_backward``)."""
    n = r.shape[-1]
    nmat = xp.matmul(gr, _mT(xp, r)) - xp.matmul(_mT(xp, q), gq)
    upper = xp.where(_triangle(xp, nmat, 0, False), nmat, 0.0)
    diag = upper * _eye(xp, n, upper)
    sym = upper + _mT(xp, upper) - diag
    ga = xp.matmul(q, sym) + gq
    try:
        return _mT(xp, _bsolve(xp, r, _mT(xp, ga)))
    except OpError:
        raise
    except Exception as exc:
        raise OpError(
            f"{who}: the gradient needs R invertible; the {tuple(r.shape)} R is singular (a "
            f"rank-deficient input) ({exc})"
        ) from exc


def _qr_backward(xp: Any, x: Any, q: Any, r: Any, gq: Any, gr: Any, mode: str) -> Any:
    m, n = x.shape[-2], x.shape[-1]
    if mode == "complete" and m > n:
        raise OpError(
            f"qr: the gradient with mode='complete' of the {tuple(x.shape)} matrix (more "
            f"rows than columns) does not exist (Q's extra columns are not unique); use "
            f"mode='reduced', as PyTorch requires"
        )
    if gq is None:
        gq = xp.zeros_like(q)
    if gr is None:
        gr = xp.zeros_like(r)
    if m >= n:
        return _qr_square_backward(xp, gq, gr, q, r, "qr")
    # m < n: x = [X | Y] with X = Q U square, Y = Q V
    y = x[..., :, m:]
    gu, gv = gr[..., :, :m], gr[..., :, m:]
    gq = gq + xp.matmul(y, _mT(xp, gv))
    gx = _qr_square_backward(xp, gq, gu, q, r[..., :, :m], "qr")
    return xp.concat([gx, xp.matmul(q, gv)], axis=-1)


def _qr_q(xp: Any, x: Any, mode: str = "reduced") -> tuple[Any, tuple[Any, ...]]:
    """The orthonormal factor ``Q`` of ``linalg.qr(x, mode=...)`` (``R``'s diagonal made
    positive). The gradient needs a full-rank ``x``, and ``mode='reduced'`` for a matrix
    with more rows than columns (as PyTorch's).

    Examples
    --------
    >>> import minitorch
    >>> minitorch.linalg.qr(minitorch.tensor([[0.0, 1.0], [-2.0, 0.0]])).Q.tolist()
    [[0.0, 1.0], [-1.0, 0.0]]
    """
    _matrices(xp, x, "qr_q")
    _qr_check(x, mode, "qr_q")
    q, r = _qr_of(xp, x, mode)
    return q, (x, q, r)


def _qr_q_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], mode: str = "reduced"
) -> tuple[Any]:
    x, q, r = saved
    if r is None:
        r = xp.linalg.qr(x, mode=mode)[1]
    return (_qr_backward(xp, x, q, r, g, None, mode),)


def _qr_r(xp: Any, x: Any, mode: str = "reduced") -> tuple[Any, tuple[Any, ...]]:
    """The upper triangular factor ``R`` of ``linalg.qr(x, mode=...)``, with a positive
    diagonal. The gradient needs a full-rank ``x``, and ``mode='reduced'`` for a matrix
    with more rows than columns (as PyTorch's).

    Examples
    --------
    >>> import minitorch
    >>> minitorch.linalg.qr(minitorch.tensor([[0.0, 1.0], [-2.0, 0.0]])).R.tolist()
    [[2.0, 0.0], [0.0, 1.0]]
    """
    _matrices(xp, x, "qr_r")
    _qr_check(x, mode, "qr_r")
    q, r = _qr_of(xp, x, mode)
    return r, (x, q, r)


def _qr_r_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], mode: str = "reduced"
) -> tuple[Any]:
    x, q, r = saved
    if q is None:
        q = xp.linalg.qr(x, mode=mode)[0]
    return (_qr_backward(xp, x, q, r, None, g, mode),)


_QR_SAMPLES = (
    Sample(make=_well_conditioned(3, 3)),
    Sample(make=_well_conditioned(4, 2)),
    Sample(make=_well_conditioned(2, 4)),
    Sample(make=_well_conditioned(2, 4, 3)),
    Sample(make=_well_conditioned(3, 3), params={"mode": "complete"}),
)

qr_q = defop(
    "qr_q",
    _qr_q,
    _qr_q_vjp,
    public="minitorch.linalg.qr",
    derived=(2,),
    facts=Facts(
        ref=lambda torch, x, mode="reduced": _t_qr(torch, x, mode)[0],
        samples=_QR_SAMPLES,
        formula="(g + Q copyltu(-g^T Q)) R^-T",
    ),
)

qr_r = defop(
    "qr_r",
    _qr_r,
    _qr_r_vjp,
    public="minitorch.linalg.qr",
    derived=(1,),
    facts=Facts(
        ref=lambda torch, x, mode="reduced": _t_qr(torch, x, mode)[1],
        samples=_QR_SAMPLES,
        formula="Q copyltu(R g^T) R^-T",
    ),
)


# ================================================================ pinv, matrix_rank
def _pinv(xp: Any, x: Any, rtol: float | None = None) -> tuple[Any, tuple[Any, ...]]:
    """The Moore-Penrose pseudo-inverse of (a stack of) matrices, ``linalg.pinv``:
    singular values below ``rtol`` times the largest (default ``max(m, n) * eps``)
    count as zero. The gradient (Golub and Pereyra 1973) holds where the rank does
    not change.

    Examples
    --------
    >>> import minitorch
    >>> minitorch.pinv(minitorch.tensor([[2.0, 0.0], [0.0, 0.0]])).tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    _matrices(xp, x, "pinv")
    out = xp.linalg.pinv(x, rtol=rtol)
    return out, (x, out)


def _pinv_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], rtol: float | None = None
) -> tuple[Any]:
    a, p = saved
    m, n = a.shape[-2], a.shape[-1]
    pt, gt = _mT(xp, p), _mT(xp, g)
    mm = xp.matmul
    left = _eye(xp, m, a) - mm(a, p)  # I - A A+
    right = _eye(xp, n, a) - mm(p, a)  # I - A+ A
    return (-mm(mm(pt, g), pt) + mm(mm(left, gt), mm(p, pt)) + mm(mm(mm(pt, p), gt), right),)


pinv = defop(
    "pinv",
    _pinv,
    _pinv_vjp,
    facts=Facts(
        ref=lambda torch, x, rtol=None: torch.linalg.pinv(x, rtol=rtol),
        samples=(
            Sample(make=_spread_singular(3, 3)),
            Sample(make=_spread_singular(4, 2)),
            Sample(make=_spread_singular(2, 2, 3)),
        ),
        formula="-P^T g P^T + (I - A P) g^T P P^T + P^T P g^T (I - P A)",
    ),
)


def _matrix_rank(xp: Any, x: Any, rtol: float | None = None) -> tuple[Any, tuple[Any, ...]]:
    """The rank of (a stack of) matrices, ``linalg.matrix_rank``: the number of singular
    values above ``rtol`` times the largest (default ``max(m, n) * eps``); no gradient.

    Examples
    --------
    >>> import minitorch
    >>> int(minitorch.matrix_rank(minitorch.tensor([[1.0, 2.0], [2.0, 4.0]])))
    1
    """
    _matrices(xp, x, "matrix_rank")
    if x.shape[-1] == 0 or x.shape[-2] == 0:
        index = xp.asarray(0).dtype
        return xp.zeros(tuple(x.shape[:-2]), dtype=index, device=x.device), ()
    return xp.asarray(xp.linalg.matrix_rank(x, rtol=rtol)), ()


matrix_rank = defop(
    "matrix_rank",
    _matrix_rank,
    None,
    facts=Facts(
        ref=lambda torch, x, rtol=None: torch.linalg.matrix_rank(x, rtol=rtol),
        samples=(
            Sample(make=_low_rank(4, 3, 2)),
            Sample(make=_well_conditioned(2, 3, 3)),
            Sample(make=_low_rank(3, 5, 1), params={"rtol": 1e-3}),
        ),
    ),
)


# ================================================================ diagonal, trace, outer, cross
def _diagonal(xp: Any, x: Any, offset: int = 0) -> tuple[Any, tuple[Any, ...]]:
    """The diagonal ``offset`` (``> 0`` above the main one) of (a stack of) matrices,
    ``linalg.diagonal``. The gradient puts ``g`` back on that diagonal.

    Examples
    --------
    >>> import minitorch
    >>> minitorch.diagonal(minitorch.tensor([[1.0, 2.0], [3.0, 4.0]]), 1).tolist()
    [2.0]
    """
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise InputError(f"diagonal: offset must be an int, got {offset!r}")
    if x.ndim < 2:
        raise InputError(f"diagonal needs at least 2 dimensions, got shape {tuple(x.shape)}")
    return xp.linalg.diagonal(x, offset=offset), (tuple(x.shape),)


def _diagonal_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], offset: int = 0
) -> tuple[Any]:
    (shape,) = saved
    n, m = shape[-2], shape[-1]
    r0, c0 = max(-offset, 0), max(offset, 0)
    length = g.shape[-1]
    rows = _eye(xp, length, g, n, r0)  # rows[i, r0 + i] = 1
    cols = _eye(xp, length, g, m, c0)  # cols[i, c0 + i] = 1
    return (xp.matmul(_mT(xp, rows), xp.expand_dims(g, axis=-1) * cols),)


diagonal = defop(
    "diagonal",
    _diagonal,
    _diagonal_vjp,
    facts=Facts(
        ref=lambda torch, x, offset=0: torch.diagonal(x, offset=offset, dim1=-2, dim2=-1),
        samples=(
            Sample(((3, 4),)),
            Sample(((2, 3, 3),), {"offset": 1}),
            Sample(((2, 4, 3),), {"offset": -2}),
            Sample(((3, 3),), {"offset": 5}, name="past the corner: empty"),
        ),
        formula="g on the diagonal",
        second_order="zero (linear)",
    ),
)


def _trace(x: Any, offset: int = 0, dtype: Any = None) -> Any:
    """The sum of the diagonal ``offset`` of (a stack of) matrices, ``linalg.trace``
    (in ``dtype`` if given).

    Examples
    --------
    >>> import minitorch
    >>> minitorch.trace(minitorch.tensor([[1.0, 2.0], [3.0, 4.0]])).item()
    5.0
    """
    d = diagonal(x, offset)
    if dtype is not None and d.dtype != dtype:
        d = d.astype(dtype)
    return _sum(d, axis=-1)


trace = defop(
    "trace",
    compose=_trace,
    facts=Facts(
        ref=lambda torch, x, offset=0, dtype=None: torch.diagonal(x, offset, -2, -1).sum(-1),
        samples=(Sample(((3, 4),)), Sample(((2, 3, 3),), {"offset": -1})),
        formula="composed: sum of diagonal",
        second_order="zero (linear)",
    ),
)


def _outer(x1: Any, x2: Any) -> Any:
    """The outer product ``x1[i] * x2[j]`` of two vectors, ``linalg.outer``.

    Examples
    --------
    >>> import minitorch
    >>> minitorch.outer(minitorch.tensor([1.0, 2.0]), minitorch.tensor([3.0, 4.0])).tolist()
    [[3.0, 4.0], [6.0, 8.0]]
    """
    if x1.ndim != 1 or x2.ndim != 1:
        raise OpError(f"outer needs two 1-d tensors, got {describe(x1)} and {describe(x2)}")
    return _reshape(x1, (-1, 1)) * _reshape(x2, (1, -1))


outer = defop(
    "outer",
    compose=_outer,
    nin=2,
    facts=Facts(
        ref=lambda torch, x1, x2: torch.outer(x1, x2),
        samples=(Sample(((3,), (4,))), Sample(((1,), (2,)))),
        formula="composed: column times row",
    ),
)


def _cross(x1: Any, x2: Any, axis: int = -1) -> Any:
    """The cross product of 3-vectors along ``axis`` (negative, counted from the end;
    the other axes broadcast), ``linalg.cross``.

    Examples
    --------
    >>> import minitorch
    >>> a, b = minitorch.tensor([1.0, 0.0, 0.0]), minitorch.tensor([0.0, 1.0, 0.0])
    >>> minitorch.cross(a, b).tolist()
    [0.0, 0.0, 1.0]
    """
    nd = min(x1.ndim, x2.ndim)
    ok = isinstance(axis, int) and not isinstance(axis, bool)
    if ok and 0 <= axis < nd and x1.ndim == x2.ndim:
        axis -= nd  # a non-negative axis is unambiguous for inputs of one rank
    if not (ok and -nd <= axis < 0):
        raise OpError(
            f"cross: axis {axis!r} must be in [-{nd}, -1] for {describe(x1)} and {describe(x2)}"
        )
    if x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise OpError(
            f"cross: axis {axis} must have size 3 in both inputs, got {describe(x1)} and "
            f"{describe(x2)}"
        )
    rest = (slice(None),) * (-axis - 1)
    a = [x1[(..., i, *rest)] for i in range(3)]
    b = [x2[(..., i, *rest)] for i in range(3)]
    parts = [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
    return _stack(parts, axis=axis)


cross = defop(
    "cross",
    compose=_cross,
    nin=2,
    facts=Facts(
        ref=lambda torch, x1, x2, axis=-1: torch.linalg.cross(
            *torch.broadcast_tensors(x1, x2), dim=axis
        ),
        samples=(
            Sample(((3,), (3,))),
            Sample(((2, 3), (3,))),
            Sample(((3, 4), (2, 3, 4)), {"axis": -2}),
        ),
        formula="composed: a1 b2 - a2 b1, ...",
    ),
)


# ================================================================ norms
def _vector_norm(
    xp: Any,
    x: Any,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool = False,
    ord: float = 2,
) -> tuple[Any, tuple[Any, ...]]:
    """The ``ord``-norm over ``axis`` (all axes if None), ``linalg.vector_norm``:
    ``(sum |x|^ord)^(1/ord)``; ``inf``/``-inf`` the largest/smallest ``|x|``, ``0`` the
    number of nonzeros. The gradient at 0 is 0 (PyTorch's subgradient); ties of the
    ``inf`` norms share it evenly, as PyTorch's. The second derivative with respect to
    a zero entry is nan where it does not exist (``ord < 2`` but 1 and -inf; for ``ord``
    2 at a zero norm), as PyTorch's.

    Examples
    --------
    >>> import minitorch
    >>> minitorch.vector_norm(minitorch.tensor([3.0, -4.0])).item()
    5.0
    """
    _floating(xp, x, "vector_norm")
    if isinstance(ord, bool) or not isinstance(ord, int | float):
        raise InputError(f"vector_norm: ord must be a number (or +-inf), got {ord!r}")
    axes = normalize_axes(axis, x.ndim, "vector_norm")
    if (math.isinf(ord) or ord < 0) and x.ndim and math.prod(x.shape[a] for a in axes) == 0:
        raise InputError(
            f"vector_norm: the {ord} norm of no elements does not exist (a maximum or "
            f"minimum over nothing, or 0 to a negative power), over axes {axes} of shape "
            f"{tuple(x.shape)}"
        )
    out = xp.asarray(xp.linalg.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord))
    return out, (x, out, axes)


def _vector_norm_vjp(
    xp: Any,
    g: Any,
    saved: tuple[Any, ...],
    needs: tuple[bool, ...],
    axis: Any = None,
    keepdims: bool = False,
    ord: float = 2,
) -> tuple[Any]:
    x, out, axes = saved
    shape = tuple(x.shape)
    gk = expand_reduced(xp, g, shape, axes, keepdims)
    nk = expand_reduced(xp, out, shape, axes, keepdims)
    if ord == 0:
        return (xp.zeros_like(x) * gk,)
    sign = xp.sign(x)
    if ord == 1:
        return (gk * sign,)
    if math.isinf(ord):
        hit = xp.astype(xp.abs(x) == nk, x.dtype)
        count = xp.sum(hit, axis=axes, keepdims=True) if axes else hit
        return (gk * sign * hit / count,)
    if ord == 2:
        # g x / |x|, 0 where the norm is 0 (x is 0 there). The denominator there is
        # 1 + sqrt(|x|), not 1: its value is the same, and the second derivative at a
        # zero norm is nan (sqrt's derivative at 0 is infinite), as PyTorch's, where a
        # constant 1 made it 1 (a Hessian of the identity's)
        one = 1.0 + xp.sqrt(out)
        safe = expand_reduced(xp, xp.where(out == 0.0, one, out), shape, axes, keepdims)
        return (gk * x / safe,)
    safe = xp.where(nk == 0.0, xp.ones_like(nk), nk)
    if ord > 1:  # |x|^(ord - 1) is 0 at x = 0, and x is 0 wherever the norm is
        return (gk * sign * xp.abs(x) ** (ord - 1) / safe ** (ord - 1),)
    # ord < 1: |x|^(ord - 1) is infinite at x = 0, and a zero norm (ord < 0: any zero
    # entry) makes the others' 0 too; both are 0, as PyTorch's (the subgradient). That 0
    # is written 0 * sqrt(|x|): the same value, and its derivative at x = 0 is nan
    # (0 / 0), as PyTorch's second derivative there (the derivative of |x|^(ord - 1) at
    # 0, which does not exist), where a constant 0 made it 0; at a nonzero entry of a
    # zero norm it stays 0, as PyTorch's
    zero = xp.logical_or(x == 0.0, nk == 0.0)
    ax = xp.where(zero, xp.ones_like(x), xp.abs(x))
    at_zero = 0.0 * xp.sqrt(xp.abs(x))
    return (xp.where(zero, at_zero, gk * sign * ax ** (ord - 1) / safe ** (ord - 1)),)


vector_norm = defop(
    "vector_norm",
    _vector_norm,
    _vector_norm_vjp,
    facts=Facts(
        ref=lambda torch, x, axis=None, keepdims=False, ord=2: torch.linalg.vector_norm(
            x, ord=ord, dim=axis, keepdim=keepdims
        ),
        samples=(
            Sample(((3, 4),)),
            Sample(((2, 3, 4),), {"axis": -1, "keepdims": True}),
            Sample(((2, 3, 4),), {"axis": (0, 2), "ord": 1}),
            Sample(((2, 3, 4),), {"axis": 1, "ord": math.inf}),
            Sample(((3, 4),), {"axis": 0, "ord": -math.inf}),
            Sample(((2, 5),), {"axis": 1, "ord": 3}),
            Sample(((2, 5),), {"axis": 1, "ord": 0.5}),
            Sample(((4,),), {"ord": 0}),
        ),
        kinks=(0.0,),
        formula="g x / |x| (ord 2); g sign(x) |x|^(p-1) / |x|_p^(p-1)",
    ),
)


_MATRIX_ORDS = ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf)


def _matrix_norm(x: Any, keepdims: bool = False, ord: Any = "fro") -> Any:
    """The matrix norm of (a stack of) matrices, ``linalg.matrix_norm``: ``'fro'``
    (Frobenius), ``'nuc'`` (sum of singular values), ``2``/``-2`` (largest/smallest
    singular value), ``1``/``-1`` (largest/smallest column sum of ``|x|``),
    ``inf``/``-inf`` (largest/smallest row sum of ``|x|``).

    Examples
    --------
    >>> import minitorch
    >>> minitorch.matrix_norm(minitorch.tensor([[3.0, 0.0], [0.0, -4.0]]), ord=2).item()
    4.0
    """
    if x.ndim < 2 or not x._backend.xp.isdtype(x.dtype, ("real floating", "complex floating")):
        raise OpError(
            f"matrix_norm needs (a stack of) floating-point matrices (real, or complex "
            f"without gradients), got {describe(x)}"
        )
    if ord not in _MATRIX_ORDS or isinstance(ord, bool):
        raise OpError(f"matrix_norm: ord must be one of {_MATRIX_ORDS}, got {ord!r}")
    if ord == "fro":
        return vector_norm(x, (-2, -1), keepdims)
    if 0 in x.shape[-2:]:  # matrices with no entries: 0, as PyTorch, where it exists
        # the smallest column sum (-1) of no columns, row sum (-inf) of no rows, or
        # singular value (-2) of none
        counts = {-1: x.shape[-1], -math.inf: x.shape[-2], -2: 0}
        if counts.get(ord, 1) == 0:
            raise OpError(
                f"matrix_norm: the {ord} norm of an empty matrix does not exist (a minimum "
                f"over nothing), got {describe(x)}"
            )
        out = _sum(_abs(x), axis=(-2, -1))  # zeros, with a (zero) gradient
    elif ord in ("nuc", 2, -2):
        s = svdvals(x)
        out = _sum(s, axis=-1) if ord == "nuc" else (_max if ord == 2 else _min)(s, axis=-1)
    else:
        along = -2 if ord in (1, -1) else -1
        sums = _sum(_abs(x), axis=along)
        out = (_max if ord > 0 else _min)(sums, axis=-1)
    return _reshape(out, (*out.shape, 1, 1)) if keepdims else out


matrix_norm = defop(
    "matrix_norm",
    compose=_matrix_norm,
    facts=Facts(
        ref=lambda torch, x, keepdims=False, ord="fro": torch.linalg.matrix_norm(
            x, ord=ord, keepdim=keepdims
        ),
        samples=(
            Sample(((3, 4),)),
            Sample(make=_spread_singular(3, 4), params={"ord": "nuc"}),
            Sample(make=_spread_singular(2, 3, 4), params={"ord": 2, "keepdims": True}),
            Sample(make=_spread_singular(2, 4, 3), params={"ord": -2}),
            Sample(((2, 3, 4),), {"ord": 1}),
            Sample(((2, 3, 4),), {"ord": -1}),
            Sample(((2, 3, 4),), {"ord": math.inf}),
            Sample(((2, 3, 4),), {"ord": -math.inf}),
        ),
        kinks=(0.0,),
        formula="composed: vector_norm, svdvals, sums of |x|",
    ),
)


def _matrix_power(x: Any, n: int) -> Any:
    """``x`` multiplied by itself ``n`` times, for (a stack of) square matrices,
    ``linalg.matrix_power``: ``n = 0`` the identity, ``n < 0`` powers of ``inv(x)``.

    Examples
    --------
    >>> import minitorch
    >>> minitorch.matrix_power(minitorch.tensor([[1.0, 1.0], [0.0, 1.0]]), 3).tolist()
    [[1.0, 3.0], [0.0, 1.0]]
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer):
        raise OpError(f"matrix_power: n must be an int, got {n!r}")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise OpError(f"matrix_power needs (a stack of) square matrices, got {describe(x)}")
    n = int(n)
    if n < 0:
        try:
            x, n = inv(x), -n
        except OpError as exc:  # a singular matrix: say which call needed the inverse
            raise OpError(f"matrix_power with n={n} needs the inverse: {exc}") from exc
    if n == 0:  # the identity, connected to x with a zero gradient (x * 0 would put
        # nan where x is inf or nan; PyTorch gives the identity there too)
        xp, be, shape = x._backend.xp, x._backend, tuple(x.shape)
        eye = xp.eye(shape[-1], dtype=x.dtype, device=x.data.device)
        keep = xp.ones(shape, dtype=xp.bool, device=x.data.device)
        return _where(
            Tensor._make(keep, be, None),
            Tensor._make(xp.broadcast_to(eye, shape), be, None),
            x,
        )
    result: Tensor | None = None
    base = x
    while True:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if not n:
            break
        base = base @ base
    assert result is not None
    return _clone(result) if result is x else result  # a new tensor, never x itself


matrix_power = defop(
    "matrix_power",
    compose=_matrix_power,
    facts=Facts(
        ref=lambda torch, x, n: torch.linalg.matrix_power(x, n),
        samples=(
            Sample(((3, 3),), {"n": 3}),
            Sample(((2, 3, 3),), {"n": 2}),
            Sample(((3, 3),), {"n": 1}),
            Sample(((3, 3),), {"n": 0}),
            Sample(make=_well_conditioned(3, 3), params={"n": -2}),
        ),
        formula="composed: products (and inv)",
    ),
)
