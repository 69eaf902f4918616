"""CuPy (CUDA GPU): ``cupy.add.at`` for scatter-add, cupyx for erf, minitorch's own
elementwise kernels for the activations' gradients and the cross-entropy, and one
reduction for the range check of indices and class targets.

Like ``_numpy``, the hot path calls CuPy's own functions where they already behave as
the standard says, skipping array-api-compat's Python wrappers; creation functions run
inside the device's context, so ``device=`` is honoured (the wrappers ignore it and use
the current device). Matrix products of float32 run at full precision (cuBLAS
``COMPUTE_TYPE_DEFAULT``) unless the backend was made with ``tf32=True``, whatever
``CUPY_TF32`` says; CuPy's switch is set for the call and restored after.

Everything below but :func:`load` takes the library as an argument, so the tests run
the same code on NumPy (CuPy cannot run without a GPU). CuPy itself is imported only
by :func:`load`.
"""

from __future__ import annotations

import contextlib
import functools
import operator
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from . import Backend, _fallback, contiguous, make_backend, resolve_device

Scope = Callable[[Any], contextlib.AbstractContextManager[Any]]

#: cuBLAS compute types of cupy._core._routines_linalg (its compute_type_str table)
COMPUTE_TYPE_DEFAULT = 1
COMPUTE_TYPE_TF32 = 7

#: creation functions that take ``device=``; run in the device's context
CREATORS = (
    "zeros",
    "ones",
    "empty",
    "full",
    "arange",
    "eye",
    "linspace",
    "zeros_like",
    "ones_like",
    "empty_like",
    "full_like",
)


def current_device_scope(get_device: Callable[[], int]) -> Scope:
    """``scope(device)``: the device's own context where it is not CuPy's current device
    (``get_device()``, its index), else nothing to enter. CuPy allocates and launches on
    the current device: an op on a tensor of another GPU runs inside this."""
    null = contextlib.nullcontext()

    def scope(device: Any) -> contextlib.AbstractContextManager[Any]:
        return null if device.id == get_device() else device

    return scope


#: the dtypes ``cupy.add.at`` adds (with CUDA's atomics), by ``dtype.char``
ADD_AT_DTYPES = frozenset("iIlLqQefd")


def scatter_add_with(lib: Any, scope: Scope) -> Callable[[int, Any, Any], Any]:
    """Rows of ``values`` summed into ``n`` rows at ``index`` with ``lib.add.at``
    (repeats accumulate), on the device of ``values``. The dtypes ``add.at`` refuses
    give NumPy's ``add.at`` values: 8- and 16-bit integers are summed in 32 bits and
    wrap back (modulo, as NumPy's), booleans as integers, then ``!= 0`` (NumPy's add of
    booleans is ``or``), complex numbers as their real and imaginary parts."""

    def add_at(n: int, index: Any, values: Any) -> Any:
        out = lib.zeros((n, *values.shape[1:]), dtype=values.dtype)
        lib.add.at(out, index, values)
        return out

    def scatter_add(n: int, index: Any, values: Any) -> Any:
        dtype = values.dtype
        with scope(values.device):  # the kernel too: it runs on the current device
            if dtype.char in ADD_AT_DTYPES:
                return add_at(n, index, values)
            if dtype.kind == "c":
                out = lib.zeros((n, *values.shape[1:]), dtype=dtype)
                out.real[...] = add_at(n, index, lib.real(values))
                out.imag[...] = add_at(n, index, lib.imag(values))
                return out
            wide = lib.uint32 if dtype.kind == "u" else lib.int32  # bool: as 0 and 1
            summed = add_at(n, index, values.astype(wide))
            return summed != 0 if dtype.kind == "b" else summed.astype(dtype)

    return scatter_add


