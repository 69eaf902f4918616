"""The CUDA graph runners of :func:`minitorch.capture`: each stretch of a replay's
calls between two optimizer steps or guards is captured once into a CUDA graph
(``torch.cuda.CUDAGraph`` for torch CUDA tensors, stream capture into a
``cupy.cuda.Graph`` for CuPy) and then launched with its input buffers refreshed.

This is all of minitorch's code that runs only on a GPU; torch and CuPy are imported
only when a replay's arrays are theirs. On the CPU, ``tests/test_capture.py`` runs the
same program with a runner that behaves as a graph does (static buffers rewritten at
every launch); the ``gpu``-marked tests run these classes on a CUDA GPU.
"""

from __future__ import annotations

import contextlib
import warnings
import weakref
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from typing import Any, ClassVar, Protocol

#: the arrays of one program handed on uncopied in a graph's memory (its next launch
#: rewrites them), by id: the graphs' outputs not copied out, and the views of them that
#: stretches run eagerly hand on (each gone from here once nothing holds it)
Lent = MutableMapping[int, Any]


def lent_arrays() -> Lent:
    """An empty :data:`Lent`, whose entries go with their arrays."""
    return weakref.WeakValueDictionary()


def _remember(lent: Lent, a: Any) -> None:
    # a NumPy scalar (emulated graphs) takes no weak reference: it is its own immutable value
    with contextlib.suppress(TypeError):
        lent[id(a)] = a


class Graphs(Protocol):
    """What a replay on CUDA arrays is handed: ``graphs(fn, keep)`` makes the runner of
    one stretch; ``graphs.read_early(a)`` starts copying ``a`` (a guard's value) to the
    host and returns what waits for that copy alone and gives the copy."""

    def __call__(self, fn: Callable[..., tuple[Any, ...]], keep: tuple[bool, ...]) -> Any: ...

    def read_early(self, a: Any) -> Callable[[], Any]: ...


def _waiting(done: Any, host: Any) -> Callable[[], Any]:
    """What an early host read returns: wait for its copy's event ``done`` (not for the
    calls queued after it), then hand over the pinned copy ``host``."""

    def wait() -> Any:
        done.synchronize()
        return host

    return wait


class GraphRunner:
    """What the CUDA graph runners share: the stretch ``fn``; ``keep``, which of its
    outputs outlive the replay (copied out of the graph's memory, which the next launch
    rewrites); ``lib``, the array library (torch, cupy); ``lent``, the arrays of one
    program handed on uncopied (:data:`Lent`); and ``_run``, the stretch run eagerly
    where a graph cannot hold it."""

    def __init__(
        self, fn: Callable[..., tuple[Any, ...]], keep: tuple[bool, ...], lib: Any, lent: Lent
    ) -> None:
        self.fn, self.keep, self.lib, self.lent = fn, keep, lib, lent
        self.graph: Any = None
        self.eager = False
        self.static_in: list[Any] = []
        self.static_out: tuple[Any, ...] = ()

    def _lend(self) -> None:
        """Record the graph's outputs handed on uncopied (once, after its capture)."""
        for o, k in zip(self.static_out, self.keep, strict=True):
            if not k:
                _remember(self.lent, o)

    def holds(self, a: Any) -> bool:
        """Whether ``a`` shares memory with an output of this graph handed on uncopied
        (which its next launch rewrites)."""
        return any(
            self._shares(a, o) for o, k in zip(self.static_out, self.keep, strict=False) if not k
        )

    def _run(self, ins: tuple[Any, ...]) -> tuple[Any, ...]:
        return unshared(self.fn(*ins), ins, self.keep, self.lent, self._shares, self._copy)

    def _shares(self, a: Any, b: Any) -> bool:
        raise NotImplementedError

    def _copy(self, a: Any) -> Any:
        raise NotImplementedError


