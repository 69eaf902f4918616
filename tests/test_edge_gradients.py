"""Values and gradients at the edges of each op's domain (0, nan, +-inf, constant data,
zero-size and 0-d tensors), held against PyTorch float64, nan for nan, on every backend."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import tensor_f64, torch_f64

import minitorch

torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")

INF, NAN = float("inf"), float("nan")

_SPECIAL = (0.0, -0.0, 1.5, -1.5, INF, -INF, NAN)
#: every pair of special values, as two lists
_GRID = ([a for a in _SPECIAL for _ in _SPECIAL], [b for _ in _SPECIAL for b in _SPECIAL])

# name -> (minitorch function, torch function, inputs, upstream gradient or None for ones)
Case = tuple[Callable[..., Any], Callable[..., Any], tuple[Any, ...], Any]
CASES: dict[str, Case] = {
    "x**0 at 0": (lambda x: x**0, lambda x: x**0, ([0.0, -INF, 2.0],), None),
    "x**0.5 at 0 and -inf": (lambda x: x**0.5, lambda x: x**0.5, ([0.0, -INF, 4.0],), None),
    "x**-0.5 at 0 and -inf": (lambda x: x**-0.5, lambda x: x**-0.5, ([0.0, -INF, 4.0],), None),
    "x**1.5 at 0 and -1": (lambda x: x**1.5, lambda x: x**1.5, ([0.0, -1.0, 4.0],), None),
    "x**y at x=0": (
        lambda x, y: x**y,
        lambda x, y: x**y,
        ([0.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.5, -1.0]),
        None,
    ),
    "0.0**y": (lambda y: 0.0**y, lambda y: 0.0**y, ([0.0, 2.0, -1.0],), None),
    "(-2.0)**y": (lambda y: (-2.0) ** y, lambda y: (-2.0) ** y, ([1.0, 2.0],), None),
    "relu, nan gradient at an inactive unit": (
        minitorch.relu,
        torch.relu,
        ([-1.0, 0.0, 1.0, NAN],),
        [NAN, NAN, 1.0, 1.0],
    ),
    "abs at nan and 0": (abs, abs, ([NAN, 0.0, -1.0, 0.0],), [1.0, NAN, 1.0, 1.0]),
    "maximum with nan": (
        minitorch.maximum,
        torch.maximum,
        ([NAN, 1.0, 2.0], [1.0, NAN, 2.0]),
        None,
    ),
    "minimum with nan": (
        minitorch.minimum,
        torch.minimum,
        ([NAN, 1.0, 2.0], [1.0, NAN, 2.0]),
        None,
    ),
    "sqrt at 0": (minitorch.sqrt, torch.sqrt, ([0.0, 4.0],), None),
    "std of constant data": (
        lambda x: minitorch.std(x, axis=1),
        lambda x: torch.std(x, dim=1, correction=0),
        ([[2.0, 2.0, 2.0], [1.0, 2.0, 4.0]],),
        None,
    ),
    "std of a 0-d tensor": (minitorch.std, lambda x: torch.std(x, correction=0), (3.0,), None),
    "std, correction=1": (
        lambda x: minitorch.std(x, axis=0, correction=1),
        lambda x: torch.std(x, dim=0, correction=1),
        ([[1.0, 5.0], [2.0, 5.0], [4.0, 5.0]],),
        None,
    ),
    "var of one element, correction=1": (
        lambda x: minitorch.var(x, correction=1),
        lambda x: torch.var(x, correction=1),
        ([2.0],),
        None,
    ),
    "var over a zero-size axis": (
        lambda x: minitorch.var(x, axis=0),
        lambda x: torch.var(x, dim=0, correction=0),
        (np.zeros((0, 3)),),
        None,
    ),
    "softmax over a zero-size axis": (
        lambda x: minitorch.softmax(x, axis=1),
        lambda x: torch.softmax(x, dim=1),
        (np.zeros((3, 0)),),
        None,
    ),
    "log_softmax over a zero-size axis": (
        lambda x: minitorch.log_softmax(x, axis=1),
        lambda x: torch.log_softmax(x, dim=1),
        (np.zeros((3, 0)),),
        None,
    ),
    "logsumexp over a zero-size axis": (
        lambda x: minitorch.logsumexp(x, axis=1),
        lambda x: torch.logsumexp(x, dim=1),
        (np.zeros((3, 0)),),
        None,
    ),
    "softmax of a 0-d tensor": (minitorch.softmax, lambda x: torch.softmax(x, 0), (1.5,), None),
    "log_softmax of a 0-d tensor": (
        minitorch.log_softmax,
        lambda x: torch.log_softmax(x, -1),
        (1.5,),
        None,
    ),
    # PyTorch's g * (copysign(x1, x2) / x1): nan at x1 = +-inf or nan (was +-g), 0 at
    # x1 = 0, and g * 0 there (nan for g = inf); 0 for x2
    "copysign at +-0, +-inf and nan": (
        minitorch.copysign,
        torch.copysign,
        (_GRID[0], _GRID[1]),
        [(-2.0, 1.0, INF, NAN)[i % 4] for i in range(len(_GRID[0]))],
    ),
    "copysign by a number at +-inf and nan": (
        lambda x: minitorch.copysign(x, -0.0),
        lambda x: torch.copysign(x, -0.0),
        ([0.0, -0.0, 1.5, -INF, INF, NAN],),
        [-2.0, INF, 1.0, 1.0, -3.0, 1.0],
    ),
    "sum(axis=0) of a 0-d tensor": (
        lambda x: x.sum(axis=0),
        lambda x: x.sum(dim=0),
        (1.5,),
        None,
    ),
    "mean(axis=-1) of a 0-d tensor": (
        lambda x: x.mean(axis=-1),
        lambda x: x.mean(dim=-1),
        (1.5,),
        None,
    ),
}


def _same(got: np.ndarray, want: Any, what: str) -> None:
    want = want.detach().numpy()
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("name", list(CASES))
def test_value_and_gradient_match_pytorch(name: str, backend: Any) -> None:
    fn, ref, inputs, upstream = CASES[name]
    xs = [tensor_f64(v, backend, requires_grad=True) for v in inputs]
    ts = [torch_f64(v, requires_grad=True) for v in inputs]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "divide by zero", "degrees of freedom <= 0"
        out, want = fn(*xs), ref(*ts)
        _same(out.numpy(), want, f"{name}: value")
        up = np.ones(want.shape) if upstream is None else np.asarray(upstream, dtype=np.float64)
        out.backward(tensor_f64(up, backend))
        want.backward(torch_f64(up))
    for i, (x, t) in enumerate(zip(xs, ts, strict=True)):
        assert x.grad is not None
        _same(np.asarray(backend.to_numpy(x.grad)), t.grad, f"{name}: gradient of input {i}")


def test_numpy_where_selects_bits_exactly_on_large_arrays() -> None:
    """The NumPy backend's where() against a zero takes a bitwise path on large arrays
    (a ReLU's backward): the same bits as np.where, nan, inf and -0.0 included."""
    be = minitorch.backend.resolve("numpy")
    rng = np.random.default_rng(0)
    for dtype in (np.float32, np.float64):
        g = rng.standard_normal((300, 300)).astype(dtype)
        g[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
        cond = rng.standard_normal((300, 300)) > 0
        cond[0, :4] = True
        got, want = be.xp.where(cond, g, 0.0), np.where(cond, g, 0.0)
        assert got.dtype == want.dtype
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("rows", [(1024, 64), (200, 3, 5), (64, 8), (63, 8), (100, 7)])
def test_numpy_scatter_add_sums_repeated_rows(rows: tuple[int, ...]) -> None:
    """The NumPy backend sums rows (an embedding's gradient) with np.add.at over their
    elements' flat positions: the sums of np.add.at on the rows, to the bit (a sorted
    np.add.reduceat summed in another order before), and of a float64 loop over the
    rows, to rounding."""
    be = minitorch.backend.resolve("numpy")
    rng = np.random.default_rng(1)
    index = rng.integers(0, 65, rows[0])
    index[:3] = 7  # repeats, and slots that get nothing
    values = rng.standard_normal(rows)
    want = np.zeros((70, *rows[1:]))
    for i, row in zip(index, values, strict=True):
        want[i] += row
    for dtype, tol in ((np.float64, 1e-13), (np.float32, 1e-5)):
        got = be.xp.scatter_add(70, index, values.astype(dtype))
        assert got.dtype == dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        assert not got[np.setdiff1d(np.arange(70), index)].any()
        by_rows = np.zeros((70, *rows[1:]), dtype)
        np.add.at(by_rows, index, values.astype(dtype))
        np.testing.assert_array_equal(got, by_rows)
    # negative indices count from the end, as np.add.at's
    neg = be.xp.scatter_add(4, np.array([-1, 3] * 40), np.ones((80, 8)))
    np.testing.assert_array_equal(neg, np.r_[np.zeros((3, 8)), np.full((1, 8), 80.0)])
