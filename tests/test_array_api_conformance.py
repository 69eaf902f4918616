"""minitorch's namespace against array-api-strict, name by name, on hypothesis inputs.

Every name of array-api-strict's main namespace (its ``__all__``: the Array API 2024.12
standard, plus a few strict-only helpers listed in ``NOT_STANDARD``) is a parameter, so
a name minitorch lacks fails. Functions are called on inputs drawn with
``hypothesis.extra.array_api`` for array-api-strict; the same arrays, as minitorch
Tensors of the backend under test, go through minitorch's namespace, and the results
must agree: values (NaN-aware; exact for integers and booleans, a tight tolerance for
floats), dtypes and shapes. Functions whose results cannot be compared value by value
(``empty``; ``unique_*`` as sets; ``__array_namespace_info__``) get their own checks,
and so do the errors the standard requires.

It runs on the numpy and array_api_strict backends (the others skip: their libraries
round differently, which the per-backend op tests cover against PyTorch).
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch.array_api import namespace

strict = pytest.importorskip("array_api_strict")
hypothesis = pytest.importorskip("hypothesis")
from helpers import STANDARD_DTYPES  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra.array_api import make_strategies_namespace  # noqa: E402

pytestmark = pytest.mark.conformance

xps = make_strategies_namespace(strict, api_version="2024.12")
SETTINGS = settings(
    max_examples=30,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    database=None,
)

# names in array-api-strict's __all__ that are not the standard's
NOT_STANDARD = {
    "ArrayAPIStrictFlags",
    "Device",
    "__version__",
    "get_array_api_strict_flags",
    "reset_array_api_strict_flags",
    "set_array_api_strict_flags",
}
DTYPES = list(STANDARD_DTYPES)
CONSTANTS = {"e": math.e, "pi": math.pi, "inf": math.inf, "nan": math.nan, "newaxis": None}
STANDARD = sorted(set(strict.__all__) - NOT_STANDARD)

SHAPES = xps.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
NONEMPTY = xps.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)


@pytest.fixture
def ns(backend: Any) -> Any:
    if backend.name not in ("numpy", "array_api_strict"):
        pytest.skip(
            f"{backend.name}: compared with array-api-strict (NumPy) only on the numpy and "
            f"array_api_strict backends; {backend.name} rounds differently"
        )
    return namespace(backend)


# ---------------------------------------------------------------- conversion, comparison
def _to_mt(ns: Any, a: Any) -> Any:
    """Strict arrays (also inside lists, tuples and dicts) as Tensors of ``ns``."""
    if isinstance(a, StrictArray):
        return ns.asarray(np.asarray(a))
    if isinstance(a, list | tuple):
        return type(a)(_to_mt(ns, v) for v in a)
    if isinstance(a, dict):
        return {k: _to_mt(ns, v) for k, v in a.items()}
    if isinstance(a, StrictDType):
        return getattr(ns, STRICT_DTYPES[a])
    return a


STRICT_DTYPES = {getattr(strict, n): n for n in DTYPES}
StrictArray = type(strict.asarray(0))
StrictDType = type(strict.int8)


def _dtype_name(dtype: Any) -> str:
    found = re.search(r"bool|u?int\d+|float\d+|complex\d+", str(dtype))
    assert found is not None, dtype
    return found.group(0)


def _host(ns: Any, a: Any) -> np.ndarray:
    assert isinstance(a, minitorch.Tensor), f"expected a minitorch Tensor, got {type(a)}"
    assert a.backend.name == ns.backend.name
    return np.asarray(ns.backend.to_numpy(a.data))


def _same(name: str, ns: Any, got: Any, want: Any) -> None:
    """``got`` (minitorch) equals ``want`` (strict): dtype, shape, values."""
    if isinstance(want, tuple | list):
        assert isinstance(got, tuple | list), f"{name}: {type(got)} for a {type(want)}"
        assert len(got) == len(want), f"{name}: {len(got)} results for {len(want)}"
        if hasattr(want, "_fields"):
            assert got._fields == want._fields, name
        for g, w in zip(got, want, strict=True):
            _same(name, ns, g, w)
        return
    if hasattr(want, "bits"):  # finfo / iinfo: the standard's fields
        fields = ("bits", "eps", "max", "min", "smallest_normal", "dtype")
        for f in (f for f in fields if hasattr(want, f)):
            _same(f"{name}.{f}", ns, getattr(got, f), getattr(want, f))
        return
    if isinstance(want, StrictDType):
        assert got == getattr(ns, STRICT_DTYPES[want]), f"{name}: {got!r} for {want!r}"
        return
    if not isinstance(want, StrictArray):
        assert type(got) is type(want), f"{name}: {got!r} for {want!r}"
        assert got == want or (got != got and want != want), f"{name}: {got!r} != {want!r}"
        return
    w = np.asarray(want)
    if name == "arange" and not isinstance(got, minitorch.Tensor):
        # documented: arange gives a backend array (VJPs build index arrays with it)
        got = ns.asarray(got)
    g = _host(ns, got)
    assert g.dtype == w.dtype, f"{name}: dtype {g.dtype}, strict gives {w.dtype}"
    assert g.shape == w.shape, f"{name}: shape {g.shape}, strict gives {w.shape}"
    if w.dtype.kind in "fc":
        tol = 1e-5 if w.dtype in (np.float32, np.complex64) else 1e-12
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True, err_msg=name)
    else:
        np.testing.assert_array_equal(g, w, err_msg=name)


def _compare(ns: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Call ``name`` on strict and on minitorch; when strict raises (an input outside
    what the standard specifies) the example is dropped."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            want = getattr(strict, name)(*args, **kwargs)
        except Exception:
            hypothesis.reject()
        got = getattr(ns, name)(*_to_mt(ns, args), **_to_mt(ns, kwargs))
    _same(name, ns, got, want)


# ---------------------------------------------------------------- input strategies
def arrays(dtypes: Any, shape: Any = SHAPES, **kw: Any) -> Any:
    return xps.arrays(dtype=dtypes, shape=shape, **kw)


_MODERATE = {
    "f": {"min_value": -100, "max_value": 100, "allow_nan": False},
    "c": {"allow_nan": False, "allow_infinity": False},
}


def _moderate(dtype: Any, shape: Any) -> Any:
    """Arrays of moderate finite values: sums of products (matmul, vecdot, tensordot)
    overflow in an order the standard leaves open, so only real dtypes and moderate
    values are compared there."""
    kind = np.dtype(str(dtype).rsplit(".", 1)[-1]).kind
    return xps.arrays(dtype=dtype, shape=shape, elements=_MODERATE.get(kind))


def _finite(dtypes: Any) -> Any:
    """Arrays of moderate finite values (reductions: an order of summation changes
    nothing at this size)."""
    return dtypes.flatmap(
        lambda d: xps.arrays(
            dtype=d,
            shape=SHAPES,
            elements=_MODERATE.get(np.dtype(str(d).rsplit(".", 1)[-1]).kind),
        )
    )


Draw = Callable[[Any], tuple[tuple[Any, ...], dict[str, Any]]]
CASES: dict[str, Draw] = {}

NUMERIC = xps.numeric_dtypes()
REAL = xps.real_dtypes()
REAL_FLOATING = xps.floating_dtypes()
FLOATING = REAL_FLOATING | xps.complex_dtypes()
INTEGER = xps.integer_dtypes() | xps.unsigned_integer_dtypes()
INT_OR_BOOL = INTEGER | xps.boolean_dtypes()
ALL = xps.scalar_dtypes()
BOOL = xps.boolean_dtypes()


def _unary(dtypes: Any, finite: bool = False) -> Draw:
    def draw(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        x = data.draw(_finite(dtypes) if finite else arrays(dtypes))
        return (x,), {}

    return draw


def _binary(dtypes: Any) -> Draw:
    """Two arrays of one dtype and broadcastable shapes, or an array and a Python
    scalar of its kind (either side)."""

    def draw(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        dtype = data.draw(dtypes)
        shapes = data.draw(xps.mutually_broadcastable_shapes(2, max_dims=3, max_side=3))
        x1 = data.draw(arrays(st.just(dtype), shapes.input_shapes[0]))
        x2 = data.draw(arrays(st.just(dtype), shapes.input_shapes[1]))
        side = data.draw(st.sampled_from(["arrays", "scalar right", "scalar left"]))
        if side != "arrays" and x2.ndim == 0:
            kind = np.dtype(str(dtype).rsplit(".", 1)[-1]).kind
            python = {"b": bool, "i": int, "u": int, "f": float, "c": complex}[kind]
            value = python(np.asarray(x2).item())
            return ((x1, value) if side == "scalar right" else (value, x1)), {}
        return (x1, x2), {}

    return draw


for _n in ("abs", "negative", "positive", "sign", "square", "conj", "real", "imag"):
    CASES[_n] = _unary(NUMERIC)
for _n in [
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "cos",
    "cosh",
    "exp",
    "expm1",
    "log",
    "log1p",
    "log2",
    "log10",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "reciprocal",
]:
    CASES[_n] = _unary(FLOATING)
for _n in ("ceil", "floor", "trunc", "round"):
    CASES[_n] = _unary(REAL)
CASES["signbit"] = _unary(REAL_FLOATING)
for _n in ("isfinite", "isinf", "isnan"):
    CASES[_n] = _unary(NUMERIC)
CASES["logical_not"] = _unary(BOOL)
CASES["bitwise_invert"] = _unary(INT_OR_BOOL)
for _n in ("add", "subtract", "multiply", "equal", "not_equal"):
    CASES[_n] = _binary(NUMERIC)
CASES["divide"] = _binary(FLOATING)
CASES["pow"] = _binary(FLOATING)
for _n in ("less", "less_equal", "greater", "greater_equal", "maximum", "minimum"):
    CASES[_n] = _binary(REAL)
for _n in ("floor_divide", "remainder"):
    CASES[_n] = _binary(REAL)
for _n in ("atan2", "copysign", "hypot", "nextafter", "logaddexp"):
    CASES[_n] = _binary(REAL_FLOATING)
for _n in ("logical_and", "logical_or", "logical_xor"):
    CASES[_n] = _binary(BOOL)
for _n in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    CASES[_n] = _binary(INT_OR_BOOL)


def _shift(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    dtype = data.draw(INTEGER)
    x1 = data.draw(arrays(st.just(dtype)))
    bits = np.iinfo(str(dtype).rsplit(".", 1)[-1]).bits
    x2 = data.draw(
        arrays(st.just(dtype), x1.shape, elements={"min_value": 0, "max_value": bits - 1})
    )
    return (x1, x2), {}


CASES["bitwise_left_shift"] = CASES["bitwise_right_shift"] = _shift


# reductions and statistics
def _reduce(dtypes: Any, *extra: tuple[str, Any], one_axis: bool = False) -> Draw:
    def draw(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        x = data.draw(_finite(dtypes))
        if one_axis:
            axis = data.draw(st.none() | st.integers(-x.ndim, x.ndim - 1)) if x.ndim else None
        else:
            axis = data.draw(st.none() | xps.valid_tuple_axes(x.ndim))
        kw = {"axis": axis, "keepdims": data.draw(st.booleans())}
        for name, strategy in extra:
            kw[name] = data.draw(strategy)
        return (x,), kw

    return draw


CASES["sum"] = _reduce(NUMERIC)
# real only: a product tree and NumPy's loop overflow complex values differently
CASES["prod"] = _reduce(REAL)
CASES["max"] = CASES["min"] = _reduce(REAL)
CASES["mean"] = _reduce(FLOATING)
CASES["std"] = CASES["var"] = _reduce(REAL_FLOATING, ("correction", st.sampled_from([0, 1])))
CASES["all"] = CASES["any"] = _reduce(ALL)
CASES["count_nonzero"] = _reduce(ALL)
CASES["argmax"] = CASES["argmin"] = _reduce(REAL, one_axis=True)


def _cumulative(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    x = data.draw(_finite(REAL).filter(lambda a: a.ndim >= 1))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    return (x,), {"axis": axis, "include_initial": data.draw(st.booleans())}


CASES["cumulative_sum"] = CASES["cumulative_prod"] = _cumulative


def _with_x(dtypes: Any, build: Callable[[Any, Any], Any], shape: Any = SHAPES) -> Draw:
    """``build(data, x)`` -> (extra args, kwargs) after an array ``x``."""

    def draw(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        x = data.draw(arrays(dtypes, shape))
        more, kw = build(data, x)
        return (x, *more), kw

    return draw


def _axis(data: Any, x: Any) -> int:
    return int(data.draw(st.integers(-x.ndim, x.ndim - 1)))


CASES["astype"] = _with_x(ALL, lambda d, x: ((d.draw(ALL),), {}))
CASES["flip"] = _with_x(
    ALL, lambda d, x: ((), {"axis": d.draw(st.none() | xps.valid_tuple_axes(x.ndim))})
)
CASES["expand_dims"] = _with_x(
    ALL, lambda d, x: ((), {"axis": d.draw(st.integers(-x.ndim - 1, x.ndim))})
)
CASES["squeeze"] = _with_x(
    ALL,
    lambda d, x: ((), {"axis": tuple(i for i, s in enumerate(x.shape) if s == 1)}),
)
CASES["permute_dims"] = _with_x(ALL, lambda d, x: ((d.draw(st.permutations(range(x.ndim))),), {}))
CASES["moveaxis"] = _with_x(ALL, lambda d, x: ((_axis(d, x), _axis(d, x)), {}), shape=NONEMPTY)
CASES["matrix_transpose"] = _with_x(
    ALL, lambda d, x: ((), {}), shape=xps.array_shapes(min_dims=2, max_dims=3, max_side=3)
)
CASES["reshape"] = _with_x(
    ALL, lambda d, x: (((-1,),), {"copy": d.draw(st.none() | st.just(True))})
)
CASES["roll"] = _with_x(
    ALL,
    lambda d, x: (
        (
            (d.draw(st.integers(-5, 5)),),
            {"axis": d.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))},
        )
        if x.ndim
        else ((1,), {})
    ),
)
CASES["repeat"] = _with_x(
    ALL,
    lambda d, x: (
        (
            (d.draw(st.integers(0, 3)),),
            {"axis": d.draw(st.none() | st.integers(-x.ndim, x.ndim - 1))},
        )
        if x.ndim
        else ((2,), {})
    ),
)
CASES["tile"] = _with_x(
    ALL, lambda d, x: ((tuple(d.draw(st.lists(st.integers(0, 3), max_size=3))),), {})
)
CASES["unstack"] = _with_x(ALL, lambda d, x: ((), {"axis": _axis(d, x)}), shape=NONEMPTY)
CASES["diff"] = _with_x(
    REAL, lambda d, x: ((), {"axis": _axis(d, x), "n": d.draw(st.integers(0, 2))}), shape=NONEMPTY
)
CASES["tril"] = CASES["triu"] = _with_x(
    ALL,
    lambda d, x: ((), {"k": d.draw(st.integers(-3, 3))}),
    shape=xps.array_shapes(min_dims=2, max_dims=3, max_side=4),
)
CASES["clip"] = _with_x(
    REAL,
    lambda d, x: ((), {"min": np.asarray(x).min().item() if x.size else None}),
)
CASES["sort"] = _with_x(
    REAL,
    lambda d, x: ((), {"axis": _axis(d, x), "descending": d.draw(st.booleans())}),
    shape=NONEMPTY,
)
# stable=True: the order of equal keys is defined
CASES["argsort"] = _with_x(
    REAL,
    lambda d, x: ((), {"axis": _axis(d, x), "descending": d.draw(st.booleans()), "stable": True}),
    shape=NONEMPTY,
)
CASES["nonzero"] = _with_x(ALL, lambda d, x: ((), {}), shape=NONEMPTY)
CASES["unique_values"] = _with_x(REAL, lambda d, x: ((), {}))
CASES["unique_counts"] = _with_x(REAL, lambda d, x: ((), {}))
CASES["unique_inverse"] = _with_x(REAL, lambda d, x: ((), {}))
CASES["unique_all"] = _with_x(REAL, lambda d, x: ((), {}))


def _same_dtype_pair(dtypes: Any, shapes: Callable[[Any], tuple[Any, Any]]) -> Draw:
    def draw(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
        dtype = data.draw(dtypes)
        s1, s2 = shapes(data)
        return (data.draw(_moderate(dtype, s1)), data.draw(_moderate(dtype, s2))), {}

    return draw


def _matmul_shapes(data: Any) -> tuple[Any, Any]:
    n, k, m = (data.draw(st.integers(1, 3)) for _ in range(3))
    batch = data.draw(st.sampled_from([(), (2,)]))
    return (*batch, n, k), (k, m) if data.draw(st.booleans()) else (k,)


CASES["matmul"] = _same_dtype_pair(REAL, _matmul_shapes)


def _vecdot(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    dtype = data.draw(REAL)
    shape = data.draw(NONEMPTY)
    x1 = data.draw(_moderate(dtype, shape))
    x2 = data.draw(_moderate(dtype, shape[data.draw(st.integers(0, len(shape) - 1)) :]))
    return (x1, x2), {"axis": -1}


CASES["vecdot"] = _vecdot


def _tensordot(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    dtype = data.draw(REAL)
    a = data.draw(xps.array_shapes(min_dims=0, max_dims=3, max_side=3))
    axes = data.draw(st.integers(0, len(a)))
    b = (*a[len(a) - axes :], *data.draw(xps.array_shapes(min_dims=0, max_dims=2, max_side=3)))
    x1 = data.draw(_moderate(dtype, a))
    x2 = data.draw(_moderate(dtype, b))
    return (x1, x2), {"axes": axes}


CASES["tensordot"] = _tensordot


def _where(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    shapes = data.draw(xps.mutually_broadcastable_shapes(3, max_dims=3, max_side=3)).input_shapes
    dtype = data.draw(ALL)
    cond = data.draw(arrays(BOOL, shapes[0]))
    return (
        cond,
        data.draw(arrays(st.just(dtype), shapes[1])),
        data.draw(arrays(st.just(dtype), shapes[2])),
    ), {}


CASES["where"] = _where


def _stack_like(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    dtype = data.draw(ALL)
    shape = data.draw(NONEMPTY)
    xs = [data.draw(arrays(st.just(dtype), shape)) for _ in range(data.draw(st.integers(1, 3)))]
    return (xs,), {"axis": data.draw(st.integers(-len(shape), len(shape) - 1))}


CASES["concat"] = _stack_like
CASES["stack"] = _stack_like


def _broadcast(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    shapes = data.draw(xps.mutually_broadcastable_shapes(2, max_dims=3, max_side=3))
    dtype = data.draw(ALL)
    return tuple(data.draw(arrays(st.just(dtype), s)) for s in shapes.input_shapes), {}


CASES["broadcast_arrays"] = _broadcast
CASES["broadcast_to"] = lambda data: (
    lambda s: (
        (data.draw(arrays(ALL, s.input_shapes[0])), s.result_shape),
        {},
    )
)(data.draw(xps.broadcastable_shapes((2, 3), max_dims=3, max_side=3).map(lambda sh: _BS(sh))))


class _BS:
    def __init__(self, shape: tuple[int, ...]) -> None:
        self.input_shapes = (shape,)
        self.result_shape = np.broadcast_shapes(shape, (2, 3))


def _take(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    x = data.draw(arrays(ALL, NONEMPTY))
    axis = _axis(data, x)
    n = x.shape[axis]
    idx = data.draw(
        arrays(
            st.just(strict.int64),
            xps.array_shapes(min_dims=1, max_dims=1, max_side=4),
            elements={"min_value": -n, "max_value": n - 1},
        )
    )
    return (x, idx), {"axis": axis}


CASES["take"] = _take


def _take_along_axis(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    x = data.draw(arrays(ALL, NONEMPTY))
    axis = _axis(data, x)
    n = x.shape[axis]
    shape = tuple(
        data.draw(st.integers(0, 3)) if i == axis % x.ndim else s for i, s in enumerate(x.shape)
    )
    idx = data.draw(
        arrays(st.just(strict.int64), shape, elements={"min_value": -n, "max_value": n - 1})
    )
    return (x, idx), {"axis": axis}


CASES["take_along_axis"] = _take_along_axis


def _searchsorted(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    dtype = data.draw(REAL)
    x1 = strict.sort(
        data.draw(
            arrays(
                st.just(dtype),
                xps.array_shapes(min_dims=1, max_dims=1, max_side=5),
                elements={"allow_nan": False} if "float" in str(dtype) else None,
            )
        )
    )
    x2 = data.draw(
        arrays(
            st.just(dtype), SHAPES, elements={"allow_nan": False} if "float" in str(dtype) else None
        )
    )
    return (x1, x2), {"side": data.draw(st.sampled_from(["left", "right"]))}


CASES["searchsorted"] = _searchsorted


def _isin(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    # invert=False only: array-api-strict 2.6 ignores invert (checked by hand below)
    dtype = data.draw(INTEGER)
    return (data.draw(arrays(st.just(dtype))), data.draw(arrays(st.just(dtype)))), {}


CASES["isin"] = _isin


def _meshgrid(data: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    dtype = data.draw(ALL)
    one_d = xps.array_shapes(min_dims=1, max_dims=1, max_side=3)
    xs = [data.draw(arrays(st.just(dtype), one_d)) for _ in range(data.draw(st.integers(1, 3)))]
    return tuple(xs), {"indexing": data.draw(st.sampled_from(["xy", "ij"]))}


CASES["meshgrid"] = _meshgrid

# creation: no array input
_SHAPE_ARG = st.integers(0, 3) | st.lists(st.integers(0, 3), max_size=3).map(tuple)
CASES["zeros"] = CASES["ones"] = lambda d: (
    (d.draw(_SHAPE_ARG),),
    {"dtype": d.draw(st.none() | ALL)},
)
CASES["full"] = lambda d: (
    (
        d.draw(_SHAPE_ARG),
        d.draw(
            st.booleans()
            | st.integers(-5, 5)
            | st.floats(-5, 5)
            | st.complex_numbers(max_magnitude=5)
        ),
    ),
    {},
)
CASES["eye"] = lambda d: (
    (d.draw(st.integers(0, 4)), d.draw(st.none() | st.integers(0, 4))),
    {"k": d.draw(st.integers(-4, 4)), "dtype": d.draw(st.none() | ALL)},
)
CASES["linspace"] = lambda d: (
    (d.draw(st.floats(-10, 10)), d.draw(st.floats(-10, 10)), d.draw(st.integers(0, 5))),
    {"endpoint": d.draw(st.booleans())},
)
CASES["arange"] = lambda d: (
    (
        d.draw(st.integers(-5, 5) | st.floats(-5, 5)),
        d.draw(st.integers(-5, 5) | st.floats(-5, 5)),
        d.draw(st.sampled_from([1, 2, -1, 0.5])),
    ),
    {},
)
CASES["asarray"] = lambda d: (
    (
        d.draw(
            st.booleans()
            | st.integers(-5, 5)
            | st.floats(-5, 5)
            | st.lists(st.integers(-5, 5), max_size=3)
            | st.lists(st.floats(-5, 5), max_size=3)
        ),
    ),
    {},
)
for _n in ("zeros_like", "ones_like"):
    CASES[_n] = _with_x(ALL, lambda d, x: ((), {"dtype": d.draw(st.none() | ALL)}))
CASES["full_like"] = _with_x(xps.integer_dtypes(), lambda d, x: ((d.draw(st.integers(-5, 5)),), {}))
CASES["from_dlpack"] = _with_x(ALL, lambda d, x: ((), {}))
# dtype functions
CASES["result_type"] = lambda d: (tuple(d.draw(st.lists(ALL, min_size=1, max_size=3))), {})
CASES["can_cast"] = lambda d: ((d.draw(ALL), d.draw(ALL)), {})
CASES["isdtype"] = lambda d: (
    (
        d.draw(ALL),
        d.draw(
            st.sampled_from(
                [
                    "bool",
                    "signed integer",
                    "unsigned integer",
                    "integral",
                    "real floating",
                    "complex floating",
                    "numeric",
                ]
            )
        ),
    ),
    {},
)
CASES["finfo"] = lambda d: ((d.draw(FLOATING),), {})
CASES["iinfo"] = lambda d: ((d.draw(INTEGER),), {})
CASES["broadcast_shapes"] = lambda d: (
    tuple(d.draw(xps.mutually_broadcastable_shapes(2, max_dims=3)).input_shapes),
    {},
)


# ---------------------------------------------------------------- the names
# compared by hand below
OWN_CHECKS = {"empty", "empty_like", "__array_namespace_info__", "__array_api_version__"}
# optional extensions: linalg is provided (tested in tests/test_linalg*.py); fft is not
EXTENSIONS = {"linalg", "fft"}


def test_every_standard_name_is_classified() -> None:
    """Each name of the standard is a dtype, a constant, an extension, compared in
    CASES, or checked by hand: a new name in array-api-strict fails here first."""
    known = set(DTYPES) | set(CONSTANTS) | set(CASES) | OWN_CHECKS | EXTENSIONS
    assert set(STANDARD) - known == set()


@pytest.mark.parametrize("name", STANDARD)
def test_every_standard_name_exists(name: str, ns: Any) -> None:
    if name == "fft":
        assert not hasattr(ns, "fft")  # not provided, and said so in the Info docstring
        return
    assert hasattr(ns, name), f"minitorch's namespace has no {name}"


@pytest.mark.parametrize("name", DTYPES)
def test_dtypes_are_the_backends(name: str, ns: Any) -> None:
    dtype = getattr(ns, name)
    assert ns.asarray(np.zeros(2, dtype=name)).dtype == dtype
    assert ns.isdtype(dtype, "bool" if name == "bool" else "numeric")


@pytest.mark.parametrize("name", sorted(CONSTANTS))
def test_constants(name: str, ns: Any) -> None:
    value = getattr(ns, name)
    want = CONSTANTS[name]
    if name == "nan":
        assert isinstance(value, float) and value != value
    elif name == "newaxis":
        assert value is None
    else:
        assert isinstance(value, float) and value == want


@pytest.mark.parametrize("name", sorted(CASES))
def test_against_array_api_strict(name: str, ns: Any) -> None:
    draw = CASES[name]

    @SETTINGS
    @given(data=st.data())
    def run(data: Any) -> None:
        args, kwargs = draw(data)
        _compare(ns, name, args, kwargs)

    run()


# ---------------------------------------------------------------- checks by hand
@pytest.mark.parametrize("name", ["empty", "empty_like"])
def test_empty_gives_shape_and_dtype(name: str, ns: Any) -> None:
    x = ns.asarray(np.zeros((2, 3), dtype=np.int16))
    out = ns.empty((4, 0, 2)) if name == "empty" else ns.empty_like(x)
    assert isinstance(out, minitorch.Tensor)
    assert out.shape == ((4, 0, 2) if name == "empty" else (2, 3))
    assert out.dtype == (ns.float64 if name == "empty" else ns.int16)
    assert ns.empty(3, dtype=ns.uint8).dtype == ns.uint8


def test_info_matches_strict_and_says_what_is_not_provided(ns: Any) -> None:
    info = ns.__array_namespace_info__()
    want = strict.__array_namespace_info__()
    assert set(info.capabilities()) == set(want.capabilities())
    assert info.capabilities()["boolean indexing"] is True
    names = {k: _dtype_name(v) for k, v in want.default_dtypes().items()}
    got = {k: _dtype_name(v) for k, v in info.default_dtypes().items()}
    assert got == names  # float64 backend: float64, complex128, int64, int64
    for kind in (None, "bool", "integral", "real floating", "complex floating", "numeric"):
        assert set(info.dtypes(kind=kind)) == set(want.dtypes(kind=kind)), kind
    doc = type(info).__doc__ or ""
    assert "fft" in doc and "not provided" in doc
    assert "complex" in doc
    assert ns.__array_api_version__ == "2024.12"


def test_isin_invert(ns: Any) -> None:
    x1, x2 = ns.asarray([1, 2, 3, 4]), ns.asarray([2, 4, 9])
    assert ns.isin(x1, x2).tolist() == [False, True, False, True]
    assert ns.isin(x1, x2, invert=True).tolist() == [True, False, True, False]


def test_sort_is_stable_and_unique_all_indices_are_first(ns: Any) -> None:
    x = ns.asarray([3.0, 1.0, 3.0, 1.0, 2.0, 1.0])
    assert ns.argsort(x, stable=True).tolist() == [1, 3, 5, 4, 0, 2]
    assert ns.argsort(x, stable=True, descending=True).tolist() == [0, 2, 4, 1, 3, 5]
    u = ns.unique_all(x)
    assert u.values.tolist() == [1.0, 2.0, 3.0]
    assert u.indices.tolist() == [1, 4, 0]
    assert u.counts.tolist() == [3, 1, 2]
    assert u.inverse_indices.tolist() == [2, 0, 2, 0, 1, 0]


def test_errors_the_standard_requires(ns: Any) -> None:
    x = ns.asarray(np.zeros((2, 3)))
    with pytest.raises(IndexError, match="expand_dims: axis 3 is out of range"):
        ns.expand_dims(x, axis=3)
    with pytest.raises(IndexError, match="getitem"):
        x[ns.asarray(np.ones((3,), dtype=bool))]  # a mask of the wrong shape
    with pytest.raises(TypeError, match="__index__"):
        [0, 1][ns.asarray(1.0)]
    c = ns.asarray(np.array(1 + 2j))
    with pytest.raises(TypeError, match="complex tensor"):
        float(c)
    with pytest.raises(TypeError, match="complex tensor"):
        int(c)
    assert complex(c) == 1 + 2j
    with pytest.raises(ValueError):
        int(ns.asarray(np.array(np.nan)))
    with pytest.raises(OverflowError):
        int(ns.asarray(np.array(np.inf)))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(x)
    assert bool(ns.asarray(np.array(np.nan))) is True


def test_complex_tensors_compute_but_never_carry_gradients(ns: Any) -> None:
    c = ns.asarray(np.array([1 + 2j, -3j]))
    assert c.dtype == ns.complex128
    assert ns.real(c).tolist() == [1.0, 0.0] and ns.imag(c).tolist() == [2.0, -3.0]
    assert ns.conj(c).tolist() == [1 - 2j, 3j]
    assert (c * 2j).dtype == ns.complex128
    with pytest.raises(RuntimeError, match="complex autograd is not supported"):
        minitorch.Tensor(np.array([1j]), requires_grad=True)
    x = minitorch.tensor([1.0, 2.0], requires_grad=True).to(ns.backend.name)
    with pytest.raises(minitorch.OpError, match="complex autograd is not supported"):
        _ = x * c
    with minitorch.no_grad():
        assert (x * c).tolist() == [1 + 2j, -6j]
