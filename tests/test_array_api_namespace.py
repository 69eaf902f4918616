"""The differentiable namespace as an Array API 2024.12 namespace: its info object, the
standard's signatures, the functions written in terms of ops (values and gradients
against PyTorch float64, values and dtypes against array-api-strict) and the Tensor as
an Array API array object."""

from __future__ import annotations

import inspect
import operator
import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import STANDARD_DTYPES, torch_f64
from helpers import tensor_f64 as _t

import minitorch
from minitorch.array_api import namespace
from minitorch.testing import assert_close

torch = pytest.importorskip("torch")
strict = pytest.importorskip("array_api_strict")

RNG = np.random.default_rng(7)
A = np.array([[0.5, -1.5, 2.0, 0.0], [1.0, 0.25, -0.75, 3.0], [-2.0, 1.25, 0.0, 0.0]])
B = RNG.uniform(-2, 2, (4, 2))
V = np.array([0.3, -1.1, 2.4, 0.7, -0.2])
W = np.array([1.5, -0.5, 2.0])


def _np(t: Any, backend: Any) -> np.ndarray:
    return np.asarray(backend.to_numpy(t.data if isinstance(t, minitorch.Tensor) else t))


def _dtype_name(dtype: Any) -> str:
    found = re.search(r"bool|u?int\d+|float\d+|complex\d+", str(dtype))
    assert found is not None, dtype
    return found.group(0)


