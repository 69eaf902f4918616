"""The public testing API: ``gradcheck`` must catch a wrong VJP, and say where.

The wrong ops here are built directly from ``OpDef`` and run through
``minitorch.autograd.apply``: nothing is registered, so the catalog and the other
suites never see them.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch.autograd import apply
from minitorch.ops import REGISTRY
from minitorch.ops._registry import Facts, OpDef
from minitorch.testing import (
    GradcheckError,
    assert_close,
    gradcheck,
    gradient_error,
)


def _op(name: str, fwd: Any, vjp: Any, nin: int = 1) -> Any:
    op = OpDef(
        name=name,
        fwd=fwd,
        vjp=vjp,
        nin=nin,
        params=(),
        defaults={},
        scalars=False,
        moves=False,
        facts=Facts(),
    )
    return lambda *xs: apply(op, list(xs), {})


def _square(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    return x * x, (x,)


def _square_vjp(xp: Any, g: Any, saved: Any, needs: Any) -> tuple[Any]:
    (x,) = saved
    return (g * 2.0 * x,)


def _square_vjp_3x(xp: Any, g: Any, saved: Any, needs: Any) -> tuple[Any]:
    (x,) = saved
    return (g * 3.0 * x,)  # wrong everywhere: d(x^2)/dx is 2x


def _square_vjp_one_element(xp: Any, g: Any, saved: Any, needs: Any) -> tuple[Any]:
    (x,) = saved
    return (g * xp.where(x > 1.5, 2.0 * x + 0.01, 2.0 * x),)  # 0.3% off at x > 1.5 only


def _mul(xp: Any, x: Any, y: Any) -> tuple[Any, tuple[Any, ...]]:
    return x * y, (x, y)


def _mul_vjp_bad_y(xp: Any, g: Any, saved: Any, needs: Any) -> tuple[Any, Any]:
    _, y = saved
    return g * y, g * y  # input 1 should get g * x


square = _op("square", _square, _square_vjp)
square_3x = _op("square_3x", _square, _square_vjp_3x)
square_one_bad = _op("square_one_bad", _square, _square_vjp_one_element)
mul_bad_y = _op("mul_bad_y", _mul, _mul_vjp_bad_y, nin=2)

_VALUES = re.compile(r"is (\S+) analytically but (\S+) numerically")


def _x(values: Any, dtype: str = "float64") -> minitorch.Tensor:
    return minitorch.tensor(np.asarray(values, dtype=np.float64), dtype=dtype, requires_grad=True)


def test_the_wrong_ops_are_not_registered() -> None:
    assert not {"square", "square_3x", "square_one_bad", "mul_bad_y"} & set(REGISTRY)


def test_gradcheck_passes_a_correct_vjp(backend: Any) -> None:
    x = _x([[0.3, -1.2, 1.7], [0.5, 2.0, -0.7]])
    assert x.backend.name == backend.name
    assert gradcheck(square, [x])
    assert gradcheck(square, [x], fast_mode=True)
    res = gradient_error(square, [x])
    assert res.ok and res.message == "" and res.max_abs < 1e-8


def test_gradcheck_catches_a_wrong_vjp_and_names_input_element_and_values() -> None:
    host = np.array([[0.3, -1.2, 1.7], [0.5, 2.0, -0.7]])
    with pytest.raises(GradcheckError) as info:
        gradcheck(square_3x, [_x(host)])
    msg = str(info.value)
    assert "input 0" in msg and "shape (2, 3)" in msg
    # |3x - 2x| = |x| is largest at x = 2.0, element (1, 1): that is the one shown
    assert "input element (1, 1)" in msg and "output element (1, 1)" in msg
    analytic, numeric = (float(v) for v in _VALUES.search(msg).groups())  # type: ignore[union-attr]
    assert analytic == pytest.approx(6.0, abs=1e-12)
    assert numeric == pytest.approx(4.0, rel=1e-8)
    assert "np.float64" not in msg
    assert "6 of 36 Jacobian entries differ" in msg


def test_gradcheck_catches_a_small_error_in_one_element() -> None:
    host = np.array([[0.3, -1.2, 1.6], [0.5, 1.0, -0.7]])  # only (0, 2) is above 1.5
    with pytest.raises(GradcheckError, match=r"input element \(0, 2\)") as info:
        gradcheck(square_one_bad, [_x(host)])
    analytic, numeric = (float(v) for v in _VALUES.search(str(info.value)).groups())  # type: ignore[union-attr]
    assert analytic == pytest.approx(3.21, abs=1e-12)
    assert numeric == pytest.approx(3.2, rel=1e-8)
    assert "1 of 36 Jacobian entries differ" in str(info.value)
    res = gradient_error(square_one_bad, [_x(host)])
    assert not res.ok and res.max_abs == pytest.approx(0.01, rel=1e-6)
    assert res.message == str(info.value)


def test_gradcheck_names_the_input_whose_gradient_is_wrong() -> None:
    x = _x([0.3, -1.2, 1.7])
    y = _x([0.9, 0.4, -0.5])
    with pytest.raises(GradcheckError, match=r"for input 1 \(shape \(3,\)\)"):
        gradcheck(mul_bad_y, [x, y])
    # with input 1 held constant, input 0 alone is right
    assert gradcheck(mul_bad_y, [x, y.detach()])


def test_fast_mode_catches_a_wrong_vjp() -> None:
    x = _x(np.linspace(-1.0, 1.5, 12).reshape(3, 4))
    with pytest.raises(GradcheckError, match=r"fast mode.*input 0 \(shape \(3, 4\)\)"):
        gradcheck(square_3x, [x], fast_mode=True)
    with pytest.raises(GradcheckError, match=r"fast mode.*input 1"):
        gradcheck(mul_bad_y, [_x([0.3, -1.2]), _x([0.9, 0.4])], fast_mode=True)
    res = gradient_error(square_3x, [x], fast_mode=True)
    assert not res.ok and res.max_abs > 0.1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradcheck_in_both_dtypes_on_the_backend(dtype: str, backend: Any) -> None:
    x = _x([[0.3, -1.2], [1.7, 0.5]], dtype)
    assert x.dtype == backend.resolve_dtype(dtype)
    assert gradcheck(lambda t: (t.tanh() * t).sum(), [x])
    with pytest.raises(GradcheckError):
        gradcheck(square_3x, [x])


def test_gradcheck_leaves_its_inputs_alone() -> None:
    host = np.array([0.3, -1.2, 1.7])
    x = _x(host)
    gradcheck(square, [x])
    gradcheck(square, [x], fast_mode=True)
    assert x.grad is None
    assert_close(x, host, atol=0.0, rtol=0.0)
    assert x.version == 0


def test_gradcheck_explains_misuse() -> None:
    with pytest.raises(ValueError, match="no input requires grad"):
        gradcheck(square, [minitorch.tensor([1.0, 2.0], dtype="float64")])
    with pytest.raises(TypeError, match="must return a Tensor"):
        gradcheck(lambda t: 1.0, [_x([1.0])])


def test_gradcheck_handles_0d_and_empty_inputs() -> None:
    assert gradcheck(square, [_x(0.7)])
    assert gradcheck(lambda t: (t * t).sum(), [_x(np.zeros((2, 0)))])


# ---------------------------------------------------------------- assert_close
def test_assert_close_accepts_any_backend_and_torch(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0], dtype="float64")
    assert_close(x, [1.0, 2.0])
    assert_close(x.data, np.array([1.0, 2.0 + 1e-9]))
    torch = pytest.importorskip("torch")
    assert_close(x, torch.tensor([1.0, 2.0], dtype=torch.float64))


def test_assert_close_names_the_worst_element() -> None:
    actual = np.array([[1.0, 2.0], [3.0, 4.5]])
    expected = np.array([[1.0, 2.1], [3.0, 4.0]])
    with pytest.raises(AssertionError) as info:
        assert_close(actual, expected, atol=1e-3, rtol=0.0, msg="my op: ")
    msg = str(info.value)
    assert msg.startswith("my op: 2 of 4 elements differ beyond atol=0.001, rtol=0")
    assert "worst at index (1, 1): actual 4.5, expected 4.0 (abs err 0.5)" in msg


def test_assert_close_tolerances_are_atol_plus_rtol() -> None:
    assert_close([100.0], [100.1], atol=0.0, rtol=1.01e-3)
    with pytest.raises(AssertionError):
        assert_close([100.0], [100.1], atol=0.0, rtol=0.99e-3)
    assert_close([1.0], [1.05], atol=0.06, rtol=0.0)


def test_assert_close_special_values() -> None:
    assert_close([np.inf, -np.inf, np.nan], [np.inf, -np.inf, np.nan])
    with pytest.raises(AssertionError, match="actual inf, expected -inf"):
        assert_close([np.inf], [-np.inf])
    with pytest.raises(AssertionError, match=r"actual nan, expected 1\.0"):
        assert_close([np.nan], [1.0])
    with pytest.raises(AssertionError, match=r"actual 1\.0, expected nan"):
        assert_close([1.0], [np.nan])
    with pytest.raises(AssertionError, match=r"actual 5\.0, expected inf"):
        assert_close([5.0], [np.inf], rtol=1e-3)  # rtol * inf must not accept anything


def test_assert_close_shapes_and_booleans() -> None:
    with pytest.raises(AssertionError, match=r"shape mismatch: actual \(2,\), expected \(1, 2\)"):
        assert_close([1.0, 2.0], [[1.0, 2.0]])
    with pytest.raises(AssertionError, match="shape mismatch"):
        assert_close(np.float64(1.0), [1.0])  # 0-d against (1,): no silent broadcasting
    assert_close(np.array([True, False]), np.array([True, False]))
    with pytest.raises(AssertionError, match="boolean arrays differ in 1 of 2 elements"):
        assert_close(np.array([True, False]), np.array([True, True]))
    with pytest.raises(AssertionError, match=r"index \(\): actual 2.0, expected 1.0"):
        assert_close(2.0, 1.0)