def put_rows_with(scope: Scope) -> Callable[[Any, Any, Any], Any]:
    """A copy of ``x`` with its rows at ``index`` set to ``values`` (a repeated index:
    CuPy's choice), made and written on the device of ``x``."""

    def put_rows(x: Any, index: Any, values: Any) -> Any:
        with scope(x.device):
            out = x.copy()
            out[index] = values
            return out

    return put_rows


def on_device(fn: Callable[..., Any], scope: Scope, like: bool = False) -> Callable[..., Any]:
    """``fn(*args, **kwargs)`` made inside ``scope(device)`` for ``device=`` (``fn``
    itself takes no ``device``); without it, ``like`` functions make their array on the
    device of their first argument (as the standard says), the others on the current
    device."""

    @functools.wraps(fn)
    def run(*args: Any, device: Any = None, **kwargs: Any) -> Any:
        if device is None:
            if not like:
                return fn(*args, **kwargs)
            device = args[0].device
        with scope(device):
            return fn(*args, **kwargs)

    return run


def compute_type_scoped(
    fn: Callable[..., Any], linalg: Any, compute_type: int
) -> Callable[..., Any]:
    """``fn(x1, x2)`` with float32 products in ``compute_type`` (CuPy's process-wide
    switch ``linalg.set_compute_type``, restored after); other dtypes as they are.
    The product's dtype is the promoted one, as CuPy's ``tensordot_core`` reads it."""

    def run(x1: Any, x2: Any, /, **kwargs: Any) -> Any:
        dtype = np.promote_types(x1.dtype, x2.dtype)
        if dtype.char not in "fF":
            return fn(x1, x2, **kwargs)
        with _COMPUTE_TYPE:  # one switch at a time: two threads' would undo each other
            prev = linalg.get_compute_type(dtype)
            if prev == compute_type:
                return fn(x1, x2, **kwargs)
            linalg.set_compute_type(dtype, compute_type)
            try:
                return fn(x1, x2, **kwargs)
            finally:
                linalg.set_compute_type(dtype, prev)

    return run


#: held while minitorch sets CuPy's process-wide compute type for one product
_COMPUTE_TYPE = threading.RLock()


def _kind(x: Any) -> str:
    dtype = getattr(x, "dtype", None)
    if dtype is not None:
        return str(dtype.kind)
    return "c" if isinstance(x, complex) else "f" if isinstance(x, float) else "i"


def _real_floats(a: Any, b: Any) -> bool:
    """Whether ``a`` and ``b`` (arrays or numbers) divide as real floating values."""
    kinds = (_kind(a), _kind(b))
    return "f" in kinds and "c" not in kinds


def _half(a: Any, b: Any) -> bool:
    """Whether the result of ``a`` and ``b`` is float16 (an array of it, and a float16
    array or a Python number)."""
    dtypes = [x.dtype for x in (a, b) if hasattr(x, "dtype")]
    return bool(dtypes) and all(d == np.float16 for d in dtypes)


def _single(x: Any) -> Any:
    return x.astype(np.float32) if hasattr(x, "dtype") else x


def _divmod_parts(lib: Any, a: Any, b: Any) -> tuple[Any, Any, Any]:
    """NumPy's ``npy_divmod`` for floats (``lib.fmod`` adjusted to Python's sign
    convention): the remainder ``mod`` and the quotient ``div`` before flooring, and
    ``fix``, where ``mod`` was moved by one ``b``."""
    mod = lib.fmod(a, b)
    div = (a - mod) / b
    fix = (mod != 0) & ((b < 0) != (mod < 0))  # nan != 0: nan goes on as nan
    return mod, div, fix


def _where_zero(lib: Any, b: Any, if_zero: Any, other: Any) -> Any:
    """``if_zero`` where ``b == 0``, else ``other`` (``b`` an array or a number: CuPy's
    ``where`` takes no Python bool)."""
    if hasattr(b, "dtype"):
        return lib.where(b == 0, if_zero, other)
    return if_zero if b == 0 else other


