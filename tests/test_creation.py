"""Creating tensors, copying the user's data, and moving tensors between backends."""

from __future__ import annotations

import math
import re
import subprocess
import sys
import warnings
from typing import Any

import numpy as np
import pytest
import torch

import minitorch

# ------------------------------------------------------------------ helpers


def _native(backend: Any, a: np.ndarray) -> Any:
    """``a`` as an array of the backend under test (not through minitorch.tensor)."""
    return backend.from_numpy(a, backend.dtypes[a.dtype.name], backend.device)


def _on_device(t: minitorch.Tensor, backend: Any) -> None:
    assert t.backend.name == backend.name
    assert str(t.device) == str(backend.device)
    assert type(t.data) is type(_native(backend, np.zeros(1)))


# ------------------------------------------------------------------ tensor()


def test_tensor_from_python_numbers_and_lists(backend: Any) -> None:
    f64 = backend.dtypes["float64"]
    s = minitorch.tensor(2.5)
    assert s.shape == () and s.dtype == f64 and s.item() == 2.5
    t = minitorch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.shape == (2, 2) and t.ndim == 2 and t.dtype == f64
    np.testing.assert_array_equal(t.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    _on_device(t, backend)
    i = minitorch.tensor([1, 2, 3])
    assert i.dtype == backend.dtypes["int64"]
    np.testing.assert_array_equal(i.numpy(), [1, 2, 3])
    b = minitorch.tensor([True, False])
    assert b.dtype == backend.dtypes["bool"]
    mixed = minitorch.tensor([1, 2.5])
    assert mixed.dtype == f64


def test_python_floats_take_the_default_dtype(backend: Any) -> None:
    with minitorch.use_backend(backend.name, dtype="float32", device=backend.device):
        assert minitorch.tensor([1.0, 2.0]).dtype == backend.dtypes["float32"]
        assert minitorch.tensor(3.0).dtype == backend.dtypes["float32"]
        assert minitorch.tensor([[1, 2.0]]).dtype == backend.dtypes["float32"]
    assert minitorch.tensor([1.0]).dtype == backend.dtypes["float64"]


def test_numpy_input_keeps_its_dtype(backend: Any) -> None:
    with minitorch.use_backend(backend.name, dtype="float32", device=backend.device):
        t64 = minitorch.tensor(np.array([1.0, 2.0]))
        assert t64.dtype == backend.dtypes["float64"]
        ti = minitorch.tensor(np.array([1, 2], dtype=np.int64))
        assert ti.dtype == backend.dtypes["int64"]
    t32 = minitorch.tensor(np.array([1.0, 2.0], dtype=np.float32))
    assert t32.dtype == backend.dtypes["float32"]
    np.testing.assert_array_equal(t32.numpy(), [1.0, 2.0])
    _on_device(t32, backend)


def test_numpy_int32_and_numpy_scalars_keep_their_dtype_on_every_backend(backend: Any) -> None:
    """As in PyTorch (``torch.tensor(np.float64(1.5))`` is float64): an int32 array
    stays int32 (on torch and array-api-strict it became int64), and a NumPy scalar is
    read as the 0-d array it stands for, not as a Python number (``np.float64`` is a
    Python float subclass: it took the default float32)."""
    with minitorch.use_backend(backend.name, dtype="float32", device=backend.device):
        cases = {
            "int32": np.array([1, 2], dtype=np.int32),
            "float64": np.float64(1.5),
            "float32": np.float32(1.5),
            "bool": np.bool_(True),
        }
        for name, data in cases.items():
            t = minitorch.tensor(data)
            assert t.dtype == backend.dtypes[name], (name, t.dtype)
            assert t.shape == np.shape(data)
            np.testing.assert_array_equal(t.numpy(), data)
        assert minitorch.tensor(np.int32(7)).dtype == backend.dtypes["int32"]
        assert minitorch.tensor(np.int64(7)).dtype == backend.dtypes["int64"]
        assert minitorch.tensor(np.mean(np.array([1.0, 2.0]))).dtype == backend.dtypes["float64"]


def test_dtype_argument(backend: Any) -> None:
    t = minitorch.tensor([1, 2], dtype="float32")
    assert t.dtype == backend.dtypes["float32"]
    np.testing.assert_array_equal(t.numpy(), np.array([1.0, 2.0], dtype=np.float32))
    u = minitorch.tensor(np.array([1.5]), dtype=backend.dtypes["float32"])
    assert u.dtype == backend.dtypes["float32"]
    v = minitorch.tensor([1.0], dtype=np.float64)
    assert v.dtype == backend.dtypes["float64"]


def test_tensor_from_backend_array(backend: Any) -> None:
    a = _native(backend, np.array([[1.0, 2.0, 3.0]]))
    t = minitorch.tensor(a)
    assert t.dtype == backend.dtypes["float64"]
    np.testing.assert_array_equal(t.numpy(), [[1.0, 2.0, 3.0]])
    _on_device(t, backend)
    a32 = _native(backend, np.array([1.0], dtype=np.float32))
    assert minitorch.tensor(a32).dtype == backend.dtypes["float32"]


def test_tensor_copies_numpy_input(backend: Any) -> None:
    a = np.array([1.0, 2.0, 3.0])
    t = minitorch.tensor(a, requires_grad=True)
    a[0] = 100.0
    assert t.numpy()[0] == 1.0
    with minitorch.no_grad():
        t.add_(1.0)
        t[1] = -5.0
    np.testing.assert_array_equal(a, [100.0, 2.0, 3.0])
    np.testing.assert_array_equal(t.numpy(), [2.0, -5.0, 4.0])


def test_tensor_copies_backend_input(backend: Any) -> None:
    src = np.array([1.0, 2.0, 3.0])
    a = _native(backend, src)
    t = minitorch.tensor(a)
    assert t.data is not a
    if backend.mutable:
        a[0] = 100.0
        assert t.numpy()[0] == 1.0
    with minitorch.no_grad():
        t.mul_(2.0)
    expected = src.copy()
    if backend.mutable:
        expected[0] = 100.0
    np.testing.assert_array_equal(backend.to_numpy(a), expected)


def test_tensor_from_list_of_numpy_scalars(backend: Any) -> None:
    t = minitorch.tensor([np.float64(1.5), np.float64(2.5)])
    np.testing.assert_array_equal(t.numpy(), [1.5, 2.5])


def test_ragged_input_is_a_clear_error() -> None:
    with pytest.raises(TypeError, match="rectangular"):
        minitorch.tensor([[1.0, 2.0], [3.0]])
    with pytest.raises(TypeError, match="rectangular"):
        minitorch.tensor([[1.0, 2.0], 3.0])


def test_tensor_class_constructor(backend: Any) -> None:
    x = minitorch.Tensor([1.0, 2.0], requires_grad=True)
    assert isinstance(x, minitorch.Tensor)
    assert x.requires_grad and x.is_leaf and x.grad is None
    assert x.dtype == backend.dtypes["float64"]
    _on_device(x, backend)
    y = minitorch.Tensor(np.array([1, 2]), dtype="float32")
    assert y.dtype == backend.dtypes["float32"] and not y.requires_grad


# ------------------------------------------------------------------ filled, ranges, random


@pytest.mark.parametrize("requires_grad", [False, True])
def test_zeros_ones_full(backend: Any, requires_grad: bool) -> None:
    for t, value in (
        (minitorch.zeros(2, 3, requires_grad=requires_grad), 0.0),
        (minitorch.zeros((2, 3), requires_grad=requires_grad), 0.0),
        (minitorch.ones(2, 3, requires_grad=requires_grad), 1.0),
        (minitorch.ones((2, 3), requires_grad=requires_grad), 1.0),
        (minitorch.full((2, 3), 2.5, requires_grad=requires_grad), 2.5),
    ):
        assert t.shape == (2, 3)
        assert t.dtype == backend.dtypes["float64"]
        assert t.requires_grad is requires_grad
        np.testing.assert_array_equal(t.numpy(), np.full((2, 3), value))
        _on_device(t, backend)
    assert minitorch.full(4, 1.5).shape == (4,)
    assert minitorch.zeros(2, dtype="float32").dtype == backend.dtypes["float32"]
    assert minitorch.ones(()).shape == ()


def test_like_functions_keep_backend_dtype_device(backend: Any) -> None:
    with minitorch.use_backend(backend.name, dtype="float32", device=backend.device):
        x = minitorch.tensor([[1.0, 2.0, 3.0]])
    with minitorch.use_backend("numpy", dtype="float64"):  # the current backend does not matter
        z, o = minitorch.zeros_like(x), minitorch.ones_like(x, requires_grad=True)
        f = minitorch.full_like(x, 7.0, dtype="float64")
    for t, value, dt in ((z, 0.0, "float32"), (o, 1.0, "float32"), (f, 7.0, "float64")):
        assert t.shape == (1, 3)
        assert t.dtype == backend.dtypes[dt]
        _on_device(t, backend)
        np.testing.assert_array_equal(t.numpy(), np.full((1, 3), value))
    assert o.requires_grad and not z.requires_grad


def test_arange(backend: Any) -> None:
    a = minitorch.arange(5)
    assert a.dtype == backend.dtypes["int64"]
    np.testing.assert_array_equal(a.numpy(), [0, 1, 2, 3, 4])
    b = minitorch.arange(1.0, 2.0, 0.25)
    assert b.dtype == backend.dtypes["float64"]
    np.testing.assert_array_equal(b.numpy(), [1.0, 1.25, 1.5, 1.75])
    c = minitorch.arange(2, 8, 3, dtype="float32", requires_grad=True)
    assert c.dtype == backend.dtypes["float32"] and c.requires_grad
    np.testing.assert_array_equal(c.numpy(), [2.0, 5.0])
    _on_device(c, backend)


def test_randn_rand_shapes_and_flags(backend: Any) -> None:
    minitorch.manual_seed(0)
    r = minitorch.randn(2, 3, requires_grad=True)
    u = minitorch.rand((4,), dtype="float32")
    assert r.shape == (2, 3) and r.requires_grad and r.dtype == backend.dtypes["float64"]
    assert u.shape == (4,) and not u.requires_grad and u.dtype == backend.dtypes["float32"]
    _on_device(r, backend)
    _on_device(u, backend)
    minitorch.manual_seed(0)
    expected = np.random.default_rng(0).standard_normal((2, 3))
    np.testing.assert_array_equal(minitorch.randn(2, 3).numpy(), expected)


def test_integer_tensors_cannot_require_grad(backend: Any) -> None:
    with pytest.raises(RuntimeError, match="only floating-point tensors can require grad"):
        minitorch.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="int64"):
        minitorch.arange(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="floating-point"):
        minitorch.zeros(2, dtype="int64", requires_grad=True)
    with pytest.raises(RuntimeError, match="floating-point"):
        minitorch.tensor([1, 2]).requires_grad_()


