"""The Tensor object: attributes, repr, comparisons, hashing, detach, in-place ops
and their version counter, dtype preservation with Python scalars, and mixing backends."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch.autograd import Node

# ------------------------------------------------------------------ attributes


def test_slots_and_no_dict(backend: Any) -> None:
    x = minitorch.tensor([1.0])
    assert not hasattr(x, "__dict__")
    assert "data" in minitorch.Tensor.__slots__
    with pytest.raises(AttributeError):
        x.some_new_attribute = 1  # type: ignore[attr-defined]


def test_attributes(backend: Any) -> None:
    x = minitorch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    assert x.shape == (2, 3) and isinstance(x.shape, tuple)
    assert x.ndim == 2 and x.size == 6 and x.numel() == 6 and len(x) == 2
    assert x.dtype == backend.dtypes["float64"]
    assert str(x.device) == str(backend.device)
    assert x.backend.name == backend.name
    assert type(x.data) is type(backend.from_numpy(np.zeros(1), None, backend.device))
    assert x.requires_grad is True
    assert x.grad is None and x.grad_fn is None and x.is_leaf and x.version == 0
    y = x * 2.0
    assert isinstance(y.grad_fn, Node)
    assert y.grad_fn.name == "mul" and not y.is_leaf and y.requires_grad
    assert y.grad_fn.next_nodes == (x, None)
    z = y.sum()
    assert z.grad_fn.next_nodes == (y.grad_fn,)
    z.backward()
    g = x.grad
    assert type(g) is type(x.data)
    assert tuple(g.shape) == x.shape and g.dtype == x.dtype and str(g.device) == str(x.device)
    np.testing.assert_array_equal(backend.to_numpy(g), np.full((2, 3), 2.0))
    assert y.grad is None  # non-leaf: no .grad unless retain_grad()


def test_retain_grad(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.retain_grad()
    (y * 3.0).sum().backward()
    np.testing.assert_array_equal(backend.to_numpy(y.grad), [3.0, 3.0])
    np.testing.assert_array_equal(backend.to_numpy(x.grad), [6.0, 12.0])


def test_repr(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    r = repr(x * x)
    assert r.startswith("tensor([1., 4.]")
    assert f"backend={backend.name}" in r
    assert "dtype=float64" in r
    assert "grad_fn=<mul>" in r
    assert "requires_grad=True" in repr(x)
    assert "grad_fn" not in repr(x.detach())
    assert "requires_grad" not in repr(x.detach())
    assert "dtype=int64" in repr(minitorch.tensor([1, 2]))
    assert "grad_fn=<sum>" in repr(x.sum())
    if backend.name != "numpy":  # the device as device= takes it (cuda:0, CPU_DEVICE)
        shown = r.split("device=")[1].split(",")[0]
        assert "<" not in shown and "(" not in shown and "'" not in shown, shown
        assert minitorch.tensor([1.0], device=shown).device == x.device


@pytest.mark.parametrize(
    ("value", "spec"),
    [(2.0 / 3.0, ".4f"), (-1234.5678, ",.2f"), (1e-9, ".3e"), (7, "d"), (7, ">5"), (True, "")],
)
def test_a_one_element_tensor_formats_as_its_number(backend: Any, value: Any, spec: str) -> None:
    """``f"{loss:.4f}"`` works as for a PyTorch 0-d tensor (it raised TypeError)."""
    torch = pytest.importorskip("torch")
    t = minitorch.tensor(value)
    if spec:
        assert format(t, spec) == format(torch.tensor(value), spec) == format(value, spec)
        assert format(minitorch.tensor([value]), spec) == format(value, spec)  # one element
    assert format(t, "") == str(t)  # no spec: str, as for every object


def test_a_tensor_of_several_elements_refuses_a_number_format(backend: Any) -> None:
    with pytest.raises(TypeError, match=r"format spec '\.2f': only a tensor with one element"):
        f"{minitorch.tensor([1.0, 2.0]):.2f}"
    assert f"{minitorch.tensor([1.0, 2.0])}".startswith("tensor([1., 2.]")


# ------------------------------------------------------------------ comparisons, hashing


def test_comparisons_are_elementwise_booleans_without_grad(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = minitorch.tensor([3.0, 2.0, 1.0])
    cases = {
        "==": (x == y, [False, True, False]),
        "!=": (x != y, [True, False, True]),
        "<": (x < y, [True, False, False]),
        "<=": (x <= y, [True, True, False]),
        ">": (x > y, [False, False, True]),
        ">=": (x >= y, [False, True, True]),
        "== 2.0": (x == 2.0, [False, True, False]),
        "> 1": (x > 1, [False, True, True]),
        "2.0 < x": (2.0 < x, [False, False, True]),  # noqa: SIM300  (reflected)
    }
    for what, (t, expected) in cases.items():
        assert isinstance(t, minitorch.Tensor), what
        assert t.dtype == backend.dtypes["bool"], what
        assert not t.requires_grad and t.grad_fn is None, what
        np.testing.assert_array_equal(t.numpy(), expected, err_msg=what)
    for f, expected in (
        (minitorch.eq, [False, True, False]),
        (minitorch.lt, [True, False, False]),
        (minitorch.ge, [False, True, True]),
    ):
        np.testing.assert_array_equal(f(x, y).numpy(), expected)


def test_tensors_hash_by_identity(backend: Any) -> None:
    a = minitorch.tensor([1.0, 2.0])
    b = minitorch.tensor([1.0, 2.0])
    assert hash(a) == hash(a) and hash(a) != hash(b)
    d = {a: "a", b: "b"}
    assert d[a] == "a" and d[b] == "b"
    s = {a, b, a}
    assert len(s) == 2 and a in s
    assert minitorch.tensor([1.0]) not in {a}


def test_bool_of_one_element_and_ambiguous(backend: Any) -> None:
    assert bool(minitorch.tensor([2.0]) > 1.0)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(minitorch.tensor([1.0, 2.0]) > 0.0)


# ------------------------------------------------------------------ detach


def test_detach_shares_data_and_cuts_the_graph(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3.0
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    assert d.data is y.data
    np.testing.assert_array_equal(d.numpy(), [3.0, 6.0])
    (x * d).sum().backward()  # d is a constant: dx = d
    np.testing.assert_array_equal(backend.to_numpy(x.grad), [3.0, 6.0])


# ------------------------------------------------------------------ dtype with scalars


SCALAR_EXPRS: dict[str, tuple[Any, Any]] = {  # name -> (on a Tensor, on host float64)
    "t * 2.0": (lambda t: t * 2.0, lambda h: h * 2.0),
    "2.0 * t": (lambda t: 2.0 * t, lambda h: 2.0 * h),
    "t + 1": (lambda t: t + 1, lambda h: h + 1),
    "1 - t": (lambda t: 1 - t, lambda h: 1 - h),
    "t / 3": (lambda t: t / 3, lambda h: h / 3),
    "3.0 / t": (lambda t: 3.0 / t, lambda h: 3.0 / h),
    "t ** 2": (lambda t: t**2, lambda h: h**2),
    "t ** 0.5": (lambda t: t**0.5, lambda h: h**0.5),
    "2.0 ** t": (lambda t: 2.0**t, lambda h: 2.0**h),
    "-t": (lambda t: -t, lambda h: -h),
    "maximum(t, 1.5)": (lambda t: minitorch.maximum(t, 1.5), lambda h: np.maximum(h, 1.5)),
    "where(t > 1, t, 0.0)": (
        lambda t: minitorch.where(t > 1.0, t, 0.0),
        lambda h: np.where(h > 1.0, h, 0.0),
    ),
    "t * np.float64(2)": (lambda t: t * np.float64(2.0), lambda h: h * 2.0),
    "np.float64(2) * t": (lambda t: np.float64(2.0) * t, lambda h: 2.0 * h),
    "t + np.float64(1)": (lambda t: t + np.float64(1.0), lambda h: h + 1.0),
    "np.float64(1) - t": (lambda t: np.float64(1.0) - t, lambda h: 1.0 - h),
    "t / np.float64(4)": (lambda t: t / np.float64(4.0), lambda h: h / 4.0),
    "t * np.int64(3)": (lambda t: t * np.int64(3), lambda h: h * 3.0),
    "t ** np.float64(2)": (lambda t: t ** np.float64(2.0), lambda h: h**2.0),
    "t * np.float32(0.5)": (lambda t: t * np.float32(0.5), lambda h: h * 0.5),
    "maximum(t, np.float64(1.5))": (
        lambda t: minitorch.maximum(t, np.float64(1.5)),
        lambda h: np.maximum(h, 1.5),
    ),
}


@pytest.mark.parametrize("expr", sorted(SCALAR_EXPRS))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scalars_keep_the_tensor_dtype(backend: Any, expr: str, dtype: str) -> None:
    """Python numbers, and NumPy scalars like them, never change a tensor's dtype
    (``float32_array * np.float64(2)`` would be float64 under NumPy's NEP 50)."""
    with minitorch.use_backend(backend.name, dtype=dtype, device=backend.device):
        t = minitorch.tensor([1.0, 2.0, 4.0], requires_grad=True)
    fn, ref = SCALAR_EXPRS[expr]
    out = fn(t)
    assert out.dtype == backend.dtypes[dtype], f"{expr}: {out.dtype}"
    assert str(out.device) == str(backend.device)
    rtol = 1e-6 if dtype == "float32" else 1e-15
    np.testing.assert_allclose(out.numpy(), ref(np.array([1.0, 2.0, 4.0])), rtol=rtol)
    out.sum().backward()
    assert t.grad.dtype == backend.dtypes[dtype]


def test_numpy_scalar_values_are_used_exactly(backend: Any) -> None:
    t = minitorch.tensor([1.0, 2.0], requires_grad=True)
    out = t * np.float64(2.5) + np.float32(0.5)
    np.testing.assert_array_equal(out.numpy(), [3.0, 5.5])
    out.sum().backward()
    np.testing.assert_array_equal(backend.to_numpy(t.grad), [2.5, 2.5])


# ------------------------------------------------------------------ in-place ops


def test_inplace_ops_bump_the_version(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0, 3.0])
    data_before = x.data
    steps = [
        (lambda: x.add_(1.0), [2.0, 3.0, 4.0]),
        (lambda: x.sub_(0.5), [1.5, 2.5, 3.5]),
        (lambda: x.mul_(2.0), [3.0, 5.0, 7.0]),
        (lambda: x.div_(2.0), [1.5, 2.5, 3.5]),
        (lambda: x.__setitem__(1, -1.0), [1.5, -1.0, 3.5]),
        (lambda: x.add_(minitorch.tensor([1.0, 1.0, 1.0]), alpha=2.0), [3.5, 1.0, 5.5]),
        (lambda: x.zero_(), [0.0, 0.0, 0.0]),
        (lambda: x.fill_(4.0), [4.0, 4.0, 4.0]),
    ]
    for k, (step, expected) in enumerate(steps, start=1):
        r = step()
        assert r is x or r is None  # x[i] = v returns None, the rest return x
        assert x.version == k
        np.testing.assert_array_equal(x.numpy(), expected)
    assert x.dtype == backend.dtypes["float64"]
    ident = id(x)
    x += 1.0
    x -= 2.0
    x *= 3.0
    x /= 3.0
    assert id(x) == ident and x.version == len(steps) + 4
    np.testing.assert_array_equal(x.numpy(), [3.0, 3.0, 3.0])
    # in-place ops rebind .data to a new array: arrays saved by earlier ops (or shared
    # with a .detach()ed tensor) are never written to
    assert backend.to_numpy(data_before).tolist() == [1.0, 2.0, 3.0]


