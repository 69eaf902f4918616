"""Every op, one family per module. Importing this package registers them all."""

from . import activation, elementwise, indexing, linalg, loss, reduction, shape
from ._registry import BOUND, OPERATORS, REGISTRY, Facts, OpDef, Sample, call, defop, tensor_method

__all__ = [
    "BOUND",
    "OPERATORS",
    "REGISTRY",
    "Facts",
    "OpDef",
    "Sample",
    "activation",
    "call",
    "defop",
    "elementwise",
    "indexing",
    "linalg",
    "loss",
    "reduction",
    "shape",
    "tensor_method",
]
