"""From a recording to a replay: the program reduced (calls nothing reads dropped,
guards moved before the optimizer's step and their calls to the start), NumPy's reuse
of dying arrays, and the Python source of the replay, which ``exec`` compiles (on CUDA
with each stretch of calls a CUDA graph)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np

from .._cuda_graphs import Graphs
from ..tensor import Tensor
from ._ir import (
    _INPLACE_SYMS,
    _Call,
    _Draw,
    _Early,
    _Guard,
    _GuardFailed,
    _Host,
    _Instr,
    _outs,
    _Ref,
    _refs,
    _template_items,
)
from ._trace import _copy_of, _is_array, _Recorder, _shares_memory


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
        #: the generators the replay draws from (made before the step), which a
        #: fallback to the eager step puts back where the replay found them
        self.generators: list[Any] = list(rec.generators)
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
        at: list[int] = []  # their indices in kept (a draw met in between is not among them)
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
                for k, c in zip(at, segment, strict=True):
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
            at.clear()

        for i, ins in enumerate(kept):
            if type(ins) is _Call and not ins.effect:
                if not segment:
                    seg_start = i
                segment.append(ins)
                at.append(i)
                continue
            if type(ins) is _Draw:
                # drawn again (it reads nothing of the program: before the pending
                # stretch, so that on CUDA it is an input of the graph, copied into its
                # buffers at each launch as the step's arguments are)
                lines.append(f"v{ins.slot} = {src.name(ins.draw, 'D')}()  # {ins.who}: drawn")
                dels([ins.slot] if ins.slot not in last else [])
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
        # ARGS: the call's Tensor arguments, for those the step returns as they are
        header = f"def replay({', '.join(['ARGS', *(f'v{s}' for s in arg_slots)])}):"
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
        elif type(ins) is _Draw:
            made[ins.slot] = i
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
    the calls before it is left as it was: nothing would run in between; so is one that
    reads a random draw (the draws keep their order)."""
    first = next(
        (
            i
            for i, ins in enumerate(kept)
            if type(ins) is _Host
            or (type(ins) is _Call and (ins.effect or ins.op in _INPLACE_SYMS))
        ),
        len(kept),
    )
    made: dict[int, int] = {}  # slot -> the call (or draw) before ``first`` that makes it
    moved: set[int] = set()
    early: list[_Instr] = []
    slots: set[int] = set()  # the guards' slots read early
    for i in range(first):
        ins = kept[i]
        if type(ins) is _Call:
            made.update((s, i) for s in _outs(ins.outs))
            continue
        if type(ins) is _Draw:
            made[ins.slot] = i
            continue
        if type(ins) is not _Guard or ins.slot in slots:  # a value read twice: once
            continue
        need: set[int] = set()
        todo = [ins.slot]
        while todo:
            j = made.get(todo.pop())
            if j is not None and j not in need:
                need.add(j)
                todo.extend(_instr_reads(kept[j]))
        if any(type(kept[j]) is _Draw for j in need):
            continue
        taken = need | moved
        if any(type(kept[j]) is _Call and j not in taken for j in range(i)):
            moved |= need
            early.append(_Early(ins.slot))
            slots.add(ins.slot)
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
    made |= {ins.slot for ins in kept if type(ins) is _Draw}  # a fresh array at each draw
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
    if type(ins) is _Draw:
        return []
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


class _ArgOut:
    """A Tensor argument the step returned as it is: the call's own argument (``index``
    among its Tensor arguments, in the order of ``_tensors_in``) is handed back itself,
    as eagerly."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _render_result(src: _Source, r: Any, copy: dict[int, Callable[[Any], Any]]) -> str:
    tr = type(r)
    src.names["TM"] = Tensor._make
    if tr is _ArgOut:
        return f"ARGS[{r.index}]"
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
