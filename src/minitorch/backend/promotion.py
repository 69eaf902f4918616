"""Type promotion: one rule for every backend (NumPy, torch, strict and JAX disagree).

The operands of the arithmetic ops (``+ - * / **``, ``maximum``, ``minimum``, the
comparisons, ``where``'s values, ``matmul``) are cast to one dtype before the op runs:

===============================  ==========================  ============================
operands                         result                      rule from
===============================  ==========================  ============================
float32 and float64 (0-d too)    float64                     Array API (PyTorch: 0-d
                                                             float64 gives float32)
int32 and int64                  int64                       Array API
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

from typing import TYPE_CHECKING, Any

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


def promote(be: Backend, datas: list[Any], start: int, divide: bool) -> list[Any]:
    """``datas`` with the arrays from ``start`` on cast to their common dtype (the table
    above); the same list when they already share one floating-point dtype (the common
    case, checked first and cheaply: this runs on every arithmetic op)."""
    first = None
    for i in range(start, len(datas)):
        d = datas[i]
        if type(d) in _NUMBERS:
            if type(d) is bool:  # True with a non-bool tensor: 1 (see _cast)
                return _cast(be, datas, start, divide)
            continue
        dt = d.dtype
        if first is None:
            if dt not in be.floating:
                return _cast(be, datas, start, divide)
            first = dt
        elif dt is not first and dt != first:
            return _cast(be, datas, start, divide)
    return datas


def _cast(be: Backend, datas: list[Any], start: int, divide: bool) -> list[Any]:
    xp = be.xp
    arrays = [d for d in datas[start:] if type(d) not in _NUMBERS]
    if not arrays:
        return datas
    kinds = [_kind(xp, a.dtype) for a in arrays]
    top = max(kinds)
    if top > 0 and any(type(d) is bool for d in datas[start:]):
        # `int_tensor * True`: the bool as the int 1, which every backend takes (the
        # Array API and array-api-strict take a Python bool only with bool arrays)
        datas = [int(d) if i >= start and type(d) is bool else d for i, d in enumerate(datas)]
    if top == 3:
        return datas
    numbers = [d for d in datas[start:] if type(d) in _NUMBERS]
    if top == 2:
        floats = [a.dtype for a, k in zip(arrays, kinds, strict=True) if k == 2]
        # the widest (float16 with float32: float32, whichever comes first)
        target = max(floats, key=lambda d: xp.finfo(d).bits)
    elif divide or any(type(n) is float for n in numbers):
        target = be.dtype
    elif top == 1:
        ints = [a.dtype for a, k in zip(arrays, kinds, strict=True) if k == 1]
        if all(i == ints[0] for i in ints):
            target = ints[0]
        elif all(xp.iinfo(i).min < 0 for i in ints):
            # int32 with int64: int64 (the Array API), where torch would count a 0-d
            # int64 tensor as a number and wrap the result in int32
            target = max(ints, key=lambda d: xp.iinfo(d).bits)
        else:  # signed with unsigned: left to the backend
            return datas
    elif any(type(n) is int for n in numbers):
        target = be.dtypes["int64"]
    else:
        return datas
    return [
        d if i < start or type(d) in _NUMBERS or d.dtype == target else xp.astype(d, target)
        for i, d in enumerate(datas)
    ]
