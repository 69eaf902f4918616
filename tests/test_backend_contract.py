"""The backend layer and the backend contract, checked on the backend under test.

Each function the Array API standard lacks (``erf``, ``scatter_add``, ``setitem``,
host conversion, seeded random numbers, the ``mutable`` flag) is checked against a
hand-computed or float64 ``math`` reference, both as the backend provides it and as the
pure-standard fallback in ``minitorch.backend._fallback`` computes it on the backend's
namespace.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import minitorch
import minitorch.backend as B
from minitorch.backend import _fallback, _numpy

# ------------------------------------------------------------------ helpers


def _arr(backend: Any, a: Any, dtype: str | None = None) -> Any:
    """A backend array on the device under test, from host data."""
    a = np.asarray(a)
    name = dtype or a.dtype.name
    return backend.from_numpy(a, backend.dtypes[name], backend.device)


def _host(backend: Any, x: Any) -> np.ndarray:
    return np.asarray(backend.to_numpy(x))


def _device_string(backend: Any) -> str:
    """The device as a user would spell it: "cpu", "device1", "cuda:0", ..."""
    s = str(backend.device)
    m = re.fullmatch(r"array_api_strict\.Device\('(\w+)'\)", s)
    return (
        m.group(1)
        if m
        else s.replace("CpuDevice(id=0)", "cpu").replace("<CUDA Device 0>", "cuda:0")
    )


# ------------------------------------------------------------------ the backend layer


@pytest.mark.backend_independent
def test_default_backend_is_numpy_float32() -> None:
    code = (
        "import minitorch, numpy as np\n"
        "be = minitorch.get_backend()\n"
        "assert be.name == 'numpy', be\n"
        "assert be.dtype == np.float32, be\n"
        "assert minitorch.tensor([1.0]).dtype == np.float32\n"
        "assert minitorch.zeros(2).dtype == np.float32\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.backend_independent
def test_import_minitorch_imports_no_optional_library() -> None:
    code = (
        "import sys, minitorch\n"
        "x = minitorch.tensor([1.0, 2.0], requires_grad=True)\n"
        "(x * x).sum().backward()\n"
        # asking whether a process group exists, as the demo does, imports no torch
        "import minitorch.distributed as dist\n"
        "assert (dist.get_rank(), dist.get_world_size()) == (0, 1)\n"
        "from minitorch.examples import tense\n"
        "assert tense.train(epochs=1).history\n"
        "bad = [m for m in ('torch', 'cupy', 'jax', 'array_api_strict') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_set_backend_and_get_backend(backend: Any) -> None:
    be = minitorch.set_backend(backend.name, dtype="float32", device=backend.device)
    assert minitorch.get_backend() is be
    assert be.name == backend.name
    assert be.dtype == backend.dtypes["float32"]
    assert str(be.device) == str(backend.device)
    t = minitorch.ones(2)
    assert t.backend is be
    assert t.dtype == backend.dtypes["float32"]
    assert str(t.device) == str(backend.device)


def test_set_backend_accepts_dtype_objects_and_device_strings(backend: Any) -> None:
    be = minitorch.set_backend(
        backend.name, dtype=backend.dtypes["float64"], device=_device_string(backend)
    )
    assert be.dtype == backend.dtypes["float64"]
    assert str(be.device) == str(backend.device)
    assert minitorch.tensor([1.5]).dtype == backend.dtypes["float64"]


def test_set_backend_rejects_non_float_default(backend: Any) -> None:
    with pytest.raises(ValueError, match="float32 or float64"):
        minitorch.set_backend(backend.name, dtype="int64")
    # float16 is a dtype where the library has one (not on array-api-strict), but no
    # default float dtype; float128 is none of minitorch's
    has_half = hasattr(backend.xp, "float16")
    with pytest.raises(
        ValueError, match="float32 or float64" if has_half else "unknown dtype 'float16'"
    ):
        minitorch.set_backend(backend.name, dtype="float16")
    with pytest.raises(ValueError, match="unknown dtype 'float128'"):
        minitorch.set_backend(backend.name, dtype="float128")


def test_use_backend_restores_previous(backend: Any) -> None:
    before = minitorch.get_backend()
    with minitorch.use_backend("numpy", dtype="float32") as be:
        assert minitorch.get_backend() is be
        assert be.name == "numpy" and be.dtype == np.float32
        assert minitorch.tensor([1.0]).dtype == np.float32
    assert minitorch.get_backend() is before
    with pytest.raises(KeyError), minitorch.use_backend("numpy", dtype="float32"):
        raise KeyError("inside")
    assert minitorch.get_backend() is before


def test_available_backends(backend: Any) -> None:
    names = minitorch.available_backends()
    assert "numpy" in names
    assert backend.name in names
    assert set(names) <= set(B.BACKENDS)


def test_backend_is_resolved_once(backend: Any) -> None:
    a = B.resolve(backend.name, "float64", backend.device)
    b = B.resolve(backend.name, "float64", backend.device)
    assert a is b


# ------------------------------------------------------------------ scatter_add


SCATTER_INDEX = [0, 2, 2, 3, 0, 2]


def _scatter_expected_1d() -> np.ndarray:
    # slots: 0 <- 1 + 5, 1 <- nothing, 2 <- 2 + 3 + 6, 3 <- 4
    return np.array([6.0, 0.0, 11.0, 4.0])


def _scatter_values_2d() -> np.ndarray:
    return np.arange(18, dtype=np.float64).reshape(6, 3) + 1.0


def _scatter_expected_2d() -> np.ndarray:
    v = _scatter_values_2d()
    return np.stack([v[0] + v[4], np.zeros(3), v[1] + v[2] + v[5], v[3]])


@pytest.mark.parametrize("impl", ["backend", "fallback"])
def test_scatter_add_repeated_indices_accumulate(backend: Any, impl: str) -> None:
    xp = backend.xp
    fn = (
        xp.scatter_add
        if impl == "backend"
        else (lambda n, i, v: _fallback.scatter_add(xp, n, i, v))
    )
    index = _arr(backend, np.array(SCATTER_INDEX, dtype=np.int64))
    v1 = _arr(backend, np.arange(1.0, 7.0))
    out1 = fn(4, index, v1)
    assert out1.dtype == backend.dtypes["float64"]
    assert str(out1.device) == str(backend.device)
    np.testing.assert_array_equal(_host(backend, out1), _scatter_expected_1d())

    v2 = _arr(backend, _scatter_values_2d())
    out2 = fn(4, index, v2)
    assert tuple(out2.shape) == (4, 3)
    np.testing.assert_array_equal(_host(backend, out2), _scatter_expected_2d())

    v32 = _arr(backend, np.arange(1.0, 7.0), "float32")
    out32 = fn(4, index, v32)
    assert out32.dtype == backend.dtypes["float32"]
    np.testing.assert_array_equal(_host(backend, out32), _scatter_expected_1d().astype(np.float32))


@pytest.mark.parametrize("impl", ["backend", "fallback"])
def test_scatter_add_with_uint8_indices_into_more_than_256_rows(backend: Any, impl: str) -> None:
    """uint8 indices into 300 rows: row 256 gets nothing from index 0 (the fallback's
    one-hot slots were made in the indices' dtype, and wrapped)."""
    xp = backend.xp
    index = backend.from_numpy(
        np.array([255, 0, 255, 10], dtype=np.uint8), xp.uint8, backend.device
    )
    values = _arr(backend, np.arange(1.0, 5.0))
    out = (
        xp.scatter_add(300, index, values)
        if impl == "backend"
        else _fallback.scatter_add(xp, 300, index, values)
    )
    want = np.zeros(300)
    np.add.at(want, [255, 0, 255, 10], np.arange(1.0, 5.0))
    np.testing.assert_array_equal(_host(backend, out), want)


# ------------------------------------------------------------------ put_rows


@pytest.mark.parametrize("impl", ["backend", "fallback"])
def test_put_rows_sets_rows_in_a_copy(backend: Any, impl: str) -> None:
    """A copy of x with the rows at index set: to rows of values, to a number, with no
    row; x itself unchanged; dtype and device kept."""
    xp = backend.xp
    fn = xp.put_rows if impl == "backend" else (lambda x, i, v: _fallback.put_rows(xp, x, i, v))
    x0 = np.arange(12.0).reshape(4, 3)
    x = _arr(backend, x0)
    index = _arr(backend, np.array([3, 0], dtype=np.int64))
    out = fn(x, index, _arr(backend, -np.ones((2, 3))))
    want = x0.copy()
    want[[3, 0]] = -1.0
    np.testing.assert_array_equal(_host(backend, out), want)
    assert out.dtype == backend.dtypes["float64"]
    assert str(out.device) == str(backend.device)
    np.testing.assert_array_equal(_host(backend, x), x0)
    want[[3, 0]] = 2.5
    np.testing.assert_array_equal(_host(backend, fn(x, index, 2.5)), want)
    flags = _arr(backend, np.ones((4, 1), bool))
    np.testing.assert_array_equal(
        _host(backend, fn(flags, index, False)), [[False], [True], [True], [False]]
    )
    nothing = _arr(backend, np.zeros(0, dtype=np.int64))
    np.testing.assert_array_equal(_host(backend, fn(x, nothing, 1.0)), x0)


def test_put_rows_fallback_lands_the_last_value_of_a_repeated_index(backend: Any) -> None:
    """NumPy's rule (the libraries' own put_rows choose themselves, as in PyTorch)."""
    xp = backend.xp
    x = _arr(backend, np.zeros((4, 2)))
    index = _arr(backend, np.array([1, 3, 1], dtype=np.int64))
    values = _arr(backend, np.array([[5.0, 5.0], [6.0, 6.0], [7.0, 7.0]]))
    out = _fallback.put_rows(xp, x, index, values)
    np.testing.assert_array_equal(_host(backend, out), [[0, 0], [7, 7], [0, 0], [6, 6]])


# ------------------------------------------------------------------ erf


def _erf_grid() -> np.ndarray:
    pieces = [
        np.array([0.0, 1.0, -1.0, 8.0, -8.0, 30.0, -30.0, 40.0, 1e-300, 1e-20, 1e-8]),
        np.linspace(0.0, 1.0, 201),
        np.linspace(1.0, 8.0, 281),
        np.linspace(8.0, 30.0, 45),
        np.nextafter(1.0, [0.0, 2.0]),
        np.nextafter(8.0, [0.0, 9.0]),
    ]
    x = np.concatenate(pieces)
    return np.concatenate([x, -x])


def _erf_ref(x: np.ndarray) -> np.ndarray:
    return np.array([math.erf(float(v)) for v in x])


def _assert_erf_close(got: np.ndarray, x: np.ndarray, rtol: float) -> None:
    ref = _erf_ref(x)
    err = np.abs(got - ref)
    bad = err > rtol * np.abs(ref)
    rel = err / np.maximum(np.abs(ref), 1e-300)
    assert not bad.any(), (
        f"{int(bad.sum())} values off; worst x={x[np.argmax(rel)]!r}, max rel err {rel.max():.3g}"
    )


@pytest.mark.parametrize("impl", ["backend", "fallback"])
def test_erf_matches_math_erf_float64(backend: Any, impl: str) -> None:
    xp = backend.xp
    x = _erf_grid()
    xa = _arr(backend, x)
    out = xp.erf(xa) if impl == "backend" else _fallback.erf(xp, xa)
    assert out.dtype == backend.dtypes["float64"]
    assert str(out.device) == str(backend.device)
    _assert_erf_close(_host(backend, out), x, rtol=1e-15)


def test_erf_fallback_float32(backend: Any) -> None:
    x = _erf_grid()
    out = _fallback.erf(backend.xp, _arr(backend, x, "float32"))
    assert out.dtype == backend.dtypes["float32"]
    x32 = x.astype(np.float32).astype(np.float64)
    ref = _erf_ref(x32)
    np.testing.assert_allclose(_host(backend, out), ref, rtol=1e-6, atol=1e-7)


# ------------------------------------------------------------------ VJP kernels


def _vjp_kernel_cases() -> list[tuple[str, np.ndarray, np.ndarray, tuple[Any, ...], np.ndarray]]:
    """(kernel, g, out, extra arguments, the gradient by hand in float64)."""
    rng = np.random.default_rng(4)
    g = rng.standard_normal((3, 5))
    x = rng.standard_normal((3, 5))
    relu = np.maximum(x, 0.0)
    relu[0, :2] = [0.0, np.nan]  # an inactive unit, and a nan input (passes g)
    g_relu = g.copy()
    g_relu[0, 0] = np.nan  # a nan gradient at an inactive unit gives 0
    want_relu = np.where(relu != 0.0, g_relu, 0.0)
    assert want_relu[0, 0] == 0.0 and want_relu[0, 1] == g_relu[0, 1]
    t, s = np.tanh(x), 1.0 / (1.0 + np.exp(-x))
    cases = [
        ("relu_backward", g_relu, relu, (), want_relu),
        ("tanh_backward", g, t, (), g * (1.0 - t * t)),
        ("sigmoid_backward", g, s, (), g * s * (1.0 - s)),
    ]
    for axis in (0, 1):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        sm = e / e.sum(axis=axis, keepdims=True)
        cases.append(
            ("softmax_backward", g, sm, (axis,), sm * (g - (g * sm).sum(axis, keepdims=True)))
        )
        cases.append(
            ("log_softmax_backward", g, np.log(sm), (axis,), g - sm * g.sum(axis, keepdims=True))
        )
    one = np.asarray(1.0)  # a 0-d softmax: one element, no gradient
    cases.append(("softmax_backward", np.asarray(2.0), one, (None,), np.asarray(0.0)))
    cases.append(("log_softmax_backward", np.asarray(2.0), one * 0.0, (None,), np.asarray(0.0)))
    return cases


@pytest.mark.parametrize("impl", ["backend", "fallback"])
def test_vjp_kernels_give_the_gradient_by_hand(backend: Any, impl: str) -> None:
    """Each VJP kernel of the namespace (the library's fused kernel where the backend
    has one: torch) and its pure-standard formula give the float64 gradient worked out
    by hand, nan where PyTorch gives nan, on the backend's device."""
    for name, g, out, extra, want in _vjp_kernel_cases():
        ga, oa = _arr(backend, g), _arr(backend, out)
        if impl == "backend":
            got = getattr(backend.xp, name)(ga, oa, *extra)
        else:
            got = _fallback.VJP_KERNELS[name](backend.xp, ga, oa, *extra)
        assert got.dtype == backend.dtypes["float64"] and got.shape == g.shape, name
        assert str(got.device) == str(backend.device), name
        np.testing.assert_allclose(_host(backend, got), want, rtol=1e-13, atol=1e-15, err_msg=name)
        # a float32 output with a float64 gradient (a float32 softmax times a float64
        # tensor): the gradient promotes, as the formula's arithmetic does
        o32 = _arr(backend, out, "float32")
        if impl == "backend":
            mixed = getattr(backend.xp, name)(ga, o32, *extra)
        else:
            mixed = _fallback.VJP_KERNELS[name](backend.xp, ga, o32, *extra)
        assert mixed.dtype == backend.dtypes["float64"], name
        np.testing.assert_allclose(_host(backend, mixed), want, rtol=1e-6, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("impl", ["backend", "fallback"])
@pytest.mark.parametrize("index_dtype", ["int64", "int32"])
def test_softmax_cross_entropy_kernel_by_hand(backend: Any, impl: str, index_dtype: str) -> None:
    """``softmax_cross_entropy(x, t)``: each row's ``-log_softmax(x)[t]`` and the
    gradient ``softmax(x) - one_hot(t)``, against float64 worked out by hand, with a
    large offset (shifted first, no overflow) and a -inf logit (probability 0)."""
    x = np.array(
        [[2.0, -1.0, 0.5, 3.0], [1e4, 1e4 + 1.0, 1e4 - 2.0, 1e4], [0.0, -np.inf, 1.0, 2.0]]
    )
    t = np.array([3, 0, 2])
    e = np.exp(x - x.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    want_nll = -np.log(p[np.arange(3), t])[:, None]
    want_d = p - np.eye(4)[t]
    xa, ta = _arr(backend, x), _arr(backend, t, index_dtype)
    if impl == "backend":
        nll, d = backend.xp.softmax_cross_entropy(xa, ta)
    else:
        nll, d = _fallback.softmax_cross_entropy(backend.xp, xa, ta)
    assert nll.shape == (3, 1) and d.shape == (3, 4)
    assert nll.dtype == d.dtype == backend.dtypes["float64"]
    np.testing.assert_allclose(_host(backend, nll), want_nll, rtol=1e-13)
    np.testing.assert_allclose(_host(backend, d), want_d, rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("index_dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_numpy_cross_entropy_kernel_equals_the_formula_bit_for_bit(
    dtype: str, index_dtype: str
) -> None:
    """The NumPy backend's own ``softmax_cross_entropy`` (fancy indexing instead of a
    one-hot mask) gives the formula's losses and gradient exactly, for every float dtype,
    narrow index dtypes, and rows with +inf, -inf and nan logits; the training step of
    bench/bench_mlp.py relies on it."""
    be = _numpy.load()
    assert be.xp.softmax_cross_entropy is not _fallback.VJP_KERNELS["softmax_cross_entropy"]
    rng = np.random.default_rng(8)
    for n, c in ((32, 10), (1, 1), (6, 120), (4, 3)):
        x = (rng.standard_normal((n, c)) * 6).astype(dtype)
        if c > 3:
            x[0, 1], x[1, 2], x[2, 0] = np.inf, -np.inf, np.nan
        t = rng.integers(0, c, n).astype(index_dtype)
        with np.errstate(invalid="ignore"):  # inf - inf in both
            want = _fallback.softmax_cross_entropy(be.xp, x, t)
            got = be.xp.softmax_cross_entropy(x, t)
        for w, g in zip(want, got, strict=True):
            assert g.dtype == w.dtype == np.dtype(dtype) and g.shape == w.shape
            np.testing.assert_array_equal(g, w)
        assert got[0].shape == (n, 1) and not np.shares_memory(got[1], x)


def test_torch_vjp_kernels_are_one_kernel_each(backend: Any) -> None:
    """On torch each VJP kernel is the one fused kernel PyTorch's own autograd runs
    (``tanh_backward``, ...), not the two to four of the formula: the profiler sees
    that one torch op called, and nothing else. (What runs inside it is torch's: on
    CUDA ``_softmax_backward_data`` multiplies first, for PyTorch's autograd too.)"""
    if backend.name != "torch":
        pytest.skip(f"{backend.name}: the fused backward kernels are torch's")
    import torch

    fused = {
        "relu_backward": "aten::threshold_backward",
        "tanh_backward": "aten::tanh_backward",
        "sigmoid_backward": "aten::sigmoid_backward",
        "softmax_backward": "aten::_softmax_backward_data",
        "log_softmax_backward": "aten::_log_softmax_backward_data",
    }
    for name, g, out, extra, _ in _vjp_kernel_cases()[:5]:
        ga, oa = _arr(backend, g), _arr(backend, out)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
            getattr(backend.xp, name)(ga, oa, *extra)
        called = [e.name for e in prof.events() if e.cpu_parent is None and "::" in e.name]
        assert called == [fused[name]], (name, called)
    x = _arr(backend, np.arange(12.0).reshape(3, 4))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        backend.xp.softmax_cross_entropy(x, _arr(backend, np.array([3, 0, 2])))
    ops = {e.key for e in prof.key_averages()}
    assert {"aten::_log_softmax", "aten::gather", "aten::scatter_add_"} <= ops, sorted(ops)
    assert not {"aten::take", "aten::index_select", "aten::eq"} & ops, sorted(ops)


# ------------------------------------------------------------------ random numbers


def test_same_seed_same_draws(backend: Any) -> None:
    minitorch.manual_seed(123)
    a, u = minitorch.randn(3, 4), minitorch.rand(5)
    minitorch.manual_seed(123)
    b, v = minitorch.randn((3, 4)), minitorch.rand(5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(u.numpy(), v.numpy())
    minitorch.manual_seed(124)
    assert not np.array_equal(minitorch.randn(3, 4).numpy(), a.numpy())
    assert str(a.device) == str(backend.device)
    assert a.dtype == backend.dtypes["float64"]
    u_np = u.numpy()
    assert ((u_np >= 0.0) & (u_np < 1.0)).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_draws_identical_across_backends(backend: Any, dtype: str) -> None:
    with minitorch.use_backend("numpy", dtype=dtype):
        minitorch.manual_seed(7)
        ref_n, ref_u = minitorch.randn(4, 3).numpy(), minitorch.rand(6).numpy()
        ref_i = minitorch.randint(0, 10, (5,)).numpy()
    with minitorch.use_backend(backend.name, dtype=dtype, device=backend.device):
        minitorch.manual_seed(7)
        n, u, i = minitorch.randn(4, 3), minitorch.rand(6), minitorch.randint(0, 10, (5,))
    assert n.backend.name == backend.name
    assert n.numpy().dtype == np.dtype(dtype)
    np.testing.assert_array_equal(n.numpy(), ref_n)
    np.testing.assert_array_equal(u.numpy(), ref_u)
    np.testing.assert_array_equal(i.numpy(), ref_i)
    assert i.dtype == backend.dtypes["int64"]


# ------------------------------------------------------------------ host conversion


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_to_numpy_from_numpy_round_trip(backend: Any, dtype: str) -> None:
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((3, 4)) * 10).astype(dtype)
    x = backend.from_numpy(a, backend.dtypes[dtype], backend.device)
    assert x.dtype == backend.dtypes[dtype]
    assert str(x.device) == str(backend.device)
    assert tuple(x.shape) == (3, 4)
    back = backend.to_numpy(x)
    assert isinstance(back, np.ndarray)
    assert back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back, a)
    # and a 0-d array stays 0-d
    s = backend.from_numpy(np.asarray(a[0, 0]), backend.dtypes[dtype], backend.device)
    assert tuple(s.shape) == ()
    assert backend.to_numpy(s).shape == ()


def test_from_numpy_takes_non_contiguous_arrays(backend: Any) -> None:
    a = np.arange(12.0).reshape(3, 4)
    for view in (a[::-1], a[:, ::-2], a.T):
        x = backend.from_numpy(view, backend.dtypes["float64"], backend.device)
        np.testing.assert_array_equal(backend.to_numpy(x), view)
    np.testing.assert_array_equal(a, np.arange(12.0).reshape(3, 4))


def test_contiguous_helper() -> None:
    a = np.arange(6.0)[::-1]
    c = B.contiguous(a)
    assert c.flags.c_contiguous
    np.testing.assert_array_equal(c, a)
    b = np.arange(6.0)
    assert B.contiguous(b) is b
    assert B.contiguous(np.float64(2.0)).shape == ()


# ------------------------------------------------------------------ setitem, mutable


@pytest.mark.parametrize("impl", ["backend", "fallback"])
def test_setitem_returns_a_copy(backend: Any, impl: str) -> None:
    if impl == "fallback" and not backend.mutable:
        pytest.skip(f"{backend.name}: immutable arrays, the copy-then-assign fallback cannot run")
    xp = backend.xp
    fn = backend.setitem if impl == "backend" else (lambda x, k, v: _fallback.setitem(xp, x, k, v))
    a = np.arange(12.0).reshape(3, 4)
    x = _arr(backend, a)
    y = fn(x, (slice(1, 3), 2), _arr(backend, np.array([-1.0, -2.0])))
    z = fn(x, (0, slice(None)), 5.0)
    expected_y = a.copy()
    expected_y[1:3, 2] = [-1.0, -2.0]
    expected_z = a.copy()
    expected_z[0] = 5.0
    np.testing.assert_array_equal(_host(backend, y), expected_y)
    np.testing.assert_array_equal(_host(backend, z), expected_z)
    np.testing.assert_array_equal(_host(backend, x), a)  # the input is untouched
    assert xp.setitem is backend.setitem
    assert str(y.device) == str(backend.device)


def test_zeros_with_places_a_value_in_new_zeros(backend: Any) -> None:
    """The backward of a basic index: zeros with ``v`` at ``key`` (written in place where
    arrays are mutable, since the zeros are new), in ``v``'s dtype, on its device."""
    v = _arr(backend, np.array([[1.0, 2.0], [3.0, 4.0]]))
    out = backend.xp.zeros_with((3, 4), (slice(1, 3), slice(0, 4, 2)), v)
    expected = np.zeros((3, 4))
    expected[1:3, 0:4:2] = [[1.0, 2.0], [3.0, 4.0]]
    np.testing.assert_array_equal(_host(backend, out), expected)
    assert out.dtype == v.dtype and str(out.device) == str(backend.device)
    np.testing.assert_array_equal(_host(backend, v), [[1.0, 2.0], [3.0, 4.0]])


def test_mutable_flag(backend: Any) -> None:
    expected = {"numpy": True, "torch": True, "array_api_strict": True, "cupy": True, "jax": False}
    assert backend.mutable is expected[backend.name]
    x = _arr(backend, np.zeros(3))
    if backend.mutable:
        x[1] = 2.0
        np.testing.assert_array_equal(_host(backend, x), [0.0, 2.0, 0.0])
    else:
        with pytest.raises(TypeError):
            x[1] = 2.0


_FLOAT_RESULTS = ("maximum", "minimum", "atan2", "copysign", "hypot")
_BOOL_RESULTS = ("equal", "not_equal", "greater", "greater_equal", "less", "less_equal")
_LOGICAL = ("logical_and", "logical_or", "logical_xor")


@pytest.mark.parametrize("name", _FLOAT_RESULTS + _BOOL_RESULTS + _LOGICAL)
def test_two_argument_functions_promote_as_the_standard_says(backend: Any, name: str) -> None:
    """The namespace's two-argument functions with a Python scalar on either side and
    with a 0-d array of another dtype: the standard's dtypes and NumPy's values (on
    torch, where the backend hands one dtype straight to torch's own function, the same
    as array-api-compat gives), whatever shortcut the backend takes, on the backend's
    device (torch's CUDA logical kernels refuse the 0-d CPU tensor that its other
    kernels read a Python scalar from)."""
    xp = backend.xp
    logical = name.startswith("logical")
    data = [True, False, True] if logical else [-1.5, 0.0, 2.0]
    x32 = _arr(backend, np.asarray(data, dtype=bool if logical else np.float32))
    x64 = _arr(backend, np.asarray(data, dtype=bool if logical else np.float64))
    fn, ref = getattr(xp, name), getattr(np, name)
    if logical:
        cases: list[tuple[Any, Any]] = [(x32, True), (False, x32), (x32, x64)]
    else:
        zero64 = _arr(backend, np.asarray(0.5), "float64")  # 0-d: float64 still wins
        cases = [(x32, 0.5), (0.5, x32), (x64, -1.0), (x32, zero64), (x32, x32)]
    # atan2 and hypot round as each library's libm does
    rtol = 1e-6 if name in ("atan2", "hypot") else 0.0
    for a, b in cases:
        got = fn(a, b)
        ha = a if isinstance(a, bool | float) else _host(backend, a)
        hb = b if isinstance(b, bool | float) else _host(backend, b)
        if name in _FLOAT_RESULTS:
            # a Python float keeps the array's dtype; two arrays promote
            dts = [v.dtype for v in (a, b) if not isinstance(v, float)]
            wide = backend.dtypes["float64"] in dts
            assert got.dtype == backend.dtypes["float64" if wide else "float32"], (a, b)
        else:
            assert got.dtype == backend.dtypes["bool"], (a, b)
        host = _host(backend, got)
        np.testing.assert_allclose(host, np.asarray(ref(ha, hb), dtype=host.dtype), rtol=rtol)


@pytest.mark.parametrize("dtypes", [("float32", "float32"), ("float32", "float64")])
def test_matmul_promotes_as_the_standard_says(backend: Any, dtypes: tuple[str, str]) -> None:
    a = _arr(backend, np.arange(6.0).reshape(2, 3), dtypes[0])
    b = _arr(backend, np.arange(3.0).reshape(3, 1), dtypes[1])
    got = backend.xp.matmul(a, b)
    assert got.dtype == backend.dtypes[dtypes[1]]
    np.testing.assert_array_equal(_host(backend, got), [[5.0], [14.0]])


def test_torch_hands_one_dtype_to_torch_itself(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On torch, two tensors of one dtype (or a tensor and a Python float) go to torch's
    own function, not through array-api-compat's promotion, whose Python costs more than
    the kernel on a small tensor (a host cost on every launch on a GPU); so does
    matrix_transpose."""
    if backend.name != "torch":
        pytest.skip(f"{backend.name}: array-api-compat's torch wrappers are torch's")
    import array_api_compat.torch._aliases as aliases

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("array-api-compat's promotion was called")

    monkeypatch.setattr(aliases, "_fix_promotion", refused)
    xp = backend.xp
    x = _arr(backend, [[1.0, -2.0], [3.0, 4.0]], "float32")
    np.testing.assert_array_equal(_host(backend, xp.maximum(x, 0.0)), [[1, 0], [3, 4]])
    np.testing.assert_array_equal(_host(backend, xp.minimum(0.0, x)), [[0, -2], [0, 0]])
    np.testing.assert_array_equal(_host(backend, xp.matmul(x, x)), [[-5, -10], [15, 10]])
    with pytest.raises(AssertionError, match="promotion was called"):
        xp.maximum(x, _arr(backend, np.asarray(0.0), "float64"))  # the wrapper promotes
    # a Python scalar keeps its sign as a 0-d tensor, that of a zero and of a nan too
    for _ in range(2):
        assert np.signbit(_host(backend, xp.copysign(x, -0.0))).all()
        assert not np.signbit(_host(backend, xp.copysign(x, 0.0))).any()
        assert np.signbit(_host(backend, xp.copysign(x, -math.nan))).all()
        assert not np.signbit(_host(backend, xp.copysign(x, math.nan))).any()
        assert np.isnan(_host(backend, xp.maximum(x, float("nan")))).all()
    # an int the tensor's dtype cannot hold goes the wrapper's way, as before
    monkeypatch.undo()
    small = backend.from_numpy(np.array([1, 2], dtype=np.int32), backend.dtypes["int32"], "cpu")
    assert not _host(backend, xp.equal(small, 2**40)).any()
    # matrix_transpose is the view .mT, without the wrapper's two calls
    cube = _arr(backend, np.arange(24.0).reshape(2, 3, 4), "float32")
    t = xp.matrix_transpose(cube)
    assert t._is_view() and t.shape == (2, 4, 3)
    np.testing.assert_array_equal(_host(backend, t), np.swapaxes(_host(backend, cube), -1, -2))
    with pytest.raises(ValueError, match="at least 2-dimensional"):
        xp.matrix_transpose(_arr(backend, [1.0, 2.0], "float32"))
