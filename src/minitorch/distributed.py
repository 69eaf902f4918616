"""Data-parallel training on ``torch.distributed``: every rank holds the whole model,
trains on its own part of each global batch, and averages gradients before the step.

minitorch invents no networking of its own. PyTorch's ``torch.distributed`` moves the
bytes (Gloo between CPUs, NCCL between NVIDIA GPUs; ``torchrun`` starts the processes),
and this module hands it minitorch's gradients:

* Gradients are copied into flat buffers (below); a NumPy buffer reaches torch without
  another copy (``torch.from_numpy``), a torch buffer is a torch tensor, a CuPy buffer
  goes through DLPack both ways (no copy; each side's stream waits for the other's
  work); JAX and array-api-strict buffers take one host copy each way.
* Gradients are flattened into a few large buffers per dtype (``bucket_mb`` each, as
  PyTorch's ``DistributedDataParallel`` buckets them), so a step makes a handful of
  collectives, not one per parameter.
* With Gloo every collective fails with a :class:`~minitorch.errors.DistributedError`
  naming the call and the rank when a peer dies, raises or stays silent past the timeout,
  instead of hanging or leaving a bare traceback from inside the transport. NCCL
  queues its collectives and returns: there a lost peer makes NCCL's own watchdog abort
  the process after the timeout (PyTorch's behaviour), and only errors raised when a
  call is made (a CPU tensor, a wrong device) become a ``DistributedError``.

A training loop changes by three lines::

    import minitorch.distributed as dist

    dist.init_process_group()                      # reads torchrun's RANK, WORLD_SIZE...
    ddp = dist.DataParallel(model.parameters())    # same start on every rank
    for epoch in range(epochs):
        for idx in batches(dist.shard(len(data), seed=0, epoch=epoch)):
            loss = loss_fn(model(x[idx]), y[idx])
            loss.backward()
            ddp.all_reduce_gradients()             # mean over ranks, in .grad
            opt.step(); opt.zero_grad()

torch is an optional extra (``pip install 'minitorch[torch]'``): it is imported by the
first call here that needs it, never by ``import minitorch``.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import math
import os
import socket
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import array_api_compat
import numpy as np

from .backend import Backend, device_name, get_backend, set_backend
from .errors import DistributedError
from .tensor import Tensor

__all__ = [
    "DEFAULT_TIMEOUT",
    "DataParallel",
    "all_reduce_floats",
    "all_reduce_gradients",
    "backend_name",
    "barrier",
    "broadcast_parameters",
    "destroy_process_group",
    "free_port",
    "get_local_rank",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_initialized",
    "shard",
]

#: seconds a collective waits for the other ranks before it fails (``timeout=``)
DEFAULT_TIMEOUT = 60.0

_state: dict[str, float] = {"timeout": DEFAULT_TIMEOUT}


def _dist() -> Any:
    """``torch.distributed``, imported on first use (torch is an optional extra)."""
    try:
        import torch.distributed as tdist
    except ImportError as exc:
        raise ImportError(
            "minitorch.distributed runs on torch.distributed, and torch is not installed: "
            "pip install 'minitorch[torch]'"
        ) from exc
    return tdist


def _torch() -> Any:
    import torch

    return torch


def is_initialized() -> bool:
    """Whether :func:`init_process_group` has run in this process (False without torch).

    Asking does not import torch: no group exists before ``torch.distributed`` is."""
    tdist = sys.modules.get("torch.distributed")
    return bool(tdist is not None and tdist.is_available() and tdist.is_initialized())


def get_rank() -> int:
    """This process's rank, 0 to ``world_size - 1`` (0 before :func:`init_process_group`)."""
    return int(_dist().get_rank()) if is_initialized() else 0


def get_world_size() -> int:
    """The number of ranks (1 before :func:`init_process_group`)."""
    return int(_dist().get_world_size()) if is_initialized() else 1


def get_local_rank() -> int:
    """The rank among the processes on this machine: ``LOCAL_RANK`` as ``torchrun`` sets
    it, else the global rank."""
    return int(os.environ.get("LOCAL_RANK", get_rank()))


def _is_cuda(be: Backend) -> bool:
    return be.name == "cupy" or (be.name == "torch" and "cuda" in str(be.device))


def _env_int(name: str, given: int | None, default: int) -> int:
    if given is not None:
        return given
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise DistributedError(
            f"init_process_group: the environment variable {name}={text!r} is not an integer"
        ) from None