def numpy_floor_divide(lib: Any) -> Callable[[Any, Any], Any]:
    """``floor_divide`` with NumPy's (and the standard's) special cases: CuPy's kernel
    floors ``a / b``, so ``inf // 2`` is ``inf`` there (NumPy: nan) and ``-2 // inf``
    is ``-0`` (NumPy: -1). Integers go to ``lib.floor_divide`` itself."""

    def floor_divide(a: Any, b: Any, /) -> Any:
        if not _real_floats(a, b):
            return lib.floor_divide(a, b)
        if _half(a, b):  # NumPy divides float16 in float32 and rounds once
            return floor_divide(_single(a), _single(b)).astype(np.float16)
        _, div, fix = _divmod_parts(lib, a, b)
        div = lib.where(fix, div - 1.0, div)
        floor = lib.floor(div)
        floor = lib.where(div - floor > 0.5, floor + 1.0, floor)  # snapped to an integer
        quotient = a / b
        floor = lib.where(div != 0, floor, lib.copysign(lib.zeros_like(floor), quotient))
        return _where_zero(lib, b, quotient, floor)

    return floor_divide


def numpy_remainder(lib: Any) -> Callable[[Any, Any], Any]:
    """``remainder`` with NumPy's special cases (the sign of ``b``, ``-0.0`` and
    ``+0.0`` as NumPy gives them, nan for ``b == 0``); integers go to ``lib.remainder``."""

    def remainder(a: Any, b: Any, /) -> Any:
        if not _real_floats(a, b):
            return lib.remainder(a, b)
        if _half(a, b):  # as floor_divide: in float32, rounded once
            return remainder(_single(a), _single(b)).astype(np.float16)
        mod, _, fix = _divmod_parts(lib, a, b)
        moved = lib.where(fix, mod + b, mod)
        moved = lib.where(mod != 0, moved, lib.copysign(lib.zeros_like(moved), b))
        return _where_zero(lib, b, mod, moved)

    return remainder


def _astype_with(compat: Any, scope: Scope) -> Callable[..., Any]:
    def astype(x: Any, dtype: Any, /, *, copy: bool = True, device: Any = None) -> Any:
        if device is None:
            return x.astype(dtype, copy=copy)
        # on the device given ("cuda:1" or a Device: the wrapper takes only a Device),
        # copied there where x is elsewhere; copy=False: a copy only where one is needed
        with scope(device):
            return compat.asarray(x, dtype=dtype, copy=True if copy else None)

    return astype


def _reshape_with(compat: Any) -> Callable[..., Any]:
    def reshape(x: Any, /, shape: tuple[int, ...], *, copy: bool | None = None) -> Any:
        return x.reshape(shape) if copy is None else compat.reshape(x, shape, copy=copy)

    return reshape


def owns(x: Any) -> bool:
    """Whether ``x`` owns its memory: CuPy, like NumPy, sets ``.base`` on a view. A
    leaf's gradient that does is stored as it is, not copied (one launch per parameter
    and backward)."""
    return x.base is None


def _matrix_transpose(x: Any, /) -> Any:
    if x.ndim < 2:
        raise ValueError("x must be at least 2-dimensional for matrix_transpose")
    return x.swapaxes(-1, -2)


def native_functions(lib: Any, compat: Any, scope: Scope) -> dict[str, Callable[..., Any]]:
    """The functions that skip array-api-compat's wrapper: ``lib``'s own where it
    conforms (``transpose`` is what the wrapper of ``permute_dims`` calls; creation
    functions are the wrappers' calls without their device check, inside ``scope``),
    the methods for ``astype``/``reshape``, a cache for ``isdtype``, and ``x1 @ x2`` for
    ``matmul``: CuPy's ``matmul`` is a generalized ufunc, whose Python layer checks its
    keyword arguments before it calls the product that the operator calls directly."""
    return {
        "matmul": operator.matmul,  # CuPy's product itself; lib.matmul is a gufunc's wrapper
        "tensordot": lib.tensordot,
        "permute_dims": lib.transpose,
        "matrix_transpose": _matrix_transpose,
        "astype": _astype_with(compat, scope),
        "reshape": _reshape_with(compat),
        "isdtype": functools.cache(compat.isdtype),
        "floor_divide": numpy_floor_divide(lib),
        "remainder": numpy_remainder(lib),
        **{
            name: on_device(getattr(lib, name), scope, like=name.endswith("_like"))
            for name in CREATORS
        },
    }


