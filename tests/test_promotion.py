"""Type promotion: one table on every backend (docs/semantics.md), held against the
Array API where it defines the result and PyTorch where it does not."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch.backend.promotion import promote


def _arr(backend: Any, values: Any, dtype: str) -> minitorch.Tensor:
    a = backend.from_numpy(np.asarray(values), backend.dtypes[dtype], backend.device)
    return minitorch.Tensor._make(a, backend, None)


# (left dtype or a Python number, right dtype or a Python number, op, result dtype)
TABLE: list[tuple[Any, Any, Callable[[Any, Any], Any], str]] = [
    ("float32", "float64", lambda a, b: a + b, "float64"),  # Array API (PyTorch: a 0-d ...)
    ("float32", "float64@0d", lambda a, b: a * b, "float64"),  # ... float64 gives float32)
    ("int64", "float32", lambda a, b: a + b, "float32"),  # PyTorch
    ("float32", "int64", lambda a, b: minitorch.maximum(a, b), "float32"),
    ("bool", "float32", lambda a, b: a - b, "float32"),
    ("bool", "int64", lambda a, b: a + b, "int64"),
    ("int64", "int64", lambda a, b: a / b, "default"),  # PyTorch: the default float dtype
    ("int64", 2, lambda a, b: a / b, "default"),
    ("int64", 0.5, lambda a, b: a * b, "default"),
    ("int64", 2, lambda a, b: a**b, "int64"),
    ("int64", 0.5, lambda a, b: a**b, "default"),
    ("float32", 2, lambda a, b: a * b, "float32"),  # Array API: a number takes the array's
    ("float64", 0.5, lambda a, b: a + b, "float64"),
    ("int64", "float32", lambda a, b: a < b, "bool"),
    ("int64", "float64", lambda a, b: minitorch.where(a > 1, a, b), "float64"),
    # where's values both numbers: as PyTorch (NumPy would give float64, strict refuses)
    ("int64", 1.0, lambda a, b: minitorch.where(a > 1, b, 2.0), "default"),
    ("int64", 1, lambda a, b: minitorch.where(a > 1, b, 2.5), "default"),
    ("int64", 1, lambda a, b: minitorch.where(a > 1, b, 2), "int64"),
    ("bool", True, lambda a, b: minitorch.where(a, b, False), "bool"),
    # a function of real numbers of an int or bool tensor: the default float (PyTorch)
    ("int64", 0, lambda a, b: minitorch.exp(a), "default"),
    ("bool", 0, lambda a, b: minitorch.sqrt(a), "default"),  # NumPy: float16
    ("int64", 0, lambda a, b: minitorch.sigmoid(a), "default"),
    ("int64", 0, lambda a, b: minitorch.relu(a), "default"),
    ("int64", 0, lambda a, b: minitorch.softmax(a, axis=-1), "default"),
    ("bool", 0, lambda a, b: minitorch.mean(a), "default"),
    ("int32", 0, lambda a, b: minitorch.var(a), "default"),
    ("bool", 0, lambda a, b: minitorch.round(a), "bool"),  # as it is (NumPy: float16)
    # int64 with int32: int64, a 0-d int64 too (torch counted it as a number: int32)
    ("int32", "int64@0d", lambda a, b: a * b, "int64"),
    ("int32", 2, lambda a, b: minitorch.maximum(a, b), "int32"),  # was int64
    ("int32", True, lambda a, b: a * b, "int32"),  # strict refused a bool with ints
    ("float32", True, lambda a, b: b - a, "float32"),
    # binary functions of real numbers: ints and bools to the default float, as `/`
    ("bool", "bool", lambda a, b: minitorch.atan2(a, b), "default"),  # NumPy: float16
    ("int64", 2, lambda a, b: minitorch.hypot(a, b), "default"),
    ("int32", "int64", lambda a, b: minitorch.copysign(a, b), "default"),
]


@pytest.mark.parametrize("default", ["float32", "float64"])
@pytest.mark.parametrize(
    "case", range(len(TABLE)), ids=lambda i: f"{TABLE[i][0]}-{TABLE[i][1]}-{i}"
)
def test_one_promotion_table_on_every_backend(case: int, default: str, backend: Any) -> None:
    left, right, op, want = TABLE[case]
    be = minitorch.backend.resolve(backend.name, dtype=default, device=backend.device)

    def operand(spec: Any) -> Any:
        if not isinstance(spec, str):
            return spec
        if spec.endswith("@0d"):
            return _arr(be, 1.5, spec[:-3])
        return _arr(be, [True, False] if spec == "bool" else [1, 2], spec)

    out = op(operand(left), operand(right))
    assert be.dtype_name(out.dtype) == (default if want == "default" else want)
    assert out.backend is be


def test_matmul_of_float32_and_float64_is_float64(backend: Any) -> None:
    """The Array API's rule; PyTorch raises (``expected both ... same dtype``)."""
    be = minitorch.backend.resolve(backend.name, dtype="float32", device=backend.device)
    out = _arr(be, [[1.0, 2.0]], "float32") @ _arr(be, [[1.0], [2.0]], "float64")
    assert be.dtype_name(out.dtype) == "float64"
    assert float(out.sum()) == 5.0


