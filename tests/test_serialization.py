"""Pickle, copy, save/load, moves and host views of tensors, on every backend."""

from __future__ import annotations

import copy
import gc
import os
import pickle
import warnings
from typing import Any

import numpy as np
import pytest
from helpers import tensor_f64 as _t

import minitorch
from minitorch.backend import device_name


def _host(a: Any, backend: Any) -> np.ndarray:
    return np.asarray(backend.to_numpy(a))


def _leaf_with_grad(backend: Any) -> minitorch.Tensor:
    x = _t([1.0, -2.0, 3.0], backend, requires_grad=True)
    (x * x).sum().backward()
    x.name = "w"
    return x


@pytest.mark.parametrize(
    "how",
    [
        lambda t: pickle.loads(pickle.dumps(t)),
        copy.copy,
        copy.deepcopy,
    ],
    ids=["pickle", "copy", "deepcopy"],
)
def test_pickle_and_copy_keep_everything_of_a_leaf(how: Any, backend: Any) -> None:
    x = _leaf_with_grad(backend)
    y = how(x)
    assert y is not x and y.is_leaf and y.requires_grad and y.name == "w"
    assert y.backend.name == backend.name and str(y.device) == str(x.device)
    assert y.dtype == x.dtype
    assert _host(y.data, backend).tolist() == [1.0, -2.0, 3.0]
    assert _host(y.grad, backend).tolist() == [2.0, -4.0, 6.0]
    y.grad = None
    assert x.grad is not None  # independent


def test_a_non_leaf_pickles_as_its_data(backend: Any) -> None:
    x = _t([1.0, 2.0], backend, requires_grad=True)
    y = pickle.loads(pickle.dumps(x * 3.0))
    assert y.is_leaf and y.requires_grad and y.grad_fn is None  # as PyTorch
    assert _host(y.data, backend).tolist() == [3.0, 6.0]


def test_unpickling_without_the_backend_names_the_extra() -> None:
    with minitorch.use_backend("numpy"):
        x = minitorch.tensor([1.0])
    data = pickle.dumps(x)
    args = list(x.__reduce__()[1])
    args[0] = "cupy"
    blob = pickle.dumps(_Reduced(args))
    if "cupy" in minitorch.available_backends():
        pytest.skip("cupy is installed here")
    with pytest.raises(ImportError, match=r"minitorch\[cupy\]"):
        pickle.loads(blob)
    assert pickle.loads(data).tolist() == [1.0]


class _Reduced:
    """Pickles as a Tensor rebuilt from ``args`` (to forge another backend's pickle)."""

    def __init__(self, args: list[Any]) -> None:
        self.args = args

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        from minitorch.tensor import _rebuild

        return _rebuild, tuple(self.args)


# ------------------------------------------------------------------ save and load
def test_save_load_round_trip_of_a_state_dict(backend: Any, tmp_path: Any) -> None:
    x = _leaf_with_grad(backend)
    i = minitorch.Tensor._make(
        backend.from_numpy(np.array([1, 2]), backend.dtypes["int64"], backend.device),
        backend,
        None,
    )
    x.name = "layer1.weight"  # as pickling keeps it (the graph pictures show it)
    state = {
        "w": x,
        "idx": i,
        "meta": {"step": 7, "lr": 0.5, "name": "adam", "none": None, "flag": True},
        "list": [1, (2.5, float("inf"))],
        "host": np.arange(3.0),
    }
    path = minitorch.save(state, tmp_path / "state.mt")
    back = minitorch.load(path)
    w = back["w"]
    assert w.backend.name == backend.name and str(w.device) == str(x.device)
    assert w.dtype == x.dtype and w.requires_grad and w.is_leaf
    assert w.name == "layer1.weight" and back["idx"].name is None
    assert _host(w.data, backend).tolist() == [1.0, -2.0, 3.0]
    assert _host(w.grad, backend).tolist() == [2.0, -4.0, 6.0]
    assert back["idx"].dtype == i.dtype and not back["idx"].requires_grad
    assert back["meta"] == {"step": 7, "lr": 0.5, "name": "adam", "none": None, "flag": True}
    assert back["list"] == [1, (2.5, float("inf"))]
    np.testing.assert_array_equal(back["host"], np.arange(3.0))


