"""Whole-step capture and replay: :func:`capture`.

A training step (forward, backward, optimizer step) is run once under a recorder and
then replayed without building the Python graph again: no Tensor, no Node, no VJP
dispatch, only the backend array calls the step made, in the same order, with the same
arguments. The values are therefore those of eager execution, to the bit on the CPU.

How the recording works. Every op's forward and VJP, and the engine, call the backend
namespace ``be.xp``. For the duration of the recording the functions of that namespace
are wrapped (the namespace object is shared by every Backend of the library, so this
is one swap, undone afterwards; nothing is checked on the eager hot path) and the
arrays the step reads (its Tensor arguments, every parameter's ``.data`` and ``.grad``)
are replaced by *traced arrays*: stand-ins that hold the real array, run every call and
operator for real, and note it as one instruction of a straight-line program whose
variables are the traced arrays. A call none of whose arguments is traced builds a
constant: it runs once, and its result is a constant of the program. The optimizer's
``step()`` is not traced but kept as a call of the program (it reads its step count and
learning rate in Python: replaying recorded arithmetic would freeze them).

The program is then reduced (calls whose results nothing uses are dropped) and turned
into Python source, one line per call, which ``exec`` compiles: the replay is one
function call that runs the step's array calls back to back. On CUDA (torch CUDA
tensors, CuPy) each stretch of calls between two optimizer steps or guards is captured
once into a CUDA graph and then replayed with its input buffers refreshed (the runners
are in ``_cuda_graphs.py``, all of minitorch's code that runs only on a GPU).

What the replay cannot see is refused while recording, with a :class:`CaptureError`
that says what to do: reading a value on the host inside the step (``float(loss)``,
``loss.item()``, ``print(loss)``, ``.numpy()``, ``float()`` inside an op), an op whose
output shape depends on the data (``nonzero``, a boolean mask), random numbers drawn
from the default generator, writing into an array in place, a tensor that gets a
gradient or requires grad but is not a parameter, an optimizer's ``step()`` the capture
was not given, and a value of the step kept outside it. A truth value
or integer read by an op (``bool(xp.any(...))`` in a range check) becomes a *guard*:
the replay checks that it is unchanged, and if not, the step runs eagerly instead.

See ``docs/capture.md``.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import math
import operator
import re
import sys
import threading
import types
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from . import _grad_mode
from ._cuda_graphs import Graphs, graph_runner
from .creation import default_generator, live_generators
from .errors import CaptureError, OpError
from .ops import _registry
from .tensor import Tensor

__all__ = ["CaptureError", "Captured", "capture"]


# ---------------------------------------------------------------- traced arrays
#: namespace functions that only read dtypes and constants: never recorded
_METADATA_FUNCTIONS = frozenset(
    {
        "isdtype",
        "result_type",
        "can_cast",
        "finfo",
        "iinfo",
        "__array_namespace_info__",
    }
)
#: the namespace's extensions, whose functions are recorded too
_EXTENSIONS = frozenset({"linalg", "fft"})
#: namespace functions whose result depends only on the shape, dtype and device of
#: their array argument: a constant of the program
_LIKE_FUNCTIONS = frozenset({"zeros_like", "ones_like", "empty_like", "full_like"})
#: namespace functions whose output shape depends on the values
_DATA_DEPENDENT_SHAPES = frozenset(
    {
        "nonzero",
        "argwhere",
        "flatnonzero",
        "unique_all",
        "unique_counts",
        "unique_inverse",
        "unique_values",
        "extract",
        "compress",
    }
)
#: array attributes and methods that read the values on the host (what the backends'
#: ``to_numpy`` call)
_HOST_READS = frozenset(
    {"item", "tolist", "numpy", "detach", "cpu", "get", "to_device", "tobytes", "__array__"}
)

_BINARY = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "truediv": "/",
    "floordiv": "//",
    "mod": "%",
    "pow": "**",
    "matmul": "@",
    "and": "&",
    "or": "|",
    "xor": "^",
    "lshift": "<<",
    "rshift": ">>",
}
#: the in-place operators recorded (``a -= b``)
_INPLACE_SYMS = frozenset(sym + "=" for sym in _BINARY.values())
_COMPARE = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
_UNARY = {"neg": "-", "pos": "+", "invert": "~", "abs": "abs"}
_OPERATOR_FUNCTIONS: dict[str, Callable[..., Any]] = {
    **{sym: getattr(operator, n + "_" if n in ("and", "or") else n) for n, sym in _BINARY.items()},
    **{sym: getattr(operator, n) for n, sym in _COMPARE.items()},
    "-x": operator.neg,
    "+x": operator.pos,
    "~x": operator.invert,
    "abs": abs,
    "[]": operator.getitem,
    ".mT": operator.attrgetter("mT"),
    ".T": operator.attrgetter("T"),
}


class _Traced:
    """A stand-in for one array while a step is recorded: it holds the real array
    (``value``), runs every operator on it for real and records it as an instruction
    producing a new variable (``slot``) of the program."""

    __slots__ = ("__weakref__", "_rec", "const", "slot", "value")
    #: the backend layer treats it as the array it stands for (``is_array_of``)
    _minitorch_stand_in = True
    __array_priority__ = 2000
    __hash__ = object.__hash__

    _rec: _Recorder | None
    slot: int
    value: Any
    #: made by calls of constants only: the same array at every replay (a constant of
    #: the program), which may be read on the host
    const: bool

    def __init__(self, rec: _Recorder, slot: int, value: Any, const: bool) -> None:
        self._rec = rec
        self.slot = slot
        self.value = value
        self.const = const

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """A NumPy ufunc given a traced array (``ndarray + traced``, ``np.exp(traced)``)
        is recorded like a namespace call; one that would write into an array from
        outside the step (``m = buf.data; m += x.data``) is refused."""
        out = kwargs.get("out")
        if out is not None and any(type(o) is not _Traced for o in out):
            raise CaptureError(
                f"an in-place operator or ufunc writes an array of the step into an array "
                f"from outside it ({ufunc.__name__}, out= shape "
                f"{tuple(getattr(out[0], 'shape', ()))}; m = buf.data; m += ...): that "
                f"array is a constant of the recording, so the replays would not update it. "
                f"Give the tensor that holds it to capture(params=[...])"
            )
        name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
        fn = ufunc if method == "__call__" else getattr(ufunc, method)
        return self._recorder().call(fn, name, inputs, kwargs)

    def _recorder(self) -> _Recorder:
        if self._rec is None:
            raise CaptureError(
                "an array computed inside a captured step was used after its recording "
                "ended: keep only what the step returns (return it instead of storing it)"
            )
        return self._rec

    # metadata: static while the recording's shapes and dtypes are
    @property
    def shape(self) -> Any:
        return self.value.shape

    @property
    def dtype(self) -> Any:
        return self.value.dtype

    @property
    def device(self) -> Any:
        return self.value.device

    @property
    def ndim(self) -> int:
        return int(self.value.ndim)

    @property
    def size(self) -> Any:
        return self.value.size

    @property
    def base(self) -> Any:  # NumPy's Backend.owns reads it (is it a view?)
        return self.value.base

    def _is_view(self) -> bool:  # torch's Backend.owns calls it
        return bool(self.value._is_view())

    @property
    def mT(self) -> Any:
        return self._recorder().operator(".mT", (self,))

    @property
    def T(self) -> Any:
        return self._recorder().operator(".T", (self,))

    def __len__(self) -> int:
        return len(self.value)

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self.value)))

    def __getitem__(self, key: Any) -> Any:
        return self._recorder().operator("[]", (self, key))

    def __setitem__(self, key: Any, value: Any) -> None:
        raise CaptureError(
            "writing into an array in place (a[key] = v on a backend array) inside a "
            "captured step is not supported; use Tensor operations (x[key] = v on a "
            "Tensor records a functional setitem)"
        )

    # host reads: truth values and integers become guards; anything else is refused
    def __bool__(self) -> bool:
        return bool(self._recorder().guard(self, bool))

    def __int__(self) -> int:
        return int(self._recorder().guard(self, int))

    def __index__(self) -> int:
        return int(self._recorder().guard(self, operator.index))

    def __float__(self) -> float:
        if self.const:
            return float(self.value)
        raise _host_read("float()", self)

    def __complex__(self) -> complex:
        if self.const:
            return complex(self.value)
        raise _host_read("complex()", self)

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        if self.const:
            return self.value.__array__(*args, **kwargs)
        raise _host_read("a copy to the host (np.asarray, .numpy(), .item(), print)", self)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        if self.const:
            return self.value.__dlpack__(*args, **kwargs)
        raise _host_read("a DLPack export", self)

    def __dlpack_device__(self) -> Any:
        return self.value.__dlpack_device__()

    def __array_namespace__(self, *args: Any, **kwargs: Any) -> Any:
        raise CaptureError(
            "__array_namespace__() of an array inside a captured step: call the backend "
            "namespace of the tensor (t.backend.xp) instead"
        )

    def __getattr__(self, name: str) -> Any:
        if name in _HOST_READS:
            if self.const:
                return getattr(self.value, name)
            raise _host_read(f".{name}()", self)
        raise _ArrayMethodError(
            f"a.{name} on a backend array inside a captured step (shape "
            f"{tuple(self.value.shape)}): the arrays' own methods are not recorded; call the "
            f"namespace's function instead (xp.{name}(a, ...), with xp = tensor.backend.xp), "
            f"or compute with Tensors"
        )

    def __repr__(self) -> str:
        return (
            f"<array traced by minitorch.capture: shape {tuple(self.value.shape)}, "
            f"dtype {self.value.dtype}>"
        )


class _ArrayMethodError(CaptureError, AttributeError):
    """A backend array's own method used inside a captured step: a CaptureError, and an
    AttributeError too, so that ``hasattr`` probes of array libraries still say False."""


def _binary(sym: str, reflected: bool) -> Callable[[_Traced, Any], Any]:
    def method(self: _Traced, other: Any) -> Any:
        return self._recorder().operator(sym, (other, self) if reflected else (self, other))

    return method


def _unary(sym: str) -> Callable[[_Traced], Any]:
    def method(self: _Traced) -> Any:
        return self._recorder().operator(sym, (self,))

    return method


def _inplace(name: str, sym: str) -> Callable[[_Traced, Any], Any]:
    """``a op= b`` on a traced array. Where the real array's type writes in place
    (NumPy, torch, array-api-strict), it writes in place here too, and the recording
    notes ``a op= b``: every reference to ``a``, inside the step or outside it (an
    optimizer's ``data = p.data; data -= lr * g`` updates the parameter, and a view of
    it the user keeps), sees the result while recording and at every replay. A type
    without the operator (JAX) returns NotImplemented, and Python computes
    ``a = a op b``, as it does eagerly. A constant of the recording is not written:
    ``a`` then stands for the out-of-place result (a replay must not change the
    constant it starts from)."""

    def method(self: _Traced, other: Any) -> Any:
        if not hasattr(type(self.value), f"__i{name}__"):
            return NotImplemented
        rec = self._recorder()
        real_other, t_other, _ = rec.unwrap(other)
        for w in rec.proxies:
            t = w()
            if (
                t is not None
                and t is not self
                and t.value is not self.value  # (the same array twice: no view)
                and _shares_memory(t.value, self.value)
            ):
                raise CaptureError(
                    f"an in-place {sym}= on an array of the step that shares memory with "
                    f"another one (a view): the replay would not change the view. Write "
                    f"it out of place (a = a {sym} b), or through Tensor ops"
                )
        if self.const:
            probe = _copy_of(self.value)
            getattr(probe, f"__i{name}__")(real_other)  # what eager would raise, it raises
            out = rec.operator(sym, (self, other))
            if type(out) is _Traced and out.value.dtype != self.value.dtype:
                out = rec.call(_astype, "astype", (out, self.value.dtype), {})
            if type(out) is not _Traced:  # pragma: no cover - an operator gives an array
                return out
            self.slot, self.value, self.const = out.slot, out.value, out.const
            return self
        written = getattr(self.value, f"__i{name}__")(real_other)
        if written is NotImplemented:  # pragma: no cover - Python tries a = a op b
            return NotImplemented
        effect = any(v is written or _shares_memory(v, written) for v in rec.inputs)
        slot = rec.slot_for(written)
        rec.instrs.append(_Call(None, sym + "=", (_Ref(self.slot), t_other), {}, slot, effect))
        for w in rec.proxies:  # every stand-in of this array (b = xp.asarray(a)) reads it now
            t = w()
            if t is not None and t is not self and t.value is self.value and not t.const:
                t.slot, t.value = slot, written
        self.slot, self.value = slot, written
        return self

    return method


def _astype(x: Any, dtype: Any) -> Any:
    """``x`` cast to ``dtype`` (the array's namespace's ``astype``, else its method: a
    CuPy array's ``astype``, a torch tensor's ``to``)."""
    if hasattr(x, "__array_namespace__"):
        return x.__array_namespace__().astype(x, dtype)
    return x.astype(dtype) if hasattr(x, "astype") else x.to(dtype)


def _copy_of(x: Any) -> Any:
    """A copy of a backend array (NumPy, torch, array-api-strict)."""
    if hasattr(x, "clone"):
        return x.clone()
    if hasattr(x, "copy"):
        return x.copy()
    return x.__array_namespace__().asarray(x, copy=True)


def _memory_of(x: Any) -> Any:
    """The NumPy array or torch storage behind a backend array (None: unknown)."""
    if isinstance(x, np.ndarray):
        return x
    inner = getattr(x, "_array", None)  # array-api-strict's
    if isinstance(inner, np.ndarray):
        return inner
    if hasattr(x, "untyped_storage"):
        return x.untyped_storage()
    return None


def _shares_memory(a: Any, b: Any) -> bool:
    if type(a).__module__.startswith("cupy") and type(b).__module__.startswith("cupy"):
        import cupy  # only where CuPy arrays are already at hand

        return bool(cupy.may_share_memory(a, b))
    ma, mb = _memory_of(a), _memory_of(b)
    if isinstance(ma, np.ndarray) and isinstance(mb, np.ndarray):
        return bool(np.may_share_memory(ma, mb))
    if ma is None or mb is None or isinstance(ma, np.ndarray) or isinstance(mb, np.ndarray):
        return False
    return bool(ma.data_ptr() == mb.data_ptr() and ma.nbytes() > 0)


for _name, _sym in _BINARY.items():
    setattr(_Traced, f"__{_name}__", _binary(_sym, False))
    setattr(_Traced, f"__r{_name}__", _binary(_sym, True))
    setattr(_Traced, f"__i{_name}__", _inplace(_name, _sym))
for _name, _sym in _COMPARE.items():
    setattr(_Traced, f"__{_name}__", _binary(_sym, False))
for _name, _sym in _UNARY.items():
    setattr(_Traced, f"__{_name}__", _unary(_sym if _sym == "abs" else _sym + "x"))


#: Tensor methods that read a value on the host, as the user wrote them
_TENSOR_READS = {
    "__float__": "float(t)",
    "__int__": "int(t)",
    "__index__": "a tensor used as an index (range(t), seq[t])",
    "__bool__": "bool(t) (an `if` or `while` on a tensor)",
    "__complex__": "complex(t)",
    "__format__": "an f-string of a tensor (f'{t:.4f}')",
    "__repr__": "print(t), str(t) or repr(t)",
    "__reduce__": "pickling or copying a tensor",
    "__array__": "np.asarray(t)",
    "item": "t.item()",
    "numpy": "t.numpy()",
    "tolist": "t.tolist()",
}
_TENSOR_FILE = sys.modules[Tensor.__module__].__file__
_PACKAGE = str(_TENSOR_FILE).rsplit("tensor.py", 1)[0]


#: ops that read their input on the host, as the user wrote them, and what to do
_OP_READS = {
    "move": (
        "x.to(another backend or device)",
        "A move copies through the host: move the inputs before calling the step",
    ),
}
_READ_ADVICE = (
    "Move it out of the step: return the tensor and read it after the call "
    "(loss = step(x, y); print(float(loss)))"
)


def _as_written(what: str) -> tuple[str, str]:
    """The host read as the user wrote it, and what to do: the outermost Tensor method
    of the innermost run of Tensor frames on the stack (``float(t)`` reaches the array
    through ``item`` and the backend's ``to_numpy``, whose ``.detach()`` or
    ``.to_device()`` the user never wrote), or the op being applied (``x.to(...)``);
    ``what`` where the read came from elsewhere (an op's own code)."""
    frame: types.FrameType | None = sys._getframe(1)
    outer = None
    caller = None  # the first function of minitorch's outside this module (clip_grad_norm_)
    while frame is not None:
        code = frame.f_code
        if code.co_filename == _TENSOR_FILE:
            outer = frame
        elif outer is not None:
            break
        elif (
            caller is None
            and code.co_filename.startswith(_PACKAGE)
            and frame.f_globals.get("__name__") not in (__name__, "minitorch.backend")
        ):
            caller = f"{frame.f_globals['__name__']}.{code.co_qualname.split('.<locals>')[0]}"
        frame = frame.f_back
    if outer is None:
        return (what if caller is None else f"{what} in {caller}"), _READ_ADVICE
    if outer.f_code.co_name == "apply":
        op = getattr(outer.f_locals.get("op"), "name", "")
        return _OP_READS.get(op, (f"the op {op!r} ({what})", _READ_ADVICE))
    return _TENSOR_READS.get(outer.f_code.co_name, what), _READ_ADVICE


def _host_read(what: str, t: _Traced) -> CaptureError:
    said, advice = _as_written(what)
    return CaptureError(
        f"{said} inside a captured step reads an array of the step on the host (shape "
        f"{tuple(t.value.shape)}, dtype {t.value.dtype}): that synchronises, and the "
        f"replay would not do it again. {advice}"
    )


# ---------------------------------------------------------------- the program
class _Ref:
    """A variable of the program (one array) inside an argument template."""

    __slots__ = ("slot",)

    def __init__(self, slot: int) -> None:
        self.slot = slot


class _Call:
    """``outs = fn(*args, **kwargs)`` (or an operator ``op``: ``+``, ``[]``, ``.mT``, or
    an in-place one, ``-=``, whose ``outs`` is its first argument's array written).
    ``effect``: it writes into an array from outside the step (an argument's, a
    parameter's), which the replay must do even where nothing reads the result."""

    __slots__ = ("args", "effect", "fn", "kwargs", "op", "outs")

    def __init__(
        self,
        fn: Any,
        op: str | None,
        args: Any,
        kwargs: dict[str, Any],
        outs: Any,
        effect: bool = False,
    ) -> None:
        self.fn, self.op, self.args, self.kwargs, self.outs = fn, op, args, kwargs, outs
        self.effect = effect


class _Guard:
    """The replay must find ``convert(slot) == value``, else the step runs eagerly."""

    __slots__ = ("convert", "slot", "value")

    def __init__(self, slot: int, convert: Callable[[Any], Any], value: Any) -> None:
        self.slot, self.convert, self.value = slot, convert, value


class _Early:
    """Start reading guard ``slot``'s value on the host, which the guard then waits for
    where it stands: on CUDA a copy to pinned memory and an event, so that the calls
    between queue up on the GPU before the host waits (on the CPU it does nothing)."""

    __slots__ = ("slot",)

    def __init__(self, slot: int) -> None:
        self.slot = slot


class _Host:
    """An optimizer's ``step()``: its parameters' data and grads are stored before the
    call (templates) and read back after it (new slots)."""

    __slots__ = ("ins", "opt", "outs")

    def __init__(
        self, opt: int, ins: list[tuple[int, Any, Any]], outs: list[tuple[int, int, int | None]]
    ) -> None:
        self.opt, self.ins, self.outs = opt, ins, outs


_Instr = _Call | _Guard | _Early | _Host


def _template_items(t: Any) -> Iterator[Any]:
    """The items of an argument template (its slots and constants), in order."""
    tt = type(t)
    if tt is tuple or tt is list:
        for x in t:
            yield from _template_items(x)
    elif tt is dict:
        for x in t.values():
            yield from _template_items(x)
    else:
        yield t


def _refs(t: Any) -> Iterator[int]:
    """The slots an argument template reads."""
    return (x.slot for x in _template_items(t) if type(x) is _Ref)


def _outs(outs: Any) -> tuple[int, ...]:
    return (outs,) if type(outs) is int else tuple(outs)


class _GuardFailed(Exception):
    """A guard of the replay saw another value than the recording."""

    def __init__(self, late: bool) -> None:
        super().__init__()
        self.late = late


class _Recorder:
    """Collects the instructions of one recording."""

    def __init__(self) -> None:
        self.instrs: list[_Instr] = []
        self.n = 0
        self.paused = 0  # > 0: inside a recorded call (nested namespace calls run as they are)
        #: the recording thread: other threads' calls run as they are
        self.thread = threading.get_ident()
        self.proxies: list[weakref.ref[_Traced]] = []
        #: slot -> the array it held while recording (to tell which may be overwritten)
        self.values: dict[int, Any] = {}
        #: the arrays from outside the step: its arguments', its parameters'
        self.inputs: list[Any] = []
        #: arrays that calls read as they are (constants of the program), by id
        self.raw: dict[int, Any] = {}
        #: leaf tensors requiring grad whose arrays an op read as constants, by id
        self.read: dict[int, Tensor] = {}
        #: id(parameter) -> how many times the real optimizer steps bumped its version
        self.host_bumps: dict[int, int] = {}
        #: the given optimizers and the code of their step() methods: the replay calls
        #: them, so they must never run on traced arrays (a step bound before would)
        self.optimizers: list[Any] = []
        self.step_codes: frozenset[Any] = frozenset()

    def slot_for(self, value: Any) -> int:
        """A new variable of the program, holding ``value`` while recording."""
        self.values[self.n] = value
        self.n += 1
        return self.n - 1

    def new(self, value: Any, const: bool = False) -> _Traced:
        t = _Traced(self, self.slot_for(value), value, const)
        self.proxies.append(weakref.ref(t))
        return t

    def new_input(self, value: Any) -> _Traced:
        """A traced array for an array from outside the step."""
        self.inputs.append(value)
        return self.new(value)

    def unwrap(self, a: Any) -> tuple[Any, Any, bool]:
        """``(real value, template, whether it reads a traced array)``."""
        ta = type(a)
        if ta is _Traced:
            if a._rec is not self:
                a._recorder()  # raises: a leftover of another recording
                raise CaptureError("an array traced by another capture was used in this one")
            if a.const:
                return a.value, a.value, False
            return a.value, _Ref(a.slot), True
        if ta is tuple or ta is list:
            parts = [self.unwrap(x) for x in a]
            if all(p[0] is x for p, x in zip(parts, a, strict=True)):
                return a, a, False
            traced = any(p[2] for p in parts)
            return ta(p[0] for p in parts), ta(p[1] for p in parts), traced
        if ta is dict:
            items = {k: self.unwrap(v) for k, v in a.items()}
            if all(p[0] is a[k] for k, p in items.items()):
                return a, a, False
            traced = any(p[2] for p in items.values())
            real = {k: p[0] for k, p in items.items()}
            return real, {k: p[1] for k, p in items.items()}, traced
        if ta is slice:
            bounds = [self.unwrap(x) for x in (a.start, a.stop, a.step)]
            if any(b[2] for b in bounds):
                raise CaptureError(
                    "a slice bound computed inside a captured step (x[:n] with n an array of "
                    "the step): the output shape depends on the values; use where() to mask"
                )
            real_slice = slice(*(b[0] for b in bounds))
            return real_slice, real_slice, False
        if _is_array(a):
            self.raw[id(a)] = a
        return a, a, False

    def wrap_out(self, out: Any, const: bool) -> tuple[Any, Any]:
        """The traced result(s) of a recorded call and the slot(s) they fill; a result
        that is not an array (a dtype, a Python number) is returned as it is."""
        if _is_array(out):
            t = self.new(out, const)
            return t, t.slot
        if isinstance(out, tuple | list) and out and all(_is_array(o) for o in out):
            ts = [self.new(o, const) for o in out]
            tout = type(out)
            # a named tuple (eigh, slogdet, qr, svd results) is rebuilt as one
            wrapped = tout._make(ts) if hasattr(tout, "_make") else tout(ts)
            return wrapped, tuple(t.slot for t in ts)
        return out, None

    def call(self, fn: Callable[..., Any], name: str, args: Any, kwargs: dict[str, Any]) -> Any:
        self.paused += 1
        try:
            real_args, t_args, traced = self.unwrap(args)
            real_kw, t_kw, traced_kw = self.unwrap(kwargs) if kwargs else ({}, {}, False)
            if traced or traced_kw:
                _refuse_write(fn, name, real_args, kwargs)
            if (traced or traced_kw) and name in _DATA_DEPENDENT_SHAPES:
                raise CaptureError(
                    f"{name}: its output shape depends on the values, which a replay cannot "
                    f"follow; compute it outside the captured step"
                )
            # torch counts the writes into a tensor: a call that writes into one it is
            # given (batch_norm's running statistics) is seen by its version
            versions = [
                (a, a._version) for a in _template_items((real_args, real_kw)) if _versioned(a)
            ]
            out = fn(*real_args, **real_kw)
        finally:
            self.paused -= 1
        if traced or traced_kw:
            written = any(a._version != v for a, v in versions) or any(
                out is a for a in _template_items(real_args[1:])
            )
            if out is None or written:
                raise CaptureError(
                    f"{name}(...) wrote into an array it was given inside a captured step "
                    f"(an out argument, np.copyto, np.put, a running statistic): such a "
                    f"write is not recorded. Compute the new array out of place "
                    f"(xp.where(mask, new, a)), or use an in-place operator (a -= b), which "
                    f"is recorded"
                )
        # zeros_like(x) and the like read only x's shape, dtype and device
        like = name in _LIKE_FUNCTIONS and not any(_refs((t_args[1:], t_kw)))
        if not (traced or traced_kw) or like:
            return self.wrap_out(out, True)[0]  # a constant of the program: made once, now
        self.refuse_optimizer_step()
        wrapped, slots = self.wrap_out(out, False)
        if slots is not None:
            self.instrs.append(_Call(fn, None, t_args, t_kw, slots))
        return wrapped

    def operator(self, sym: str, operands: tuple[Any, ...]) -> Any:
        real, t_args, traced = self.unwrap(operands)
        if sym == "[]":
            _refuse_boolean_mask(operands[1])
        out = _OPERATOR_FUNCTIONS[sym](*real)
        if not traced:
            return self.wrap_out(out, True)[0]
        self.refuse_optimizer_step()
        wrapped, slots = self.wrap_out(out, False)
        if slots is not None:
            self.instrs.append(_Call(None, sym, t_args, {}, slots))
        return wrapped

    def refuse_optimizer_step(self) -> None:
        """Raise if an optimizer's ``step()`` (one given to the capture, or any of
        minitorch's) is computing on the step's arrays: the replay would repeat its
        arithmetic with its learning rate and counters frozen, instead of calling it."""
        frame: types.FrameType | None = sys._getframe(2)
        while frame is not None and frame.f_code is not _TRACE_CODE:
            code = frame.f_code
            if code.co_name != "step" and code not in self.step_codes:
                frame = frame.f_back
                continue
            owner = frame.f_locals.get("self")
            if code in self.step_codes and any(owner is opt for opt in self.optimizers):
                raise CaptureError(
                    f"{code.co_qualname}() ran on the step's arrays instead of being called "
                    f"by the capture: it was reached through a reference taken before the "
                    f"capture (opt_step = opt.step), and its learning rate and counters "
                    f"would be frozen in the replays. Call opt.step() inside the step"
                )
            if code.co_name == "step" and _is_optimizer(owner):
                raise CaptureError(
                    f"{code.co_qualname}() ran inside the captured step, but its optimizer "
                    f"was not given to the capture: the replays would repeat its arithmetic "
                    f"with its learning rate and counters frozen. Give it with "
                    f"capture(optimizer=...) (a list for several), not its tensors with "
                    f"params="
                )
            frame = frame.f_back

    def guard(self, t: _Traced, convert: Callable[[Any], Any]) -> Any:
        value = convert(t.value)
        if t.const:
            return value
        self.instrs.append(_Guard(t.slot, convert, value))
        return value

    def namespace_function(self, fn: Callable[..., Any], name: str) -> Callable[..., Any]:
        def recorded(*args: Any, **kwargs: Any) -> Any:
            if self.paused or threading.get_ident() != self.thread:
                return fn(*args, **kwargs)
            return self.call(fn, name, args, kwargs)

        recorded.__name__ = getattr(fn, "__name__", name)
        recorded.__wrapped__ = fn  # type: ignore[attr-defined]
        return recorded


def _versioned(a: Any) -> bool:
    """A torch tensor whose ``_version`` counts the writes into it (an inference tensor
    has no counter)."""
    return (
        type(a).__module__.startswith("torch")
        and hasattr(a, "is_inference")
        and not a.is_inference()  # (first: it refuses to read its _version)
        and hasattr(a, "_version")
    )


def _refuse_write(fn: Any, name: str, args: Any, kwargs: dict[str, Any]) -> None:
    """Refuse a namespace call that would write into an array it is given: ``out=``
    (or a NumPy ufunc's positional ``out``), or one of torch's in-place functions
    (``xp.neg_``): the write is not recorded, and the call's unused result would be
    dropped from the replay."""
    how = None
    if "out" in kwargs or (type(fn) is np.ufunc and len(args) > fn.nin):
        how = f"{name}(..., out=...)"
    elif name.endswith("_") and not name.startswith("_") and not hasattr(np, name):
        how = f"{name}(...), an in-place function,"
    if how is not None:
        plain = name.rstrip("_")
        raise CaptureError(
            f"{how} inside a captured step: a write into an array through it is not "
            f"recorded; write a = {plain}(...), or an in-place operator (a -= b), which is"
        )


def _refuse_boolean_mask(key: Any) -> None:
    keys = key if type(key) is tuple else (key,)
    for k in keys:
        if type(k) is _Traced and not k.const and "bool" in str(k.value.dtype):
            raise CaptureError(
                f"indexing with a boolean mask (shape {tuple(k.value.shape)}) inside a captured "
                f"step: the output shape depends on the mask's values; use where() instead"
            )


def _is_array(x: Any) -> bool:
    return (
        hasattr(x, "shape") and hasattr(x, "dtype") and not isinstance(x, type | _Traced)
    ) or type(x) is _Traced


# ---------------------------------------------------------------- code generation
def _literal(x: Any) -> bool:
    tx = type(x)
    if x is None or x is Ellipsis or tx is bool or tx is int or tx is str:
        return True
    if tx is float:
        return math.isfinite(x)
    if tx is tuple:
        return all(_literal(v) for v in x)
    return False


class _Source:
    """Python source for a program, and the objects its names stand for."""

    def __init__(self) -> None:
        self.names: dict[str, Any] = {}
        self._ids: dict[int, str] = {}

    def name(self, obj: Any, prefix: str) -> str:
        key = id(obj)
        if key not in self._ids:
            n = f"{prefix}{len(self._ids)}"
            self._ids[key] = n
            self.names[n] = obj
        return self._ids[key]

    def render(self, t: Any) -> str:
        tt = type(t)
        if tt is _Ref:
            return f"v{t.slot}"
        if tt is tuple or tt is list:
            if tt is tuple and _literal(t):
                return repr(t)
            items = [self.render(x) for x in t]
            if tt is list:
                return "[" + ", ".join(items) + "]"
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if tt is dict:
            return (
                "{" + ", ".join(f"{self.render(k)}: {self.render(v)}" for k, v in t.items()) + "}"
            )
        if _literal(t):
            return repr(t)
        return self.name(t, "K")

    def call(self, c: _Call, out: int | None = None) -> str:
        """``v = f(...)``; with ``out``, the ufunc writes into that (dying) variable."""
        args = c.args
        if out is not None:
            fn = _INPLACE_UFUNCS[c.op] if c.op is not None else c.fn
            parts = [self.render(x) for x in args]
            call = f"{self.name(fn, 'F')}({', '.join(parts)}, out=v{out})"
            return f"v{c.outs} = {call}{_comment(fn)}"
        if c.op is not None:
            a = [self.render(x) for x in args]
            if c.op in _INPLACE_SYMS:  # writes into its first argument's array
                return f"v{c.outs} = {a[0]}; v{c.outs} {c.op} {a[1]}"
            if c.op == "[]":
                expr = f"{a[0]}[{a[1]}]"
            elif c.op in (".mT", ".T"):
                expr = f"{a[0]}{c.op}"
            elif c.op == "abs":
                expr = f"abs({a[0]})"
            elif c.op.endswith("x"):
                expr = f"{c.op[0]}{a[0]}"
            else:
                expr = f"{a[0]} {c.op} {a[1]}"
        else:
            parts = [self.render(x) for x in args]
            parts += [f"{k}={self.render(v)}" for k, v in c.kwargs.items()]
            expr = f"{self.name(c.fn, 'F')}({', '.join(parts)})"
        outs = c.outs
        target = f"v{outs}" if type(outs) is int else "".join(f"v{s}, " for s in outs)
        return f"{target} = {expr}{'' if c.fn is None else _comment(c.fn)}"


def _comment(fn: Any) -> str:
    """``  # name`` of a called function, for a reader of ``Captured.source()``."""
    name = getattr(fn, "__name__", None)
    return f"  # {name}" if isinstance(name, str) and name.isidentifier() else ""


# ---------------------------------------------------------------- one recording
class _Program:
    """A compiled recording: ``run(arrays)`` replays it, writing the parameters'
    ``.data`` and ``.grad`` and returning the step's result."""

    def __init__(
        self,
        rec: _Recorder,
        params: list[Tensor],
        param_in: list[tuple[int, int | None]],
        final: list[tuple[Any, Any]],
        bumps: list[int],
        arg_slots: list[int],
        result: Any,
        steps: list[Callable[[], Any]],
        scratch: list[Callable[[], Any] | None],
        keeps_none: list[bool],
        copy: dict[int, Callable[[Any], Any]],
        graphs: Graphs | None,
        inplace: bool,
    ) -> None:
        instrs = rec.instrs
        # each CUDA graph stretch's code -> its source lines (to name a failed call)
        self.segments: dict[Any, list[str]] = {}
        kept = _early_guards(
            _hoist_guards(_live(instrs, result, final), rec.values, param_in, rec.raw)
        )
        at_end = _at_end(kept, param_in)
        writes = _end_writes(at_end, final)
        self.calls = sum(type(i) is _Call for i in kept)
        self.guards = sum(type(i) is _Guard for i in kept)
        self.dropped = sum(type(i) is _Call for i in instrs) - self.calls
        end = len(kept)
        last = _last_uses(kept, result, writes)
        # the slots the parameters hold at the end, without a write
        stay = {
            s
            for (d, g), (ds, gs) in zip(writes, at_end, strict=True)
            for s in ((ds,) if d is None else ()) + ((gs,) if g is None and gs is not None else ())
        }
        # optimizer steps of minitorch's own (they keep no gradient) that read their
        # gradients last: on CUDA these take them in the graph's memory, uncopied
        lends = {
            i
            for i, ins in enumerate(kept)
            if graphs is not None
            and type(ins) is _Host
            and keeps_none[ins.opt]
            and _last_reader_of_grads(ins, i, last, stay)
        }
        #: the optimizers (by index) the replay trusts to keep no gradient: their steps
        #: read the gradients in a graph's memory, or overwrite them (NumPy's SGD)
        self.trusted: set[int] = {
            ins.opt for i, ins in enumerate(kept) if type(ins) is _Host and i in lends
        }
        self.lends = bool(lends)
        #: the graph runners of the program
        self.graphs: list[Any] = []
        host_reads = {
            s
            for i, ins in enumerate(kept)
            if type(ins) is _Host
            for s in (_instr_reads(ins) if i not in lends else _data_reads(ins))
        }
        writable = _overwritable(kept, last, rec.values, result, writes) if inplace else None
        reuse = _reusable(kept, rec.values, writable) if writable else {}
        self.inplace = len(reuse)
        #: optimizer steps that overwrite the gradients they read (NumPy)
        self.scratch = 0
        src = _Source()
        lines: list[str] = []

        def read(pi: int, ds: int, gs: int | None) -> None:
            """Bind parameter ``pi``'s ``.data`` and ``._grad`` to the variables ``ds``
            and ``gs``, where the replay reads them later."""
            p = src.name(params[pi], "P")
            if ds in last:
                lines.append(f"v{ds} = {p}.data")
            if gs is not None and gs in last:
                lines.append(f"v{gs} = {p}._grad")

        for i, (ds, gs) in enumerate(param_in):  # the parameters' arrays at the start
            read(i, ds, gs)
        late = False
        #: the source line (header = 1) of the first write outside the replay's own
        #: variables: an exception raised above it left everything as it was
        first_write = 0

        def mark() -> None:
            nonlocal first_write
            first_write = first_write or len(lines) + 2

        state = list(param_in)  # the slots the parameters' .data and ._grad hold now
        started: set[int] = set()  # the guards' slots whose host read has started
        segment: list[_Call] = []
        seg_start = 0

        def dels(slots: Iterable[int]) -> None:
            dead = sorted(set(slots))
            if dead:
                lines.append("del " + ", ".join(f"v{s}" for s in dead))

        def flush(upto: int) -> None:
            """Emit the pending stretch of calls kept[seg_start:upto]."""
            if not segment:
                return
            if graphs is None:
                for j, c in enumerate(segment):
                    k = seg_start + j
                    lines.append(src.call(c, reuse.get(k)))
                    outs = _outs(c.outs)
                    dels([s for s in _instr_reads(c) if last.get(s) == k])
                    dels([s for s in outs if s not in last])
            else:
                defined = {s for c in segment for s in _outs(c.outs)}
                live_in = sorted({s for c in segment for s in _instr_reads(c)} - defined)
                live_out = sorted(s for s in defined if last.get(s, -1) >= upto)
                body = [src.call(c) for c in segment]
                fn_src = "\n".join(
                    [f"def _segment({', '.join(f'v{s}' for s in live_in)}):"]
                    + [f"    {b}" for b in body]
                    + [f"    return ({''.join(f'v{s}, ' for s in live_out)})"]
                )
                scope = dict(src.names)
                exec(compile(fn_src, "<minitorch.capture segment>", "exec"), scope)
                self.segments[scope["_segment"].__code__] = fn_src.splitlines()
                # an output read after the replay or by an optimizer step (which may keep
                # it) is copied out of the graph's memory; the others are read before the
                # graph runs again
                keep = tuple(last.get(s, -1) >= end or s in host_reads for s in live_out)
                graph = graphs(scope["_segment"], keep)
                self.graphs.append(graph)
                runner = src.name(graph, "S")
                target = "".join(f"v{s}, " for s in live_out) or "_"
                lines.append(f"{target} = {runner}({', '.join(f'v{s}' for s in live_in)})")
                dels([s for s in live_in if seg_start <= last.get(s, -1) < upto])
            segment.clear()

        for i, ins in enumerate(kept):
            if type(ins) is _Call and not ins.effect:
                if not segment:
                    seg_start = i
                segment.append(ins)
                continue
            flush(i)
            if type(ins) is _Call:
                # a write into an array from outside the step (outside any CUDA graph,
                # whose buffers are copies): a guard after it cannot fall back to eager
                mark()
                lines.append(src.call(ins))
                dels([s for s in _instr_reads(ins) if last.get(s) == i])
                dels([s for s in _outs(ins.outs) if s not in last])
                late = True
            elif type(ins) is _Early:
                if graphs is not None:  # on the CPU the guard reads the value itself
                    reader = src.name(graphs.read_early, "R")
                    lines.append(f"r{ins.slot} = {reader}(v{ins.slot})  # start the host read")
                    started.add(ins.slot)
            elif type(ins) is _Guard:
                conv = src.name(ins.convert, "C")
                want = src.render(ins.value) if _literal(ins.value) else src.name(ins.value, "K")
                got = f"r{ins.slot}()" if ins.slot in started else f"v{ins.slot}"
                lines.append(f"if {conv}({got}) != {want}:")
                lines.append(f"    raise GuardFailed({late})")
                dels([ins.slot] if last.get(ins.slot) == i else [])
            else:
                assert type(ins) is _Host
                mark()
                for pi, d, g in ins.ins:  # what the step left in them, where it changed
                    p = src.name(params[pi], "P")
                    ds, gs = state[pi]
                    if not (type(d) is _Ref and d.slot == ds):
                        lines.append(f"{p}.data = {_fresh(src, d, copy, params[pi])}")
                    if not ((type(g) is _Ref and g.slot == gs) or (g is None and gs is None)):
                        lines.append(f"{p}._grad = {_fresh(src, g, copy, params[pi])}")
                # drop the replay's own references first: on NumPy, SGD then updates a
                # parameter in place, as it does in eager mode
                dels([s for s in _instr_reads(ins) if last.get(s) == i])
                fast = scratch[ins.opt]
                if writable and fast and _scratch_grads(ins, i, rec.values, writable, stay):
                    self.scratch += 1
                    self.trusted.add(ins.opt)
                    note = "step(), free to overwrite the gradients: nothing reads them after"
                    lines.append(f"{src.name(fast, 'H')}()  # {note}")
                    # dropped at once: a guard or a call failing later leaves no parameter
                    # holding lr * grad as its gradient
                    for pi, ds, gs in ins.outs:
                        if gs is not None:
                            lines.append(f"{src.name(params[pi], 'P')}._grad = None")
                        state[pi] = (ds, None)
                        read(pi, ds, None)
                else:
                    note = (
                        "  # step(), handed the gradients in a graph's memory" if i in lends else ""
                    )
                    lines.append(f"{src.name(steps[ins.opt], 'H')}(){note}")
                    for pi, ds, gs in ins.outs:
                        state[pi] = (ds, gs)
                        read(pi, ds, gs)
                late = True
        flush(end)
        mark()
        for i, (d, g1) in enumerate(writes):  # the parameters' arrays at the end
            p = src.name(params[i], "P")
            if d is not None:
                lines.append(f"{p}.data = {_fresh(src, d, copy, params[i])}")
            if g1 is not None and not (g1[0] is None and state[i][1] is None):
                lines.append(f"{p}._grad = {_fresh(src, g1[0], copy, params[i])}")
            if bumps[i] > 0:
                lines.append(f"{p}._version += {bumps[i]}")
        lines.append(f"return {_render_result(src, result, copy)}")
        header = f"def replay({', '.join(f'v{s}' for s in arg_slots)}):"
        self.source = "\n".join([header] + [f"    {ln}" for ln in lines])
        scope = dict(src.names)
        scope["GuardFailed"] = _GuardFailed
        exec(compile(self.source, "<minitorch.capture>", "exec"), scope)
        self.run: Callable[..., Any] = scope["replay"]
        self.copy = copy
        self.first_write = first_write
        self.runs = 0
        self.fallbacks = 0

    def unlend(self, params: list[Tensor]) -> None:
        """After a failed replay: each parameter's gradient still in a graph's memory
        (handed to an optimizer's step uncopied), which the next launch rewrites,
        becomes a copy, as eager would have left it."""
        if not self.lends:
            return
        for p in params:
            g = p._grad
            if g is not None and any(graph.holds(g) for graph in self.graphs):
                p._grad = self.copy[id(p._backend.xp)](g)


def _segment_call(exc: BaseException, segments: dict[Any, list[str]]) -> str:
    """The call inside a CUDA graph stretch that ``exc`` came out of ('' if none)."""
    tb = exc.__traceback__
    while tb is not None:
        lines = segments.get(tb.tb_frame.f_code)
        if lines is not None:
            return lines[tb.tb_lineno - 1].strip()
        tb = tb.tb_next
    return ""


def _replay_line(exc: BaseException) -> int:
    """The line of a replay's own source ``exc`` came out of (0: not out of a replay)."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<minitorch.capture>":
            return tb.tb_lineno
        tb = tb.tb_next
    return 0


def _live(instrs: list[_Instr], result: Any, final: list[tuple[Any, Any]]) -> list[_Instr]:
    """The instructions the result and the parameters' final arrays need (guards and
    optimizer steps always): calls whose results nothing uses are dropped."""
    needed: set[int] = set()
    for t, _ in _leaves(result):
        needed.update(_refs(t))
    for d, g in final:
        needed.update(_refs(d))
        needed.update(_refs(g))
    keep = [False] * len(instrs)
    for i in range(len(instrs) - 1, -1, -1):
        ins = instrs[i]
        if type(ins) is _Call:
            if ins.effect or any(s in needed for s in _outs(ins.outs)):
                keep[i] = True
                needed.update(_refs(ins.args))
                needed.update(_refs(ins.kwargs))
        else:
            keep[i] = True
            needed.update(_instr_reads(ins))
    return [ins for ins, k in zip(instrs, keep, strict=True) if k]


def _hoist_guards(
    kept: list[_Instr],
    values: dict[int, Any],
    param_in: list[tuple[int, int | None]],
    outside: dict[int, Any],
) -> list[_Instr]:
    """Move each guard that comes after the first effect (an optimizer step, a write
    into an argument's or a parameter's array) but does not depend on it, with the calls
    it needs, to just before that effect: it can then still fall back to the eager step
    when its value changes (a metric's target check after ``opt.step()`` reads only the
    targets). A guard stays where it is if what it reads is made by an effect, by an
    in-place write, or shares memory with an array an effect may write (a parameter's,
    the arrays written in place), or if a call it needs reads an array from outside the
    step as a constant (an alias of a parameter made before the call, an optimizer's
    state: an effect may write into it too)."""
    first = next(
        (i for i, ins in enumerate(kept) if type(ins) is _Host or getattr(ins, "effect", False)),
        None,
    )
    if first is None:
        return kept
    made: dict[int, int] = {}  # slot -> the instruction that makes it
    for i, ins in enumerate(kept):
        if type(ins) is _Call:
            made.update((s, i) for s in _outs(ins.outs))
        elif type(ins) is _Host:
            made.update((s, i) for _, d, g in ins.outs for s in (d, g) if s is not None)
    written = [values[s] for ds, gs in param_in for s in (ds, gs) if s is not None]
    # what an optimizer's step is handed it may write into (a step that zeroes the
    # gradients in place)
    written += [values[s] for ins in kept[first:] if type(ins) is _Host for s in _instr_reads(ins)]
    written += [
        values[s]
        for ins in kept[first:]
        if type(ins) is _Call and (ins.effect or ins.op in _INPLACE_SYMS)
        for s in _outs(ins.outs)
    ]

    def slice_of(guard: _Guard) -> set[int] | None:
        """The instructions after ``first`` the guard needs, or None if it cannot move."""
        need: set[int] = set()
        todo = [guard.slot]
        while todo:
            s = todo.pop()
            i = made.get(s, -1)
            if i < first:  # an input, or made before the first effect: is it written?
                if any(_shares_memory(values[s], w) for w in written):
                    return None
                continue
            ins = kept[i]
            if type(ins) is not _Call or ins.effect or ins.op in _INPLACE_SYMS:
                return None
            if any(_from_outside(c, outside) for c in _constants((ins.args, ins.kwargs))):
                return None
            if i not in need:
                need.add(i)
                todo.extend(_instr_reads(ins))
        return need

    moved: set[int] = set()
    for i in range(first + 1, len(kept)):
        ins = kept[i]
        if type(ins) is _Guard:
            need = slice_of(ins)
            if need is not None:
                moved |= need | {i}
    if not moved:
        return kept
    rest = [ins for i, ins in enumerate(kept) if i >= first and i not in moved]
    return kept[:first] + [kept[i] for i in sorted(moved)] + rest


def _early_guards(kept: list[_Instr]) -> list[_Instr]:
    """Move the calls each guard before the first write needs (a target check reads
    only the targets) to the start of the program, each such guard's :class:`_Early`
    after them; the guards stay where they are. On CUDA the replay then starts copying
    a guard's value to the host before it launches the calls in between (the forward
    pass) and waits for that copy alone where the guard stands, so the GPU is busy with
    those calls while the host waits and launches the rest. A guard whose calls are all
    the calls before it is left as it was: nothing would run in between."""
    first = next(
        (
            i
            for i, ins in enumerate(kept)
            if type(ins) is _Host
            or (type(ins) is _Call and (ins.effect or ins.op in _INPLACE_SYMS))
        ),
        len(kept),
    )
    made: dict[int, int] = {}  # slot -> the call before ``first`` that makes it
    moved: set[int] = set()
    early: list[_Instr] = []
    for i in range(first):
        ins = kept[i]
        if type(ins) is _Call:
            made.update((s, i) for s in _outs(ins.outs))
            continue
        if type(ins) is not _Guard:
            continue
        need: set[int] = set()
        todo = [ins.slot]
        while todo:
            j = made.get(todo.pop())
            if j is not None and j not in need:
                need.add(j)
                todo.extend(_instr_reads(kept[j]))
        if any(type(kept[j]) is _Call and j not in need | moved for j in range(i)):
            moved |= need
            early.append(_Early(ins.slot))
    if not early:
        return kept
    rest = [ins for j, ins in enumerate(kept) if j not in moved]
    return [kept[j] for j in sorted(moved)] + early + rest


def _from_outside(c: Any, outside: dict[int, Any]) -> bool:
    """Whether a constant of a call is (or views) an array from outside the step."""
    if not _is_array(c):
        return False
    return id(c) in outside or any(_shares_memory(c, a) for a in outside.values())


def _at_end(
    kept: list[_Instr], param_in: list[tuple[int, int | None]]
) -> list[tuple[int, int | None]]:
    """Per parameter, the slots its ``.data`` and ``._grad`` hold after the last
    optimizer step (or at the start)."""
    current = list(param_in)
    for ins in kept:
        if type(ins) is _Host:
            for pi, ds, gs in ins.outs:
                current[pi] = (ds, gs)
    return current


def _end_writes(
    current: list[tuple[int, int | None]], final: list[tuple[Any, Any]]
) -> list[tuple[Any, Any]]:
    """Per parameter, ``(data, (grad,))`` to write back at the end: None where it holds
    that already (``current``: what it held after the last optimizer step, or at the
    start, as :func:`_at_end` finds)."""
    return [
        (
            None if type(d) is _Ref and d.slot == current[i][0] else d,
            None
            if (type(g) is _Ref and g.slot == current[i][1])
            or (g is None and current[i][1] is None)
            else (g,),
        )
        for i, (d, g) in enumerate(final)
    ]


def _last_uses(kept: list[_Instr], result: Any, writes: list[tuple[Any, Any]]) -> dict[int, int]:
    """Slot -> the index of the instruction that reads it last (``len(kept)``: the
    result or a parameter holds it at the end)."""
    end = len(kept)
    last: dict[int, int] = {}
    for i, ins in enumerate(kept):
        for s in _instr_reads(ins):
            last[s] = i
    for t, _ in _leaves(result):
        for s in _refs(t):
            last[s] = end
    for d, g in writes:
        for s in (*_refs(d), *_refs(g)):
            last[s] = end
    return last


_INPLACE_UFUNCS = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide}


def _overwritable(
    kept: list[_Instr],
    last: dict[int, int],
    values: dict[int, Any],
    result: Any,
    writes: list[tuple[Any, Any]],
) -> Callable[..., bool]:
    """NumPy only: ``writable(a, i, like, ignore=())``, whether the replay may overwrite
    variable ``a`` at instruction ``i`` (with an array like ``like``, if not None).

    It may if ``a`` dies there, was made by an earlier call of the replay, owns its
    memory and shares it with no array the replay reads later, with no constant and
    with no input, parameter or array an optimizer step left in a parameter (but those
    in ``ignore``): a call returns the same kind of array at every replay (the arrays'
    layouts are part of the recording's key), a view of the same arrays as while
    recording, or a fresh one."""
    made = {s for ins in kept if type(ins) is _Call for s in _outs(ins.outs)}
    consts = [
        v
        for ins in kept
        if type(ins) is _Call
        for v in _constants((ins.args, ins.kwargs))
        if type(v) is np.ndarray
    ]
    for t, _ in _leaves(result):
        consts += [v for v in _constants(t) if type(v) is np.ndarray]
    for d, g in writes:
        consts += [v for v in _constants((d, g)) if type(v) is np.ndarray]
    outside = [s for s in values if s not in made and type(values[s]) is np.ndarray]

    def writable(a: Any, i: int, like: Any, ignore: Iterable[int] = ()) -> bool:
        if type(a) is not _Ref or a.slot not in made or last.get(a.slot) != i:
            return False
        v = values[a.slot]
        if (
            type(v) is not np.ndarray
            or v.base is not None
            or (like is not None and (v.shape != like.shape or v.dtype != like.dtype))
            or not v.flags.writeable
        ):
            return False
        later = [values[s] for s, k in last.items() if k > i and s != a.slot]
        others = [values[s] for s in outside if s not in ignore]
        return not any(np.may_share_memory(v, w) for w in (*later, *consts, *others))

    return writable


def _reusable(kept: list[_Instr], values: dict[int, Any], writable: Any) -> dict[int, int]:
    """NumPy only: instruction -> a variable it may write its result into (``out=``).

    A ufunc (``+ - * /`` or a namespace ufunc) may overwrite an operand that
    ``writable`` allows, of the result's shape and dtype. That saves an allocation and
    writes into memory that is still in the cache."""
    reuse: dict[int, int] = {}
    for i, ins in enumerate(kept):
        if type(ins) is not _Call or ins.kwargs or type(ins.outs) is not int:
            continue
        if not (ins.op in _INPLACE_UFUNCS or (ins.op is None and type(ins.fn) is np.ufunc)):
            continue
        out = values[ins.outs]
        if type(out) is not np.ndarray:
            continue
        for a in ins.args:
            if writable(a, i, out):
                reuse[i] = a.slot
                break
    return reuse


def _scratch_grads(
    ins: _Host, i: int, values: dict[int, Any], writable: Any, stay: set[int]
) -> bool:
    """NumPy only: whether optimizer step ``ins`` (SGD's own) may overwrite the
    gradients it reads: ``writable`` allows each (made by the replay, dead after the
    step: ``zero_grad()`` follows it), each shares memory with nothing else the step
    reads, and the parameters' gradients after the step (the same arrays: SGD keeps
    none) are read later only where ``writable`` sees it and do not stay at the end."""
    grads = [g for _, _, g in ins.ins if g is not None]
    reads = [values[s] for s in _instr_reads(ins)]
    after = {gs for _, _, gs in ins.outs if gs is not None} - stay
    for g in grads:
        if not writable(g, i, None, after):
            return False
        if sum(np.may_share_memory(values[g.slot], w) for w in reads) > 1:
            return False
    return bool(grads)


def _last_reader_of_grads(ins: _Host, i: int, last: dict[int, int], stay: set[int]) -> bool:
    """Whether optimizer step ``ins`` (instruction ``i``) is the last reader of the
    gradients it is handed and of those the parameters hold after it: nothing reads
    them later and none is a parameter's gradient at the end (``zero_grad()`` follows)."""
    grads = [s for _, _, g in ins.ins for s in _refs(g)]
    after = [gs for _, _, gs in ins.outs if gs is not None]
    return bool(grads) and all(last.get(s, -1) <= i and s not in stay for s in (*grads, *after))


def _data_reads(ins: _Host) -> list[int]:
    """The slots optimizer step ``ins`` reads as parameters' ``.data``."""
    return [s for _, d, _ in ins.ins for s in _refs(d)]


def _constants(t: Any) -> Iterator[Any]:
    """The constants of a template."""
    return (x for x in _template_items(t) if type(x) is not _Ref)


def _instr_reads(ins: _Instr) -> list[int]:
    if type(ins) is _Call:
        return [*_refs(ins.args), *_refs(ins.kwargs)]
    if type(ins) is _Guard or type(ins) is _Early:
        return [ins.slot]
    assert type(ins) is _Host
    return [s for _, d, g in ins.ins for s in (*_refs(d), *_refs(g))]


def _fresh(src: _Source, t: Any, copy: dict[int, Callable[[Any], Any]], p: Tensor) -> str:
    """Source for a parameter's array at the end: a variable, or a fresh copy of a
    constant (a constant array is never handed out twice)."""
    if t is None or type(t) is _Ref:
        return src.render(t)
    return f"{src.name(copy[id(p._backend.xp)], 'COPY')}({src.name(t, 'K')})"


def _leaves(result: Any) -> Iterator[tuple[Any, Any]]:
    """``(array template, backend)`` for every tensor (and backend array: backend
    None) of a result template."""
    return ((r.array, r.backend) for r in _template_items(result) if type(r) is _TensorOut)


class _TensorOut:
    """A tensor of the step's result: its array (template) and backend; a backend
    array the step returned as it is (``w.grad``) has backend None."""

    __slots__ = ("array", "backend")

    def __init__(self, array: Any, backend: Any) -> None:
        self.array, self.backend = array, backend


def _render_result(src: _Source, r: Any, copy: dict[int, Callable[[Any], Any]]) -> str:
    tr = type(r)
    src.names["TM"] = Tensor._make
    if tr is _TensorOut:
        arr = r.array
        if type(arr) is _Ref:
            data = f"v{arr.slot}"
        elif r.backend is None:
            data = f"{src.name(_copy_of, 'COPY')}({src.name(arr, 'K')})"
        else:
            data = f"{src.name(copy[id(r.backend.xp)], 'COPY')}({src.name(arr, 'K')})"
        return data if r.backend is None else f"TM({data}, {src.name(r.backend, 'B')}, None)"
    if tr is tuple:
        items = [_render_result(src, x, copy) for x in r]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    if tr is list:
        return "[" + ", ".join(_render_result(src, x, copy) for x in r) + "]"
    if tr is dict:
        pairs = [f"{src.render(k)}: {_render_result(src, v, copy)}" for k, v in r.items()]
        return "{" + ", ".join(pairs) + "}"
    return src.render(r)


# ---------------------------------------------------------------- the public object
class _Active(threading.local):
    """The recording in progress in this thread (one at a time)."""

    rec: _Recorder | None = None


_ACTIVE = _Active()
#: held while a recording swaps the (process-wide) backend namespaces
_RECORDING = threading.Lock()


class Captured:
    """A step function under :func:`capture`: call it like the function.

    The first call with a new signature (the shapes, dtypes and backends of the Tensor
    arguments, the values of the other arguments, the parameters, whether they require
    grad and whether their ``.grad`` is set, grad mode) records the step while running it
    eagerly; later calls with that signature replay the recording. ``stats`` counts them.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        optimizers: Sequence[Any],
        params: Sequence[Tensor],
        cuda_graphs: bool,
        max_recordings: int,
    ) -> None:
        self.fn = fn
        self.optimizers = list({id(opt): opt for opt in optimizers}.values())  # once each
        self.params = list(params)
        self.cuda_graphs = cuda_graphs
        self.max_recordings = max_recordings
        self._programs: dict[Any, _Program] = {}
        #: ``records`` (recordings made), ``replays``, ``fallbacks`` (eager runs after
        #: a guard saw another value)
        self.stats = {"records": 0, "replays": 0, "fallbacks": 0}
        self._warned = False
        for i, opt in enumerate(self.optimizers):
            if not callable(getattr(opt, "step", None)) or not isinstance(
                getattr(opt, "params", None), list
            ):
                raise TypeError(
                    f"capture: optimizer {i} must be a minitorch optimizer (with .step() and "
                    f".params), got {type(opt).__name__}"
                )
        for i, p in enumerate(self.params):
            if not isinstance(p, Tensor):
                raise TypeError(f"capture: params[{i}] must be a Tensor, got {type(p).__name__}")
        try:
            self.__wrapped__ = fn
            self.__doc__ = fn.__doc__
            self.__name__ = getattr(fn, "__name__", "step")
        except AttributeError:  # pragma: no cover - a callable without these
            pass

    def __repr__(self) -> str:
        return f"<minitorch.capture of {getattr(self.fn, '__qualname__', self.fn)!r}>"

    def reset(self) -> None:
        """Forget every recording: the next call records again (after changing what the
        step reads as a constant, e.g. a tensor that is not a parameter)."""
        self._programs.clear()

    @property
    def recordings(self) -> int:
        """How many recordings are kept (one per signature seen)."""
        return len(self._programs)

    def source(self) -> list[str]:
        """The Python source of each kept recording (what a replay runs)."""
        return [p.source for p in self._programs.values()]

    # ------------------------------------------------------------ calling
    def _all_params(self) -> list[Tensor]:
        seen: set[int] = set()
        out: list[Tensor] = []
        for opt in self.optimizers:
            for p in opt.params:
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append(p)
        for p in self.params:
            if id(p) not in seen:
                seen.add(id(p))
                out.append(p)
        return out

    def _key(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], params: list[Tensor], arrays: list[Any]
    ) -> Any:
        """The call's signature (the recording's key); the arrays of its Tensor arguments
        are appended to ``arrays``, in the order of :func:`_tensors_in`."""
        parts: list[Any] = [_grad_mode._state.enabled]
        for a in args:
            parts.append(_arg_key(a, arrays))
        for k, v in kwargs.items():
            parts.append((k, _arg_key(v, arrays)))
        for opt in self.optimizers:  # a step() set on the instance or class between calls
            parts.append((opt.__dict__.get("step"), getattr(type(opt), "step", None)))
        for p in params:
            d, g = p.data, p._grad
            grad = None if g is None else (g.shape, g.dtype, _layout(g))
            parts.append((id(p), d.shape, d.dtype, _layout(d), p._requires_grad, grad))
        return tuple(parts)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _ACTIVE.rec is not None:
            raise CaptureError(
                f"{self!r} was called while another step is being recorded: captured "
                f"steps do not nest; capture the outer step only"
            )
        params = self._all_params()
        arrays: list[Any] = []
        key = self._key(args, kwargs, params, arrays)
        prog = self._programs.get(key)
        if prog is None:
            return self._record(key, args, kwargs, params)
        if prog.trusted and not all(_keeps_no_gradient(self.optimizers[j]) for j in prog.trusted):
            # a method of the optimizer was replaced since the recording: its step may
            # keep the gradients now, which the recording hands it in a graph's memory
            # (or lets NumPy's SGD overwrite, calling its _step, not the new step)
            del self._programs[key]
            return self._record(key, args, kwargs, params)
        # CuPy: the replay on the parameters' GPU, as the eager step
        on_device = params[0]._backend.on_device() if params else contextlib.nullcontext()
        try:
            try:
                with on_device:
                    out = prog.run(*arrays)
            except BaseException:
                prog.unlend(params)
                raise
        except _GuardFailed as exc:
            if exc.late:
                del self._programs[key]
                raise CaptureError(
                    f"{self!r}: a value the step read on the host after its optimizer step "
                    f"(or an in-place write into a parameter or an argument) changed, so the "
                    f"replay cannot go on (the optimizer has stepped; what the step does "
                    f"after that read, a zero_grad() say, was not done); the recording is "
                    f"dropped. Move that read out of the step, or before the update."
                ) from None
            return self._fallback(prog, args, kwargs)
        except Exception as exc:
            line = _replay_line(exc)
            call = prog.source.splitlines()[line - 1].strip() if line else ""
            if line >= prog.first_write and _HOST_CALL.fullmatch(call):
                raise  # the optimizer's own step() raised: as eagerly
            if line >= prog.first_write:
                inner = _segment_call(exc, prog.segments)
                where = f"`{call}`, at `{inner}` in that stretch" if inner else f"`{call}`"
                # the step has changed parameters already (its optimizer stepped): what an
                # eager call would have done up to here is done, the rest is not
                raise OpError(
                    f"{self!r}: a call failed inside the replay, after the optimizer's step "
                    f"(or a write into a parameter or an argument): {where}: "
                    f"{type(exc).__name__}: {exc}. The parameters have moved as they do "
                    f"eagerly; what the step does after that call (a zero_grad() say) was "
                    f"not done"
                ) from exc
            # a call failed on these values (cholesky of a matrix that is not positive
            # definite) before anything changed: the eager step raises minitorch's error,
            # naming the op and its inputs, instead of the library's bare one
            out = self._fallback(prog, args, kwargs)
            # the same calls on the same values ran eagerly: the replay itself failed
            warnings.warn(
                f"{self!r}: the replay raised {type(exc).__name__}: {exc}, where the eager "
                f"step did not; this call ran eagerly (a defect of minitorch.capture: "
                f"step.reset() records again)",
                RuntimeWarning,
                stacklevel=2,
            )
            return out
        prog.runs += 1
        self.stats["replays"] += 1
        return out

    def _fallback(self, prog: _Program, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Run the step eagerly instead of the replay (nothing has changed yet)."""
        prog.fallbacks += 1
        self.stats["fallbacks"] += 1
        self._warn_fallbacks(prog)
        return _detached(self.fn(*args, **kwargs))

    def _warn_fallbacks(self, prog: _Program) -> None:
        if not self._warned and prog.fallbacks >= 10 and prog.fallbacks > prog.runs:
            self._warned = True
            warnings.warn(
                f"{self!r}: {prog.fallbacks} of {prog.fallbacks + prog.runs} calls ran eagerly "
                f"because a value an op reads on the host changed (e.g. cross_entropy's "
                f"check of its targets, on batches with and without ignored targets); the "
                f"capture gains nothing here",
                RuntimeWarning,
                stacklevel=3,
            )

    # ------------------------------------------------------------ recording
    def _record(
        self, key: Any, args: tuple[Any, ...], kwargs: dict[str, Any], params: list[Tensor]
    ) -> Any:
        rec = _Recorder()
        try:
            with _RECORDING:  # the namespace is swapped for one recording at a time
                result, build = self._trace(rec, args, kwargs, params)
        except BaseException:
            _release(rec)  # tensors the step touched hold real arrays, as eager left them
            raise
        problems = _release(rec)
        if problems:
            raise CaptureError("the step cannot be captured: " + "; ".join(problems))
        frozen = _trained_constants(rec, params)
        if frozen:
            raise CaptureError(
                f"{self!r}: the step reads {len(frozen)} tensor(s) that require grad but are "
                f"no parameters of the capture ({'; '.join(frozen[:3])}): a replay would use "
                f"the values they had while recording, even after they change (a model "
                f"evaluated between training steps, a target network loaded between calls). "
                f"Give them to capture(params=[...]) (params=model.parameters()) or through "
                f"their optimizer, or mark them constant with t.requires_grad_(False)"
            )
        prog = build()
        if len(self._programs) >= self.max_recordings:
            self._programs.pop(next(iter(self._programs)))  # the oldest
        self._programs[key] = prog
        self.stats["records"] += 1
        return result

    def _trace(
        self,
        rec: _Recorder,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        params: list[Tensor],
    ) -> tuple[Any, Callable[[], _Program]]:
        """Run the step once with traced arrays; returns its result (graph-free
        tensors) and how to build the program."""
        backends: dict[int, Any] = {}

        for name, obj in _arguments(args, kwargs):
            held = [] if isinstance(obj, Tensor) else _held_tensors(obj)
            if held and not any(t is p for t in held for p in params):
                raise CaptureError(
                    f"{self!r}: argument {name}, of type {type(obj).__name__}, holds Tensors "
                    f"(and no parameter: it is no model): a replay would read them as "
                    f"constants of the recording (a batch object refilled for each call). "
                    f"Pass the tensors themselves, or in a tuple, list or dict "
                    f"(step(batch.x, batch.y), step((x, y)))"
                )
        for name, a in _tensors_in(args, kwargs):
            if a.requires_grad:
                raise CaptureError(
                    f"{self!r}: Tensor argument {name} requires grad (shape {a.shape}); "
                    f"arguments are the step's data: pass tensors that do not require grad, "
                    f"and give trained tensors to capture(params=...) or through an optimizer"
                )
        shadows: list[tuple[Tensor, _Traced]] = []
        #: the lists and dicts the step is given in place of the caller's, and their items
        built: list[tuple[Any, list[Any]]] = []
        in_args = [_shadow(a, rec, backends, shadows, built) for a in args]
        in_kwargs = {k: _shadow(v, rec, backends, shadows, built) for k, v in kwargs.items()}
        arg_slots = [t.slot for _, t in shadows]
        names = [name for name, _ in _tensors_in(args, kwargs)]
        param_in: list[tuple[int, int | None]] = []
        index = {id(p): i for i, p in enumerate(params)}
        for p in params:
            backends[id(p._backend.xp)] = p._backend
        original = [(p, p.data, p._grad) for p in params]
        versions = [p._version for p in params]
        gen_states = [(g, g.get_state()) for g in live_generators()]
        hypers = [_hyper_parameters(opt) for opt in self.optimizers]
        patched: list[tuple[Any, dict[str, Any]]] = []
        deferring: list[tuple[type, str, Any]] = []
        real_apply: Any = None
        opt_patched: list[tuple[Any, Any]] = []
        copy: dict[int, Callable[[Any], Any]] = {}
        steps: list[Callable[[], Any]] = [opt.step for opt in self.optimizers]
        scratch = [_scratch_step(opt) for opt in self.optimizers]
        keeps_none = [_keeps_no_gradient(opt) for opt in self.optimizers]
        try:
            for p in params:
                d = rec.new_input(p.data)
                g = None if p._grad is None else rec.new_input(p._grad)
                param_in.append((d.slot, None if g is None else g.slot))
                p.data, p._grad = d, g
            for be in backends.values():
                ns = be.xp
                copy[id(ns)] = _copier(ns.asarray)
                patched.append((ns, _swap_namespace(rec, ns)))
            deferring = _defer_to_traced({type(v) for v in rec.inputs})
            # (the registry's module globals: every op's call reaches tensor.apply there)
            real_apply = vars(_registry)["apply"]
            vars(_registry)["apply"] = _watching_apply(rec, real_apply)
            for i, opt in enumerate(self.optimizers):
                opt_patched.append((opt, vars(opt).get("step")))
                opt.step = _host_step(rec, i, opt, steps[i], index)
            rec.optimizers = self.optimizers
            rec.step_codes = frozenset(
                _unwrapped(f).__code__
                for opt in self.optimizers
                for cls in type(opt).__mro__
                if isinstance(f := vars(cls).get("step"), types.FunctionType)
            )
            _ACTIVE.rec = rec
            try:
                out = self.fn(*in_args, **in_kwargs)
            except TypeError as exc:
                if "_Traced" not in str(exc):
                    raise
                # CuPy's arrays (a compiled type, not patched as torch's and strict's
                # are) refuse a traced operand with a TypeError of their own
                raise CaptureError(
                    f"{self!r}: {type(exc).__name__}: {exc}: the array library got an array "
                    f"of the step it cannot take. Either a call of the library itself rather "
                    f"than of the backend's namespace (tensor.backend.xp), or an in-place "
                    f"operator that writes an array of the step into an array from outside "
                    f"it (m = buf.data; m += ...): give the tensor that holds it to "
                    f"capture(params=[...])"
                ) from exc
            for name, (s, t) in zip(names, shadows, strict=True):
                if s.data is not t:
                    raise CaptureError(
                        f"{self!r}: the step gave its Tensor argument {name} a new array "
                        f"(x.data = ..., x[i] = v or x += v on the Tensor): the replay would "
                        f"not change the caller's tensor. Compute a new tensor instead "
                        f"(x2 = x * 0.5), or write into its array in place (x.data *= 0.5; "
                        f"not on JAX)"
                    )
            for container, items in built:
                now = list(container.items()) if type(container) is dict else list(container)
                if len(now) != len(items) or any(
                    _item_changed(a, b, type(container) is dict)
                    for a, b in zip(now, items, strict=True)
                ):
                    raise CaptureError(
                        f"{self!r}: the step changed a {type(container).__name__} it was "
                        f"given (batch['loss'] = ..., queue.pop()): the replays would not "
                        f"change the caller's {type(container).__name__}; return what the "
                        f"step computes instead"
                    )
            result, user = _result_template(rec, out, self)
            final = [(_state_template(rec, p.data), _state_template(rec, p._grad)) for p in params]
            # in-place Tensor ops of the step (w.sub_(...) under no_grad) bumped versions
            # that the replay writes no Tensor op to bump; the optimizers' steps bump their own
            bumps = [
                p._version - v - rec.host_bumps.get(id(p), 0)
                for p, v in zip(params, versions, strict=True)
            ]
        finally:
            _ACTIVE.rec = None
            for ns, saved in patched:
                vars(ns).update(saved)
            for cls, name, method in reversed(deferring):
                if method is None:  # inherited: remove the recording's own
                    delattr(cls, name)
                else:
                    setattr(cls, name, method)
            if real_apply is not None:
                vars(_registry)["apply"] = real_apply
            for opt, had in reversed(opt_patched):
                if had is None:
                    del opt.step
                else:
                    opt.step = had
            for p, _, _ in original:  # the real arrays back in place, as eager left them
                p.data = _real(p.data)
                p._grad = _real(p._grad)
        for opt, before in zip(self.optimizers, hypers, strict=True):
            after = _hyper_parameters(opt)
            changed = [k for k, v in before.items() if after[k] != v]
            if changed:
                k = changed[0]
                raise CaptureError(
                    f"{self!r}: the step changed its optimizer's {k} ({before[k]!r} -> "
                    f"{after[k]!r}): the Python code of a step runs only while it "
                    f"records, so the replays would not change it again. Change it between "
                    f"calls (a learning-rate schedule after each call of the step)"
                )
        drawn = [g for g, state in gen_states if g.get_state() != state]
        if drawn:
            which = (
                "the default generator"
                if drawn[0] is default_generator
                else f"{drawn[0]!r}, made before the step"
            )
            raise CaptureError(
                f"{self!r}: the step drew random numbers from {which} (randn, rand, "
                f"randint, dropout): a replay would repeat the same numbers. Draw them "
                f"outside the step and pass them in as an argument"
            )
        graphs = (
            graph_runner(backends.values(), [p.data for p in params]) if self.cuda_graphs else None
        )
        inplace = {be.name for be in backends.values()} == {"numpy"}

        def build() -> _Program:
            return _Program(
                rec,
                params,
                param_in,
                final,
                bumps,
                arg_slots,
                result,
                steps,
                scratch,
                keeps_none,
                copy,
                graphs,
                inplace,
            )

        return user, build


