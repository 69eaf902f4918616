"""PyTorch (CPU or CUDA tensors): torch.special.erf and index_add for scatter-add,
multi-tensor kernels for the optimizers, PyTorch's fused backward kernels for the VJP
kernels.

Devices: ``"cuda"`` is resolved to ``cuda:<current>`` when the backend is made, as the
tensors report it. Matrix products on CUDA run at full float32 precision unless the
backend was made with ``tf32=True``, whatever ``torch.backends.cuda.matmul`` says: the
flag is set for the call and restored after (no change on the CPU).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import array_api_compat.torch as xp
import numpy as np
import torch

from . import Backend, _fallback, contiguous, make_backend, resolve_device


def _scatter_add(n: int, index: Any, values: Any) -> Any:
    out = torch.zeros((n, *values.shape[1:]), dtype=values.dtype, device=values.device)
    if index.dtype not in (torch.int32, torch.int64):  # index_add_ takes no uint8
        index = index.to(torch.int64)
    return out.index_add_(0, index, values)


def _put_rows(x: Any, index: Any, values: Any) -> Any:
    """A copy of ``x`` with its rows at ``index`` set (a repeated index: torch's choice,
    not deterministic on CUDA, as in PyTorch)."""
    out = x.clone()
    out[index] = values
    return out


def _from_numpy(a: np.ndarray, dtype: Any, device: Any) -> Any:
    # torch.from_dlpack on a negatively strided NumPy array aborts the process:
    # always hand torch a contiguous copy.
    return torch.asarray(contiguous(a), dtype=dtype, device=device)


def _to_numpy(x: Any) -> np.ndarray:
    return np.asarray(x.detach().cpu().numpy())


def _setitem(x: Any, key: Any, value: Any) -> Any:
    out = x.clone()
    out[key] = value
    return out


def _current_index(kind: str) -> int | None:
    """torch's current device index of an accelerator kind (None: none here, or not an
    accelerator: torch then refuses the name itself when it is used)."""
    if kind == "mps":
        return 0  # one Apple GPU; its tensors report mps:0
    module = getattr(torch, kind, None)
    current = getattr(module, "current_device", None)
    is_available = getattr(module, "is_available", None)
    if current is None or is_available is None:
        return None
    try:
        return int(current()) if is_available() else None
    except Exception:  # e.g. a build without that accelerator
        return None


def _parse_device(d: Any) -> Any:
    dev = torch.device(resolve_device(str(torch.device(d)), _current_index))
    _check_available(dev)
    return dev


def _check_available(dev: Any) -> None:
    """Refuse an accelerator that this torch cannot reach, when it is named (torch itself
    fails only at the first tensor, with an AssertionError from deep inside)."""
    kind = dev.type
    if kind in ("cpu", "meta"):
        return
    module = torch.backends.mps if kind == "mps" else getattr(torch, kind, None)
    is_available = getattr(module, "is_available", None)
    if is_available is None:
        return  # a kind torch knows no module for: torch decides when it is used
    if not is_available():
        raise ValueError(
            f"torch {torch.__version__} cannot use device {str(dev)!r} here: "
            f"torch.{'backends.mps' if kind == 'mps' else kind}.is_available() is False "
            f"(a build of torch without it, or no such device or driver on this machine); "
            f"leave device= out (or 'cpu') to work on the CPU"
        )
    count = getattr(module, "device_count", None)
    if dev.index is not None and count is not None and dev.index >= count():
        raise ValueError(
            f"torch has no device {str(dev)!r}: this machine has {count()} {kind} "
            f"device(s), {kind}:0 to {kind}:{count() - 1}"
        )


def precision_scoped(fn: Callable[..., Any], flags: Any, value: str) -> Callable[..., Any]:
    """``fn(x1, x2)`` run with ``flags.fp32_precision = value`` where ``x1`` is a CUDA
    tensor, the previous value restored after; ``fn`` itself on the CPU.

    ``flags`` is ``torch.backends.cuda.matmul``; ``value`` ``"ieee"`` (full float32)
    or ``"tf32"``. Only the new API is used: mixing it with ``allow_tf32`` makes torch
    raise. The flag is process-wide, so a matmul of another thread that starts inside
    the call sees it too.
    """

    @functools.wraps(fn)
    def run(x1: Any, x2: Any, /, **kwargs: Any) -> Any:
        if not x1.is_cuda:
            return fn(x1, x2, **kwargs)
        prev = flags.fp32_precision
        if prev == value:
            return fn(x1, x2, **kwargs)
        flags.fp32_precision = value
        try:
            return fn(x1, x2, **kwargs)
        finally:
            flags.fp32_precision = prev

    return run


#: array-api-compat's functions that make a Python scalar argument a tensor on the
#: other argument's device (torch's own functions take no scalar there); not nextafter,
#: logaddexp and the logical functions, whose CUDA kernels refuse a CPU tensor
_SCALAR_ARGS = (
    "atan2", "copysign", "equal", "greater", "greater_equal", "hypot", "less", "less_equal",
    "maximum", "minimum", "not_equal",
)  # fmt: skip
_PY_SCALARS = (bool, int, float, complex)
_Tensor = torch.Tensor


def _scalar_dtype(s: Any, t: Any) -> Any:
    """The dtype of ``op(s, t)`` for a Python scalar ``s`` and a tensor ``t`` (a float
    next to floating ``t``: ``t``'s, without array-api-compat's lookup)."""
    if type(s) is float and t.dtype.is_floating_point:
        return t.dtype
    return xp.result_type(s, t)


def _scalar_tensor(v: Any, dtype: Any) -> Any:
    """``v`` as a 0-d CPU tensor of ``dtype`` (``torch.scalar_tensor``: half the cost of
    ``torch.asarray``, which costs more than the kernel it feeds on a small tensor)."""
    return torch.scalar_tensor(v, dtype=dtype, device="cpu")


def cpu_scalars(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn(x1, x2)``, an array-api-compat wrapper of a two-argument torch function,
    with a Python scalar made a 0-d CPU tensor (torch reads it on the host as a kernel
    argument: array-api-compat makes it a tensor on the other's device, a copy from the
    host and a synchronisation on every ``maximum(x, 0.0)`` on a GPU, and a copy a CUDA
    graph cannot capture); and two tensors of one dtype handed to the torch function
    itself: the wrapper's promotion of a 0-d tensor has nothing to do then, and its
    Python costs more than the kernel launch on a small array."""
    raw = fn.__wrapped__  # type: ignore[attr-defined]

    @functools.wraps(fn)
    def run(x1: Any, x2: Any, /, **kwargs: Any) -> Any:
        try:
            if type(x1) in _PY_SCALARS and isinstance(x2, _Tensor):
                x1 = _scalar_tensor(x1, _scalar_dtype(x1, x2))
            elif type(x2) in _PY_SCALARS and isinstance(x1, _Tensor):
                x2 = _scalar_tensor(x2, _scalar_dtype(x2, x1))
        except RuntimeError:  # an int the tensor's dtype cannot hold: the wrapper's way
            return fn(x1, x2, **kwargs)
        if type(x1) is _Tensor and type(x2) is _Tensor and x1.dtype == x2.dtype:
            return raw(x1, x2, **kwargs)
        return fn(x1, x2, **kwargs)

    return run


