"""Devices and precision on every backend, checked on the CPU.

What a GPU would show is checked through the code paths it takes: the device-name
resolution with a stubbed current device, the TF32 switches with stand-in flag objects
(and torch's real flag object on the CPU), JAX's precision in the traced program, and
the CuPy backend's functions run on NumPy (they take the library as an argument). The
``gpu``-marked tests at the end run only where CUDA is.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import importlib.util
import itertools
import math
import re
import subprocess
import sys
import tomllib
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import array_api_compat.numpy as compat_numpy
import numpy as np
import pytest

import minitorch
from minitorch.backend import (
    BACKENDS,
    _cupy,
    _fallback,
    device_name,
    make_backend,
    resolve,
    resolve_device,
)
from minitorch.errors import BackendMismatchError

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_STRICT = importlib.util.find_spec("array_api_strict") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
needs_strict = pytest.mark.skipif(not HAS_STRICT, reason="needs array_api_strict")


# ------------------------------------------------------------------ device names


def _current(index: int | None) -> Any:
    asked: list[str] = []

    def current(kind: str) -> int | None:
        asked.append(kind)
        return index

    current.asked = asked  # type: ignore[attr-defined]
    return current


@pytest.mark.parametrize(
    ("name", "current", "expected"),
    [
        ("cuda", 0, "cuda:0"),  # a bare "cuda" is the current device
        ("cuda", 2, "cuda:2"),
        ("cuda:1", 2, "cuda:1"),  # an explicit index wins
        ("cuda:01", 0, "cuda:1"),
        ("gpu", 3, "gpu:3"),
        ("cuda", None, "cuda"),  # the library cannot tell (a CPU build): as given
        ("cpu", 5, "cpu"),  # torch's CPU tensors report no index
        ("cpu:0", 5, "cpu"),
        ("cpu:1", 5, "cpu:1"),
        ("meta", 5, "meta"),
        (" cuda ", 1, "cuda:1"),
        ("device1", None, "device1"),  # array-api-strict's names
    ],
)
def test_resolve_device_makes_the_index_explicit(
    name: str, current: int | None, expected: str
) -> None:
    assert resolve_device(name, _current(current)) == expected


def test_resolve_device_asks_for_the_current_index_only_without_one() -> None:
    current = _current(4)
    resolve_device("cuda:1", current)
    resolve_device("cpu", current)
    assert current.asked == []
    resolve_device("cuda", current)
    assert current.asked == ["cuda"]


@pytest.mark.parametrize("name", ["cuda:x", "cuda:-1", "cuda:", "", "  ", ":0"])
def test_resolve_device_refuses_malformed_names(name: str) -> None:
    with pytest.raises(ValueError, match="device"):
        resolve_device(name, _current(0))


@needs_torch
def test_torch_resolves_cuda_to_the_current_device(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from minitorch.backend import _torch

    monkeypatch.setattr(_torch, "_current_index", lambda kind: 3 if kind == "cuda" else None)
    monkeypatch.setattr(_torch, "_check_available", lambda dev: None)  # as if 4 GPUs
    assert _torch._parse_device("cuda") == torch.device("cuda:3")
    assert _torch._parse_device(torch.device("cuda")) == torch.device("cuda:3")
    assert _torch._parse_device("cuda:1") == torch.device("cuda:1")
    assert _torch._parse_device("cpu:0") == torch.device("cpu")
    # the backend made for "cuda" reports the indexed device, as its tensors would
    monkeypatch.setattr(_torch, "_current_index", lambda kind: 0 if kind == "cuda" else None)
    be = resolve("torch", "float32", "cuda")
    assert be.device == torch.device("cuda:0") and str(be.device) == "cuda:0"
    assert be is resolve("torch", "float32", "cuda:0")
    assert "device=cuda:0" in be.describe() and "tf32=off" in be.describe()


@needs_torch
def test_torch_cpu_and_cpu0_are_one_device() -> None:
    import torch

    be = resolve("torch", "float64", "cpu:0")
    assert be is resolve("torch", "float64", "cpu") and be.device == torch.device("cpu")
    with minitorch.use_backend("torch", dtype="float64", device="cpu:0") as used:
        t = minitorch.ones(2, 3)
        u = minitorch.zeros(2, device="cpu:0")
    assert t.device == used.device == u.device == torch.device("cpu")
    np.testing.assert_array_equal((t.sum(axis=0)[:2] + u).numpy(), [2.0, 2.0])


@needs_torch
def test_the_current_index_of_a_cpu_build_is_unknown() -> None:
    import torch

    from minitorch.backend import _torch

    expected = torch.cuda.current_device() if torch.cuda.is_available() else None
    assert _torch._current_index("cuda") == expected
    assert _torch._current_index("nonsense") is None


# ------------------------------------------------------------------ devices never mix


@needs_torch
@pytest.mark.parametrize("shape", [(), (3,)])
def test_torch_tensors_on_two_devices_do_not_mix(shape: tuple[int, ...]) -> None:
    # torch itself adds a 0-d CPU tensor to a tensor of any device; minitorch refuses
    with minitorch.use_backend("torch", dtype="float64"):
        cpu = minitorch.ones(*shape)
        meta = minitorch.ones(3, device="meta")
        for f in (lambda: meta + cpu, lambda: cpu * meta, lambda: minitorch.maximum(meta, cpu)):
            with pytest.raises(BackendMismatchError) as info:
                f()
            msg = str(info.value)
            assert "tensors are on different devices (cpu and meta)" in msg
            assert ".to(device=" in msg and "shape=(3,)" in msg
        assert str((meta + cpu.to(device="meta")).device) == "meta"
        assert str((meta + 1.0).device) == "meta"  # Python numbers mix freely


@needs_strict
def test_strict_tensors_on_two_devices_do_not_mix() -> None:
    with minitorch.use_backend("array_api_strict", dtype="float64"):
        a = minitorch.ones(2, 2, device="device1", requires_grad=True)
        b = minitorch.ones(2, 2)
        with pytest.raises(BackendMismatchError, match=r"matmul: tensors are on different") as i:
            a @ b
        assert "(CPU_DEVICE and device1)" in str(i.value)
        assert ".to(device='device1') on the others" in str(i.value)


@needs_strict
def test_to_device_moves_between_strict_devices_and_back_in_backward() -> None:
    with minitorch.use_backend("array_api_strict", dtype="float64"):
        x = minitorch.tensor([[1.0, -2.0], [3.0, 0.5]], requires_grad=True)  # CPU_DEVICE
        names = []
        y = x
        for dev in ("device1", "device2", "CPU_DEVICE", "device1"):
            y = y.to(device=dev)
            names.append(device_name(y.backend, y.device))
        assert names == ["device1", "device2", "CPU_DEVICE", "device1"]
        w = minitorch.tensor([2.0, 3.0], device="device1")
        loss = ((y * w) ** 2).sum()
        loss.backward()
    assert x.grad is not None
    assert device_name(x.backend, x.grad.device) == "CPU_DEVICE"
    xv = np.array([[1.0, -2.0], [3.0, 0.5]])
    np.testing.assert_allclose(np.asarray(x.grad), 2 * xv * np.array([2.0, 3.0]) ** 2)
    assert x.to(device="CPU_DEVICE") is x  # already there: itself


@needs_strict
def test_a_move_to_another_device_keeps_tf32() -> None:
    with minitorch.use_backend("array_api_strict", tf32=True):
        x = minitorch.ones(2)
    with minitorch.use_backend("array_api_strict"):
        z = minitorch.ones(2)
    y = x.to(device="device1")
    assert y.backend.tf32 and device_name(y.backend, y.device) == "device1"
    assert not z.to(device="device1").backend.tf32


@needs_strict
def test_to_an_unknown_device_is_a_clear_error() -> None:
    with minitorch.use_backend("array_api_strict"):
        x = minitorch.ones(2)
        with pytest.raises(ValueError, match="device"):
            x.to(device="device7")


# ------------------------------------------------------------------ TF32 is an opt-in


def test_tf32_is_recorded_and_shown() -> None:
    be = resolve("numpy", "float32")
    assert be.tf32 is False and "tf32" not in be.describe()  # the CPU: nothing to say
    on = resolve("numpy", "float32", None, True)
    assert on.tf32 is True and on is not be and on is resolve("numpy", "float32", None, True)
    assert on.describe().endswith("dtype=float32, tf32=on)")
    with minitorch.use_backend("numpy", tf32=True) as used:
        assert used is on and minitorch.get_backend() is on
        t = minitorch.ones(2)
        assert t.backend.tf32
        # device= keeps the choice
        assert minitorch.zeros(2, device="cpu").backend.tf32
    assert not minitorch.ones(2).backend.tf32
    with pytest.raises(TypeError, match="tf32= must be True or False"):
        resolve("numpy", None, None, "yes")  # type: ignore[arg-type]


def test_set_backend_takes_tf32() -> None:
    prev = minitorch.backend._default[0]
    try:
        be = minitorch.set_backend("numpy", dtype="float64", tf32=True)
        assert be.tf32 and minitorch.get_backend() is be
    finally:
        minitorch.backend._default[0] = prev


class _Flags:
    """A stand-in for ``torch.backends.cuda.matmul``: records every write."""

    def __init__(self, value: str) -> None:
        self.__dict__["value"] = value
        self.__dict__["writes"] = []

    @property
    def fp32_precision(self) -> str:
        return str(self.__dict__["value"])

    def __setattr__(self, name: str, value: Any) -> None:
        assert name == "fp32_precision"
        self.__dict__["writes"].append(value)
        self.__dict__["value"] = value


class _Fake:
    def __init__(self, is_cuda: bool) -> None:
        self.is_cuda = is_cuda
        self.dtype = np.dtype(np.float32)


@needs_torch
@pytest.mark.parametrize(("user", "ours"), [("none", "ieee"), ("tf32", "ieee"), ("none", "tf32")])
def test_torch_matmul_sets_the_precision_for_cuda_only_and_restores_it(
    user: str, ours: str
) -> None:
    from minitorch.backend._torch import precision_scoped

    flags = _Flags(user)
    seen: list[str] = []

    def fn(x1: Any, x2: Any) -> str:
        seen.append(flags.fp32_precision)
        return "product"

    run = precision_scoped(fn, flags, ours)
    assert run(_Fake(is_cuda=False), _Fake(False)) == "product"
    assert seen == [user] and flags.writes == []  # the CPU: nothing touched
    assert run(_Fake(is_cuda=True), _Fake(True)) == "product"
    assert seen == [user, ours] and flags.fp32_precision == user
    assert flags.writes == [ours, user]

    def boom(x1: Any, x2: Any) -> None:
        raise RuntimeError("shapes")

    with pytest.raises(RuntimeError, match="shapes"):
        precision_scoped(boom, flags, ours)(_Fake(True), _Fake(True))
    assert flags.fp32_precision == user  # restored after an error too


@needs_torch
def test_torch_precision_switch_works_on_torchs_own_flag_object() -> None:
    """The new-API flag only: reading the legacy ``allow_tf32`` afterwards must not
    raise (torch refuses a mix of the two APIs)."""
    import torch

    from minitorch.backend._torch import precision_scoped

    flags = torch.backends.cuda.matmul
    before = flags.fp32_precision
    seen: list[str] = []
    run = precision_scoped(lambda a, b: seen.append(flags.fp32_precision), flags, "ieee")
    run(_Fake(True), _Fake(True))
    assert seen == ["ieee"] and flags.fp32_precision == before
    assert isinstance(flags.allow_tf32, bool)


@needs_torch
@pytest.mark.parametrize("tf32", [False, True])
def test_minitorch_matmul_forward_and_backward_use_the_backends_products(
    monkeypatch: pytest.MonkeyPatch, tf32: bool
) -> None:
    import torch

    be = resolve("torch", "float64", None, tf32)
    other = resolve("torch", "float64", None, not tf32)
    assert be.xp.matmul is not other.xp.matmul  # two namespaces
    calls: list[int] = []
    real = be.xp.matmul

    def spy(x1: Any, x2: Any, /) -> Any:
        calls.append(1)
        return real(x1, x2)

    monkeypatch.setattr(be.xp, "matmul", spy)
    with minitorch.use_backend("torch", dtype="float64", tf32=tf32):
        x = minitorch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        w = minitorch.tensor([[0.5], [-1.0]], requires_grad=True)
        (x @ w).sum().backward()
    assert len(calls) == 3  # forward, and the two products of the backward
    assert x.grad is not None and w.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), [[0.5, -1.0], [0.5, -1.0]])
    np.testing.assert_array_equal(w.grad.numpy(), [[4.0], [6.0]])
    assert torch.backends.cuda.matmul.fp32_precision in ("none", "ieee", "tf32")


@needs_torch
def test_describe_notes_torchs_global_tf32_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from minitorch.backend import _torch

    monkeypatch.setattr(_torch, "_current_index", lambda kind: 0 if kind == "cuda" else None)
    monkeypatch.setattr(_torch, "_check_available", lambda dev: None)  # as if on a GPU
    flags = torch.backends.cuda.matmul
    before = flags.fp32_precision
    try:
        flags.fp32_precision = "tf32"
        text = resolve("torch", "float32", "cuda").describe()
        assert "tf32=off; torch's global matmul flag allows TF32" in text
    finally:
        flags.fp32_precision = before
    assert "global" not in resolve("torch", "float32", "cuda").describe()


def test_jax_matmuls_run_at_highest_precision_unless_tf32(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    a, b = jnp.ones((2, 3), dtype=jnp.float32), jnp.ones((3, 2), dtype=jnp.float32)
    full, tf32 = resolve("jax", "float32"), resolve("jax", "float32", None, True)
    calls = {
        "matmul": lambda xp: xp.matmul(a, b),
        "tensordot": lambda xp: xp.tensordot(a, b, axes=1),
        "vecdot": lambda xp: xp.vecdot(a, a),
    }
    for name, call in calls.items():
        text = str(jax.make_jaxpr(functools.partial(call, full.xp))())
        assert "precision=(Precision.HIGHEST, Precision.HIGHEST)" in text, name
        assert "HIGHEST" not in str(jax.make_jaxpr(functools.partial(call, tf32.xp))()), name
    # the user's JAX configuration is left as it was
    assert getattr(jax.config, "jax_default_matmul_precision", None) is None
    # and minitorch's matmul, forward and backward, calls that function
    seen: list[int] = []
    real = full.xp.matmul
    monkeypatch.setattr(full.xp, "matmul", lambda x1, x2, /: seen.append(1) or real(x1, x2))
    with minitorch.use_backend("jax", dtype="float32"):
        x = minitorch.ones(2, 3, requires_grad=True)
        (x @ minitorch.ones(3, 2)).sum().backward()
    assert len(seen) == 2  # forward, and the gradient of x (w needs none)
    assert x.grad is not None
    np.testing.assert_array_equal(np.asarray(x.grad), np.full((2, 3), 2.0))


# ------------------------------------------------------------------ CuPy's code, on NumPy


def _scope() -> tuple[Any, list[Any]]:
    entered: list[Any] = []

    @contextlib.contextmanager
    def scope(device: Any) -> Iterator[None]:
        entered.append(device)
        yield

    return scope, entered


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_cupy_floor_divide_and_remainder_have_numpys_special_cases(dtype: str) -> None:
    """CuPy's kernels floor a / b (inf // 2 is inf, -2 // inf is -0); the backend's own
    functions follow NumPy's divmod, bit for bit and sign of zero included (float16 in
    float32, rounded once, as NumPy): run here on NumPy against NumPy's ufuncs, on a
    grid of special values, random values and Python-number operands."""
    vals = [5.0, -5.0, 3.0, -3.0, 0.0, -0.0, math.inf, -math.inf, math.nan, 2.0, -2.0, 0.5]
    vals += [-0.5, 7.25, -1e300, 1e-300, 1.0, -1.0]
    with np.errstate(over="ignore"):  # -1e300 is -inf in float32
        a, b = (np.array(v, dtype=dtype) for v in zip(*itertools.product(vals, vals), strict=True))
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(2000).astype(dtype) * s for s in (100, 3))
    pairs = [(a, b), (x, y), (x, 2.5), (7.5, y), (x, 0.0), (x, -0.0), (np.arange(-5, 5), 3)]
    for mine, numpys in (
        (_cupy.numpy_floor_divide(np), np.floor_divide),
        (_cupy.numpy_remainder(np), np.remainder),
    ):
        for p, q in pairs:
            with np.errstate(all="ignore"):
                got, want = mine(p, q), numpys(p, q)
            assert got.dtype == want.dtype
            np.testing.assert_array_equal(got, want)
            real = ~np.isnan(want)
            np.testing.assert_array_equal(np.signbit(got[real]), np.signbit(want[real]))


def test_cupy_scatter_add_accumulates_repeated_indices() -> None:
    scope, entered = _scope()
    scatter_add = _cupy.scatter_add_with(np, scope)
    rng = np.random.default_rng(0)
    index = np.array([3, 0, 3, 3, 1, 0])
    values = rng.standard_normal((6, 2, 2))
    out = scatter_add(5, index, values)
    expected = np.zeros((5, 2, 2))
    for i, row in zip(index, values, strict=True):
        expected[i] += row
    np.testing.assert_allclose(out, expected, rtol=1e-15)
    assert out.dtype == values.dtype and entered == ["cpu"]  # made on the values' device
    np.testing.assert_array_equal(out[[2, 4]], 0.0)


def _add_at_as_cupy() -> Any:
    """NumPy's ``zeros``, ``real``, ``imag`` and ``add.at``, the last refusing the dtypes
    that ``cupy.add.at`` refuses, in CuPy's words."""

    def at(out: Any, index: Any, values: Any) -> None:
        if values.dtype.char not in _cupy.ADD_AT_DTYPES:
            raise TypeError("cupy.add.at only supports int32, int64, float16, float32, ...")
        np.add.at(out, index, values)

    return types.SimpleNamespace(
        zeros=np.zeros, real=np.real, imag=np.imag, int32=np.int32, uint32=np.uint32,
        add=types.SimpleNamespace(at=at),
    )  # fmt: skip