def _shadow(
    a: Any,
    rec: _Recorder,
    backends: dict[int, Any],
    shadows: list[tuple[Tensor, _Traced]],
    built: list[tuple[Any, list[Any]]],
) -> Any:
    """An argument with its Tensors (in tuples, lists and dicts too: a batch) replaced by
    tensors of traced arrays, in the order of :func:`_tensors_in` (appended to
    ``shadows``); the lists and dicts made in place of the caller's go to ``built``."""
    if isinstance(a, Tensor):
        t = rec.new_input(a.data)
        backends[id(a._backend.xp)] = a._backend
        s = Tensor._make(t, a._backend, None)
        s.name = a.name
        shadows.append((s, t))
        return s
    if type(a) is dict:
        d = {k: _shadow(v, rec, backends, shadows, built) for k, v in a.items()}
        built.append((d, list(d.items())))
        return d
    if isinstance(a, tuple | list):
        parts = [_shadow(v, rec, backends, shadows, built) for v in a]
        if type(a) is list:
            built.append((parts, list(parts)))
            return parts
        return a._make(parts) if hasattr(a, "_make") else type(a)(parts)
    return a


_TRACE_CODE = Captured._trace.__code__
#: a replay's call of an optimizer's real step()
_HOST_CALL = re.compile(r"H\d+\(\)")
#: the module of minitorch's optimizers (not imported here: the same layer)
_OPTIM = f"{__package__}.optim"


