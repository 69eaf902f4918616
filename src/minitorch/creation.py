"""Creating tensors: from data, filled, ranges and random draws.

Every function takes ``dtype=`` and ``device=``; the backend is the current one
(:func:`minitorch.set_backend`, :func:`minitorch.use_backend`), or that of ``x`` for the
``*_like`` functions.
"""

from __future__ import annotations

import copy
import math
import numbers
import operator
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .backend import Backend, get_backend, on_device, shape_arg
from .backend._fallback import int_range
from .backend.promotion import fit_number
from .tensor import INT64_MAX, Tensor, _check_float, _flag, _number_of, describe

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
    scalars keep their dtype (float64 stays float64, int8 int8, float16 float16, as in
    PyTorch) on every backend that has it, and so does a backend's own array. Where the
    backend lacks it (array-api-strict has no float16; JAX without x64 mode no 64-bit
    dtypes), a float array becomes the default float dtype and an integer array int64.

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
    if _flag(requires_grad, f"{who}(requires_grad=...)"):
        _check_float(t, f"{who}(requires_grad=True)")
        t.requires_grad = True
    return t


def _size(who: str, shape: tuple[Any, ...]) -> tuple[int, ...]:
    """The sizes of a new tensor, as PyTorch reads them: ``f(2, 3)`` or ``f((2, 3))``
    (a tuple or list), each a Python int or an object with ``__index__`` (a NumPy
    integer, a 0-d integer tensor) and >= 0. Anything else (a float, a bool, a string,
    an array) is a clear error naming ``who``, never a size NumPy rounds or reads."""
    dims = shape_arg(shape)
    out = []
    for d in dims:
        n = None if isinstance(d, bool | np.bool_) else _index(d)
        if n is None:
            hint = "; for an array of sizes pass tuple(a.tolist())" if getattr(d, "ndim", 0) else ""
            raise TypeError(
                f"{who}: sizes must be ints (Python ints or NumPy integers), as {who}(2, 3) "
                f"or {who}((2, 3)); got {d!r} ({type(d).__name__}) in the size {dims!r}{hint}"
            )
        if n < 0:
            raise ValueError(f"{who}: sizes must be >= 0, got {n} in the size {dims!r}")
        if n > INT64_MAX:
            raise ValueError(
                f"{who}: sizes must be at most 2**63 - 1 (int64), got {n} in the size {dims!r}"
            )
        out.append(n)
    return tuple(out)


def _check_room(who: str, shape: tuple[int, ...], be: Backend, dt: Any) -> None:
    """Refuse a tensor larger than any array can address (its bytes beyond int64),
    before the library is asked: NumPy and torch raised their own errors ("array is too
    big", "Storage size calculation overflowed") and JAX ended the process."""
    numel = math.prod(shape)
    name = be.dtype_name(dt)
    try:
        itemsize = np.dtype(name).itemsize
    except TypeError:  # a dtype NumPy lacks (torch's bfloat16), which knows its size
        itemsize = dt.itemsize
    if numel * itemsize > INT64_MAX:
        raise ValueError(
            f"{who}: a tensor of shape {shape} and dtype {name} would take "
            f"{numel * itemsize} bytes, more than any array can address (2**63 - 1); "
            f"pick a smaller size"
        )


def _index(value: Any) -> int | None:
    """``value`` as an int through ``__index__`` (None where it has none)."""
    try:
        return operator.index(value)
    except TypeError:
        return None


def _fill_dtype(be: Backend, value: Any) -> Any:
    """``torch.full``'s dtype for a fill value: bool, int64 for an integer, the default
    float dtype for a float, the complex dtype of the default float's precision."""
    if isinstance(value, bool | np.bool_):
        return be.dtypes["bool"]
    if isinstance(value, numbers.Integral):
        return be.dtypes["int64"]
    if isinstance(value, numbers.Real):
        return be.dtype
    return be.named_dtype("complex64" if be.dtype == be.dtypes["float32"] else "complex128")