def test_cupy_scatter_add_gives_numpys_add_at_for_every_dtype() -> None:
    """The dtypes cupy.add.at refuses (8/16-bit integers, bool, complex) give what
    NumPy's add.at gives: integers wrapped as NumPy wraps them, booleans or-ed, complex
    parts summed apart (an inf imaginary part stays one, no nan from a product)."""
    scope, _ = _scope()
    scatter_add = _cupy.scatter_add_with(_add_at_as_cupy(), scope)
    index = np.array([2, 0, 2, 2, 1])
    rng = np.random.default_rng(11)
    for dtype in ("int8", "int16", "uint8", "uint16", "int32", "uint64", "bool", "float16"):
        if dtype == "bool":
            values = np.array(
                [[True, False], [False, False], [True, True], [False, True], [False, False]]
            )
        else:  # the small integers over their whole range: their sums wrap
            small = dtype in ("int8", "int16", "uint8", "uint16")
            lo, hi = (np.iinfo(dtype).min, np.iinfo(dtype).max) if small else (-9, 9)
            lo = 0 if dtype.startswith("u") and not small else lo
            values = rng.integers(lo, hi, (5, 2), endpoint=True).astype(dtype)
        want = np.zeros((4, 2), dtype=dtype)
        np.add.at(want, index, values)
        got = scatter_add(4, index, values)
        assert got.dtype == want.dtype, dtype
        np.testing.assert_array_equal(got, want, err_msg=dtype)
    for dtype in ("complex64", "complex128"):
        values = (rng.standard_normal((5, 3)) + 1j * rng.standard_normal((5, 3))).astype(dtype)
        values[1, 0] = complex(0.0, np.inf)
        want = np.zeros((4, 3), dtype=dtype)
        np.add.at(want, index, values)
        got = scatter_add(4, index, values)
        assert got.dtype == want.dtype and got[0, 0] == complex(0.0, np.inf)
        np.testing.assert_array_equal(got, want)