# ------------------------------------------------------------------ checked arguments
# Sizes, fill values, bounds and dtypes as PyTorch reads them, on every backend; what
# PyTorch refuses is a clear error naming the function and the bad value (it was a size
# NumPy rounded, a dtype guessed wrong, or a bare error from NumPy, torch or Python).


@pytest.mark.parametrize(
    "make",
    [
        lambda s: minitorch.zeros(*s),
        lambda s: minitorch.ones(s),
        lambda s: minitorch.full(s, 1.5),
        lambda s: minitorch.rand(*s),
        lambda s: minitorch.randn(s),
        lambda s: minitorch.randint(0, 3, s),
    ],
    ids=["zeros", "ones", "full", "rand", "randn", "randint"],
)
def test_sizes_are_ints_as_in_pytorch(backend: Any, make: Any) -> None:
    assert make((2, 3)).shape == (2, 3)
    assert make((np.int64(2), np.int32(0))).shape == (2, 0)  # NumPy ints have __index__
    assert make([2]).shape == (2,)


@pytest.mark.parametrize(
    ("who", "call", "bad"),
    [
        ("ones", lambda: minitorch.ones(2.5), "2.5"),
        ("zeros", lambda: minitorch.zeros(["2", "1"]), "'2'"),
        ("zeros", lambda: minitorch.zeros(True), "True"),
        ("zeros", lambda: minitorch.zeros(np.array([2, 3])), "array([2, 3])"),
        ("zeros", lambda: minitorch.zeros((float("inf"),)), "inf"),
        ("zeros", lambda: minitorch.zeros((2,), 3), "(2,)"),
        ("rand", lambda: minitorch.rand(2.5), "2.5"),
        ("randn", lambda: minitorch.randn(2, 1.0), "1.0"),
        ("full", lambda: minitorch.full(2.5, 1.0), "2.5"),
        ("randint", lambda: minitorch.randint(0, 3, (2.0,)), "2.0"),
    ],
)
def test_a_size_that_is_no_int_is_a_clear_error(
    backend: Any, who: str, call: Any, bad: str
) -> None:
    """``ones(2.5)`` made shape (2,), ``zeros(['2', '1'])`` (2, 1) and ``zeros(True)``
    (1,) (``int(s)`` of anything); the rest were NumPy's or Python's own errors."""
    with pytest.raises(TypeError, match=rf"^{who}: sizes must be ints") as info:
        call()
    assert bad in str(info.value)