def matrix_transpose(x: Any, /) -> Any:
    """``x.mT``, the view array-api-compat's wrapper makes with ``swapaxes`` through two
    more Python calls (the engine transposes twice per matrix product's gradient)."""
    if x.ndim < 2:
        raise ValueError("x must be at least 2-dimensional for matrix_transpose")
    return x.mT


def same_dtype_matmul(x1: Any, x2: Any, /, **kwargs: Any) -> Any:
    """``matmul``: ``torch.matmul`` itself for two tensors of one dtype (nothing to
    promote: array-api-compat's wrapper would only cast each to its own dtype)."""
    if type(x1) is _Tensor and type(x2) is _Tensor and x1.dtype == x2.dtype:
        return torch.matmul(x1, x2, **kwargs)
    return xp.matmul(x1, x2, **kwargs)


class _ForEach:
    """torch's multi-tensor kernels (``torch._foreach_*``), as the backend's ``foreach``:
    one launch per list operation, whatever the length of the list. They pay on a GPU,
    where every launch costs the host microseconds, and so ``takes`` only CUDA tensors,
    as torch.optim defaults to them only there: on the CPU a list operation keeps every
    parameter's temporary alive at once (Adam on an MLP of 784-512-512-10 took 14% longer
    with them). Tensors of other dtypes or devices in one list take torch's per-tensor
    route, with the same values. The kernels are looked up on each call (a test counts
    them)."""

    @staticmethod
    def takes(x: Any, y: Any) -> bool:
        """Whether a parameter's array ``x`` and its gradient ``y`` are updated with
        the others: CUDA tensors of torch's own (not a subclass, nor a stand-in), of
        one dtype (then a Python number times ``y`` keeps ``x``'s dtype)."""
        return (
            type(x) is _Tensor
            and type(y) is _Tensor
            and x.is_cuda
            and y.is_cuda
            and x.dtype == y.dtype
        )

    def __getattr__(self, name: str) -> Any:
        """``add``, ``sub``, ``mul``, ``div``, ``maximum`` (of two lists, or of a list
        and a number) and ``sqrt``: ``torch._foreach_<name>``."""
        if name not in _FOREACH:
            raise AttributeError(f"the torch backend's foreach has no {name!r}")
        return getattr(torch, f"_foreach_{name}")