# name -> (inputs, minitorch call (xp, *tensors), torch call (torch, *tensors),
#          array-api-strict call (strict, *arrays))
Call = Callable[..., Any]
DIFFERENTIABLE: dict[str, tuple[tuple[np.ndarray, ...], Call, Call, Call]] = {
    "prod all": (
        (A,),
        lambda xp, x: xp.prod(x),
        lambda tc, x: tc.prod(x),
        lambda s, x: s.prod(x),
    ),
    "prod axis=1 (one and two zeros)": (
        (A,),
        lambda xp, x: xp.prod(x, axis=1),
        lambda tc, x: tc.prod(x, dim=1),
        lambda s, x: s.prod(x, axis=1),
    ),
    "prod axis=0 keepdims": (
        (A,),
        lambda xp, x: xp.prod(x, axis=0, keepdims=True),
        lambda tc, x: tc.prod(x, dim=0, keepdim=True),
        lambda s, x: s.prod(x, axis=0, keepdims=True),
    ),
    "prod axis=(0, 1) of 3-d": (
        (A.reshape(3, 2, 2),),
        lambda xp, x: xp.prod(x, axis=(0, 1)),
        lambda tc, x: tc.prod(x.reshape(6, 2), dim=0),
        lambda s, x: s.prod(x, axis=(0, 1)),
    ),
    "prod over an empty axis": (
        (np.zeros((3, 0)),),
        lambda xp, x: xp.prod(x, axis=1),
        lambda tc, x: tc.prod(x, dim=1),
        lambda s, x: s.prod(x, axis=1),
    ),
    "sum dtype=float32": (
        (A,),
        lambda xp, x: xp.sum(x, axis=0, dtype=xp.float32),
        lambda tc, x: tc.sum(x, dim=0, dtype=tc.float32),
        lambda s, x: s.sum(x, axis=0, dtype=s.float32),
    ),
    "cumulative_sum axis=1": (
        (A,),
        lambda xp, x: xp.cumulative_sum(x, axis=1),
        lambda tc, x: tc.cumsum(x, dim=1),
        lambda s, x: s.cumulative_sum(x, axis=1),
    ),
    "cumulative_sum 1-d include_initial": (
        (V,),
        lambda xp, x: xp.cumulative_sum(x, include_initial=True),
        lambda tc, x: tc.cat([tc.zeros(1, dtype=x.dtype), tc.cumsum(x, dim=0)]),
        lambda s, x: s.cumulative_sum(x, include_initial=True),
    ),
    "cumulative_prod axis=1 (zeros)": (
        (A,),
        lambda xp, x: xp.cumulative_prod(x, axis=1),
        lambda tc, x: tc.cumprod(x, dim=1),
        lambda s, x: s.cumulative_prod(x, axis=1),
    ),
    "cumulative_prod axis=0 include_initial": (
        (A,),
        lambda xp, x: xp.cumulative_prod(x, axis=0, include_initial=True),
        lambda tc, x: tc.cat([tc.ones(1, 4, dtype=x.dtype), tc.cumprod(x, dim=0)]),
        lambda s, x: s.cumulative_prod(x, axis=0, include_initial=True),
    ),
    "repeat int axis=0": (
        (A,),
        lambda xp, x: xp.repeat(x, 2, axis=0),
        lambda tc, x: tc.repeat_interleave(x, 2, dim=0),
        lambda s, x: s.repeat(x, 2, axis=0),
    ),
    "repeat counts flattened": (
        (V,),
        lambda xp, x: xp.repeat(x, xp.asarray(np.array([0, 1, 2, 3, 1]))),
        lambda tc, x: tc.repeat_interleave(x, tc.tensor([0, 1, 2, 3, 1])),
        lambda s, x: s.repeat(x, s.asarray(np.array([0, 1, 2, 3, 1]))),
    ),
    "roll flattened": (
        (A,),
        lambda xp, x: xp.roll(x, 5),
        lambda tc, x: tc.roll(x, 5),
        lambda s, x: s.roll(x, 5),
    ),
    "roll two axes": (
        (A,),
        lambda xp, x: xp.roll(x, (1, -3), axis=(0, 1)),
        lambda tc, x: tc.roll(x, (1, -3), dims=(0, 1)),
        lambda s, x: s.roll(x, (1, -3), axis=(0, 1)),
    ),
    "tile": (
        (A,),
        lambda xp, x: xp.tile(x, (2, 1, 3)),
        lambda tc, x: tc.tile(x, (2, 1, 3)),
        lambda s, x: s.tile(x, (2, 1, 3)),
    ),
    "unstack axis=1": (
        (A,),
        lambda xp, x: xp.stack(xp.unstack(x, axis=1)),
        lambda tc, x: tc.stack(tc.unbind(x, dim=1)),
        lambda s, x: s.stack(s.unstack(x, axis=1)),
    ),
    "take_along_axis": (
        (A,),
        lambda xp, x: xp.take_along_axis(
            x, xp.asarray(np.array([[3, 0, 0], [-1, 1, 2]])).T, axis=1
        ),
        lambda tc, x: tc.take_along_dim(x, tc.tensor([[3, 0, 0], [3, 1, 2]]).T, dim=1),
        lambda s, x: s.take_along_axis(x, s.asarray(np.array([[3, 0, 0], [3, 1, 2]])).T, axis=1),
    ),
    "take_along_axis broadcast": (
        (A,),
        lambda xp, x: xp.take_along_axis(
            x, xp.asarray(np.array([[2], [0], [-1], [1], [2]])), axis=0
        ),
        lambda tc, x: tc.take_along_dim(x, tc.tensor([[2], [0], [2], [1], [2]]), dim=0),
        lambda s, x: s.take_along_axis(x, s.asarray(np.array([[2], [0], [2], [1], [2]])), axis=0),
    ),
    "diff": (
        (A,),
        lambda xp, x: xp.diff(x, axis=1, n=2),
        lambda tc, x: tc.diff(x, n=2, dim=1),
        lambda s, x: s.diff(x, axis=1, n=2),
    ),
    "diff prepend append": (
        (V, W, np.array([4.0])),
        lambda xp, x, p, a: xp.diff(x, prepend=p, append=a),
        lambda tc, x, p, a: tc.diff(x, prepend=p, append=a),
        lambda s, x, p, a: s.diff(x, prepend=p, append=a),
    ),
    "tensordot int": (
        (A, B),
        lambda xp, x, y: xp.tensordot(x, y, axes=1),
        lambda tc, x, y: tc.tensordot(x, y, dims=1),
        lambda s, x, y: s.tensordot(x, y, axes=1),
    ),
    "tensordot pairs": (
        (A.reshape(3, 2, 2), B.reshape(2, 2, 2)),
        lambda xp, x, y: xp.tensordot(x, y, axes=((2, 1), (0, 1))),
        lambda tc, x, y: tc.tensordot(x, y, dims=((2, 1), (0, 1))),
        lambda s, x, y: s.tensordot(x, y, axes=((2, 1), (0, 1))),
    ),
    "meshgrid xy": (
        (V, W),
        lambda xp, x, y: xp.stack(xp.meshgrid(x, y)),
        lambda tc, x, y: tc.stack(tc.meshgrid(x, y, indexing="xy")),
        lambda s, x, y: s.stack(s.meshgrid(x, y)),
    ),
    "meshgrid ij": (
        (V, W),
        lambda xp, x, y: xp.stack(xp.meshgrid(x, y, indexing="ij")),
        lambda tc, x, y: tc.stack(tc.meshgrid(x, y, indexing="ij")),
        lambda s, x, y: s.stack(s.meshgrid(x, y, indexing="ij")),
    ),
    "tril": (
        (A,),
        lambda xp, x: xp.tril(x, k=1),
        lambda tc, x: tc.tril(x, 1),
        lambda s, x: s.tril(x, k=1),
    ),
    "triu": (
        (A,),
        lambda xp, x: xp.triu(x, k=-1),
        lambda tc, x: tc.triu(x, -1),
        lambda s, x: s.triu(x, k=-1),
    ),
    "sort": (
        (A + np.arange(12).reshape(3, 4) * 1e-3,),
        lambda xp, x: xp.sort(x, axis=1),
        lambda tc, x: tc.sort(x, dim=1, stable=True).values,
        lambda s, x: s.sort(x, axis=1),
    ),
    "sort descending axis=0": (
        (A + np.arange(12).reshape(3, 4) * 1e-3,),
        lambda xp, x: xp.sort(x, axis=0, descending=True),
        lambda tc, x: tc.sort(x, dim=0, descending=True, stable=True).values,
        lambda s, x: s.sort(x, axis=0, descending=True),
    ),
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_differentiable_function_against_torch_and_strict(name: str, backend: Any) -> None:
    inputs, fn, ref, sref = DIFFERENTIABLE[name]
    xs = [_t(a, backend, requires_grad=True) for a in inputs]
    xp = xs[0].__array_namespace__()
    out = fn(xp, *xs)
    ts = [torch_f64(a, requires_grad=True) for a in inputs]
    want = ref(torch, *ts)
    assert tuple(out.shape) == tuple(want.shape)
    assert_close(_np(out, backend), want.detach().numpy().astype(np.float64), rtol=1e-6)
    # dtype as array-api-strict gives it, from float64 inputs
    sout = sref(strict, *(strict.asarray(a) for a in inputs))
    assert _dtype_name(out.dtype) == _dtype_name(sout.dtype)
    assert_close(_np(out, backend), np.asarray(sout), rtol=1e-6)
    # gradients of a weighted sum (weights that are not all one)
    weights = RNG.uniform(0.5, 2.0, tuple(want.shape))
    if want.numel() == 0 and out.requires_grad is False:
        return
    loss = xp.sum(out * _t(weights, backend).astype(out.dtype))
    loss.backward()
    (want * torch.tensor(weights, dtype=want.dtype)).sum().backward()
    for x, t in zip(xs, ts, strict=True):
        expected = np.zeros(t.shape) if t.grad is None else t.grad.numpy()
        got = np.zeros(x.shape) if x.grad is None else _np(x.grad, backend)
        assert_close(got, expected, rtol=1e-6, atol=1e-12)


def test_prod_gradient_with_zeros_is_the_product_of_the_others(backend: Any) -> None:
    x = _t([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.0, 4.0, -1.0]], backend, requires_grad=True)
    x.__array_namespace__().prod(x, axis=1).sum().backward()
    expected = [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [-4.0, -1.0, 4.0]]
    assert_close(_np(x.grad, backend), np.array(expected), rtol=0, atol=0)