def _is_optimizer(x: Any) -> bool:
    """An instance of :class:`minitorch.optim.Optimizer` (by its class's bases: that
    module is not imported here, it is of the same layer)."""
    return any(c.__name__ == "Optimizer" and c.__module__ == _OPTIM for c in type(x).__mro__)


def _scratch_step(opt: Any) -> Callable[[], Any] | None:
    """``opt.step()`` that may overwrite the gradients' arrays (``Optimizer._step``),
    where ``opt`` is one of minitorch's own optimizers as defined (so the replay may
    call its ``_step`` for its ``step``: no method replaced, :func:`_keeps_no_gradient`)
    and one class defines both (SGD). None otherwise: the replay calls ``step()``."""
    if not _keeps_no_gradient(opt):
        return None
    mro = type(opt).__mro__
    if next(c for c in mro if "step" in vars(c)) is not next(c for c in mro if "_step" in vars(c)):
        return None
    return functools.partial(opt._step, True)


def _keeps_no_gradient(opt: Any) -> bool:
    """Whether ``opt.step()`` keeps no gradient array it reads: minitorch's own
    optimizers, as defined (``Optimizer._keeps_no_gradient``); anything else may."""
    check = getattr(opt, "_keeps_no_gradient", None)
    return bool(check()) if callable(check) else False


