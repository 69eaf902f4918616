"""JAX: immutable arrays (``.at[].set/add``); float64 needs JAX_ENABLE_X64=1."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.special
import numpy as np

from . import Backend, contiguous, make_backend


def _scatter_add(n: int, index: Any, values: Any) -> Any:
    return jnp.zeros((n, *values.shape[1:]), dtype=values.dtype).at[index].add(values)


def _setitem(x: Any, key: Any, value: Any) -> Any:
    return x.at[key].set(value)


def _parse_device(d: Any) -> Any:
    if isinstance(d, str):
        platform, _, idx = d.partition(":")
        return jax.devices(platform)[int(idx or 0)]
    return d


def _from_numpy(a: np.ndarray, dtype: Any, device: Any) -> Any:
    return jax.device_put(jnp.asarray(contiguous(a), dtype=dtype), device)


def load() -> Backend:
    be = make_backend(
        "jax",
        jnp,
        jax,
        device=jax.devices()[0],
        mutable=False,
        erf=jax.scipy.special.erf,
        scatter_add=_scatter_add,
        to_numpy=lambda x: np.asarray(x),
        from_numpy=_from_numpy,
        setitem=_setitem,
        parse_device=_parse_device,
    )
    if not getattr(jax.config, "jax_enable_x64", False):
        # JAX silently turns float64 into float32 without x64 mode; say so instead.
        be.dtypes.pop("float64", None)
    return be
