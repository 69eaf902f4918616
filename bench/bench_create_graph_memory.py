"""Memory of create_graph in a loop: gradient-penalty steps (a gradient norm,
differentiated again), 1,000+ iterations on any backend. Reports the live graph nodes
and the traced Python memory every few hundred steps: both must stay flat (no
reference cycles keep old graphs alive).

    python bench/bench_create_graph_memory.py [--backend numpy] [--steps 3000]
"""

from __future__ import annotations

import argparse
import gc
import time
import tracemalloc

import numpy as np

import minitorch
from minitorch import autograd


def live_nodes() -> int:
    return sum(1 for o in gc.get_objects() if type(o) is autograd.Node)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="numpy")
    ap.add_argument("--steps", type=int, default=3000)
    args = ap.parse_args()
    minitorch.set_backend(args.backend, dtype="float64")
    rng = np.random.default_rng(0)
    w = minitorch.tensor(rng.standard_normal((3, 2)), requires_grad=True)
    b = minitorch.tensor(rng.standard_normal(2) * 0.1, requires_grad=True)
    x = minitorch.tensor(rng.standard_normal((4, 3)), requires_grad=True)

    def step() -> None:
        critic = (minitorch.tanh(x @ w + b) ** 2).sum()
        (gx,) = autograd.grad(critic, x, create_graph=True)
        penalty = (((gx * gx).sum() + 1e-12) ** 0.5 - 1.0) ** 2
        gw, gb = autograd.grad(penalty, [w, b])
        with minitorch.no_grad():
            w.sub_(gw * 1e-3)
            b.sub_(gb * 1e-3)

    for _ in range(50):
        step()
    gc.collect()
    gc.disable()  # only reference counting frees graphs from here on
    tracemalloc.start()
    base_nodes = live_nodes()
    base_mem = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    print(f"backend {args.backend}: {args.steps} gradient-penalty steps with create_graph=True")
    print(f"{'step':>6} {'live nodes':>11} {'traced KiB (vs start)':>22}")
    for i in range(1, args.steps + 1):
        step()
        if i % 500 == 0 or i == args.steps:
            mem = tracemalloc.get_traced_memory()[0]
            print(f"{i:6d} {live_nodes() - base_nodes:+11d} {(mem - base_mem) / 1024:+22.1f}")
    dt = time.perf_counter() - t0
    print(f"{dt / args.steps * 1e3:.2f} ms per step")
    gc.enable()


if __name__ == "__main__":
    main()