def test_prod_and_cumulative_second_derivative_against_torch(backend: Any) -> None:
    x = _t(A, backend, requires_grad=True)
    xp = x.__array_namespace__()
    (g,) = minitorch.autograd.grad(xp.sum(xp.prod(x, axis=1)), [x], create_graph=True)
    assert g is not None
    (gg,) = minitorch.autograd.grad(xp.sum(g * g), [x])
    t = torch_f64(A, requires_grad=True)
    (tg,) = torch.autograd.grad(torch.prod(t, dim=1).sum(), [t], create_graph=True)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), [t])
    assert_close(_np(gg, backend), tgg.numpy(), rtol=1e-9)


INTS = np.array([[3, 1, 2, 3], [0, 5, 5, 1]], dtype=np.int32)


@pytest.mark.parametrize(
    ("name", "fn"),
    [
        ("prod int32", lambda xp, x: xp.prod(x, axis=1)),
        ("sum int32", lambda xp, x: xp.sum(x)),
        ("cumulative_sum int32", lambda xp, x: xp.cumulative_sum(x, axis=1)),
        (
            "cumulative_prod int32 dtype",
            lambda xp, x: xp.cumulative_prod(x, axis=0, dtype=xp.int32),
        ),
        ("repeat int32", lambda xp, x: xp.repeat(x, 2, axis=1)),
        ("sort int32", lambda xp, x: xp.sort(x, descending=True)),
        ("roll int32", lambda xp, x: xp.roll(x, -1, axis=1)),
    ],
)
def test_integer_dtypes_as_strict(name: str, fn: Call, backend: Any) -> None:
    xp = namespace(backend)
    out = fn(xp, xp.asarray(INTS))
    sout = fn(strict, strict.asarray(INTS))
    assert _dtype_name(out.dtype) == _dtype_name(sout.dtype)
    assert np.array_equal(_np(out, backend), np.asarray(sout))
    assert not out.requires_grad


