"""Bad input and misuse (the first items of the adversarial sweep), each held against
PyTorch's behaviour: an error where PyTorch raises, PyTorch's numbers where it computes."""

from __future__ import annotations

import gc
import math
import weakref
from typing import Any

import numpy as np
import pytest
from helpers import tensor_f64 as _t

import minitorch
from minitorch import engine, optim
from minitorch.testing import assert_close


def _host(a: Any, backend: Any) -> np.ndarray:
    return np.asarray(backend.to_numpy(a))


# ------------------------------------------------------------------ shapes and axes
def test_permute_refuses_axes_out_of_range(backend: Any) -> None:
    x = _t(np.zeros((2, 3)), backend)
    with pytest.raises(minitorch.OpError, match=r"axes \(1, 2\) are out of range"):
        x.permute(1, 2)
    assert x.permute(-1, 0).shape == (3, 2)


def test_reshape_refuses_non_integer_sizes(backend: Any) -> None:
    x = _t(np.zeros(6), backend)
    with pytest.raises(minitorch.OpError, match="must be ints"):
        minitorch.reshape(x, (3.7, 2))
    with pytest.raises(minitorch.OpError, match="must be ints"):
        x.reshape(True, 6)


def test_an_axis_is_an_int_not_a_bool(backend: Any) -> None:
    x = _t(np.ones((2, 3)), backend)
    with pytest.raises(minitorch.OpError, match="an axis must be an int, got True"):
        x.sum(axis=True)


@pytest.mark.parametrize("data", [None, "abc", {"a": 1}, b"xy"])
def test_tensor_refuses_what_is_not_numbers(data: Any) -> None:
    with pytest.raises(TypeError, match=f"from a {type(data).__name__}"):
        minitorch.tensor(data)


@pytest.mark.parametrize("data", [["a", "b"], np.array([None, 1.0])])
def test_tensor_refuses_arrays_that_are_not_numbers(data: Any) -> None:
    with pytest.raises(TypeError, match="from an array of dtype"):
        minitorch.tensor(data)


def test_tensor_refuses_a_generator() -> None:
    with pytest.raises(TypeError, match="from a generator"):
        minitorch.tensor(i for i in range(3))


# ------------------------------------------------------------------ in place
def test_in_place_refuses_a_cast_to_a_narrower_kind(backend: Any) -> None:
    be = backend
    i = minitorch.Tensor._make(
        be.from_numpy(np.array([1, 2]), be.dtypes["int64"], be.device), be, None
    )
    # (array-api-strict refuses int + float already in the add)
    with pytest.raises((RuntimeError, minitorch.OpError), match=r"in place|promoted"):
        i += 0.5
    with pytest.raises((RuntimeError, minitorch.OpError), match=r"in place|floating-point"):
        i /= 2
    assert _host(i.data, be).tolist() == [1, 2] and i.version == 0
    i += 1
    assert _host(i.data, be).tolist() == [2, 3]
    b = minitorch.Tensor._make(
        be.from_numpy(np.array([True]), be.dtypes["bool"], be.device), be, None
    )
    with pytest.raises((RuntimeError, minitorch.OpError), match=r"in place|numeric dtypes"):
        b += 1
    f = minitorch.Tensor._make(be.from_numpy(np.ones(2), be.dtypes["float32"], be.device), be, None)
    f += _t([0.5, 0.25], be)  # float64 into float32: the same kind, as PyTorch
    assert f.dtype == be.dtypes["float32"]
    assert_close(f, np.array([1.5, 1.25]), rtol=0)


def test_in_place_on_a_result_then_more_in_place_gives_pytorchs_gradient(backend: Any) -> None:
    x = _t([1.0, 2.0], backend, requires_grad=True)
    w = _t([3.0, 4.0], backend, requires_grad=True)
    a = x * 1.0
    a *= w
    a += 1.0  # the mul's saved copy of `a` is its old value: nothing it needs changed
    a.sum().backward()
    assert_close(x.grad, np.array([3.0, 4.0]), rtol=0)  # PyTorch: [3, 4] and [1, 2]
    assert_close(w.grad, np.array([1.0, 2.0]), rtol=0)
    b = x * 1.0
    c = b * b  # saves b itself
    b += 1.0
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        c.sum().backward()