def test_cupy_scatter_add_runs_its_kernel_in_the_devices_scope() -> None:
    # CuPy launches add.at on the current device: it must be the values' one
    inside: list[bool] = []
    active = [False]

    @contextlib.contextmanager
    def scope(device: Any) -> Iterator[None]:
        active[0] = True
        yield
        active[0] = False

    def at(out: Any, index: Any, values: Any) -> None:
        inside.append(active[0])
        np.add.at(out, index, values)

    lib = types.SimpleNamespace(zeros=np.zeros, add=types.SimpleNamespace(at=at))
    out = _cupy.scatter_add_with(lib, scope)(3, np.array([2, 2, 0]), np.array([1.0, 2.0, 4.0]))
    np.testing.assert_array_equal(out, [4.0, 0.0, 3.0])
    assert inside == [True]


def test_cupy_put_rows_copies_and_writes_in_the_devices_scope() -> None:
    """CuPy copies and writes on the current device: it must be x's one (NumPy arrays
    stand in for CuPy's, a device object for a cupy.cuda.Device)."""
    seen: list[Any] = []

    class _Array(np.ndarray):
        device = "gpu1"

        def copy(self, order: Any = "C") -> Any:
            seen.append(("copy", active[0]))
            return np.ndarray.copy(self).view(_Array)

        def __setitem__(self, key: Any, value: Any) -> None:
            seen.append(("write", active[0]))
            np.ndarray.__setitem__(self, key, value)

    active: list[Any] = [None]

    @contextlib.contextmanager
    def scope(device: Any) -> Iterator[None]:
        active[0] = device
        yield
        active[0] = None

    x = np.zeros((3, 2)).view(_Array)
    out = _cupy.put_rows_with(scope)(x, np.array([2, 0]), np.array([[1.0, 2.0], [3.0, 4.0]]))
    np.testing.assert_array_equal(out, [[3.0, 4.0], [0.0, 0.0], [1.0, 2.0]])
    np.testing.assert_array_equal(x, np.zeros((3, 2)))
    assert seen == [("copy", "gpu1"), ("write", "gpu1")]


def test_cupy_creation_functions_run_in_the_devices_scope() -> None:
    scope, entered = _scope()
    fns = _cupy.native_functions(np, compat_numpy, scope)
    z = fns["zeros"]((2, 3), dtype=np.float32, device="dev7")
    assert entered == ["dev7"] and z.shape == (2, 3) and z.dtype == np.float32
    fns["ones"](2)  # no device: the current one, no scope
    assert entered == ["dev7"]
    like = fns["full_like"](np.ones((2, 2)), 3.0)  # *_like: the device of x
    assert entered == ["dev7", "cpu"]
    np.testing.assert_array_equal(like, np.full((2, 2), 3.0))
    r = fns["arange"](0, 6, 2, dtype=np.int64, device="dev1")
    np.testing.assert_array_equal(r, [0, 2, 4])
    assert entered[-1] == "dev1"
    assert fns["full"]((2,), 1.5).dtype == np.float64 and fns["full"]((2,), 1).dtype == np.int64
    # eye and linspace too (array-api-compat's wrappers drop device= on CuPy)
    np.testing.assert_array_equal(fns["eye"](2, 3, k=1, device="dev2"), np.eye(2, 3, k=1))
    np.testing.assert_array_equal(fns["linspace"](0.0, 1.0, 3, device="dev3"), [0.0, 0.5, 1.0])
    assert entered[-2:] == ["dev2", "dev3"]
    # astype to a device: made there (a name like "cuda:1", which the wrapper refuses)
    x = np.arange(3)
    y = fns["astype"](x, np.float32, device="dev4")
    assert entered[-1] == "dev4" and y.dtype == np.float32 and not np.shares_memory(x, y)
    same = fns["astype"](y, np.float32, copy=False, device="dev5")
    assert same is y and entered[-1] == "dev5"  # copy=False: no copy where none is needed


#: a digest of the CUDA C of each of minitorch's CuPy kernels (``_cupy.KERNELS``,
#: ``IN_RANGE``, ``SOFTMAX_DOT``, ``SGD_UPDATE``) as the stand-ins below emulate it, each method's
#: docstring quoting its C: a change to a kernel fails here until its emulation, and its
#: digest, are changed too (NumPy cannot run the C; the GPU test further down does)
_KERNEL_C_DIGESTS = {
    "relu_backward": "c153e93337a704ff",
    "tanh_backward": "32b4f559fdcaa406",
    "sigmoid_backward": "68cec8e560ceec36",
    "softmax_backward": "c3e7fea89dd0ecca",
    "log_softmax_backward": "2de306bed5dcf565",
    "cross_entropy_losses": "9e1f7a86a741de96",
    "cross_entropy_gradient": "2d847e562d0361cb",
    "all_in_range": "c9b15d782218358f",
    "softmax_dot": "a33ec45e50aaa04b",
    "sgd_update": "33316a7a07571dc8",
}


def _emulates(name: str, spec: tuple[str, ...]) -> bool:
    """Whether ``spec`` (a kernel's argument lists and C) is the one emulated here."""
    return hashlib.sha256(repr(spec).encode()).hexdigest()[:16] == _KERNEL_C_DIGESTS[name]


