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
