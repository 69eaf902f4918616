"""Creating tensors: from data, filled, ranges and random draws.

Every function takes ``dtype=`` and ``device=``; the backend is the current one
(:func:`minitorch.set_backend`, :func:`minitorch.use_backend`), or that of ``x`` for the
``*_like`` functions.
"""

from __future__ import annotations

import copy
import numbers
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from .backend import Backend, get_backend, on_device, shape_arg
from .tensor import Tensor, _check_float

__all__ = [
    "Generator",
    "arange",
    "default_generator",
    "full",
    "full_like",
    "linspace",
    "manual_seed",
    "ones",
    "ones_like",
    "rand",
    "randint",
    "randn",
    "tensor",
    "zeros",
    "zeros_like",
]


def tensor(
    data: Any,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    name: str | None = None,
) -> Tensor:
    """A new leaf tensor on the current backend (and ``device``), copied from ``data``.

    Python floats take the backend's default float dtype (float32 unless changed with
    :func:`set_backend`); Python ints become int64 and bools bool; NumPy arrays and NumPy
    scalars keep their dtype (float64 stays float64, int32 int32, as in PyTorch) on
    every backend, and so does a backend's own array. Off the NumPy backend (which keeps
    any NumPy array as it is), a NumPy float16 array becomes the default float dtype and
    another integer array (int8, int16, unsigned) int64.

    Examples
    --------
    >>> import minitorch, numpy as np
    >>> minitorch.tensor([[1.0, 2.0]]).dtype
    dtype('float32')
    >>> minitorch.tensor(np.zeros(2), device="cpu").dtype
    dtype('float64')
    """
    return Tensor(data, requires_grad, dtype=dtype, device=device, name=name)


def _leaf(arr: Any, be: Backend, requires_grad: bool, who: str) -> Tensor:
    t = Tensor._make(arr, be, None)
    if requires_grad:
        _check_float(t, f"{who}(requires_grad=True)")
        t.requires_grad = True
    return t


def _new(
    who: str, fill: Any, shape: Sequence[int], dtype: Any, device: Any, requires_grad: bool
) -> Tensor:
    be = on_device(get_backend(), device, who)
    arr = be.xp.full(
        tuple(int(s) for s in shape), fill, dtype=be.resolve_dtype(dtype), device=be.device
    )
    return _leaf(arr, be, requires_grad, who)


