"""Helpers shared by the test modules: ``from helpers import ...``.

pytest's default (prepend) import mode puts this folder on ``sys.path`` when it imports
a test module from it, so this module imports as ``helpers``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import minitorch

__all__ = ["STANDARD_DTYPES", "tensor_f64", "torch_f64"]

#: the dtype names of the Array API standard (2024.12), in the standard's order (written
#: out here, not taken from minitorch.backend: the tests hold the library to this list)
STANDARD_DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "complex64",
    "complex128",
)


def tensor_f64(a: Any, backend: Any, requires_grad: bool = False) -> minitorch.Tensor:
    """A float64 leaf Tensor of ``backend`` (on its device) holding ``a``."""
    arr = backend.from_numpy(
        np.asarray(a, dtype=np.float64), backend.resolve_dtype("float64"), backend.device
    )
    t = minitorch.Tensor._make(arr, backend, None)
    return t.requires_grad_() if requires_grad else t


def torch_f64(a: Any, requires_grad: bool = False) -> Any:
    """A float64 PyTorch tensor holding ``a`` (the reference side of a comparison)."""
    import torch

    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)