def test_zero_and_fill_overwrite_inf_and_nan(backend: Any) -> None:
    x = minitorch.tensor([np.inf, -np.inf, np.nan, 1.0])
    x.zero_()
    np.testing.assert_array_equal(x.numpy(), [0.0, 0.0, 0.0, 0.0])
    x = minitorch.tensor([np.inf, np.nan])
    x.fill_(2.5)
    np.testing.assert_array_equal(x.numpy(), [2.5, 2.5])
    i = minitorch.tensor([3, 4])
    i.zero_()
    assert i.dtype == backend.dtypes["int64"]
    np.testing.assert_array_equal(i.numpy(), [0, 0])
    i.fill_(7)
    np.testing.assert_array_equal(i.numpy(), [7, 7])
    assert i.version == 2


def test_inplace_keeps_dtype(backend: Any) -> None:
    with minitorch.use_backend(backend.name, dtype="float32", device=backend.device):
        x = minitorch.tensor([1.0, 2.0])
    x.add_(minitorch.tensor(np.array([1.0, 1.0])))  # float64 operand
    assert x.dtype == backend.dtypes["float32"]
    np.testing.assert_array_equal(x.numpy(), np.array([2.0, 3.0], dtype=np.float32))


def test_inplace_on_leaf_requiring_grad(backend: Any) -> None:
    w = minitorch.tensor([1.0, 2.0], requires_grad=True)
    for what, op in (
        ("add_", lambda: w.add_(1.0)),
        ("mul_", lambda: w.mul_(2.0)),
        ("zero_", lambda: w.zero_()),
        ("__setitem__", lambda: w.__setitem__(0, 3.0)),
    ):
        with pytest.raises(RuntimeError, match=rf"{what}: a leaf tensor that requires grad"):
            op()
    with pytest.raises(RuntimeError, match="no_grad"):
        w -= 1.0
    assert w.version == 0
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])
    # a parameter update is allowed under no_grad, and records no graph
    (w * w).sum().backward()
    with minitorch.no_grad():
        w -= 0.25 * w.grad
        w[1] = 5.0
    assert w.is_leaf and w.requires_grad and w.version == 2
    np.testing.assert_array_equal(w.numpy(), [0.5, 5.0])


