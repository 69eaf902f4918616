"""One dtype rule everywhere a dtype is taken: every dtype of the Array API standard
that the library has, and float16 and bfloat16 where it has them, by name, as a NumPy
dtype or scalar type, or as any library's dtype object; anything else one ValueError
that lists what the backend takes. Values against PyTorch (NumPy where PyTorch lacks
the op for the dtype)."""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import STANDARD_DTYPES

import minitorch
import minitorch.array_api as mxp

torch = pytest.importorskip("torch", reason="PyTorch is the reference")

#: the floating dtypes beyond the standard that minitorch takes where the library has them
HALF = ("float16", "bfloat16")


def _spellings(name: str) -> list[Any]:
    """``name`` as a string, NumPy's dtype and scalar type, and the dtype objects of
    torch, JAX and array-api-strict, where each library has it (and is installed)."""
    out: list[Any] = [name]
    if hasattr(np, name):
        out += [np.dtype(name), getattr(np, name)]
    out.append(getattr(torch, name))
    for lib in ("jax.numpy", "array_api_strict"):
        if importlib.util.find_spec(lib.split(".")[0]) is not None:
            module = importlib.import_module(lib)
            if hasattr(module, name):
                out.append(getattr(module, name))
    return out


#: who -> a call making a tensor of a dtype, and PyTorch's same call
MAKERS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "zeros": (lambda d: minitorch.zeros(2, 3, dtype=d), lambda d: torch.zeros(2, 3, dtype=d)),
    "ones": (lambda d: minitorch.ones((2, 3), dtype=d), lambda d: torch.ones(2, 3, dtype=d)),
    "full": (
        lambda d: minitorch.full((2, 3), 3, dtype=d),
        lambda d: torch.full((2, 3), 3, dtype=d),
    ),
    "tensor": (
        lambda d: minitorch.tensor([1, 0, 2], dtype=d),
        lambda d: torch.tensor([1, 0, 2], dtype=d),
    ),
    "zeros_like": (
        lambda d: minitorch.zeros_like(minitorch.ones(3), dtype=d),
        lambda d: torch.zeros_like(torch.ones(3), dtype=d),
    ),
    "full_like": (
        lambda d: minitorch.full_like(minitorch.ones(3), 2, dtype=d),
        lambda d: torch.full_like(torch.ones(3), 2, dtype=d),
    ),
    "astype": (
        lambda d: minitorch.tensor([1.5, 0.0, 2.0]).astype(d),
        lambda d: torch.tensor([1.5, 0.0, 2.0], dtype=torch.float64).to(d),
    ),
    "to": (
        lambda d: minitorch.tensor([1.5, 0.0, 2.0]).to(dtype=d),
        lambda d: torch.tensor([1.5, 0.0, 2.0], dtype=torch.float64).to(d),
    ),
    "arange": (
        lambda d: minitorch.arange(0, 5, 2, dtype=d),
        lambda d: torch.arange(0, 5, 2, dtype=d),
    ),
    "eye": (lambda d: mxp.eye(3, 4, k=1, dtype=d), lambda d: torch.eye(3, 4, dtype=d).roll(1, 1)),
}
#: the same where PyTorch has no kernel for the dtype (arange of unsigned and complex
#: dtypes, eye of unsigned ones beyond uint8): NumPy's
NUMPY_MAKERS: dict[str, Callable[[str], np.ndarray]] = {
    "arange": lambda n: np.arange(0, 5, 2, dtype=n),
    "eye": lambda n: np.eye(3, 4, k=1, dtype=n),
}


def _host(t: Any) -> np.ndarray:
    """Values of a minitorch or PyTorch tensor as a NumPy array of a dtype NumPy has
    (bfloat16 widened to float64)."""
    if isinstance(t, torch.Tensor):
        return (t.to(torch.float64) if t.dtype == torch.bfloat16 else t).numpy()
    if t.backend.dtype_name(t.dtype) == "bfloat16":
        t = t.astype("float64")
    return np.asarray(t.to("numpy").data)


