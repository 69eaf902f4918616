"""Errors speak to the user: they name the op, shapes, dtypes, backends and what to do.
And nothing the user passed in is ever mutated."""

from __future__ import annotations

import copy
import importlib.util
from typing import Any

import numpy as np
import pytest

import minitorch
import minitorch.backend as B

# ------------------------------------------------------------------ op errors


def test_matmul_shape_error_names_everything(backend: Any) -> None:
    a = minitorch.tensor(np.ones((2, 3)))
    b = minitorch.tensor(np.ones((2, 4), dtype=np.float32))
    with pytest.raises(minitorch.OpError) as info:
        a @ b
    msg = str(info.value)
    for part in ("matmul", "(2, 3)", "(2, 4)", "float64", "float32", f"backend={backend.name}"):
        assert part in msg, (part, msg)
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)
    with pytest.raises(minitorch.OpError, match="matmul"):
        minitorch.matmul(a, a)


def test_a_dtype_the_library_has_no_kernel_for_says_to_convert(backend: Any) -> None:
    """torch has uint16 tensors (tensor() of a NumPy uint16 array is one, as in
    torch.tensor) but no addition for them: the OpError names the op, the dtype and the
    library, and says to convert; the same sum on the converted tensor is right. Where the
    library adds uint16 (NumPy, JAX, array-api-strict) the sum is exact in uint16."""
    a = minitorch.tensor(np.array([1, 2, 60000], dtype=np.uint16))
    want = np.array([2, 4, 54464], dtype=np.uint16)  # 120000 mod 2**16, as NumPy
    if backend.name != "torch":
        np.testing.assert_array_equal(B.to_host((a + a).data), want)
        return
    with pytest.raises(minitorch.OpError) as info:
        a + a
    msg = str(info.value)
    parts = ("add failed", "dtype=uint16", "NotImplementedError", "torch has no add for uint16")
    for part in parts:
        assert part in msg, (part, msg)
    assert "x.astype('int64')" in msg
    b = a.astype("int64")
    np.testing.assert_array_equal(B.to_host((b + b).data), [2, 4, 120000])


def test_reduction_axis_out_of_range(backend: Any) -> None:
    x = minitorch.tensor(np.ones((2, 3)))
    for f in (minitorch.sum, minitorch.mean, minitorch.max):
        with pytest.raises(
            minitorch.OpError, match=rf"{f.__name__}: axis 5 is out of range.*2 dim"
        ):
            f(x, axis=5)
    with pytest.raises(minitorch.OpError, match="axis -3"):
        x.sum(axis=-3)
    with pytest.raises(minitorch.OpError, match="repeated axis"):
        x.sum(axis=(1, -1))


def test_broadcast_and_reshape_errors(backend: Any) -> None:
    x = minitorch.tensor(np.ones((2, 3)))
    with pytest.raises(minitorch.OpError) as info:
        x + minitorch.tensor(np.ones(4))
    msg = str(info.value)
    assert "add" in msg and "(2, 3)" in msg and "(4,)" in msg, msg
    with pytest.raises(minitorch.OpError, match=r"reshape.*\(2, 3\).*\(4, 2\)"):
        x.reshape(4, 2)


def test_cross_entropy_target_errors(backend: Any) -> None:
    logits = minitorch.tensor(np.zeros((3, 4)), requires_grad=True)
    for bad in ([0, 4, 1], [0, -1, 1]):  # a negative target must not wrap around
        with pytest.raises(minitorch.OpError, match=r"cross_entropy: targets must lie in \[0, 4\)"):
            minitorch.cross_entropy(logits, minitorch.tensor(bad, dtype="int64"))
    with pytest.raises(minitorch.OpError, match="targets must be integer class indices"):
        minitorch.cross_entropy(logits, minitorch.tensor([0.0, 1.0, 2.0]))
    with pytest.raises(minitorch.OpError, match=r"expected logits \(N, C\) and targets \(N,\)"):
        minitorch.cross_entropy(logits, minitorch.tensor([0, 1], dtype="int64"))
    with pytest.raises(minitorch.OpError, match="reduction must be one of"):
        minitorch.cross_entropy(logits, minitorch.tensor([0, 1, 2], dtype="int64"), "avg")
    assert logits.grad is None