def _unwrapped(f: Any) -> Any:
    """``f`` without its decorators (``@minitorch.no_grad()`` on an optimizer's step:
    the decorator's wrapper code is shared by every decorated function)."""
    while isinstance(getattr(f, "__wrapped__", None), types.FunctionType):
        f = f.__wrapped__
    return f


def _defer_to_traced(types_: set[type]) -> list[tuple[type, str, Any]]:
    """For the recording, make the operators of array types that raise TypeError for an
    operand they do not know (array-api-strict's, instead of returning NotImplemented)
    return NotImplemented for a traced array, so that Python asks the traced array
    (``constant * traced``: a constant tensor on the left); and make an in-place
    operator of a constant array with a traced one (``m = buf.data; m += x.data``: a
    buffer that is no parameter) a CaptureError on array-api-strict (a TypeError naming
    the traced array) and torch (it rebound the name, silently leaving the buffer as it
    was). Returns what to restore."""
    saved: list[tuple[type, str, Any]] = []
    for cls in types_:
        strict = cls.__module__.startswith("array_api_strict")
        if not (strict or cls.__module__.startswith("torch")):
            continue
        for name in (*_BINARY, *_COMPARE) if strict else ():
            method = vars(cls).get(f"__{name}__")
            if method is not None:
                saved.append((cls, f"__{name}__", method))
                setattr(cls, f"__{name}__", _deferring(method))
        for name in _BINARY:
            method = getattr(cls, f"__i{name}__", None)
            if method is not None:
                saved.append((cls, f"__i{name}__", vars(cls).get(f"__i{name}__")))
                setattr(cls, f"__i{name}__", _refusing_inplace(method))
    return saved


