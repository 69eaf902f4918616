"""JAX: immutable arrays (``.at[].set/add``); float64 needs JAX_ENABLE_X64=1.

Matrix products pass ``precision=HIGHEST``: on a GPU, JAX's default runs float32
products in TF32 (about 1e-3 relative error), so minitorch's results would differ from
every other backend. ``tf32=True`` gives JAX's default back. Only minitorch's calls are
affected: the user's ``jax_default_matmul_precision`` is not changed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import jax.scipy.special
import numpy as np

from . import Backend, contiguous, make_backend, resolve_device


def _scatter_add(n: int, index: Any, values: Any) -> Any:
    return jnp.zeros((n, *values.shape[1:]), dtype=values.dtype).at[index].add(values)


def _put_rows(x: Any, index: Any, values: Any) -> Any:
    return x.at[index].set(values)


def _setitem(x: Any, key: Any, value: Any) -> Any:
    return x.at[key].set(value)


def _current_index(kind: str) -> int | None:
    """The index of JAX's default device among the devices of ``kind`` (0 where the
    default is of another kind; None where JAX has no such devices)."""
    try:
        devices = jax.devices(kind)
    except RuntimeError:
        return None
    default = getattr(jax.config, "jax_default_device", None)
    return devices.index(default) if default in devices else 0


def _parse_device(d: Any) -> Any:
    if isinstance(d, str):
        platform, _, idx = resolve_device(d, _current_index).partition(":")
        return jax.devices(platform)[int(idx or 0)]
    return d


def _from_numpy(a: np.ndarray, dtype: Any, device: Any) -> Any:
    return jax.device_put(jnp.asarray(contiguous(a), dtype=dtype), device)


#: minitorch's matrix products, at full float32 precision
HIGHEST: dict[str, Callable[..., Any]] = {
    name: functools.partial(getattr(jnp, name), precision=jax.lax.Precision.HIGHEST)
    for name in ("matmul", "tensordot", "vecdot")
}


def _precision_note() -> str | None:
    setting = getattr(jax.config, "jax_default_matmul_precision", None)
    if setting is None:
        return None
    return f"jax_default_matmul_precision={setting!r} does not apply to minitorch's matmuls"


def load() -> Backend:
    be = make_backend(
        "jax",
        jnp,
        jax,
        device=jax.devices()[0],
        mutable=False,
        erf=jax.scipy.special.erf,
        scatter_add=_scatter_add,
        put_rows=_put_rows,
        to_numpy=lambda x: np.asarray(x),
        from_numpy=_from_numpy,
        setitem=_setitem,
        parse_device=_parse_device,
        overrides=HIGHEST,
        tf32_overrides={name: getattr(jnp, name) for name in HIGHEST},
        precision_note=_precision_note,
    )
    if not getattr(jax.config, "jax_enable_x64", False):
        # JAX silently turns float64 into float32 without x64 mode (complex128 into
        # complex64, uint64 into uint32); say so instead. (int64 stays: minitorch's index
        # dtype, which JAX makes int32.)
        be.dtypes.pop("float64", None)
        for name in ("float64", "complex128", "uint64"):
            be.named.pop(name, None)
            be.missing[name] = (
                f"JAX has {name} only in x64 mode: set JAX_ENABLE_X64=1 before importing jax"
            )
        be.missing["int64"] = (  # (named, as minitorch's index dtype, but int32)
            "JAX has int64 only in x64 mode: set JAX_ENABLE_X64=1 before importing jax"
        )
        # the range of what JAX makes of a dtype: jnp.iinfo(jnp.int64) is int64's, and a
        # full((2,), 2**40) checked against it became int32 zeros
        iinfo: Any = jnp.iinfo
        finfo: Any = jnp.finfo
        be.xp.iinfo = lambda d: iinfo(jax.dtypes.canonicalize_dtype(d))
        be.xp.finfo = lambda d: finfo(jax.dtypes.canonicalize_dtype(d))
    return be