def _fill(who: str, value: Any, be: Backend, dt: Any) -> bool | int | float | complex:
    """``value`` as the Python number that ``dt`` holds (an int truncated toward zero
    from a float, as in PyTorch: :func:`~minitorch.backend.promotion.fit_number`), or a
    clear error for what is no number or does not fit."""
    if not isinstance(value, numbers.Number | np.bool_):
        raise TypeError(
            f"{who}: fill_value must be a number (bool, int, float or complex), got "
            f"{describe(value)}; for a tensor of given values use minitorch.tensor(...)"
        )
    try:
        return fit_number(be.xp, dt, value)
    except TypeError as exc:
        raise TypeError(
            f"{who}: fill_value {exc}; pass dtype='complex128' (or a real fill_value)"
        ) from None
    except ValueError as exc:  # nan or an infinity into an integer dtype
        raise ValueError(f"{who}: fill_value {exc}; pass a floating dtype") from None
    except OverflowError as exc:
        raise OverflowError(f"{who}: fill_value {exc}; pick a wider dtype") from None


def _new(
    who: str,
    fill: Any,
    shape: tuple[int, ...],
    dtype: Any,
    device: Any,
    requires_grad: bool,
    infer: bool = False,
) -> Tensor:
    be = on_device(get_backend(), device, who)
    fill = _number_of(fill)
    dt = _fill_dtype(be, fill) if infer and dtype is None else be.resolve_dtype(dtype, who)
    _check_room(who, shape, be, dt)
    arr = be.xp.full(shape, _fill(who, fill, be, dt), dtype=dt, device=be.device)
    return _leaf(arr, be, requires_grad, who)