def _deferring(method: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def op(self: Any, other: Any) -> Any:
        return NotImplemented if type(other) is _Traced else method(self, other)

    return op


def _refusing_inplace(method: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def op(self: Any, other: Any) -> Any:
        if type(other) is _Traced and not other.const:
            raise CaptureError(
                f"an in-place operator writes an array of the step into an array from "
                f"outside it (shape {tuple(self.shape)}; m = buf.data; m += ...): that array "
                f"is a constant of the recording, so the replays would not update it. Give "
                f"the tensor that holds it to capture(params=[...])"
            )
        return method(self, other)

    return op


def _swap_namespace(rec: _Recorder, ns: Any) -> dict[str, Any]:
    """Wrap the functions of a backend namespace (and of its ``linalg`` and ``fft``
    extensions, replaced by wrapped copies) so that ``rec`` records their calls;
    returns what to restore."""
    saved = dict(vars(ns))
    for name, fn in saved.items():
        if name in _EXTENSIONS and not callable(fn):
            names = vars(fn) if isinstance(fn, types.SimpleNamespace) else dir(fn)
            ext = {k: getattr(fn, k) for k in names if not k.startswith("_")}
            wrapped = {
                k: rec.namespace_function(f, f"{name}.{k}") if _recordable(k, f) else f
                for k, f in ext.items()
            }
            setattr(ns, name, types.SimpleNamespace(**wrapped))
        elif isinstance(fn, np.ufunc) or (callable(fn) and hasattr(fn, "outer")):
            # a ufunc (NumPy's, or JAX's ufunc-like functions): its methods too
            setattr(ns, name, _RecordedUfunc(rec, fn, name))
        elif _recordable(name, fn):
            setattr(ns, name, rec.namespace_function(fn, name))
    return saved


class _RecordedUfunc:
    """A NumPy ufunc of the namespace while recording: its calls and its methods that
    make new arrays (``reduce``, ``accumulate``, ``outer``, ``reduceat``) are recorded;
    ``at``, which writes into its first argument, is refused on the recording thread."""

    def __init__(self, rec: _Recorder, ufunc: Any, name: str) -> None:
        self._rec, self._ufunc, self._name = rec, ufunc, name
        self._call = rec.namespace_function(ufunc, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(*args, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        method = getattr(self._ufunc, attr)
        if attr in ("reduce", "accumulate", "outer", "reduceat"):
            return self._rec.namespace_function(method, f"{self._name}.{attr}")
        if attr == "at" and threading.get_ident() == self._rec.thread:
            raise CaptureError(
                f"{self._name}.at(...) inside a captured step writes into its first "
                f"argument in place, which is not recorded; compute the new array out of "
                f"place, or use Tensor ops (scatter_add)"
            )
        return method


def _recordable(name: str, fn: Any) -> bool:
    return callable(fn) and not isinstance(fn, type) and name not in _METADATA_FUNCTIONS


def _hyper_parameters(opt: Any) -> dict[str, Any]:
    """An optimizer's hyper-parameters (``lr``, ``betas``...) as they are now."""
    return {k: getattr(opt, k, None) for k in getattr(opt, "_hyper", ())}


def _copier(asarray: Callable[..., Any]) -> Callable[[Any], Any]:
    def copy(x: Any) -> Any:
        return asarray(x, copy=True)

    return copy


def _real(x: Any) -> Any:
    return x.value if type(x) is _Traced else x


def _state_template(rec: _Recorder, x: Any) -> Any:
    if type(x) is _Traced:
        return _Ref(x.slot) if x._rec is rec and not x.const else x.value
    return x  # None, or a constant array


def _host_step(
    rec: _Recorder, i: int, opt: Any, real_step: Callable[[], Any], index: dict[int, int]
) -> Callable[..., Any]:
    """What ``opt.step`` is while recording: store the traced arrays back as real ones,
    take the real step (not traced), trace the new arrays."""

    def step(*args: Any, **kwargs: Any) -> None:
        if args or kwargs:
            raise CaptureError("optimizer.step() inside a captured step takes no arguments")
        ins: list[tuple[int, Any, Any]] = []
        for p in opt.params:
            if id(p) not in index:
                raise CaptureError(
                    f"a parameter (shape {p.shape}) was added to optimizer {i} inside the "
                    f"captured step; change the parameters between calls, not inside one"
                )
            ins.append((index[id(p)], _state_template(rec, p.data), _state_template(rec, p._grad)))
            p.data, p._grad = _real(p.data), _real(p._grad)
        versions = [p._version for p in opt.params]
        rec.paused += 1
        try:
            real_step()
        finally:
            rec.paused -= 1
        for p, v in zip(opt.params, versions, strict=True):
            rec.host_bumps[id(p)] = rec.host_bumps.get(id(p), 0) + p._version - v
        outs: list[tuple[int, int, int | None]] = []
        for p in opt.params:
            d = rec.new_input(p.data)
            g = None if p._grad is None else rec.new_input(p._grad)
            p.data, p._grad = d, g
            outs.append((index[id(p)], d.slot, None if g is None else g.slot))
        rec.instrs.append(_Host(i, ins, outs))

    return step


def _arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """A call's arguments, the items of its tuples, lists and dicts in their place (a
    batch ``(x, y)``), in a fixed order, each with a name for messages."""

    def walk(a: Any, name: str) -> Iterator[tuple[str, Any]]:
        if type(a) is dict:
            for k, v in a.items():
                yield from walk(v, f"{name}[{k!r}]")
        elif isinstance(a, tuple | list):
            for i, v in enumerate(a):
                yield from walk(v, f"{name}[{i}]")
        else:
            yield name, a

    for i, a in enumerate(args):
        yield from walk(a, f"{i}")
    for k, v in kwargs.items():
        yield from walk(v, f"{k!r}")


def _tensors_in(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Iterator[tuple[str, Tensor]]:
    """The Tensors among a call's arguments (also in tuples, lists and dicts)."""
    return ((n, a) for n, a in _arguments(args, kwargs) if isinstance(a, Tensor))


def _layout(a: Any) -> Any:
    """A NumPy array's strides, part of the recording's key: whether a call (``reshape``,
    ``ascontiguousarray``) returns a view of its input or a copy depends on them, and
    the replay writes into copies it made (``out=``)."""
    return a.strides if type(a) is np.ndarray else None


def _arg_key(a: Any, arrays: list[Any]) -> Any:
    """A step's argument as part of the recording's key: a Tensor by its backend, shape,
    dtype and requires_grad (its array appended to ``arrays``); tuples, lists and dicts
    by their items; anything else by its value (:func:`_value_key`)."""
    if isinstance(a, Tensor):
        d = a.data
        arrays.append(d)
        return (Tensor, a._backend, d.shape, d.dtype, _layout(d), a._requires_grad)
    if type(a) is dict:
        return (dict, tuple((_value_key(k), _arg_key(v, arrays)) for k, v in a.items()))
    if isinstance(a, tuple | list):
        return (type(a), tuple(_arg_key(v, arrays) for v in a))
    try:
        key = _value_key(a)
        hash(key)
    except TypeError:
        raise CaptureError(
            f"capture: a step's arguments must be Tensors, hashable values (numbers, "
            f"strings, None) or tuples, lists and dicts of them, got "
            f"{type(a).__name__}; make it a Tensor, or read it inside the step from an object "
            f"the step closes over"
        ) from None
    return key


def _item_changed(now: Any, before: Any, pairs: bool) -> bool:
    """Whether a list item (or a dict's ``(key, value)`` pair) is no longer the same."""
    if pairs:
        return now[0] is not before[0] or now[1] is not before[1]
    return now is not before


def _held_tensors(a: Any, depth: int = 3) -> list[Tensor]:
    """The Tensors an argument that is no Tensor, tuple, list or dict holds, ``depth``
    levels deep: in its attributes (a batch object with ``.x``, or ``.inputs["x"]``), its
    items (a frozenset), and the tuples, lists and dicts among them."""
    if isinstance(a, Tensor):
        return [a]
    if (
        depth == 0
        or isinstance(a, str | bytes | int | float | complex | type | np.generic | types.ModuleType)
        or callable(a)
    ):
        return []
    if isinstance(a, tuple | list | set | frozenset):
        items: Iterable[Any] = a
    elif isinstance(a, dict):
        items = a.values()
    else:
        slots = [n for c in type(a).__mro__ for n in vars(c).get("__slots__", ())]
        items = [*getattr(a, "__dict__", {}).values(), *(getattr(a, n, None) for n in slots)]
    return [t for v in items for t in _held_tensors(v, depth - 1)]


def _value_key(a: Any) -> Any:
    """A non-tensor argument as a key: typed at every level (``(2,)`` and ``(2.0,)``
    make different constants), floats by their bits (``-0.0`` is not ``0.0``, a NaN
    equals itself)."""
    ta = type(a)
    if ta is float:
        return (float, a.hex())
    if ta is complex:
        return (complex, a.real.hex(), a.imag.hex())
    if isinstance(a, np.floating | np.complexfloating):  # NumPy scalars, by their bytes
        return (ta, a.tobytes())
    if isinstance(a, float | complex):  # other subclasses
        return (ta, complex(a).real.hex(), complex(a).imag.hex())
    return (ta, a)


def _result_template(rec: _Recorder, out: Any, who: Any) -> tuple[Any, Any]:
    """The step's result as a template (tensors -> their arrays' refs) and as the
    graph-free tensors handed back now."""
    if isinstance(out, Tensor):
        data = out.data
        tmpl = _TensorOut(_state_template(rec, data), out._backend)
        return tmpl, Tensor._make(_real(data), out._backend, None)
    if type(out) in (tuple, list):
        pairs = [_result_template(rec, o, who) for o in out]
        return type(out)(p[0] for p in pairs), type(out)(p[1] for p in pairs)
    if type(out) is dict:
        pairs_d = {k: _result_template(rec, v, who) for k, v in out.items()}
        return {k: p[0] for k, p in pairs_d.items()}, {k: p[1] for k, p in pairs_d.items()}
    if out is None:
        return None, None
    if _is_array(out):  # a backend array (w.grad), handed back as one
        return _TensorOut(_state_template(rec, out), None), _real(out)
    raise CaptureError(
        f"{who!r}: the step returned {type(out).__name__}; a captured step returns Tensors "
        f"or backend arrays (or None, or tuples, lists and dicts of them): a number computed "
        f"in the step would be frozen at its first value. Return the tensor and convert it "
        f"after the call"
    )


def _detached(out: Any) -> Any:
    """An eagerly computed result as the replay gives it: tensors without graph."""
    if isinstance(out, Tensor):
        return Tensor._make(out.data, out._backend, None)
    if type(out) in (tuple, list):
        return type(out)(_detached(o) for o in out)
    if type(out) is dict:
        return {k: _detached(v) for k, v in out.items()}
    return out


def _alive(rec: _Recorder) -> list[_Traced]:
    """The traced arrays of ``rec`` that something still references."""
    out = []
    for w in rec.proxies:
        t = w()
        if t is not None:
            out.append(t)
    return out


def _put_back(holder: Any, t: _Traced) -> bool:
    """Replace ``t`` by its real array in a list, a dict, an object's attributes or a
    closure cell; False for any other holder (a tuple cannot be changed)."""
    if type(holder) is list:
        holder[:] = [t.value if x is t else x for x in holder]
    elif type(holder) is dict:
        holder.update({k: t.value for k, v in holder.items() if v is t})
    elif isinstance(holder, types.CellType):
        holder.cell_contents = t.value
    elif hasattr(holder, "__dict__") and any(v is t for v in vars(holder).values()):
        # an object's attribute (Python 3.11+ reports the object, not its dict)
        for k, v in list(vars(holder).items()):
            if v is t:
                setattr(holder, k, t.value)
    else:
        return False
    return True


def _release(rec: _Recorder) -> list[str]:
    """End a recording: a traced array still held after it is a leftover. Tensors
    holding one get the real array back; returns why each leftover makes the recording
    wrong (something outside the step, a tensor that is not a parameter or a list, kept
    a value of the step, and the replay would not update it).

    The real array takes a leftover's place where it is kept in a Tensor, a list, a
    dict (an object's attributes) or a closure cell. A constant of the recording (made
    by calls that read only constants, as a causal mask a module builds on its first
    call and keeps) is no such wrong value: every replay would make it the same again."""
    alive = _alive(rec)
    for t in alive:
        t._rec = None
    if not alive:
        return []
    gc.collect()
    alive = _alive(rec)
    problems: list[str] = []
    #: tuples keeping arrays: a kept tensor's graph does (its nodes' saved arrays), so
    #: they are reported only where no kept tensor explains them
    tuples: list[str] = []
    #: kept tensors without a graph, reported where no kept graph explains them
    graphless: list[str] = []
    for t in alive:
        for holder in gc.get_referrers(t):
            if holder is alive or isinstance(holder, types.FrameType):
                continue
            if isinstance(holder, Tensor):
                label = f" {holder.name!r}" if holder.name else ""
                if holder._grad is t:
                    holder._grad = t.value
                    problems.append(
                        f"a tensor{label} of shape {tuple(t.value.shape)} got a gradient in "
                        f"the step but is not a parameter of the capture: give its optimizer "
                        f"to capture(optimizer=...) or the tensor to capture(params=[...])"
                    )
                if holder.data is t:
                    holder.data = t.value
                    if not t.const:  # (a kept tensor's graph keeps those it was made of)
                        (problems if holder._node is not None else graphless).append(
                            f"a tensor{label} of shape {tuple(t.value.shape)} computed in "
                            f"the step is kept outside it (in a list, an attribute, a "
                            f"global: history.append(loss)?): the replay would not update "
                            f"it; return it from the step instead, and keep it after the call"
                        )
            elif not (_put_back(holder, t) and t.const):
                (tuples if type(holder) is tuple else problems).append(
                    f"a {type(holder).__name__} outside the step keeps an array of shape "
                    f"{tuple(t.value.shape)} computed in it: the replay would not update it; "
                    f"return it from the step instead (an optimizer's state? give the "
                    f"optimizer to capture(optimizer=...))"
                )
    if not problems:
        problems = graphless or tuples
    return list(dict.fromkeys(problems))


def _watching_apply(rec: _Recorder, apply: Callable[..., Any]) -> Callable[..., Any]:
    """The registry's ``apply`` while recording: the arrays of the tensors an op reads
    that are no traced arrays (constants: a tensor that is no argument nor parameter)
    are noted, so that one being trained is found (``W * c`` reads it through an
    operator that no namespace call sees)."""

    def watched(op: Any, args: Any, params: Any) -> Any:
        if threading.get_ident() == rec.thread:
            for a in args:
                if isinstance(a, Tensor) and type(a.data) is not _Traced:
                    rec.raw[id(a.data)] = a.data
                    if a._requires_grad and a._node is None:  # (only those: no temporaries)
                        rec.read[id(a)] = a
        return apply(op, args, params)

    return watched


def _bases(a: Any) -> Iterator[Any]:
    """The arrays ``a`` is a view of (NumPy's ``base``, torch's ``_base``, through
    array-api-strict's wrapper)."""
    inner = getattr(a, "_array", None)
    if isinstance(inner, np.ndarray):
        yield inner
        a = inner
    seen = 0
    while seen < 8:
        a = a.base if isinstance(a, np.ndarray) else getattr(a, "_base", None)
        if a is None:
            return
        yield a
        seen += 1


def _trained_constants(rec: _Recorder, params: list[Tensor]) -> list[str]:
    """The leaf tensors that require grad whose arrays the recording read as constants
    (described): tensors being trained, whose values a replay would freeze. The tensors
    ops read are known (``rec.read``); an array read otherwise (``xp.matmul(x.data,
    w.data)`` in the step) is looked up among the tensors that hold it, as are the arrays
    the constants are views of (``W[:T]``, ``W.T``)."""
    given = {id(p) for p in params}

    def trained(t: Tensor) -> bool:
        return t._requires_grad and t._node is None and id(t) not in given

    found = {id(t): t for t in rec.read.values() if trained(t)}
    # another tensor may hold an array an op read through a tensor that is no leaf
    # requiring grad (x @ w.detach(): w's array); and the arrays they view
    seen = {id(t.data) for t in found.values()}
    arrays = {k: a for k, a in rec.raw.items() if k not in seen}
    for a in list(arrays.values()):
        for base in _bases(a):
            if id(base) not in seen:
                arrays[id(base)] = base
    if arrays:
        for holder in gc.get_referrers(*arrays.values()):
            if isinstance(holder, Tensor) and id(holder.data) in arrays and trained(holder):
                found[id(holder)] = holder
    return [
        (f"{t.name!r}, " if t.name else "") + f"shape {t.shape}, dtype {t.dtype}"
        for t in found.values()
    ]


def capture(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    optimizer: Any = None,
    params: Iterable[Tensor] = (),
    cuda_graphs: bool = True,
    max_recordings: int = 8,
) -> Any:
    """Record a training step once, then replay it without building the graph again.

    ``step = capture(train_step, optimizer=opt)`` returns a callable used like
    ``train_step``. Its first call (and the first with a new signature: other input
    shapes or dtypes, other non-tensor arguments, another set of parameters, ``.grad``
    set or not, grad mode) runs the step eagerly while recording the backend array calls
    it makes; later calls replay those calls on the new inputs, call the optimizer's
    real ``step()`` where the step did, and leave the parameters' ``.data`` and
    ``.grad`` as the eager step would have, to the bit on the CPU. It returns what the
    step returns, with every tensor detached from any graph.

    Parameters
    ----------
    fn : callable
        The step: takes Tensors (that do not require grad) and hashable values, and
        returns Tensors (or None, or tuples, lists and dicts of them). It may zero
        gradients, call ``backward()`` and the optimizer's ``step()``.
    optimizer : Optimizer or sequence of them, optional
        The optimizers the step calls ``step()`` on; their parameters are the tensors
        whose ``.data`` and ``.grad`` the replay reads and writes.
    params : iterable of Tensor, optional
        More such tensors (trained by hand in the step, or read while others update
        them). Any other tensor the step reads is a constant of the recording.
    cuda_graphs : bool
        On CUDA (torch CUDA tensors, CuPy), replay each stretch of calls as a CUDA graph.
    max_recordings : int
        Recordings kept (one per signature); the oldest is dropped beyond that.

    Raises
    ------
    CaptureError
        While recording, for what a replay could not repeat: a host read of a value of
        the step (``float(loss)``, ``loss.item()``, ``print``), a data-dependent output
        shape, random draws, a tensor that gets a gradient but is not a parameter, a
        value kept outside the step.

    Examples
    --------
    >>> import minitorch
    >>> w = minitorch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = minitorch.optim.SGD([w], lr=0.1)
    >>> def train_step(x):
    ...     loss = ((w * x).sum() - 1.0) ** 2
    ...     loss.backward()
    ...     opt.step()
    ...     opt.zero_grad()
    ...     return loss
    >>> step = minitorch.capture(train_step, optimizer=opt)
    >>> x = minitorch.tensor([0.5, 0.25])
    >>> losses = [float(step(x)) for _ in range(3)]  # records, then replays twice
    >>> step.stats
    {'records': 1, 'replays': 2, 'fallbacks': 0}
    >>> w.numpy().round(4)  # three SGD steps, as eager training takes them
    array([ 1.2816, -1.8592], dtype=float32)
    """
    opts: list[Any]
    if optimizer is None:
        opts = []
    elif isinstance(optimizer, list | tuple):
        opts = list(optimizer)
    else:
        opts = [optimizer]
    plist = list(params)
    if (
        isinstance(max_recordings, bool)
        or not isinstance(max_recordings, int)
        or max_recordings < 1
    ):
        raise ValueError(f"capture: max_recordings must be an int >= 1, got {max_recordings!r}")

    def decorate(f: Callable[..., Any]) -> Captured:
        if not callable(f):
            raise TypeError(f"capture: expected a step function, got {type(f).__name__}")
        return Captured(f, opts, plist, bool(cuda_graphs), max_recordings)

    return decorate if fn is None else decorate(fn)
