"""Checking gradients: ``gradcheck``, ``assert_close``, ``check_op`` and sample inputs
from the op catalog."""

from ._check import GradcheckError, GradientError, assert_close, gradcheck, gradient_error
from ._gradgrad import gradgradcheck
from ._op_check import SampleCheck, check_op
from ._samples import sample_arrays, sample_tensors

__all__ = [
    "GradcheckError",
    "GradientError",
    "SampleCheck",
    "assert_close",
    "check_op",
    "gradcheck",
    "gradgradcheck",
    "gradient_error",
    "sample_arrays",
    "sample_tensors",
]
