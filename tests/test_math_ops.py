"""The Array API's elementwise math (ops/math.py): operators and their reflected and
in-place forms against PyTorch float64 and array-api-strict (values, dtypes,
gradients), the Array API special cases, the zero-gradient ops and the errors. The
catalog tests (test_catalog.py, test_higher_order.py) check every op's samples too."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import tensor_f64, torch_f64

import minitorch
from minitorch import autograd
from minitorch.testing import assert_close

strict = pytest.importorskip("array_api_strict")

NEW_OPS = [
    *("tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh"),
    *("expm1", "hypot", "copysign", "nextafter", "signbit", "floor", "ceil", "round"),
    *("trunc", "floor_divide", "remainder", "isinf", "logical_xor", "bitwise_and"),
    *("bitwise_or", "bitwise_xor", "bitwise_invert", "bitwise_left_shift"),
    "bitwise_right_shift",
]
NO_GRAD = ("signbit", "isinf", "nextafter", "logical_xor", *(n for n in NEW_OPS if "bitwise" in n))
ZERO_GRAD = ("floor", "ceil", "round", "trunc")

# x / y never an integer: floor division and remainder are differentiable there
XS = [2.3, -2.3, 0.7, -0.7, 5.1, -4.9]
YS = [0.9, 0.9, -1.3, -1.3, 2.2, -2.2]


def _tensor(a: Any, backend: Any, dtype: str) -> minitorch.Tensor:
    arr = backend.from_numpy(np.asarray(a), backend.resolve_dtype(dtype), backend.device)
    return minitorch.Tensor._make(arr, backend, None)


def _strict(a: Any, dtype: str) -> Any:
    return strict.asarray(np.asarray(a).tolist(), dtype=getattr(strict, dtype))


def _same(got: minitorch.Tensor, want: Any, backend: Any, rtol: float = 0.0) -> None:
    """The values (nan where nan, inf where inf, the sign of zeros; finite ones within
    ``rtol``) and the dtype of ``want``, an array-api-strict array."""
    w = np.asarray(want)
    assert backend.dtype_name(got.dtype) == str(want.dtype).rsplit(".", 1)[-1]
    g = got.numpy()
    np.testing.assert_allclose(g, w, rtol=rtol, atol=0.0, equal_nan=True)
    if w.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(g), np.signbit(w))


def test_every_function_is_in_the_differentiable_namespace(backend: Any) -> None:
    x = tensor_f64([0.5], backend)
    ns = x.__array_namespace__()
    for name in NEW_OPS:
        assert callable(getattr(ns, name)), name
        assert callable(getattr(minitorch, name)), name
        assert name in minitorch.REGISTRY
        assert minitorch.REGISTRY[name].differentiable is (name not in NO_GRAD), name
    assert_close(ns.atan2(x, 2.0), np.arctan2([0.5], 2.0), atol=1e-15, rtol=0)


# ------------------------------------------------------------------ operators vs torch
BINARY_OPERATORS: list[tuple[str, Callable[[Any, Any], Any], str]] = [
    ("//", operator.floordiv, "floor_divide"),
    ("%", operator.mod, "remainder"),
]


@pytest.mark.parametrize(("symbol", "fn", "name"), BINARY_OPERATORS)
def test_division_operators_against_torch(symbol: str, fn: Any, name: str, backend: Any) -> None:
    torch = pytest.importorskip("torch")
    x, y = tensor_f64(XS, backend, True), tensor_f64(YS, backend, True)
    tx, ty = torch_f64(XS, True), torch_f64(YS, True)
    out, tout = fn(x, y), fn(tx, ty)
    assert out.grad_fn is not None
    assert_close(out, tout.detach().numpy(), atol=1e-12, rtol=1e-12, msg=f"x {symbol} y: ")
    g = np.linspace(-1.0, 2.0, len(XS))
    out.backward(g)
    if name == "floor_divide":  # torch.floor_divide has no derivative; div(floor)'s is 0
        tout = torch.div(tx, ty, rounding_mode="floor")
    tgx, tgy = torch.autograd.grad(tout, [tx, ty], torch.tensor(g))
    assert_close(x.grad, tgx.numpy(), atol=1e-12, rtol=0, msg=f"d(x {symbol} y)/dx: ")
    assert_close(y.grad, tgy.numpy(), atol=1e-12, rtol=0, msg=f"d(x {symbol} y)/dy: ")
    # the remainder's gradients are not all zero: the test can tell
    if name == "remainder":
        assert np.all(backend.to_numpy(x.grad) == g)
        assert np.any(backend.to_numpy(y.grad) != 0)


@pytest.mark.parametrize(("symbol", "fn", "name"), BINARY_OPERATORS)
def test_reflected_division_operators(symbol: str, fn: Any, name: str, backend: Any) -> None:
    pytest.importorskip("torch")
    y = tensor_f64(YS, backend, True)
    ty = torch_f64(YS, True)
    out = fn(2.5, y)  # float.__floordiv__ gives way to Tensor.__rfloordiv__
    tout = fn(2.5, ty)
    assert_close(out, tout.detach().numpy(), atol=1e-12, rtol=1e-12, msg=f"2.5 {symbol} y: ")
    out.sum().backward()
    want = -np.floor(2.5 / np.asarray(YS)) if name == "remainder" else np.zeros(len(YS))
    assert_close(y.grad, want, atol=1e-12, rtol=0)
    # and a number on the right
    assert_close(fn(y, 0.75), fn(ty, 0.75).detach().numpy(), atol=1e-12, rtol=1e-12)


INT_OPERATORS: list[tuple[str, Callable[[Any, Any], Any], str]] = [
    ("//", operator.floordiv, "floor_divide"),
    ("%", operator.mod, "remainder"),
    ("^", operator.xor, "bitwise_xor"),
    ("<<", operator.lshift, "bitwise_left_shift"),
    (">>", operator.rshift, "bitwise_right_shift"),
]
IA = [-7, 7, -8, 9, 0, 100, -100, 13]
IB = [2, -2, 3, -4, 5, 3, 7, 1]
SHIFTS = [0, 1, 2, 3, 4, 5, 1, 6]


@pytest.mark.parametrize(("symbol", "fn", "name"), INT_OPERATORS)
def test_integer_operators_against_strict(symbol: str, fn: Any, name: str, backend: Any) -> None:
    """Values and dtype as array-api-strict's: floor division rounds toward -inf and
    the remainder takes the divisor's sign, for integers too."""
    b = SHIFTS if "shift" in name else IB
    x, y = _tensor(IA, backend, "int64"), _tensor(b, backend, "int64")
    sx, sy = _strict(IA, "int64"), _strict(b, "int64")
    _same(fn(x, y), fn(sx, sy), backend)
    _same(getattr(minitorch, name)(x, y), getattr(strict, name)(sx, sy), backend)
    # reflected (a Python int on the left) and a Python int on the right
    _same(fn(3, y), fn(3, sy), backend)
    _same(fn(x, 3), fn(sx, 3), backend)
    assert not fn(x, y).requires_grad


