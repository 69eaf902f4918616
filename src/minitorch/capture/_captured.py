""":func:`capture` and :class:`Captured`: what a call records or replays (its key),
how a recording runs, and what a failed replay does (the eager step, or an error)."""

from __future__ import annotations

import contextlib
import functools
import gc
import pickle
import random
import re
import sys
import threading
import types
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from .. import _grad_mode, creation
from .._cuda_graphs import graph_runner
from ..creation import Generator, default_generator, live_generators
from ..errors import CaptureError, OpError
from ..ops import _registry
from ..tensor import Tensor
from ._ir import _Draw, _GuardFailed, _Host, _Ref
from ._program import _ArgOut, _Program, _replay_line, _segment_call, _TensorOut
from ._trace import _defer_to_traced, _is_array, _Recorder, _swap_namespace, _Traced


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
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        params: list[Tensor],
        tensors: list[Tensor],
    ) -> Any:
        """The call's signature (the recording's key); its Tensor arguments are appended
        to ``tensors``, in the order of :func:`_tensors_in`."""
        parts: list[Any] = [_grad_mode._state.enabled]
        for a in args:
            parts.append(_arg_key(a, tensors))
        for k, v in kwargs.items():
            parts.append((k, _arg_key(v, tensors)))
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
        tensors: list[Tensor] = []
        key = self._key(args, kwargs, params, tensors)
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
        # where the generators it draws from stand: an eager run instead of the replay
        # must draw from there again
        states = [(g.numpy, g.numpy.bit_generator.state) for g in prog.generators]
        try:
            try:
                with on_device:
                    out = prog.run(tensors, *[t.data for t in tensors])
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
            return self._fallback(prog, args, kwargs, states)
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
            out = self._fallback(prog, args, kwargs, states)
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

    def _fallback(
        self,
        prog: _Program,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        states: list[tuple[np.random.Generator, Any]],
    ) -> Any:
        """Run the step eagerly instead of the replay (nothing has changed yet but the
        generators the replay drew from: ``states`` puts them back)."""
        for rng, state in states:
            rng.bit_generator.state = state
        prog.fallbacks += 1
        self.stats["fallbacks"] += 1
        self._warn_fallbacks(prog)
        kept = [*self._all_params(), *(a for _, a in _tensors_in(args, kwargs))]
        return _detached(self.fn(*args, **kwargs), kept)

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
        rec = _Recorder(Captured._trace.__code__)
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
        #: id -> (a generator made before the step, its state after the step's last draw)
        expected = {id(g): (g, g.get_state()) for g in live_generators()}
        host_rngs = _host_rng_states()
        made: list[weakref.ref[Generator]] = []  # the generators made in it that drew
        hypers = [_hyper_parameters(opt) for opt in self.optimizers]
        patched: list[tuple[Any, dict[str, Any]]] = []
        deferring: list[tuple[type, str, Any]] = []
        real_apply: Any = None
        real_draw: Any = None
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
            real_draw = vars(creation)["host_draw"]
            vars(creation)["host_draw"] = _recording_draw(
                rec, real_draw, expected, made, set(backends)
            )
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
            # handed back themselves, as eagerly: a parameter (a constant of the
            # template: later steps move it) and a Tensor argument (the call's own)
            kept: dict[int, tuple[Any, Any]] = {id(p): (p, p) for p in params}
            for i, ((_, a), (s, _)) in enumerate(
                zip(_tensors_in(args, kwargs), shadows, strict=True)
            ):
                kept[id(s)] = (_ArgOut(i), a)
            result, user = _result_template(rec, out, self, kept)
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
            if real_draw is not None:
                vars(creation)["host_draw"] = real_draw
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
        drawn = [name for name, (read, before) in host_rngs.items() if read() != before]
        if drawn:
            raise CaptureError(
                f"{self!r}: the step drew from {drawn[0]}: a replay does not run the step's "
                f"Python code, so it would repeat the numbers drawn while recording at every "
                f"call. Draw with minitorch.randn, rand, randint or dropout (from the default "
                f"generator, or generator=minitorch.Generator(seed) made before the first "
                f"call), which a replay draws again; or draw outside the step and pass the "
                f"numbers in as a Tensor argument"
            )
        moved = [gen for gen, state in expected.values() if gen.get_state() != state]
        if moved:
            raise CaptureError(f"{self!r}: {_reseeded(moved[0])}")
        alive = [gen for w in made if (gen := w()) is not None]
        if alive:
            raise CaptureError(
                f"{self!r}: the step drew from {alive[0]!r}, a generator it made and kept "
                f"(in an attribute, a global): a replay would repeat the numbers of the "
                f"recording where eager steps draw on from it. Make the generator before "
                f"the first call and pass it with generator=, or make a new one in each "
                f"call without keeping it"
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


#: a replay's call of an optimizer's real step()
_HOST_CALL = re.compile(r"H\d+\(\)")


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


def _arg_key(a: Any, tensors: list[Tensor]) -> Any:
    """A step's argument as part of the recording's key: a Tensor by its backend, shape,
    dtype and requires_grad (appended to ``tensors``); tuples, lists and dicts by their
    items; anything else by its value (:func:`_value_key`)."""
    if isinstance(a, Tensor):
        d = a.data
        tensors.append(a)
        return (Tensor, a._backend, d.shape, d.dtype, _layout(d), a._requires_grad)
    if type(a) is dict:
        return (dict, tuple((_value_key(k), _arg_key(v, tensors)) for k, v in a.items()))
    if isinstance(a, tuple | list):
        return (type(a), tuple(_arg_key(v, tensors) for v in a))
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


def _result_template(
    rec: _Recorder, out: Any, who: Any, kept: dict[int, tuple[Any, Any]]
) -> tuple[Any, Any]:
    """The step's result as a template (tensors -> their arrays' refs) and as the
    graph-free tensors handed back now. A tensor of ``kept`` (``id -> (template, what
    is handed back now)``) is handed back itself, as eagerly: a parameter (a constant of
    the template; later steps move it), a Tensor argument (the call's own, ``_ArgOut``)."""
    if id(out) in kept:
        return kept[id(out)]
    if isinstance(out, Tensor):
        data = out.data
        tmpl = _TensorOut(_state_template(rec, data), out._backend)
        return tmpl, Tensor._make(_real(data), out._backend, None)
    if type(out) in (tuple, list):
        pairs = [_result_template(rec, o, who, kept) for o in out]
        return type(out)(p[0] for p in pairs), type(out)(p[1] for p in pairs)
    if type(out) is dict:
        pairs_d = {k: _result_template(rec, v, who, kept) for k, v in out.items()}
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


def _detached(out: Any, kept: list[Tensor]) -> Any:
    """An eagerly computed result as the replay gives it: tensors without graph (one of
    ``kept``, a parameter or a Tensor argument, as it is)."""
    if any(out is t for t in kept):
        return out
    if isinstance(out, Tensor):
        return Tensor._make(out.data, out._backend, None)
    if type(out) in (tuple, list):
        return type(out)(_detached(o, kept) for o in out)
    if type(out) is dict:
        return {k: _detached(v, kept) for k, v in out.items()}
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
                    known = rec.constants.get(id(holder))
                    if not t.const and known is not None and known() is holder:
                        problems.append(
                            f"a tensor{label} of shape {tuple(t.value.shape)} that the step "
                            f"read as a constant (neither an argument nor a parameter) was "
                            f"given a new array computed in it (t[idx] = v or t += v under "
                            f"no_grad: a running statistic, an embedding table renormalized "
                            f"in place): the replay would read its old array again and not "
                            f"update it; give it to capture(params=[...])"
                        )
                    elif not t.const:  # (a kept tensor's graph keeps those it was made of)
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
                    rec.constants[id(a)] = weakref.ref(a)
                    if a._requires_grad and a._node is None:  # (only those: no temporaries)
                        rec.read[id(a)] = a
        return apply(op, args, params)

    return watched


def _recording_draw(
    rec: _Recorder,
    real: Callable[..., Any],
    expected: dict[int, tuple[Generator, Any]],
    made: list[weakref.ref[Generator]],
    namespaces: set[int],
) -> Callable[..., Any]:
    """``creation.host_draw`` while recording. A draw from a generator made before the
    step (in ``expected``) is taken for real and noted as a :class:`_Draw`, which every
    replay takes again; its array is traced, so the calls that read it are recorded. A
    draw from a generator made in the step is a constant of the recording (eager steps
    draw the same numbers from a fresh one), the generator noted in ``made`` (one still
    alive after the step is refused). ``expected`` follows each earlier generator's
    state after its draws: a change made otherwise (``manual_seed`` in the step) is
    refused. An optimizer's ``step()`` that draws runs for real at each replay: its
    draws are taken, not noted."""

    def draw(
        generator: Generator | None,
        who: str,
        sample: Callable[[np.random.Generator], Any],
        be: Any,
        dtype: Any,
        device: Any,
    ) -> Any:
        if threading.get_ident() != rec.thread:
            return real(generator, who, sample, be, dtype, device)
        gen = default_generator if generator is None else generator
        known = expected.get(id(gen))
        if known is not None and not rec.paused and gen.get_state() != known[1]:
            raise CaptureError(_reseeded(gen))
        rec.paused += 1  # (the upload may call the namespace: not recorded)
        try:
            arr = real(gen, who, sample, be, dtype, device)
        finally:
            rec.paused -= 1
        if known is None:
            made.append(weakref.ref(gen))
            return arr
        expected[id(gen)] = (gen, gen.get_state())
        if rec.paused:
            return arr
        if id(be.xp) not in namespaces:
            raise CaptureError(
                f"{who} inside a captured step drew on the {be.name} backend, which none of "
                f"the step's Tensor arguments and parameters is on: draw on theirs"
            )
        if not any(g is gen for g in rec.generators):
            rec.generators.append(gen)
        t = rec.new(arr)
        again = functools.partial(real, gen, who, sample, be, dtype, device)
        rec.instrs.append(_Draw(again, t.slot, who))
        return t

    return draw


def _numpy_global_state() -> bytes:
    return pickle.dumps(np.random.get_state())  # (it holds an array: compared as bytes)


def _host_rng_states() -> dict[str, tuple[Callable[[], Any], Any]]:
    """The process-wide generators a step can draw from without minitorch, each
    with what reads its state and that state now: NumPy's global one (``np.random.rand``,
    ``np.random.shuffle``), Python's ``random`` and, once torch is imported, torch's
    default CPU generator (``torch.randn``). A step that moves one drew numbers that
    would be constants of the recording. (A NumPy ``Generator`` the step makes, and
    the generators of GPU libraries, are not followed.)"""
    readers: dict[str, Callable[[], Any]] = {
        "NumPy's global generator (np.random.rand, randn, shuffle, ...)": _numpy_global_state,
        "Python's random module (random.random, shuffle, ...)": random.getstate,
    }
    torch = sys.modules.get("torch")
    gen = getattr(torch, "default_generator", None)
    if gen is not None:
        readers["torch's default generator (torch.randn, rand, ...)"] = lambda: bytes(
            gen.get_state().numpy()
        )
    return {name: (read, read()) for name, read in readers.items()}


def _reseeded(g: Generator) -> str:
    which = "the default generator" if g is default_generator else f"{g!r}, made before the step"
    return (
        f"the step changed the state of {which} other than by drawing from it "
        f"(manual_seed, set_state, a draw from its .numpy generator): a replay takes the "
        f"step's draws again, from where the generator stands, but would not do that. "
        f"Seed or set the generator between calls"
    )


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
        shape, a generator reseeded in the step, a tensor that gets a gradient but is
        not a parameter, a value kept outside the step. Random draws are no such thing:
        each replay takes them again, from the same generators in the same order.

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
