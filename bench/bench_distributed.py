"""Data-parallel MLP training on torch.distributed (Gloo, loopback): steps per second of
the MLP step (784-512-512-10, ReLU, cross-entropy, SGD, float32, batch 256 per rank,
one thread per process) with 1 process and with 2, and the time each step spends in
``all_reduce_gradients``.

    python bench/bench_distributed.py [--steps 60] [--rounds 3]

Rounds alternate: one process alone, then two ranks (started by this script, as
``minitorch demo --nproc 2`` starts them), so both see the same machine. Scaling
efficiency = (samples per second with 2 processes) / (2 x samples per second with 1).
Two processes need two free cores; on a machine with fewer, the figure measures the
cores, not minitorch.
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import minitorch as mt  # noqa: E402
import minitorch.distributed as dist  # noqa: E402

SIZES = (784, 512, 512, 10)
BATCH = 256
LR = 0.01


def run(steps: int) -> dict[str, float]:
    """This process's part: ``steps`` timed training steps (after 5 warm-up steps)."""
    world = dist.get_world_size()
    rng = np.random.default_rng(dist.get_rank())
    x = mt.tensor(rng.standard_normal((BATCH, SIZES[0])).astype(np.float32))
    y = mt.tensor(rng.integers(0, SIZES[-1], BATCH))
    init = np.random.default_rng(0)
    params = []
    for a, b in zip(SIZES[:-1], SIZES[1:], strict=True):
        bound = np.sqrt(6.0 / (a + b))
        params.append(mt.tensor(init.uniform(-bound, bound, (a, b)).astype(np.float32)))
        params.append(mt.zeros(b))
    for p in params:
        p.requires_grad_()
    ddp = dist.DataParallel(params) if world > 1 else None
    opt = mt.optim.SGD(params, lr=LR)
    reduce_s = 0.0

    def step() -> float:
        nonlocal reduce_s
        w1, b1, w2, b2, w3, b3 = params
        h = mt.relu(x @ w1 + b1)
        h = mt.relu(h @ w2 + b2)
        mt.cross_entropy(h @ w3 + b3, y).backward()
        if ddp is not None:
            t0 = time.perf_counter()
            ddp.all_reduce_gradients()
            reduce_s += time.perf_counter() - t0
        opt.step()
        opt.zero_grad()
        return 0.0

    for _ in range(5):
        step()
    if world > 1:
        dist.barrier()
    reduce_s = 0.0
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if world > 1:
        dist.barrier()
    wall = time.perf_counter() - t0
    return {"steps_per_s": steps / wall, "reduce_ms": reduce_s / steps * 1e3}


def two_ranks(steps: int) -> dict[str, float]:
    port = str(dist.free_port())
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", "--steps", str(steps)],
            env={
                **os.environ,
                "RANK": str(r),
                "LOCAL_RANK": str(r),
                "WORLD_SIZE": "2",
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": port,
            },
            stdout=subprocess.PIPE,
            text=True,
        )
        for r in range(2)
    ]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit("a rank failed; see its output above")
    results = [json.loads(o.strip().splitlines()[-1]) for o in outs]
    return {
        "steps_per_s": min(r["steps_per_s"] for r in results),
        "reduce_ms": statistics.mean(r["reduce_ms"] for r in results),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        dist.init_process_group()
        print(json.dumps(run(args.steps)), flush=True)
        dist.destroy_process_group()
        return
    ones, twos = [], []
    for _ in range(args.rounds):
        ones.append(run(args.steps))
        twos.append(two_ranks(args.steps))
    one = statistics.median(r["steps_per_s"] for r in ones)
    two = statistics.median(r["steps_per_s"] for r in twos)
    reduce_ms = statistics.median(r["reduce_ms"] for r in twos)
    n_params = sum(a * b + b for a, b in zip(SIZES[:-1], SIZES[1:], strict=True))
    print(
        f"MLP {'-'.join(map(str, SIZES))} step, batch {BATCH} per rank, float32, 1 thread "
        f"per process, Gloo on loopback; {os.cpu_count()} CPU cores; median of "
        f"{args.rounds} rounds of {args.steps} steps"
    )
    print(f"  1 process : {one:7.1f} steps/s  ({one * BATCH:8.0f} samples/s)")
    print(f"  2 ranks   : {two:7.1f} steps/s  ({two * 2 * BATCH:8.0f} samples/s)")
    print(
        f"  all_reduce_gradients: {reduce_ms:.2f} ms per step "
        f"({n_params * 4 / 2**20:.2f} MiB of float32 gradients; "
        f"{reduce_ms / (1e3 / two) * 100:.0f}% of a step)"
    )
    print(f"  scaling efficiency: {two / one:.2f}  (2-rank samples/s over 2x 1-process)")


if __name__ == "__main__":
    main()