def test_bad_parameters_are_type_errors(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'axiz'.*axis"):
        x.sum(axiz=0)
    with pytest.raises(TypeError, match="exp"):
        minitorch.exp()


def test_astype_given_no_dtype_is_a_type_error_naming_astype(backend: Any) -> None:
    """x.astype(np.array([1])) was the library's error in an OpError (NumPy's "Cannot
    construct a dtype from an array"), astype(x, None) was float64 on NumPy and JAX, x's
    own dtype on torch and an AttributeError in an OpError on array-api-strict,
    x.astype(a_tensor) on NumPy the tensor's dtype, astype([1.0], 3) torch's "to()
    received an invalid combination of arguments", and x.astype() a KeyError."""
    x = minitorch.tensor([1.0, 2.0])
    accepted = rf"dtype must be a dtype or its name \(e\.g\. 'float32', float, {backend.name} "
    for bad, shown in (
        (3, r"3 \(int\)"),
        (2.5, r"2\.5 \(float\)"),
        (None, r"None \(NoneType\)"),
        ({}, r"\{\} \(dict\)"),
        (np.array([1, 2]), r"array\(\[1, 2\]\) \(ndarray\)"),
        (minitorch.tensor([1]), r"tensor\(\[1\], dtype=int64, .*\) \(Tensor\)"),
    ):
        for given in (x, [1.0, 2.0]):
            with pytest.raises(TypeError, match=rf"^astype: {accepted}.*, got {shown}$") as info:
                minitorch.astype(given, bad)
            assert not isinstance(info.value, minitorch.OpError)
        with pytest.raises(TypeError, match=rf"^astype: {accepted}.*, got {shown}$"):
            x.astype(bad)
    with pytest.raises(ValueError, match=r"^astype: unknown dtype 'nope' for backend"):
        x.astype("nope")
    with pytest.raises(TypeError, match=r"^astype\(\) missing parameter\(s\): dtype$"):
        x.astype()
    # a creation function refuses them with the same words, after its own name
    with pytest.raises(
        TypeError, match=rf"^zeros: {accepted}.*, got array\(\[1, 2\]\) \(ndarray\)$"
    ):
        minitorch.zeros(2, dtype=np.array([1, 2]))
    # what is a dtype still casts, from a list too, as NumPy casts
    for dtype, want in (("int32", np.int32), (np.float32, np.float32), (float, np.float64)):
        for got in (x.astype(dtype), minitorch.astype([1.0, 2.0], dtype)):
            np.testing.assert_array_equal(
                got.to("numpy").data, np.asarray([1.0, 2.0]).astype(want), strict=True
            )


def test_item_and_len_errors(backend: Any) -> None:
    with pytest.raises(ValueError, match=r"shape \(2,\)"):
        minitorch.tensor([1.0, 2.0]).item()
    with pytest.raises(TypeError, match="0-d"):
        len(minitorch.tensor(1.0))


# ------------------------------------------------------------------ backend errors


def test_unknown_backend_lists_valid_names() -> None:
    with pytest.raises(ValueError) as info:
        minitorch.set_backend("tensorflow")
    msg = str(info.value)
    assert "'tensorflow'" in msg
    for name in ("numpy", "torch", "array_api_strict", "jax", "cupy"):
        assert name in msg, msg
    with pytest.raises(ValueError, match="valid names"), minitorch.use_backend("nope"):
        pass


def test_missing_library_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(B.BACKENDS, "fakelib", ("_fakelib", "minitorch_no_such_library", "fake"))
    with pytest.raises(ImportError) as info:
        minitorch.set_backend("fakelib")
    msg = str(info.value)
    assert "'fakelib'" in msg and "minitorch_no_such_library" in msg, msg
    assert "pip install 'minitorch[fake]'" in msg, msg
    assert "fakelib" not in minitorch.available_backends()


def test_missing_torch_names_the_torch_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name == "torch" else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.delitem(B._base, "torch", raising=False)
    before = minitorch.get_backend()
    with pytest.raises(ImportError, match=r"pip install 'minitorch\[torch\]'"):
        minitorch.set_backend("torch")
    assert minitorch.get_backend() is before
    assert "torch" not in minitorch.available_backends()
    assert "numpy" in minitorch.available_backends()


def test_requires_grad_on_integers_is_a_clear_error(backend: Any) -> None:
    with pytest.raises(RuntimeError, match=r"only floating-point.*int64.*\(3,\)"):
        minitorch.tensor([1, 2, 3], requires_grad=True)


# ------------------------------------------------------------------ nothing is mutated


def test_user_inputs_are_never_mutated(backend: Any) -> None:
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((3, 4))
    w_np = rng.standard_normal((4, 2))
    b_list = [0.5, -0.5]
    idx = np.array([2, 0, 2])
    target = np.array([1, 0, 1])
    g_np = np.ones((3, 2))
    saved = copy.deepcopy((x_np, w_np, b_list, idx, target, g_np))

    x = minitorch.tensor(x_np, requires_grad=True)
    w = minitorch.tensor(w_np, requires_grad=True)
    h = x @ w_np + b_list  # NumPy arrays and lists join as constants
    h2 = (x @ w) * g_np
    rows = minitorch.take(h2, minitorch.tensor(idx), axis=0)
    loss = minitorch.cross_entropy(rows, minitorch.tensor(target)) + h.sum()
    loss.backward()
    (x @ w).backward(g_np)
    x_np_view = x_np[::-1]
    minitorch.tensor(x_np_view).add_(1.0)

    for before, after in zip(saved, (x_np, w_np, b_list, idx, target, g_np), strict=True):
        np.testing.assert_array_equal(np.asarray(after), np.asarray(before))


def test_backend_inputs_are_never_mutated(backend: Any) -> None:
    a_np = np.arange(6.0).reshape(2, 3)
    a = backend.from_numpy(a_np, backend.dtypes["float64"], backend.device)
    x = minitorch.tensor(np.ones((2, 3)), requires_grad=True)
    y = x * a
    y.backward(a)
    with minitorch.no_grad():
        t = minitorch.tensor(a)
        t += 1.0
        t[0, 0] = 100.0
    np.testing.assert_array_equal(backend.to_numpy(a), a_np)
    np.testing.assert_array_equal(backend.to_numpy(x.grad), a_np * a_np)  # upstream a, times a


# ------------------------------------------------------------------ API misuse


def test_optimizers_take_a_non_empty_iterable_of_tensors(backend: Any) -> None:
    w = minitorch.tensor([1.0, 2.0], requires_grad=True)
    for opt in (minitorch.optim.SGD, minitorch.optim.Adam, minitorch.optim.AdamW):
        name = opt.__name__
        for empty in ([], iter([])):  # PyTorch: "optimizer got an empty parameter list"
            with pytest.raises(ValueError, match=rf"{name}: got an empty parameter list"):
                opt(empty, lr=0.1)
        with pytest.raises(
            TypeError,
            match=rf"{name}: params must be an iterable of Tensors .*got Tensor\(shape=\(2,\).*"
            r"wrap one tensor in a list",
        ):
            opt(w, lr=0.1)
        # PyTorch's parameter groups: minitorch has none, and says so
        with pytest.raises(TypeError, match=rf"{name}: parameter 0 is a dict; .*parameter groups"):
            opt([{"params": [w]}], lr=0.1)
        with pytest.raises(TypeError, match=rf"{name}: params is a dict; .*parameter groups"):
            opt({"params": [w]}, lr=0.1)
        with pytest.raises(TypeError, match=rf"{name}: parameter 1 is not a Tensor \(got int 3\)"):
            opt([w, 3], lr=0.1)
        with pytest.raises(TypeError, match=rf"{name}: params must be an iterable.*got str"):
            opt("w", lr=0.1)
        assert opt((p for p in [w]), lr=0.1).params == [w]  # a generator is fine


def test_clip_grad_norm_names_what_is_not_a_tensor(backend: Any) -> None:
    w = minitorch.tensor([3.0, 4.0], requires_grad=True)
    (w * w).sum().backward()
    for bad, what in (("w", "str"), (None, "NoneType"), (3.0, "float 3.0")):
        with pytest.raises(
            TypeError, match=rf"clip_grad_norm_: params must be an iterable of Tensors .*{what}"
        ):
            minitorch.optim.clip_grad_norm_(bad, 1.0)
    with pytest.raises(
        TypeError, match=r"clip_grad_norm_: parameter 1 is not a Tensor \(got str\)"
    ):
        minitorch.optim.clip_grad_norm_([w, "b"], 1.0)
    np.testing.assert_allclose(backend.to_numpy(w.grad), [6.0, 8.0])  # refused: left alone
    assert float(minitorch.optim.clip_grad_norm_(w, 1.0)) == pytest.approx(10.0)


def test_autograd_grad_names_outputs_and_inputs_that_are_not_tensors(backend: Any) -> None:
    w = minitorch.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    for bad, shown in ((None, "NoneType"), (3, "int 3"), ("w", "str"), ({"w": w}, "dict")):
        with pytest.raises(
            TypeError,
            match=rf"autograd\.grad: inputs must be a Tensor or a sequence of Tensors, got {shown}",
        ):
            minitorch.autograd.grad(y, bad)
        with pytest.raises(
            TypeError,
            match=rf"autograd\.grad: outputs must be a Tensor or a sequence of Tensors, got "
            rf"{shown}",
        ):
            minitorch.autograd.grad(bad, w)
    with pytest.raises(TypeError, match=r"autograd\.grad: input 1 must be a Tensor, got int 3"):
        minitorch.autograd.grad(y, [w, 3])


@pytest.mark.parametrize("name", ["grad", "value_and_grad", "jacobian", "hessian"])
def test_func_transforms_check_argnums(backend: Any, name: str) -> None:
    transform = getattr(minitorch.func, name)

    def f(a: Any, b: Any) -> Any:
        return (a * b).sum()

    x = minitorch.tensor([1.0, 2.0])
    for bad, shown in (
        (None, "NoneType None"),
        (1.5, "float 1.5"),
        (True, "bool True"),
        ((), r"tuple \(\)"),
        ((0, 1.5), r"tuple \(0, 1\.5\)"),
        ("0", "str '0'"),
    ):
        # refused where the transform is made: the mistake is there, not in the call
        with pytest.raises(
            TypeError,
            match=rf"func\.{name}: argnums must be an int or a non-empty tuple of "
            rf"ints .*got {shown}",
        ):
            transform(f, argnums=bad)
    for bad in (2, -3, (0, 2)):
        with pytest.raises(
            ValueError,
            match=rf"func\.{name}: argnums -?[23] is out of range for a call with 2 positional "
            r"argument\(s\); pass an index from -2 to 1",
        ):
            transform(f, argnums=bad)(x, x)
    assert transform(f, argnums=[0, 1])(x, x) is not None  # a list, as a tuple


def test_requires_grad_must_be_a_bool(backend: Any) -> None:
    t = minitorch.tensor([1.0, 2.0])
    for bad, shown in (("yes", "str 'yes'"), (None, "NoneType None"), (1, "int 1")):
        # PyTorch: "requires_grad_(): argument 'requires_grad' must be bool"
        with pytest.raises(TypeError, match=rf"requires_grad_: .*True or False, got {shown}"):
            t.requires_grad_(bad)
        with pytest.raises(TypeError, match=rf"requires_grad: .*True or False, got {shown}"):
            t.requires_grad = bad
        assert t.requires_grad is False
    assert t.requires_grad_(np.bool_(True)).requires_grad is True
    t.requires_grad = False
    assert t.requires_grad is False


def test_retain_grad_on_a_tensor_that_does_not_require_grad(backend: Any) -> None:
    # PyTorch: "can't retain_grad on Tensor that has requires_grad=False"
    i = minitorch.tensor([1, 2])
    with pytest.raises(
        RuntimeError,
        match=r"retain_grad: Tensor\(shape=\(2,\), dtype=int64.*can never have a gradient",
    ):
        i.retain_grad()
    with minitorch.no_grad(), pytest.raises(RuntimeError, match="can never have a gradient"):
        i.retain_grad()
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    for const in (minitorch.tensor([1.0, 2.0]), x.detach() * 2.0):
        with pytest.raises(
            RuntimeError,
            match=r"retain_grad: Tensor\(shape=\(2,\), dtype=float64.*does not require grad",
        ):
            const.retain_grad()
    with minitorch.no_grad():  # no graph is recorded: a float result is let be
        y = x * 2.0
        y.retain_grad()
    assert y.grad is None
    x.retain_grad()  # a leaf that requires grad: its .grad comes anyway
    z = x * 3.0
    z.retain_grad()
    z.sum().backward()
    np.testing.assert_array_equal(backend.to_numpy(z.grad), [1.0, 1.0])
    np.testing.assert_array_equal(backend.to_numpy(x.grad), [3.0, 3.0])


def test_fill_takes_a_real_number(backend: Any) -> None:
    for t in (minitorch.tensor([1.0, 2.0]), minitorch.tensor([1, 2])):
        for bad, shown in (
            (None, "NoneType None"),
            ("a", "str 'a'"),
            ("1.5", "str '1.5'"),
            (1 + 2j, r"complex \(1\+2j\)"),
            ([1.0], r"list \[1\.0\]"),
            (minitorch.tensor([3.0]), r"Tensor\(shape=\(1,\)"),
        ):
            with pytest.raises(
                TypeError, match=rf"fill_: value must be a real number .*got {shown}"
            ):
                t.fill_(bad)
        assert t.version == 0 and t.tolist() == [1, 2]  # refused: unchanged
        # a 0-d tensor, a 0-d NumPy array or a NumPy scalar is its number, as in PyTorch
        for value in (minitorch.tensor(3.0), np.array(3.0), np.float32(3.0), np.int64(3)):
            assert t.fill_(value).tolist() == [3, 3]
    assert minitorch.tensor([0.0]).fill_(True).tolist() == [1.0]


def test_save_and_load_take_a_file_name(backend: Any, tmp_path: Any) -> None:
    w = minitorch.tensor([1.0, 2.0])
    for bad, shown in ((3, "int 3"), (None, "NoneType None"), (b"w.mt", "bytes b'w.mt'")):
        with pytest.raises(
            TypeError,
            match=rf"save: path must be a file name, a str or "
            rf"os\.PathLike .*got {shown}",
        ):
            minitorch.save(w, bad)
        with pytest.raises(TypeError, match=rf"load: path must be a file name.*got {shown}"):
            minitorch.load(bad)
    with (
        open(tmp_path / "w.mt", "wb") as f,
        pytest.raises(TypeError, match=r"save: .*got BufferedWriter.*not open file objects"),
    ):
        minitorch.save(w, f)
    assert (tmp_path / "w.mt").stat().st_size == 0
    assert minitorch.load(minitorch.save(w, str(tmp_path / "w.mt"))).tolist() == [1.0, 2.0]


def test_a_move_to_a_device_the_backend_lacks_names_the_backend_and_its_device(
    backend: Any,
) -> None:
    # was the library's own message on array-api-strict ("The device 'cpu' is not a
    # valid choice.") and torch's on a CPU-only build
    x = minitorch.tensor(np.ones(2))
    with pytest.raises(ValueError) as info:
        x.to(device="nowhere:7")
    msg = str(info.value)
    assert msg.startswith(f"to: device='nowhere:7' is not a device of the {backend.name} backend")
    assert "leave device= out for" in msg, msg
    with pytest.raises(ValueError, match="to: device='nowhere:7' is not a device of the numpy"):
        x.to("numpy", device="nowhere:7")
    # "cpu" is the host on every CPU backend (array-api-strict: its CPU_DEVICE); CuPy
    # has none
    if backend.name == "cupy":
        with pytest.raises(ValueError, match="to: device='cpu' is not a device of the cupy"):
            x.to(device="cpu")
    else:
        np.testing.assert_array_equal(x.to(device="cpu").numpy(), np.ones(2))