def free_port() -> int:
    """A TCP port on the loopback interface that was free a moment ago (for
    ``MASTER_PORT`` when every rank runs on this machine)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def init_process_group(
    backend: str | None = None,
    *,
    init_method: str | None = None,
    rank: int | None = None,
    world_size: int | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    """Join the process group: a thin pass-through to ``torch.distributed``.

    Parameters
    ----------
    backend : str, optional
        ``"gloo"`` or ``"nccl"``. Default: NCCL when minitorch's current backend works
        on a CUDA device (CuPy, or torch with device ``cuda``), else Gloo.
    init_method : str, optional
        Where the ranks meet, e.g. ``"tcp://10.0.0.1:29500"``. Default: ``MASTER_ADDR``
        (default ``127.0.0.1``) and ``MASTER_PORT`` from the environment, as ``torchrun``
        sets them.
    rank, world_size : int, optional
        Default: ``RANK`` and ``WORLD_SIZE`` from the environment (0 and 1 without them).
    timeout : float
        Seconds any collective (and the meeting itself) waits for the other ranks
        before it raises :class:`~minitorch.errors.DistributedError`.

    On a CUDA backend the process also moves minitorch's default device, torch's current
    device and (CuPy) CuPy's current device to ``cuda:LOCAL_RANK``: one process per GPU.
    Tensors made before stay where they are: build the model after this call.

    Examples
    --------
    >>> import minitorch.distributed as dist
    >>> dist.init_process_group(init_method=f"tcp://127.0.0.1:{dist.free_port()}",
    ...                         rank=0, world_size=1)
    >>> dist.get_rank(), dist.get_world_size()
    (0, 1)
    >>> dist.destroy_process_group()
    """
    tdist = _dist()
    if is_initialized():
        raise DistributedError(
            "init_process_group: this process already joined a group; call "
            "destroy_process_group() first"
        )
    if not (timeout > 0 and math.isfinite(timeout)):
        raise ValueError(
            f"init_process_group: timeout must be a positive number of seconds, got {timeout!r}"
        )
    r = _env_int("RANK", rank, 0)
    n = _env_int("WORLD_SIZE", world_size, 1)
    if not 0 <= r < n:
        raise DistributedError(
            f"init_process_group: rank {r} is not in 0..{n - 1} (world size {n}); set RANK "
            f"and WORLD_SIZE (torchrun does) or pass rank= and world_size="
        )
    be = get_backend()
    if _is_cuda(be):
        local = int(os.environ.get("LOCAL_RANK", r))
        be = set_backend(be.name, dtype=be.dtype, device=f"cuda:{local}", tf32=be.tf32)
        # torch's current device: NCCL's object collectives and barrier use it
        _torch().cuda.set_device(local)
        if be.name == "cupy":  # CuPy allocates and launches on its own current device
            be.library.cuda.Device(local).use()
    name = backend or ("nccl" if _is_cuda(be) else "gloo")
    if init_method is None:
        addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
        port = os.environ.get("MASTER_PORT")
        if port is None:
            if n > 1:
                raise DistributedError(
                    f"init_process_group: rank {r} of {n} does not know where to meet the "
                    f"others: set MASTER_ADDR and MASTER_PORT (torchrun does), or pass "
                    f"init_method='tcp://host:port'"
                )
            port = str(free_port())
        init_method = f"tcp://{addr}:{port}"
    try:
        tdist.init_process_group(
            name,
            init_method=init_method,
            rank=r,
            world_size=n,
            timeout=datetime.timedelta(seconds=timeout),
        )
    except Exception as exc:
        raise DistributedError(
            f"init_process_group: rank {r} of {n} could not join the group at "
            f"{init_method} with {name} within {timeout:g} s ({exc}); check that every "
            f"rank was started with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE"
        ) from exc
    _state["timeout"] = float(timeout)
    # leave the group on the way out, also after an error: an exit with the group still
    # up aborts in Gloo's threads instead of ending with the exit status
    atexit.register(destroy_process_group)


def destroy_process_group() -> None:
    """Leave the process group (nothing happens if this process is in none)."""
    if is_initialized():
        _dist().destroy_process_group()
        atexit.unregister(destroy_process_group)


def _require_group(who: str) -> None:
    if not is_initialized():
        raise DistributedError(f"{who}: no process group; call init_process_group() first")


@contextlib.contextmanager
def _collective(who: str) -> Iterator[Any]:
    """Run one collective; a transport failure becomes a DistributedError that names
    the call, this rank and the timeout."""
    _require_group(who)
    tdist = _dist()
    try:
        yield tdist
    except DistributedError:
        raise
    except Exception as exc:
        raise DistributedError(
            f"{who}: rank {get_rank()} of {get_world_size()} lost the other ranks, or the "
            f"transport refused its call "
            f"({type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}): "
            f"one of them died, raised, or did not answer within {_state['timeout']:g} s. "
            f"Every rank stops here; the first error is in the output of the rank that "
            f"failed."
        ) from exc


def backend_name() -> str:
    """The transport of this process's group (``"gloo"``, ``"nccl"``; ``""`` without one)."""
    return str(_dist().get_backend()) if is_initialized() else ""