def fusable(a: Any, b: Any) -> bool:
    """Whether minitorch's own kernels take ``a`` and ``b``: float32 or float64, one dtype
    (the formulas take any others, and promote)."""
    return bool(a.dtype == b.dtype and a.dtype.char in "fd")


#: the cross-entropy gradient's C: 1 taken off the softmax at each row's target
_ONE_HOT_OFF = "const ptrdiff_t r = i / c; d = e / z[r] - (i - r * c == t[r] ? (T)1 : (T)0)"


#: minitorch's own CuPy kernels for ``_fallback``'s VJP kernels, one launch each where
#: the formulas make two (the activations), three (the softmax family's, after their
#: reduction) or eight (the cross-entropy tail):
#: (inputs, outputs, the CUDA C run for element ``i``). ``T`` is the arguments' float
#: type, ``I`` the targets' integer type; a ``raw`` argument is indexed by hand, by its
#: C-order element number (it is passed C-contiguous, CuPy's fast path for raw indexing).
KERNELS: dict[str, tuple[str, str, str]] = {
    # g where relu's output is not 0 (nan included), as where(y != 0, g, 0)
    "relu_backward": ("T g, T y", "T z", "z = y != (T)0 ? g : (T)0"),
    "tanh_backward": ("T g, T y", "T z", "z = g * ((T)1 - y * y)"),
    "sigmoid_backward": ("T g, T y", "T z", "z = g * y * ((T)1 - y)"),
    # row i's loss: log(z[i]) - s[i, t[i]], for shifted logits s (n, c), z = sum(exp(s))
    "cross_entropy_losses": (
        "raw T s, raw T z, I t, int64 c",
        "T nll",
        "nll = log(z[i]) - s[i * c + t]",
    ),
    # the softmax family's gradients, given the reduction r along their axis (keepdims)
    "softmax_backward": ("T g, T y, T r", "T z", "z = y * (g - r)"),
    "log_softmax_backward": ("T g, T y, T r", "T z", "z = g - exp(y) * r"),
    # softmax minus the one-hot targets: e / z[r] - (j == t[r]) at row r, column j
    "cross_entropy_gradient": ("T e, raw T z, raw I t, int64 c", "T d", _ONE_HOT_OFF),
}


#: sum(g * y) along an axis, as a reduction of the products made on the fly (softmax's
#: gradient): (inputs, output, map, reduce, post-map, identity)
SOFTMAX_DOT = ("T g, T y", "T r", "g * y", "a + b", "r = a", "0")


