"""Linear algebra: matmul (1-D, 2-D and batched with broadcast batch dimensions)."""

from __future__ import annotations

from typing import Any

from ._registry import Facts, Sample, defop


def _matmul(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
    """Matrix product with NumPy/Array API rules: 1-D operands are promoted to a row
    (left) or a column (right) and the extra axis removed; batch axes broadcast."""
    return xp.matmul(x, y), (x, y)


def _matmul_vjp(
    xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]
) -> tuple[Any, Any]:
    """gx = g @ y^T, gy = x^T @ g (batch axes are summed by the engine)."""
    x, y = saved
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
        ),
        formula="g @ y^T, x^T @ g",
    ),
)