# ------------------------------------------------------------------ what may require grad
def _ints(backend: Any) -> minitorch.Tensor:
    arr = backend.from_numpy(np.array([1, 2]), backend.dtypes["int64"], backend.device)
    return minitorch.Tensor._make(arr, backend, None)


def test_only_floating_point_tensors_require_grad(backend: Any) -> None:
    i = _ints(backend)
    with pytest.raises(RuntimeError, match="only floating-point tensors can require grad"):
        i.requires_grad = True
    assert not i.requires_grad
    with (
        minitorch.use_backend(backend.name, device=backend.device),
        pytest.raises(RuntimeError, match="only floating-point tensors can require grad"),
    ):
        minitorch.linspace(0, 4, 5, dtype="int64", requires_grad=True)
    y = _t([1.0], backend, requires_grad=True) * 2.0
    with pytest.raises(RuntimeError, match="non-leaf"):
        y.requires_grad = False


def test_a_cast_to_an_integer_type_ends_the_graph(backend: Any) -> None:
    x = _t([1.5, 2.5], backend, requires_grad=True)
    n = x.astype(backend.dtypes["int64"])
    assert not n.requires_grad and n.grad_fn is None  # PyTorch: x.to(torch.int64) too
    with pytest.raises(RuntimeError, match="does not require grad"):
        n.sum().backward()


def test_where_refuses_a_condition_that_is_not_boolean(backend: Any) -> None:
    c = _t([1.0, 0.0], backend)
    with pytest.raises(minitorch.OpError, match="the condition must be boolean"):
        minitorch.where(c, _t([1.0, 2.0], backend), _t([3.0, 4.0], backend))


def test_assigning_grad_checks_shape_dtype_and_backend(backend: Any) -> None:
    x = _t([1.0, 2.0, 3.0], backend, requires_grad=True)
    with pytest.raises(ValueError, match=r"shape \(2, 3\) where the tensor has \(3,\)"):
        x.grad = _t(np.zeros((2, 3)), backend).data
    with pytest.raises(ValueError, match="dtype float32 where the tensor has float64"):
        x.grad = backend.from_numpy(np.zeros(3), backend.dtypes["float32"], backend.device)
    if backend.name != "numpy":
        with pytest.raises(TypeError, match=f"must be an array of {backend.name}"):
            x.grad = np.zeros(3)
    assert x.grad is None
    x.grad = _t([1.0, 1.0, 1.0], backend).data
    (x * 2.0).sum().backward()
    assert_close(x.grad, np.array([3.0, 3.0, 3.0]), rtol=0)


def test_no_grad_covers_a_generator_body_and_not_its_caller() -> None:
    @minitorch.no_grad()
    def batches(n: int) -> Any:
        for _ in range(n):
            yield minitorch.is_grad_enabled()
        return "done"

    it = batches(2)
    assert next(it) is False
    assert minitorch.is_grad_enabled()  # the caller, between two next() calls
    assert next(it) is False
    with pytest.raises(StopIteration, match="done"):
        next(it)


def test_backward_refuses_a_gradient_of_another_backend_or_device(backend: Any) -> None:
    y = _t([1.0, 2.0], backend, requires_grad=True) * 2.0
    other = "numpy" if backend.name != "numpy" else "array_api_strict"
    if other in minitorch.available_backends():
        g = minitorch.tensor([1.0, 1.0]).to(other)
        with pytest.raises(minitorch.BackendMismatchError, match="gradient of the output"):
            y.backward(g)
    if backend.name == "array_api_strict":
        import array_api_strict

        devices = array_api_strict.__array_namespace_info__().devices()
        elsewhere = next(d for d in devices if d != y.device)
        with pytest.raises(minitorch.BackendMismatchError, match="on device"):
            y.backward(backend.xp.ones(2, dtype=y.dtype, device=elsewhere))
    y.backward(np.ones(2))  # NumPy data is host data, as in tensor()
    assert y.grad is None


# ------------------------------------------------------------------ backward misuse
def test_a_retained_grad_accumulates_over_backward_calls(backend: Any) -> None:
    x = _t([1.0, 2.0], backend, requires_grad=True)
    y = x * 2.0
    y.retain_grad()
    z = (y * y).sum()
    z.backward(retain_graph=True)
    z.backward()
    assert_close(y.grad, np.array([8.0, 16.0]), rtol=0)  # PyTorch: [8, 16]
    assert_close(x.grad, np.array([16.0, 32.0]), rtol=0)