def barrier() -> None:
    """Wait until every rank reaches this line."""
    with _collective("barrier") as tdist:
        if backend_name() == "nccl":  # on this rank's GPU, not a guess of torch's
            tdist.barrier(device_ids=[_torch().cuda.current_device()])
        else:
            tdist.barrier()


# ------------------------------------------------------------------- array transfer
def _to_torch(flat: Any, be: Backend) -> Any:
    """A 1-D torch tensor sharing ``flat``'s memory where the backend allows."""
    torch = _torch()
    if be.name == "numpy":
        return torch.from_numpy(flat)
    if be.name == "torch":
        return flat
    if be.name == "cupy":
        return torch.from_dlpack(flat)
    return torch.from_numpy(np.array(be.to_numpy(flat), copy=True))


def _from_torch(t: Any, flat: Any, be: Backend) -> Any:
    """The collective's result as ``be``'s array (``flat`` itself when they share memory;
    on CuPy a view of it through DLPack, which makes CuPy's stream wait for torch's)."""
    if be.name in ("numpy", "torch"):
        return flat
    if be.name == "cupy":
        return be.library.from_dlpack(t)
    return be.from_numpy(t.numpy(), flat.dtype, array_api_compat.device(flat))


def _buckets(ps: Sequence[Tensor], arrays: Sequence[Any], limit: float) -> list[list[int]]:
    """Indices of ``arrays`` (one per tensor of ``ps``) grouped by backend, dtype and
    device, in order, each group cut into buckets of at most ``limit`` bytes (a larger
    array has a bucket of its own)."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for i, (p, a) in enumerate(zip(ps, arrays, strict=True)):
        be = p._backend
        key = (be.name, be.dtype_name(a.dtype), str(array_api_compat.device(a)))
        groups.setdefault(key, []).append(i)
    out: list[list[int]] = []
    for (_, dtype, _), members in groups.items():
        itemsize = np.dtype(dtype).itemsize
        bucket: list[int] = []
        size = 0.0
        for i in members:
            nbytes = math.prod(arrays[i].shape) * itemsize
            if bucket and size + nbytes > limit:
                out.append(bucket)
                bucket, size = [], 0.0
            bucket.append(i)
            size += nbytes
        if bucket:
            out.append(bucket)
    return out


def _off_this_gpu(be: Backend, a: Any) -> str | None:
    """With NCCL, why ``a`` cannot be reduced: it is not on this rank's GPU (NCCL would
    refuse a CPU tensor in its own words, and two ranks on one GPU hang or fail)."""
    if backend_name() != "nccl":
        return None
    want = f"cuda:{_torch().cuda.current_device()}"
    got = device_name(be, array_api_compat.device(a))
    if got == want:
        return None
    return (
        f"rank {get_rank()} reduces over NCCL the arrays on its own GPU ({want}), but "
        f"parameters of backend {be.name} are on {got}. init_process_group() moved the "
        f"default device of new tensors to {want}: build the model after it, or move the "
        f"parameters with .to(device={want!r})"
    )


def _on_this_gpu(be: Backend, a: Any, who: str) -> None:
    why = _off_this_gpu(be, a)
    if why is not None:
        raise DistributedError(f"{who}: {why}")


def _flatten(be: Backend, arrays: Sequence[Any]) -> Any:
    """One new 1-D buffer holding ``arrays`` one after the other (always a copy)."""
    xp = be.xp
    return xp.concat([xp.reshape(a, (-1,)) for a in arrays])


def _split(be: Backend, flat: Any, shapes: Sequence[tuple[int, ...]]) -> list[Any]:
    xp = be.xp
    out, offset = [], 0
    for shape in shapes:
        n = math.prod(shape)
        out.append(xp.reshape(flat[offset : offset + n], shape))
        offset += n
    return out


def _params(params: Iterable[Tensor], who: str) -> list[Tensor]:
    out = list(params)
    for i, p in enumerate(out):
        if not isinstance(p, Tensor):
            raise TypeError(f"{who}: parameter {i} is a {type(p).__name__}, not a Tensor")
    return out


def _signature(params: Sequence[Tensor]) -> list[tuple[tuple[int, ...], str]]:
    return [(tuple(p.shape), p._backend.dtype_name(p.data.dtype)) for p in params]


def _check_same_parameters(params: Sequence[Tensor], who: str) -> None:
    """Raise on every rank, before any training, if the ranks' models differ or one of
    them holds parameters NCCL cannot reduce (off its GPU)."""
    mine = _signature(params)
    off = next(filter(None, (_off_this_gpu(p._backend, p.data) for p in params)), None)
    world = get_world_size()
    gathered: list[Any] = [None] * world
    with _collective(who) as tdist:
        tdist.all_gather_object(gathered, (mine, off))
    for _, off_r in gathered:
        if off_r is not None:  # on every rank, so that none waits for the others
            raise DistributedError(f"{who}: {off_r}")
    gathered = [theirs for theirs, _ in gathered]
    me = get_rank()
    for r, theirs in enumerate(gathered):
        if theirs == mine:
            continue
        if len(theirs) != len(mine):
            what = f"rank {me} has {len(mine)} parameters, rank {r} has {len(theirs)}"
        else:
            i = next(k for k, (a, b) in enumerate(zip(mine, theirs, strict=True)) if a != b)
            what = (
                f"parameter {i} is {mine[i][0]} {mine[i][1]} on rank {me} but "
                f"{theirs[i][0]} {theirs[i][1]} on rank {r}"
            )
        raise DistributedError(
            f"{who}: the ranks' models differ ({what}); every rank must build the same "
            f"model (same sizes, dtypes and parameter order) before training"
        )


def broadcast_parameters(params: Iterable[Tensor], src: int = 0) -> None:
    """Copy rank ``src``'s parameter values to every other rank (in place, through
    :meth:`Tensor.copy_` without recording a graph), so that all ranks start alike.

    First checks that every rank has the same parameter shapes and dtypes, and raises
    :class:`~minitorch.errors.DistributedError` on all of them if not.
    """
    ps = _params(params, "broadcast_parameters")
    _check_same_parameters(ps, "broadcast_parameters")
    if get_world_size() == 1:
        return
    me = get_rank()
    for bucket in _buckets(ps, [p.data for p in ps], 25 * 2**20):
        be = ps[bucket[0]]._backend
        flat = _flatten(be, [ps[i].data for i in bucket])
        t = _to_torch(flat, be)
        with _collective("broadcast_parameters") as tdist:
            tdist.broadcast(t, src=src)
        if me == src:
            continue
        values = _split(be, _from_torch(t, flat, be), [tuple(ps[i].shape) for i in bucket])
        for i, v in zip(bucket, values, strict=True):
            ps[i].data = v


def all_reduce_gradients(
    params: Iterable[Tensor], *, average: bool = True, bucket_mb: float = 25.0
) -> None:
    """Sum (``average=True``: average) every parameter's ``.grad`` over the ranks.

    Gradients are copied into a few flat buffers per dtype and device of at most
    ``bucket_mb`` MiB, reduced with one collective each, and written back to ``.grad``
    with their dtype, shape and device unchanged. A parameter that requires grad but
    has no gradient on this rank counts as zeros (so ranks whose shard skipped a
    parameter still take part in the same collectives).

    Examples
    --------
    >>> import minitorch, minitorch.distributed as dist
    >>> dist.init_process_group(init_method=f"tcp://127.0.0.1:{dist.free_port()}",
    ...                         rank=0, world_size=1)
    >>> w = minitorch.tensor([1.0, 2.0], requires_grad=True)
    >>> (w * w).sum().backward()
    >>> dist.all_reduce_gradients([w])     # one rank: the mean is its own gradient
    >>> w.grad
    array([2., 4.], dtype=float32)
    >>> dist.destroy_process_group()
    """
    if not bucket_mb > 0:
        raise ValueError(f"all_reduce_gradients: bucket_mb must be positive, got {bucket_mb}")
    ps = [p for p in _params(params, "all_reduce_gradients") if p.requires_grad]
    if not ps:
        return
    _require_group("all_reduce_gradients")
    world = get_world_size()
    grads = []
    for p in ps:
        g = p.grad
        if g is None:
            g = p._backend.xp.zeros(
                tuple(p.shape), dtype=p.data.dtype, device=array_api_compat.device(p.data)
            )
        grads.append(g)
    for bucket in _buckets(ps, grads, bucket_mb * 2**20):
        be = ps[bucket[0]]._backend
        _on_this_gpu(be, grads[bucket[0]], "all_reduce_gradients")
        flat = _flatten(be, [grads[i] for i in bucket])
        t = _to_torch(flat, be)
        with _collective("all_reduce_gradients") as tdist:
            tdist.all_reduce(t)
        if average and world > 1:
            t.div_(world)
        values = _split(be, _from_torch(t, flat, be), [tuple(ps[i].shape) for i in bucket])
        for i, v in zip(bucket, values, strict=True):
            ps[i].grad = v


def all_reduce_floats(values: Sequence[float], *, average: bool = False) -> list[float]:
    """Sum (or average) a few Python numbers over the ranks, in float64 (a loss, a count
    of correct answers); one small collective."""
    torch = _torch()
    t = torch.tensor([float(v) for v in values], dtype=torch.float64)
    if backend_name() == "nccl":  # NCCL reduces CUDA tensors only, whatever the backend
        t = t.to(f"cuda:{torch.cuda.current_device()}")
    with _collective("all_reduce_floats") as tdist:
        tdist.all_reduce(t)
    if average:
        t /= get_world_size()
    return [float(v) for v in t.cpu().tolist()]


class DataParallel:
    """Data parallelism for a list of parameters: the same start on every rank, and
    gradients averaged over the ranks before each optimizer step.

    Construction checks that every rank has the same parameter shapes and dtypes (a
    :class:`~minitorch.errors.DistributedError` on all ranks, before any training, if
    not) and broadcasts rank ``src``'s values. Call :meth:`all_reduce_gradients` after
    ``backward()`` and before the optimizer's ``step()``.

    Parameters
    ----------
    params : iterable of Tensor
        The model's parameters, in the same order on every rank.
    src : int
        The rank whose initial values every rank takes.
    average : bool
        Average the gradients (the global batch's mean when every rank's loss is the
        mean over an equal share); ``False`` sums them.
    bucket_mb : float
        The largest flat buffer one collective reduces, in MiB.
    """

    def __init__(
        self,
        params: Iterable[Tensor],
        *,
        src: int = 0,
        average: bool = True,
        bucket_mb: float = 25.0,
    ) -> None:
        self.params = _params(params, "DataParallel")
        self.average = average
        self.bucket_mb = bucket_mb
        broadcast_parameters(self.params, src=src)

    def all_reduce_gradients(self, *, average: bool | None = None) -> None:
        """Reduce every parameter's ``.grad`` over the ranks (see
        :func:`all_reduce_gradients`); ``average`` overrides the constructor's choice."""
        all_reduce_gradients(
            self.params,
            average=self.average if average is None else average,
            bucket_mb=self.bucket_mb,
        )


