"""A tiny optimizer helper: SGD with momentum and weight decay, and gradient clipping.

The update is written once against the Array API. On NumPy it happens in place when no
one else can see the parameter's buffer (no saved graph, no view: the array's reference
count says so), which saves an allocation per parameter per step; otherwise the new
values go into a fresh array, so a graph that saved the old values keeps them.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable
from typing import Any

from .tensor import Tensor

__all__ = ["SGD", "clip_grad_norm_"]


class SGD:
    """Stochastic gradient descent: ``p <- p - lr * (g + weight_decay * p)``, with
    optional (heavy-ball) momentum, as ``torch.optim.SGD``.

    Examples
    --------
    >>> import minitorch
    >>> w = minitorch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = minitorch.optim.SGD([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.8, -1.6], dtype=float32, backend=numpy, requires_grad=True)
    """

    def __init__(
        self, params: Iterable[Tensor], lr: float, momentum: float = 0.0, weight_decay: float = 0.0
    ) -> None:
        self.params = list(params)
        if not lr > 0:
            raise ValueError(f"SGD: lr must be positive, got {lr}")
        if not momentum >= 0:
            raise ValueError(f"SGD: momentum must be >= 0, got {momentum}")
        if not weight_decay >= 0:
            raise ValueError(f"SGD: weight_decay must be >= 0, got {weight_decay}")
        for i, p in enumerate(self.params):
            if not isinstance(p, Tensor) or not p.requires_grad or not p.is_leaf:
                raise ValueError(f"SGD: parameter {i} must be a leaf Tensor that requires grad")
        self.lr = float(lr)
        self.momentum = float(momentum)
        self.weight_decay = float(weight_decay)
        self._velocity: list[Any] = [None] * len(self.params)

    def step(self) -> None:
        """Apply one update to every parameter that has a gradient."""
        lr = self.lr
        for i, p in enumerate(self.params):
            g = p.grad
            if g is None:
                continue
            if self.weight_decay or self.momentum:
                g = self._direction(i, p, g)
            # p.data = p.data - lr * g, in place where nothing else can see the buffer:
            # its references are p's slot, `data` and getrefcount's own argument
            data = p.data
            if sys.getrefcount(data) <= 3 and p._backend.name == "numpy":
                try:
                    data -= lr * g
                except ValueError:  # a read-only array
                    p.data = data - lr * g
            else:
                p.data = data - lr * g
            p._version += 1

    def _direction(self, i: int, p: Tensor, g: Any) -> Any:
        """The gradient with weight decay added and momentum applied."""
        if self.weight_decay:
            g = g + self.weight_decay * p.data
        if self.momentum:
            v = self._velocity[i]
            # the first buffer is a copy: changing p.grad later must not change it
            v = p._backend.xp.asarray(g, copy=True) if v is None else self.momentum * v + g
            self._velocity[i] = v
            g = v
        return g

    def zero_grad(self) -> None:
        """Drop every parameter's gradient (the next backward starts fresh)."""
        for p in self.params:
            p.grad = None


def clip_grad_norm_(params: Iterable[Tensor], max_norm: float) -> float:
    """Scale all gradients so that their global L2 norm is at most ``max_norm``.

    Returns the norm before clipping, as ``torch.nn.utils.clip_grad_norm_`` (the factor
    is ``max_norm / (norm + 1e-6)``, applied only when the norm exceeds ``max_norm``).

    Examples
    --------
    >>> import minitorch
    >>> w = minitorch.tensor([3.0, 4.0], requires_grad=True)
    >>> (w * w).sum().backward()
    >>> minitorch.optim.clip_grad_norm_([w], 1.0)
    10.0
    >>> w.grad.round(4)
    array([0.6, 0.8], dtype=float32)
    """
    ps = [p for p in params if p.grad is not None]
    if not ps:
        return 0.0
    total = math.sqrt(sum(float(p._backend.xp.sum(p.grad * p.grad)) for p in ps))
    if total > max_norm or math.isnan(total):  # a NaN norm makes every gradient NaN
        scale = max_norm / (total + 1e-6)
        for p in ps:
            p.grad = p.grad * scale
    return total