class _ElementwiseKernel:
    """A stand-in for ``cupy.ElementwiseKernel`` that runs minitorch's kernels on NumPy as
    their CUDA C (pinned in ``_KERNEL_C_DIGESTS``) reads, written here from that C, not from
    ``_fallback``'s formulas: output element ``i`` in C order, a ``raw`` argument indexed
    by its flat C-order element number. It refuses what CuPy would refuse (two dtypes for
    one type letter) and what the wrappers promise not to do (a non-integer ``I``, a raw
    argument that is not C-contiguous: CuPy would index a strided one correctly, but more
    slowly)."""

    calls: ClassVar[list[str]] = []

    def __init__(self, ins: str, outs: str, body: str, name: str, preamble: str = "") -> None:
        self.params = [p.split() for p in ins.split(",")]
        self.name = name.removeprefix("minitorch_")
        spec = (ins, outs, body, preamble) if preamble else (ins, outs, body)
        assert name.startswith("minitorch_") and _emulates(self.name, spec)

    def __call__(self, *args: Any) -> Any:
        assert len(args) == len(self.params)
        letters: dict[str, Any] = {}
        for spec, a in zip(self.params, args, strict=True):
            kind = spec[-2]
            if len(kind) == 1:  # a type letter: one dtype for all its arguments
                assert letters.setdefault(kind, a.dtype) == a.dtype
            if spec[0] == "raw":
                assert a.flags.c_contiguous
        if "I" in letters:
            assert letters["I"].kind in "iu"
        type(self).calls.append(self.name)
        return getattr(self, self.name)(*args)

    @staticmethod
    def relu_backward(g: Any, y: Any) -> Any:
        """z = y != (T)0 ? g : (T)0"""
        return np.where(y != 0, g, g.dtype.type(0))

    @staticmethod
    def tanh_backward(g: Any, y: Any) -> Any:
        """z = g * ((T)1 - y * y)"""
        return g * (g.dtype.type(1) - y * y)

    @staticmethod
    def sigmoid_backward(g: Any, y: Any) -> Any:
        """z = g * y * ((T)1 - y)"""
        return g * y * (g.dtype.type(1) - y)

    @staticmethod
    def softmax_backward(g: Any, y: Any, r: Any) -> Any:
        """z = y * (g - r)"""
        return y * (g - r)

    @staticmethod
    def log_softmax_backward(g: Any, y: Any, r: Any) -> Any:
        """z = g - exp(y) * r"""
        return g - np.exp(y) * r

    @staticmethod
    def cross_entropy_losses(s: Any, z: Any, t: Any, c: int) -> Any:
        """nll = log(z[i]) - s[i * c + t], over t's elements (raw s, z)"""
        i = np.arange(t.size)
        return np.log(z.ravel()[i]) - s.ravel()[i * c + t]

    @staticmethod
    def cross_entropy_gradient(e: Any, z: Any, t: Any, c: int) -> Any:
        """const ptrdiff_t r = i / c; d = e / z[r] - (i - r * c == t[r] ? (T)1 : (T)0)"""
        i = np.arange(e.size).reshape(e.shape)
        r = i // c
        return e / z.ravel()[r] - (i - r * c == t.ravel()[r]).astype(e.dtype)

    @staticmethod
    def sgd_update(x: Any, lr: Any, g: Any) -> Any:
        """y = minitorch_sub_mul(x, lr, g): __fsub_rn(x, __fmul_rn(a, g)) for float,
        __dsub_rn(x, __dmul_rn(a, g)) for double (each operation rounded on its own)"""
        assert isinstance(lr, np.generic) and x.dtype.char in "fd"
        return x - lr * g


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cupy_vjp_kernels_give_the_formulas_values_in_one_launch(dtype: str) -> None:
    """The activations' gradients: the kernel for one float dtype (bit for bit the
    formula, as NumPy runs the C here), the formula for mixed or other dtypes."""
    kernels = _cupy.vjp_kernels(np, compat_numpy, _ElementwiseKernel, _ReductionKernel)
    rng = np.random.default_rng(2)
    g = rng.standard_normal((4, 5)).astype(dtype)
    out = rng.uniform(-1, 1, (4, 5)).astype(dtype)
    out[0, :3] = [0.0, -0.0, np.nan]  # relu: an inactive unit, its sign, a nan passes g
    for name in ("relu_backward", "tanh_backward", "sigmoid_backward"):
        formula = getattr(_fallback, name)
        _ElementwiseKernel.calls.clear()
        got = kernels[name](g, out)
        assert _ElementwiseKernel.calls == [name] and got.dtype == g.dtype
        np.testing.assert_array_equal(got, formula(compat_numpy, g, out))
        for a, b in ((g, out.astype("float16")), (g.astype("float16"), out.astype("float16"))):
            _ElementwiseKernel.calls.clear()
            mixed = kernels[name](a, b)
            assert _ElementwiseKernel.calls == []  # the formula, which promotes
            assert mixed.dtype == np.result_type(a, b)
            np.testing.assert_array_equal(mixed, formula(compat_numpy, a, b))
    # the softmax family: a reduction along the axis (CuPy's sum for log-softmax's), then
    # one kernel; a 0-d output (axis None) and mixed dtypes go through the formula
    x = rng.standard_normal((3, 4, 5)).astype(dtype)
    for axis in (0, 1, -1):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        s = e / e.sum(axis=axis, keepdims=True)
        g3 = rng.standard_normal(x.shape).astype(dtype)
        for name, out, kernel_calls in (
            ("softmax_backward", s, ["softmax_dot", "softmax_backward"]),
            ("log_softmax_backward", np.log(s), ["log_softmax_backward"]),
        ):
            formula = getattr(_fallback, name)
            _ElementwiseKernel.calls.clear()
            _ReductionKernel.calls.clear()
            got = kernels[name](g3, out, axis)
            assert _ReductionKernel.calls + _ElementwiseKernel.calls == kernel_calls
            assert got.dtype == g3.dtype and got.shape == g3.shape
            np.testing.assert_array_equal(got, formula(compat_numpy, g3, out, axis))
            _ElementwiseKernel.calls.clear()
            _ReductionKernel.calls.clear()
            for args in ((g3, out.astype("float16"), axis), (g3[0, 0, 0], out[0, 0, 0], None)):
                np.testing.assert_array_equal(kernels[name](*args), formula(compat_numpy, *args))
            assert _ReductionKernel.calls + _ElementwiseKernel.calls == []


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cupy_cross_entropy_kernel_gives_the_formulas_losses_and_gradient(dtype: str) -> None:
    kernels = _cupy.vjp_kernels(np, compat_numpy, _ElementwiseKernel, _ReductionKernel)
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((7, 5)) * 30).astype(dtype)
    x[2, 1] = -np.inf  # exp of it is 0: its loss is finite unless it is the target
    for logits in (x, np.asarray(x.T.copy().T)):  # C-contiguous, and a column-major one
        for t in (rng.integers(0, 5, 7), np.array([4, 0, 1, 3, 3, 2, 0], dtype=np.uint8)):
            _ElementwiseKernel.calls.clear()
            nll, d = kernels["softmax_cross_entropy"](logits, t[::-1][::-1])
            assert _ElementwiseKernel.calls == ["cross_entropy_losses", "cross_entropy_gradient"]
            want_nll, want_d = _fallback.softmax_cross_entropy(compat_numpy, logits, t)
            assert nll.shape == (7, 1) and d.shape == (7, 5) and d.dtype == nll.dtype == x.dtype
            np.testing.assert_array_equal(nll, want_nll)
            np.testing.assert_array_equal(d, want_d)
    # the loss of a target whose logit is -inf is inf, as the formula's
    nll, _ = kernels["softmax_cross_entropy"](x, np.array([0, 0, 1, 0, 0, 0, 0]))
    assert nll[2, 0] == np.inf


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cupy_sgd_update_is_one_launch_with_the_formulas_values(dtype: str) -> None:
    """``x - lr * g`` for one float dtype: one kernel, bit for bit what NumPy (and CuPy)
    give in two operations, the learning rate rounded to the dtype first; mixed and other
    dtypes: the formula, which promotes."""
    sgd_update = _cupy.sgd_update_with(_ElementwiseKernel)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((5, 4)).astype(dtype)
    g = rng.standard_normal((5, 4)).astype(dtype)
    held = x.copy()
    for lr in (0.1, 1e-3, 2, 0.30000000000000004):
        _ElementwiseKernel.calls.clear()
        got = sgd_update(x, lr, g)
        assert _ElementwiseKernel.calls == ["sgd_update"] and got.dtype == x.dtype
        np.testing.assert_array_equal(got, x - lr * g)
        np.testing.assert_array_equal(x, held)  # a new array
    _ElementwiseKernel.calls.clear()
    for a, b in ((x, g.astype("float16")), (x.astype("float16"), g.astype("float16"))):
        mixed = sgd_update(a, 0.1, b)
        assert mixed.dtype == np.result_type(a, b)
        np.testing.assert_array_equal(mixed, a - 0.1 * b)
    assert _ElementwiseKernel.calls == []


