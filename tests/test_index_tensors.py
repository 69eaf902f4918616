"""x[idx] with integer Tensors on consecutive axes (after whole slices or ``...``):
gathered on the device by the ``gather_axes`` op (one take, the index never copied to
the host), by NumPy's rules; every other key keeps getitem's host path. Values and
gradients against NumPy (``np.add.at`` for the gradient), on every backend."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch.backend import to_host
from minitorch.ops import indexing

X = np.arange(120, dtype=np.float64).reshape(4, 5, 6) / 7.0

#: index arrays for the leading axes, as NumPy takes them
LEADING = {
    "rows": (np.array([0, 3, 3, -1]),),
    "a 2-d index": (np.array([[1, 2], [-4, 0]]),),
    "a 0-d index": (np.array(2),),
    "two axes": (np.array([0, 3, 1]), np.array([4, -5, 0])),
    "two axes that broadcast": (np.array([[0], [3]]), np.array([1, 2, -1])),
    "every axis": (np.array([1, 1]), np.array([0, 4]), np.array([5, -6])),
    "no index": (np.zeros(0, np.int64),),
    "int32": (np.array([3, 0], np.int32),),
}


#: X with a leading axis before the axes the index arrays take
X2 = np.stack([X, -X])
S = slice(None)

#: where the index arrays go in the key, for k arrays: (the tensor, before, after)
PLACES = {
    "alone": lambda k: (X, (), ()),
    "a slice after": lambda k: (X, (), (S,)),
    "... after": lambda k: (X, (), (Ellipsis,)),
    "after a slice": lambda k: (X2, (S,), ()),
    "after ...": lambda k: (X2, (Ellipsis,), (S,) * (3 - k)),
    "between slices": lambda k: (X2, (S,), (S,)),
}


def _key(arrays: tuple[Any, ...]) -> Any:
    return arrays[0] if len(arrays) == 1 else arrays


def _tensors(arrays: tuple[np.ndarray, ...]) -> tuple[Any, ...]:
    return tuple(minitorch.tensor(a, dtype=str(a.dtype)) for a in arrays)


def _fits(name: str, place: str) -> bool:
    """Whether the key has no more entries than the tensor has axes (three index arrays
    and a slice do not fit X: an IndexError, tested below)."""
    host, before, after = PLACES[place](len(LEADING[name]))
    return len(before) + len(LEADING[name]) + len(after) - (Ellipsis in before + after) <= host.ndim


@pytest.mark.parametrize(
    ("name", "place"), [(n, p) for n in LEADING for p in PLACES if _fits(n, p)]
)
def test_integer_tensors_on_consecutive_axes_gather_as_numpy(
    backend: Any, name: str, place: str
) -> None:
    arrays = LEADING[name]
    host, before, after = PLACES[place](len(arrays))
    key = (*before, *arrays, *after)
    _assert_gathers_as_numpy(host, _key(key), _key((*before, *_tensors(arrays), *after)))


def _assert_gathers_as_numpy(host: np.ndarray, key: Any, device_key: Any, seed: int = 0) -> None:
    """x[device_key] is one gather_axes with NumPy's value of host[key], and its
    gradient is np.add.at's."""
    x = minitorch.tensor(host, requires_grad=True)
    y = x[device_key]
    want = host[key]
    assert y.shape == want.shape
    np.testing.assert_array_equal(to_host(y.data), want)
    assert y._node is not None and y._node.op.name == "gather_axes"
    g = np.random.default_rng(seed).standard_normal(want.shape)
    (y * minitorch.tensor(g)).sum().backward()
    grad = np.zeros_like(host)
    np.add.at(grad, key, g)
    np.testing.assert_allclose(to_host(x.grad), grad, rtol=1e-12, atol=1e-12)


