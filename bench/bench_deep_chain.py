"""Deep chain: 100,000 alternating mul/add ops on a (4,) float32 tensor, forward +
backward, minitorch (NumPy backend) vs PyTorch eager. Reports time and the memory the
graph holds per node.

Each engine runs in a fresh process (so that memory numbers are not mixed up); memory is
the growth of the resident set from just before the forward pass to just after it (the
graph is alive then), divided by the number of nodes.

    python bench/bench_deep_chain.py [--nodes 100000] [--repeats 3]

Targets (issue #2): no slower than PyTorch, and no more memory per node.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time


def _rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def worker(engine: str, nodes: int, repeats: int) -> dict:
    import gc

    import numpy as np

    if engine == "torch":
        import torch

        torch.set_num_threads(1)
        make = lambda: torch.tensor(np.ones(4, np.float32), requires_grad=True)
    else:
        import minitorch as mt

        make = lambda: mt.tensor(np.ones(4, np.float32), requires_grad=True)

    def forward(x):
        y = x
        for _ in range(nodes // 2):
            y = y * 1.00001
            y = y + 0.00001
        return y.sum()

    # warm up on a short chain only: a full-size warm-up would leave freed memory in
    # the allocator and hide the graph's real size
    y = make()
    for _ in range(100):
        y = y * 1.00001 + 0.00001
    y.sum().backward()
    del y
    gc.collect()
    fwd_times, bwd_times, mem = [], [], []
    for _ in range(1):
        x = make()
        gc.collect()
        gc.disable()
        before = _rss()
        t0 = time.perf_counter()
        loss = forward(x)
        t1 = time.perf_counter()
        after = _rss()
        loss.backward()
        t2 = time.perf_counter()
        gc.enable()
        fwd_times.append(t1 - t0)
        bwd_times.append(t2 - t1)
        mem.append((after - before) / nodes)
        g = x.grad
        grad0 = float(g[0])
        del x, loss, g
        gc.collect()
    return {
        "forward_s": min(fwd_times),
        "backward_s": min(bwd_times),
        "bytes_per_node": min(mem),
        "grad0": grad0,
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--nodes", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--worker", choices=["torch", "minitorch"])
    args = p.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.nodes, args.repeats)))
        return
    res: dict[str, dict] = {}
    for _ in range(args.repeats):  # one fresh process per run and engine, alternating
        for engine in ("torch", "minitorch"):
            out = subprocess.run(
                [sys.executable, __file__, "--worker", engine, "--nodes", str(args.nodes)],
                check=True,
                capture_output=True,
                text=True,
            )
            r = json.loads(out.stdout.strip().splitlines()[-1])
            best = res.setdefault(engine, r)
            for k in ("forward_s", "backward_s", "bytes_per_node"):
                best[k] = min(best[k], r[k])
    print(f"chain of {args.nodes} mul/add ops on a (4,) float32 tensor (best of {args.repeats})")
    for k, v in res.items():
        total = v["forward_s"] + v["backward_s"]
        print(
            f"  {k:10s}: forward {v['forward_s'] * 1e3:7.1f} ms, backward {v['backward_s'] * 1e3:7.1f} ms, "
            f"total {total * 1e3:7.1f} ms; {v['bytes_per_node']:6.0f} bytes/node; dx[0] = {v['grad0']:.6f}"
        )
    t = lambda v: v["forward_s"] + v["backward_s"]
    print(
        f"  time ratio minitorch/pytorch: {t(res['minitorch']) / t(res['torch']):.2f}x (target <= 1.0)"
    )
    print(
        f"  memory ratio minitorch/pytorch: "
        f"{res['minitorch']['bytes_per_node'] / res['torch']['bytes_per_node']:.2f}x (target <= 1.0)"
    )


if __name__ == "__main__":
    main()