INTEGERS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("left", INTEGERS)
def test_integer_promotion_is_the_array_apis_on_every_backend(backend: Any, left: str) -> None:
    """Every pair of integer dtypes promotes as array-api-strict's result_type (the
    standard's table: uint8 with int8 is int16, uint32 with int64 int64), on every
    backend: torch refused mixes with uint16, uint32 and uint64 ("Promotion for uint16,
    uint32, uint64 types is not supported"). uint64 with a signed integer, which the
    standard leaves undefined (NumPy made float64), is an OpError saying to convert.
    Checked on the casts minitorch makes before the op (torch has few kernels for
    uint16-uint64), and on concat, which promotes by the same table."""
    strict = pytest.importorskip("array_api_strict")
    for right in INTEGERS:
        x = minitorch.tensor(np.array([1, 2], dtype=left))
        y = minitorch.tensor(np.array([3, 4], dtype=right))
        try:
            want = str(strict.result_type(getattr(strict, left), getattr(strict, right)))
        except TypeError:
            with pytest.raises(minitorch.OpError, match="uint64 and a signed integer"):
                minitorch.add(x, y)
            continue
        want = want.rsplit(".", 1)[-1]
        cast = promote(backend, [x.data, y.data], 0, False)
        assert [backend.dtype_name(c.dtype) for c in cast] == [want, want], (left, right)
        if backend.name != "torch" or not {left, right} & {"uint16", "uint32", "uint64"}:
            both = minitorch.concat([x, y])
            assert backend.dtype_name(both.dtype) == want, (left, right)
            np.testing.assert_array_equal(both.numpy(), [1, 2, 3, 4])


OUT_OF_RANGE: dict[str, Callable[[Any, int], Any]] = {
    "add": lambda x, n: x + n,
    "rsub": lambda x, n: n - x,
    "mul": lambda x, n: x * n,
    "maximum": lambda x, n: minitorch.maximum(x, n),
    "minimum": lambda x, n: minitorch.minimum(n, x),
    "where": lambda x, n: minitorch.where(x > 1, x, n),
}


@pytest.mark.parametrize("name", OUT_OF_RANGE)
def test_a_python_int_the_tensors_integer_dtype_cannot_hold_is_refused(
    backend: Any, name: str
) -> None:
    """int8 + 300, maximum(int8, 300), where(c, int8, 1000), uint8 + (-1): an OpError
    naming the int and the dtype's range, as NumPy 2 and array-api-strict refuse them;
    torch and JAX wrapped the int silently (maximum of an int8 tensor and 300 was 44 on
    every backend). (A comparison answers instead: the next test.) What fits gives
    NumPy's values."""
    f = OUT_OF_RANGE[name]
    a = np.array([1, 2, 3], dtype=np.int8)
    x = minitorch.tensor(a)
    with pytest.raises(minitorch.OpError, match=r"the Python int 300 does not fit in int8"):
        f(x, 300)
    with pytest.raises(OverflowError):  # NumPy 2's own refusal
        f(a, 300) if name not in ("maximum", "minimum", "where") else np.int8(300)
    u = minitorch.tensor(a.astype(np.uint8))
    with pytest.raises(minitorch.OpError, match=r"the Python int -1 does not fit in uint8"):
        f(u, -1)
    ref = {"maximum": np.maximum, "minimum": lambda a, n: np.minimum(n, a)}
    want = (
        ref[name](a, 100)
        if name in ref
        else np.where(a > 1, a, np.int8(100))
        if name == "where"
        else f(a, 100)
    )
    got = f(x, 100)
    assert got.numpy().dtype == want.dtype
    np.testing.assert_array_equal(got.numpy(), want)


COMPARISONS = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "bool"])
@pytest.mark.parametrize("symbol", list(COMPARISONS))
def test_a_comparison_with_a_python_int_beyond_the_dtype_answers_as_numpy(
    backend: Any, symbol: str, dtype: str
) -> None:
    """``int8_x == 300`` is all False, ``int8_x < 300`` all True, ``uint8_x > -1`` all
    True, on both sides of the operator and with ints beyond int64, as NumPy 2 and torch
    compare Python ints exactly (array-api-strict refused, torch and JAX wrapped 300 to
    44 before comparing). Values inside the range compare as NumPy does."""
    cmp = COMPARISONS[symbol]
    info = np.iinfo(dtype) if dtype != "bool" else np.iinfo(np.uint8)
    a = np.array([info.min, 0, 1, info.max], dtype=np.int64).astype(dtype)
    x = minitorch.tensor(a)
    assert x.numpy().dtype == a.dtype
    numbers = [info.max + 1, info.min - 1, 300, -300, 2**70, -(2**70), 1, 0]
    for n in numbers:
        for got, want in (
            (cmp(x, n), cmp(a.astype(object), n)),  # exact Python comparisons, elementwise
            (cmp(n, x), cmp(n, a.astype(object))),
        ):
            assert got.numpy().dtype == np.bool_, (symbol, n)
            np.testing.assert_array_equal(got.numpy(), np.asarray(want, dtype=bool), (symbol, n))
    named = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}[symbol]
    np.testing.assert_array_equal(
        getattr(minitorch, named)(x, 300).numpy(), np.asarray(cmp(a.astype(object), 300), bool)
    )