def shard(
    dataset_length: int,
    rank: int | None = None,
    world_size: int | None = None,
    *,
    seed: int = 0,
    epoch: int = 0,
    shuffle: bool = True,
    drop_last: bool = False,
) -> np.ndarray:
    """This rank's sample indices for one epoch, as PyTorch's ``DistributedSampler``
    chooses them: one permutation of ``range(dataset_length)`` from ``(seed, epoch)``,
    the same on every rank, dealt round-robin. Every rank gets the same number of
    indices (so every rank takes the same number of steps): the permutation is padded
    by repeating its start, or with ``drop_last=True`` cut to a multiple of
    ``world_size``.

    Examples
    --------
    >>> import minitorch.distributed as dist
    >>> [dist.shard(5, r, 2, shuffle=False).tolist() for r in (0, 1)]
    [[0, 2, 4], [1, 3, 0]]
    >>> [dist.shard(5, r, 2, shuffle=False, drop_last=True).tolist() for r in (0, 1)]
    [[0, 2], [1, 3]]
    >>> a, b = dist.shard(10, 0, 2, seed=3, epoch=1), dist.shard(10, 1, 2, seed=3, epoch=1)
    >>> sorted(a.tolist() + b.tolist()) == list(range(10))
    True
    """
    r = get_rank() if rank is None else rank
    n = get_world_size() if world_size is None else world_size
    if dataset_length < 0 or n < 1 or not 0 <= r < n:
        raise ValueError(
            f"shard: need dataset_length >= 0, world_size >= 1 and 0 <= rank < world_size; "
            f"got dataset_length={dataset_length}, rank={r}, world_size={n}"
        )
    if shuffle:
        order = np.random.default_rng((seed, epoch)).permutation(dataset_length)
    else:
        order = np.arange(dataset_length)
    if drop_last:
        total = dataset_length // n * n
    else:
        total = -(-dataset_length // n) * n
        if total > dataset_length and dataset_length > 0:
            reps = -(-total // dataset_length)
            order = np.tile(order, reps)
    return np.asarray(order[r:total:n], dtype=np.int64)
