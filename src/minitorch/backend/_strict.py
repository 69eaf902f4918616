"""array-api-strict: nothing but the standard, so every fallback is exercised here."""

from __future__ import annotations

from typing import Any

import array_api_strict as xs
import numpy as np

from . import Backend, make_backend


def _to_numpy(x: Any) -> np.ndarray:
    return np.asarray(x.to_device(xs.Device("CPU_DEVICE")))


def _parse_device(d: Any) -> Any:
    """A Device, or its name; ``"cpu"`` (PyTorch's name for the host) is CPU_DEVICE."""
    if isinstance(d, xs.Device):
        return d
    return xs.Device("CPU_DEVICE" if str(d) == "cpu" else str(d))


def load() -> Backend:
    return make_backend(
        "array_api_strict",
        xs,
        xs,
        device=xs.Device("CPU_DEVICE"),
        to_numpy=_to_numpy,
        parse_device=_parse_device,
    )