def test_sgd_with_cupys_update_kernel_trains_as_the_numpy_backend() -> None:
    """Plain SGD on a backend with CuPy's update kernel (run on NumPy): one launch per
    parameter, the NumPy backend's parameters bit for bit over three steps, the arrays
    the user holds unchanged; with momentum, the optimizer's own formulas."""
    cupy_like = make_backend(
        "numpy",
        compat_numpy,
        np,
        device="cpu",
        sgd_update=_cupy.sgd_update_with(_ElementwiseKernel),
    )
    plain = make_backend("numpy", compat_numpy, np, device="cpu")
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (4,), (6, 3))]
    cases: list[tuple[dict[str, Any], int]] = [
        ({"lr": 0.1}, 2),
        ({"lr": 0.1, "momentum": 0.9}, 0),
    ]
    for kwargs, launches in cases:
        results = []
        for be in (cupy_like, plain):
            w1, b1, x = (minitorch.Tensor._make(a.copy(), be, None) for a in arrays)
            w1.requires_grad_()
            b1.requires_grad_()
            held = w1.data
            opt = minitorch.optim.SGD([w1, b1], **kwargs)
            _ElementwiseKernel.calls.clear()
            for _ in range(3):
                opt.zero_grad()
                ((x @ w1 + b1).tanh() ** 2).sum().backward()
                opt.step()
            if be is cupy_like:
                assert _ElementwiseKernel.calls.count("sgd_update") == launches * 3
                np.testing.assert_array_equal(held, arrays[0])
            results.append([w1.data.copy(), b1.data.copy()])
        for got, want in zip(*results, strict=True):
            assert got.dtype == want.dtype == np.float32
            np.testing.assert_array_equal(got, want)


def test_cupy_vjp_kernels_train_as_the_numpy_backend() -> None:
    """A step of a small MLP (relu, tanh, sigmoid, cross-entropy) on a backend with CuPy's
    kernels, run on NumPy: the loss and every gradient are NumPy's backend's, bit for bit."""
    kernels = _cupy.vjp_kernels(np, compat_numpy, _ElementwiseKernel, _ReductionKernel)
    cupy_like = make_backend("numpy", compat_numpy, np, device="cpu", vjp_kernels=kernels)
    plain = make_backend("numpy", compat_numpy, np, device="cpu")
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal(s) for s in ((6, 8), (8, 8), (8, 3), (10, 6))]
    targets = rng.integers(0, 3, 10)
    grads = []
    _ElementwiseKernel.calls.clear()
    _ReductionKernel.calls.clear()
    for be in (cupy_like, plain):
        w1, w2, w3, x = (minitorch.Tensor._make(a, be, None) for a in arrays)
        for w in (w1, w2, w3):
            w.requires_grad_()
        h = (x @ w1).relu()
        h = minitorch.softmax((h @ w2).tanh().sigmoid(), axis=0)
        loss = minitorch.cross_entropy(h @ w3, minitorch.Tensor._make(targets, be, None))
        loss.backward()
        grads.append([np.asarray(v) for v in (loss.data, w1.grad, w2.grad, w3.grad)])
    assert sorted(_ElementwiseKernel.calls) == sorted(
        [
            "cross_entropy_losses",
            "cross_entropy_gradient",
            "sigmoid_backward",
            "tanh_backward",
            "relu_backward",
            "softmax_backward",
        ]
    )
    assert _ReductionKernel.calls == ["softmax_dot"]
    for got, want in zip(*grads, strict=True):
        np.testing.assert_array_equal(got, want)


class _ReductionKernel:
    """A stand-in for ``cupy.ReductionKernel`` running minitorch's reductions on NumPy as
    their C reads. ``all_in_range``: each element compared with the int64 bounds after
    C's promotions (an integer of at most 32 bits, or int64, widens to int64 exactly;
    uint64 would compare with a negative bound as unsigned, and is refused here), reduced
    with ``&&`` from ``true``. ``softmax_dot``: the products of one float dtype, summed
    along ``axis`` (keepdims)."""

    calls: ClassVar[list[str]] = []

    def __init__(self, *spec: str) -> None:
        self.name = spec[-1].removeprefix("minitorch_")
        assert _emulates(self.name, spec[:-1])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        type(self).calls.append(self.name)
        return getattr(self, self.name)(*args, **kwargs)

    @staticmethod
    def all_in_range(x: Any, low: int, high: int) -> Any:
        """map x >= low && x < high, reduce a && b from true"""
        assert x.dtype.kind in "iu" and x.dtype != np.uint64
        assert type(low) is int and type(high) is int
        wide = x.astype(np.int64)
        return np.asarray(bool(np.all((wide >= low) & (wide < high))))

    @staticmethod
    def softmax_dot(g: Any, y: Any, *, axis: int, keepdims: bool) -> Any:
        """map g * y, reduce a + b from 0"""
        assert g.dtype == y.dtype and keepdims
        return np.sum(g * y, axis=axis, keepdims=True)


def test_cupy_range_check_is_one_reduction_with_the_formulas_answer() -> None:
    all_in_range = _cupy.all_in_range_with(compat_numpy, _ReductionKernel)
    rng = np.random.default_rng(5)
    for dtype in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        info = np.iinfo(dtype)
        for values in (
            rng.integers(max(info.min, -9), min(info.max, 9), 40).astype(dtype),
            np.array([], dtype=dtype),
            np.array(3, dtype=dtype),
            np.array([info.min, info.max], dtype=dtype),
        ):
            for low, high in ((0, 5), (-5, 5), (-10, 10), (0, 1), (-3, 0)):
                _ReductionKernel.calls.clear()
                got = all_in_range(values, low, high)
                want = _fallback.all_in_range(compat_numpy, values, low, high)
                assert got.shape == () and got.dtype == np.bool_
                assert bool(got) == bool(want), (dtype, values, low, high)
                assert _ReductionKernel.calls == ([] if dtype == "uint64" else ["all_in_range"])


def test_cupy_range_checks_refuse_what_numpys_backend_refuses() -> None:
    """cross_entropy's targets and take's indices, checked by CuPy's reduction (on
    NumPy): the same values, and the same errors, as NumPy's backend."""
    _ReductionKernel.calls.clear()
    cupy_like = make_backend(
        "numpy",
        compat_numpy,
        np,
        device="cpu",
        all_in_range=_cupy.all_in_range_with(compat_numpy, _ReductionKernel),
        vjp_kernels=_cupy.vjp_kernels(np, compat_numpy, _ElementwiseKernel, _ReductionKernel),
    )
    plain = make_backend("numpy", compat_numpy, np, device="cpu")
    logits = np.random.default_rng(6).standard_normal((4, 3))
    results = []
    for be in (cupy_like, plain):
        t = functools.partial(minitorch.Tensor._make, backend=be, node=None)
        x = t(logits)
        loss = minitorch.cross_entropy(x, t(np.array([2, 0, 1, 2], dtype=np.uint8)))
        taken = minitorch.take(x, t(np.array([-1, 0, 11])))
        errors = []
        for bad in ([0, 3, 1, 2], [0, -1, 1, 2]):
            with pytest.raises(minitorch.OpError) as info:
                minitorch.cross_entropy(x, t(np.array(bad)))
            errors.append(str(info.value))
        for bad in ([0, 12], [-13, 0]):
            with pytest.raises(minitorch.OpError) as info:
                minitorch.take(x, t(np.array(bad)))
            errors.append(str(info.value))
        results.append((float(loss.data), taken.data.tolist(), errors))
    assert results[0] == results[1]
    assert "got 3 in targets" in results[0][2][0] and "out of range [-12, 12)" in results[0][2][2]
    assert _ReductionKernel.calls.count("all_in_range") == 6


class _Gpu:
    """A stand-in for ``cupy.cuda.Device``: its index (``id``) and a context that makes it
    CuPy's current device, restoring the previous one on exit (as CuPy's)."""

    current = 0  # CuPy's current device, as ``cupy.cuda.runtime.getDevice()`` says

    def __init__(self, index: int) -> None:
        self.id = index
        self.entered: list[int] = []

    def __enter__(self) -> _Gpu:
        self.entered.append(_Gpu.current)
        _Gpu.current = self.id
        return self

    def __exit__(self, *exc: object) -> None:
        _Gpu.current = self.entered.pop()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Gpu) and other.id == self.id

    def __hash__(self) -> int:
        return self.id


