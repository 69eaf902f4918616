"""``dtype=`` and ``device=`` on every creation function; ``minitorch.Generator``.

Random draws are checked against NumPy's PCG64 drawn directly (the documented source of
every minitorch draw), so the same seed gives the same numbers on every backend.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch.backend import device_name, to_host

CREATORS: dict[str, Callable[..., minitorch.Tensor]] = {
    "tensor": lambda **kw: minitorch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], **kw),
    "zeros": lambda **kw: minitorch.zeros(2, 3, **kw),
    "ones": lambda **kw: minitorch.ones((2, 3), **kw),
    "full": lambda **kw: minitorch.full((2, 3), 1.5, **kw),
    "zeros_like": lambda **kw: minitorch.zeros_like(minitorch.ones(2, 3), **kw),
    "ones_like": lambda **kw: minitorch.ones_like(minitorch.ones(2, 3), **kw),
    "full_like": lambda **kw: minitorch.full_like(minitorch.ones(2, 3), 2.0, **kw),
    "arange": lambda **kw: minitorch.arange(0.0, 6.0, **kw),
    "linspace": lambda **kw: minitorch.linspace(0.0, 1.0, 6, **kw),
    "randn": lambda **kw: minitorch.randn(2, 3, **kw),
    "rand": lambda **kw: minitorch.rand(2, 3, **kw),
}


def _other_device(backend: Any) -> str:
    """A device of the backend other than the session's where there is one (strict has
    two virtual devices), else the session's own, by name."""
    if backend.name == "array_api_strict":
        return "CPU_DEVICE" if device_name(backend, backend.device) == "device1" else "device1"
    return device_name(backend, backend.device)


@pytest.mark.parametrize("name", sorted(CREATORS))
def test_creation_takes_device_and_dtype(backend: Any, name: str) -> None:
    dev = _other_device(backend)
    t = CREATORS[name](device=dev, dtype="float32")
    assert t.dtype == backend.dtypes["float32"]
    assert device_name(t.backend, t.device) == dev
    assert t.backend.name == backend.name
    # an op on the tensor stays there
    u = t * 2.0
    assert device_name(u.backend, u.device) == dev
    # without device=, the current one
    d = CREATORS[name]()
    assert str(d.device) == str(backend.device) and d.dtype == backend.dtypes["float64"]


@pytest.mark.parametrize("name", sorted(CREATORS))
def test_a_device_name_without_index_is_the_backends_device(backend: Any, name: str) -> None:
    """``"cuda"`` is the current device, ``cuda:0``: a tensor made with it, or under a
    backend made with it, reports the very device the backend reports (on torch/CUDA
    this compared ``cuda:0`` with ``cuda``)."""
    bare = device_name(backend, backend.device).split(":")[0]
    t = CREATORS[name](device=bare)
    assert str(t.device) == str(backend.device)
    with minitorch.use_backend(backend.name, dtype="float64", device=bare) as be:
        assert str(be.device) == str(backend.device)
        u = CREATORS[name]()
        assert str(u.device) == str(be.device)
        assert str((u * 2.0).device) == str(be.device)


def test_randint_takes_device_dtype_and_generator(backend: Any) -> None:
    dev = _other_device(backend)
    t = minitorch.randint(
        0, 10, (3, 4), dtype="int32", device=dev, generator=minitorch.Generator(3)
    )
    assert t.dtype == backend.dtypes["int32"] and device_name(t.backend, t.device) == dev
    expected = np.random.default_rng(3).integers(0, 10, size=(3, 4))
    np.testing.assert_array_equal(t.numpy(), expected)


def test_tensor_of_a_tensor_moves_to_the_device(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0])
    dev = _other_device(backend)
    y = minitorch.tensor(x, device=dev)
    assert device_name(y.backend, y.device) == dev
    np.testing.assert_array_equal(y.numpy(), [1.0, 2.0])
    # a copy: x is unchanged by writes to y
    with minitorch.no_grad():
        y[0] = 9.0
    assert x.numpy()[0] == 1.0