def vjp_kernels(
    lib: Any, compat: Any, kernel: Any, reduction: Any
) -> dict[str, Callable[..., Any]]:
    """The VJP kernels as :data:`KERNELS` made by ``kernel`` (``cupy.ElementwiseKernel``),
    softmax's with :data:`SOFTMAX_DOT` made by ``reduction`` (``cupy.ReductionKernel``),
    for float32 and float64 arguments of one dtype; any other dtypes go through
    ``_fallback``'s formulas, which promote. Each kernel computes the formula's
    expression, in its order but for two roundings: the CUDA compiler fuses a multiply
    and an add (``1 - y * y``, softmax's running sum), and softmax's reduction adds in
    another order than CuPy's ``sum``."""
    made = {
        name: kernel(ins, outs, body, f"minitorch_{name}")
        for name, (ins, outs, body) in KERNELS.items()
    }

    def activation(name: str) -> Callable[[Any, Any], Any]:
        fused, formula = made[name], getattr(_fallback, name)

        def run(g: Any, out: Any) -> Any:
            if fusable(g, out):
                return fused(g, out)
            return formula(compat, g, out)

        run.__name__ = run.__qualname__ = name
        return run

    dot = reduction(*SOFTMAX_DOT, "minitorch_softmax_dot")

    def softmax_backward(g: Any, out: Any, axis: int | None) -> Any:
        # s * (g - sum(g * s)): one reduction and one kernel where the formula makes four
        if axis is None or not fusable(g, out):
            return _fallback.softmax_backward(compat, g, out, axis)
        return made["softmax_backward"](g, out, dot(g, out, axis=axis, keepdims=True))

    def log_softmax_backward(g: Any, out: Any, axis: int | None) -> Any:
        # g - exp(out) * sum(g): CuPy's sum and one kernel where the formula makes four
        if axis is None or not fusable(g, out):
            return _fallback.log_softmax_backward(compat, g, out, axis)
        total = lib.sum(g, axis=axis, keepdims=True)
        return made["log_softmax_backward"](g, out, total)

    losses, gradient = made["cross_entropy_losses"], made["cross_entropy_gradient"]

    def softmax_cross_entropy(x: Any, t: Any) -> tuple[Any, Any]:
        if x.dtype.char not in "fd":
            return _fallback.softmax_cross_entropy(compat, x, t)
        n, c = x.shape
        s = lib.ascontiguousarray(x - lib.max(x, axis=1, keepdims=True))  # keeps exp finite
        e = lib.exp(s)
        z = lib.sum(e, axis=1, keepdims=True)  # (n, 1): C-contiguous
        t = lib.ascontiguousarray(t)
        return lib.reshape(losses(s, z, t, c), (n, 1)), gradient(e, z, t, c)

    names = ("relu_backward", "tanh_backward", "sigmoid_backward")
    return {
        **{name: activation(name) for name in names},
        "softmax_backward": softmax_backward,
        "log_softmax_backward": log_softmax_backward,
        "softmax_cross_entropy": softmax_cross_entropy,
    }


#: ``all_in_range`` as one reduction, where the formula makes four launches: (inputs,
#: output, map, reduce, post-map, identity). In C a uint64 ``x`` would compare with a
#: negative ``low`` as unsigned: that dtype goes through the formula.
IN_RANGE = (
    "T x, int64 low, int64 high",
    "bool ok",
    "x >= low && x < high",
    "a && b",
    "ok = a",
    "true",
)


def all_in_range_with(compat: Any, reduction: Any) -> Callable[[Any, int, int], Any]:
    """``all_in_range(x, low, high)`` made by ``reduction`` (``cupy.ReductionKernel``)
    from :data:`IN_RANGE`, for the integer dtypes of at most 32 bits and int64."""
    kernel = reduction(*IN_RANGE, "minitorch_all_in_range")

    def all_in_range(x: Any, low: int, high: int) -> Any:
        if x.dtype.kind == "i" or (x.dtype.kind == "u" and x.dtype.itemsize < 8):
            return kernel(x, low, high)
        return _fallback.all_in_range(compat, x, low, high)

    return all_in_range


#: plain SGD's ``x - lr * g`` as one launch where the formula makes two: (inputs,
#: outputs, C, preamble). ``__fmul_rn``/``__fsub_rn`` (``__dmul_rn``/``__dsub_rn``) each
#: round as CuPy's multiply and subtract do, where the compiler would fuse ``x - lr * g``
#: into one fused multiply-add rounded once: bit for bit the two launches' values.
SGD_UPDATE = (
    "T x, T lr, T g",
    "T y",
    "y = minitorch_sub_mul(x, lr, g)",
    "__device__ float minitorch_sub_mul(float x, float a, float g)"
    " { return __fsub_rn(x, __fmul_rn(a, g)); }\n"
    "__device__ double minitorch_sub_mul(double x, double a, double g)"
    " { return __dsub_rn(x, __dmul_rn(a, g)); }\n",
)