_FOREACH = frozenset({"add", "sub", "mul", "div", "maximum", "sqrt"})


def _vjp_kernels() -> dict[str, Callable[..., Any]]:
    """The VJP kernels as torch's own fused backward kernels (those PyTorch's autograd
    runs): one launch each, where the formulas make two to four."""
    aten = torch.ops.aten

    def relu_backward(g: Any, out: Any) -> Any:
        return aten.threshold_backward.default(g, out, 0)

    def tanh_backward(g: Any, out: Any) -> Any:
        return aten.tanh_backward.default(g, out)

    def sigmoid_backward(g: Any, out: Any) -> Any:
        return aten.sigmoid_backward.default(g, out)

    # axis None: a 0-d tensor, whose one element torch's kernels find along dim 0. These
    # two kernels take one dtype: a gradient of a wider one (float32 softmax times a
    # float64 tensor) goes through the formula, which promotes
    def softmax_backward(g: Any, out: Any, axis: int | None) -> Any:
        if g.dtype != out.dtype:
            return _fallback.softmax_backward(xp, g, out, axis)
        return torch._softmax_backward_data(g, out, axis or 0, out.dtype)

    def log_softmax_backward(g: Any, out: Any, axis: int | None) -> Any:
        if g.dtype != out.dtype:
            return _fallback.log_softmax_backward(xp, g, out, axis)
        return torch._log_softmax_backward_data(g, out, axis or 0, out.dtype)

    def softmax_cross_entropy(x: Any, t: Any) -> tuple[Any, Any]:
        # PyTorch's log_softmax and a gather for the losses; their gradient is the
        # softmax with 1 taken off at each target (6 launches; the formulas make 12)
        log_p = torch.log_softmax(x, 1)
        index = torch.reshape(t, (-1, 1)).to(torch.int64)
        nll = torch.gather(log_p, 1, index).neg_()
        d = log_p.exp_()  # log_p is this function's own
        return nll, d.scatter_add_(1, index, torch.full_like(nll, -1.0))

    return {
        f.__name__: f
        for f in (
            relu_backward,
            tanh_backward,
            sigmoid_backward,
            softmax_backward,
            log_softmax_backward,
            softmax_cross_entropy,
        )
    }


def _precision_note() -> str | None:
    flag = torch.backends.cuda.matmul.fp32_precision
    if flag == "tf32":
        return "torch's global matmul flag allows TF32, minitorch's matmuls follow tf32= only"
    return None


def load() -> Backend:
    flags = torch.backends.cuda.matmul
    products = {"matmul": same_dtype_matmul, "tensordot": xp.tensordot}
    return make_backend(
        "torch",
        xp,
        torch,
        device=torch.device("cpu"),
        erf=torch.special.erf,
        scatter_add=_scatter_add,
        put_rows=_put_rows,
        to_numpy=_to_numpy,
        from_numpy=_from_numpy,
        setitem=_setitem,
        parse_device=_parse_device,
        owns=lambda x: not x._is_view(),
        overrides={
            **{k: cpu_scalars(getattr(xp, k)) for k in _SCALAR_ARGS},
            "matrix_transpose": matrix_transpose,
            **{k: precision_scoped(f, flags, "ieee") for k, f in products.items()},
        },
        tf32_overrides={k: precision_scoped(f, flags, "tf32") for k, f in products.items()},
        precision_note=_precision_note,
        foreach=_ForEach(),
        vjp_kernels=_vjp_kernels(),
    )