def _reference(who: str, name: str) -> np.ndarray:
    try:
        return _host(MAKERS[who][1](getattr(torch, name)))
    except (RuntimeError, NotImplementedError):  # no kernel for this dtype in PyTorch
        return NUMPY_MAKERS[who](name)


def _takes(who: str, name: str) -> bool:
    """Whether ``who`` makes ``name`` at all: an arange of bools is in neither PyTorch
    nor NumPy (past two elements)."""
    return not (who == "arange" and name == "bool")


@pytest.mark.parametrize("name", [*STANDARD_DTYPES, *HALF])
def test_every_dtype_by_any_spelling_everywhere(backend: Any, name: str) -> None:
    """On NumPy, zeros(2, dtype="complex128") and dtype=np.complex128 were refused
    ("unknown dtype 'complex128' ... choose one of" minitorch's five), while
    dtype=torch.complex128, x.astype("complex128") and tensor([1+2j]) made complex128:
    a dtype by name was taken only among minitorch's five, another library's dtype
    object and astype's name were any the library had (float128, "double", "pi")."""
    if not hasattr(backend.xp, name):  # float16 and bfloat16 on array-api-strict, bfloat16 on NumPy
        library = backend.library.__name__
        for who, (make, _) in MAKERS.items():
            for spelled in _spellings(name):
                with pytest.raises(
                    ValueError,
                    match=rf"^{who}: unknown dtype '{name}' for backend '{backend.name}' "
                    rf"\({library} has no {name}\); choose one of bool, int8, int16, ",
                ):
                    make(spelled)
        return
    for who, (make, _) in MAKERS.items():
        if not _takes(who, name):
            continue
        want = _reference(who, name)
        for spelled in _spellings(name):
            got = make(spelled)
            assert backend.dtype_name(got.dtype) == name, (who, spelled)
            assert got.backend.name == backend.name and str(got.device) == str(backend.device)
            np.testing.assert_array_equal(_host(got), want, err_msg=f"{who} {spelled!r}")


@pytest.mark.parametrize("name", ["float32", "float64", "complex64", "complex128", *HALF])
def test_linspace_and_random_draws_take_every_floating_dtype(backend: Any, name: str) -> None:
    if not hasattr(backend.xp, name):
        with pytest.raises(ValueError, match=rf"^linspace: unknown dtype '{name}'"):
            minitorch.linspace(0, 1, 5, dtype=name)
        return
    for spelled in _spellings(name):
        got = minitorch.linspace(0, 1, 5, dtype=spelled)
        assert backend.dtype_name(got.dtype) == name
        np.testing.assert_array_equal(
            _host(got), _host(torch.linspace(0, 1, 5, dtype=getattr(torch, name)))
        )
        assert backend.dtype_name(minitorch.rand(3, dtype=spelled).dtype) == name


@pytest.mark.parametrize("name", ["int8", "int16", "uint8", "int32"])
def test_randint_takes_every_integer_dtype(backend: Any, name: str) -> None:
    for spelled in _spellings(name):
        got = minitorch.randint(0, 100, (50,), dtype=spelled, generator=minitorch.Generator(3))
        assert backend.dtype_name(got.dtype) == name
        host = _host(got)
        assert host.min() >= 0 and host.max() < 100


#: names and dtype objects beyond the rule: aliases, wider floats, complex32, float8, ...
OUTSIDE = [
    "float128",
    "double",
    "half",
    "float",
    "f8",
    "complex32",
    "nope",
    torch.complex32,
    torch.float8_e4m3fn,
    torch.qint8,
    np.dtype("U3"),
    np.str_,
    np.object_,
    *([np.float128, np.dtype("float128")] if hasattr(np, "float128") else []),
]