@pytest.mark.parametrize(
    ("who", "call"),
    [
        ("zeros", lambda: minitorch.zeros(-1)),
        ("ones", lambda: minitorch.ones((2, -1))),
        ("randn", lambda: minitorch.randn(-1)),
        ("rand", lambda: minitorch.rand([-3])),
        ("full", lambda: minitorch.full(-1, 0.0)),
        ("randint", lambda: minitorch.randint(0, 3, (-1,))),
    ],
)
def test_a_negative_size_is_a_clear_error(backend: Any, who: str, call: Any) -> None:
    with pytest.raises(ValueError, match=rf"^{who}: sizes must be >= 0, got -\d"):
        call()


def test_full_takes_its_dtype_from_the_fill_value_as_torch_full(backend: Any) -> None:
    """``full((2,), 2)`` was the default float dtype; ``torch.full`` infers it: int64
    for an int, bool for a bool, the default float for a float (NumPy scalars by kind)."""
    torch = pytest.importorskip("torch")
    for fill in (2, True, 2.5, np.int32(3), np.float32(0.5), np.True_):
        with minitorch.use_backend(backend.name, dtype="float32", device=backend.device):
            t = minitorch.full((2,), fill)
        ref = torch.full((2,), fill.item() if isinstance(fill, np.generic) else fill)
        assert backend.dtype_name(t.dtype) == str(ref.dtype).removeprefix("torch."), fill
        np.testing.assert_array_equal(t.numpy(), ref.numpy())
    assert minitorch.full((2,), 2).dtype == backend.dtypes["int64"]  # float64 default too
    assert minitorch.full((2,), 2.0).dtype == backend.dtypes["float64"]
    assert minitorch.full((2,), 2, dtype="float32").dtype == backend.dtypes["float32"]
    with pytest.raises(RuntimeError, match="floating-point"):
        minitorch.full((2,), 2, requires_grad=True)  # int64, as torch.full's