def test_load_places_tensors_on_the_requested_backend(backend: Any, tmp_path: Any) -> None:
    path = minitorch.save({"w": _t([1.0, 2.0], backend)}, tmp_path / "w.mt")
    w = minitorch.load(path, backend="numpy")["w"]
    assert isinstance(w.data, np.ndarray) and w.dtype == np.float64
    if "array_api_strict" in minitorch.available_backends():
        s = minitorch.load(path, backend="array_api_strict", device="device1")["w"]
        assert device_name(s.backend, s.device) == "device1"
        assert s.backend.name == "array_api_strict"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"", "is empty"),
        (b"\x00 not a model " * 20, "not a file minitorch.save wrote"),
        ("truncated", "not a file minitorch.save wrote|is damaged"),
        ("foreign", "no __minitorch__ header"),
        ("one_array", "holds one NumPy array"),
        ("newer", "version 99"),
    ],
    ids=["empty", "garbage", "truncated", "foreign", "one_array", "newer"],
)
def test_load_names_the_file_and_the_fault(content: Any, why: str, tmp_path: Any) -> None:
    path = tmp_path / "state.mt"
    good = minitorch.save({"w": minitorch.tensor(np.ones(1000))}, tmp_path / "good.mt")
    if content == "truncated":
        path.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    elif content == "foreign":
        with path.open("wb") as f:
            np.savez(f, weights=np.zeros(3))
    elif content == "one_array":
        with path.open("wb") as f:
            np.save(f, np.zeros(3))
    elif content == "newer":
        header = b'{"format": "minitorch.save", "version": 99, "tree": {"value": null}}'
        with path.open("wb") as f:
            np.savez(f, __minitorch__=np.frombuffer(header, dtype=np.uint8))
    else:
        path.write_bytes(content)
    # no file is left open (NumPy's np.load kept its handle of a truncated archive)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(minitorch.FileFormatError, match=why) as info:
            minitorch.load(path)
        assert str(path) in str(info.value)
        del info
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], caught


def test_save_refuses_what_it_cannot_write(tmp_path: Any) -> None:
    with pytest.raises(TypeError, match=r"obj\['f'\] is a function"):
        minitorch.save({"f": lambda: 0}, tmp_path / "x.mt")
    with pytest.raises(TypeError, match="keys must be strings"):
        minitorch.save({1: 2}, tmp_path / "x.mt")
    assert not (tmp_path / "x.mt").exists()


