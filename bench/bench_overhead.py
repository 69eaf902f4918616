"""Per-op overhead: a chain of 200 elementwise ops (mul, add, tanh, exp) on an 8x8
float32 tensor, forward + backward, minitorch (NumPy backend) vs PyTorch eager (one
thread), side by side in one process.

    python bench/bench_overhead.py [--repeats 200]

Target (issue #2): minitorch's time per op at most 0.8x PyTorch eager's.
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import interleaved, paired_ratio
from _workloads import N_OPS, chain


def make_steps(data: np.ndarray) -> dict:
    import torch

    import minitorch as mt

    torch.set_num_threads(1)
    return {
        "minitorch": lambda: chain(mt.tensor(data, requires_grad=True)),
        "pytorch": lambda: chain(torch.tensor(data, requires_grad=True)),
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=200)
    args = p.parse_args()
    data = np.random.default_rng(0).uniform(-1, 1, (8, 8)).astype(np.float32)
    steps = make_steps(data)
    t = interleaved(steps, args.repeats)
    ratio = paired_ratio(steps, "minitorch", "pytorch", args.repeats)
    n = N_OPS + 1  # + the final sum
    print(f"chain of {N_OPS} elementwise ops on 8x8 float32, forward + backward")
    for k, v in t.items():
        print(f"  {k:10s}: {v * 1e3:7.3f} ms per chain, {v / n * 1e6:6.2f} us per op (median)")
    print(f"  minitorch / pytorch (median of paired ratios): {ratio:.2f}x   (target <= 0.80x)")


if __name__ == "__main__":
    main()