def test_a_retained_grad_and_a_leaf_grad_do_not_share_memory() -> None:
    with minitorch.use_backend("numpy"):
        x = minitorch.tensor([1.0, 2.0], requires_grad=True, dtype="float64")
        y = x + 0.0
        y.retain_grad()
        y.sum().backward()
    assert not np.shares_memory(x.grad, y.grad)
    y.grad[0] = 5.0
    assert x.grad.tolist() == [1.0, 1.0]


def test_requires_grad_false_after_the_graph_was_built_leaves_grad_alone(backend: Any) -> None:
    x = _t([1.0, 2.0], backend, requires_grad=True)
    w = _t([3.0, 4.0], backend, requires_grad=True)
    loss = (x * w).sum()
    x.requires_grad_(False)
    loss.backward()
    assert x.grad is None  # PyTorch: None
    assert_close(w.grad, np.array([1.0, 2.0]), rtol=0)


def test_a_graph_that_saved_nothing_can_run_backward_twice(backend: Any) -> None:
    x = _t([1.0, 2.0], backend, requires_grad=True)
    y = -(x + 1.0)  # add and neg save nothing
    seed = _t([1.0, 3.0], backend).data
    y.backward(seed)
    y.backward(seed)  # PyTorch accumulates: nothing was saved, nothing was freed
    assert_close(x.grad, np.array([-2.0, -6.0]), rtol=0)
    z = (x * x).sum()
    z.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        z.backward()


def test_a_graph_that_saved_only_shapes_can_run_backward_twice(backend: Any) -> None:
    x = _t([1.0, 2.0], backend, requires_grad=True)
    y = (x + 1.0).reshape(2, 1).mean() + x.sum()  # sum, mean, reshape save shapes and axes
    y.backward()
    y.backward()  # PyTorch accumulates: no array was saved
    assert_close(x.grad, np.array([3.0, 3.0]), rtol=0)


def test_keeping_the_loss_does_not_keep_the_activations(backend: Any) -> None:
    """``history.append(loss)``: after backward, the graph holds no intermediate Tensor."""
    x = _t(np.ones((4, 3)), backend, requires_grad=True)
    h = x * 2.0
    loss = (h * h).sum()  # mul saves h
    ref = weakref.ref(h)
    del h
    loss.backward()
    gc.collect()
    assert ref() is None
    assert loss.grad_fn is not None  # the loss itself stays usable


def test_the_shape_cache_stays_bounded() -> None:
    with minitorch.use_backend("numpy"):  # 5,000 shapes: JAX would compile each
        x = minitorch.tensor(np.ones(1), requires_grad=True)
        for n in range(1, 5000):
            (x * minitorch.tensor(np.ones(n))).sum()
    assert len(engine._SHAPES) <= 4097


# ------------------------------------------------------------------ optimizers
def test_sgd_refuses_negative_momentum_and_weight_decay() -> None:
    w = minitorch.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match="momentum must be >= 0"):
        optim.SGD([w], lr=0.1, momentum=-0.5)
    with pytest.raises(ValueError, match="weight_decay must be >= 0"):
        optim.SGD([w], lr=0.1, weight_decay=-1e-4)
    with pytest.raises(ValueError, match="lr must be >= 0 and finite"):
        optim.SGD([w], lr=math.nan)


def test_sgd_momentum_buffer_is_not_the_gradient() -> None:
    """Changing ``w.grad`` after a step must not change the trajectory (PyTorch)."""
    torch = pytest.importorskip("torch")
    # NumPy: its gradients are mutable arrays (the aliasing matters where one can write)
    w = minitorch.tensor(np.array([1.0, -2.0]), requires_grad=True).to("numpy")
    w = w.detach().requires_grad_()
    tw = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    opt = optim.SGD([w], lr=0.1, momentum=0.9)
    topt = torch.optim.SGD([tw], lr=0.1, momentum=0.9)
    for _ in range(3):
        (w * w).sum().backward()
        (tw * tw).sum().backward()
        opt.step()
        topt.step()
        w.grad[...] = 0.0  # in place, after the step
        with torch.no_grad():
            tw.grad.zero_()
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-15)


