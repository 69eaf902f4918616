"""Every op, one family per module. Importing this package registers them all."""

from . import activation, elementwise, indexing, linalg, loss, reduction, shape
from ._registry import REGISTRY, Facts, OpDef, Sample, defop

__all__ = [
    "REGISTRY",
    "Facts",
    "OpDef",
    "Sample",
    "activation",
    "defop",
    "elementwise",
    "indexing",
    "linalg",
    "loss",
    "reduction",
    "shape",
]
