"""One rank of the distributed tests: ``python worker.py MODE OUT`` with ``RANK``,
``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT`` and ``MINITORCH_BACKEND`` set by the
test that starts it. Rank 0 writes what the test compares into ``OUT`` (an .npz file);
a failure is printed on stderr and ends the process with exit status 3."""

from __future__ import annotations

import itertools
import os
import sys
import time
from typing import Any

import numpy as np

import minitorch
import minitorch.distributed as dist
from minitorch.errors import DistributedError

STEPS = 20
GLOBAL_BATCH = 16
SIZES = (5, 7, 3)


def data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return rng.normal(size=(64, SIZES[0])), rng.integers(0, SIZES[-1], size=64)


def init_params() -> list[minitorch.Tensor]:
    rng = np.random.default_rng(1 + dist.get_rank())  # ranks start apart: broadcast fixes it
    out = []
    for a, b in itertools.pairwise(SIZES):
        out.append(minitorch.tensor(rng.normal(size=(a, b)) / a**0.5, requires_grad=True))
        out.append(minitorch.tensor(rng.normal(size=(b,)) * 0.1, requires_grad=True))
    return out


def forward(params: list[minitorch.Tensor], x: minitorch.Tensor) -> minitorch.Tensor:
    w1, b1, w2, b2 = params
    return (x @ w1 + b1).tanh() @ w2 + b2


def train(rank: int, world: int, ddp: dist.DataParallel | None, params: list[Any]) -> None:
    """20 steps of SGD with momentum; each rank takes every world-th row of each global
    batch and the mean over its rows (equal shares: the average is the global mean)."""
    x_all, y_all = data()
    opt = minitorch.optim.SGD(params, lr=0.1, momentum=0.9)
    for step in range(STEPS):
        lo = step * GLOBAL_BATCH % len(y_all)
        rows = np.arange(lo, lo + GLOBAL_BATCH)[rank::world]
        x, y = minitorch.tensor(x_all[rows]), minitorch.tensor(y_all[rows])
        opt.zero_grad()
        minitorch.cross_entropy(forward(params, x), y).backward()
        if ddp is not None:
            ddp.all_reduce_gradients()
        opt.step()


def fail(mode: str) -> None:
    """How rank 1 lets the others down: silent but alive, a Python error, or dead."""
    if mode == "hang":
        time.sleep(4 * float(os.environ["TEST_TIMEOUT"]))
    elif mode == "raise":
        raise ValueError("a bug in rank 1's training loop")
    else:
        os._exit(17)  # dies without a word, mid-training


def main() -> int:
    mode, out = sys.argv[1], sys.argv[2]
    minitorch.set_backend(os.environ.get("MINITORCH_BACKEND", "numpy"), dtype="float64")
    dist.init_process_group(timeout=float(os.environ.get("TEST_TIMEOUT", "30")))
    rank, world = dist.get_rank(), dist.get_world_size()
    try:
        if mode == "train":
            params = init_params()
            ddp = dist.DataParallel(params)
            train(rank, world, ddp, params)
            result = {f"p{i}": p.numpy() for i, p in enumerate(params)}
        elif mode == "mixed":
            # float32 and float64, several shapes, a parameter without a gradient on
            # rank 1, and buckets small enough to cut the float64 group in three
            shapes = [(3, 4), (5,), (2, 2, 2), (), (6, 1)]
            dtypes = ["float64", "float32", "float64", "float32", "float64"]
            params = [
                minitorch.zeros(*s, dtype=d, requires_grad=True)
                for s, d in zip(shapes, dtypes, strict=True)
            ]
            for i, p in enumerate(params):
                if rank == 1 and i == 4:
                    continue  # counts as zeros
                size = int(np.prod(p.shape))
                g = np.arange(size, dtype=np.float64).reshape(p.shape) * (rank + 1) + i
                p.grad = p.backend.from_numpy(g.astype(dtypes[i]), p.data.dtype, None)
            dist.all_reduce_gradients(params, bucket_mb=60 / 2**20)
            result = {f"g{i}": p.backend.to_numpy(p.grad) for i, p in enumerate(params)}
            result["dtypes"] = np.array([str(p.grad.dtype) for p in params])
        elif mode == "mismatch":
            params = init_params()
            if rank == 1:
                params[2] = minitorch.zeros(SIZES[1] + 1, SIZES[2], requires_grad=True)
            dist.DataParallel(params)
            return 0
        elif mode == "off_gpu":
            # rank 1's parameters are where NCCL cannot reduce them (as if made on another
            # GPU before init_process_group): every rank must stop, none wait
            if rank == 1:
                dist._off_this_gpu = lambda be, a: "rank 1's parameters are on cuda:0"
            dist.DataParallel(init_params())
            return 0
        elif mode in ("hang", "raise", "die"):  # rank 1 fails after the start
            params = init_params()
            ddp = dist.DataParallel(params)
            if rank == 1:
                fail(mode)
                return 0
            train(rank, world, ddp, params)
            return 0
        else:
            raise SystemExit(f"unknown mode {mode}")
    except DistributedError as exc:
        print(f"rank {rank}: {exc}", file=sys.stderr)
        return 3
    if rank == 0:
        np.savez(out, **result)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
