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

Usage: ``python bench/bench_scalar.py [--steps 1000] [--repeats 7]``
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

    def dot(ws: list[Any], xs: list[Any], bias: Any) -> Any:
        return sum((w * x for w, x in zip(ws, xs, strict=True)), bias)

    def step(i: int) -> None:
        x, y = DATA[i % N]
        h = [dot(row, x, b).relu() for row, b in zip(w1, b1, strict=True)]
        out = [dot(row, h, b) for row, b in zip(w2, b2, strict=True)]
        loss = sum((o - t) ** 2 for o, t in zip(out, y, strict=True))
        for p in params:
            p.grad = 0.0
        loss.backward()
        for p in params:
            p.data -= LR * p.grad

    return step


def seconds_per_step(make: Callable[[], Step], steps: int) -> float:
    """Mean seconds per step over ``steps`` steps of a freshly built model."""
    step = make()
    step(0)  # warm-up
    gc.collect()
    gc.freeze()  # setup objects are not rescanned by the cyclic GC while timing
    try:
        start = time.perf_counter()
        for i in range(steps):
            step(i)
        return (time.perf_counter() - start) / steps
    finally:
        gc.unfreeze()


def compare(
    theirs: Callable[[], Step], ours: Callable[[], Step], steps: int, repeats: int
) -> tuple[float, float, float]:
    """Median micrograd time, median minigrad time and median of the paired ratios.

    The two are timed alternately so that a change in machine load affects both sides of
    each ratio alike.
    """
    t_theirs, t_ours, ratios = [], [], []
    for _ in range(repeats):
        a = seconds_per_step(theirs, steps)
        b = seconds_per_step(ours, steps)
        t_theirs.append(a)
        t_ours.append(b)
        ratios.append(b / a)
    return statistics.median(t_theirs), statistics.median(t_ours), statistics.median(ratios)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="minigrad vs micrograd, 5-16-5 MLP")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)

    print(f"Python {platform.python_version()} on {platform.machine()}; ", end="")
    print(f"{args.steps} steps x {args.repeats} alternating repeats, median; GC enabled")
    rows = [
        ("nn", micrograd_nn, minigrad_nn),
        ("engine", lambda: same_code(mg_engine.Value), lambda: same_code(Value)),
    ]
    for name, theirs, ours in rows:
        t_mg, t_ours, ratio = compare(theirs, ours, args.steps, args.repeats)
        print(
            f"{name:>6}: micrograd {t_mg * 1e6:8.1f} us/step   minigrad {t_ours * 1e6:8.1f} us/step"
            f"   minigrad/micrograd {ratio:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