# functions without a derivative: values and dtypes as array-api-strict, no graph
FLOATS = np.array([[2.0, -1.0, 0.0, 2.0], [0.0, 3.5, -1.0, 2.0]])
NO_GRAD: dict[str, Call] = {
    "argsort": lambda xp, x: xp.argsort(x, axis=1),
    "argsort descending stable": lambda xp, x: xp.argsort(x, axis=1, descending=True),
    "argsort axis=0": lambda xp, x: xp.argsort(x, axis=0),
    "nonzero": lambda xp, x: xp.stack(xp.nonzero(x)),
    "count_nonzero": lambda xp, x: xp.count_nonzero(x),
    "count_nonzero axis keepdims": lambda xp, x: xp.count_nonzero(x, axis=1, keepdims=True),
    "searchsorted": lambda xp, x: xp.searchsorted(
        xp.sort(xp.reshape(x, (-1,))), xp.asarray(np.array([-1.0, 2.0, 9.0]))
    ),
    "searchsorted right": lambda xp, x: xp.searchsorted(
        xp.sort(xp.reshape(x, (-1,))), xp.asarray(np.array([-1.0, 2.0, 9.0])), side="right"
    ),
    "unique_values": lambda xp, x: xp.unique_values(x),
    "unique_counts.values": lambda xp, x: xp.unique_counts(x).values,
    "unique_counts.counts": lambda xp, x: xp.unique_counts(x).counts,
    "unique_inverse.inverse_indices": lambda xp, x: xp.unique_inverse(x).inverse_indices,
    "unique_all.indices": lambda xp, x: xp.unique_all(x).indices,
    "unique_all.counts": lambda xp, x: xp.unique_all(x).counts,
    "unique_all.inverse_indices": lambda xp, x: xp.unique_all(x).inverse_indices,
    "isin": lambda xp, x: xp.isin(xp.astype(x, xp.int64), xp.asarray(np.array([2, 0]))),
    "isin invert": lambda xp, x: xp.isin(
        xp.astype(x, xp.int64), xp.asarray(np.array([2, 0])), invert=True
    ),
    "argmax": lambda xp, x: xp.argmax(x, axis=1, keepdims=True),
    "argmin": lambda xp, x: xp.argmin(x),
    "all": lambda xp, x: xp.all(x, axis=0),
    "any": lambda xp, x: xp.any(x, axis=1, keepdims=True),
}


# array-api-strict 2.6.1 ignores isin's `invert`: the reference inverts it itself
STRICT_REF: dict[str, Call] = {
    "isin invert": lambda s, x: s.logical_not(
        s.isin(s.astype(x, s.int64), s.asarray(np.array([2, 0])))
    ),
}


