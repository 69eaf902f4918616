"""Reverse-mode entry points: ``backward`` and ``grad`` (``torch.autograd.grad``).

The chain rule itself is :func:`minitorch.engine.run_backward`; this module seeds it,
and for ``create_graph=True`` tells it how to run each VJP so that the VJP records its
own graph: with the differentiable namespace of the node's backend as ``xp`` and the
saved inputs/output as graph Tensors. That is how higher-order derivatives come free.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import _grad_mode
from .engine import Node, run_backward, unbroadcast
from .tensor import Tensor, apply, describe, namespace_of, seed_gradient

__all__ = ["Node", "apply", "backward", "grad", "unbroadcast"]


def backward(tensor: Tensor, gradient: Any = None, retain_graph: bool = False) -> None:
    """Accumulate d(tensor)/d(leaf) into every leaf's ``.grad``; see ``Tensor.backward``."""
    tensor.backward(gradient, retain_graph)


def _as_graph_tensor(s: Any, node: Node, role: int) -> Tensor:
    """A saved input/output as the graph Tensor it was: differentiable again."""
    src = node.source(role)
    if src is None:  # an input that needs no gradient
        return Tensor._make(s, node.backend, None)
    if isinstance(src, Node):
        return Tensor._make(s, src.backend, src)
    return src  # type: ignore[no-any-return]  # a leaf tensor itself


def _recording(node: Node) -> tuple[Any, tuple[Any, ...]]:
    """How a VJP runs under create_graph: on Tensors, with the namespace of the node's
    backend, so that every operation it does is recorded too."""
    node.check_versions()
    return namespace_of(node.backend), node.saved_values(_as_graph_tensor)


_WHO = "autograd.grad"


def _tensors(given: Any, what: str) -> list[Any]:
    """``outputs`` or ``inputs`` of :func:`grad` as a list: one Tensor, or a sequence
    (any iterable but a string or dict) of them."""
    if isinstance(given, Tensor):
        return [given]
    if isinstance(given, str | bytes | Mapping) or not isinstance(given, Iterable):
        raise TypeError(
            f"{_WHO}: {what} must be a Tensor or a sequence of Tensors, got {describe(given)}"
        )
    return list(given)


def grad(
    outputs: Tensor | Sequence[Tensor],
    inputs: Tensor | Sequence[Tensor],
    grad_outputs: Any = None,
    *,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    allow_unused: bool = False,
    materialize_grads: bool = False,
) -> tuple[Tensor | None, ...]:
    """Gradients of ``outputs`` with respect to ``inputs``, returned as Tensors.

    Like ``torch.autograd.grad``: the sum over ``outputs`` of ``<output, grad_output>``
    is differentiated; nothing is accumulated into any ``.grad``, and only the part
    of the graph that leads to ``inputs`` is visited.

    Parameters
    ----------
    outputs : Tensor or sequence of Tensor
        What to differentiate; each must require grad.
    inputs : Tensor or sequence of Tensor
        Leaves or intermediate results that require grad.
    grad_outputs : Tensor, array or sequence, optional
        One per output, of its shape (None: ones, allowed for one-element outputs).
    retain_graph : bool, optional
        Keep the saved values for another backward; defaults to ``create_graph``.
    create_graph : bool
        Record the backward pass itself, so that the results can be differentiated
        again (to any order). Without it the results are constants.
    allow_unused : bool
        Return None for an input the outputs do not depend on, instead of raising.
    materialize_grads : bool
        Return zeros instead of None for unused inputs (implies ``allow_unused``).

    Returns
    -------
    tuple of Tensor or None
        One gradient per input, of its shape, dtype and backend.

    Examples
    --------
    >>> import minitorch
    >>> x = minitorch.tensor(3.0, requires_grad=True)
    >>> (g,) = minitorch.autograd.grad(x ** 3, x, create_graph=True)
    >>> float(g)
    27.0
    >>> (h,) = minitorch.autograd.grad(g, x)
    >>> float(h)
    18.0
    """
    outs = _tensors(outputs, "outputs")
    ins = _tensors(inputs, "inputs")
    if not outs or not ins:
        raise ValueError(f"{_WHO}: needs at least one output and one input")
    for what, seq in (("output", outs), ("input", ins)):
        for i, t in enumerate(seq):
            if not isinstance(t, Tensor):
                raise TypeError(f"{_WHO}: {what} {i} must be a Tensor, got {describe(t)}")
    if grad_outputs is None:
        gouts: list[Any] = [None] * len(outs)
    elif isinstance(grad_outputs, Tensor) or not isinstance(grad_outputs, Sequence):
        gouts = [grad_outputs]
    else:
        gouts = list(grad_outputs)
    if len(gouts) != len(outs):
        raise ValueError(
            f"{_WHO}: got {len(outs)} output(s) but {len(gouts)} grad_outputs; pass one per "
            f"output (None for a one-element output)"
        )
    for i, t in enumerate(ins):
        if not t.requires_grad:
            raise RuntimeError(
                f"{_WHO}: input {i} (shape {tuple(t.data.shape)}) does not require grad; "
                f"create it with requires_grad=True (or call .requires_grad_()) before "
                f"computing the outputs"
            )
    for i, o in enumerate(outs):
        if not o.requires_grad:
            raise RuntimeError(
                f"{_WHO}: output {i} (shape {tuple(o.data.shape)}) does not require grad and "
                f"has no graph: it does not depend on any tensor that requires grad (or "
                f"it was computed under no_grad())"
            )
    if retain_graph is None:
        retain_graph = create_graph
    # the same tensor twice among the inputs gets the same gradient twice
    uniq: list[Tensor] = []
    where: list[int] = []
    for t in ins:
        for k, u in enumerate(uniq):
            if u is t:
                where.append(k)
                break
        else:
            where.append(len(uniq))
            uniq.append(t)
    seeds = [
        seed_gradient(o, g, f"{_WHO} (output {i})", as_tensor=create_graph)
        for i, (o, g) in enumerate(zip(outs, gouts, strict=True))
    ]
    if create_graph:
        with _grad_mode.enable_grad():
            res = run_backward(
                outs, seeds, retain_graph=retain_graph, inputs=uniq, vjp_args=_recording
            )
    else:
        res = run_backward(outs, seeds, retain_graph=retain_graph, inputs=uniq)
    out: list[Tensor | None] = []
    for i, t in enumerate(ins):
        r = res[where[i]]
        if r is None:
            if materialize_grads:
                out.append(Tensor._make(t._backend.xp.zeros_like(t.data), t._backend, None))
                continue
            if not allow_unused:
                raise RuntimeError(
                    f"{_WHO}: input {i} (shape {tuple(t.data.shape)}) was not used to compute "
                    f"the outputs; pass allow_unused=True to get None for it (or "
                    f"materialize_grads=True for zeros)."
                )
            out.append(None)
            continue
        if isinstance(r, Tensor):
            if r.data.dtype != t.data.dtype:
                r = namespace_of(r._backend).astype(r, t.data.dtype)
        else:
            if r.dtype != t.data.dtype:
                r = t._backend.xp.astype(r, t.data.dtype)
            r = Tensor._make(r, t._backend, None)
        out.append(r)
    return tuple(out)