def test_full_like_keeps_the_dtype_of_x_as_torch(backend: Any) -> None:
    torch = pytest.importorskip("torch")
    ints = minitorch.tensor([1, 2])
    floats = minitorch.tensor([1.0, 2.0])
    for x, ref_x, fill in (
        (ints, torch.tensor([1, 2]), 2.7),
        (ints, torch.tensor([1, 2]), -2.7),
        (floats, torch.tensor([1.0, 2.0], dtype=torch.float64), True),
        (floats, torch.tensor([1.0, 2.0], dtype=torch.float64), 3),
    ):
        t, ref = minitorch.full_like(x, fill), torch.full_like(ref_x, fill)
        assert t.dtype == x.dtype
        np.testing.assert_array_equal(t.numpy(), ref.numpy())


@pytest.mark.parametrize(
    ("who", "call"),
    [
        ("full", lambda: minitorch.full((), None)),
        ("full", lambda: minitorch.full((2,), [1.0])),
        ("full", lambda: minitorch.full((2,), "1")),
        ("full_like", lambda: minitorch.full_like(minitorch.tensor([1.0]), None)),
        ("full_like", lambda: minitorch.full_like(minitorch.tensor([1.0]), np.ones(1))),
    ],
)
def test_a_fill_value_that_is_no_number_is_a_clear_error(backend: Any, who: str, call: Any) -> None:
    """On NumPy ``full((), None)`` was nan and ``full((2,), [1.0])`` [1., 1.]."""
    with pytest.raises(TypeError, match=rf"^{who}: fill_value must be a number"):
        call()