@pytest.mark.parametrize("name", sorted(NO_GRAD))
def test_functions_without_gradient_as_strict(name: str, backend: Any) -> None:
    x = _t(FLOATS, backend, requires_grad=True)
    xp = x.__array_namespace__()
    out = NO_GRAD[name](xp, x)
    sout = STRICT_REF.get(name, NO_GRAD[name])(strict, strict.asarray(FLOATS))
    assert isinstance(out, minitorch.Tensor)
    assert not out.requires_grad and out.grad_fn is None
    assert _dtype_name(out.dtype) == _dtype_name(sout.dtype)
    assert np.array_equal(_np(out, backend), np.asarray(sout))


def test_from_dlpack_makes_a_constant_of_this_backend(backend: Any) -> None:
    x = _t(FLOATS, backend, requires_grad=True)
    xp = x.__array_namespace__()
    sources = [np.asarray(FLOATS), x.detach()]
    if backend.name == "cupy":  # no host arrays: the NumPy array stays where it is
        with pytest.raises(minitorch.OpError, match=r"from_dlpack: cupy .*xp\.asarray"):
            xp.from_dlpack(sources.pop(0))
    with pytest.raises(minitorch.OpError, match=r"from_dlpack: .* list .*asarray"):
        xp.from_dlpack([1.0, 2.0])  # no DLPack exporter at all
    for source in sources:
        out = xp.from_dlpack(source)
        assert isinstance(out, minitorch.Tensor) and out.backend is backend
        assert not out.requires_grad
        assert np.array_equal(_np(out, backend), FLOATS)


# ------------------------------------------------------------------ info
def test_info_reports_this_backend(backend: Any) -> None:
    xp = namespace(backend)
    info = xp.__array_namespace_info__()
    assert info is xp.__array_namespace_info__()
    caps = info.capabilities()
    assert set(caps) == {"boolean indexing", "data-dependent shapes", "max dimensions"}
    assert caps["boolean indexing"] is True and caps["data-dependent shapes"] is True
    assert caps["max dimensions"] == 64
    assert str(info.default_device()) == str(backend.device)
    assert str(info.devices()[0]) == str(backend.device)
    defaults = info.default_dtypes()
    assert defaults["real floating"] == backend.dtype  # float64 in the tests
    assert _dtype_name(defaults["complex floating"]) == "complex128"
    assert _dtype_name(defaults["integral"]) == "int64"
    assert _dtype_name(defaults["indexing"]) == "int64"
    assert info.default_dtypes(device=backend.device) == defaults
    floats = info.dtypes(kind="real floating")
    assert sorted(floats) == ["float32", "float64"]
    assert floats["float64"] == xp.float64
    assert {"bool", "int32", "int64", "float32", "float64"} <= set(info.dtypes())
    assert set(info.dtypes(kind="integral")) >= {"int8", "int16", "int32", "int64", "uint8"}
    with pytest.raises(ValueError, match="not a device of the"):
        info.dtypes(device="no-such-device")


def test_info_follows_the_backend_default_dtype(backend: Any) -> None:
    with minitorch.use_backend(backend.name, dtype="float32", device=backend.device):
        info = minitorch.array_api.__array_namespace_info__()
        assert _dtype_name(info.default_dtypes()["real floating"]) == "float32"
        assert _dtype_name(info.default_dtypes()["complex floating"]) == "complex64"
        assert _dtype_name(minitorch.array_api.full((2,), 1.5).dtype) == "float32"


def test_no_optional_extensions_are_pretended(backend: Any) -> None:
    """linalg is provided (tests/test_linalg.py); fft is not, and the namespace says so."""
    xp = namespace(backend)
    assert xp.linalg is minitorch.linalg.namespace(backend)
    assert not hasattr(xp, "fft")
    assert not hasattr(minitorch.array_api, "fft")


