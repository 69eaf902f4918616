"""The backends minimodel is tested on, each in float64, and the shared helpers.

A test that takes the ``backend`` fixture runs once per backend: numpy,
array_api_strict (on its ``device1``), torch and jax (in x64 mode), inside
``minitorch.use_backend(name, dtype="float64")``; ``MINIMODEL_DEVICES`` (``torch=cuda``,
``cupy=cuda:0``) moves or adds backends. A backend whose library is not installed is
skipped with its reason.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from minimodel import Embedding, Linear, Module

import minitorch

if importlib.util.find_spec("jax") is not None:
    # float64 needs x64 mode, set before the JAX backend is first loaded
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax

    jax.config.update("jax_enable_x64", True)

try:  # torch is the reference; its thread pool only slows down small ops on few cores
    import torch

    torch.set_num_threads(1)
except ImportError:  # pragma: no cover
    pass

# name -> (library, device)
BACKENDS: dict[str, tuple[str, str | None]] = {
    "numpy": ("numpy", None),
    "array_api_strict": ("array_api_strict", "device1"),
    "torch": ("torch", None),
    "jax": ("jax", None),
}
# MINIMODEL_DEVICES="torch=cuda,cupy=cuda:0" puts those backends on those devices (or
# adds them): the same tests on a GPU, against torch.nn on the CPU
for _item in filter(None, os.environ.get("MINIMODEL_DEVICES", "").split(",")):
    _name, _, _device = (part.strip() for part in _item.partition("="))
    BACKENDS[_name] = (_name, _device or None)


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Iterator[minitorch.Backend]:
    """Each backend in turn, float64, as the current backend of the test."""
    name = request.param
    library, device = BACKENDS[name]
    if importlib.util.find_spec(library) is None:
        pytest.skip(f"backend {name}: {library} is not installed")
    try:
        ctx = minitorch.use_backend(name, dtype="float64", device=device)
        be = ctx.__enter__()
    except Exception as exc:  # e.g. JAX without float64
        pytest.skip(f"backend {name} cannot run float64 here: {exc}")
    try:
        yield be
    finally:
        ctx.__exit__(None, None, None)


@pytest.fixture
def numpy_float32() -> Iterator[minitorch.Backend]:
    """The library's default: NumPy, float32."""
    with minitorch.use_backend("numpy", dtype="float32") as be:
        yield be


def on_gpu() -> bool:
    """Whether the current backend computes on a GPU. There a scatter-add (an embedding's
    gradient) sums with atomic adds in no fixed order, so the same step run twice can
    differ in the last bits: what is equal to the bit on a CPU is equal to 1e-12 there."""
    be = minitorch.get_backend()
    return be.name == "cupy" or str(be.device).startswith("cuda")


def assert_same(actual: Any, desired: Any, err_msg: str = "") -> None:
    """Equal to the bit on a CPU backend; to 1e-12 (relative) on a GPU (:func:`on_gpu`)."""
    if on_gpu():
        np.testing.assert_allclose(actual, desired, rtol=1e-12, atol=1e-15, err_msg=err_msg)
    else:
        np.testing.assert_array_equal(actual, desired, err_msg=err_msg)


def host(x: Any) -> np.ndarray:
    """A minitorch Tensor, a backend array (its ``.grad``) or a torch tensor as NumPy."""
    if isinstance(x, minitorch.Tensor):
        return x.numpy()
    if type(x).__module__.startswith("torch"):
        return np.asarray(x.detach().cpu().numpy())
    return np.asarray(minitorch.Tensor(x).numpy())


class Tied(Module):
    """An embedding and an output head sharing one weight, and a sub-module held under
    two names."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = Embedding(5, 4)
        self.mid = Linear(4, 4)
        self.again = self.mid
        self.head = Linear(4, 5, bias=False)
        self.head.weight = self.emb.weight