def test_a_fill_value_the_dtype_cannot_hold_is_a_clear_error(backend: Any) -> None:
    with pytest.raises(ValueError, match=r"^full: fill_value nan .*int64"):
        minitorch.full((2,), float("nan"), dtype="int64")  # NumPy: -2**63, silently
    with pytest.raises(OverflowError, match=r"^full: fill_value 100000000000000000000 .*int64"):
        minitorch.full((2,), 10**20)
    with pytest.raises(OverflowError, match=r"^full_like: fill_value 1e\+300 .*float32"):
        minitorch.full_like(minitorch.tensor([1.0], dtype="float32"), 1e300)
    # one rule with masked_fill and x[key] = value: a float into an integer dtype is
    # truncated where the value lies in the dtype's range, as torch.full checks it
    with pytest.raises(
        OverflowError, match=r"^full: fill_value 127\.5 does not fit in int8 \(from -128 to 127\)"
    ):
        minitorch.full((2,), 127.5, dtype="int8")
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.full((2,), 127.5, dtype=torch.int8)
    for value in (126.9, -128.0, -2.7):
        got = minitorch.full((2,), value, dtype="int8")
        want = torch.full((2,), value, dtype=torch.int8)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got.numpy().dtype == np.int8
    with pytest.raises(
        TypeError, match=r"^full: fill_value \(1\+2j\) is complex and the dtype float32 is not"
    ):
        minitorch.full((2,), 1 + 2j, dtype="float32")


@pytest.mark.parametrize("make", ["tensor", "asarray"])
def test_python_numbers_the_dtype_cannot_hold_are_refused(backend: Any, make: str) -> None:
    """tensor() and the namespace's asarray of Python numbers, by full's rule: 300 into
    int8 wrapped to 44 on NumPy (torch.tensor and np.array refuse it), 1e300 into
    float32 became inf (with NumPy's overflow warning), 127.5 into int8 became 127;
    what fits is as before, nan and inf into floats too, 2.7 into int8 truncated."""
    fn = minitorch.tensor if make == "tensor" else minitorch.array_api.asarray
    who = "tensor()" if make == "tensor" else "asarray"
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.tensor([300], dtype=torch.int8)
    cases = [
        ([1, 300], "int8", "300 does not fit in int8 \\(from -128 to 127\\)"),
        ([-1], "uint8", "-1 does not fit in uint8"),
        ([[2.0, 127.5]], "int8", "127.5 does not fit in int8"),
        ([1.0, -1e300], "float32", "-1e\\+300 does not fit in float32"),
        (70000.0, "float16", "70000.0 does not fit in float16"),
    ]
    for data, dtype, message in cases:
        if dtype not in backend.named or dtype in backend.missing:
            continue  # (array-api-strict has no float16)
        with pytest.raises(OverflowError, match=f"^{re.escape(who)}: {message}"):
            fn(data, dtype=dtype)
    with pytest.raises(ValueError, match="nan and the infinities are not values of int32"):
        fn([1.0, float("nan")], dtype="int32")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning from inside
        for data, dtype, want in (
            ([1.0, math.inf, -math.inf], "float32", [1.0, math.inf, -math.inf]),
            ([-128, 127], "int8", [-128, 127]),
            ([2.7, -2.7], "int8", [2, -2]),
            (3.0e38, "float32", 3.0e38),
        ):
            got = fn(data, dtype=dtype)
            np.testing.assert_array_equal(got.numpy(), np.asarray(want, dtype=dtype), strict=True)


@pytest.mark.parametrize("fn", ["zeros_like", "ones_like", "full_like"])
def test_like_functions_need_a_tensor(backend: Any, fn: str) -> None:
    """``ones_like(3.0)`` was ``AttributeError: 'float' object has no attribute '_backend'``."""
    args = (1.0,) if fn == "full_like" else ()
    for x, given in ((3.0, "float 3.0"), ([1.0], "list"), (np.zeros(2), "ndarray")):
        with pytest.raises(TypeError, match=rf"^{fn}: needs a Tensor, got .*{given}") as info:
            getattr(minitorch, fn)(x, *args)
        assert f"minitorch.{fn.removesuffix('_like')}(shape" in str(info.value)