def zeros(
    *shape: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """A tensor of zeros: ``zeros(2, 3)`` or ``zeros((2, 3))``."""
    return _new("zeros", 0, _size("zeros", shape), dtype, device, requires_grad)


def ones(*shape: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A tensor of ones: ``ones(2, 3)`` or ``ones((2, 3))``."""
    return _new("ones", 1, _size("ones", shape), dtype, device, requires_grad)


def full(
    shape: Sequence[int] | int,
    fill_value: complex,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """A tensor filled with ``fill_value`` (a number); without ``dtype``, its dtype is
    that of ``fill_value``, as in ``torch.full``: bool for a bool, int64 for an int,
    the default float dtype for a float (NumPy scalars by their kind alike).

    Examples
    --------
    >>> import minitorch
    >>> minitorch.full((2,), 7).dtype, minitorch.full(2, 0.5).dtype
    (dtype('int64'), dtype('float32'))
    """
    return _new("full", fill_value, _size("full", (shape,)), dtype, device, requires_grad, True)


def _like(who: str, x: Tensor, fill: Any, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    if not isinstance(x, Tensor):
        make = who.removesuffix("_like")
        raise TypeError(
            f"{who}: needs a Tensor, got {describe(x)}; use minitorch.{make}(shape"
            f"{', fill_value' if make == 'full' else ''}) for a new tensor of a given shape"
        )
    be = on_device(x._backend, x.device if device is None else device, who)
    dt = x.data.dtype if dtype is None else be.resolve_dtype(dtype, who)
    arr = be.xp.full(x.shape, _fill(who, _number_of(fill), be, dt), dtype=dt, device=be.device)
    return _leaf(arr, be, requires_grad, who)


def zeros_like(
    x: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """Zeros with the shape, dtype, backend and device of ``x`` (unless given)."""
    return _like("zeros_like", x, 0, dtype, device, requires_grad)


def ones_like(
    x: Tensor, *, dtype: Any = None, device: Any = None, requires_grad: bool = False
) -> Tensor:
    """Ones with the shape, dtype, backend and device of ``x`` (unless given)."""
    return _like("ones_like", x, 1, dtype, device, requires_grad)


def full_like(
    x: Tensor,
    fill_value: complex,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """``fill_value`` with the shape, dtype, backend and device of ``x`` (unless given):
    ``x``'s dtype whatever the kind of ``fill_value``, as in ``torch.full_like``."""
    return _like("full_like", x, fill_value, dtype, device, requires_grad)


def _number(who: str, name: str, value: Any, finite: bool = True) -> int | float:
    """A bound of a range as a Python int (through ``__index__``: NumPy integers count)
    or float, or a clear error naming ``who`` for anything else (and a nan or an
    infinity where ``finite``)."""
    number = _index(value)
    if number is not None:
        return number
    real = None
    if isinstance(value, numbers.Real) or (
        not isinstance(value, numbers.Complex | str | bytes) and hasattr(type(value), "__float__")
    ):
        try:
            real = float(value)
        except (TypeError, ValueError):
            real = None
    if real is None:
        raise TypeError(
            f"{who}: {name} must be a real number (an int or a float), got {value!r} "
            f"({type(value).__name__})"
        )
    if finite and not math.isfinite(real):
        raise ValueError(f"{who}: {name} must be finite, got {real}")
    return real


def _integer(who: str, name: str, value: Any) -> int:
    """An int argument (``linspace``'s ``num``, ``randint``'s bounds) through
    ``__index__`` (NumPy integers count; bools do not), or a clear error naming ``who``."""
    n = None if isinstance(value, bool | np.bool_) else _index(value)
    if n is None:
        raise TypeError(
            f"{who}: {name} must be an int (a Python int or a NumPy integer), got "
            f"{value!r} ({type(value).__name__})"
        )
    return n


def arange(
    start: float,
    stop: float | None = None,
    step: float = 1,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """Evenly spaced values in ``[start, stop)``; int64 for integer arguments (Python or
    NumPy integers), else the default float dtype. The bounds and ``step`` must be
    finite real numbers and ``step`` nonzero."""
    be = on_device(get_backend(), device, "arange")
    if stop is None:
        start, stop = 0, start
    start, stop, step = (
        _number("arange", n, v) for n, v in (("start", start), ("stop", stop), ("step", step))
    )
    if step == 0:
        raise ValueError("arange: step must not be zero, got step=0")
    ints = all(isinstance(v, int) for v in (start, stop, step))
    if dtype is not None:
        dt = be.resolve_dtype(dtype, "arange")
    else:
        dt = be.dtypes["int64"] if ints else be.dtype
    if be.xp.isdtype(dt, "integral"):
        low, high, held = int_range(be.xp, dt)
        for name, v in (("start", start), ("stop", stop), ("step", step)):
            if not low <= v <= high:
                raise ValueError(
                    f"arange: {name}={v} is beyond {held}, the dtype of this range "
                    f"(NumPy wrapped the values around); pass dtype='float64' for floats"
                )
        n = max(0, math.ceil((stop - start) / step) if not ints else -int((start - stop) // step))
    else:  # ints beyond int64 as the floats they round to, as NumPy and torch read them
        try:
            start, stop, step = (float(v) for v in (start, stop, step))
        except OverflowError:
            raise ValueError("arange: an int bound is beyond the float64 range") from None
        span = (stop - start) / step
        n = max(0, math.ceil(span)) if math.isfinite(span) else INT64_MAX + 1
    _check_room("arange", (n,), be, dt)
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
    """``num`` evenly spaced values from ``start`` to ``stop`` inclusive (``num`` an
    int >= 0)."""
    be = on_device(get_backend(), device, "linspace")
    start = _number("linspace", "start", start, finite=False)
    stop = _number("linspace", "stop", stop, finite=False)
    num = _integer("linspace", "num", num)
    if num < 0:
        raise ValueError(f"linspace: num must be >= 0, got {num}")
    dt = be.resolve_dtype(dtype, "linspace")
    _check_room("linspace", (num,), be, dt)
    arr = be.xp.linspace(start, stop, num, dtype=dt, device=be.device)
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


#: every Generator alive (``minitorch.capture`` replays the draws from those made
#: before a step)
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


def host_draw(
    generator: Generator | None,
    who: str,
    sample: Callable[[np.random.Generator], np.ndarray],
    be: Backend,
    dtype: Any,
    device: Any,
) -> Any:
    """Every random draw of minitorch (``randn``, ``rand``, ``randint``, ``dropout``'s
    mask): ``sample``, a NumPy draw from the stream of ``generator`` (the default one for
    None) with its host-side post-processing, moved to ``be`` as ``dtype`` on ``device``.

    Callers look it up in this module at each call: while :func:`minitorch.capture`
    records a step it stands in here, and a replay calls it again for each draw."""
    return be.from_numpy(sample(host_rng(generator, who)), dtype, device)


def _random(
    who: str,
    size: tuple[int, ...],
    draw: Callable[[np.random.Generator, tuple[int, ...]], np.ndarray],
    dtype: Any,
    device: Any,
    requires_grad: bool,
    generator: Any,
    complex_scale: float,
) -> Tensor:
    """``draw(g, shape)`` of real numbers as a tensor of ``dtype``: a real floating dtype
    takes them as they are; a complex one takes two per element, real and imaginary parts
    each scaled by ``complex_scale`` (as PyTorch's complex ``randn`` and ``rand``); an
    integer or bool dtype is refused (its cast would truncate the draws)."""
    be = on_device(get_backend(), device, who)
    dt = be.resolve_dtype(dtype, who)
    if be.xp.isdtype(dt, "complex floating"):

        def sample(g: np.random.Generator) -> np.ndarray:
            pairs = draw(g, (*size, 2)) * complex_scale
            return pairs.view(np.complex128).reshape(size)

    elif be.xp.isdtype(dt, "real floating"):

        def sample(g: np.random.Generator) -> np.ndarray:
            return draw(g, size)

    else:
        raise TypeError(
            f"{who}: dtype {be.dtype_name(dt)} is not a floating-point dtype, and {who} draws "
            f"real numbers (a cast would truncate them): give a real or complex floating "
            f"dtype, or draw integers with randint(low, high, shape, dtype=...)"
        )
    _check_room(who, size, be, dt)
    arr = host_draw(generator, who, sample, be, dt, be.device)
    return _leaf(arr, be, requires_grad, who)


def randn(
    *shape: Any,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    generator: Generator | None = None,
) -> Tensor:
    """Standard normal draws: ``randn(2, 3)`` or ``randn((2, 3))``. For a complex dtype,
    real and imaginary parts are each normal with variance 1/2 (as PyTorch's): ``|z|^2``
    has mean 1.

    Examples
    --------
    >>> import minitorch
    >>> _ = minitorch.manual_seed(0)
    >>> a = minitorch.randn(3)
    >>> _ = minitorch.manual_seed(0)
    >>> bool((minitorch.randn(3) == a).all())
    True
    """
    size = _size("randn", shape)
    return _random(
        "randn",
        size,
        lambda g, s: g.standard_normal(s),
        dtype,
        device,
        requires_grad,
        generator,
        math.sqrt(0.5),
    )


def rand(
    *shape: Any,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    generator: Generator | None = None,
) -> Tensor:
    """Uniform draws in ``[0, 1)``: ``rand(2, 3)`` or ``rand((2, 3))``. For a complex
    dtype, real and imaginary parts are each uniform in ``[0, 1)`` (as PyTorch's)."""
    size = _size("rand", shape)
    return _random(
        "rand", size, lambda g, s: g.random(s), dtype, device, requires_grad, generator, 1.0
    )


#: significand bits of the floating dtypes: the integers up to 2**bits are exact
_EXACT_BITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _check_randint_dtype(be: Backend, dt: Any, lo: int, hi: int) -> None:
    """Refuse a dtype ``randint``'s draws in ``[lo, hi)`` do not fit (they would wrap
    or round), or one that holds no integers (complex), as PyTorch's randint."""
    name = be.dtype_name(dt)
    if be.xp.isdtype(dt, "complex floating"):
        raise TypeError(
            f"randint: dtype {name} is complex; randint draws integers: give an integer, "
            f"real floating or bool dtype"
        )
    if be.xp.isdtype(dt, "bool"):
        low, high, what = 0, 1, "it holds 0 and 1"
    elif be.xp.isdtype(dt, "integral"):
        low, high, name = int_range(be.xp, dt)
        what = f"it holds [{low}, {high}]"
    else:
        bits = _EXACT_BITS.get(name, 53)
        low, high = -(2**bits), 2**bits
        what = f"it holds the integers of [-2**{bits}, 2**{bits}] exactly"
    if lo < low or hi - 1 > high:
        raise ValueError(
            f"randint: the draws lie in [low, high) = [{lo}, {hi}), which dtype {name} cannot "
            f"hold ({what}): give a dtype that holds them, or bounds within it"
        )


def randint(
    low: int,
    high: int,
    shape: Sequence[int] | int,
    *,
    dtype: Any = None,
    device: Any = None,
    generator: Generator | None = None,
) -> Tensor:
    """Uniform integers in ``[low, high)`` (int64 unless ``dtype`` says otherwise);
    ``low`` and ``high`` are ints with ``low < high``."""
    lo, hi = _integer("randint", "low", low), _integer("randint", "high", high)
    if lo >= hi:
        raise ValueError(
            f"randint: low must be less than high (the draws lie in [low, high)), "
            f"got low={lo}, high={hi}"
        )
    size = _size("randint", (shape,))
    be = on_device(get_backend(), device, "randint")
    dt = be.dtypes["int64"] if dtype is None else be.resolve_dtype(dtype, "randint")
    _check_randint_dtype(be, dt, lo, hi)
    _check_room("randint", size, be, dt)
    arr = host_draw(
        generator, "randint", lambda g: g.integers(lo, hi, size=size), be, dt, be.device
    )
    return Tensor._make(arr, be, None)