class _Noted(np.ndarray):
    """A NumPy array whose every ufunc (operators included) notes the current device."""

    seen: ClassVar[list[int]] = []

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        _Noted.seen.append(_Gpu.current)
        plain = [np.asarray(a) if isinstance(a, _Noted) else a for a in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(np.asarray(o) for o in kwargs["out"])
        out = getattr(ufunc, method)(*plain, **kwargs)
        return out.view(_Noted) if isinstance(out, np.ndarray) else out


def _on_gpu(index: int, seen: list[int]) -> Any:
    """A CuPy-like backend (NumPy inside) whose tensors are on ``_Gpu(index)``, with
    CuPy's device scope; every namespace call that makes an array notes the current
    device in ``seen`` (not those that read dtypes: they launch nothing)."""

    def noting(fn: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            seen.append(_Gpu.current)
            return fn(*args, **kwargs)

        return call

    be = make_backend(
        "numpy",
        compat_numpy,
        np,
        device=_Gpu(index),
        scope=_cupy.current_device_scope(lambda: _Gpu.current),
    )
    metadata = {"isdtype", "result_type", "can_cast", "finfo", "iinfo"}
    names = {
        k: v
        for k, v in vars(be.xp).items()
        if callable(v) and not isinstance(v, type) and k not in metadata
    }
    xp = types.SimpleNamespace(**{**vars(be.xp), **{k: noting(v) for k, v in names.items()}})
    return dataclasses.replace(be, xp=xp)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_a_tensor_on_another_gpu_is_computed_on_that_gpu(opt: str) -> None:
    """CuPy allocates and launches on its current device. A tensor on cuda:1 while
    cuda:0 is current: its creation's copy, every op's forward, the backward pass (each
    VJP, the gradients summed and stored), clip_grad_norm_ and the optimizer's update
    run with cuda:1 current, and cuda:0 is current again after each (run here on NumPy,
    with a stand-in for CuPy's device). Before, all of them ran on cuda:0: the arrays of a cuda:1
    tensor were made on the other GPU."""
    seen = _Noted.seen
    seen.clear()
    be = _on_gpu(1, seen)
    _Gpu.current = 0
    rng = np.random.default_rng(8)
    w = minitorch.Tensor._make(rng.standard_normal((3, 2)).view(_Noted), be, None)
    w.requires_grad_()
    x = minitorch.Tensor(minitorch.Tensor._make(rng.standard_normal((4, 3)), be, None))
    assert seen and set(seen) == {1} and _Gpu.current == 0  # the copy in Tensor()
    optimizer = (
        minitorch.optim.SGD([w], lr=0.1, momentum=0.9)
        if opt == "sgd"
        else minitorch.optim.Adam([w], lr=0.1)
    )
    for _ in range(2):
        seen.clear()
        loss = ((x @ w).tanh() * (x @ w).sigmoid()).sum()
        assert set(seen) == {1} and _Gpu.current == 0
        seen.clear()
        loss.backward()
        assert seen and set(seen) == {1} and _Gpu.current == 0
        seen.clear()
        minitorch.optim.clip_grad_norm_([w], 1.0)
        assert seen and set(seen) == {1} and _Gpu.current == 0
        seen.clear()
        optimizer.step()
        optimizer.zero_grad()
        assert seen and set(seen) == {1} and _Gpu.current == 0
    # the same work on the current device enters nothing
    seen.clear()
    here = _on_gpu(0, seen)
    assert not seen
    v = minitorch.Tensor._make(np.ones((2, 2)), here, None).requires_grad_()
    (v * v).sum().backward()
    assert set(seen) == {0} and not here.device.entered


def test_a_captured_step_on_another_gpu_replays_on_that_gpu() -> None:
    """minitorch.capture's replay of a step whose parameters are on cuda:1, with cuda:0
    current, runs every recorded call there (the recording is an eager step, scoped op
    by op); the replay's calls ran on cuda:0 before."""
    seen = _Noted.seen
    be = _on_gpu(1, seen)
    _Gpu.current = 0
    rng = np.random.default_rng(9)
    w = minitorch.Tensor._make(rng.standard_normal((3, 2)).view(_Noted), be, None)
    w.requires_grad_()
    x = minitorch.Tensor._make(rng.standard_normal((4, 3)).view(_Noted), be, None)
    opt = minitorch.optim.SGD([w], lr=0.1)

    def step(x: minitorch.Tensor) -> minitorch.Tensor:
        loss = (x @ w).tanh().sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    replay = minitorch.capture(step, optimizer=opt)
    for _ in range(3):
        seen.clear()
        replay(x)
        assert seen and set(seen) == {1} and _Gpu.current == 0
    assert replay.stats["replays"] == 2 and replay.stats["fallbacks"] == 0


def test_a_graph_across_two_gpus_runs_each_part_on_its_gpu() -> None:
    """A graph on cuda:1 moved to cuda:0 (the root) with cuda:0 current: backward runs
    the root's VJPs on cuda:0 and, on cuda:1, the rest: the VJPs, the sum of a tensor's
    two gradients (it is used twice), the bias's reduction to its shape and the leaves'
    gradients added to the last ones. The sums and the leaves ran on cuda:0 before."""
    from minitorch.ops.shape import move

    def gpu(index: int) -> Any:
        return make_backend(
            "numpy",
            compat_numpy,
            np,
            device=_Gpu(index),
            scope=_cupy.current_device_scope(lambda: _Gpu.current),
            from_numpy=lambda a, dt, d: np.array(a, dtype=dt, copy=True).view(_Noted),
        )

    on1, on0 = gpu(1), gpu(0)
    _Gpu.current = 0
    w = minitorch.Tensor._make(np.ones(3).view(_Noted), on1, None).requires_grad_()
    b = minitorch.Tensor._make(np.ones(1).view(_Noted), on1, None).requires_grad_()
    for _ in range(2):  # the second adds to the leaves' gradients
        h = (w + b).tanh()
        y = move(h * h, backend=on0, source=on1)
        loss = (y * y).sum()
        _Noted.seen.clear()
        loss.backward()
        assert _Noted.seen[:3] == [0, 0, 0]  # y * y's VJP and the move's, on cuda:0
        assert set(_Noted.seen[3:]) == {1} and _Gpu.current == 0
    t = np.tanh(2.0)
    want = 4 * t**3 * (1 - t * t)  # d/dw of sum(tanh(w + b)^4); two backward passes
    np.testing.assert_allclose(np.asarray(w.grad), np.full(3, 2 * want), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(b.grad), [2 * 3 * want], rtol=1e-12)


def test_cupy_native_functions_agree_with_the_compat_wrappers() -> None:
    scope, _ = _scope()
    fns = _cupy.native_functions(np, compat_numpy, scope)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 4))
    y = rng.standard_normal((4, 5))
    np.testing.assert_array_equal(fns["matmul"](x, y), compat_numpy.matmul(x, y))
    np.testing.assert_array_equal(fns["permute_dims"](x, (2, 0, 1)), np.transpose(x, (2, 0, 1)))
    np.testing.assert_array_equal(fns["matrix_transpose"](x), np.swapaxes(x, -1, -2))
    with pytest.raises(ValueError, match="at least 2-dimensional"):
        fns["matrix_transpose"](np.ones(3))
    np.testing.assert_array_equal(
        fns["tensordot"](x, y, axes=1), compat_numpy.tensordot(x, y, axes=1)
    )
    assert fns["astype"](x, np.float32).dtype == np.float32
    assert fns["astype"](x, np.float64, copy=False) is x
    assert fns["astype"](x, np.float64) is not x  # copy=True by default, as the standard
    assert fns["reshape"](x, (6, 4)).shape == (6, 4)
    with pytest.raises(ValueError):
        fns["reshape"](np.ones((4, 3)).T, (12,), copy=False)  # no view possible
    assert fns["isdtype"](x.dtype, "real floating") and not fns["isdtype"](x.dtype, "integral")


def _copies_in_backward(be: Any, make: Any) -> int:
    """How many arrays ``asarray(..., copy=True)`` copied while a backward stored the
    leaves' gradients, on ``be`` with its namespace's ``asarray`` counted."""
    copies = [0]
    real = be.xp.asarray

    def asarray(x: Any, /, **kwargs: Any) -> Any:
        copies[0] += bool(kwargs.get("copy"))
        return real(x, **kwargs)

    xp = types.SimpleNamespace(**{**vars(be.xp), "asarray": asarray})
    counted = dataclasses.replace(be, xp=xp)
    x = minitorch.Tensor._make(np.ones((3, 2)), counted, None).requires_grad_()
    make(x).backward()  # a one-element output: the seed is ones_like, no copy
    return copies[0]