def test_a_save_killed_mid_write_leaves_the_old_file(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = minitorch.save({"step": 1}, tmp_path / "state.mt")
    good = path.read_bytes()

    def killed(f: Any, **arrays: Any) -> None:
        f.write(b"PK\x03\x04 half an archive")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", killed)
    with pytest.raises(KeyboardInterrupt):
        minitorch.save({"step": 2}, path)
    assert path.read_bytes() == good
    assert [p.name for p in tmp_path.iterdir()] == ["state.mt"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_saved_files_get_the_permissions_open_would_give(tmp_path: Any) -> None:
    """New files: 0o666 less the umask, as open(path, "w"); a file saved over keeps its
    own mode (a temporary file's owner-only 0o600 never reaches the target)."""
    old = os.umask(0o022)
    try:
        path = minitorch.save({"a": minitorch.zeros(2)}, tmp_path / "new.mt")
        assert path.stat().st_mode & 0o777 == 0o644
        os.chmod(path, 0o640)
        minitorch.save({"a": minitorch.ones(2)}, path)
        assert path.stat().st_mode & 0o777 == 0o640
        os.umask(0o077)
        assert minitorch.save(1, tmp_path / "private.mt").stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(old)


# ------------------------------------------------------------------ moves and copies
def test_to_changes_dtype_device_or_nothing(backend: Any) -> None:
    x = _t([1.0, 2.0], backend, requires_grad=True)
    assert x.to() is x and x.to(backend.name) is x
    y = x.to(dtype="float32")
    assert y.dtype == backend.dtypes["float32"] and y.grad_fn is not None
    y.sum().backward()
    assert x.grad is not None and x.grad.dtype == x.dtype
    with pytest.raises(ValueError, match="not a backend"):
        x.to("tpu")  # no backend here has one ("gpu" is CuPy's alias of cuda)


def test_to_cpu_is_the_cpu_device_where_the_backend_has_one() -> None:
    with minitorch.use_backend("numpy"):
        x = minitorch.tensor([1.0])
    assert x.to("cpu") is x  # NumPy: the CPU already, as PyTorch's x.to("cpu")
    if "torch" in minitorch.available_backends():
        t = x.to("torch")
        assert t.to("cpu") is t and str(t.to(device="cpu").device) == "cpu"


def test_copy_is_in_place_differentiable_and_refused_on_a_leaf(backend: Any) -> None:
    src = _t([1.0, 2.0], backend, requires_grad=True)
    a = _t(np.zeros((2, 2)), backend, requires_grad=True) * 1.0
    v = a.version
    a.copy_(src)
    assert a.version == v + 1
    assert _host(a.data, backend).tolist() == [[1.0, 2.0], [1.0, 2.0]]
    (a * 3.0).sum().backward()
    assert _host(src.grad, backend).tolist() == [6.0, 6.0]  # torch: [6, 6]
    leaf = _t([0.0, 0.0], backend, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
        leaf.copy_(src)
    with minitorch.no_grad():
        leaf.copy_([5, 6])  # Python data; cast to the leaf's dtype
    assert _host(leaf.data, backend).tolist() == [5.0, 6.0] and leaf.dtype == src.dtype
    with pytest.raises(minitorch.OpError, match="cannot broadcast"):
        a.copy_(_t([1.0, 2.0, 3.0], backend))


def test_copy_from_another_backend() -> None:
    other = "torch" if "torch" in minitorch.available_backends() else None
    if other is None:
        pytest.skip("needs the torch backend")
    with minitorch.use_backend("numpy"):
        a = minitorch.zeros(2)
        with minitorch.no_grad():
            a.copy_(minitorch.tensor([1.0, 2.0]).to(other))
    assert isinstance(a.data, np.ndarray) and a.tolist() == [1.0, 2.0]


def test_numpy_asarray_gives_the_host_data(backend: Any) -> None:
    x = _t([1.0, 2.0], backend)
    a = np.asarray(x)
    assert a.dtype == np.float64 and a.tolist() == [1.0, 2.0]
    assert np.asarray(x, dtype=np.float32).dtype == np.float32
    c = np.array(x, copy=True)
    c[0] = 9.0
    assert float(x.numpy()[0]) == 1.0
    if backend.name == "numpy":
        assert np.asarray(x) is x.data  # no copy, as for a NumPy array
    else:
        with pytest.raises(ValueError, match="copy is needed"):
            np.asarray(x, copy=False)


def test_dlpack_exchanges_without_a_copy() -> None:
    with minitorch.use_backend("numpy"):
        x = minitorch.tensor([1.0, 2.0])
    y = np.from_dlpack(x)
    assert np.shares_memory(y, x.data) and y.tolist() == [1.0, 2.0]
    if "torch" in minitorch.available_backends():
        import torch

        t = torch.from_dlpack(x)
        assert t.tolist() == [1.0, 2.0]


#: dtypes a tensor holds through astype beyond minitorch's five
NARROW = ["uint8", "int8", "int16", "uint16", "float16", "complex64", "complex128"]


@pytest.mark.parametrize("name", NARROW)
def test_every_dtype_astype_makes_saves_loads_and_pickles(
    backend: Any, name: str, tmp_path: Any
) -> None:
    """A uint8 or float16 tensor (astype makes them) was written by save but its load
    reported the file as damaged, and pickle and deepcopy raised: the file and the
    pickle named the dtype ``uint8`` (torch: ``torch.uint8``), which only minitorch's
    own five resolved."""
    x = _t([1.0, 2.0, 3.0], backend)
    if not hasattr(backend.xp, name):  # array-api-strict has no float16
        with pytest.raises(ValueError, match=f"unknown dtype '{name}'"):
            x.astype(name)
        return
    t = x.astype(name)
    assert backend.dtype_name(t.dtype) == name
    back = [
        minitorch.load(minitorch.save({"t": t}, tmp_path / "t.mt"))["t"],
        pickle.loads(pickle.dumps(t)),
        copy.deepcopy(t),
    ]
    for b in back:
        assert b.dtype == t.dtype and b.backend.name == backend.name
        np.testing.assert_array_equal(_host(b.data, backend), _host(t.data, backend))


def test_a_dtype_the_backend_lacks_is_named_on_load(backend: Any, tmp_path: Any) -> None:
    """float16 saved from NumPy: it loads onto every backend that has float16, and onto
    array-api-strict (which has none) with an error naming the dtype and what to do."""
    with minitorch.use_backend("numpy"):
        path = minitorch.save(minitorch.tensor([1.5, 2.0]).astype("float16"), tmp_path / "h.mt")
    if hasattr(backend.xp, "float16"):
        t = minitorch.load(path, backend=backend)
        assert backend.dtype_name(t.dtype) == "float16"
        np.testing.assert_array_equal(_host(t.data, backend), [1.5, 2.0])
    else:
        with pytest.raises(minitorch.FileFormatError, match="dtype float16, which the"):
            minitorch.load(path, backend=backend)