# ------------------------------------------------------------------ signatures
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("sum", "(x, /, *, axis=None, dtype=None, keepdims=False)"),
        ("prod", "(x, /, *, axis=None, dtype=None, keepdims=False)"),
        ("astype", "(x, dtype, /, *, copy=True, device=None)"),
        ("reshape", "(x, /, shape, *, copy=None)"),
        ("all", "(x, /, *, axis=None, keepdims=False)"),
        ("any", "(x, /, *, axis=None, keepdims=False)"),
        ("argmax", "(x, /, *, axis=None, keepdims=False)"),
        ("argmin", "(x, /, *, axis=None, keepdims=False)"),
        ("cumulative_sum", "(x, /, *, axis=None, dtype=None, include_initial=False)"),
        ("sort", "(x, /, *, axis=-1, descending=False, stable=True)"),
        ("take_along_axis", "(x, indices, /, *, axis=-1)"),
        ("roll", "(x, /, shift, *, axis=None)"),
        ("repeat", "(x, repeats, /, *, axis=None)"),
        ("searchsorted", "(x1, x2, /, *, side='left', sorter=None)"),
    ],
)
def test_signatures_are_the_standards(name: str, expected: str, backend: Any) -> None:
    sig = inspect.signature(getattr(namespace(backend), name))
    plain = sig.replace(
        parameters=[p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()],
        return_annotation=inspect.Signature.empty,
    )
    assert str(plain) == expected


def test_astype_copy_and_reshape_copy(backend: Any) -> None:
    x = _t(A, backend, requires_grad=True)
    xp = x.__array_namespace__()
    assert xp.astype(x, x.dtype, copy=False) is x
    same = xp.astype(x, x.dtype)
    assert same is not x and np.array_equal(_np(same, backend), A)
    y = xp.reshape(x, (4, 3), copy=True)
    assert np.array_equal(_np(y, backend), A.reshape(4, 3))
    xp.sum(y * 2.0).backward()
    assert_close(_np(x.grad, backend), np.full(A.shape, 2.0), rtol=0, atol=0)


def test_astype_needs_a_dtype_as_minitorchs_astype(backend: Any) -> None:
    """None is the default dtype to a creation function, but no dtype to astype: the
    namespace's astype refuses it as minitorch.astype does, for a Tensor and a backend
    array alike, and reads names as dtype= does."""
    x = _t(A, backend)
    xp = x.__array_namespace__()
    for a in (x, x.data, x.detach()):
        with pytest.raises(TypeError, match=r"^astype: dtype must be a dtype.*got None"):
            xp.astype(a, None)
    with pytest.raises(TypeError, match=r"^astype: dtype must be a dtype.*got None"):
        minitorch.astype(x, None)
    assert backend.dtype_name(xp.astype(x, "int32").dtype) == "int32"


@pytest.mark.parametrize(
    ("fill", "kind"),
    [(1.5, "float64"), (3, "int64"), (True, "bool"), (1 + 2j, "complex128")],
)
def test_full_follows_the_standard_dtype_of_the_fill_value(
    fill: Any, kind: str, backend: Any
) -> None:
    xp = namespace(backend)
    out = xp.full((2, 3), fill)
    assert _dtype_name(out.dtype) == kind == _dtype_name(strict.full((2, 3), fill).dtype)
    assert np.array_equal(_np(out, backend), np.full((2, 3), fill))


def test_errors_name_the_function_and_the_inputs(backend: Any) -> None:
    xp = namespace(backend)
    x = _t(A, backend)
    with pytest.raises(
        minitorch.OpError, match=r"cumulative_sum: axis may be left out.*shape=\(3, 4\)"
    ):
        xp.cumulative_sum(x)
    for bad in (4, -5):  # axis 1 has 4 elements: [-4, 4)
        with pytest.raises(minitorch.OpError, match=r"take_along_axis: an index is out of range"):
            xp.take_along_axis(x, xp.asarray(np.array([[bad]])), axis=1)
    np.testing.assert_array_equal(  # the ends of the range are in it
        _np(xp.take_along_axis(x, xp.asarray(np.array([[3, -4]])), axis=1), backend),
        np.take_along_axis(A, np.array([[3, -4]]) % 4, axis=1),
    )
    with pytest.raises(minitorch.OpError, match=r"tensordot: axes .* pair up"):
        xp.tensordot(x, x, axes=1)
    with pytest.raises(minitorch.OpError, match=r"repeat: 2 repeat counts"):
        xp.repeat(x, xp.asarray(np.array([1, 2])), axis=1)


