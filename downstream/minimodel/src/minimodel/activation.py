"""Activations as Modules, as in ``torch.nn`` (``ReLU``, ``GELU``, ``Tanh``, ``Sigmoid``,
``SiLU``), for a :class:`~minimodel.Sequential`: each applies minitorch's function of the
same name elementwise and has no parameters.

``inplace=True`` (``ReLU``, ``SiLU``) is accepted for PyTorch code and gives the same
values out of place: minitorch never writes into an array, so the input keeps its values.
"""

from __future__ import annotations

import minitorch

from .module import Module

__all__ = ["GELU", "ReLU", "SiLU", "Sigmoid", "Tanh"]


class ReLU(Module):
    """``max(x, 0)``, as ``torch.nn.ReLU``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
        return minitorch.relu(x)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """``x * Phi(x)``, as ``torch.nn.GELU``: ``approximate="none"`` is exact (``erf``),
    ``"tanh"`` its tanh approximation."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
        return minitorch.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Tanh(Module):
    """``tanh(x)``, as ``torch.nn.Tanh``."""

    def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
        return minitorch.tanh(x)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``, as ``torch.nn.Sigmoid``."""

    def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
        return minitorch.sigmoid(x)


class SiLU(Module):
    """``x * sigmoid(x)``, as ``torch.nn.SiLU``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
        return minitorch.silu(x)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""
