"""The workloads more than one benchmark times, written once so that they stay the same:
the MLP's initial parameters and the chain of elementwise ops."""

from __future__ import annotations

from typing import Any

import numpy as np

N_OPS = 200


def init(sizes: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    """Xavier-uniform weights and zero biases of an MLP with layer ``sizes``, float32,
    on the host."""
    rng = np.random.default_rng(seed)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        bound = np.sqrt(6.0 / (fan_in + fan_out))
        params.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        params.append(np.zeros(fan_out, np.float32))
    return params


def chain(x: Any) -> Any:
    """``N_OPS`` elementwise ops (mul, add, tanh, exp) and backward from their sum; the
    same code runs on minitorch and torch tensors. Returns x's gradient."""
    y = x
    for _ in range(N_OPS // 4):
        y = y * 0.5
        y = y + 0.1
        y = y.tanh()
        y = y.exp()
    y.sum().backward()
    return x.grad