def test_arange_reads_numpy_integers_as_ints(backend: Any) -> None:
    """``arange(np.int64(4))`` was the default float dtype (``arange(4)`` int64), as
    ``torch.arange(np.int64(4))`` is not."""
    torch = pytest.importorskip("torch")
    for args in ((np.int64(4),), (np.int32(1), 7, np.int64(2)), (0, np.float64(2.0), 0.5)):
        t = minitorch.arange(*args)
        ref = torch.arange(*(a.item() if isinstance(a, np.generic) else a for a in args))
        assert t.dtype == backend.dtypes["int64" if ref.dtype == torch.int64 else "float64"]
        np.testing.assert_array_equal(t.numpy(), ref.numpy())


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: minitorch.arange(1, 5, 0), ValueError, "arange: step must not be zero"),
        (lambda: minitorch.arange(0.0, 1.0, 0.0), ValueError, "arange: step must not be zero"),
        (lambda: minitorch.arange("3"), TypeError, "arange: stop must be a real number.*'3'"),
        (lambda: minitorch.arange(0, float("nan")), ValueError, "arange: stop must be finite.*nan"),
        (lambda: minitorch.arange(float("-inf"), 0), ValueError, "arange: start must be finite"),
        (lambda: minitorch.arange(0, 1, 1j), TypeError, "arange: step must be a real number"),
        (lambda: minitorch.linspace(0, 1, -1), ValueError, "linspace: num must be >= 0, got -1"),
        (lambda: minitorch.linspace(0, 1, 2.5), TypeError, "linspace: num must be an int.*2.5"),
        (lambda: minitorch.linspace(0, 1, True), TypeError, "linspace: num must be an int"),
        (lambda: minitorch.linspace("0", 1, 3), TypeError, "linspace: start must be a real"),
        (lambda: minitorch.randint(3, 0, (2,)), ValueError, "randint: low must be less than high"),
        (lambda: minitorch.randint(1, 1, (2,)), ValueError, "randint: low must be less than high"),
        (lambda: minitorch.randint(1.5, 2.5, (2,)), TypeError, "randint: low must be an int.*1.5"),
        (lambda: minitorch.randint(0, 2.5, (2,)), TypeError, "randint: high must be an int.*2.5"),
    ],
)
def test_bad_range_arguments_are_clear_errors(
    backend: Any, call: Any, error: type[Exception], message: str
) -> None:
    """These were a bare ZeroDivisionError, torch's or NumPy's own text, or (randint of
    floats) draws from the truncated bounds."""
    with pytest.raises(error, match=rf"^{message}"):
        call()


def test_range_arguments_that_pytorch_takes(backend: Any) -> None:
    np.testing.assert_array_equal(minitorch.linspace(0, 1, np.int64(3)).numpy(), [0, 0.5, 1])
    assert minitorch.linspace(0, 1, 0).shape == (0,)
    np.testing.assert_array_equal(minitorch.arange(5, 1, -1.5).numpy(), [5.0, 3.5, 2.0])
    assert minitorch.arange(3, 1).shape == (0,)
    r = minitorch.randint(np.int64(2), np.int32(4), 5)
    assert r.shape == (5,) and r.dtype == backend.dtypes["int64"]
    assert set(r.numpy().tolist()) <= {2, 3}


@pytest.mark.parametrize(
    "data",
    [10**20, [10**20], [[1, 2], [3, -(10**19)]], 2**63, 10**400],
    ids=["1e20", "[1e20]", "nested -1e19", "2**63", "1e400"],
)
def test_an_int_beyond_int64_is_a_clear_error(backend: Any, data: Any) -> None:
    """It said "could not make a rectangular array ... (ragged nested lists?)"; and
    ``tensor(2**63)`` was a uint64 tensor on NumPy and -2**63 on array-api-strict."""
    with pytest.raises(
        OverflowError, match=r"^tensor\(\): the integer -?\d+ does not fit in int64"
    ):
        minitorch.tensor(data)
    assert minitorch.tensor(2**63 - 1).item() == 2**63 - 1
    assert minitorch.tensor([-(2**63)]).dtype == backend.dtypes["int64"]


@pytest.mark.parametrize(("python", "name"), [(float, "float64"), (int, "int64"), (bool, "bool")])
def test_python_number_types_as_dtypes(backend: Any, python: type, name: str) -> None:
    """``dtype=float`` worked on NumPy and torch but was refused on array-api-strict
    ("dtype must be one of the supported dtypes, got <class 'float'>"); it is float64 on
    every backend, as ``torch.zeros(2, dtype=float)``."""
    torch = pytest.importorskip("torch")
    assert str(torch.zeros(2, dtype=python).dtype) == f"torch.{name}"
    with minitorch.use_backend(backend.name, dtype="float32", device=backend.device):
        made = [
            minitorch.zeros(2, dtype=python),
            minitorch.full((2,), 1, dtype=python),
            minitorch.tensor([1, 0], dtype=python),
            minitorch.zeros_like(minitorch.tensor([1.0]), dtype=python),
        ]
        if python is not bool:  # an arange of bools: not in torch, NumPy only to length 2
            made += [minitorch.arange(3, dtype=python), minitorch.randint(0, 2, 2, dtype=python)]
        if python is float:
            made += [minitorch.rand(2, dtype=python), minitorch.linspace(0, 1, 2, dtype=python)]
    for t in made:
        assert t.dtype == backend.dtypes[name]