def test_integer_division_against_torch(backend: Any) -> None:
    torch = pytest.importorskip("torch")
    x, y = _tensor(IA, backend, "int64"), _tensor(IB, backend, "int64")
    tx, ty = torch.tensor(IA), torch.tensor(IB)
    np.testing.assert_array_equal((x // y).numpy(), (tx // ty).numpy())
    np.testing.assert_array_equal((x % y).numpy(), (tx % ty).numpy())
    np.testing.assert_array_equal((x ^ y).numpy(), (tx ^ ty).numpy())
    np.testing.assert_array_equal((x << 2).numpy(), (tx << 2).numpy())
    np.testing.assert_array_equal((x >> 1).numpy(), (tx >> 1).numpy())


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bitwise_functions_against_strict(name: str, backend: Any) -> None:
    fn, ref = getattr(minitorch, name), getattr(strict, name)
    x, y = _tensor(IA, backend, "int64"), _tensor(IB, backend, "int64")
    _same(fn(x, y), ref(_strict(IA, "int64"), _strict(IB, "int64")), backend)
    bools = [True, False, True, False]
    p, q = _tensor(bools, backend, "bool"), _tensor(bools[::-1], backend, "bool")
    _same(fn(p, q), ref(_strict(bools, "bool"), _strict(bools[::-1], "bool")), backend)
    _same(fn(p, True), ref(_strict(bools, "bool"), True), backend)


def test_bitwise_invert_and_xor_operator(backend: Any) -> None:
    x = _tensor(IA, backend, "int64")
    _same(minitorch.bitwise_invert(x), strict.bitwise_invert(_strict(IA, "int64")), backend)
    _same(x.bitwise_invert(), strict.bitwise_invert(_strict(IA, "int64")), backend)
    bools = [True, False, False]
    p = _tensor(bools, backend, "bool")
    _same(minitorch.bitwise_invert(p), strict.bitwise_invert(_strict(bools, "bool")), backend)
    _same(p ^ True, _strict(bools, "bool") ^ True, backend)
    _same(True ^ p, True ^ _strict(bools, "bool"), backend)
    _same(
        minitorch.logical_xor(p, p[::-1]),
        strict.logical_xor(_strict(bools, "bool"), _strict(bools[::-1], "bool")),
        backend,
    )


# ------------------------------------------------------------------ in-place operators
INPLACE: list[tuple[str, Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = [
    ("//=", operator.ifloordiv, operator.floordiv),
    ("%=", operator.imod, operator.mod),
    ("&=", operator.iand, minitorch.bitwise_and),
    ("|=", operator.ior, minitorch.bitwise_or),
    ("^=", operator.ixor, operator.xor),
    ("<<=", operator.ilshift, operator.lshift),
    (">>=", operator.irshift, operator.rshift),
]


@pytest.mark.parametrize(("symbol", "ifn", "fn"), INPLACE)
def test_inplace_operators_bump_the_version(symbol: str, ifn: Any, fn: Any, backend: Any) -> None:
    x = _tensor(IA, backend, "int64")
    data_before = x.data
    want = fn(_tensor(IA, backend, "int64"), 3).numpy()
    r = ifn(x, 3)
    assert r is x, f"{symbol} made a new tensor"
    assert x.version == 1
    assert x.dtype == backend.dtypes["int64"]
    np.testing.assert_array_equal(x.numpy(), want)
    assert backend.to_numpy(data_before).tolist() == IA  # never written in place
    r = ifn(x, _tensor([1] * len(IA), backend, "int64"))
    assert r is x and x.version == 2


@pytest.mark.parametrize(("symbol", "ifn"), [("//=", operator.ifloordiv), ("%=", operator.imod)])
def test_inplace_division_keeps_the_graph(symbol: str, ifn: Any, backend: Any) -> None:
    torch = pytest.importorskip("torch")
    x = tensor_f64(XS, backend, True)
    y = x * 1.0
    y = ifn(y, 0.9)
    assert y.version == 1 and y.grad_fn is not None
    (y * y).sum().backward()
    tx = torch_f64(XS, True)
    ty = tx * 1.0
    ty = ifn(ty, 0.9) if symbol == "%=" else torch.div(ty, 0.9, rounding_mode="floor")
    (tgx,) = torch.autograd.grad((ty * ty).sum(), tx)
    assert_close(x.grad, tgx.numpy(), atol=1e-12, rtol=1e-12)


def test_inplace_operators_follow_the_version_rules(backend: Any) -> None:
    leaf = tensor_f64(XS, backend, True)
    with pytest.raises(RuntimeError, match=r"__imod__ \(x %= y\): a leaf tensor that requires"):
        leaf %= 2.0
    with minitorch.no_grad():
        leaf %= 2.0  # a parameter update
    assert leaf.version == 1
    # a value saved for backward and then changed in place: backward refuses it
    y = leaf * 1.0
    z = y.sin()
    y //= 1.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        z.sum().backward()
    # a float result is not stored in an integer tensor
    i = _tensor(IA, backend, "int64")
    with pytest.raises(RuntimeError, match=r"__imod__ \(x %= y\): the result has dtype float"):
        i %= 2.5
    assert i.version == 0


# ------------------------------------------------------------------ special cases
FLOAT_SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, 1e-300, math.inf, -math.inf]


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc", "signbit", "isinf", "expm1"])
def test_unary_special_cases_against_strict(name: str, backend: Any) -> None:
    vals = [*FLOAT_SPECIAL, math.nan]
    if name == "expm1":  # exact at these; elsewhere libraries differ in the last bit
        vals = [0.0, -0.0, 1e-300, -1e-300, math.inf, -math.inf, math.nan]
    x = _tensor(vals, backend, "float64")
    _same(getattr(minitorch, name)(x), getattr(strict, name)(_strict(vals, "float64")), backend)


def test_round_halves_to_even(backend: Any) -> None:
    x = tensor_f64([0.5, 1.5, 2.5, -0.5, -2.5, 3.5], backend)
    got = minitorch.round(x).numpy()
    np.testing.assert_array_equal(got, [0.0, 2.0, 2.0, -0.0, -2.0, 4.0])
    assert np.signbit(got[3])


@pytest.mark.parametrize("name", ["floor", "ceil", "round", "trunc"])
def test_rounding_an_integer_tensor_keeps_it(name: str, backend: Any) -> None:
    x = _tensor(IA, backend, "int64")
    _same(getattr(minitorch, name)(x), getattr(strict, name)(_strict(IA, "int64")), backend)


BINARY_SPECIAL = [
    (5.0, 3.0),
    (-5.0, 3.0),
    (5.0, -3.0),
    (-5.0, -3.0),
    (0.0, -1.0),
    (-0.0, 1.0),
    (math.inf, 2.0),
    (2.0, math.inf),
    (-2.0, math.inf),
    (1.0, 0.0),
    (-1.0, -0.0),
    (math.nan, 1.0),
    (0.0, 0.0),
    (-0.0, -0.0),
    (math.inf, -math.inf),
]


@pytest.mark.parametrize(
    "name", ["floor_divide", "remainder", "atan2", "hypot", "copysign", "nextafter"]
)
def test_binary_special_cases_against_strict(name: str, backend: Any) -> None:
    """Signed zeros, infinities, nan, division by zero: as array-api-strict computes."""
    a, b = (list(v) for v in zip(*BINARY_SPECIAL, strict=True))
    x, y = _tensor(a, backend, "float64"), _tensor(b, backend, "float64")
    with np.errstate(all="ignore"):
        want = getattr(strict, name)(_strict(a, "float64"), _strict(b, "float64"))
        got = getattr(minitorch, name)(x, y)
    # hypot and atan2 of finite values may differ in the last bit between libraries
    _same(got, want, backend, rtol=4e-16 if name in ("hypot", "atan2") else 0.0)


def test_finite_special_cases_on_every_backend(backend: Any) -> None:
    """The cases every library agrees on: remainder takes the divisor's sign."""
    x = tensor_f64([5.0, -5.0, 5.0, -5.0, 7.5], backend)
    y = tensor_f64([3.0, 3.0, -3.0, -3.0, 2.0], backend)
    np.testing.assert_array_equal((x % y).numpy(), [2.0, 1.0, -1.0, -2.0, 1.5])
    np.testing.assert_array_equal((x // y).numpy(), [1.0, -2.0, -2.0, 1.0, 3.0])
    s = tensor_f64([-0.0, 0.0, -1.0], backend)
    np.testing.assert_array_equal(
        minitorch.copysign(tensor_f64([2.0] * 3, backend), s).numpy(), [-2.0, 2.0, -2.0]
    )
    np.testing.assert_array_equal(minitorch.signbit(s).numpy(), [True, False, True])
    tiny = minitorch.nextafter(tensor_f64([0.0], backend), 1.0).numpy()
    assert tiny[0] == np.nextafter(0.0, 1.0) > 0.0


# ------------------------------------------------------------------ gradients
@pytest.mark.parametrize("name", ZERO_GRAD)
def test_rounding_gives_zero_gradients_as_torch(name: str, backend: Any) -> None:
    torch = pytest.importorskip("torch")
    vals = [-2.7, -0.2, 0.3, 1.6]
    x = tensor_f64(vals, backend, True)
    out = getattr(minitorch, name)(x)
    assert out.requires_grad
    (g,) = autograd.grad(out.sum(), x, create_graph=True)
    tx = torch_f64(vals, True)
    (tg,) = torch.autograd.grad(getattr(torch, name)(tx).sum(), tx)
    assert_close(g, tg.numpy(), atol=0, rtol=0)
    assert np.all(g.numpy() == 0.0)


@pytest.mark.parametrize("name", NO_GRAD)
def test_ops_without_gradient_carry_no_graph(name: str, backend: Any) -> None:
    fn = getattr(minitorch, name)
    if name.startswith("bitwise") or name == "logical_xor":
        a = _tensor([1, 2, 3], backend, "int64" if name.startswith("bitwise") else "bool")
        args: tuple[Any, ...] = (a,) if name == "bitwise_invert" else (a, a)
    else:
        x = tensor_f64([0.5, -1.0, math.inf], backend, True)
        args = (x, x) if name == "nextafter" else (x,)
    out = fn(*args)
    assert not out.requires_grad and out.grad_fn is None


@pytest.mark.parametrize(
    ("name", "vals", "others"),
    [
        ("atan2", [0.3, -1.2, 2.0], [1.1, -0.4, -0.7]),
        ("hypot", [0.3, -1.2, 2.0], [1.1, -0.4, -0.7]),
        ("copysign", [0.3, -1.2, 2.0], [1.1, -0.4, -0.0]),
    ],
)
def test_binary_gradients_against_torch(
    name: str, vals: list[float], others: list[float], backend: Any
) -> None:
    """Both inputs; copysign's sign input gets 0, and -0.0 counts as negative."""
    torch = pytest.importorskip("torch")
    x, y = tensor_f64(vals, backend, True), tensor_f64(others, backend, True)
    out = getattr(minitorch, name)(x, y)
    out.sum().backward()
    tx, ty = torch_f64(vals, True), torch_f64(others, True)
    tgx, tgy = torch.autograd.grad(getattr(torch, name)(tx, ty).sum(), [tx, ty])
    assert_close(x.grad, tgx.numpy(), atol=1e-12, rtol=1e-12)
    assert_close(y.grad, tgy.numpy(), atol=1e-12, rtol=1e-12)
    if name == "copysign":
        np.testing.assert_array_equal(backend.to_numpy(x.grad), [1.0, 1.0, -1.0])


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    "call",
    [
        lambda x, i: minitorch.bitwise_and(x, x),
        lambda x, i: minitorch.bitwise_or(i, 1.5),
        lambda x, i: i ^ 0.5,
        lambda x, i: minitorch.bitwise_invert(x),
        lambda x, i: x << 1,
        lambda x, i: i >> x,
    ],
)
def test_bitwise_ops_refuse_floats(call: Any, backend: Any) -> None:
    x = tensor_f64([1.0, 2.0], backend)
    i = _tensor([1, 2], backend, "int64")
    with pytest.raises(minitorch.OpError) as info:
        call(x, i)
    msg = str(info.value)
    assert "bitwise_" in msg and "takes integer" in msg and "astype('int64')" in msg
    assert "float" in msg and backend.name in msg


def test_shifts_refuse_booleans(backend: Any) -> None:
    b = _tensor([True, False], backend, "bool")
    with pytest.raises(
        minitorch.OpError, match=r"bitwise_left_shift.*takes integer tensors, got bool"
    ):
        b << b
