"""CuPy (CUDA GPU): cupyx for erf and scatter-add."""

from __future__ import annotations

from typing import Any

import array_api_compat.cupy as xp
import cupy
import cupyx
import cupyx.scipy.special
import numpy as np

from . import Backend, contiguous, make_backend


def _scatter_add(n: int, index: Any, values: Any) -> Any:
    out = cupy.zeros((n, *values.shape[1:]), dtype=values.dtype)
    cupyx.scatter_add(out, index, values)
    return out


def _from_numpy(a: np.ndarray, dtype: Any, device: Any) -> Any:
    with device:
        return cupy.asarray(contiguous(a), dtype=dtype)


def _parse_device(d: Any) -> Any:
    if isinstance(d, str):
        _, _, idx = d.partition(":")
        return cupy.cuda.Device(int(idx or 0))
    return d if isinstance(d, cupy.cuda.Device) else cupy.cuda.Device(int(d))


def load() -> Backend:
    if not cupy.cuda.is_available():
        raise ImportError("backend 'cupy' needs a CUDA GPU, and none is available here")
    return make_backend(
        "cupy",
        xp,
        cupy,
        device=cupy.cuda.Device(0),
        erf=cupyx.scipy.special.erf,
        scatter_add=_scatter_add,
        to_numpy=lambda x: cupy.asnumpy(x),
        from_numpy=_from_numpy,
        parse_device=_parse_device,
    )