@pytest.mark.parametrize("dtype", OUTSIDE, ids=str)
def test_a_dtype_outside_the_rule_is_one_error_listing_what_the_backend_takes(
    backend: Any, dtype: Any
) -> None:
    """NumPy's float128, torch's complex32 and float8 types and aliases such as "double"
    were taken by astype (any name the library had: also "pi", whose float astype then
    failed on) and by creation functions as their own library's dtype objects
    (torch.complex32 on torch), and refused by name elsewhere."""
    takes = ", ".join(n for n in (*STANDARD_DTYPES, *HALF) if hasattr(backend.xp, n))
    for who, (make, _) in MAKERS.items():
        with pytest.raises(ValueError) as info:
            make(dtype)
        message = str(info.value)
        assert re.match(rf"^{who}: unknown dtype '\w+' for backend '{backend.name}' ", message)
        assert "minitorch takes the dtypes of the Array API standard" in message
        assert message.endswith(
            f"; choose one of {takes} (by name, as a NumPy dtype or any library's dtype)"
        ), message
        assert not isinstance(info.value, minitorch.OpError)


def test_set_backend_takes_the_float_defaults_by_any_spelling(backend: Any) -> None:
    for name in ("float32", "float64"):
        for spelled in _spellings(name):
            with minitorch.use_backend(backend.name, dtype=spelled, device=backend.device):
                assert backend.dtype_name(minitorch.tensor([1.5]).dtype) == name
    with pytest.raises(ValueError, match="the default dtype must be float32 or float64"):
        minitorch.set_backend(backend.name, dtype="complex64")
    with pytest.raises(ValueError, match=r"unknown dtype 'float128' for backend"):
        minitorch.set_backend(backend.name, dtype="float128")


