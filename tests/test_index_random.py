"""``x[key]`` and ``x[key] = v`` against NumPy on random keys, on every backend.

Each key mixes what NumPy's indexing takes: ints, slices (negative steps, bounds beyond
the axis), ``...``, ``None``, bool scalars, integer arrays as Tensors (int16 to int64,
negative entries, shapes that broadcast, empty ones), Python lists, and boolean masks,
on tensors with empty axes too. Values are compared with NumPy's ``x[key]``, the
gradient of ``x[key]`` with ``np.add.at``, and ``x[key] = v`` with NumPy's assignment
and its gradients (``g`` with zeros at the places set; the summed ``g[key]`` for
``v``, broadcast back). A key NumPy refuses must be refused too. The seeds are fixed:
a failure names its seed, shape and key."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch.backend import to_host

#: random keys per block; BLOCKS blocks per backend (2 in a light session: JAX compiles
#: each new shape, about 0.4 s a key)
PER_BLOCK = 30
BLOCKS = 2 if os.environ.get("MINITORCH_GRADCHECK_FAST") else 10


def _random_key(rng: np.random.Generator, shape: tuple[int, ...]) -> list[tuple[str, Any]]:
    """A key for ``shape``, as (kind, entry) pairs."""
    parts: list[tuple[str, Any]] = []
    axis, ellipsis = 0, False
    while axis < len(shape) and rng.random() < 0.85:
        n, c = shape[axis], rng.random()
        if c < 0.2 and n:
            parts.append(("int", int(rng.integers(-n, n))))
            axis += 1
        elif c < 0.45:
            bounds = [None, *range(-n - 1, n + 2)]
            start = bounds[rng.integers(len(bounds))]
            stop = bounds[rng.integers(len(bounds))]
            step = [None, 1, 2, -1, -2][rng.integers(5)]
            parts.append(("slice", slice(start, stop, step)))
            axis += 1
        elif c < 0.75 and n:
            # a run of one or two index arrays whose shapes broadcast together
            run = min(int(rng.choice([1, 1, 2])), len(shape) - axis)
            full = tuple(int(s) for s in rng.integers(0, 3, int(rng.choice([0, 1, 1, 2]))))
            for _ in range(run):
                if not shape[axis]:
                    break
                own = full[int(rng.integers(0, len(full) + 1)) :]
                own = tuple(1 if s and rng.random() < 0.2 else s for s in own)
                dtype = [np.int64, np.int32, np.int16][rng.integers(3)]
                a = rng.integers(-shape[axis], shape[axis], own).astype(dtype)
                listed = a.ndim == 1 and rng.random() < 0.15
                parts.append(("list", a.tolist()) if listed else ("array", a))
                axis += 1
        elif c < 0.82 and not ellipsis:
            ellipsis = True
            parts.append(("...", Ellipsis))
            axis += int(rng.integers(0, len(shape) - axis + 1))
        elif c < 0.86:
            parts.append(("None", None))
        elif c < 0.88:
            parts.append(("bool", bool(rng.random() < 0.5)))
        elif c < 0.95 and n:
            k = int(rng.choice([1, 1, 2])) if axis + 1 < len(shape) else 1
            parts.append(("mask", rng.random(shape[axis : axis + k]) < 0.5))
            axis += k
        else:
            break
    return parts


def _case(seed: int) -> tuple[np.ndarray, Any, Any, str]:
    """A tensor, its key for NumPy and for minitorch (arrays as Tensors), and the key
    as text for a failure."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(n) for n in rng.integers(0, 5, int(rng.integers(1, 5))))
    x = rng.standard_normal(shape)
    if rng.random() < 0.25:
        x = x.astype(np.float32)
    parts = _random_key(rng, shape)
    key = tuple(e for _, e in parts)
    device = tuple(minitorch.tensor(e) if k in ("array", "mask") else e for k, e in parts)
    if len(key) == 1 and rng.random() < 0.15:  # x[k] rather than x[(k,)]
        key, device = key[0], device[0]
    return x, key, device, f"seed {seed}: x of shape {shape}, key {parts}"


