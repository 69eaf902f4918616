"""``minitorch.linalg``: the Array API ``linalg`` extension, differentiable (as
``torch.linalg``).

Every function takes Tensors (backend arrays and Python data become constants) and
returns Tensors that carry gradients, to any order: each is a registered op (module
``minitorch.ops.decomp``) or written with them. ``x.__array_namespace__().linalg`` is
the same extension bound to ``x``'s backend (:class:`Linalg`), which is what a VJP
calls under ``create_graph=True``.

The decompositions with several results return named tuples, as the standard's:
``eigh`` -> ``(eigenvalues, eigenvectors)``, ``svd`` -> ``(U, S, Vh)``, ``qr`` ->
``(Q, R)``, ``slogdet`` -> ``(sign, logabsdet)``. Each result is its own op (a graph
node has one output), and the decomposition is computed once for all of them.
Eigenvectors and singular vectors have their largest entry positive and ``R`` a positive
diagonal, on every backend. Their gradients follow PyTorch's (see
``minitorch.ops.decomp``); where one does not exist (eigenvectors at repeated
eigenvalues) it is an OpError, never a silent nan.

Examples
--------
>>> import minitorch
>>> a = minitorch.tensor([[2.0, 1.0], [1.0, 2.0]], requires_grad=True)
>>> w, v = minitorch.linalg.eigh(a)
>>> w.tolist()
[1.0, 3.0]
>>> (w * w).sum().backward()  # the gradient of sum(w^2) is 2 a
>>> [[f"{g:.4f}" for g in row] for row in a.grad.tolist()]
[['4.0000', '2.0000'], ['2.0000', '4.0000']]
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .backend import Backend, as_array, get_backend
from .ops import REGISTRY, call
from .ops.decomp import check_decomposition, sharing, sign_of_det
from .tensor import Tensor, namespace_of

__all__ = [
    "EighResult",
    "Linalg",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "cholesky",
    "cross",
    "det",
    "diagonal",
    "eigh",
    "eigvalsh",
    "inv",
    "matmul",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "matrix_transpose",
    "namespace",
    "outer",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
    "tensordot",
    "trace",
    "vecdot",
    "vector_norm",
]


class EighResult(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


class QRResult(NamedTuple):
    Q: Tensor
    R: Tensor


class SVDResult(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


class Linalg:
    """The ``linalg`` extension of one backend's differentiable namespace
    (``xp.linalg``), with the standard's signatures."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.__name__ = f"minitorch.array_api.{backend.name}.linalg"

    def __repr__(self) -> str:
        return f"<minitorch differentiable linalg of {self.backend.describe()}>"

    def _op(self, name: str, *args: Any, **params: Any) -> Any:
        return call(REGISTRY[name], args, params, self.backend)

    def _tensor(self, x: Any) -> Tensor:
        if isinstance(x, Tensor):
            return x
        return Tensor._make(as_array(x, self.backend), self.backend, None)

    # ------------------------------------------------------------ one result
    def cholesky(self, x: Any, /, *, upper: bool = False) -> Tensor:
        """The Cholesky factor (lower, or upper with ``upper=True``); see
        ``minitorch.cholesky``."""
        return self._op("cholesky", x, upper=upper)  # type: ignore[no-any-return]

    def cross(self, x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
        """The cross product of 3-vectors along ``axis``."""
        return self._op("cross", x1, x2, axis=axis)  # type: ignore[no-any-return]

    def det(self, x: Any, /) -> Tensor:
        """The determinant."""
        return self._op("det", x)  # type: ignore[no-any-return]

    def diagonal(self, x: Any, /, *, offset: int = 0) -> Tensor:
        """The diagonal ``offset`` of the last two axes."""
        return self._op("diagonal", x, offset=offset)  # type: ignore[no-any-return]

    def eigvalsh(self, x: Any, /) -> Tensor:
        """The eigenvalues (ascending) of symmetric matrices."""
        return self._op("eigvalsh", x)  # type: ignore[no-any-return]

    def inv(self, x: Any, /) -> Tensor:
        """The inverse."""
        return self._op("inv", x)  # type: ignore[no-any-return]

    def matmul(self, x1: Any, x2: Any, /) -> Tensor:
        """The matrix product (the main namespace's ``matmul``)."""
        return self._op("matmul", x1, x2)  # type: ignore[no-any-return]

    def matrix_norm(self, x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:
        """A matrix norm: ``'fro'``, ``'nuc'``, ``1``, ``-1``, ``2``, ``-2``, ``inf``,
        ``-inf``."""
        return self._op("matrix_norm", x, keepdims=keepdims, ord=ord)  # type: ignore[no-any-return]

    def matrix_power(self, x: Any, n: int, /) -> Tensor:
        """``x`` to the integer power ``n``."""
        return self._op("matrix_power", x, n=n)  # type: ignore[no-any-return]

    def matrix_rank(self, x: Any, /, *, rtol: Any = None) -> Tensor:
        """The rank (no gradient)."""
        return self._op("matrix_rank", x, rtol=rtol)  # type: ignore[no-any-return]

    def matrix_transpose(self, x: Any, /) -> Tensor:
        """The last two axes swapped."""
        return self._op("matrix_transpose", x)  # type: ignore[no-any-return]

    def outer(self, x1: Any, x2: Any, /) -> Tensor:
        """The outer product of two vectors."""
        return self._op("outer", x1, x2)  # type: ignore[no-any-return]

    def pinv(self, x: Any, /, *, rtol: Any = None) -> Tensor:
        """The Moore-Penrose pseudo-inverse."""
        return self._op("pinv", x, rtol=rtol)  # type: ignore[no-any-return]

    def solve(self, x1: Any, x2: Any, /) -> Tensor:
        """The solution of ``x1 @ x = x2``."""
        return self._op("solve", x1, x2)  # type: ignore[no-any-return]

    def svdvals(self, x: Any, /) -> Tensor:
        """The singular values (descending)."""
        return self._op("svdvals", x)  # type: ignore[no-any-return]

    def tensordot(self, x1: Any, x2: Any, /, *, axes: Any = 2) -> Tensor:
        """The main namespace's ``tensordot``."""
        return namespace_of(self.backend).tensordot(x1, x2, axes=axes)  # type: ignore[no-any-return]

    def trace(self, x: Any, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
        """The sum of the diagonal ``offset``."""
        return self._op("trace", x, offset=offset, dtype=dtype)  # type: ignore[no-any-return]

    def vecdot(self, x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
        """The main namespace's ``vecdot``."""
        return namespace_of(self.backend).vecdot(x1, x2, axis=axis)  # type: ignore[no-any-return]

    def vector_norm(
        self,
        x: Any,
        /,
        *,
        axis: int | tuple[int, ...] | None = None,
        keepdims: bool = False,
        ord: float = 2,
    ) -> Tensor:
        """The ``ord``-norm over ``axis``."""
        return self._op("vector_norm", x, axis=axis, keepdims=keepdims, ord=ord)  # type: ignore[no-any-return]

    # ------------------------------------------------------------ several results
    def eigh(self, x: Any, /) -> EighResult:
        """Eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices, one
        decomposition for both."""
        x = self._tensor(x)
        check_decomposition(x, "eigh", square=True)
        with sharing():
            return EighResult(self._op("eigvalsh", x), self._op("eigvecsh", x))

    def qr(self, x: Any, /, *, mode: str = "reduced") -> QRResult:
        """The QR decomposition (``mode`` ``'reduced'`` or ``'complete'``), ``R`` with a
        positive diagonal."""
        x = self._tensor(x)
        check_decomposition(x, "qr", mode=mode)
        with sharing():
            return QRResult(self._op("qr_q", x, mode=mode), self._op("qr_r", x, mode=mode))

    def slogdet(self, x: Any, /) -> SlogdetResult:
        """The sign (no gradient) and the log of the absolute value of the determinant."""
        x = self._tensor(x)
        check_decomposition(x, "slogdet", square=True)
        with sharing():
            logabs = self._op("logabsdet", x)
            sign = sign_of_det(self.backend.xp, x.data)
        return SlogdetResult(Tensor._make(sign, x._backend, None), logabs)

    def svd(self, x: Any, /, *, full_matrices: bool = True) -> SVDResult:
        """``U``, ``S``, ``Vh`` with ``x = U diag(S) Vh``, one decomposition for all
        three."""
        x = self._tensor(x)
        check_decomposition(x, "svd", full_matrices=full_matrices)
        with sharing():
            u = self._op("svd_u", x, full_matrices=full_matrices)
            vh = self._op("svd_vh", x, full_matrices=full_matrices)
            s = self._op("svdvals", x)
        return SVDResult(u, s, vh)


_LINALGS: dict[Backend, Linalg] = {}


def namespace(backend: Backend | None = None) -> Linalg:
    """The ``linalg`` extension of ``backend``'s differentiable namespace (default: the
    current backend); ``minitorch.array_api.namespace(backend).linalg`` is the same."""
    be = backend if backend is not None else get_backend()
    ns = _LINALGS.get(be)
    if ns is None:
        ns = _LINALGS[be] = Linalg(be)
    return ns


def _of(*args: Any) -> Linalg:
    for a in args:
        if isinstance(a, Tensor):
            return namespace(a._backend)
    return namespace()


def cholesky(x: Any, /, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of symmetric positive definite matrices (lower ``L`` with
    ``x = L L^T``; upper ``U = L^T`` with ``upper=True``)."""
    return _of(x).cholesky(x, upper=upper)


def cross(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``axis``."""
    return _of(x1, x2).cross(x1, x2, axis=axis)


def det(x: Any, /) -> Tensor:
    """The determinant of (a stack of) square matrices."""
    return _of(x).det(x)


def diagonal(x: Any, /, *, offset: int = 0) -> Tensor:
    """The diagonal ``offset`` of (a stack of) matrices."""
    return _of(x).diagonal(x, offset=offset)


def eigh(x: Any, /) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of (a stack of) symmetric matrices.

    Examples
    --------
    >>> import minitorch
    >>> w, v = minitorch.linalg.eigh(minitorch.tensor([[2.0, 0.0], [0.0, 1.0]]))
    >>> w.tolist(), v.tolist()
    ([1.0, 2.0], [[0.0, 1.0], [1.0, 0.0]])
    """
    return _of(x).eigh(x)


def eigvalsh(x: Any, /) -> Tensor:
    """The eigenvalues (ascending) of (a stack of) symmetric matrices."""
    return _of(x).eigvalsh(x)


def inv(x: Any, /) -> Tensor:
    """The inverse of (a stack of) square matrices."""
    return _of(x).inv(x)


def matmul(x1: Any, x2: Any, /) -> Tensor:
    """The matrix product (``minitorch.matmul``)."""
    return _of(x1, x2).matmul(x1, x2)


def matrix_norm(x: Any, /, *, keepdims: bool = False, ord: Any = "fro") -> Tensor:
    """A matrix norm: ``'fro'``, ``'nuc'``, ``1``, ``-1``, ``2``, ``-2``, ``inf``, ``-inf``."""
    return _of(x).matrix_norm(x, keepdims=keepdims, ord=ord)


def matrix_power(x: Any, n: int, /) -> Tensor:
    """``x`` to the integer power ``n`` (negative: of its inverse)."""
    return _of(x).matrix_power(x, n)


def matrix_rank(x: Any, /, *, rtol: Any = None) -> Tensor:
    """The rank of (a stack of) matrices (no gradient)."""
    return _of(x).matrix_rank(x, rtol=rtol)


def matrix_transpose(x: Any, /) -> Tensor:
    """The last two axes swapped."""
    return _of(x).matrix_transpose(x)


def outer(x1: Any, x2: Any, /) -> Tensor:
    """The outer product of two vectors."""
    return _of(x1, x2).outer(x1, x2)


def pinv(x: Any, /, *, rtol: Any = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse."""
    return _of(x).pinv(x, rtol=rtol)


def qr(x: Any, /, *, mode: str = "reduced") -> QRResult:
    """The QR decomposition, ``R`` with a positive diagonal.

    Examples
    --------
    >>> import minitorch
    >>> q, r = minitorch.linalg.qr(minitorch.tensor([[0.0, 1.0], [-2.0, 0.0]]))
    >>> r.tolist()
    [[2.0, 0.0], [0.0, 1.0]]
    """
    return _of(x).qr(x, mode=mode)


def slogdet(x: Any, /) -> SlogdetResult:
    """The sign and the log of the absolute value of the determinant.

    Examples
    --------
    >>> import minitorch
    >>> sign, logabsdet = minitorch.linalg.slogdet(minitorch.tensor([[-2.0, 0.0], [0.0, 1.0]]))
    >>> sign.item(), f"{logabsdet.item():.4f}"
    (-1.0, '0.6931')
    """
    return _of(x).slogdet(x)


def solve(x1: Any, x2: Any, /) -> Tensor:
    """The solution ``x`` of ``x1 @ x = x2``."""
    return _of(x1, x2).solve(x1, x2)


def svd(x: Any, /, *, full_matrices: bool = True) -> SVDResult:
    """``U``, ``S``, ``Vh`` with ``x = U diag(S) Vh``.

    Examples
    --------
    >>> import minitorch
    >>> u, s, vh = minitorch.linalg.svd(minitorch.tensor([[3.0, 0.0], [0.0, -4.0]]))
    >>> s.tolist()
    [4.0, 3.0]
    """
    return _of(x).svd(x, full_matrices=full_matrices)


def svdvals(x: Any, /) -> Tensor:
    """The singular values (descending)."""
    return _of(x).svdvals(x)


def tensordot(x1: Any, x2: Any, /, *, axes: Any = 2) -> Tensor:
    """Sum of products over ``axes`` (the main namespace's ``tensordot``)."""
    return _of(x1, x2).tensordot(x1, x2, axes=axes)


def trace(x: Any, /, *, offset: int = 0, dtype: Any = None) -> Tensor:
    """The sum of the diagonal ``offset`` of (a stack of) matrices."""
    return _of(x).trace(x, offset=offset, dtype=dtype)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """The dot product along ``axis`` (the main namespace's ``vecdot``)."""
    return _of(x1, x2).vecdot(x1, x2, axis=axis)


def vector_norm(
    x: Any,
    /,
    *,
    axis: int | tuple[int, ...] | None = None,
    keepdims: bool = False,
    ord: float = 2,
) -> Tensor:
    """The ``ord``-norm over ``axis`` (all axes if None)."""
    return _of(x).vector_norm(x, axis=axis, keepdims=keepdims, ord=ord)
