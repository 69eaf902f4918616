"""minitorch: a readable reverse-mode tensor autograd engine on the Array API.

Examples
--------
>>> import minitorch
>>> x = minitorch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
>>> loss = (x.tanh() * x).sum()
>>> loss.backward()
>>> x.grad.shape
(2, 2)
"""

from __future__ import annotations

from . import (
    array_api,
    autograd,
    func,
    optim,
)
from ._grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .backend import Backend, available_backends, get_backend, set_backend, use_backend
from .creation import (
    arange,
    full,
    full_like,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    tensor,
    zeros,
    zeros_like,
)
from .errors import BackendMismatchError, OpError
from .ops import REGISTRY
from .ops.activation import gelu, leaky_relu, relu, sigmoid, silu, softplus, tanh
from .ops.elementwise import (
    abs,
    add,
    astype,
    clip,
    clone,
    div,
    eq,
    erf,
    exp,
    ge,
    gt,
    isfinite,
    le,
    log,
    log1p,
    logical_not,
    lt,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    pow,
    sign,
    sqrt,
    sub,
    where,
)
from .ops.indexing import embedding, getitem, scatter_add, take
from .ops.linalg import matmul
from .ops.loss import cross_entropy, dropout, log_softmax, mse_loss, softmax
from .ops.reduction import all, any, argmax, argmin, logsumexp, max, mean, min, sum, var
from .ops.shape import (
    broadcast_to,
    cat,
    concat,
    expand_dims,
    flip,
    matrix_transpose,
    permute_dims,
    reshape,
    squeeze,
    stack,
    transpose,
)
from .tensor import Tensor

__version__ = "0.1.0"

__all__ = [
    "REGISTRY",
    "Backend",
    "BackendMismatchError",
    "OpError",
    "Tensor",
    "abs",
    "add",
    "all",
    "any",
    "arange",
    "argmax",
    "argmin",
    "array_api",
    "astype",
    "autograd",
    "available_backends",
    "broadcast_to",
    "cat",
    "clip",
    "clone",
    "concat",
    "cross_entropy",
    "div",
    "dropout",
    "embedding",
    "enable_grad",
    "eq",
    "erf",
    "exp",
    "expand_dims",
    "flip",
    "full",
    "full_like",
    "func",
    "ge",
    "gelu",
    "get_backend",
    "getitem",
    "gt",
    "is_grad_enabled",
    "isfinite",
    "le",
    "leaky_relu",
    "linspace",
    "log",
    "log1p",
    "log_softmax",
    "logical_not",
    "logsumexp",
    "lt",
    "manual_seed",
    "matmul",
    "matrix_transpose",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "mse_loss",
    "mul",
    "ne",
    "neg",
    "no_grad",
    "ones",
    "ones_like",
    "optim",
    "permute_dims",
    "pow",
    "rand",
    "randint",
    "randn",
    "relu",
    "reshape",
    "scatter_add",
    "set_backend",
    "set_grad_enabled",
    "sigmoid",
    "sign",
    "silu",
    "softmax",
    "softplus",
    "sqrt",
    "squeeze",
    "stack",
    "sub",
    "sum",
    "take",
    "tanh",
    "tensor",
    "transpose",
    "use_backend",
    "var",
    "where",
    "zeros",
    "zeros_like",
]
