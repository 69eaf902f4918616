"""Every name of the differentiable namespace, called once on a small input, against
NumPy float64: ops by their catalog samples, the rest from a table below."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers import tensor_f64 as _t

import minitorch
from minitorch.array_api import _NO_GRAD, _PASSTHROUGH, Namespace, namespace
from minitorch.ops import REGISTRY
from minitorch.testing import assert_close
from minitorch.testing._samples import call, sample_tensors

X = np.array([[0.5, -1.5, 2.0], [1.0, 0.25, -0.75]])
Y = np.array([[1.5, 0.5, -2.0], [1.0, 2.0, 0.5]])


def _ns_names() -> list[str]:
    methods = [n for n in vars(Namespace) if not n.startswith("_") and callable(vars(Namespace)[n])]
    return sorted(set(methods) | set(_NO_GRAD))


# name -> (call on (xp, x, y) of Tensors, the NumPy float64 value it must give)
CASES: dict[str, tuple[Any, Any]] = {
    "where": (lambda xp, x, y: xp.where(x > 0.0, x, y), np.where(X > 0, X, Y)),
    "astype": (lambda xp, x, y: xp.astype(x, xp.float32), X.astype(np.float32)),
    "moveaxis": (lambda xp, x, y: xp.moveaxis(x, 0, 1), np.moveaxis(X, 0, 1)),
    "scatter_add": (
        lambda xp, x, y: xp.scatter_add(3, xp.asarray(np.array([2, 0])), x),
        np.stack([X[1], np.zeros(3), X[0]]),
    ),
    "setitem": (
        lambda xp, x, y: xp.setitem(x, (0, 1), 9.0),
        np.where([[0, 1, 0], [0, 0, 0]], 9.0, X),
    ),
    "put_rows": (
        lambda xp, x, y: xp.put_rows(x, xp.asarray(np.array([1])), y[:1]),
        np.stack([X[0], Y[0]]),
    ),
    "zeros_with": (
        lambda xp, x, y: xp.zeros_with((3, 2, 3), 1, x),
        np.stack([np.zeros((2, 3)), X, np.zeros((2, 3))]),
    ),
    "all_in_range": (lambda xp, x, y: bool(xp.all_in_range(xp.arange(4), 0, 4)), True),
    "positive": (lambda xp, x, y: xp.positive(x), X),
    "square": (lambda xp, x, y: xp.square(x), X * X),
    "reciprocal": (lambda xp, x, y: xp.reciprocal(x), 1.0 / X),
    "log2": (lambda xp, x, y: xp.log2(xp.abs(x)), np.log2(np.abs(X))),
    "log10": (lambda xp, x, y: xp.log10(xp.abs(x)), np.log10(np.abs(X))),
    "logaddexp": (lambda xp, x, y: xp.logaddexp(x, y), np.logaddexp(X, Y)),
    "vecdot": (lambda xp, x, y: xp.vecdot(x, y), np.sum(X * Y, axis=-1)),
    "broadcast_arrays": (
        lambda xp, x, y: xp.broadcast_arrays(x, xp.sum(y, axis=0))[1],
        np.broadcast_to(Y.sum(axis=0), X.shape),
    ),
    "isnan": (lambda xp, x, y: xp.isnan(x / x), np.isnan(X / X)),
    "isdtype": (lambda xp, x, y: xp.isdtype(x.dtype, "real floating"), True),
    "result_type": (lambda xp, x, y: xp.result_type(x, 1.0) == x.dtype, True),
    "arange": (lambda xp, x, y: xp.arange(3), np.arange(3)),
    "zeros": (lambda xp, x, y: xp.zeros((2, 3)), np.zeros((2, 3))),
    "ones": (lambda xp, x, y: xp.ones((2, 3)), np.ones((2, 3))),
    "empty": (lambda xp, x, y: xp.empty((2, 3)) * 0.0, np.zeros((2, 3))),
    "full": (lambda xp, x, y: xp.full((2, 3), 7.0), np.full((2, 3), 7.0)),
    "full_like": (lambda xp, x, y: xp.full_like(x, 7.0), np.full_like(X, 7.0)),
    "zeros_like": (lambda xp, x, y: xp.zeros_like(x), np.zeros_like(X)),
    "ones_like": (lambda xp, x, y: xp.ones_like(x), np.ones_like(X)),
    "empty_like": (lambda xp, x, y: xp.empty_like(x) * 0.0, np.zeros_like(X)),
    "asarray": (lambda xp, x, y: xp.asarray([[1.0, 2.0]]), np.array([[1.0, 2.0]])),
    "eye": (lambda xp, x, y: xp.eye(3), np.eye(3)),
    "linspace": (lambda xp, x, y: xp.linspace(0.0, 1.0, 5), np.linspace(0.0, 1.0, 5)),
    "equal": (lambda xp, x, y: xp.equal(x, y), X == Y),
    "not_equal": (lambda xp, x, y: xp.not_equal(x, y), X != Y),
    "less": (lambda xp, x, y: xp.less(x, y), X < Y),
    "less_equal": (lambda xp, x, y: xp.less_equal(x, y), X <= Y),
    "greater": (lambda xp, x, y: xp.greater(x, y), X > Y),
    "greater_equal": (lambda xp, x, y: xp.greater_equal(x, y), X >= Y),
    "argmax": (lambda xp, x, y: xp.argmax(x, axis=1), np.argmax(X, axis=1)),
    "argmin": (lambda xp, x, y: xp.argmin(x, axis=1), np.argmin(X, axis=1)),
    "all": (lambda xp, x, y: xp.all(x > 0.0, axis=1), np.all(X > 0, axis=1)),
    "any": (lambda xp, x, y: xp.any(x > 0.0, axis=1), np.any(X > 0, axis=1)),
    "sign": (lambda xp, x, y: xp.sign(x), np.sign(X)),
    "isfinite": (lambda xp, x, y: xp.isfinite(x), np.isfinite(X)),
    "logical_not": (lambda xp, x, y: xp.logical_not(x > 0.0), ~(X > 0)),
    "logical_and": (lambda xp, x, y: xp.logical_and(x > 0.0, y > 0.0), (X > 0) & (Y > 0)),
    "logical_or": (lambda xp, x, y: xp.logical_or(x > 0.0, y > 0.0), (X > 0) | (Y > 0)),
}


# written in array_api.py for the Array API standard and tested there, against torch
# float64 and array_api_strict: tests/test_array_api_namespace.py
STANDARD_FUNCTIONS = {
    "argsort",
    "can_cast",
    "concat",
    "conj",
    "expand_dims",
    "finfo",
    "iinfo",
    "imag",
    "real",
    "count_nonzero",
    "cumulative_prod",
    "cumulative_sum",
    "diff",
    "from_dlpack",
    "isin",
    "meshgrid",
    "nonzero",
    "prod",
    "repeat",
    "reshape",
    "roll",
    "searchsorted",
    "sort",
    "sum",
    "take_along_axis",
    "tensordot",
    "tile",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "unstack",
}


def test_the_table_covers_every_name() -> None:
    assert set(_ns_names()) == set(CASES) | STANDARD_FUNCTIONS
    assert not set(CASES) & STANDARD_FUNCTIONS


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_namespace_function_once(name: str, backend: Any) -> None:
    x, y = _t(X, backend), _t(Y, backend)
    xp = x.__array_namespace__()
    fn, expected = CASES[name]
    out = fn(xp, x, y)
    if isinstance(expected, bool):
        assert out is expected
        return
    got = backend.to_numpy(out.data if isinstance(out, minitorch.Tensor) else out)
    assert_close(np.asarray(got), np.asarray(expected), rtol=1e-6 if name == "astype" else 1e-12)


# scatter_add and setitem are in the namespace with the backend contract's signatures
# (what VJPs call), astype with the standard's (dtype positional-only): tested in CASES
OPS = sorted(
    n
    for n, op in REGISTRY.items()
    if op.builtin and op.facts.samples and n not in ("scatter_add", "setitem", "astype")
)


@pytest.mark.parametrize("name", OPS)
def test_every_op_by_its_name_and_api_name(name: str, backend: Any) -> None:
    """``xp.<op>`` is the op: same values as the public function on the first sample."""
    op = REGISTRY[name]
    if backend.name in op.facts.skips:
        pytest.skip(f"{backend.name}: {op.facts.skips[backend.name]}")
    sample = op.facts.samples[0]
    ins = sample_tensors(op, sample, backend, requires_grad=False)
    want = call(op, ins, sample.params)
    xp = namespace(backend)
    for attr in (name, op.api) if op.api else (name,):
        fn = getattr(xp, attr)
        got = fn(*ins, **sample.params) if op.nin != -1 else fn(ins, **sample.params)
        assert_close(got, want.numpy(), rtol=0, atol=0)  # (move's is on another backend)


@pytest.mark.parametrize("name", sorted(_PASSTHROUGH))
def test_passthrough_names_come_from_the_backend(name: str, backend: Any) -> None:
    xp = namespace(backend)
    if not hasattr(backend.xp, name):
        with pytest.raises(AttributeError, match="differentiable namespace has no"):
            getattr(xp, name)
        return
    assert getattr(xp, name) is getattr(backend.xp, name)


def test_unknown_names_say_what_to_do(backend: Any) -> None:
    with pytest.raises(AttributeError, match=r"no 'fft'.*minitorch.defop"):
        namespace(backend).fft  # noqa: B018
    with pytest.raises(AttributeError, match=r"no attribute 'fft'"):
        minitorch.array_api.fft  # noqa: B018


def test_all_in_range_answers_alike_in_both_namespaces(backend: Any) -> None:
    """The backend contract's range check, ``all_in_range(x, low, high)``: a 0-d boolean
    saying whether every element lies in ``[low, high)``, from the backend's namespace
    (one reduction on CuPy) and from the differentiable one (graph Tensors)."""

    def ints(a: Any) -> minitorch.Tensor:
        arr = backend.from_numpy(np.asarray(a), backend.resolve_dtype("int64"), backend.device)
        return minitorch.Tensor._make(arr, backend, None)

    values = ints([[0, 3], [7, -2]])
    cases = [((-2, 8), True), ((-1, 8), False), ((-2, 7), False), ((-5, 100), True)]
    for low_high, want in cases:
        raw = backend.xp.all_in_range(values.data, *low_high)
        graph = namespace(backend).all_in_range(values, *low_high)
        assert raw.shape == () and bool(raw) is want, low_high
        assert isinstance(graph, minitorch.Tensor) and bool(graph) is want, low_high
    assert bool(backend.xp.all_in_range(ints(np.zeros(0, dtype=np.int64)).data, 0, 1))


def test_the_vjp_kernels_are_the_formulas_on_graph_tensors(backend: Any) -> None:
    """The backend contract's VJP kernels (``xp.tanh_backward(g, out)``, ...) exist in
    the differentiable namespace too, composed from its ops, so a VJP that calls them
    records its own graph under create_graph: their values and their own gradients
    against the formulas worked out by hand."""
    xp = namespace(backend)
    g, t = _t(X, backend, True), _t(np.tanh(Y), backend, True)
    r = xp.tanh_backward(g, t)  # g * (1 - t^2)
    assert_close(r, X * (1.0 - np.tanh(Y) ** 2), rtol=1e-14, atol=0)
    r.sum().backward()
    assert_close(g.grad, 1.0 - np.tanh(Y) ** 2, rtol=1e-14, atol=0)
    assert_close(t.grad, -2.0 * np.tanh(Y) * X, rtol=1e-14, atol=0)
    s = _t(np.exp(Y) / np.exp(Y).sum(axis=1, keepdims=True), backend)
    got = xp.softmax_backward(_t(X, backend), s, 1)
    sn = s.numpy()
    assert_close(got, sn * (X - (X * sn).sum(axis=1, keepdims=True)), rtol=1e-14, atol=1e-16)
    relu = np.maximum(Y, 0.0)
    sig = 1.0 / (1.0 + np.exp(-Y))
    log_s = np.log(sn)
    for got, want in (
        (xp.relu_backward(_t(X, backend), _t(relu, backend)), np.where(relu != 0, X, 0.0)),
        (xp.sigmoid_backward(_t(X, backend), _t(sig, backend)), X * sig * (1.0 - sig)),
        (
            xp.log_softmax_backward(_t(X, backend), _t(log_s, backend), 1),
            X - sn * X.sum(axis=1, keepdims=True),
        ),
    ):
        assert isinstance(got, minitorch.Tensor)
        assert_close(got, want, rtol=1e-13, atol=1e-15)


def test_roll_and_int_repeat_read_nothing_on_the_host(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``roll`` and ``repeat`` by an int make no index array and read nothing back (a GPU
    sync each, where PyTorch has none): NumPy's values for every shift (negative, past the
    axis, zero, several axes, flattened) and count (0 included), on empty axes too, and
    the gradients NumPy's rolled back and summed over each group of copies."""
    xp = namespace(backend)
    a = np.arange(24.0).reshape(2, 3, 4)
    x = _t(a, backend).requires_grad_()

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an index array or a host read")

    monkeypatch.setattr(backend.xp, "all_in_range", refused)
    monkeypatch.setattr(minitorch.array_api, "as_array", refused)
    rolls = [(1, 2), (-5, 1), (13, -1), (0, 0), ((1, -3), (0, 2)), (7, None), (2, (0, 1))]
    for shift, axis in rolls:
        got = xp.roll(x, shift, axis=axis)
        np.testing.assert_array_equal(got.numpy(), np.roll(a, shift, axis=axis))
        g = np.arange(24.0).reshape(2, 3, 4) ** 2
        (grad,) = minitorch.autograd.grad((got * _t(g, backend)).sum(), [x])
        back = np.roll(g, np.negative(shift), axis=axis)
        np.testing.assert_array_equal(grad.numpy(), back, err_msg=f"{shift} {axis}")
    for r, axis in [(2, 0), (3, 1), (1, 2), (0, 1), (np.int64(2), None)]:
        got = xp.repeat(x, r, axis=axis)
        want = np.repeat(a, int(r), axis=axis)
        assert tuple(got.shape) == want.shape
        np.testing.assert_array_equal(got.numpy(), want)
        g = np.arange(want.size, dtype=np.float64).reshape(want.shape)
        (grad,) = minitorch.autograd.grad((got * _t(g, backend)).sum(), [x])
        ax = 0 if axis is None else axis
        flat = g if axis is not None else g.reshape(-1)
        summed = np.add.reduceat(flat, np.arange(0, flat.shape[ax], max(int(r), 1)), axis=ax)
        want_grad = np.zeros_like(a) if int(r) == 0 else summed.reshape(a.shape)
        np.testing.assert_array_equal(grad.numpy(), want_grad, err_msg=f"{r} {axis}")
    empty = _t(np.zeros((2, 0)), backend)
    assert tuple(xp.roll(empty, 3, axis=1).shape) == (2, 0)
    assert tuple(xp.repeat(empty, 3, axis=1).shape) == (2, 0)
    for bad in (-1, True):
        monkeypatch.undo()
        with pytest.raises(minitorch.OpError, match="repeat: repeats must be"):
            xp.repeat(x, bad, axis=0)


def test_put_rows_is_differentiable_to_the_second_order(backend: Any) -> None:
    """The VJP of ``x[idx] = v`` calls ``put_rows``; under ``create_graph`` that is the
    namespace's, on graph Tensors, so the gradient has its own gradient."""
    xp = namespace(backend)
    x = minitorch.tensor(X, requires_grad=True)
    v = minitorch.tensor(Y[:1], requires_grad=True)
    out = xp.put_rows(x * x, xp.asarray(np.array([1])), v * v)
    (gx, gv) = minitorch.autograd.grad((out * out).sum(), [x, v], create_graph=True)
    # d/dx of sum(out^2) = 4 x^3 on the rows kept, 0 on the row set; for v: 4 v^3
    np.testing.assert_allclose(gx.numpy(), np.stack([4 * X[0] ** 3, 0 * X[1]]), rtol=1e-12)
    np.testing.assert_allclose(gv.numpy(), 4 * Y[:1] ** 3, rtol=1e-12)
    (ggx,) = minitorch.autograd.grad(gx.sum(), [x])
    np.testing.assert_allclose(ggx.numpy(), np.stack([12 * X[0] ** 2, 0 * X[1]]), rtol=1e-12)