@pytest.mark.parametrize("name", sorted(CREATORS))
def test_a_device_the_backend_lacks_is_a_clear_error(backend: Any, name: str) -> None:
    with pytest.raises(ValueError, match=rf"{name}: device='nonsense:7' is not a device of the "):
        CREATORS[name](device="nonsense:7")


def test_the_numpy_backend_names_what_to_do_for_cuda() -> None:
    with minitorch.use_backend("numpy"), pytest.raises(ValueError) as info:
        minitorch.zeros(2, device="cuda")
    msg = str(info.value)
    assert "zeros: device='cuda' is not a device of the numpy backend" in msg
    assert "set_backend('torch', device='cuda')" in msg and "'cpu'" in msg


# ------------------------------------------------------------------ Generator


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_generator_draws_numpys_pcg64_stream_on_every_backend(backend: Any, dtype: str) -> None:
    g = minitorch.Generator(1234)
    a = minitorch.randn(4, 5, dtype=dtype, generator=g)
    b = minitorch.rand(6, dtype=dtype, generator=g)
    ref = np.random.default_rng(1234)
    np.testing.assert_array_equal(a.numpy(), ref.standard_normal((4, 5)).astype(dtype))
    np.testing.assert_array_equal(b.numpy(), ref.random(6).astype(dtype))


def test_a_generator_leaves_the_default_stream_alone(backend: Any) -> None:
    minitorch.manual_seed(5)
    first = minitorch.randn(3).numpy()
    minitorch.manual_seed(5)
    minitorch.randn(100, generator=minitorch.Generator(9))
    np.testing.assert_array_equal(minitorch.randn(3).numpy(), first)
    np.testing.assert_array_equal(first, np.random.default_rng(5).standard_normal(3))


def test_manual_seed_returns_the_default_generator() -> None:
    g = minitorch.manual_seed(11)
    assert g is minitorch.default_generator and g.initial_seed() == 11
    assert repr(g) == "minitorch.Generator(seed=11)"


def test_generator_state_resumes_the_stream_through_save_and_load(
    backend: Any, tmp_path: Path
) -> None:
    g = minitorch.Generator(42)
    minitorch.rand(7, generator=g)
    minitorch.save({"rng": g.get_state()}, tmp_path / "rng.npz")
    expected = minitorch.randn(3, 2, generator=g).numpy()
    h = minitorch.Generator().set_state(minitorch.load(tmp_path / "rng.npz")["rng"])
    assert h.initial_seed() == 42
    np.testing.assert_array_equal(minitorch.randn(3, 2, generator=h).numpy(), expected)
    # get_state is a copy: drawing more does not change a state already taken
    state = g.get_state()
    minitorch.rand(5, generator=g)
    assert state != g.get_state()


def test_dropout_draws_its_mask_from_the_generator(backend: Any) -> None:
    x = minitorch.ones(4, 6, requires_grad=True)
    y = minitorch.dropout(x, 0.25, True, generator=minitorch.Generator(2))
    keep = np.random.default_rng(2).random((4, 6)) >= 0.25
    np.testing.assert_allclose(y.numpy(), np.where(keep, 1 / 0.75, 0.0), rtol=1e-15)
    y.sum().backward()
    assert x.grad is not None
    np.testing.assert_allclose(to_host(x.grad), np.where(keep, 1 / 0.75, 0.0), rtol=1e-15)
    # eval mode draws nothing and returns the input
    g = minitorch.Generator(2)
    assert minitorch.dropout(x, 0.25, False, generator=g) is x
    np.testing.assert_array_equal(g.numpy.random(3), np.random.default_rng(2).random(3))


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True, None])
def test_a_bad_seed_is_refused(seed: Any) -> None:
    with pytest.raises(ValueError, match="the seed must be an int >= 0"):
        minitorch.Generator(seed)


def test_a_bad_generator_or_state_is_refused() -> None:
    with pytest.raises(TypeError, match=r"randn: generator= must be a minitorch\.Generator"):
        minitorch.randn(2, generator=np.random.default_rng(0))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"dropout: generator= must be a minitorch\.Generator"):
        minitorch.dropout(minitorch.ones(2), 0.5, generator=0)
    with pytest.raises(ValueError, match=r"not a state from Generator\.get_state"):
        minitorch.Generator().set_state({"seed": 1})
