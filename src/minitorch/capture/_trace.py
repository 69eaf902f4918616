"""Recording a step: traced arrays (stand-ins that run every call for real and note it
as an instruction), the recorder that collects the program, the wrappers of the
namespace and of the array types' operators it installs, and the messages for what a
replay could not repeat."""

from __future__ import annotations

import operator
import sys
import threading
import types
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..errors import CaptureError
from ..tensor import Tensor
from ._ir import _BINARY, _Call, _Guard, _Instr, _Ref, _refs, _template_items

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
#: functions of minitorch's that read an array on the host for what the user wrote (by
#: module and name), as the user wrote it, and what to do
_CALLER_READS = {
    "minitorch.ops.indexing._host_index": (
        "indexing with a boolean mask, or with a Tensor key that is not gathered on the "
        "device (x[mask], x[None, idx], x[rows, :, cols])",
        "Index with integer Tensors side by side, with slices, ints or ... around them "
        "(x[idx], x[rows, cols], x[:, idx], x[idx, 1:]), or with "
        "minitorch.take(x, idx, axis=...), embedding or take_along_axis, which check the "
        "indices on the device and replay (a mask: where())",
    ),
}


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
        said = _CALLER_READS.get(f"{frame.f_globals.get('__name__')}.{code.co_name}")
        if said is not None and outer is None:  # a read minitorch makes for the user's call
            return said
        if code.co_filename == _TENSOR_FILE:
            outer = frame
        elif outer is not None:
            break
        elif (
            caller is None
            and code.co_filename.startswith(_PACKAGE)
            and not str(frame.f_globals.get("__name__")).startswith(f"{__package__}.")
            and frame.f_globals.get("__name__") != "minitorch.backend"
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


# ---------------------------------------------------------------- the recorder
class _Recorder:
    """Collects the instructions of one recording. ``outer``: the code of the capture's
    frame that runs the step (where a look up the stack for an optimizer stops)."""

    def __init__(self, outer: types.CodeType | None = None) -> None:
        self.outer = outer
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
        #: every tensor whose array an op read as a constant (one from outside the step
        #: that is neither an argument nor a parameter), by id
        self.constants: dict[int, weakref.ref[Tensor]] = {}
        #: id(parameter) -> how many times the real optimizer steps bumped its version
        self.host_bumps: dict[int, int] = {}
        #: the given optimizers and the code of their step() methods: the replay calls
        #: them, so they must never run on traced arrays (a step bound before would)
        self.optimizers: list[Any] = []
        self.step_codes: frozenset[Any] = frozenset()
        #: the generators made before the step that it drew from (each once, in order)
        self.generators: list[Any] = []

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
            # the result is an argument after the first: a positional out= (a NumPy
            # scalar is immutable, and np.True_ is every true 0-d result: no out=)
            written = any(a._version != v for a, v in versions) or any(
                out is a and not isinstance(a, np.generic) for a in _template_items(real_args[1:])
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
        while frame is not None and frame.f_code is not self.outer:
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


#: the module of minitorch's optimizers (not imported here: the same layer)
_OPTIM = "minitorch.optim"


def _is_optimizer(x: Any) -> bool:
    """An instance of :class:`minitorch.optim.Optimizer` (by its class's bases: that
    module is not imported here, it is of the same layer)."""
    return any(c.__name__ == "Optimizer" and c.__module__ == _OPTIM for c in type(x).__mro__)


# ---------------------------------------------------------------- swapped while recording
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
