"""PyTorch (CPU or CUDA tensors): torch.special.erf and index_add for scatter-add."""

from __future__ import annotations

from typing import Any

import array_api_compat.torch as xp
import numpy as np
import torch

from . import Backend, contiguous, make_backend


def _scatter_add(n: int, index: Any, values: Any) -> Any:
    out = torch.zeros((n, *values.shape[1:]), dtype=values.dtype, device=values.device)
    return out.index_add_(0, index, values)


def _from_numpy(a: np.ndarray, dtype: Any, device: Any) -> Any:
    # torch.from_dlpack on a negatively strided NumPy array aborts the process:
    # always hand torch a contiguous copy.
    return torch.asarray(contiguous(a), dtype=dtype, device=device)


def _to_numpy(x: Any) -> np.ndarray:
    return np.asarray(x.detach().cpu().numpy())


def _setitem(x: Any, key: Any, value: Any) -> Any:
    out = x.clone()
    out[key] = value
    return out


def load() -> Backend:
    return make_backend(
        "torch",
        xp,
        torch,
        device=torch.device("cpu"),
        erf=torch.special.erf,
        scatter_add=_scatter_add,
        to_numpy=_to_numpy,
        from_numpy=_from_numpy,
        setitem=_setitem,
        parse_device=torch.device,
        owns=lambda x: not x._is_view(),
    )