class TorchGraph(GraphRunner):
    """One stretch of calls replayed as a ``torch.cuda.CUDAGraph`` (tested where the
    suite runs on a CUDA GPU), as PyTorch's recipe says: a warm-up on a side stream,
    capture on the inputs' device, static input buffers refreshed before each replay,
    and the outputs ``keep`` marks (those that outlive the replay) copied out of the
    graph's own buffers, which the next replay overwrites; the others are handed on as
    they are, their ids added to ``lent``. A stretch that reads or makes a CPU tensor
    runs eagerly: a graph would replay none of its CPU work. So does one that
    synchronises with the host (``torch.cuda.set_sync_debug_mode("error")`` during the
    warm-up says so, e.g. a cuSOLVER call that checks its result) or that the capture
    refuses."""

    def __call__(self, *ins: Any) -> tuple[Any, ...]:
        torch = self.lib
        if self.eager or not all(isinstance(x, torch.Tensor) and x.is_cuda for x in ins):
            return self._run(ins)
        if self.graph is None:
            with torch.cuda.device(ins[0].device if ins else None):
                self.static_in = [x.clone() for x in ins]
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                mode = torch.cuda.get_sync_debug_mode()
                with warnings.catch_warnings():  # "a prototype feature": said once per call
                    warnings.filterwarnings("ignore", "Synchronization debug mode")
                    torch.cuda.set_sync_debug_mode("error")
                try:
                    with torch.cuda.stream(side):  # warm-up: the allocator, lazy kernels
                        out: tuple[Any, ...] | None = self.fn(*self.static_in)
                except Exception:  # a host synchronisation (or an error eager repeats)
                    out = None
                finally:
                    torch.cuda.set_sync_debug_mode(mode)
                torch.cuda.current_stream().wait_stream(side)
                if out is None or not all(isinstance(o, torch.Tensor) and o.is_cuda for o in out):
                    return self._eager(ins)
                graph = torch.cuda.CUDAGraph()
                current = torch.cuda.current_stream()
                try:
                    # on the warmed-up side stream, which is on the inputs' device (torch's
                    # own capture stream is made once, on the device current at the first
                    # capture of the process)
                    with torch.cuda.graph(graph, stream=side):
                        self.static_out = self.fn(*self.static_in)
                except Exception:  # what the capture refuses runs eagerly
                    return self._eager(ins)
                finally:  # a capture that failed at its end leaves the side stream current
                    torch.cuda.set_stream(current)
                self.graph = graph
                self._lend()
        copy_all(torch, self.static_in, ins)
        self.graph.replay()
        # a copy of what outlives this replay (the next one rewrites the graph's memory)
        pairs = list(zip(self.static_out, self.keep, strict=True))
        res = [torch.empty_like(o) if k else o for o, k in pairs]
        copy_all(
            torch,
            [a for a, (_, k) in zip(res, pairs, strict=True) if k],
            [o for o, k in pairs if k],
        )
        return tuple(res)

    @staticmethod
    def read_early(torch: Any, a: Any) -> Callable[[], Any]:
        """Copy ``a`` into pinned host memory on its device's current stream, and return
        what waits for that copy's event (not for the calls queued after it)."""
        if not (isinstance(a, torch.Tensor) and a.is_cuda):
            return lambda: a
        host = torch.empty(a.shape, dtype=a.dtype, pin_memory=True)
        stream = torch.cuda.current_stream(a.device)
        host.copy_(a, non_blocking=True)  # on the current stream of a's device
        done = torch.cuda.Event()
        done.record(stream)

        return _waiting(done, host)

    def _eager(self, ins: tuple[Any, ...]) -> tuple[Any, ...]:
        self.eager, self.static_in, self.static_out = True, [], ()
        return self._run(ins)

    def _shares(self, a: Any, b: Any) -> bool:
        return bool(a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())

    def _copy(self, a: Any) -> Any:
        return a.clone()


def unshared(
    out: tuple[Any, ...],
    ins: tuple[Any, ...],
    keep: tuple[bool, ...],
    lent: Lent,
    shares: Callable[[Any, Any], bool],
    copy: Callable[[Any], Any],
) -> tuple[Any, ...]:
    """The outputs of a stretch run eagerly, each that shares memory with an input in
    ``lent`` (a view of a graph's memory, which that graph's next launch rewrites) copied
    if it outlives the replay (``keep``), and otherwise lent in turn: a later stretch
    that keeps a view of it copies that one."""
    lent_in = [x for x in ins if id(x) in lent] if lent else []
    if not lent_in:
        return out
    res = []
    for o, k in zip(out, keep, strict=True):
        if any(shares(o, x) for x in lent_in):
            if k:
                o = copy(o)
            else:
                _remember(lent, o)
        res.append(o)
    return tuple(res)


def copy_all(torch: Any, dst: list[Any], src: Sequence[Any]) -> None:
    """``d.copy_(s)`` for each pair, in one launch where torch has ``_foreach_copy_``."""
    if not dst:
        return
    foreach = getattr(torch, "_foreach_copy_", None)
    if foreach is not None:
        foreach(dst, list(src))
        return
    for d, s in zip(dst, src, strict=True):
        d.copy_(s)


