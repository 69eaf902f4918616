"""Creating tensors, copying the user's data, and moving tensors between backends."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest

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