@pytest.mark.backend_independent
def test_leaf_gradients_are_copied_only_where_the_array_does_not_own_its_memory() -> None:
    # CuPy sets .base on a view as NumPy does: its backend keeps a fresh gradient as it
    # is (one copy kernel less per parameter and step) and copies a view; an immutable
    # library's (JAX's) arrays are all kept
    scope, _ = _scope()
    fns = _cupy.native_functions(np, compat_numpy, scope)
    cupy_like = make_backend(
        "numpy", compat_numpy, np, device="cpu", owns=_cupy.owns, overrides=fns
    )
    fresh = lambda x: (x * 2.0).sum()  # mul's VJP makes a new array
    view = lambda x: x.reshape((6,)).sum()  # reshape's VJP gives a view
    assert _cupy.owns(np.zeros(3)) and not _cupy.owns(np.zeros(4)[1:])
    assert _copies_in_backward(cupy_like, fresh) == 0
    assert _copies_in_backward(cupy_like, view) == 1
    mutable = make_backend("numpy", compat_numpy, np, device="cpu")  # owns not said: copy
    assert _copies_in_backward(mutable, fresh) == 1
    immutable = make_backend("numpy", compat_numpy, np, device="cpu", mutable=False)
    assert _copies_in_backward(immutable, view) == 0
    x = minitorch.Tensor._make(np.ones((3, 2)), cupy_like, None).requires_grad_()
    view(x).backward()
    np.testing.assert_array_equal(x.grad, np.ones((3, 2)))
    assert x.grad.base is None  # the copy, not a view of the seed


class _Linalg:
    """A stand-in for ``cupy._core._routines_linalg``'s compute-type switch."""

    def __init__(self, value: int) -> None:
        self.value = value
        self.writes: list[int] = []

    def get_compute_type(self, dtype: Any) -> int:
        return self.value

    def set_compute_type(self, dtype: Any, compute_type: int) -> None:
        assert np.dtype(dtype) == np.float32
        self.writes.append(compute_type)
        self.value = compute_type


@pytest.mark.parametrize(
    ("user", "ours"),
    [
        (_cupy.COMPUTE_TYPE_TF32, _cupy.COMPUTE_TYPE_DEFAULT),  # CUPY_TF32=1, tf32 off
        (_cupy.COMPUTE_TYPE_DEFAULT, _cupy.COMPUTE_TYPE_TF32),  # tf32=True
    ],
)
def test_cupy_matmul_sets_the_compute_type_for_float32_and_restores_it(
    user: int, ours: int
) -> None:
    linalg = _Linalg(user)
    seen: list[int] = []

    def matmul(x1: Any, x2: Any) -> Any:
        seen.append(linalg.value)
        return np.matmul(x1, x2)

    fns = _cupy.products({"matmul": matmul, "tensordot": matmul}, linalg, ours)
    a = np.ones((2, 2), dtype=np.float32)
    np.testing.assert_array_equal(fns["matmul"](a, a), np.full((2, 2), 2.0))
    assert seen == [ours] and linalg.value == user and linalg.writes == [ours, user]
    fns["matmul"](a.astype(np.float64), a.astype(np.float64))  # no TF32 in float64
    assert seen == [ours, user] and linalg.writes == [ours, user]
    # the product's dtype is the promoted one: float16 @ float32 is a float32 product
    fns["matmul"](a.astype(np.float16), a)
    assert seen[-1] == ours and linalg.value == user
    fns["matmul"](a, a.astype(np.float64))  # float64: left as it is
    assert seen[-1] == user and linalg.writes == [ours, user, ours, user]
    same = _Linalg(ours)
    _cupy.products({"matmul": np.matmul, "tensordot": np.tensordot}, same, ours)["matmul"](a, a)
    assert same.writes == []  # already so: nothing written


def test_the_cupy_module_imports_without_cupy() -> None:
    # its functions are testable here because only load() imports CuPy
    assert callable(_cupy.load)
    if importlib.util.find_spec("cupy") is None:
        with pytest.raises(ImportError, match="cupy"):
            resolve("cupy")


# ------------------------------------------------------------------ on a CUDA GPU only


def _cuda() -> bool:
    if not HAS_TORCH:
        return False
    import torch

    return bool(torch.cuda.is_available())


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")
def test_torch_cuda_matmul_is_full_float32_even_if_torch_allows_tf32() -> None:
    import torch

    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 512)).astype(np.float32)
    b = rng.standard_normal((512, 512)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    flags = torch.backends.cuda.matmul
    before = flags.fp32_precision
    try:
        flags.fp32_precision = "tf32"
        errors = {}
        for tf32 in (False, True):
            with minitorch.use_backend("torch", device="cuda", tf32=tf32):
                x, y = minitorch.tensor(a, dtype="float32"), minitorch.tensor(b, dtype="float32")
                assert str(x.device) == f"cuda:{torch.cuda.current_device()}"
                errors[tf32] = np.abs((x @ y).numpy() - exact).max() / np.abs(exact).max()
        assert flags.fp32_precision == "tf32"  # the user's flag is as it was
    finally:
        flags.fp32_precision = before
    assert errors[False] < 1e-5 and errors[True] > 10 * errors[False], errors


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="needs a CUDA GPU")
def test_torch_cuda_device_name_without_index_is_the_current_device() -> None:
    import torch

    with minitorch.use_backend("torch", device="cuda") as be:
        t = minitorch.ones(2)
        assert t.device == be.device == torch.device("cuda", torch.cuda.current_device())
        with pytest.raises(BackendMismatchError, match="different devices"):
            t + minitorch.tensor(1.0, device="cpu")
    assert math.isfinite(float(t.sum().item()))


def _cupy_gpu() -> bool:
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy

        return bool(cupy.cuda.is_available())
    except Exception:  # a CuPy without its CUDA libraries
        return False


@pytest.mark.gpu
@pytest.mark.skipif(not _cupy_gpu(), reason="needs CuPy and a CUDA GPU")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_cupy_kernels_on_the_gpu_give_the_formulas_values(dtype: str) -> None:
    """minitorch's own CuPy kernels (compiled here by CuPy), against the formulas they
    replace run by CuPy's own functions: the activations', the softmax family's along each
    axis, cross_entropy's with a column-major and a row-major logits array and three
    target dtypes, the range check for every integer dtype, and SGD's update."""
    import array_api_compat.cupy as compat_cupy
    import cupy

    launched: list[str] = []

    def counted(kind: Any) -> Any:
        def make(*spec: str, **options: str) -> Any:
            kernel = kind(*spec, **options)

            def call(*args: Any, **kwargs: Any) -> Any:
                launched.append(spec[-1].removeprefix("minitorch_"))
                return kernel(*args, **kwargs)

            return call

        return make

    elementwise, reduction = counted(cupy.ElementwiseKernel), counted(cupy.ReductionKernel)
    kernels = _cupy.vjp_kernels(cupy, compat_cupy, elementwise, reduction)
    rtol = 1e-12 if dtype == "float64" else 2e-6
    rng = np.random.default_rng(7)

    def close(got: Any, want: Any) -> None:
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(cupy.asnumpy(got), cupy.asnumpy(want), rtol=rtol, atol=rtol)

    g = cupy.asarray(rng.standard_normal((6, 7)).astype(dtype))
    out = cupy.asarray(rng.uniform(-1, 1, (6, 7)).astype(dtype))
    out[0, :3] = cupy.asarray([0.0, -0.0, np.nan], dtype=dtype)
    for name in ("relu_backward", "tanh_backward", "sigmoid_backward"):
        launched.clear()
        close(kernels[name](g, out), getattr(_fallback, name)(compat_cupy, g, out))
        assert launched == [name]
    x = cupy.asarray(rng.standard_normal((3, 4, 5)).astype(dtype))
    g3 = cupy.asarray(rng.standard_normal((3, 4, 5)).astype(dtype))
    for axis in (0, 1, 2, -1):
        s = cupy.exp(x - x.max(axis=axis, keepdims=True))
        s = s / s.sum(axis=axis, keepdims=True)
        for name, y, ran in (
            ("softmax_backward", s, ["softmax_dot", "softmax_backward"]),
            ("log_softmax_backward", cupy.log(s), ["log_softmax_backward"]),
        ):
            launched.clear()
            got = kernels[name](g3, y, axis)
            assert launched == ran
            close(got, getattr(_fallback, name)(compat_cupy, g3, y, axis))
    logits = cupy.asarray((rng.standard_normal((9, 5)) * 20).astype(dtype))
    for lg in (logits, cupy.asfortranarray(logits), logits[::2]):
        for tdtype in ("int64", "int32", "uint8"):
            t = cupy.asarray(rng.integers(0, 5, lg.shape[0]).astype(tdtype))
            launched.clear()
            nll, d = kernels["softmax_cross_entropy"](lg, t)
            assert launched == ["cross_entropy_losses", "cross_entropy_gradient"]
            want_nll, want_d = _fallback.softmax_cross_entropy(compat_cupy, lg, t)
            close(nll, want_nll)
            close(d, want_d)
    in_range = _cupy.all_in_range_with(compat_cupy, reduction)
    for idtype in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        v = cupy.asarray(np.array([0, 3, 7], dtype=idtype))
        for low, high, want in ((0, 8, True), (0, 7, False), (-8, 8, True), (1, 8, False)):
            launched.clear()
            got = in_range(v, low, high)
            assert got.shape == () and bool(got) is want, (idtype, low, high)
            assert launched == ([] if idtype == "uint64" else ["all_in_range"])
        assert bool(in_range(v[:0], 0, 1))
    # SGD's update: bit for bit CuPy's multiply then subtract (no fused multiply-add)
    sgd_update = _cupy.sgd_update_with(elementwise)
    for lr in (0.1, 1e-3, 0.30000000000000004):
        launched.clear()
        got = sgd_update(g, lr, out)
        assert launched == ["sgd_update"] and got.dtype == g.dtype
        np.testing.assert_array_equal(cupy.asnumpy(got), cupy.asnumpy(g - lr * out))