def test_clip_grad_norm_with_a_nan_gradient_makes_every_gradient_nan(backend: Any) -> None:
    a = _t([1.0, 2.0], backend, requires_grad=True)
    b = _t([3.0], backend, requires_grad=True)
    a.grad = _t([np.nan, 1.0], backend).data
    b.grad = _t([4.0], backend).data
    total = optim.clip_grad_norm_([a, b], 1.0)
    assert math.isnan(total)
    assert np.isnan(_host(a.grad, backend)).all() and np.isnan(_host(b.grad, backend)).all()


# ------------------------------------------------------------------ indices
def test_embedding_refuses_negative_indices(backend: Any) -> None:
    be = backend
    w = _t(np.arange(12.0).reshape(4, 3), be, requires_grad=True)
    idx = minitorch.Tensor._make(
        be.from_numpy(np.array([-1, 0]), be.dtypes["int64"], be.device), be, None
    )
    with pytest.raises(minitorch.OpError, match=r"embedding: an index is out of range \[0, 4\)"):
        minitorch.embedding(idx, w)


def test_scatter_add_refuses_bad_indices_and_sizes(backend: Any) -> None:
    be = backend
    v = _t(np.ones((2, 3)), be, requires_grad=True)

    def ints(a: Any) -> minitorch.Tensor:
        return minitorch.Tensor._make(
            be.from_numpy(np.array(a), be.dtypes["int64"], be.device), be, None
        )

    for bad in ([-1, 0], [0, 4]):
        with pytest.raises(minitorch.OpError, match=r"out of range \[0, 4\)"):
            minitorch.scatter_add(v, ints(bad), n=4)
    with pytest.raises(minitorch.OpError, match="indices must be integers"):
        minitorch.scatter_add(v, _t([0.0, 1.0], be), n=4)
    with pytest.raises(minitorch.OpError, match="n must be an int >= 0"):
        minitorch.scatter_add(v, ints([0, 1]), n=-1)
    out = minitorch.scatter_add(v, ints([3, 3]), n=4)
    assert_close(out, np.array([[0.0] * 3, [0.0] * 3, [0.0] * 3, [2.0] * 3]), rtol=0)


# ------------------------------------------------------------------ moves copy
def test_a_move_never_shares_memory_with_its_source(backend: Any) -> None:
    """``src.to("numpy")`` then an SGD step on the moved tensor leaves ``src`` alone."""
    other = "numpy" if backend.name != "numpy" else "torch"
    if other not in minitorch.available_backends():
        pytest.skip(f"{backend.name}: needs a second backend ({other}) to move to")
    src = _t([1.0, 2.0], backend)
    moved = src.to(other).detach().requires_grad_()
    (moved * moved).sum().backward()
    optim.SGD([moved], lr=0.5).step()  # writes in place on NumPy when it can
    assert_close(src, np.array([1.0, 2.0]), rtol=0)
    assert_close(moved, np.array([0.0, 0.0]), rtol=0)
    back = moved.to(backend.name, device=backend.device)
    moved.data[0] = 99.0  # NumPy and torch arrays are writable: a shared buffer would show
    assert _host(back.data, backend).tolist() == [0.0, 0.0]


# ------------------------------------------------------------------ threads
def test_use_backend_is_per_thread() -> None:
    """Two threads' ``use_backend`` blocks do not take each other's dtype, and the
    default is what it was once both are done."""
    import threading

    before = minitorch.get_backend()
    barrier = threading.Barrier(2)
    seen: dict[str, list[str]] = {"float32": [], "float64": []}

    def work(dtype: str) -> None:
        with minitorch.use_backend("numpy", dtype=dtype):
            for _ in range(50):
                barrier.wait()
                seen[dtype].append(str(minitorch.tensor([1.0]).dtype))

    threads = [threading.Thread(target=work, args=(d,)) for d in seen]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"float32": ["float32"] * 50, "float64": ["float64"] * 50}
    assert minitorch.get_backend() is before


# ------------------------------------------------------------------ files
def test_a_save_killed_mid_write_leaves_the_old_file(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from minitorch.examples.tense import MLP

    with minitorch.use_backend("numpy", dtype="float64"):
        minitorch.manual_seed(0)
        model = MLP([3, 4, 2])
        path = model.save(tmp_path / "best.npz")
        good = path.read_bytes()

        def killed(f: Any, **arrays: Any) -> None:
            f.write(b"PK\x03\x04 half an archive")
            raise KeyboardInterrupt  # the run is stopped while it writes

        monkeypatch.setattr(np, "savez", killed)
        with pytest.raises(KeyboardInterrupt):
            model.save(path)
    assert path.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir()] == ["best.npz"]  # no temporary left


