"""Broadcasting backward: every binary op of the registry (``Facts.kind == "binary"``)
over a catalog of shape pairs, in both orders.

The engine, not the op, sums a broadcast gradient down to each input's shape; these
pairs exercise every way that can go wrong (0-d, a missing leading axis, size-1 axes on
either side, both sides broadcasting at once). The gradients must have the inputs'
shapes and match PyTorch float64 at the op's tolerance (default 1e-7).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch.ops import REGISTRY
from minitorch.testing import assert_close
from minitorch.testing._samples import _draw

PAIRS = [
    ((), (3,)),
    ((3,), (4, 3)),
    ((4, 1), (1, 3)),
    ((2, 1, 3), (4, 3)),
    ((1,), (2, 3, 4)),
    ((5, 1, 1), (1, 4, 1)),
    ((2, 3), (2, 3)),
]
BOTH_ORDERS = sorted({p for a, b in PAIRS for p in ((a, b), (b, a))})
BINARY = [
    pytest.param(op, id=name)
    for name, op in sorted(REGISTRY.items())
    if op.builtin and op.facts.kind == "binary"
]


def test_binary_ops_are_found() -> None:
    names = {p.values[0].name for p in BINARY}
    assert {"add", "sub", "mul", "div", "pow", "maximum", "minimum"} <= names, names


@pytest.mark.parametrize(("shape_x", "shape_y"), BOTH_ORDERS, ids=str)
@pytest.mark.parametrize("op", BINARY)
def test_broadcast_gradients_match_torch(
    op: Any, shape_x: tuple[int, ...], shape_y: tuple[int, ...], backend: Any
) -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")
    reason = op.facts.skips.get(backend.name)
    if reason:
        pytest.skip(f"{op.name} on {backend.name}: {reason}")
    rng = np.random.default_rng(len(shape_x) * 10 + len(shape_y))
    hx, hy = _draw(rng, shape_x, op), _draw(rng, shape_y, op)
    x = minitorch.tensor(hx, dtype="float64", requires_grad=True)
    y = minitorch.tensor(hy, dtype="float64", requires_grad=True)
    assert x.backend.name == backend.name
    out = op.fn(x, y)
    expected_shape = np.broadcast_shapes(shape_x, shape_y)
    assert out.shape == expected_shape

    tx = torch.tensor(hx, dtype=torch.float64, requires_grad=True)
    ty = torch.tensor(hy, dtype=torch.float64, requires_grad=True)
    tout = op.facts.ref(torch, tx, ty)
    atol, rtol = op.facts.tol.get("float64", (1e-7, 1e-7))
    assert_close(out, tout, atol=atol, rtol=rtol, msg=f"{op.name} forward: ")

    g = rng.standard_normal(expected_shape)  # not all ones: a wrong sum shows up
    out.backward(g)
    tgx, tgy = torch.autograd.grad(tout, [tx, ty], torch.tensor(g))
    for name, t, tg in (("x", x, tgx), ("y", y, tgy)):
        assert t.grad is not None, f"{op.name}: {name} got no gradient"
        assert tuple(t.grad.shape) == t.shape, (
            f"{op.name}{shape_x, shape_y}: grad of {name} has shape {tuple(t.grad.shape)}, "
            f"expected {t.shape}"
        )
        assert t.grad.dtype == t.data.dtype
        assert_close(
            backend.to_numpy(t.grad),
            tg,
            atol=atol,
            rtol=rtol,
            msg=f"{op.name}{shape_x, shape_y} grad of {name}: ",
        )


@pytest.mark.parametrize("op", BINARY)
def test_broadcast_gradient_accumulates_over_fan_out(op: Any, backend: Any) -> None:
    """The same tensor on both sides (``op(x, x)``): the two broadcast gradients add up."""
    torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")
    reason = op.facts.skips.get(backend.name)
    if reason:
        pytest.skip(f"{op.name} on {backend.name}: {reason}")
    rng = np.random.default_rng(7)
    hx = _draw(rng, (3, 1), op)
    hz = _draw(rng, (1, 4), op)
    x = minitorch.tensor(hx, dtype="float64", requires_grad=True)
    z = minitorch.tensor(hz, dtype="float64")
    out = op.fn(op.fn(x, z), x)  # x is broadcast twice, on each side once
    g = rng.standard_normal(out.shape)
    out.backward(g)
    tx = torch.tensor(hx, dtype=torch.float64, requires_grad=True)
    tz = torch.tensor(hz, dtype=torch.float64)
    tout = op.facts.ref(torch, op.facts.ref(torch, tx, tz), tx)
    (tg,) = torch.autograd.grad(tout, [tx], torch.tensor(g))
    atol, rtol = op.facts.tol.get("float64", (1e-7, 1e-7))
    assert_close(backend.to_numpy(x.grad), tg, atol=atol, rtol=rtol, msg=f"{op.name}: ")