# ------------------------------------------------------------------ backends do not mix


def _other_backend(backend: Any) -> str:
    return "torch" if backend.name == "numpy" else "numpy"


def test_backends_never_mix_silently(backend: Any) -> None:
    other = _other_backend(backend)
    if other == "torch":
        pytest.importorskip("torch")
    a = minitorch.tensor([1.0, 2.0])
    with minitorch.use_backend(other, dtype="float64"):
        b = minitorch.tensor([3.0, 4.0])
    for what, f in (
        ("add", lambda: a + b),
        ("mul", lambda: b * a),
        ("matmul", lambda: a @ b),
        ("maximum", lambda: minitorch.maximum(a, b)),
        ("concat", lambda: minitorch.concat([a, b])),
        ("where", lambda: minitorch.where(a > 1.0, a, b)),
    ):
        with pytest.raises(minitorch.BackendMismatchError) as info:
            f()
        msg = str(info.value)
        assert what in msg, msg
        assert backend.name in msg and other in msg, msg
        assert ".to(" in msg, msg
    assert issubclass(minitorch.BackendMismatchError, minitorch.OpError)


def test_strict_devices_never_mix(backend: Any) -> None:
    if backend.name != "array_api_strict":
        pytest.skip(f"{backend.name}: only array_api_strict has several CPU devices to mix")
    with minitorch.use_backend("array_api_strict", dtype="float64", device="device1"):
        a = minitorch.tensor([1.0, 2.0], requires_grad=True)
    with minitorch.use_backend("array_api_strict", dtype="float64", device="CPU_DEVICE"):
        b = minitorch.tensor([3.0, 4.0], requires_grad=True)
    with pytest.raises(minitorch.BackendMismatchError) as info:
        a * b
    msg = str(info.value)
    assert "mul" in msg and "device1" in msg and "CPU_DEVICE" in msg, msg
    moved = b.to("array_api_strict", device="device1")
    assert "device1" in str(moved.device)
    out = a * moved
    np.testing.assert_array_equal(out.numpy(), [3.0, 8.0])
    out.sum().backward()  # the gradient of b goes back to CPU_DEVICE
    assert "CPU_DEVICE" in str(b.grad.device) and "device1" in str(a.grad.device)
    np.testing.assert_array_equal(b.backend.to_numpy(b.grad), [1.0, 2.0])
    np.testing.assert_array_equal(a.backend.to_numpy(a.grad), [3.0, 4.0])


def test_numpy_arrays_and_lists_join_as_constants(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    a = np.array([10.0, 20.0])
    y = x * a + [1.0, 1.0]
    assert y.backend.name == backend.name and y.dtype == x.dtype
    assert str(y.device) == str(backend.device)
    np.testing.assert_array_equal(y.numpy(), [11.0, 41.0])
    y.sum().backward()
    np.testing.assert_array_equal(backend.to_numpy(x.grad), [10.0, 20.0])
    np.testing.assert_array_equal(a, [10.0, 20.0])