@pytest.mark.gpu
@pytest.mark.skipif(not _cupy_gpu(), reason="needs CuPy and a CUDA GPU")
def test_cupy_scatter_add_on_the_gpu_gives_numpys_add_at_for_every_dtype() -> None:
    import cupy

    scatter_add = _cupy.scatter_add_with(cupy, lambda device: device)
    index = np.array([2, 0, 2, 2, 1])
    rng = np.random.default_rng(12)
    for dtype in ("int8", "uint16", "bool", "complex64", "complex128", "float32", "int64"):
        values = (rng.standard_normal((5, 2)) * 100).astype(dtype)
        if dtype in ("int8", "uint16"):  # sums that wrap
            values = (rng.integers(0, 255, (5, 2)) * 97).astype(dtype)
        if dtype.startswith("complex"):
            values = (rng.standard_normal((5, 2)) + 1j * rng.standard_normal((5, 2))).astype(dtype)
        want = np.zeros((4, 2), dtype=dtype)
        np.add.at(want, index, values)
        got = scatter_add(4, cupy.asarray(index), cupy.asarray(values))
        assert got.dtype == want.dtype, dtype
        np.testing.assert_allclose(cupy.asnumpy(got), want, rtol=1e-6, err_msg=dtype)


# ------------------------------------------------------------------ the sessions


def test_every_manifest_runs_a_known_backend_with_the_pinned_torch() -> None:
    root = Path(__file__).resolve().parents[1]
    manifests = {
        p.stem: tomllib.loads(p.read_text()) for p in sorted((root / "backends").glob("*.toml"))
    }
    assert {"torch-cuda", "cupy"} <= set(manifests)
    for stem, m in manifests.items():
        assert m["name"] == stem
        assert m.get("backend", m["name"]) in BACKENDS, stem
        torch_pins = [r for r in m["install"] if r.startswith("torch")]
        has_torch_extra = any("torch" in r.split("[")[-1] for r in m["install"] if "[" in r)
        assert torch_pins == ["torch==2.13.0"] or (not torch_pins and has_torch_extra), stem
    cuda = manifests["torch-cuda"]
    assert cuda["backend"] == "torch" and cuda["device"] == "cuda" and "gpu" in cuda["tags"]
    assert "gpu" in manifests["cupy"]["tags"]


# ------------------------------------------------------------------ bench/bench_gpu.py

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_gpu.py"


def _bench(monkeypatch: pytest.MonkeyPatch) -> Any:
    """bench/bench_gpu.py as a module (a fresh one each time: tests patch it); bench/ is
    on the path, as when it runs as a script (it imports the shared workloads)."""
    monkeypatch.syspath_prepend(str(BENCH.parent))
    spec = importlib.util.spec_from_file_location("bench_gpu", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_gpu"] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules["bench_gpu"]
    return module


@pytest.mark.backend_independent
@needs_torch
def test_bench_gpu_cpu_smoke_runs_every_contender_and_they_agree(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = _bench(monkeypatch)
    assert bench.main(["--cpu-smoke", "--sizes", "mlp256", "deep4096", "elementwise"]) == 0
    out = capsys.readouterr().out
    for label in (
        "numpy for cupy (by hand)",
        "minitorch-numpy for -cupy",
        "minitorch-torch-cpu for -cuda",
        "pytorch eager (cpu)",
        "minitorch-cupy / cupy (by hand):",
        "minitorch-torch-cuda / pytorch eager (cuda):",
        "us per op",
    ):
        assert label in out, label
    assert out.count("first-step results agree") == 3 and "DISAGREE" not in out


@pytest.mark.backend_independent
@needs_torch
def test_bench_gpu_profile_says_where_each_contender_spends_the_host_time(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--profile N``: per contender, its Python calls per step and the functions with
    the most time of their own, minitorch's engine among them for its eager steps."""
    bench = _bench(monkeypatch)
    assert bench.main(["--cpu-smoke", "--sizes", "mlp256", "--profile", "3"]) == 0
    out = capsys.readouterr().out
    blocks = out.split("  profile of ")[1:]
    assert len(blocks) == 6, out
    names = [b.split(":")[0] for b in blocks]
    assert names[0] == "numpy for cupy (by hand)" and names[-1] == "pytorch eager (cpu)"
    eager = blocks[names.index("minitorch-numpy for -cupy")]
    lines = eager.splitlines()
    assert re.fullmatch(r"minitorch-numpy for -cupy: \d+ calls per step", lines[0])
    assert len(lines) == 9 and any("minitorch/engine.py" in line for line in lines[1:])
    assert all(re.match(r"\s+\d+\.\d us\s+\d+\.\dx  \S", line) for line in lines[1:])


@pytest.mark.backend_independent
@needs_torch
def test_bench_gpu_busy_says_how_long_the_device_works_per_step(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--busy N``: per contender, the time and number of the device's events per step
    (on the CPU smoke run, torch's host ops: none for NumPy's contenders, some for
    torch's), as a share of its median step."""
    bench = _bench(monkeypatch)
    assert bench.main(["--cpu-smoke", "--sizes", "mlp256", "--busy", "2"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "device busy" in line]
    assert len(lines) == 6, lines
    pattern = (
        r"  device busy, (.+): (\d+) us per step, (\d+)% of its median step; "
        r"(\d+\.\d) kernels and copies per step"
    )
    matches = [re.fullmatch(pattern, line) for line in lines]
    found = {m[1]: (int(m[2]), float(m[4])) for m in matches if m}
    assert len(found) == 6, lines
    assert found["numpy for cupy (by hand)"] == (0, 0.0)  # NumPy: no torch op at all
    assert found["pytorch eager (cpu)"][1] > 10  # the step's torch ops


@pytest.mark.backend_independent
@needs_torch
def test_bench_gpu_cpu_smoke_fails_when_a_contender_is_wrong(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = _bench(monkeypatch)
    right = bench.hand_chain
    monkeypatch.setattr(bench, "hand_chain", lambda xp, x: right(xp, x) * 1.001)
    assert bench.main(["--cpu-smoke", "--sizes", "elementwise"]) == 1
    assert "first-step results DISAGREE" in capsys.readouterr().out


@pytest.mark.backend_independent
def test_bench_gpu_says_why_it_measures_nothing_without_a_gpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    bench = _bench(monkeypatch)
    if not isinstance(bench.gpu_setup("cuda"), str):
        pytest.skip("this machine has a CUDA GPU: the bench would measure")
    done = subprocess.run(
        [sys.executable, str(BENCH), "--sizes", "elementwise"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == bench.NOTHING_TO_MEASURE == 3
    assert done.stdout == ""
    assert "bench_gpu: nothing measured, no CUDA GPU to measure on" in done.stderr
    assert "--cpu-smoke" in done.stderr