def zeros(
    *shape: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A tensor of zeros: ``zeros(2, 3)`` or ``zeros((2, 3))``."""
    return _new("zeros", 0.0, shape_arg(shape), dtype, device, requires_grad)


def ones(*shape: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones: ``ones(2, 3)`` or ``ones((2, 3))``."""
    return _new("ones", 1.0, shape_arg(shape), dtype, device, requires_grad)


def full(
    shape: Sequence[int] | int,
    fill_value: float,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor filled with ``fill_value``."""
    shp = (shape,) if isinstance(shape, int) else tuple(shape)
    return _new("full", fill_value, shp, dtype, device, requires_grad)


def _like(who: str, x: Tensor, fill: float, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    be = on_device(x._backend, x.device if device is None else device, who)
    dt = x.data.dtype if dtype is None else be.resolve_dtype(dtype)
    arr = be.xp.full(x.shape, fill, dtype=dt, device=be.device)
    return _leaf(arr, be, requires_grad, who)


def zeros_like(
    x: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """Zeros with the shape, dtype, backend and device of ``x`` (unless given)."""
    return _like("zeros_like", x, 0.0, dtype, device, requires_grad)


def ones_like(
    x: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """Ones with the shape, dtype, backend and device of ``x`` (unless given)."""
    return _like("ones_like", x, 1.0, dtype, device, requires_grad)


def full_like(
    x: Tensor,
    fill_value: float,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``fill_value`` with the shape, dtype, backend and device of ``x`` (unless given)."""
    return _like("full_like", x, fill_value, dtype, device, requires_grad)


def arange(
    start: float,
    stop: float | None = None,
    step: float = 1,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Evenly spaced values in ``[start, stop)``; int64 for integer arguments."""
    be = on_device(get_backend(), device, "arange")
    if stop is None:
        start, stop = 0, start
    ints = all(isinstance(v, int) for v in (start, stop, step))
    dt = (
        be.resolve_dtype(dtype) if dtype is not None else (be.dtypes["int64"] if ints else be.dtype)
    )
    arr = be.xp.arange(start, stop, step, dtype=dt, device=be.device)
    return _leaf(arr, be, requires_grad, "arange")


def linspace(
    start: float,
    stop: float,
    num: int,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive."""
    be = on_device(get_backend(), device, "linspace")
    arr = be.xp.linspace(start, stop, num, dtype=be.resolve_dtype(dtype), device=be.device)
    return _leaf(arr, be, requires_grad, "linspace")


# ------------------------------------------------------------------ random numbers
# Draws are made on the host with NumPy's PCG64 and then moved to the backend, so the
# same seed gives the same numbers on every backend and device.


class Generator:
    """A seeded source of random draws for ``randn``, ``rand``, ``randint`` and
    ``dropout`` (``generator=``), as ``torch.Generator``.

    Draws come from NumPy's PCG64 on the host and are then moved to the backend, so a
    seed gives the same numbers on every backend and device. ``get_state()`` is a dict
    of plain ints and strings: :func:`minitorch.save` stores it, and ``set_state``
    resumes the stream exactly.

    Examples
    --------
    >>> import minitorch
    >>> g = minitorch.Generator(7)
    >>> a = minitorch.randn(3, generator=g)
    >>> b = minitorch.randn(3, generator=minitorch.Generator(7))
    >>> bool((a == b).all())
    True
    """

    _seed: int
    _rng: np.random.Generator

    def __init__(self, seed: int = 0) -> None:
        self.manual_seed(seed)
        _generators.add(self)

    def manual_seed(self, seed: int) -> Generator:
        """Restart the stream from ``seed`` (an int >= 0); returns the generator."""
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise ValueError(f"Generator: the seed must be an int >= 0, got {seed!r}")
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)
        return self

    def initial_seed(self) -> int:
        """The seed the stream last started from."""
        return self._seed

    def get_state(self) -> dict[str, Any]:
        """The position in the stream (a dict of ints and strings; a copy)."""
        return {"seed": self._seed, "bit_generator": copy.deepcopy(self._rng.bit_generator.state)}

    def set_state(self, state: dict[str, Any]) -> Generator:
        """Go back to a position that :meth:`get_state` returned; returns the generator."""
        try:
            rng = np.random.default_rng(0)
            rng.bit_generator.state = state["bit_generator"]
            seed = int(state["seed"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(
                f"Generator.set_state: not a state from Generator.get_state() ({exc!r})"
            ) from exc
        self._seed, self._rng = seed, rng
        return self

    @property
    def numpy(self) -> np.random.Generator:
        """The NumPy generator behind the draws (host arrays, e.g. for shuffling)."""
        return self._rng

    def __repr__(self) -> str:
        return f"minitorch.Generator(seed={self._seed})"


#: every Generator alive (``minitorch.capture`` checks that a step drew from none of
#: those made before it)
_generators: weakref.WeakSet[Generator] = weakref.WeakSet()

#: the generator that draws when no ``generator=`` is given
default_generator = Generator(0)


def live_generators() -> list[Generator]:
    """The Generators alive now, the default one first."""
    return [default_generator, *(g for g in list(_generators) if g is not default_generator)]


def manual_seed(seed: int) -> Generator:
    """Seed :data:`default_generator`, which ``randn``, ``rand``, ``randint`` and
    ``dropout`` draw from without ``generator=``; returns it (as ``torch.manual_seed``)."""
    return default_generator.manual_seed(seed)


def host_rng(generator: Generator | None, who: str) -> np.random.Generator:
    """The NumPy generator behind ``generator`` (the default one for None)."""
    if generator is None:
        return default_generator._rng
    if not isinstance(generator, Generator):
        raise TypeError(
            f"{who}: generator= must be a minitorch.Generator, got {type(generator).__name__}"
        )
    return generator._rng


def _random(
    who: str, draw: Any, dtype: Any, device: Any, requires_grad: bool, generator: Any
) -> Tensor:
    be = on_device(get_backend(), device, who)
    dt = be.resolve_dtype(dtype)
    arr = be.from_numpy(draw(host_rng(generator, who)), dt, be.device)
    return _leaf(arr, be, requires_grad, who)


def randn(
    *shape: Any,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    generator: Generator | None = None,
) -> Tensor:
    """Standard normal draws: ``randn(2, 3)`` or ``randn((2, 3))``.

    Examples
    --------
    >>> import minitorch
    >>> _ = minitorch.manual_seed(0)
    >>> a = minitorch.randn(3)
    >>> _ = minitorch.manual_seed(0)
    >>> bool((minitorch.randn(3) == a).all())
    True
    """
    size = shape_arg(shape)
    return _random(
        "randn", lambda g: g.standard_normal(size), dtype, device, requires_grad, generator
    )


def rand(
    *shape: Any,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    generator: Generator | None = None,
) -> Tensor:
    """Uniform draws in ``[0, 1)``: ``rand(2, 3)`` or ``rand((2, 3))``."""
    size = shape_arg(shape)
    return _random("rand", lambda g: g.random(size), dtype, device, requires_grad, generator)


def randint(
    low: int,
    high: int,
    shape: Sequence[int],
    *,
    dtype: Any = None,
    device: Any = None,
    generator: Generator | None = None,
) -> Tensor:
    """Uniform integers in ``[low, high)`` (int64 unless ``dtype`` says otherwise)."""
    be = on_device(get_backend(), device, "randint")
    dt = be.dtypes["int64"] if dtype is None else be.resolve_dtype(dtype)
    draw = host_rng(generator, "randint").integers(low, high, size=tuple(shape))
    return Tensor._make(be.from_numpy(draw, dt, be.device), be, None)
