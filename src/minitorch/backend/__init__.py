"""The backend layer: which array library new tensors are made of.

A :class:`Backend` bundles an Array API namespace (from array-api-compat) with the few
functions the standard lacks (``erf``, scatter-add with repeated indices, conversion to
and from NumPy, a functional ``setitem``) and the default dtype and device for new
tensors. It is resolved once per ``(name, dtype, device)`` and carried by every tensor,
so ops never call ``array_namespace`` on their hot path.

Library-specific differences live in one small module each (``_numpy``, ``_torch``,
``_strict``, ``_jax``, ``_cupy``), imported lazily by name: ``import minitorch`` imports
no torch, cupy or jax.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import importlib.util
import threading
import types
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import array_api_compat
import numpy as np

from . import _fallback

__all__ = [
    "BACKENDS",
    "DTYPE_NAMES",
    "STANDARD_DTYPES",
    "Backend",
    "array_result",
    "as_array",
    "available_backends",
    "get_backend",
    "on_device",
    "resolve_device",
    "set_backend",
    "shape_arg",
    "to_host",
    "use_backend",
]

Array = Any

#: backend name -> (module that implements it, import name of the library, extra to install)
BACKENDS: dict[str, tuple[str, str, str]] = {
    "numpy": ("_numpy", "numpy", "numpy"),
    "torch": ("_torch", "torch", "torch"),
    "array_api_strict": ("_strict", "array_api_strict", "strict"),
    "jax": ("_jax", "jax", "jax"),
    "cupy": ("_cupy", "cupy", "cupy"),
}


@dataclasses.dataclass(frozen=True, eq=False, slots=True)
class Backend:
    """One array library plus the defaults for new tensors.

    Attributes
    ----------
    name : str
        ``numpy``, ``torch``, ``array_api_strict``, ``jax`` or ``cupy``.
    xp : namespace
        The Array API namespace, extended with ``erf(x)``,
        ``scatter_add(n, index, values)``, ``put_rows(x, index, values)`` (a copy of
        ``x`` with the rows at ``index`` set; a repeated index: the library's choice of
        its rows, NumPy's the last), ``all_in_range(x, low, high)`` (a 0-d
        boolean: the check of an index's or a class target's range), ``setitem``,
        ``zeros_with`` and the VJP
        kernels (``relu_backward(g, out)``, ``tanh_backward``, ``sigmoid_backward``,
        ``softmax_backward(g, out, axis)``, ``log_softmax_backward``,
        ``softmax_cross_entropy(x, t)``).
    dtype, device
        Defaults for new floating-point tensors. A device name without an index
        (``"cuda"``) is resolved to the library's current device (``cuda:0``) when the
        backend is made, so ``.device`` of every tensor equals ``device``.
    tf32 : bool
        Whether float32 matrix products may run in TensorFloat-32 on a GPU (torch, JAX,
        CuPy). Off by default: minitorch's matmuls then run at full float32 precision
        whatever the library's global setting, so every backend gives the same numbers.
        On the CPU it changes nothing.
    """

    name: str
    xp: Any
    library: types.ModuleType
    dtype: Any
    device: Any
    mutable: bool
    to_numpy: Callable[[Array], np.ndarray]
    from_numpy: Callable[[np.ndarray, Any, Any], Array]
    setitem: Callable[[Array, Any, Array], Array]
    parse_device: Callable[[Any], Any]
    dtypes: dict[str, Any]
    #: every dtype ``dtype=`` and ``astype`` take, by name (:data:`DTYPE_NAMES` that
    #: the library has): the standard's thirteen, and float16 and bfloat16 where it
    #: has them
    named: dict[str, Any]
    #: whether an array may be stored as a leaf's ``.grad`` as it is: it owns its memory
    #: (not a view; NumPy's ``.base``), or nobody can write into it (JAX); else a copy
    owns: Callable[[Array], bool]
    #: the floating-point dtypes as arrays report them (only these carry gradients)
    floating: tuple[Any, ...] = ()
    tf32: bool = False
    #: the namespace whose matrix products may use TF32 (None: ``xp``, no TF32 here)
    tf32_xp: Any = None
    #: a line on the library's own global TF32 setting, for describe() (None: nothing)
    precision_note: Callable[[], str | None] = lambda: None
    #: the library's multi-tensor arithmetic (torch's ``_foreach_*``): ``add``, ``sub``,
    #: ``mul``, ``div`` and ``maximum`` of two lists of arrays, or of a list and a number;
    #: ``sqrt`` of a list; and ``takes(x, g)``, whether it pays for (and can update) a
    #: parameter's array and its gradient (new arrays, never in place). Each result holds
    #: the values of the same operation on one array alone (but for the last bit of a
    #: division by a number on CUDA, where torch's list kernel takes the reciprocal in
    #: double: as between torch.optim's foreach and single-tensor Adam), and a list
    #: operation is one launch on a GPU, whatever the length of the list: the optimizers
    #: update the parameters it takes with it (as torch.optim's foreach path). None: the
    #: library has none, and the optimizers go one array at a time.
    foreach: Any = None
    #: ``sgd_update(x, lr, g)``: plain SGD's ``x - lr * g`` for a parameter's array
    #: ``x``, a Python number ``lr`` and the gradient ``g``, a new array, in one launch
    #: where the formula makes two, each operation rounded as the formula's (no fused
    #: multiply-add); other dtypes through the formula. None (every library but CuPy,
    #: where a launch costs the host more than a small parameter's arithmetic; torch's
    #: GPU tensors take ``foreach``): the optimizers write the formula.
    sgd_update: Callable[[Array, float, Array], Array] | None = None
    #: ``axpy_(y, a, x)``: ``y += a * x`` in ``y``'s own memory in one pass (BLAS axpy),
    #: for plain SGD's update of a parameter's array that nothing else sees; True where
    #: done, False where the arrays do not suit it (small, another dtype, not
    #: contiguous, overlapping), and the optimizer writes the formula. One rounding
    #: (a fused multiply-add where the CPU has one, as torch's ``add_(g, alpha=-lr)``)
    #: where the formula ``y - a * x`` rounds twice. None: the library has none.
    axpy_: Callable[[Array, float, Array], bool] | None = None
    #: ``setitem_(x, key, value)``: ``x[key] = value`` in ``x``'s own memory, by NumPy's
    #: rules, for ``Tensor.__setitem__`` on an array that nothing else sees; the key's
    #: entries are ints, slices, ``...``, None and integer or boolean arrays, the value
    #: a Python number or an array. True where done; False, writing nothing, where the
    #: array, key or value do not suit it (another dtype, a view, a bad index), and
    #: ``__setitem__`` makes a new array as on every other backend. None: never in place.
    setitem_: Callable[[Array, Any, Any], bool] | None = None
    #: ``scope(device)``, a context in which the library works on ``device``: None where
    #: an array's own device decides (every library but CuPy). CuPy allocates and
    #: launches on its *current* device, so the engine runs an op, a backward pass and
    #: an optimizer's update of a tensor on another GPU inside its device's scope.
    scope: Callable[[Any], contextlib.AbstractContextManager[Any]] | None = None
    #: why a dtype of :data:`DTYPE_NAMES` is missing from ``named``, by name, for the
    #: error (JAX without x64 mode); a name not here: the library lacks it
    missing: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def version(self) -> str:
        return str(getattr(self.library, "__version__", "unknown"))

    def on_device(self) -> contextlib.AbstractContextManager[Any]:
        """A context for work on this backend's device: its ``scope`` where the library
        works on its current device (CuPy), else nothing to enter."""
        return _NO_SCOPE if self.scope is None else self.scope(self.device)

    def resolve_dtype(self, dtype: Any, who: str = "") -> Any:
        """A dtype -> this library's dtype, by one rule: every dtype of
        :data:`DTYPE_NAMES` that the library has (``named``), given by its name
        (``"complex64"``), as a NumPy dtype or scalar type (``np.int8``), or as any
        library's dtype object (``torch.uint8`` on NumPy, ``jnp.float16`` on torch).
        Python's ``float``, ``int``, ``bool`` and ``complex`` mean float64, int64, bool and
        complex128 on every backend (as ``torch.zeros(2, dtype=float)`` is float64);
        None is the default float dtype. A name the library lacks, or one beyond the
        list (``"float128"``, ``torch.complex32``), is a ValueError listing what the
        backend takes; what is no dtype at all (a number, an array) a TypeError. Both
        begin with ``who`` (the function that took the dtype) where given."""
        if not who:
            return self._resolve_dtype(dtype)
        try:
            return self._resolve_dtype(dtype)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{who}: {exc}") from None

    def _resolve_dtype(self, dtype: Any) -> Any:
        if dtype is None:
            return self.dtype
        if isinstance(dtype, str):
            return self.named_dtype(dtype)
        if isinstance(dtype, type) and dtype in _PYTHON_DTYPES:
            return self.named_dtype(_PYTHON_DTYPES[dtype])
        numpy_type = isinstance(dtype, type) and issubclass(dtype, np.generic)
        if numpy_type or isinstance(dtype, np.dtype):
            return self.named_dtype(np.dtype(dtype).name)
        owner = type(dtype).__module__.split(".")[0]
        name = _spelled(dtype)  # torch.float32, jnp.float32: "float32"
        own = owner == self.library.__name__.split(".")[0]
        if (
            owner == "builtins"
            or not name.isidentifier()
            or (own and getattr(self.xp, name, None) != dtype)
        ):
            # a number, an array, a tensor: no dtype (an array was the library's error
            # later, and a tensor on NumPy was read as the dtype of its elements)
            raise self.not_a_dtype(dtype)
        # the library's own dtype, or another library's (torch.float32 on NumPy,
        # jnp.float32 on torch): the same dtype by its name, as a NumPy dtype is taken
        return self.named_dtype(name)

    def not_a_dtype(self, value: Any) -> TypeError:
        """The error for ``value`` given where a dtype belongs: what is accepted, and
        what came (for the caller to raise)."""
        return TypeError(
            f"dtype must be a dtype or its name (e.g. 'float32', float, {self.name} dtype "
            f"objects), got {_short_repr(value)} ({type(value).__name__})"
        )

    def dtype_name(self, dtype: Any) -> str:
        """``"float32"``, ``"uint8"``: a dtype's name, the same on every backend (torch's
        ``torch.uint8`` is ``"uint8"``), also for a scalar type that stands for a dtype
        (NumPy's ``np.complex64``, JAX's ``jnp.complex128``: ``"complex128"``) and for
        Python's ``float``, ``int``, ``bool`` and ``complex`` as :meth:`resolve_dtype`
        reads them (``"float64"``, ``"int64"``, ``"bool"``, ``"complex128"``)."""
        if isinstance(dtype, np.dtype):  # (strict's dtypes warn when compared to one)
            return dtype.name
        if isinstance(dtype, type):
            if dtype in _PYTHON_DTYPES:
                return _PYTHON_DTYPES[dtype]
            return _spelled(dtype)
        for k, v in self.dtypes.items():
            if v == dtype:
                return k
        return _spelled(dtype)

    def named_dtype(self, name: str) -> Any:
        """This library's dtype called ``name`` (as :meth:`dtype_name` gives it): one of
        ``named`` (what ``dtype=`` and ``astype`` take, and files and pickles hold), else
        the ValueError that lists them."""
        try:
            return self.named[name]
        except KeyError:
            pass
        if name in DTYPE_NAMES:
            why = self.missing.get(name) or f"{self.library.__name__} has no {name}"
        else:
            why = (
                "minitorch takes the dtypes of the Array API standard, and float16 and "
                "bfloat16 where the library has them"
            )
        raise ValueError(
            f"unknown dtype {name!r} for backend {self.name!r} ({why}); choose one of "
            f"{', '.join(self.named)} (by name, as a NumPy dtype or any library's dtype)"
        )

    def describe(self) -> str:
        """``torch 2.13.0 (device=cuda:0, dtype=float32, tf32=off)``: TF32 is shown where
        it is on, and for devices other than the CPU (where it could matter)."""
        extra = ""
        if self.tf32 or device_name(self, self.device).split(":")[0] not in _HOST_DEVICES:
            extra = f", tf32={'on' if self.tf32 else 'off'}"
            note = self.precision_note()
            if note:
                extra += f"; {note}"
        return (
            f"{self.name} {self.version} (device={device_name(self, self.device)}, "
            f"dtype={self.dtype_name(self.dtype)}{extra})"
        )

    def __repr__(self) -> str:
        return f"Backend({self.describe()})"


#: Python's number types as dtypes (NumPy's reading of them: ``np.dtype(float)``)
_PYTHON_DTYPES: dict[type, str] = {
    float: "float64",
    int: "int64",
    bool: "bool",
    complex: "complex128",
}

#: the dtypes of the Array API standard (2024.12), in its order
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
#: every dtype minitorch takes where the library has it: the standard's, and the two
#: half-precision floats beyond it (NumPy, torch, JAX and CuPy have float16; torch and
#: JAX bfloat16), which ``astype`` made before and files and pickles hold; nothing else
#: (NumPy's float128, torch's complex32 and float8 types, aliases such as "double")
DTYPE_NAMES = (*STANDARD_DTYPES, "float16", "bfloat16")


def _spelled(dtype: Any) -> str:
    """The name a dtype spells for itself: a scalar type's NumPy name (``np.complex64``,
    ``jnp.complex128``, classes whose str is ``"<class 'jax.numpy.complex128'>"``), else
    the tail of its str (``torch.uint8``, ``array_api_strict.uint8``: ``"uint8"``)."""
    if isinstance(dtype, type):
        scalar = dtype if issubclass(dtype, np.generic) else getattr(dtype, "dtype", None)
        with contextlib.suppress(TypeError):
            if scalar is not None:
                return np.dtype(scalar).name
    return str(dtype).rsplit(".", 1)[-1]


def _short_repr(value: Any) -> str:
    """``repr(value)``, cut to one short line (an array's repr can run to pages)."""
    text = " ".join(repr(value).split())
    return text if len(text) <= 80 else text[:77] + "..."


#: device kinds that are host memory (no TF32, no index in the name arrays report)
_HOST_DEVICES = ("cpu", "meta", "CPU_DEVICE", "device1", "device2")
#: device kinds whose arrays report no index (torch's ``cpu`` and ``meta``)
_INDEXLESS = ("cpu", "meta")


def resolve_device(name: str, current_index: Callable[[str], int | None]) -> str:
    """A device name as the library's arrays report it: the index made explicit.

    ``"cuda"`` -> ``"cuda:<current>"`` where ``current_index("cuda")`` is the library's
    current device index (None where it cannot tell, e.g. a CPU build: the name stays
    as given, and the library refuses it when it is used); ``"cuda:1"`` stays;
    ``"cpu"`` and ``"cpu:0"`` -> ``"cpu"`` (torch's CPU tensors report no index). Names
    without ``:`` that are not accelerators (array-api-strict's ``"device1"``) pass
    through ``current_index``, which answers None for them.

    >>> resolve_device("cuda", lambda kind: 1), resolve_device("cpu:0", lambda kind: None)
    ('cuda:1', 'cpu')
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a device name must be a non-empty string, got {name!r}")
    kind, sep, index = name.strip().partition(":")
    if not kind:
        raise ValueError(f"device {name!r}: the kind comes before ':' (e.g. 'cuda:0')")
    if sep:
        if not index.isdigit():
            raise ValueError(
                f"device {name!r}: the index after ':' must be an integer >= 0 "
                f"(write e.g. '{kind}:0', or '{kind}' for the current device)"
            )
        if kind in _INDEXLESS and int(index) == 0:
            return kind
        return f"{kind}:{int(index)}"
    if kind in _INDEXLESS:
        return kind
    current = current_index(kind)
    return kind if current is None else f"{kind}:{int(current)}"


def contiguous(a: np.ndarray) -> np.ndarray:
    """A C-contiguous NumPy array (a copy only if needed; 0-d arrays stay 0-d).

    torch.from_dlpack on a negatively strided NumPy array aborts the process, so every
    array handed to another library goes through here first.
    """
    a = np.asarray(a)
    return a if a.flags.c_contiguous else np.array(a, order="C")


_lock = threading.Lock()
_cache: dict[tuple[str, str, str, bool], Backend] = {}
_base: dict[str, Backend] = {}
# set_backend: the process-wide default; use_backend: this thread's override
_default: list[Backend | None] = [None]


class _ThreadBackend(threading.local):
    backend: Backend | None = None


_thread = _ThreadBackend()


def _namespace(xp_module: Any, **extras: Any) -> types.SimpleNamespace:
    """Copy a namespace's public names into a plain object (fast attribute access)."""
    ns = types.SimpleNamespace(
        **{k: getattr(xp_module, k) for k in dir(xp_module) if not k.startswith("_")}
    )
    for k, v in extras.items():
        setattr(ns, k, v)
    return ns


def make_backend(
    name: str,
    xp_module: Any,
    library: types.ModuleType,
    *,
    device: Any,
    mutable: bool = True,
    erf: Callable[[Array], Array] | None = None,
    scatter_add: Callable[[int, Array, Array], Array] | None = None,
    put_rows: Callable[[Array, Array, Any], Array] | None = None,
    all_in_range: Callable[[Array, int, int], Array] | None = None,
    to_numpy: Callable[[Array], np.ndarray] = _fallback.to_numpy,
    from_numpy: Callable[[np.ndarray, Any, Any], Array] | None = None,
    setitem: Callable[[Array, Any, Array], Array] | None = None,
    parse_device: Callable[[Any], Any] | None = None,
    owns: Callable[[Array], bool] | None = None,
    overrides: dict[str, Callable[..., Any]] | None = None,
    tf32_overrides: dict[str, Callable[..., Any]] | None = None,
    precision_note: Callable[[], str | None] | None = None,
    foreach: Any = None,
    vjp_kernels: dict[str, Callable[..., Array]] | None = None,
    scope: Callable[[Any], contextlib.AbstractContextManager[Any]] | None = None,
    sgd_update: Callable[[Array, float, Array], Array] | None = None,
    axpy_: Callable[[Array, float, Array], bool] | None = None,
    setitem_: Callable[[Array, Any, Any], bool] | None = None,
) -> Backend:
    """Build a Backend from a namespace; anything not given uses the pure-standard fallback.

    ``overrides`` replaces namespace functions with faster equivalents of the library's
    own (same signature and results as the standard function); the matrix products
    among them run at full float32 precision. ``tf32_overrides`` are the same functions
    allowed to use TensorFloat-32 (the namespace of ``tf32=True``); None: the library
    has no TF32 (a CPU library), and ``tf32=True`` is recorded and changes nothing.
    ``vjp_kernels`` are the library's fused kernels for some of the VJP kernels of
    ``_fallback.VJP_KERNELS`` (the same values, up to rounding, in one launch).
    ``owns`` says whether an array owns its memory; without it, arrays of an immutable
    library all may be kept as they are, and those of a mutable one are copied.
    """
    xp: Any = None  # filled below; the closures look it up at call time

    def _erf(x: Array) -> Array:
        return _fallback.erf(xp, x)

    def _scatter_add(n: int, index: Array, values: Array) -> Array:
        return _fallback.scatter_add(xp, n, index, values)

    def _put_rows(x: Array, index: Array, values: Any) -> Array:
        return _fallback.put_rows(xp, x, index, values)

    def _all_in_range(x: Array, low: int, high: int) -> Array:
        return _fallback.all_in_range(xp, x, low, high)

    def _from_numpy(a: np.ndarray, dtype: Any, device: Any) -> Array:
        return xp.asarray(contiguous(a), dtype=dtype, device=device)

    def _setitem(x: Array, key: Any, value: Array) -> Array:
        return _fallback.setitem(xp, x, key, value)

    setitem = setitem or _setitem

    def _zeros_with(shape: tuple[int, ...], key: Any, value: Array) -> Array:
        out = xp.zeros(shape, dtype=value.dtype, device=value.device)
        if not mutable:
            return setitem(out, key, value)
        out[key] = value  # a new array: writing into it changes nothing of the caller's
        return out

    xp = _namespace(
        xp_module,
        erf=erf or _erf,
        scatter_add=scatter_add or _scatter_add,
        put_rows=put_rows or _put_rows,
        all_in_range=all_in_range or _all_in_range,
        setitem=setitem,
        zeros_with=_zeros_with,
        linalg=_fallback.linalg_namespace(xp_module),
        **(overrides or {}),
    )
    for k, formula in _fallback.VJP_KERNELS.items():  # the library's kernel, or the formula
        fallback = functools.update_wrapper(functools.partial(formula, xp), formula)
        setattr(xp, k, (vjp_kernels or {}).get(k) or fallback)
    named = {k: getattr(xp, k) for k in DTYPE_NAMES if hasattr(xp, k)}
    minitorch_five = ("float32", "float64", "int32", "int64", "bool")
    dtypes: dict[str, Any] = {k: named[k] for k in minitorch_five if k in named}
    tf32_xp = xp
    if tf32_overrides:
        tf32_xp = types.SimpleNamespace(**{**vars(xp), **tf32_overrides})
    return Backend(
        name=name,
        xp=xp,
        library=library,
        dtype=dtypes["float32"],
        device=device,
        mutable=mutable,
        to_numpy=to_numpy,
        from_numpy=from_numpy or _from_numpy,
        setitem=setitem,
        parse_device=parse_device or (lambda d: d),
        dtypes=dtypes,
        named=named,
        owns=owns or (_never if mutable else _always),
        floating=_floating(xp, dtypes),
        tf32_xp=tf32_xp,
        precision_note=precision_note or (lambda: None),
        foreach=foreach,
        sgd_update=sgd_update,
        axpy_=axpy_,
        setitem_=setitem_,
        scope=scope,
    )


#: what :meth:`Backend.on_device` enters where the library needs no device made current
_NO_SCOPE = contextlib.nullcontext()


def _never(x: Array) -> bool:
    return False


def _always(x: Array) -> bool:
    return True


def _floating(xp: Any, dtypes: dict[str, Any]) -> tuple[Any, ...]:
    """The float dtypes as arrays report them (JAX without x64 warns that float64 is
    float32: it is, and the tuple says so)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(
            xp.empty((0,), dtype=dtypes[k]).dtype for k in ("float32", "float64") if k in dtypes
        )


def _load(name: str) -> Backend:
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; valid names are {', '.join(sorted(BACKENDS))}")
    with _lock:
        if name in _base:
            return _base[name]
        modname, libname, extra = BACKENDS[name]
        if importlib.util.find_spec(libname) is None:
            raise ImportError(
                f"backend {name!r} needs the {libname!r} package, which is not installed; "
                f"install it with: pip install 'minitorch[{extra}]'"
            )
        module = importlib.import_module(f"{__name__}.{modname}")
        be: Backend = module.load()
        _base[name] = be
        return be


def resolve(name: str, dtype: Any = None, device: Any = None, tf32: bool = False) -> Backend:
    """The Backend for ``name`` with the given defaults (cached)."""
    base = _load(name)
    dt = base.resolve_dtype(dtype)
    if dt not in (base.dtypes["float32"], base.dtypes.get("float64")):
        raise ValueError(
            f"the default dtype must be float32 or float64, got {dtype!r} for backend {name!r}"
        )
    if not isinstance(tf32, bool):
        raise TypeError(f"tf32= must be True or False, got {tf32!r} for backend {name!r}")
    dev = base.device if device is None else base.parse_device(device)
    key = (name, base.dtype_name(dt), str(dev), tf32)
    if key not in _cache:
        xp = base.tf32_xp if tf32 and base.tf32_xp is not None else base.xp
        _cache[key] = dataclasses.replace(base, dtype=dt, device=dev, tf32=tf32, xp=xp)
    return _cache[key]


def on_device(be: Backend, device: Any, who: str) -> Backend:
    """``be`` with ``device`` as the device of new tensors (``be`` itself for None).

    ``who`` names the call in the error for a device that ``be``'s library does not
    have (``zeros(device='cuda')`` on the NumPy backend)."""
    if device is None:
        return be
    try:
        return resolve(be.name, be.dtype, device, be.tf32)
    except Exception as exc:
        raise ValueError(
            f"{who}: device={device!r} is not a device of the {be.name} backend ({exc}); "
            f"pick a backend that has it, e.g. minitorch.set_backend('torch', device='cuda'), "
            f"or leave device= out for {device_name(be, be.device)!r}"
        ) from exc


def set_backend(name: str, *, dtype: Any = None, device: Any = None, tf32: bool = False) -> Backend:
    """Choose the array library, default float dtype and device of *new* tensors.

    This is the process-wide default, seen by every thread that is not inside a
    :func:`use_backend` block (those are per thread). Existing tensors keep the backend
    of their array.

    Parameters
    ----------
    name : str
        ``numpy`` (default), ``torch``, ``array_api_strict``, ``jax`` or ``cupy``.
    dtype : str or dtype, optional
        ``"float32"`` (default) or ``"float64"``, or the library's dtype object.
    device : str or device, optional
        The library's device object or its name (``"cuda:0"``, ``"device1"``); a name
        without an index (``"cuda"``) means the library's current device, resolved now.
    tf32 : bool, optional
        Let float32 matrix products run in TensorFloat-32 on a GPU (faster, about 1e-3
        relative error). Off by default: full float32 precision on every backend,
        whatever the library's own global flag says (see docs/gpu.md).

    Examples
    --------
    >>> import minitorch
    >>> be = minitorch.set_backend("numpy", dtype="float64")
    >>> minitorch.tensor([1.0, 2.0]).dtype
    dtype('float64')
    >>> be = minitorch.set_backend("numpy")
    """
    be = resolve(name, dtype, device, tf32)
    _default[0] = be
    _thread.backend = None  # this thread follows the new default too
    return be


def get_backend() -> Backend:
    """The Backend new tensors are made with in this thread: the innermost
    :func:`use_backend` block's, else the default (NumPy, float32 until changed)."""
    be = _thread.backend or _default[0]
    if be is None:
        be = _default[0] = resolve("numpy")
    return be


@contextlib.contextmanager
def use_backend(
    name: str, *, dtype: Any = None, device: Any = None, tf32: bool = False
) -> Iterator[Backend]:
    """Context manager: new tensors of *this thread* use the given backend inside the
    block; the previous choice comes back after it. Other threads are not affected.
    The arguments are those of :func:`set_backend`."""
    prev = _thread.backend
    be = resolve(name, dtype, device, tf32)
    _thread.backend = be
    try:
        yield be
    finally:
        _thread.backend = prev


# top-level module of an array's type -> the backend that knows how to read it
_ARRAY_MODULES = {
    "torch": "torch",
    "jax": "jax",
    "jaxlib": "jax",
    "cupy": "cupy",
    "array_api_strict": "array_api_strict",
}


def to_host(x: Any) -> np.ndarray:
    """Any backend's array as a host NumPy array (through that backend's ``to_numpy``,
    which knows its devices); anything else through ``np.asarray``."""
    name = _ARRAY_MODULES.get(type(x).__module__.split(".")[0])
    if name is None:
        return np.asarray(x)
    return np.asarray(_load(name).to_numpy(x))


def device_name(be: Backend, device: Any) -> str:
    """``device`` as a string that ``be.parse_device`` reads back (for files and pickles):
    ``"cpu"``, ``"cuda:0"``, ``"device1"``."""
    if be.name == "array_api_strict":
        text = str(device)
        return text.split("'")[1] if "'" in text else text
    platform, index = getattr(device, "platform", None), getattr(device, "id", None)
    if be.name == "jax" and platform is not None:
        return f"{platform}:{index}"
    if be.name == "cupy" and index is not None:
        return f"cuda:{index}"
    return str(device)


def available_backends() -> list[str]:
    """Names of the backends whose library is installed (nothing is imported)."""
    return [n for n, (_, lib, _) in BACKENDS.items() if importlib.util.find_spec(lib) is not None]


def is_array_of(data: Any, be: Backend) -> bool:
    """Whether ``data`` is an array of ``be``'s library (any dtype and device), or a
    stand-in for one (a class with ``_minitorch_stand_in = True`` and the array as
    ``value``: the traced arrays of ``minitorch.capture``)."""
    if be.name == "numpy":
        if isinstance(data, np.ndarray):
            return True
    else:
        check = _ARRAY_CHECKS.get(be.name)
        if check is not None:
            if check(data):
                return True
        elif type(data).__module__.split(".")[0] == be.library.__name__.split(".")[0]:
            return hasattr(data, "shape")
    return getattr(type(data), "_minitorch_stand_in", False) and is_array_of(data.value, be)


def array_result(x: Any, be: Backend) -> Array:
    """``x``, a result of arithmetic on ``be``'s arrays, as an array of ``be``.

    NumPy's operators and functions on 0-d arrays return NumPy scalars (``np.float64``),
    not arrays: immutable (``data -= d`` only rebinds a name) and not an ndarray
    (:func:`is_array_of` refuses them). Where a result becomes state that must stay an
    array (a parameter's ``.data``, a ``.grad``), such a scalar is made a 0-d array
    through ``be.xp.asarray`` (inside ``minitorch.capture`` that call is recorded and
    replayed); any other value is returned as it is, without a copy (a NumPy scalar
    given to another backend too: it is no result of that backend's arithmetic)."""
    if be.name != "numpy":
        return x
    real = x.value if getattr(type(x), "_minitorch_stand_in", False) else x
    if isinstance(real, np.generic):
        return be.xp.asarray(x)
    return x


# arrays whose class lives outside the library's package (jax's are jaxlib's)
_ARRAY_CHECKS: dict[str, Callable[[Any], bool]] = {
    "torch": array_api_compat.is_torch_array,
    "jax": array_api_compat.is_jax_array,
    "cupy": array_api_compat.is_cupy_array,
}


def as_array(data: Any, be: Backend, dtype: Any = None, device: Any = None) -> Array:
    """Python data, NumPy or any DLPack-capable array as an array of ``be`` (no copy
    where ``data`` already is one of the wanted dtype and device)."""
    device = be.device if device is None else device
    native = is_array_of(data, be)
    if not native and not isinstance(data, np.ndarray):
        given = f"a {type(data).__name__}, which NumPy reads as"
        try:
            data = to_host(data)
        except (ValueError, OverflowError) as exc:  # ragged lists; ints beyond int64
            raise TypeError(
                f"cannot make a tensor from a {type(data).__name__}: NumPy refused it "
                f"({exc}); give numbers within int64 or float64, (nested) lists of equal "
                f"lengths, or an array of numbers"
            ) from exc
    else:
        given = "an array of"
    if isinstance(data, np.ndarray) and data.dtype.kind not in "biufc":
        # strings, objects, dates: not numbers
        raise TypeError(
            f"cannot make a tensor from {given} dtype {data.dtype}: give numbers, (nested) "
            f"lists of numbers, or an array of numbers"
        )
    if native:
        out = data
        if dtype is not None and out.dtype != dtype:
            out = be.xp.astype(out, dtype)
        if be.name != "numpy" and str(out.device) != str(device):
            out = be.xp.asarray(out, device=device)
        return out
    if dtype is None:
        # NumPy's dtype where the backend has it (int8 stays int8 and float16 float16, as
        # on the NumPy backend and in torch.tensor); where it has not (array-api-strict's
        # float16, JAX's 64-bit dtypes without x64 mode) the default float for a float,
        # int64 for an integer (which JAX without x64 gives as int32)
        name = data.dtype.name
        if name in be.named and name not in be.missing:  # the data's own dtype
            return be.from_numpy(data, be.named[name], device)
        if name in be.named:  # (JAX without x64 names int64 but makes int32)
            dtype = be.named[name]
        elif data.dtype.kind == "f":
            dtype = be.dtype
        elif data.dtype.kind in "iu":
            dtype = be.dtypes["int64"]
        out = be.from_numpy(data, dtype, device)
        _check_narrowing(data, be, out.dtype)  # (the dtype JAX made, not the one asked)
        return out
    return be.from_numpy(data, dtype, device)


def _check_narrowing(data: np.ndarray, be: Backend, dtype: Any) -> None:
    """Refuse values that the dtype minitorch chose for NumPy data cannot hold (JAX
    without x64 mode holds int64 data as int32 and float64 as float32): an int wrapped
    (2**40 became 0) and a float became inf, silently."""
    xp = be.xp
    if data.size == 0 or data.dtype.kind not in "iuf":
        return
    bad: float | None
    if data.dtype.kind in "iu" and xp.isdtype(dtype, "integral"):
        low, high, _ = _fallback.int_range(xp, dtype)
        if np.iinfo(data.dtype).min >= low and np.iinfo(data.dtype).max <= high:
            return
        least, most = int(data.min()), int(data.max())
        bad = most if most > high else least if least < low else None
        holds = f"from {low} to {high}"
    elif data.dtype.kind == "f" and xp.isdtype(dtype, "real floating"):
        biggest = float(xp.finfo(dtype).max)
        if float(np.finfo(data.dtype).max) <= biggest:
            return
        finite = data[np.isfinite(data)]
        top = float(np.max(np.abs(finite))) if finite.size else 0.0
        bad = top if top > biggest else None
        holds = f"finite values up to {biggest:g} in magnitude"
    else:
        return
    if bad is not None:
        name, source = be.dtype_name(dtype), data.dtype.name
        why = be.missing.get(source) or f"{be.name} makes {source} data {name}"
        raise OverflowError(
            f"cannot make a {be.name} tensor of {source} data: it becomes {name} ({why}), "
            f"which cannot hold {bad!r} ({name} holds {holds})"
        )


def shape_arg(shape: tuple[Any, ...]) -> tuple[Any, ...]:
    """``f(2, 3)`` and ``f((2, 3))`` alike: the ``*shape`` arguments as one tuple."""
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        return tuple(shape[0])
    return tuple(shape)