def _numpy(fn: Any) -> Any:
    """fn()'s value, or None where NumPy refuses it."""
    try:
        return fn()
    except (IndexError, ValueError, TypeError):
        return None


def _set(x: np.ndarray, key: Any, v: Any) -> np.ndarray:
    out = x.copy()
    out[key] = v
    return out


def _places(x: np.ndarray, key: Any) -> np.ndarray:
    """The flat place in x of each element of x[key]."""
    return np.arange(x.size).reshape(x.shape)[key]


def _assert_one_of_the_values_lands(
    got: np.ndarray, x: np.ndarray, key: Any, v: Any, where: str
) -> None:
    """Where x[key] names a place more than once, which of its values lands is the
    library's choice (as in PyTorch): each place set holds one of the values meant for
    it, and every other place keeps x's."""
    places = _places(x, key)
    values = np.broadcast_to(np.asarray(v, dtype=x.dtype), places.shape).reshape(-1)
    places = places.reshape(-1)
    flat = got.reshape(-1)
    landed = np.zeros(x.size, dtype=bool)
    np.logical_or.at(landed, places, flat[places] == values)
    assert landed[places].all(), where
    kept = np.ones(x.size, dtype=bool)
    kept[places] = False
    np.testing.assert_array_equal(flat[kept], x.reshape(-1)[kept], err_msg=where)


