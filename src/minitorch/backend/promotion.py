"""Type promotion: one rule for every backend (NumPy, torch, strict and JAX disagree).

The operands of the arithmetic ops (``+ - * / **``, ``maximum``, ``minimum``, the
comparisons, ``where``'s values, ``matmul``) are cast to one dtype before the op runs:

===============================  ==========================  ============================
operands                         result                      rule from
===============================  ==========================  ============================
float32 and float64 (0-d too)    float64                     Array API (PyTorch: 0-d
                                                             float64 gives float32)
int32 and int64                  int64                       Array API
uint8 and int8, uint32 and int8  int16, int64 (the narrowest Array API (torch has no
                                 signed int holding both)    promotion for uint16-64)
uint64 and a signed int          refused (TypeError)         Array API: undefined
float and int/bool array         the float's dtype           PyTorch (Array API: undefined)
int and bool array               the int's dtype             PyTorch (Array API: undefined)
int/bool array and Python float  the default float dtype     PyTorch (Array API: undefined)
bool array and Python int        int64                       PyTorch (Array API: undefined)
int / int (true division)        the default float dtype     PyTorch (Array API: undefined)
array and Python number          the array's dtype           Array API
===============================  ==========================  ============================

The default float dtype is the backend's (``set_backend(..., dtype=)``; float32 unless
set). ``float32 @ float64`` follows the Array API (float64), where PyTorch raises.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from ._fallback import dtype_name_of, int_range

if TYPE_CHECKING:
    from . import Backend

_KIND = {"bool": 0, "integral": 1, "real floating": 2}


def _kind(xp: Any, dtype: Any) -> int:
    for name, rank in _KIND.items():
        if xp.isdtype(dtype, name):
            return rank
    return 3  # complex and others: left to the backend


#: the Python number types an op may take for a tensor
NUMBERS = _NUMBERS = frozenset({float, int, bool})


def promote(
    be: Backend, datas: list[Any], start: int, divide: bool, compares: bool = False
) -> list[Any]:
    """``datas`` with the arrays from ``start`` on cast to their common dtype (the table
    above); the same list when they already share one floating-point dtype (the common
    case, checked first and cheaply: this runs on every arithmetic op). A Python int
    that an integer result dtype cannot hold is an OverflowError, except for a comparison
    (``compares``), which answers it."""
    first = None
    for i in range(start, len(datas)):
        d = datas[i]
        if type(d) in _NUMBERS:
            if type(d) is bool:  # True with a non-bool tensor: 1 (see _cast)
                return _cast(be, datas, start, divide, compares)
            continue
        dt = d.dtype
        if first is None:
            if dt not in be.floating:
                return _cast(be, datas, start, divide, compares)
            first = dt
        elif dt is not first and dt != first:
            return _cast(be, datas, start, divide, compares)
    return datas


def _cast(be: Backend, datas: list[Any], start: int, divide: bool, compares: bool) -> list[Any]:
    xp = be.xp
    arrays = [d for d in datas[start:] if type(d) not in _NUMBERS]
    if not arrays:
        return datas
    kinds = [_kind(xp, a.dtype) for a in arrays]
    top = max(kinds)
    numbers = [d for d in datas[start:] if type(d) in _NUMBERS]
    if top == 3:
        target = None  # complex: the library promotes
    elif top == 2:
        floats = [a.dtype for a, k in zip(arrays, kinds, strict=True) if k == 2]
        # the widest (float16 with float32: float32, whichever comes first)
        target = max(floats, key=lambda d: xp.finfo(d).bits)
    elif divide or any(type(n) is float for n in numbers):
        target = be.dtype
    elif top == 1:
        ints = [a.dtype for a, k in zip(arrays, kinds, strict=True) if k == 1]
        target = ints[0] if all(i == ints[0] for i in ints) else _integer_target(be, ints)
    elif any(type(n) is int for n in numbers):
        target = be.dtypes["int64"]
    else:
        return datas  # booleans only: a Python bool stays one
    if any(type(n) is bool for n in numbers):
        # `int_tensor * True`, `bool_tensor / True`: the bool as the int 1, which every
        # backend takes (the Array API and array-api-strict take a Python bool only with
        # bool arrays)
        datas = [int(d) if i >= start and type(d) is bool else d for i, d in enumerate(datas)]
    if target is None:
        return datas
    if numbers and not compares and xp.isdtype(target, "integral"):
        _check_ints_fit(be, target, numbers)
    return [
        d if i < start or type(d) in _NUMBERS or d.dtype == target else xp.astype(d, target)
        for i, d in enumerate(datas)
    ]


def _integer_target(be: Backend, ints: list[Any]) -> Any:
    """The Array API's common dtype of integer dtypes: the widest signed ones or the
    widest unsigned ones; a signed with an unsigned the narrowest signed integer that
    holds both (uint8 with int8: int16; uint32 with int64: int64). int32 with int64 is
    int64, where torch would count a 0-d int64 tensor as a number and give int32; a
    mix of unsigned and signed is computed here, not left to the library (torch has
    no promotion for uint16, uint32 and uint64). uint64 with a signed integer is a
    TypeError (the standard leaves it undefined; NumPy made float64, torch and
    array-api-strict refuse)."""
    xp = be.xp
    signed = max((xp.iinfo(i).bits for i in ints if xp.iinfo(i).min < 0), default=0)
    unsigned = max((xp.iinfo(i).bits for i in ints if xp.iinfo(i).min == 0), default=0)
    if not unsigned:
        return be.named[f"int{signed}"]
    if not signed:
        return be.named[f"uint{unsigned}"]
    if unsigned == 64:
        names = ", ".join(sorted({be.dtype_name(i) for i in ints}))
        raise TypeError(
            f"{names}: uint64 and a signed integer dtype have no common integer dtype "
            f"(the Array API leaves it undefined); convert one first, e.g. "
            f"x.astype('int64') or x.astype('float64')"
        )
    return be.named[f"int{max(signed, 2 * unsigned)}"]


def _check_ints_fit(be: Backend, target: Any, numbers: list[Any]) -> None:
    """Refuse a Python int operand that the integer dtype of the result cannot hold
    (``int8_tensor + 300``, ``where(c, x, 1000)``), as NumPy 2 and array-api-strict
    refuse it: torch and JAX wrapped it silently. The Array API leaves it unspecified."""
    for n in numbers:
        if type(n) is int:
            check_int_fits(be, target, n)


def check_int_fits(be: Backend, dtype: Any, n: int) -> None:
    """An OverflowError where the integer ``dtype`` cannot hold the Python int ``n``
    that meets a tensor of it (the op adds its name)."""
    try:
        fit_number(be.xp, dtype, n)
    except OverflowError as exc:
        raise OverflowError(
            f"the Python int {exc}, the dtype of the tensor it meets; convert the tensor to "
            f"a wider dtype first (x.astype('int64'))"
        ) from None


def fit_number(xp: Any, dtype: Any, value: Any) -> bool | int | float | complex:
    """The Python number a tensor of ``dtype`` holds for the number ``value`` (bool, int,
    float or complex, NumPy's scalars too), as NumPy and PyTorch write one: a float into
    an integer dtype truncated toward zero (a float within the dtype's range: 127.5 does
    not fit in int8, as PyTorch says), True into a number dtype 1, a real number into a
    complex dtype with imaginary part 0. One rule for the fill value of ``full``,
    ``masked_fill``'s value, ``x[key] = value`` and a Python int meeting an integer
    tensor.

    What the dtype cannot hold raises, where the libraries wrapped it (-10000 into int8
    became -16) or overflowed it to inf: OverflowError for a number beyond the dtype's
    range (an integer dtype holds its range, a floating one the values up to its
    largest, the infinities and nan), ValueError for nan or an infinity into an integer
    dtype, TypeError for a number with an imaginary part into a real dtype. The message
    begins with the value and names the dtype; the caller says who and what to do."""
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        if xp.isdtype(dtype, "complex floating"):
            return complex(value)
        if value.imag != 0:
            raise TypeError(f"{value!r} is complex and the dtype {dtype_name_of(dtype)} is not")
        value = value.real
    if xp.isdtype(dtype, "bool"):
        return bool(value)
    if isinstance(value, bool | np.bool_):
        value = int(value)
    if xp.isdtype(dtype, "integral"):
        low, high, name = int_range(xp, dtype)
        if not isinstance(value, numbers.Integral) and not math.isfinite(value):
            raise ValueError(f"{value!r} is not a value of {name}, an integer dtype")
        # the value itself, as PyTorch checks it: 127.5 into int8 is refused, not 127
        if not low <= value <= high:
            raise OverflowError(f"{value!r} does not fit in {name} (from {low} to {high})")
        return int(value)  # toward zero
    try:
        real: float | None = float(value)
    except OverflowError:  # an int beyond every float
        real = None
    if xp.isdtype(dtype, "real floating"):
        info = xp.finfo(dtype)
        biggest = float(info.max)
        if real is None or (math.isfinite(real) and math.fabs(real) > biggest):
            name = dtype_name_of(getattr(info, "dtype", dtype))
            raise OverflowError(
                f"{value!r} does not fit in {name} (finite values up to {biggest:g} in magnitude)"
            )
        return real
    if real is None:
        raise OverflowError(f"{value!r} does not fit in {dtype_name_of(dtype)}")
    return complex(real)
