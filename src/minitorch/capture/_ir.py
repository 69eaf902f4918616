"""The program a recording makes: its variables (:class:`_Ref`), its instructions (a
call, a guard, a guard's early host read, an optimizer's step, a random draw) and the
operators a call may name."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

#: the operators of the array types a call may be (``_Call.op``), by dunder name
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


class _Draw:
    """``slot = draw()``: a random draw (``creation.host_draw`` with its arguments bound:
    the generator, the NumPy sampling and its host-side post-processing, the upload),
    taken again at every replay, in the recorded order, so the generator's stream moves
    on as in eager steps. It reads no variable of the program."""

    __slots__ = ("draw", "slot", "who")

    def __init__(self, draw: Callable[[], Any], slot: int, who: str) -> None:
        self.draw, self.slot, self.who = draw, slot, who


_Instr = _Call | _Guard | _Early | _Host | _Draw


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