def _summed_to(g: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``g`` summed back to ``shape`` (the gradient of a value broadcast to g's shape)."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape)))) if g.ndim > len(shape) else g
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True) if axes else g


@pytest.mark.parametrize("block", range(BLOCKS))
def test_random_keys_read_and_assign_as_numpy(backend: Any, block: int) -> None:
    for seed in range(block * PER_BLOCK, (block + 1) * PER_BLOCK):
        _check(seed)


def _check(seed: int) -> None:
    x, key, device_key, where = _case(seed)
    rng = np.random.default_rng(seed + 10**6)
    want = _numpy(lambda: x[key])
    t = minitorch.tensor(x, requires_grad=True)
    if want is None:
        with pytest.raises((IndexError, ValueError, TypeError)):
            t[device_key]
        return
    y = t[device_key]
    assert y.shape == want.shape, where
    np.testing.assert_array_equal(to_host(y.data), want, err_msg=where)
    g = rng.standard_normal(want.shape)
    (y * minitorch.tensor(g)).sum().backward()
    grad = np.zeros(x.shape)
    np.add.at(grad, key, g)
    got = np.zeros(x.shape) if t.grad is None else to_host(t.grad)
    np.testing.assert_allclose(got, grad, rtol=1e-6, atol=1e-6, err_msg=where)

    # x[key] = v: a value of x[key]'s shape, one that broadcasts to it, or a number
    v: Any = rng.standard_normal(want.shape)
    if want.ndim and want.shape[0] and rng.random() < 0.3:
        v = v[:1]
    elif rng.random() < 0.2:
        v = float(np.round(rng.uniform(-3, 3), 3))
    set_want = _numpy(lambda: _set(x, key, v))
    if set_want is None:
        return
    t = minitorch.tensor(x, requires_grad=True)
    value = v if isinstance(v, float) else minitorch.tensor(v, requires_grad=True)
    z = t * 1.0
    z[device_key] = value
    places = _places(x, key).reshape(-1)
    if len(np.unique(places)) == len(places):
        np.testing.assert_array_equal(to_host(z.data), set_want.astype(x.dtype), err_msg=where)
        w = rng.standard_normal(x.shape)
        (z * minitorch.tensor(w)).sum().backward()
        gx = w.copy()
        gx[key] = 0.0
        np.testing.assert_allclose(to_host(t.grad), gx, rtol=1e-6, atol=1e-6, err_msg=where)
        if not isinstance(value, float):
            gv = _summed_to(w[key], np.shape(v))
            got = np.zeros(np.shape(v)) if value.grad is None else to_host(value.grad)
            np.testing.assert_allclose(got, gv, rtol=1e-6, atol=1e-6, err_msg=where)
    else:
        _assert_one_of_the_values_lands(to_host(z.data), x, key, v, where)


@pytest.mark.parametrize("block", range(BLOCKS // 2))
def test_random_assignments_without_gradients_as_numpy(backend: Any, block: int) -> None:
    """``x[key] = v`` where no gradient is involved (on NumPy written into x's own
    array): NumPy's result (one of the values where a place repeats), a value of x's
    dtype or of another, or a number; where NumPy refuses the key or the value, an
    error and x as it was."""
    for seed in range(block * PER_BLOCK, (block + 1) * PER_BLOCK):
        x, key, device_key, where = _case(seed)
        rng = np.random.default_rng(seed + 2 * 10**6)
        selected = _numpy(lambda: x[key])  # noqa: B023 (called here, in this iteration)
        shape = (rng.integers(1, 4),) if selected is None else selected.shape
        v: Any = rng.standard_normal(shape).astype(x.dtype if rng.random() < 0.7 else np.float64)
        if selected is not None and selected.ndim and selected.shape[0] and rng.random() < 0.3:
            v = v[:1]
        elif rng.random() < 0.2:
            v = float(np.round(rng.uniform(-3, 3), 3))
        want = _numpy(lambda: _set(x, key, v))  # noqa: B023
        t = minitorch.tensor(x)
        version = t._version
        value = v if isinstance(v, float) else minitorch.tensor(v)
        if want is None:
            with pytest.raises((IndexError, ValueError, TypeError)):
                t[device_key] = value
            np.testing.assert_array_equal(to_host(t.data), x, err_msg=where)
            continue
        t[device_key] = value
        assert t._version == version + 1, where
        places = _places(x, key).reshape(-1)
        if len(np.unique(places)) == len(places):
            np.testing.assert_array_equal(to_host(t.data), want, err_msg=where)
        else:
            _assert_one_of_the_values_lands(to_host(t.data), x, key, v, where)


def test_an_empty_list_selects_nothing_as_in_numpy(backend: Any) -> None:
    """NumPy reads ``[]`` as an empty integer index (``np.asarray([])`` is float)."""
    x = np.arange(12.0).reshape(3, 4)
    t = minitorch.tensor(x)
    for key in ([], ([], 0), (slice(None), []), ([[]],)):
        assert t[key].shape == x[key].shape
    t[:, []] = 5.0
    np.testing.assert_array_equal(to_host(t.data), x)


def test_an_index_into_an_empty_axis_after_other_axes_differentiates(backend: Any) -> None:
    """``x[..., idx]`` with the indexed axis empty (and so an empty index): an empty
    result and a zero gradient (the row positions of p blocks of 0 rows)."""
    x = minitorch.tensor(np.ones((2, 3, 0)), requires_grad=True)
    idx = minitorch.tensor(np.zeros(0, np.int64))
    y = x[..., idx]
    assert y.shape == (2, 3, 0)
    y.sum().backward()
    assert to_host(x.grad).shape == (2, 3, 0)
    z = x * 1.0
    z[..., idx] = 1.0
    assert z.shape == (2, 3, 0)


def test_a_basic_key_with_none_reads_and_assigns_on_every_backend(backend: Any) -> None:
    """``None`` in a basic key adds an axis of size 1 to ``x[key]``. array-api-strict
    takes no ``None`` in an assignment's key, so neither the gradient of ``x[key]``
    (``g`` put back at ``key``) nor ``x[key] = v`` may pass it on."""
    x = np.arange(12.0).reshape(3, 4)
    key = (None, slice(1, None), None, 2)
    t = minitorch.tensor(x, requires_grad=True)
    y = t[key]
    assert y.shape == x[key].shape == (1, 2, 1)
    y.sum().backward()
    grad = np.zeros_like(x)
    grad[1:, 2] = 1.0
    np.testing.assert_array_equal(to_host(t.grad), grad)

    v = minitorch.tensor(np.array([[[7.0], [8.0]]]), requires_grad=True)
    z = minitorch.tensor(x, requires_grad=True) * 1.0
    z[key] = v
    want = x.copy()
    want[key] = [[[7.0], [8.0]]]
    np.testing.assert_array_equal(to_host(z.data), want)
    w = np.arange(12.0).reshape(3, 4) + 1.0
    (z * minitorch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(to_host(v.grad), w[key])
