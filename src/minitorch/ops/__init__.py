"""Every op, one family per module. Importing this package registers them all."""

from . import activation, decomp, elementwise, indexing, linalg, loss, math, reduction, shape
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
    "decomp",
    "defop",
    "elementwise",
    "indexing",
    "linalg",
    "loss",
    "math",
    "reduction",
    "shape",
    "tensor_method",
]