# ------------------------------------------------------------------ the array object
def test_index_only_for_integer_0d_tensors(backend: Any) -> None:
    xp = namespace(backend)
    i = xp.asarray(2)
    assert operator.index(i) == 2 and [10, 20, 30][i] == 30
    for bad in (xp.asarray(2.0), xp.asarray(True), xp.asarray(np.array([1, 2]))):
        with pytest.raises(TypeError, match="__index__: only a 0-d tensor of an integer"):
            operator.index(bad)


def test_scalar_conversions_and_attributes(backend: Any) -> None:
    x = _t(A, backend, requires_grad=True)
    assert complex(x[0, 0]) == complex(0.5) and float(x[1, 3]) == 3.0
    assert x.ndim == 2 and x.size == 12 and x.shape == (3, 4)
    assert_close(_np(x.T, backend), A.T, rtol=0, atol=0)
    x3 = _t(A.reshape(3, 2, 2), backend)
    assert_close(_np(x3.mT, backend), np.swapaxes(A.reshape(3, 2, 2), -1, -2), rtol=0, atol=0)
    moved = x.to_device(x.device)
    assert moved is x
    with pytest.raises(ValueError, match="streams are not supported"):
        x.to_device(x.device, stream=1)
    with pytest.raises(ValueError, match=r"api_version .2019\.01. is not supported"):
        x.__array_namespace__(api_version="2019.01")
    assert x.__array_namespace__(api_version="2024.12") is namespace(backend)


def test_dlpack_round_trip(backend: Any) -> None:
    x = _t(A, backend)
    assert x.__dlpack_device__() == x.data.__dlpack_device__()
    back = backend.xp.from_dlpack(x)
    assert np.array_equal(_np(back, backend), A)


def test_array_api_compat_finds_minitorchs_namespace(backend: Any) -> None:
    import array_api_compat

    x = _t(A, backend)
    found: Any = array_api_compat.array_namespace(x)
    both: Any = array_api_compat.array_namespace(x, x.detach())
    assert found is namespace(backend) and both is found


def test_real_imag_conj_of_real_tensors_against_torch(backend: Any) -> None:
    """real and conj of a real tensor are the identity (a copy, differentiable), imag
    zeros: the gradient of real(x) * 2 + imag(x) + conj(x) ** 2 is 2 + 2x, as torch."""
    xp = namespace(backend)
    x = _t(W, backend, requires_grad=True)
    y = xp.real(x) * 2.0 + xp.imag(x) + xp.conj(x) ** 2
    assert xp.real(x) is not x and xp.conj(x) is not x
    assert _np(xp.imag(x), backend).tolist() == [0.0, 0.0, 0.0]
    xs = torch_f64(W, requires_grad=True)
    ys = torch.real(xs) * 2.0 + torch.conj(xs) ** 2
    ys.sum().backward()
    y.sum().backward()
    assert_close(x.grad, xs.grad.numpy(), rtol=1e-12)


def test_real_imag_conj_of_complex_tensors_as_strict(backend: Any) -> None:
    xp = namespace(backend)
    z = np.array([1.5 - 2.0j, 0.0 + 0.5j, -3.0 + 0.0j])
    c = xp.asarray(z)
    s = strict.asarray(z)
    for name in ("real", "imag", "conj"):
        got, want = getattr(xp, name)(c), np.asarray(getattr(strict, name)(s))
        assert _dtype_name(got.dtype) == str(want.dtype)
        np.testing.assert_array_equal(_np(got, backend), want)
        assert not got.requires_grad


def test_complex_autograd_is_refused_clearly(backend: Any) -> None:
    xp = namespace(backend)
    c = xp.asarray(np.array([1.0 + 1.0j, 2.0j]))
    with pytest.raises(RuntimeError, match="complex autograd is not supported"):
        c.requires_grad_()
    x = _t(np.array([1.0, 2.0]), backend, requires_grad=True)
    with pytest.raises(minitorch.OpError, match=r"mul: complex autograd is not supported"):
        _ = x * c
    with pytest.raises(minitorch.OpError, match="complex autograd"):
        xp.astype(x, xp.complex128)


