"""Checking gradients: ``gradcheck``, ``assert_close`` and sample inputs from the op catalog."""

from ._check import GradcheckError, assert_close, gradcheck
from ._samples import sample_arrays, sample_tensors

__all__ = ["GradcheckError", "assert_close", "gradcheck", "sample_arrays", "sample_tensors"]