def test_load_state_dict_copies_the_arrays() -> None:
    from minitorch.examples.tense import MLP

    with minitorch.use_backend("numpy", dtype="float64"):
        minitorch.manual_seed(0)
        model = MLP([3, 4, 2])
        state = model.state_dict()
        model.load_state_dict(state)
        state["layer1.weight"][...] = 7.0
        assert not (model.state_dict()["layer1.weight"] == 7.0).any()


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("truncated", "not a weights archive written by MLP.save"),
        ("empty", "is empty"),
        ("garbage", "not a weights archive written by MLP.save"),
        ("other_keys", r"holds the arrays \['a'\]"),
        ("wrong_shape", "do not make a layer"),
        ("one_array", "holds one NumPy array"),
    ],
)
def test_mlp_load_names_the_file_and_the_fault(name: str, why: str, tmp_path: Any) -> None:
    from minitorch.examples.tense import MLP, WeightsFileError

    with minitorch.use_backend("numpy", dtype="float64"):
        good = MLP([3, 4, 2]).save(tmp_path / "good.npz").read_bytes()
        path = tmp_path / name
        if name == "truncated":
            path.write_bytes(good[: len(good) // 2])
        elif name == "empty":
            path.write_bytes(b"")
        elif name == "garbage":
            path.write_bytes(b"\x00 not weights " * 20)
        elif name == "other_keys":
            with path.open("wb") as f:
                np.savez(f, a=np.zeros(3))
        elif name == "wrong_shape":
            with path.open("wb") as f:
                np.savez(f, **{"layer1.weight": np.zeros(3), "layer1.bias": np.zeros(2)})
        else:
            with path.open("wb") as f:
                np.save(f, np.zeros(3))
        with pytest.raises(WeightsFileError, match=why) as info:
            MLP.load(path)
    assert str(path) in str(info.value)
    assert "allow_pickle" not in str(info.value)


# ------------------------------------------------------------------ memory
def test_indexing_a_few_rows_allocates_only_those_rows() -> None:
    """``x[[0, 5, 7]]`` on 3000x3000 resolved 9M positions (68 MiB) for three rows."""
    import tracemalloc

    with minitorch.use_backend("numpy", dtype="float32"):
        x = minitorch.zeros(3000, 3000, requires_grad=True)
        tracemalloc.start()
        try:
            y = x[[0, 5, 7]]
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert y.shape == (3, 3000)
        assert peak < 2 * 2**20, f"{peak / 2**20:.1f} MiB for three rows"
        y.sum().backward()
        assert float(x.grad.sum()) == 3 * 3000.0


@pytest.mark.parametrize(
    "key",
    [
        ([0, 2],),
        (slice(None), [1, 3]),
        (Ellipsis, [0, -1]),
        (None, [1], slice(None, None, -1)),
        ([[0, 1], [2, 3]], slice(1, 3), [0, 5]),
        (1, [2, 2]),
        (slice(None), [True, False, True, False, True]),
        (np.arange(20).reshape(4, 5) % 3 == 0,),
    ],
)
def test_flat_positions_match_a_full_grid(key: tuple[Any, ...]) -> None:
    from minitorch.ops.indexing import flat_positions

    shape = (4, 5, 6)
    want = np.arange(120).reshape(shape)[key]
    got = flat_positions(shape, key)
    assert got.shape == want.shape and np.array_equal(got, want)


def test_astype_takes_a_dtype_by_name_on_every_backend(backend: Any) -> None:
    """``x.astype("float32")`` worked on NumPy only (PyTorch's and array-api-strict's
    astype take no strings); now the name is the backend's dtype, and it differentiates."""
    x = minitorch.tensor([1.5, -2.25], requires_grad=True)
    for name in ("float32", "float64"):
        y = x.astype(name)
        assert y.dtype == backend.dtypes[name]
        assert minitorch.astype(x, np.dtype(name)).dtype == backend.dtypes[name]
    x.astype("float32").sum().backward()
    assert x.grad is not None and x.grad.dtype == backend.dtypes["float64"]
    np.testing.assert_array_equal(backend.to_numpy(x.grad), [1.0, 1.0])
