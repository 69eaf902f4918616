"""Linear algebra: matmul (1-D, 2-D and batched with broadcast batch dimensions), and
the triangular parts tril/triu of (batches of) matrices."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import OpError
from ._registry import Facts, InputError, Sample, defop


def _matmul(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
    """Matrix product with NumPy/Array API rules: 1-D operands are promoted to a row
    (left) or a column (right) and the extra axis removed; batch axes broadcast."""
    if x.ndim > 2 and y.ndim == 2:  # a layer on a batch of sequences: one 2-D product
        k, n = y.shape
        if x.shape[-1] != k:  # (a reshape of zero-size x would not notice)
            raise _inner_error(x.shape[-1], k, "y.shape[-2]")
        rows = math.prod(x.shape[:-1])
        out = xp.reshape(xp.matmul(xp.reshape(x, (rows, k)), y), (*x.shape[:-1], n))
        return out, (x, y)
    try:
        return xp.matmul(x, y), (x, y)
    except Exception as exc:
        why = _shape_error(x, y)
        if why is None:
            raise  # not the shapes: the engine reports the library's error
        raise why from exc


def _boolean_matmul(xp: Any, x: Any, y: Any) -> Any:
    """``x @ y`` of booleans, as NumPy answers it: each entry is whether some pair of
    the row and the column is True (torch and array-api-strict refuse booleans). In
    float32, exactly: a sum of zeros and ones is positive iff one term is 1."""
    return xp.matmul(xp.astype(x, xp.float32), xp.astype(y, xp.float32)) > 0


def _inner_error(k: int, inner: int, where: str) -> InputError:
    return InputError(
        f"x @ y needs x.shape[-1] == {where}, got {k} and {inner}; transpose an operand "
        f"(x.mT) or fix the sizes"
    )


def _shape_error(x: Any, y: Any) -> InputError | None:
    """Why the shapes of ``x @ y`` do not fit (the inner sizes, or the batch shapes), or
    None where they do; the engine makes it an OpError naming the inputs' shapes, dtypes
    and backend."""
    if x.ndim == 0 or y.ndim == 0:
        return InputError("x @ y needs operands of at least 1 dimension; use * for a 0-d one")
    inner = y.shape[0] if y.ndim == 1 else y.shape[-2]
    if x.shape[-1] != inner:
        return _inner_error(x.shape[-1], inner, "y.shape[0]" if y.ndim == 1 else "y.shape[-2]")
    return batch_error(x, y, "x and y")


def batch_error(x: Any, y: Any, names: str) -> InputError | None:
    """The error of two stacks of matrices whose batch dimensions (all but the last two)
    do not broadcast together (None where they do)."""
    try:
        np.broadcast_shapes(tuple(x.shape[:-2]), tuple(y.shape[:-2]))
    except ValueError:
        return InputError(
            f"the batch dimensions {tuple(x.shape[:-2])} and {tuple(y.shape[:-2])} of {names} "
            f"do not broadcast together"
        )
    return None


def _matmul_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]
) -> tuple[Any, Any]:
    """gx = g @ y^T, gy = x^T @ g (batch axes are summed by the engine)."""
    x, y = saved
    if x.ndim > 2 and y.ndim == 2:  # (..., m, k) @ (k, n): the weight's gradient in one
        k, n = y.shape  # 2-D product instead of a batch of them summed afterwards
        rows = math.prod(x.shape[:-1])
        g2 = xp.reshape(g, (rows, n))
        gx = xp.reshape(xp.matmul(g2, xp.matrix_transpose(y)), x.shape) if needs[0] else None
        gy = xp.matmul(xp.matrix_transpose(xp.reshape(x, (rows, k))), g2) if needs[1] else None
        return gx, gy
    if x.ndim > 1 and y.ndim > 1:  # the common case, e.g. a layer
        return (
            xp.matmul(g, xp.matrix_transpose(y)) if needs[0] else None,
            xp.matmul(xp.matrix_transpose(x), g) if needs[1] else None,
        )
    if x.ndim == 1 and y.ndim == 1:
        return (g * y if needs[0] else None), (g * x if needs[1] else None)
    # view 1-D operands (and g) as matrices, then drop the added axis again
    x2 = xp.expand_dims(x, axis=0) if x.ndim == 1 else x
    y2 = xp.expand_dims(y, axis=-1) if y.ndim == 1 else y
    g2 = g
    if x.ndim == 1:
        g2 = xp.expand_dims(g2, axis=-2)
    if y.ndim == 1:
        g2 = xp.expand_dims(g2, axis=-1)
    gx = gy = None
    if needs[0]:
        gx = xp.matmul(g2, xp.matrix_transpose(y2))
        if x.ndim == 1:
            gx = xp.squeeze(gx, axis=-2)
    if needs[1]:
        gy = xp.matmul(xp.matrix_transpose(x2), g2)
        if y.ndim == 1:
            gy = xp.squeeze(gy, axis=-1)
    return gx, gy


matmul = defop(
    "matmul",
    _matmul,
    _matmul_vjp,
    nin=2,
    promote="operands",
    method=True,
    dunders=["__matmul__"],
    rdunders=["__rmatmul__"],
    bools=_boolean_matmul,
    facts=Facts(
        ref=lambda torch, x, y: torch.matmul(x, y),
        samples=(
            Sample(((3, 4), (4, 5))),
            Sample(((4,), (4, 5))),
            Sample(((3, 4), (4,))),
            Sample(((4,), (4,))),
            Sample(((2, 3, 4), (4, 5))),
            Sample(((2, 1, 3, 4), (5, 4, 2))),
            Sample(((3,), (2, 3, 4))),
            Sample(((3, 0), (0, 5)), name="empty inner dimension: zeros"),
            Sample(((3, 4), (4, 0)), name="no columns: zero gradient of x"),
        ),
        formula="g @ y^T, x^T @ g",
    ),
)


# ------------------------------------------------------------------ tril, triu
def _triangle(xp: Any, x: Any, k: int, name: str) -> Any:
    """The boolean ``(n, m)`` mask of ``x``'s last two axes that ``name`` keeps: on and
    below (tril) or on and above (triu) diagonal ``k``, built with Array API calls on
    ``x``'s device (array-api-strict has no ``tril``/``triu``)."""
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise OpError(f"{name}: k (the diagonal) must be an int, got {k!r}")
    if x.ndim < 2:
        raise OpError(f"{name}: needs at least 2 dimensions, got shape {tuple(x.shape)}")
    n, m = x.shape[-2], x.shape[-1]
    rows = xp.reshape(xp.arange(n, device=x.device), (n, 1))
    offset = xp.arange(m, device=x.device) - rows  # column - row: 0 on the diagonal
    return offset <= int(k) if name == "tril" else offset >= int(k)