class CupyGraph(GraphRunner):
    """One stretch of calls replayed as a ``cupy.cuda.Graph`` made by stream capture
    (tested where the suite runs on a CUDA GPU). What the captured calls allocate comes
    from a memory pool of the graph's own, kept with it: in CuPy's shared pool the
    blocks freed during capture would go back to other arrays (or to the driver on an
    out-of-memory retry) while the graph still writes them. A stretch the capture
    refuses runs eagerly: CuPy refuses every cuBLAS call during a capture (its issue
    #6290), so a stretch with a matrix product is never a graph on CuPy."""

    pool: Any = None  # the graph's own memory pool, once captured
    #: the early host reads' events and pinned buffers whose copies may be in flight
    in_flight: ClassVar[list[tuple[Any, Any]]] = []
    stream: Any = None  # the stream it was captured on

    def __call__(self, *ins: Any) -> tuple[Any, ...]:
        cupy = self.lib
        if self.eager:
            return self._run(ins)
        if self.graph is None:
            with ins[0].device if ins else cupy.cuda.Device():  # capture on their device
                self.static_in = [x.copy() for x in ins]
                self.fn(*self.static_in)  # warm-up: kernel compilation, library handles
                self.pool = cupy.cuda.MemoryPool()
                self.stream = cupy.cuda.Stream(non_blocking=True)
                try:
                    with self.stream, cupy.cuda.using_allocator(self.pool.malloc):
                        self.stream.begin_capture()
                        try:
                            out = self.fn(*self.static_in)
                        finally:  # a failed capture must still end it
                            graph = self.stream.end_capture()
                except Exception:  # refused (cuBLAS): this stretch runs eagerly
                    self.eager, self.static_in, self.pool, self.stream = True, [], None, None
                    return self._run(ins)
                self.static_out, self.graph = out, graph
                self._lend()
        for buf, x in zip(self.static_in, ins, strict=True):
            cupy.copyto(buf, x)
        self.graph.launch()  # on the current stream, after the copies
        # a copy of what outlives this replay (the next one rewrites the graph's memory)
        return tuple(o.copy() if k else o for o, k in zip(self.static_out, self.keep, strict=True))

    @staticmethod
    def read_early(cupy: Any, a: Any) -> Callable[[], Any]:
        """Copy ``a`` into pinned host memory on the current stream of its device, and
        return what waits for that copy's event (not for the calls queued after it)."""
        if not isinstance(a, cupy.ndarray):
            return lambda: a
        import cupyx

        with a.device:
            host = cupyx.empty_pinned(a.shape, a.dtype)
            stream = cupy.cuda.get_current_stream()
            cupy.asnumpy(a, stream=stream, out=host, blocking=False)
            done = cupy.cuda.Event(disable_timing=True)
            done.record(stream)
        # CuPy's pinned pool would hand out a buffer dropped before its copy ended (a
        # replay raising between the read's start and its wait): held until it ends
        CupyGraph.in_flight = [(e, h) for e, h in CupyGraph.in_flight if not e.done]
        CupyGraph.in_flight.append((done, host))

        return _waiting(done, host)

    def _shares(self, a: Any, b: Any) -> bool:
        return bool(self.lib.may_share_memory(a, b))

    def _copy(self, a: Any) -> Any:
        return a.copy()


class _Runners:
    """The :class:`Graphs` of one program: runners of class ``cls`` on ``lib`` sharing
    one :data:`Lent`, and ``cls.read_early``."""

    def __init__(self, cls: Any, lib: Any) -> None:
        self.cls, self.lib, self.lent = cls, lib, lent_arrays()

    def __call__(self, fn: Callable[..., tuple[Any, ...]], keep: tuple[bool, ...]) -> Any:
        return self.cls(fn, keep, self.lib, self.lent)

    def read_early(self, a: Any) -> Callable[[], Any]:
        return self.cls.read_early(self.lib, a)  # type: ignore[no-any-return]


def graph_runner(backends: Iterable[Any], arrays: Iterable[Any]) -> Graphs | None:
    """The CUDA graph runners for these arrays (None on the CPU)."""
    names = {be.name for be in backends}
    if names == {"cupy"}:
        import cupy

        return _Runners(CupyGraph, cupy)
    if names == {"torch"} and any(str(getattr(a, "device", "")).startswith("cuda") for a in arrays):
        import torch

        return _Runners(TorchGraph, torch)
    return None
