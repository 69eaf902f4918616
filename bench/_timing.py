"""Shared timing helpers: interleaved runs, so that both contenders see the same load."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable


def interleaved(
    steps: dict[str, Callable[[], object]], repeats: int, warmup: int = 3
) -> dict[str, float]:
    """Median seconds per call of each step, timing them in turn ``repeats`` times."""
    for _ in range(warmup):
        for step in steps.values():
            step()
    gc.collect()
    gc.freeze()
    times: dict[str, list[float]] = {k: [] for k in steps}
    try:
        for _ in range(repeats):
            for name, step in steps.items():
                t0 = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - t0)
    finally:
        gc.unfreeze()
    return {k: statistics.median(v) for k, v in times.items()}


def paired_ratio(steps: dict[str, Callable[[], object]], num: str, den: str, repeats: int) -> float:
    """Median over repeats of time(num)/time(den), each pair timed back to back."""
    for _ in range(3):
        steps[num]()
        steps[den]()
    gc.collect()
    gc.freeze()
    ratios = []
    try:
        for r in range(repeats):
            first, second = (num, den) if r % 2 == 0 else (den, num)  # no order bias
            t0 = time.perf_counter()
            steps[first]()
            t1 = time.perf_counter()
            steps[second]()
            t2 = time.perf_counter()
            a, b = (t1 - t0, t2 - t1) if first == num else (t2 - t1, t1 - t0)
            ratios.append(a / b)
    finally:
        gc.unfreeze()
    return statistics.median(ratios)