def _without_x64(code: str) -> list[str]:
    """The lines ``code`` prints in a new Python process where JAX has no x64 mode."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()


def test_jax_without_x64_names_the_64_bit_dtypes_it_lacks(backend: Any) -> None:
    """Without x64 mode JAX makes float64 float32, complex128 complex64 and uint64
    uint32, silently: each is refused, with how to get it."""
    if backend.name != "jax":
        pytest.skip("JAX's x64 mode")
    code = (
        "import minitorch\n"
        "with minitorch.use_backend('jax'):\n"
        "    for name in ('float64', 'complex128', 'uint64'):\n"
        "        try:\n"
        "            minitorch.zeros(2, dtype=name)\n"
        "        except ValueError as exc:\n"
        "            print(exc)\n"
        "    print(minitorch.zeros(2, dtype='complex64').dtype)\n"
    )
    out = _without_x64(code)
    assert len(out) == 4 and out[3] == "complex64", out
    for line, name in zip(out, ("float64", "complex128", "uint64"), strict=False):
        assert line.startswith(
            f"zeros: unknown dtype '{name}' for backend 'jax' (JAX has {name} only in x64 "
            f"mode: set JAX_ENABLE_X64=1 before importing jax); choose one of bool, int8, "
        ), line


def test_jax_without_x64_refuses_64_bit_values_it_would_wrap(backend: Any) -> None:
    """Without x64 mode JAX holds int64 as int32 and float64 as float32: tensor(2**40),
    tensor of an int64 array beyond int32, full((2,), 2**40) and arange(2**40, ...)
    gave zeros and wrapped values, a float64 array beyond float32 inf, silently. Each is
    refused naming int32 (or float32) and x64 mode; values within range stay exact."""
    if backend.name != "jax":
        pytest.skip("JAX's x64 mode")
    code = (
        "import numpy as np, minitorch\n"
        "minitorch.set_backend('jax')\n"
        "calls = [\n"
        "    lambda: minitorch.tensor(2**40),\n"
        "    lambda: minitorch.tensor(np.array([5, -2**31 - 1])),\n"
        "    lambda: minitorch.tensor(np.array([2**33], dtype=np.uint64)),\n"
        "    lambda: minitorch.tensor(np.array([1.0, 1e300])),\n"
        "    lambda: minitorch.full((2,), 2**40),\n"
        "    lambda: minitorch.arange(2**40, 2**40 + 2),\n"
        "    lambda: minitorch.randint(0, 2**40, 3),\n"
        "    lambda: minitorch.tensor([1, 2]) + 2**40,\n"
        "]\n"
        "for call in calls:\n"
        "    try:\n"
        "        print('made', call().tolist())\n"
        "    except (OverflowError, ValueError) as exc:\n"
        "        print(type(exc).__name__, exc)\n"
        "ok = minitorch.tensor(np.array([2**31 - 1, -2**31]))\n"
        "print('ok', ok.tolist(), minitorch.full((2,), 2**31 - 1).tolist())\n"
    )
    out = _without_x64(code)
    assert len(out) == 9, out
    int32 = "int32 (JAX has int64 only in x64 mode: set JAX_ENABLE_X64=1 before importing jax)"
    want = [
        rf"OverflowError cannot make a jax tensor of int64 data: it becomes {re.escape(int32)}, "
        r"which cannot hold 1099511627776 \(int32 holds from -2147483648 to 2147483647\)",
        r"OverflowError cannot make a jax tensor of int64 data: .* cannot hold -2147483649",
        r"OverflowError cannot make a jax tensor of uint64 data: it becomes int32 \(JAX has "
        r"uint64 only in x64 mode.* cannot hold 8589934592",
        r"OverflowError cannot make a jax tensor of float64 data: it becomes float32 \(JAX has "
        r"float64 only in x64 mode.* cannot hold 1e\+300",
        r"OverflowError full: fill_value 1099511627776 does not fit in int32 \(from -2147483648",
        r"ValueError arange: start=1099511627776 is beyond int32",
        r"ValueError randint: .* dtype int32 cannot hold",
        r"OpError add failed .*the Python int 1099511627776 does not fit in int32",
    ]
    for line, pattern in zip(out, want, strict=False):
        assert re.match(pattern, line), (line, pattern)
    assert out[8] == "ok [2147483647, -2147483648] [2147483647, 2147483647]", out[8]


@pytest.mark.parametrize("name", [*STANDARD_DTYPES, "float16"])
def test_tensor_of_a_numpy_array_keeps_its_dtype_as_torch_tensor(backend: Any, name: str) -> None:
    """``tensor(np_array)`` keeps the array's dtype where the backend has it, as
    ``torch.tensor`` does (int8 stayed int8 only on NumPy: elsewhere it became int64,
    and float16 the default float); where the backend lacks it (float16 on
    array-api-strict) a float becomes the default float dtype. Values exact."""
    a = (np.arange(6).reshape(2, 3) % 3).astype(name)
    got = minitorch.tensor(a)
    want = torch.tensor(a)
    assert str(want.dtype) == f"torch.{name}"
    if name in backend.named:
        assert backend.dtype_name(got.dtype) == name
    else:
        assert got.dtype == backend.dtype, (name, got.dtype)
    np.testing.assert_array_equal(_host(got).astype(name), want.numpy())
    # a NumPy scalar as its array
    assert minitorch.tensor(a[0, 1]).dtype == got.dtype


def test_erf_and_gelu_of_float16_stay_float16(backend: Any) -> None:
    """As torch.erf: a float16 tensor's erf (and the exact GELU made of it) is float16.
    NumPy's SciPy erf has float32 and float64 loops and gave float64."""
    if "float16" not in backend.named:
        pytest.skip(f"{backend.name} has no float16")
    a = np.linspace(-3, 3, 13).astype(np.float16)
    for name, got, want in (
        ("erf", minitorch.erf(minitorch.tensor(a)), torch.erf(torch.tensor(a))),
        ("gelu", minitorch.gelu(minitorch.tensor(a)), torch.nn.functional.gelu(torch.tensor(a))),
    ):
        assert backend.dtype_name(got.dtype) == "float16", (name, got.dtype)
        np.testing.assert_allclose(_host(got), want.numpy(), atol=2e-3, err_msg=name)


#: masked_fill values a dtype cannot hold: PyTorch refuses each ("value cannot be
#: converted to type ... without overflow"); NumPy wrapped -10000 into int8 (-16)
BEYOND = [
    ("int8", -10000.0),
    ("int8", 127.5),
    ("uint8", -1),
    ("int8", float("nan")),
    ("int32", float("inf")),
    ("int64", 2**63),
    ("float32", 1e39),
    ("float16", -1e5),
]