# ------------------------------------------------------------------ numpy(), item(), to()


def test_numpy_and_item(backend: Any) -> None:
    t = minitorch.tensor([[1.5, -2.0]])
    a = t.numpy()
    assert isinstance(a, np.ndarray) and a.dtype == np.float64
    np.testing.assert_array_equal(a, [[1.5, -2.0]])
    a[0, 0] = 9.0  # a copy: the tensor is unchanged
    assert t.numpy()[0, 0] == 1.5
    v = minitorch.tensor([[3.25]]).item()
    assert isinstance(v, float) and v == 3.25
    assert minitorch.tensor(4).item() == 4
    assert float(minitorch.tensor(2.5)) == 2.5
    with pytest.raises(ValueError, match=r"only a tensor with one element.*\(1, 2\)"):
        t.item()


@pytest.mark.parametrize("direction", ["to other", "from other"])
def test_to_moves_between_backends_differentiably(backend: Any, direction: str) -> None:
    """Session backend -> other and back (other: numpy, or torch in the numpy session);
    the gradient arrives on the source backend."""
    other = "numpy" if backend.name != "numpy" else "torch"
    if other == "torch":
        pytest.importorskip("torch")
    src_name, dst_name = (backend.name, other) if direction == "to other" else (other, backend.name)
    src_dev = backend.device if src_name == backend.name else None
    dst_dev = backend.device if dst_name == backend.name else None
    with minitorch.use_backend(src_name, dtype="float64", device=src_dev):
        x = minitorch.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x.to(dst_name, device=dst_dev)
    assert y.backend.name == dst_name
    assert y.dtype == y.backend.dtypes["float64"]
    if dst_dev is not None:
        assert str(y.device) == str(dst_dev)
    assert y.requires_grad and y.grad_fn is not None
    np.testing.assert_array_equal(y.numpy(), [1.0, -2.0, 3.0])
    (y * y * 3.0).sum().backward()
    assert x.grad is not None
    assert type(x.grad) is type(x.data)
    assert x.grad.dtype == x.data.dtype
    assert str(x.grad.device) == str(x.data.device)
    np.testing.assert_array_equal(x.backend.to_numpy(x.grad), [6.0, -12.0, 18.0])