def test_the_index_is_not_read_on_the_host(backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """getitem's host path copies the index to the host (a GPU sync and a transfer of
    every position); x[idx] with integer Tensors must not take it."""

    _refuse_tensor_keys(monkeypatch)
    x = minitorch.tensor(X)
    rows, cols = minitorch.tensor([2, 0]), minitorch.tensor([1, 4])
    np.testing.assert_array_equal(to_host(x[rows, cols].data), X[[2, 0], [1, 4]])
    np.testing.assert_array_equal(to_host(x[:, cols].data), X[:, [1, 4]])
    with pytest.raises(AssertionError, match="read on the host"):
        x[rows, :, cols]  # index arrays apart: getitem's host path


X4 = np.arange(400, dtype=np.float64).reshape(5, 4, 4, 5) / 9.0
IDX, JDX = np.array([2, 0, -1]), np.array([[1], [0]])

#: keys with slices and ints around the index Tensors, where NumPy keeps the Tensors'
#: axes where they stand (Tensors and ints side by side) or puts them first (only ints
#: before them)
MIXED = {
    "an int after": (IDX, 2),
    "an int before": (2, IDX),
    "a partial slice after": (IDX, slice(1, 3)),
    "a negative step before": (slice(None, None, -1), IDX),
    "an int apart, after": (IDX, slice(None), 2),
    "ints on both sides": (1, IDX, JDX),
    "two arrays and an int": (IDX, JDX, 0),
    "... then an int": (Ellipsis, IDX, 1),
    "slices on both sides": (slice(0, 2), IDX, JDX, slice(1, 4)),
    "two ints before": (0, 1, IDX),
    "an int before, one apart after": (0, IDX, slice(None), 1),
    "a slice, an int, the array": (slice(1, 2), 0, IDX),
    "an array, ..., an int": (IDX, Ellipsis, -1),
}


def _on_device(key: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(minitorch.tensor(k) if isinstance(k, np.ndarray) else k for k in key)


def _refuse_tensor_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """getitem's host path reads a Tensor key there: fail instead."""
    host_index = indexing._host_index

    def refuse(k: Any) -> Any:
        if isinstance(k, minitorch.Tensor):
            raise AssertionError("the index was read on the host")
        return host_index(k)

    monkeypatch.setattr(indexing, "_host_index", refuse)


@pytest.mark.parametrize("name", MIXED)
def test_slices_and_ints_around_index_tensors_index_first_then_gather(
    backend: Any, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _refuse_tensor_keys(monkeypatch)
    key = MIXED[name]
    _assert_gathers_as_numpy(X4, key, _on_device(key), seed=3)


@pytest.mark.parametrize("name", MIXED)
def test_assigning_with_slices_and_ints_around_index_tensors_stays_on_the_device(
    backend: Any, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """x[idx, 0] = v: setitem_axes into x[:, 0], written back by a basic setitem; the
    values and both gradients as NumPy's assignment and PyTorch's, no host read."""
    _refuse_tensor_keys(monkeypatch)
    key = MIXED[name]
    selected = X4[key].shape
    rng = np.random.default_rng(5)
    value = rng.standard_normal(selected[-1:])
    x = minitorch.tensor(X4, requires_grad=True)
    v = minitorch.tensor(value, requires_grad=True)
    y = x * 1.0
    y[_on_device(key)] = v
    want = X4.copy()
    want[key] = value
    np.testing.assert_array_equal(to_host(y.data), want)
    g = rng.standard_normal(X4.shape)
    (y * minitorch.tensor(g)).sum().backward()
    gx = g.copy()
    gx[key] = 0.0
    np.testing.assert_allclose(to_host(x.grad), gx, rtol=0, atol=0)
    gv = g[key].reshape(-1, selected[-1]).sum(axis=0)
    np.testing.assert_allclose(to_host(v.grad), gv, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "key",
    [
        lambda t: (None, t),
        lambda t: (t, slice(None), t),  # index arrays apart: NumPy puts their axes first
        lambda t: (2, slice(None), t),  # ... and so with an int apart, a slice before
        lambda t: (t, True),
        lambda t: (Ellipsis, t, Ellipsis),
        lambda t: t > 1,  # a mask
        lambda t: (t, t, t, t),  # more index arrays than axes
    ],
)
def test_other_keys_with_tensors_keep_numpys_rules(backend: Any, key: Any) -> None:
    idx = np.array([3, 0, 2])
    x = minitorch.tensor(X[:, :4, :4], requires_grad=True)
    host_key = key(idx)
    try:
        want = X[:, :4, :4][host_key]
    except IndexError:
        with pytest.raises(IndexError):
            x[key(minitorch.tensor(idx))]
        return
    y = x[key(minitorch.tensor(idx))]
    np.testing.assert_array_equal(to_host(y.data), want)
    assert y._node is not None and y._node.op.name == "getitem"


def test_an_index_out_of_range_names_the_axis_and_its_range(backend: Any) -> None:
    x = minitorch.tensor(X)
    with pytest.raises(IndexError, match=r"gather_axes .*axis 1 is out of range \[-5, 5\)"):
        x[minitorch.tensor([0, 1]), minitorch.tensor([2, 5])]
    with pytest.raises(IndexError, match=r"axis 0 is out of range \[-4, 4\) .*from -5 to 0"):
        x[minitorch.tensor([0, -5])]
    with pytest.raises(IndexError, match=r"axis 2 is out of range \[-6, 6\) .*from 0 to 6"):
        x[..., minitorch.tensor([0, 6])]
    with pytest.raises(IndexError, match=r"shapes \[\(2,\), \(3,\)\] do not broadcast"):
        x[minitorch.tensor([0, 1]), minitorch.tensor([0, 1, 2])]


def test_an_index_tensor_of_another_backend_takes_the_host_path(backend: Any) -> None:
    others = [b for b in minitorch.available_backends() if b not in (backend.name, "cupy")]
    if not others:
        pytest.skip(f"no backend but {backend.name} is installed")
    with minitorch.use_backend(others[0]):
        idx = minitorch.tensor([1, 3])
    x = minitorch.tensor(X)
    y = x[idx]
    np.testing.assert_array_equal(to_host(y.data), X[[1, 3]])


M = np.array(
    [[True, False, True, True, False], [False] * 5, [True] * 5, [False, True] * 2 + [False]]
)

#: x[mask] = value with one value for every masked place: (mask, value) as NumPy takes them
MASKED = {
    "a number": (M, 0.5),
    "an int into floats": (M, -2),
    "a 0-d tensor": (M, np.array(1.25)),
    "a row for every masked place": (M, np.linspace(-1.0, 1.0, 6)),
    "a leading mask": (M[:, 0], np.array(3.0)),
    "a leading mask and a row": (M[:, 1], np.linspace(0.0, 1.0, 30).reshape(5, 6)),
    "the whole tensor": (np.ones((4, 5, 6), bool), np.array(-1.0)),
}


@pytest.mark.parametrize("name", MASKED)
def test_assigning_through_a_mask_tensor_stays_on_the_device(
    backend: Any, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """x[mask] = value, with a value the same at every masked place, is where(mask,
    value, x) on the device (as PyTorch's masked_fill): no host read of the mask, the
    values and both gradients as NumPy's assignment gives them."""
    mask, value = MASKED[name]
    monkeypatch.setattr(indexing, "_host_index", lambda k: pytest.fail("read on the host"))
    x = minitorch.tensor(X, requires_grad=True)
    tensor_value = isinstance(value, np.ndarray)
    v = minitorch.tensor(value, requires_grad=True) if tensor_value else value
    y = x * 1.0
    y[minitorch.tensor(mask)] = v
    want = X.copy()
    want[mask] = value
    np.testing.assert_array_equal(to_host(y.data), want)
    assert y._node is not None and y._node.op.name == "where"
    g = np.random.default_rng(1).standard_normal(X.shape)
    (y * minitorch.tensor(g)).sum().backward()
    np.testing.assert_allclose(
        to_host(x.grad),
        np.where(mask.reshape(mask.shape + (1,) * (3 - mask.ndim)), 0.0, g),
        rtol=0,
        atol=0,
    )
    if tensor_value:
        want_gv = g[mask].reshape(-1, *value.shape).sum(axis=0)
        np.testing.assert_allclose(to_host(v.grad), want_gv, rtol=1e-12, atol=1e-12)


def test_assigning_through_a_mask_keeps_numpys_rules_where_it_cannot_stay_on_the_device(
    backend: Any,
) -> None:
    """A value with one entry per masked place (its length is the mask's count), or a
    float into an integer tensor (truncated, as NumPy), takes setitem's host path."""
    xi = np.arange(20).reshape(4, 5)
    x = minitorch.tensor(xi)
    x[minitorch.tensor(M)] = minitorch.tensor(np.arange(10))
    want = xi.copy()
    want[M] = np.arange(10)
    np.testing.assert_array_equal(to_host(x.data), want)
    x[minitorch.tensor(M)] = 2.75
    want[M] = 2
    np.testing.assert_array_equal(to_host(x.data), want)
    assert "int" in x.backend.dtype_name(x.dtype)


def test_a_step_that_assigns_through_a_mask_replays() -> None:
    def step(x: minitorch.Tensor, m: minitorch.Tensor) -> minitorch.Tensor:
        y = x * 2.0
        y[m] = 0.0
        return y

    x = minitorch.tensor(X[0])
    replayed = minitorch.capture(step)
    rng = np.random.default_rng(2)
    for _ in range(3):
        m = rng.random(X[0].shape) > 0.5
        np.testing.assert_array_equal(
            to_host(replayed(x, minitorch.tensor(m)).data), np.where(m, 0.0, 2 * X[0])
        )
    assert replayed.stats["replays"] == 2


#: x[key] = value with index Tensors (no index repeats): key, and the value's shape
#: (None: a Python number)
PUTS = {
    "rows, a number": ((np.array([3, 0, -2]),), None),
    "rows, one row for all": ((np.array([3, 0, -2]),), (6,)),
    "rows, the selection": ((np.array([[1], [-1]]),), (2, 1, 5, 6)),
    "two axes": ((np.array([0, 3, 1]), np.array([4, -5, 2])), (3, 6)),
    "after a slice": ((S, np.array([4, 0])), (4, 2, 6)),
    "after ...": ((Ellipsis, np.array([[5], [0]])), (2, 1)),
    "a slice after": ((np.array([2, 1]), S), None),
}


@pytest.mark.parametrize("name", PUTS)
def test_assigning_through_index_tensors_stays_on_the_device(
    backend: Any, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """x[idx] = v with integer Tensors (side by side, only : and ... around them) is one
    setitem_axes on the device, on every backend (array-api-strict refused it): the
    values as NumPy's assignment, the gradients as PyTorch's (g with zeros where x was
    overwritten; the value: g there, summed where it was broadcast), the index never
    read on the host, the arrays saved before left as they were."""
    _refuse_tensor_keys(monkeypatch)
    key, vshape = PUTS[name]
    rng = np.random.default_rng(4)
    value = 0.5 if vshape is None else rng.standard_normal(vshape)
    x = minitorch.tensor(X, requires_grad=True)
    v = value if vshape is None else minitorch.tensor(value, requires_grad=True)
    y = x * 1.0
    before = y.data
    y[_on_device(key)] = v
    want = X.copy()
    want[key] = value
    np.testing.assert_array_equal(to_host(y.data), want)
    np.testing.assert_array_equal(to_host(before), X)  # a new array, not written into
    assert y._node is not None and y._node.op.name == "setitem_axes"
    g = rng.standard_normal(X.shape)
    (y * minitorch.tensor(g)).sum().backward()
    gx = g.copy()
    gx[key] = 0.0
    np.testing.assert_allclose(to_host(x.grad), gx, rtol=0, atol=0)
    if vshape is not None:
        selected = g[key]
        lead = selected.ndim - len(vshape)
        gv = selected.sum(axis=tuple(range(lead)))
        gv = gv.sum(axis=tuple(i for i, n in enumerate(vshape) if n == 1), keepdims=True)
        np.testing.assert_allclose(to_host(v.grad), gv, rtol=1e-12, atol=1e-12)


def test_a_value_that_does_not_fit_the_selection_names_both_shapes(backend: Any) -> None:
    x = minitorch.tensor(X)
    with pytest.raises(IndexError, match=r"value of shape \(4,\) .*shape \(2, 5, 6\) of x\[key\]"):
        x[minitorch.tensor([0, 1])] = minitorch.tensor(np.ones(4))
    with pytest.raises(IndexError, match=r"setitem_axes .*axis 0 is out of range \[-4, 4\)"):
        x[minitorch.tensor([0, 4])] = 1.0


def test_a_step_that_assigns_through_index_tensors_replays() -> None:
    def step(x: minitorch.Tensor, i: minitorch.Tensor) -> minitorch.Tensor:
        y = x * 2.0
        y[:, i] = x[:, i] ** 2
        return y

    x = minitorch.tensor(X[0])
    replayed = minitorch.capture(step)
    for cols in ([0, 4], [2, -1], [1, 3]):
        want = 2 * X[0]
        want[:, cols] = X[0][:, cols] ** 2
        out = replayed(x, minitorch.tensor(cols))
        np.testing.assert_allclose(to_host(out.data), want, rtol=1e-15)
    assert replayed.stats["replays"] == 2


#: index dtypes narrower than int32, and the unsigned ones: torch indexes only with
#: int32/int64 (and reads uint8 as a mask), array-api-strict cannot compare uint8 with
#: a negative bound; minitorch widens them (exactly) before any library sees them
NARROW = ["int8", "int16", "uint8", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("dtype", NARROW)
def test_narrow_and_unsigned_index_tensors_index_as_int64(backend: Any, dtype: str) -> None:
    """x[idx], x[idx] = v, take, embedding, take_along_axis and cross_entropy with an
    index tensor of a narrow or unsigned dtype: NumPy's values and np.add.at's gradients
    (the same indices as int64), on every backend. Before, torch refused them inside
    (index_select wants int32 or int64) or read a uint8 index as a mask, and
    array-api-strict refused uint8 and uint16 ones."""
    if backend.name == "torch" and dtype == "uint64":
        # torch has no kernels for uint64 (no minimum, no comparison): its own error,
        # named, rather than a silent wrap of indices beyond int64 to negative ones
        idx = minitorch.tensor(np.array([2, 0], dtype=np.uint64))
        with pytest.raises(minitorch.OpError, match="UInt64"):
            minitorch.tensor(X)[idx]
        return
    rows = np.array([3, 0, 3, 1])
    idx = minitorch.tensor(rows.astype(dtype))
    assert backend.dtype_name(idx.dtype) == dtype
    _assert_gathers_as_numpy(X, rows, idx)

    x = minitorch.tensor(X[:, :, 0], requires_grad=True)  # (4, 5)
    g = np.random.default_rng(1).standard_normal((4, 5))
    for name, y in {
        "take": minitorch.take(x, idx, axis=0),
        "embedding": minitorch.embedding(idx, x),
    }.items():
        x.grad = None
        np.testing.assert_array_equal(to_host(y.data), X[rows, :, 0], err_msg=name)
        (y * minitorch.tensor(g)).sum().backward()
        want = np.zeros((4, 5))
        np.add.at(want, rows, g)
        np.testing.assert_allclose(to_host(x.grad), want, rtol=1e-12, err_msg=name)

    put = minitorch.tensor(X[:, :, 0])
    put[idx] = 0.5
    want = X[:, :, 0].copy()
    want[rows] = 0.5
    np.testing.assert_array_equal(to_host(put.data), want)

    cols = np.array([[4], [0], [2], [1]])
    xp = minitorch.array_api.namespace()
    along = xp.take_along_axis(x, minitorch.tensor(cols.astype(dtype)), axis=1)
    np.testing.assert_array_equal(to_host(along.data), np.take_along_axis(X[:, :, 0], cols, 1))

    # class targets: the loss of int64 targets (cross_entropy's own tests hold that one
    # to PyTorch), with class weights too
    for kw in ({}, {"weight": minitorch.tensor(np.linspace(0.5, 2.0, 5))}):
        narrow = minitorch.cross_entropy(x, idx, **kw)
        wide = minitorch.cross_entropy(x, minitorch.tensor(rows), **kw)
        np.testing.assert_allclose(float(narrow), float(wide), rtol=1e-15)


def test_setitem_without_gradients_writes_in_place_on_numpy(backend: Any) -> None:
    """``x[key] = v`` where no gradient is involved writes into x's own array on NumPy
    (its address stays; the version counts one each), for a number, a value Tensor,
    an index Tensor and a mask; a leaf that requires grad too, under ``no_grad()``. A
    value of another dtype is cast into a new array, as on every backend."""
    if backend.name != "numpy":
        pytest.skip(f"{backend.name}: a new array (the in-place write is NumPy's)")
    x = minitorch.zeros((4, 3), dtype="float32")
    w = minitorch.zeros((4, 3), dtype="float32", requires_grad=True)
    for t in (x, w):
        address, version = t.data.ctypes.data, t._version
        with minitorch.no_grad():
            t[1] = 2.5
            t[minitorch.tensor([0, -1])] = minitorch.tensor([[1.0, 2.0, 3.0]], dtype="float32")
            t[minitorch.tensor([False, False, True, False])] = 4.0
            assert t.data.ctypes.data == address
            t[2:3, ::2] = minitorch.tensor(7.0, dtype="float64")
        assert t._version == version + 4
        want = np.array([[1, 2, 3], [2.5, 2.5, 2.5], [7, 4, 7], [1, 2, 3]], dtype=np.float32)
        np.testing.assert_array_equal(t.numpy(), want, strict=True)


def test_setitem_never_changes_what_another_tensor_or_a_graph_holds(backend: Any) -> None:
    """What shares x's array keeps its values: a view made by ``x[1:]``, the array the
    user holds (``a = x.data``), a tensor a graph saved (its backward then refuses, by
    the version counter, as PyTorch); a failed assignment leaves x as it was."""
    x = minitorch.tensor(np.arange(4.0))
    view = x[1:]
    x[1] = 10.0
    np.testing.assert_array_equal(view.numpy(), [1, 2, 3])
    np.testing.assert_array_equal(x.numpy(), [0, 10, 2, 3])
    held = x.data
    before = np.array(to_host(held), copy=True)
    x[0] = -5.0
    np.testing.assert_array_equal(to_host(held), before)
    np.testing.assert_array_equal(x.numpy(), [-5, 10, 2, 3])
    w = minitorch.tensor(np.arange(3.0), requires_grad=True)
    y = (w * w).sum()
    with minitorch.no_grad():
        w[0] = 100.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        y.backward()
    z = minitorch.tensor(np.arange(3.0))
    for bad in (
        lambda: z.__setitem__(5, 1.0),
        lambda: z.__setitem__(slice(0, 2), minitorch.ones(3)),
    ):
        with pytest.raises(minitorch.OpError):
            bad()
        np.testing.assert_array_equal(z.numpy(), [0, 1, 2])


@pytest.mark.parametrize(
    "key",
    [5, -4, (0, 3), (..., 3), (None, 3), (slice(None), -5), (1, ..., 0, None)],
    ids=repr,
)
def test_an_int_beyond_its_axis_is_refused_on_every_backend(backend: Any, key: Any) -> None:
    """``x[5]`` of an axis of 3 is an IndexError naming the axis, for reading and for
    assigning, and x keeps its values: JAX clamped the read (the last element) and
    dropped the assignment, silently."""
    x = np.arange(6.0).reshape(3, 2) if key != (1, ..., 0, None) else np.zeros((2, 2, 0))
    with pytest.raises(IndexError):
        np.zeros_like(x)[key] = 1.0  # NumPy refuses it too
    t = minitorch.tensor(x)
    with pytest.raises(IndexError, match=r"out of range for axis \d of size \d"):
        t[key]
    with pytest.raises(IndexError):
        t[key] = 1.0
    np.testing.assert_array_equal(t.numpy(), x)


def test_the_setitem_function_fits_a_python_number_to_the_dtype(backend: Any) -> None:
    """``minitorch.setitem(x, 2.75, key=...)`` writes a float into an int8 tensor as
    ``x[key] = 2.75`` does (truncated toward zero, as NumPy and PyTorch), on every
    backend (array-api-strict refused the float), and refuses what int8 cannot hold."""
    x = minitorch.tensor(np.array([1, 2, 3], dtype=np.int8))
    out = minitorch.setitem(x, -2.75, key=(slice(0, 2),))
    np.testing.assert_array_equal(out.numpy(), np.array([-2, -2, 3], dtype=np.int8), strict=True)
    np.testing.assert_array_equal(x.numpy(), [1, 2, 3])
    with pytest.raises(minitorch.OpError, match="int8"):
        minitorch.setitem(x, 300, key=(0,))


@pytest.mark.parametrize("key", [1.0, "a", (0, 1.5), np.array([0.5]), [1.0]], ids=repr)
def test_a_key_that_is_no_index_is_an_index_error_naming_it(backend: Any, key: Any) -> None:
    """A float, a string or a float array as an index: an IndexError (as NumPy and
    PyTorch raise) that names the op and what indexes; for x[key] = v too, x unchanged."""
    t = minitorch.tensor(np.arange(6.0).reshape(2, 3))
    with pytest.raises(IndexError, match=r"^getitem: .*(is no index|must be integer or boolean)"):
        t[key]
    with pytest.raises(IndexError, match=r"^setitem: .*(is no index|must be integer or boolean)"):
        t[key] = 1.0
    np.testing.assert_array_equal(t.numpy(), np.arange(6.0).reshape(2, 3))