def _masked(xp: Any, x: Any, mask: Any) -> Any:
    return xp.where(mask, x, False if xp.isdtype(x.dtype, "bool") else 0)


def _tril(xp: Any, x: Any, k: int = 0) -> tuple[Any, tuple[Any, ...]]:
    """The lower triangle of the last two axes: elements on and below diagonal ``k``
    (``k > 0`` above the main diagonal, ``k < 0`` below), the rest 0, as
    ``torch.tril(x, diagonal=k)``. The gradient is ``tril(g, k)``.

    Examples
    --------
    >>> import minitorch
    >>> minitorch.ones((3, 3)).tril()
    tensor([[1., 0., 0.],
            [1., 1., 0.],
            [1., 1., 1.]], dtype=float32, backend=numpy)
    """
    mask = _triangle(xp, x, k, "tril")
    return _masked(xp, x, mask), (mask,)


def _triu(xp: Any, x: Any, k: int = 0) -> tuple[Any, tuple[Any, ...]]:
    """The upper triangle of the last two axes: elements on and above diagonal ``k``
    (``k > 0`` above the main diagonal, ``k < 0`` below), the rest 0, as
    ``torch.triu(x, diagonal=k)``. The gradient is ``triu(g, k)``.

    Examples
    --------
    >>> import minitorch
    >>> minitorch.ones((3, 3)).triu(1)
    tensor([[0., 1., 1.],
            [0., 0., 1.],
            [0., 0., 0.]], dtype=float32, backend=numpy)
    """
    mask = _triangle(xp, x, k, "triu")
    return _masked(xp, x, mask), (mask,)


def _triangle_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...], k: int = 0
) -> tuple[Any]:
    (mask,) = saved  # a constant: the same mask, applied to g
    return (xp.where(mask, g, 0.0),)


_TRIANGLE_SAMPLES = (
    Sample(((3, 4),)),
    Sample(((2, 3, 4),), {"k": -1}),
    Sample(((2, 3, 4),), {"k": 1}),
    Sample(((4, 3),), {"k": 2}),
    Sample(((3, 3),), {"k": -5}, name="everything masked"),
    Sample(((2, 1, 0, 3),), name="empty"),
)

tril = defop(
    "tril",
    _tril,
    _triangle_vjp,
    method=True,
    facts=Facts(
        ref=lambda torch, x, k=0: torch.tril(x, diagonal=k),
        samples=_TRIANGLE_SAMPLES,
        formula="tril(g, k)",
    ),
)

triu = defop(
    "triu",
    _triu,
    _triangle_vjp,
    method=True,
    facts=Facts(
        ref=lambda torch, x, k=0: torch.triu(x, diagonal=k),
        samples=_TRIANGLE_SAMPLES,
        formula="triu(g, k)",
    ),
)