def test_to_same_backend_and_dtype(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    assert x.to(backend.name) is x
    y = x.to(backend.name, dtype="float32")
    assert y.dtype == backend.dtypes["float32"] and y.backend.name == backend.name
    y.sum().backward()
    assert x.grad.dtype == backend.dtypes["float64"]
    np.testing.assert_array_equal(backend.to_numpy(x.grad), [1.0, 1.0])


@pytest.mark.backend_independent
def test_to_torch_from_negatively_strided_numpy() -> None:
    """torch.from_dlpack on a negatively strided NumPy array aborts the interpreter;
    moving such data must copy it first. Run in a subprocess so a crash is a failure."""
    pytest.importorskip("torch")
    code = (
        "import numpy as np, minitorch\n"
        "a = np.arange(12.0).reshape(3, 4)\n"
        "x = minitorch.tensor(a, requires_grad=True)\n"
        "f = minitorch.flip(x, axis=0)\n"
        "assert f.data.strides[0] < 0, f.data.strides\n"
        "t = f.to('torch')\n"
        "assert np.array_equal(t.numpy(), a[::-1])\n"
        "(t * t).sum().backward()\n"
        "assert np.array_equal(x.grad, 2 * a), x.grad\n"
        "view = minitorch.Tensor._make(a[::-1, ::-1], minitorch.get_backend(), None)\n"
        "assert np.array_equal(view.to('torch').numpy(), a[::-1, ::-1])\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, (res.returncode, res.stderr[-2000:])
    assert res.stdout.strip() == "ok"


# ---------------------------------------------------------------- dtypes of the draws
def _has(backend: Any, name: str) -> bool:
    return name in backend.named


@pytest.mark.parametrize("name", ["bool", "int8", "uint8", "int32", "int64"])
@pytest.mark.parametrize("fn", ["randn", "rand"])
def test_real_draws_refuse_integer_and_bool_dtypes(backend: Any, fn: str, name: str) -> None:
    """A cast of normal or uniform draws to an integer would truncate them (randn(3,
    dtype='int64') was all zeros): refused, as PyTorch refuses them."""
    if not _has(backend, name):
        pytest.skip(f"{backend.name} has no {name}")
    with pytest.raises((NotImplementedError, RuntimeError)):
        getattr(torch, fn)(3, dtype=getattr(torch, name))
    with pytest.raises(TypeError, match=rf"{fn}: dtype {name} is not a floating-point.*randint"):
        getattr(minitorch, fn)(3, dtype=name)


@pytest.mark.parametrize("name", ["complex64", "complex128"])
def test_complex_draws_are_complex_as_pytorchs(backend: Any, name: str) -> None:
    """randn: real and imaginary parts each normal with variance 1/2 (mean |z|^2 = 1);
    rand: each uniform in [0, 1) — the statistics of torch's draws of the same size."""
    if not _has(backend, name):
        pytest.skip(f"{backend.name} has no {name}")
    n = 200_000
    z = minitorch.randn(n, dtype=name, generator=minitorch.Generator(0))
    assert z.dtype == backend.named[name]
    a = z.numpy()
    torch.manual_seed(0)
    ref = torch.randn(n, dtype=getattr(torch, name)).numpy()
    for part in (np.real, np.imag):
        assert abs(part(a).var() - 0.5) < 0.01
        assert abs(part(ref).var() - 0.5) < 0.01
        assert abs(part(a).mean()) < 0.01
    assert abs(np.mean(np.abs(a) ** 2) - np.mean(np.abs(ref) ** 2)) < 0.02
    assert np.corrcoef(a.real, a.imag)[0, 1] < 0.01  # two draws per element, not one
    u = minitorch.rand(n, dtype=name).numpy()
    for part in (np.real, np.imag):
        assert part(u).min() >= 0.0 and part(u).max() < 1.0
        assert abs(part(u).mean() - 0.5) < 0.01


_RANDINT_BOUNDS = [
    ("int8", 0, 128),
    ("int8", 0, 129),
    ("int8", -128, 0),
    ("int8", -129, 0),
    ("uint8", 0, 256),
    ("uint8", -1, 3),
    ("uint8", 0, 257),
    ("bool", 0, 2),
    ("bool", 0, 3),
    ("bool", -1, 1),
    ("int16", 0, 2**15 + 1),
    ("int32", -(2**31), 2**31),
    ("int32", 0, 2**31 + 1),
    ("float32", 0, 2**24 + 1),
    ("float32", 0, 2**24 + 2),
    ("float32", -(2**24) - 1, 0),
    ("float64", 0, 2**53 + 1),
    ("float64", 0, 2**53 + 2),
]


@pytest.mark.parametrize(("name", "low", "high"), _RANDINT_BOUNDS)
def test_randint_refuses_bounds_its_dtype_cannot_hold(
    backend: Any, name: str, low: int, high: int
) -> None:
    """Draws beyond the dtype's range would wrap (randint(0, 1000, 3, dtype='int8') gave
    negative numbers) or round: refused exactly where PyTorch refuses (integers, bool)
    or warns that it will (floats, beyond the integers they hold exactly)."""
    if not _has(backend, name):
        pytest.skip(f"{backend.name} has no {name}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            torch.randint(low, high, (3,), dtype=getattr(torch, name))
            torch_refuses = any("out of bounds" in str(w.message) for w in caught)
        except RuntimeError:
            torch_refuses = True
    if torch_refuses:
        with pytest.raises(ValueError, match=rf"randint: .*\[{low}, {high}\).*dtype {name}"):
            minitorch.randint(low, high, 3, dtype=name)
    else:
        x = minitorch.randint(low, high, 1000, dtype=name, generator=minitorch.Generator(1))
        a = x.numpy().astype(np.float64)
        assert a.min() >= low and a.max() <= high - 1


def test_randint_refuses_complex_dtypes() -> None:
    with pytest.raises(RuntimeError):
        torch.randint(0, 3, (3,), dtype=torch.complex64)
    with pytest.raises(TypeError, match="randint: dtype complex64 is complex"):
        minitorch.randint(0, 3, 3, dtype="complex64")