@pytest.mark.parametrize(("name", "value"), BEYOND)
def test_masked_fill_refuses_a_value_its_dtype_cannot_hold(
    backend: Any, name: str, value: Any
) -> None:
    if name not in backend.named:
        pytest.skip(f"{backend.name} has no {name}")
    x = minitorch.zeros(2, 3, dtype=name)
    mask = minitorch.tensor([[True, False, True]] * 2)
    with pytest.raises(
        minitorch.OpError,
        match=rf"masked_fill: the tensor's dtype cannot hold the value: .* {name}\b",
    ):
        x.masked_fill(mask, value)
    # and written by index: a mask, index tensors, an int (three paths of setitem)
    for key in (mask, minitorch.tensor([1, 0]), 1):
        with pytest.raises(
            minitorch.OpError,
            match=rf"x\[key\] = value: the tensor's dtype cannot hold the value: .* {name}\b",
        ):
            x[key] = value
    np.testing.assert_array_equal(_host(x), np.zeros((2, 3)))  # nothing written
    if name != "uint8":  # (torch wraps -1 into uint8: minitorch refuses it too)
        with pytest.raises(RuntimeError, match="without overflow"):
            torch.zeros(2, 3, dtype=getattr(torch, name)).masked_fill(
                torch.tensor([[True, False, True]] * 2), value
            )
    # what fits is written, as PyTorch writes it: the largest, -inf into a float
    edge = float("-inf") if "float" in name else int(np.iinfo(name).max)
    got = x.masked_fill(mask, edge)
    want = torch.zeros(2, 3, dtype=getattr(torch, name)).masked_fill(
        torch.tensor([[True, False, True]] * 2), edge
    )
    np.testing.assert_array_equal(_host(got), want.numpy())


@pytest.mark.parametrize("name", ["int8", "int16", "int64", "uint8", "bool"])
def test_signbit_and_nextafter_of_integers(backend: Any, name: str) -> None:
    """signbit of an integer tensor as torch.signbit (negative ones; array-api-strict's
    signbit took floats only); nextafter of integers works in the default float dtype,
    as minitorch's other functions of real numbers (torch refuses them, NumPy made int8
    float16)."""
    a = np.array([[-3, 0, 2], [1, -1, 5]]).astype(name)
    got = minitorch.signbit(minitorch.tensor(a))
    np.testing.assert_array_equal(_host(got), torch.signbit(torch.tensor(a)).numpy())
    after = minitorch.nextafter(minitorch.tensor(a), minitorch.tensor(a) if name == "bool" else 100)
    assert after.dtype == backend.dtype
    f = a.astype(backend.dtype_name(backend.dtype))
    np.testing.assert_array_equal(_host(after), np.nextafter(f, f if name == "bool" else 100))


@pytest.mark.parametrize(
    ("name", "value", "written"),
    [
        ("int8", 2.75, 2),
        ("int8", -3.5, -3),
        ("int16", True, 1),
        ("bool", 5, True),
        ("float32", 3, 3.0),
    ],
)
def test_a_number_of_another_kind_is_written_as_numpy_and_torch_write_it(
    backend: Any, name: str, value: Any, written: Any
) -> None:
    """x[key] = number and masked_fill take a number of another kind as NumPy and
    PyTorch do (a float into an integer tensor truncated toward zero), by every path of
    setitem, on every backend (array-api-strict refused x[1] = 2.75 into int8)."""
    t = torch.zeros(4, dtype=getattr(torch, name))
    t[1] = value
    assert t[1].item() == written
    for key in (1, minitorch.tensor([1]), minitorch.tensor([False, True, False, False])):
        x = minitorch.zeros(4, dtype=name)
        x[key] = value
        np.testing.assert_array_equal(_host(x), t.numpy())
    mask = minitorch.tensor([False, True, False, False])
    np.testing.assert_array_equal(
        _host(minitorch.zeros(4, dtype=name).masked_fill(mask, value)), t.numpy()
    )


