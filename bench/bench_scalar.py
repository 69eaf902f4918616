"""Benchmark minigrad's scalar engine against micrograd on a 5-16-5 MLP.

One *step* is the per-sample work of training: forward through the network, the
squared-error loss over the 5 outputs, ``zero_grad``, ``backward`` and an SGD update. The
dataset is the 5-way tense-identity task (one-hot in, one-hot target).

Two comparisons are timed:

* ``nn``: each library's own ``MLP`` and idiomatic loss code;
* ``engine``: the *same* Python code (a hand-written 5-16-5 network using only ``*``,
  ``+``, ``-``, ``**2`` and ``relu``) run on each library's ``Value``, so that only the
  engines differ.

micrograd is needed only here (``pip install micrograd``); it is not a dependency.

Usage: ``python bench/bench_scalar.py [--steps 2000] [--repeats 7]``
"""

from __future__ import annotations

import argparse
import gc
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

try:
    import micrograd.engine as mg_engine
    import micrograd.nn as mg_nn
except ImportError:  # pragma: no cover - depends on the environment
    print("micrograd is not installed; run `pip install micrograd` to benchmark against it.")
    raise SystemExit(0) from None

import minigrad.nn as our_nn
from minigrad.scalar import Value

N = 5
DATA = [([float(i == j) for j in range(N)], [float(i == j) for j in range(N)]) for i in range(N)]
LR = 0.01

Step = Callable[[int], None]


def micrograd_nn() -> Step:
    random.seed(0)
    model = mg_nn.MLP(N, [16, N])
    params = model.parameters()

    def step(i: int) -> None:
        x, y = DATA[i % N]
        out = model(x)
        loss = sum((o - t) ** 2 for o, t in zip(out, y, strict=True))
        model.zero_grad()
        loss.backward()
        for p in params:
            p.data -= LR * p.grad

    return step


def minigrad_nn() -> Step:
    model = our_nn.MLP(N, [16, N], rng=random.Random(0))
    params = model.parameters()

    def step(i: int) -> None:
        x, y = DATA[i % N]
        loss = our_nn.squared_error(model(x), y)
        model.zero_grad()
        loss.backward()
        our_nn.sgd_step(params, LR)

    return step


def same_code(value: Callable[[float], Any]) -> Step:
    """The identical network code for any ``Value`` class."""
    rng = random.Random(0)
    w1 = [[value(rng.uniform(-1, 1)) for _ in range(N)] for _ in range(16)]
    b1 = [value(0.0) for _ in range(16)]
    w2 = [[value(rng.uniform(-1, 1)) for _ in range(16)] for _ in range(N)]
    b2 = [value(0.0) for _ in range(N)]
    params = [p for row in w1 for p in row] + b1 + [p for row in w2 for p in row] + b2

    def step(i: int) -> None:
        x, y = DATA[i % N]
        h = [sum((w * xi for w, xi in zip(r, x)), b).relu() for r, b in zip(w1, b1)]
        out = [sum((w * hi for w, hi in zip(r, h)), b) for r, b in zip(w2, b2)]
        loss = sum((o - t) ** 2 for o, t in zip(out, y))
        for p in params:
            p.grad = 0.0
        loss.backward()
        for p in params:
            p.data -= LR * p.grad

    return step


def time_per_step(make: Callable[[], Step], steps: int, repeats: int) -> float:
    """Median over ``repeats`` of the mean seconds per step over ``steps`` steps."""
    results = []
    for _ in range(repeats):
        step = make()
        step(0)  # warm-up
        gc.collect()
        gc.freeze()  # setup objects are not rescanned by the cyclic GC while timing
        start = time.perf_counter()
        for i in range(steps):
            step(i)
        results.append((time.perf_counter() - start) / steps)
        gc.unfreeze()
    return statistics.median(results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="minigrad vs micrograd, 5-16-5 MLP")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)

    print(f"Python {platform.python_version()} on {platform.machine()}; ", end="")
    print(f"{args.steps} steps x {args.repeats} repeats, median; GC enabled")
    rows = [
        ("nn", micrograd_nn, minigrad_nn),
        ("engine", lambda: same_code(mg_engine.Value), lambda: same_code(Value)),
    ]
    for name, theirs, ours in rows:
        t_mg = time_per_step(theirs, args.steps, args.repeats)
        t_ours = time_per_step(ours, args.steps, args.repeats)
        print(
            f"{name:>6}: micrograd {t_mg * 1e6:8.1f} us/step   minigrad {t_ours * 1e6:8.1f} us/step"
            f"   ratio {t_ours / t_mg:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