def sgd_update_with(kernel: Any) -> Callable[[Any, float, Any], Any]:
    """The backend's ``sgd_update(x, lr, g)`` made by ``kernel`` (``cupy.ElementwiseKernel``)
    from :data:`SGD_UPDATE`, for float32 and float64 arrays of one dtype; the formula for
    any others (the optimizer casts its result to the parameter's dtype)."""
    ins, outs, body, preamble = SGD_UPDATE
    made = kernel(ins, outs, body, "minitorch_sgd_update", preamble=preamble)

    def sgd_update(x: Any, lr: float, g: Any) -> Any:
        if fusable(x, g):
            # lr of x's dtype, rounded to it as CuPy rounds a Python float next to x
            return made(x, x.dtype.type(lr), g)
        return x - lr * g

    return sgd_update


def products(
    functions: dict[str, Callable[..., Any]], linalg: Any, compute_type: int
) -> dict[str, Callable[..., Any]]:
    """``matmul`` and ``tensordot`` of ``functions`` in ``compute_type`` for float32."""
    return {
        name: compute_type_scoped(functions[name], linalg, compute_type)
        for name in ("matmul", "tensordot")
    }


def load() -> Backend:
    import array_api_compat.cupy as compat
    import cupy
    import cupy._core._routines_linalg as linalg
    import cupyx.scipy.special

    if not cupy.cuda.is_available():
        raise ImportError("backend 'cupy' needs a CUDA GPU, and none is available here")

    def current_index(kind: str) -> int | None:
        return int(cupy.cuda.runtime.getDevice()) if kind in ("cuda", "gpu") else None

    def parse_device(d: Any) -> Any:
        if isinstance(d, cupy.cuda.Device):
            return d
        if isinstance(d, str):
            kind, _, idx = resolve_device(d, current_index).partition(":")
            if kind not in ("cuda", "gpu") or not idx:
                raise ValueError(f"the cupy backend has CUDA devices ('cuda:0', ...), got {d!r}")
            d = int(idx)
        count = cupy.cuda.runtime.getDeviceCount()
        if not 0 <= int(d) < count:  # CuPy makes Device(7) and fails at its first use
            raise ValueError(f"this machine has CUDA devices cuda:0 to cuda:{count - 1}, got {d!r}")
        return cupy.cuda.Device(int(d))

    def from_numpy(a: np.ndarray, dtype: Any, device: Any) -> Any:
        with device:
            return cupy.asarray(contiguous(a), dtype=dtype)

    def scope(device: Any) -> contextlib.AbstractContextManager[Any]:
        dev: contextlib.AbstractContextManager[Any] = parse_device(device)
        return dev  # a cupy.cuda.Device is a context manager

    native = native_functions(cupy, compat, scope)
    tf32 = int(cupy.cuda.Device().compute_capability) >= 80  # Ampere and later
    return make_backend(
        "cupy",
        compat,
        cupy,
        device=cupy.cuda.Device(cupy.cuda.runtime.getDevice()),
        erf=cupyx.scipy.special.erf,
        scatter_add=scatter_add_with(cupy, scope),
        put_rows=put_rows_with(scope),
        all_in_range=all_in_range_with(compat, cupy.ReductionKernel),
        to_numpy=lambda x: cupy.asnumpy(x),
        from_numpy=from_numpy,
        parse_device=parse_device,
        owns=owns,
        overrides={**native, **products(native, linalg, COMPUTE_TYPE_DEFAULT)},
        tf32_overrides=products(native, linalg, COMPUTE_TYPE_TF32) if tf32 else None,
        vjp_kernels=vjp_kernels(cupy, compat, cupy.ElementwiseKernel, cupy.ReductionKernel),
        scope=current_device_scope(cupy.cuda.runtime.getDevice),
        sgd_update=sgd_update_with(cupy.ElementwiseKernel),
    )
