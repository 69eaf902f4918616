"""Type promotion: one table on every backend (docs/semantics.md), held against the
Array API where it defines the result and PyTorch where it does not."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import minitorch


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