def test_sums_of_unsigned_tensors_are_uint64_but_on_torch(backend: Any) -> None:
    """The Array API's uint64 for the sum, product, cumulative sum and trace of uint8
    (docs/semantics.md), but int64 on torch, as PyTorch (it has no uint64 sum); the
    values exact either way (300 would wrap in uint8)."""
    a = np.array([[200, 100], [3, 1]], dtype=np.uint8)
    x = minitorch.tensor(a)
    xp = minitorch.array_api.namespace()
    want = "int64" if backend.name == "torch" else "uint64"
    for name, got, value in (
        ("sum", x.sum(), 304),
        ("prod", xp.prod(x), 60000),
        ("cumulative_sum", xp.cumulative_sum(x, axis=0), [[200, 100], [203, 101]]),
        ("trace", minitorch.trace(x), 201),
    ):
        assert backend.dtype_name(got.dtype) == want, (name, got.dtype)
        np.testing.assert_array_equal(_host(got), value, err_msg=name)


@pytest.mark.parametrize(
    "name",
    [
        "cholesky",
        "det",
        "eigh",
        "eigvalsh",
        "inv",
        "matrix_rank",
        "pinv",
        "qr",
        "slogdet",
        "solve",
        "svd",
        "svdvals",
    ],
)
def test_linear_algebra_refuses_half_precision_matrices(backend: Any, name: str) -> None:
    """float16 matrices: an OpError saying to convert, on every backend with float16
    (PyTorch refuses them too). NumPy's own refusal had been reported as 'the matrix is
    singular' (inv, solve) or 'not positive definite' (cholesky); JAX's det took them."""
    if "float16" not in backend.named:
        pytest.skip(f"{backend.name} has no float16")
    a = np.array([[2.0, 1.0], [1.0, 3.0]], dtype=np.float16)
    x = minitorch.tensor(a)
    args = (x, x) if name == "solve" else (x,)
    with pytest.raises(minitorch.OpError, match=r"needs float32 or float64 matrices.*float16"):
        getattr(minitorch.linalg, name)(*args)
    with pytest.raises((RuntimeError, NotImplementedError)):
        torch.linalg.inv(torch.tensor(a))
    # converted, it works: the inverse as NumPy's of the float32 matrix
    np.testing.assert_allclose(
        _host(minitorch.linalg.inv(x.astype("float32"))),
        np.linalg.inv(a.astype(np.float32)),
        rtol=1e-6,
    )


def test_an_int_beyond_every_float_written_into_a_tensor_is_refused(backend: Any) -> None:
    """x[0] = 2**2000 and masked_fill(..., 2**2000): the OpError naming the dtype, not
    Python's OverflowError from converting the int to a float (int64 and float32)."""
    mask = minitorch.tensor([True, False])
    for name in ("int64", "float32"):
        x = minitorch.zeros(2, dtype=name)
        with pytest.raises(minitorch.OpError, match=rf"x\[key\] = value: .* {name}"):
            x[0] = 2**2000
        with pytest.raises(minitorch.OpError, match=rf"masked_fill: .* {name}"):
            x.masked_fill(mask, 2**2000)


def test_reductions_of_booleans_count_as_torch_does(backend: Any) -> None:
    """sum, prod, cumulative_sum and cumulative_prod of a boolean tensor are int64, as
    in PyTorch (``(pred == y).sum()``), on every backend: array-api-strict refused them
    (the standard's take numbers only). argmax and argmin of booleans give the first
    True or False, as NumPy (torch and array-api-strict refused)."""
    a = np.array([[True, False, True], [True, True, False]])
    t, ta = minitorch.tensor(a), torch.tensor(a)
    xp = minitorch.array_api.namespace()
    for name, got, want in (
        ("sum", t.sum(), ta.sum()),
        ("sum axis 0", t.sum(axis=0), ta.sum(0)),
        ("prod", xp.prod(t, axis=1), torch.prod(ta, 1)),
        ("cumulative_sum", xp.cumulative_sum(t, axis=0), torch.cumsum(ta, 0)),
        ("cumulative_prod", xp.cumulative_prod(t, axis=1), torch.cumprod(ta, 1)),
    ):
        assert backend.dtype_name(got.dtype) == "int64", (name, got.dtype)
        np.testing.assert_array_equal(_host(got), want.numpy(), err_msg=name)
    for axis in (None, 0, 1):
        np.testing.assert_array_equal(_host(minitorch.argmax(t, axis=axis)), np.argmax(a, axis))
        np.testing.assert_array_equal(_host(minitorch.argmin(t, axis=axis)), np.argmin(a, axis))