def test_python_scalars_take_the_tensors_kind_and_dtype(backend: Any) -> None:
    """The standard: an array with a Python scalar of its kind keeps the array's dtype
    (complex64 * 1j stays complex64); asarray of Python data takes the defaults."""
    xp = namespace(backend)
    c64 = xp.astype(xp.asarray(np.array([1.0 + 1.0j])), xp.complex64)
    assert (c64 * 2j).dtype == xp.complex64 and (2j + c64).dtype == xp.complex64
    assert (xp.asarray(np.array([1], dtype=np.int8)) + 1).dtype == xp.int8
    assert xp.asarray(1.5).dtype == xp.float64  # the backend under test's default
    assert xp.asarray([1, 2]).dtype == xp.int64
    assert xp.asarray([[1, 2.5]]).dtype == xp.float64
    assert xp.asarray([True]).dtype == xp.bool
    assert xp.asarray(1j).dtype == xp.complex128
    assert xp.arange(3).dtype == xp.int64 and xp.arange(0.0, 1.0, 0.5).dtype == xp.float64


def test_can_cast_finfo_iinfo_as_strict(backend: Any) -> None:
    xp = namespace(backend)
    for a in STANDARD_DTYPES:
        for b in STANDARD_DTYPES:
            want = strict.can_cast(getattr(strict, a), getattr(strict, b))
            assert xp.can_cast(getattr(xp, a), getattr(xp, b)) is want, (a, b)
    f = xp.finfo(xp.float32)
    assert (f.bits, f.eps, f.max, f.min) == (32, 2.0**-23, float(np.finfo(np.float32).max), -f.max)
    assert type(f.eps) is float and type(f.smallest_normal) is float
    assert xp.finfo(xp.complex64).dtype == xp.float32
    i = xp.iinfo(xp.uint8)
    assert (i.bits, i.min, i.max) == (8, 0, 255) and type(i.max) is int


def test_manipulation_edge_cases_as_strict(backend: Any) -> None:
    xp = namespace(backend)
    a = np.arange(24.0).reshape(2, 3, 4)
    x, s = _t(a, backend), strict.asarray(a)
    cases = [
        (xp.concat([x, x], axis=None), strict.concat([s, s], axis=None)),
        (xp.moveaxis(x, (0, 1), (2, 0)), strict.moveaxis(s, (0, 1), (2, 0))),
        (xp.expand_dims(x, axis=-4), strict.expand_dims(s, axis=-4)),
        (+x, +s),
    ]
    for got, want in cases:
        np.testing.assert_array_equal(_np(got, backend), np.asarray(want))
    with pytest.raises(IndexError, match="out of range"):
        xp.expand_dims(x, axis=4)
    u8 = np.array([[200, 100]], dtype=np.uint8)
    got = xp.vecdot(xp.asarray(u8), xp.asarray(u8))
    want = strict.vecdot(strict.asarray(u8), strict.asarray(u8))
    assert _dtype_name(got.dtype) == "uint8"
    np.testing.assert_array_equal(_np(got, backend), np.asarray(want))
    with pytest.raises(minitorch.OpError, match="vecdot: axis"):
        xp.vecdot(x, x, axis=0)


def test_unary_plus_is_a_differentiable_copy(backend: Any) -> None:
    x = _t(W, backend, requires_grad=True)
    y = +x
    assert y is not x and y.requires_grad
    (y * y).sum().backward()
    assert_close(x.grad, 2 * W, rtol=1e-12)
    v = x.version
    y += 1.0  # in place on the copy: x is untouched
    assert x.version == v and _np(x, backend).tolist() == W.tolist()


def test_logaddexp_of_two_infinities(backend: Any) -> None:
    xp = namespace(backend)
    x = _t(np.array([np.inf, -np.inf, 1.0]), backend)
    y = _t(np.array([np.inf, -np.inf, 1.0]), backend)
    # as np.logaddexp: no "invalid value" RuntimeWarning from an inf - inf inside
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = xp.logaddexp(x, y)
    np.testing.assert_array_equal(
        _np(got, backend), np.logaddexp([np.inf, -np.inf, 1.0], [np.inf, -np.inf, 1.0])
    )
