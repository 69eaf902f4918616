"""Function transforms: ``grad``, ``value_and_grad``, ``vjp``, ``jvp``, ``jacobian``, ``hessian``.

Each transform takes a function of Tensors and returns a function of Tensors, in the
spirit of JAX and ``torch.func``. They are built on :func:`minitorch.autograd.grad`
and compose: ``grad(grad(f))``, ``jacobian(grad(f))`` (that is ``hessian``) and
``jvp(grad(f), ...)`` (a Hessian-vector product) all work, to any order.

How composition works: a transform differentiates with respect to a fresh *alias* of
each argument (a same-shape ``reshape``, a node of its own), so an inner transform
never mixes up its variable with an outer one that holds the same tensor. When an
argument already requires grad, when the function closes over a tensor that requires
grad (a parameter), or when the call happens inside another transform, the backward
pass records its own graph (``create_graph=True``) so that the result can be
differentiated again, as ``torch.func``'s; otherwise results are plain (detached)
Tensors.

``jvp`` uses the double-VJP trick: ``u -> J^T u`` is linear in ``u``, so its VJP with
the tangent ``t`` is ``J t``. It costs two backward passes and needs no forward-mode
rules.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, cast

from . import _grad_mode
from .autograd import grad as _autograd_grad
from .creation import zeros_like
from .engine import graph_leaves
from .ops.shape import reshape, stack
from .tensor import Tensor

__all__ = ["grad", "hessian", "jacobian", "jvp", "value_and_grad", "vjp"]

Argnums = int | tuple[int, ...]


class _Depth(threading.local):
    value: int = 0


_depth = _Depth()


class _Transform:
    """Counts nested transforms: inside one, results keep their graph."""

    def __enter__(self) -> None:
        _depth.value += 1

    def __exit__(self, *exc: object) -> None:
        _depth.value -= 1


def _check_tensor(x: Any, who: str, what: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{who}: {what} must be a minitorch Tensor, got {type(x).__name__}")
    if not x._backend.xp.isdtype(x.data.dtype, "real floating"):
        raise TypeError(
            f"{who}: {what} must be floating point to be differentiated, got dtype "
            f"{x._backend.dtype_name(x.data.dtype)} (shape {x.shape})"
        )
    return x


def _check_argnums(argnums: Any, who: str) -> tuple[int, ...]:
    """``argnums`` as a tuple, if it is an int or a non-empty tuple (or list) of ints
    (bools are not ints here: ``argnums=True`` is a mistake)."""

    def is_int(a: Any) -> bool:
        return isinstance(a, int) and not isinstance(a, bool)

    if is_int(argnums):
        return (argnums,)
    if isinstance(argnums, tuple | list) and argnums and all(is_int(a) for a in argnums):
        return tuple(argnums)
    raise TypeError(
        f"{who}: argnums must be an int or a non-empty tuple of ints (which positional "
        f"arguments to differentiate), got {type(argnums).__name__} {argnums!r}"
    )


def _normalize_argnums(argnums: Argnums, nargs: int, who: str) -> tuple[int, ...]:
    nums = _check_argnums(argnums, who)
    out = []
    for a in nums:
        if not -nargs <= a < nargs:
            fix = (
                f"pass an index from {-nargs} to {nargs - 1}"
                if nargs
                else "pass the tensors to differentiate as positional arguments"
            )
            raise ValueError(
                f"{who}: argnums {a} is out of range for a call with {nargs} positional "
                f"argument(s); {fix}"
            )
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise ValueError(f"{who}: argnums {argnums!r} repeats an argument")
    return tuple(out)


def _aliased(args: tuple[Any, ...], nums: Sequence[int], who: str) -> list[Any]:
    """The call's arguments, with each differentiated one replaced by its alias."""
    call = list(args)
    for i in nums:
        call[i] = _alias(_check_tensor(args[i], who, f"argument {i}"))
    return call


def _alias(x: Tensor) -> Tensor:
    """A fresh differentiation variable standing for ``x``.

    If ``x`` is part of a graph (it requires grad), the alias is a same-shape reshape:
    its own node, linked to ``x``, so gradients of the result still reach ``x``.
    Otherwise the alias is a new leaf sharing ``x``'s data.
    """
    if x.requires_grad:
        return reshape(x, x.shape)
    return x.detach().requires_grad_()


def _tracking(args: Sequence[Any]) -> bool:
    """Whether results must stay differentiable: an argument requires grad, or an
    outer transform is running (it may differentiate through closed-over tensors)."""
    if not _grad_mode.is_grad_enabled():
        return False
    return _depth.value > 0 or any(isinstance(a, Tensor) and a.requires_grad for a in args)


def _closes_over(outs: Sequence[Any], aliases: Sequence[Any]) -> bool:
    """Whether the outputs depend on a tensor that requires grad other than the
    transform's own aliases: a parameter the function closes over (a gradient penalty
    on ``W`` in ``grad(lambda x: f(x, W))``). The results then stay differentiable, as
    ``torch.func``'s do: detached, the penalty's gradient to ``W`` was silently 0."""
    mine = {id(a) for a in aliases}
    live = [o for o in outs if isinstance(o, Tensor) and o.requires_grad]
    if any(o._node is None and id(o) not in mine for o in live):  # a leaf returned as is
        return True
    return any(id(t) not in mine for t in graph_leaves([o._node for o in live if o._node]))


def _split_aux(res: Any, has_aux: bool, who: str) -> tuple[Any, Any]:
    if not has_aux:
        return res, None
    if not isinstance(res, tuple | list) or len(res) != 2:
        raise TypeError(
            f"{who}: with has_aux=True the function must return a pair (output, aux), "
            f"got {type(res).__name__}"
        )
    return res[0], res[1]


def _grads(
    outs: Sequence[Tensor], xs: Sequence[Tensor], seeds: Sequence[Any], create_graph: bool
) -> tuple[Tensor, ...]:
    """The gradient of ``sum_k <outs[k], seeds[k]>`` with respect to each of ``xs``.

    A seed may be None for a one-element output (ones). Outputs with no graph (they
    depend on none of the arguments) are left out, and an input that no output
    depends on gets zeros of its shape instead of None. The graph is kept for
    further calls; with ``create_graph`` the backward pass is recorded too.
    """
    live = [(o, s) for o, s in zip(outs, seeds, strict=True) if o.requires_grad]
    if not live:  # the outputs do not depend on the arguments at all
        return tuple(zeros_like(x) for x in xs)
    gs = _autograd_grad(
        [o for o, _ in live],
        list(xs),
        [s for _, s in live],
        retain_graph=True,
        create_graph=create_graph,
        materialize_grads=True,  # zeros for an input no output depends on
    )
    return cast(tuple[Tensor, ...], gs)  # materialized: no None


def _value_and_grad_impl(
    f: Callable[..., Any],
    argnums: Argnums,
    has_aux: bool,
    who: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> tuple[Any, Any, Any]:
    nums = _normalize_argnums(argnums, len(args), who)
    keep = _tracking(args)
    enabled = _grad_mode.is_grad_enabled()
    with _grad_mode.enable_grad(), _Transform():
        call = _aliased(args, nums, who)
        out, aux = _split_aux(f(*call, **kwargs), has_aux, who)
        if not isinstance(out, Tensor):
            raise TypeError(f"{who}: the function must return a Tensor, got {type(out).__name__}")
        keep = keep or (enabled and _closes_over([out], [call[i] for i in nums]))
        if out.size != 1:
            raise ValueError(
                f"{who}: the function must return a scalar (one-element) Tensor, got shape "
                f"{out.shape}; reduce it (e.g. .sum()) or use minitorch.func.vjp / jacobian"
            )
        gs = _grads([out], [call[i] for i in nums], [None], keep)
    if not keep:
        out = out.detach()
        gs = tuple(g.detach() for g in gs)
    g_res: Any = gs if isinstance(argnums, tuple | list) else gs[0]
    return out, g_res, aux


def grad(f: Callable[..., Any], argnums: Argnums = 0, has_aux: bool = False) -> Callable[..., Any]:
    """The gradient of a scalar function, as a function.

    Parameters
    ----------
    f : callable
        Takes Tensors (and anything else) and returns a one-element Tensor, or a pair
        ``(output, aux)`` with ``has_aux=True``.
    argnums : int or tuple of int
        Which positional arguments to differentiate with respect to. With a tuple,
        the result is a tuple of gradients.
    has_aux : bool
        ``f`` returns ``(output, aux)``; the transformed function returns
        ``(gradient, aux)``.

    Returns
    -------
    callable
        ``grad(f)(*args)``: Tensors shaped like the chosen arguments (zeros for an
        argument the output does not depend on).

    Examples
    --------
    >>> import minitorch
    >>> from minitorch import func
    >>> x = minitorch.tensor(2.0, dtype="float64")
    >>> float(func.grad(lambda t: t ** 3)(x))
    12.0
    >>> float(func.grad(func.grad(lambda t: t ** 3))(x))
    12.0
    """

    return _grad(f, argnums, has_aux, "func.grad")


def _grad(f: Callable[..., Any], argnums: Argnums, has_aux: bool, who: str) -> Callable[..., Any]:
    """:func:`grad`, whose errors name ``who`` (the transform the user called)."""
    _check_argnums(argnums, who)

    def grad_f(*args: Any, **kwargs: Any) -> Any:
        _, g, aux = _value_and_grad_impl(f, argnums, has_aux, who, args, kwargs)
        return (g, aux) if has_aux else g

    grad_f.__name__ = f"grad_{getattr(f, '__name__', 'f')}"
    grad_f.__doc__ = f"The gradient of {getattr(f, '__name__', 'f')} (minitorch.func.grad)."
    return grad_f


def value_and_grad(
    f: Callable[..., Any], argnums: Argnums = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """Like :func:`grad`, but also return the value: ``(value, gradient)``.

    With ``has_aux=True`` the result is ``((value, aux), gradient)``, as in JAX.

    Examples
    --------
    >>> import minitorch
    >>> from minitorch import func
    >>> x = minitorch.tensor([1.0, 2.0], dtype="float64")
    >>> v, g = func.value_and_grad(lambda t: (t * t).sum())(x)
    >>> float(v), g.tolist()
    (5.0, [2.0, 4.0])
    """

    _check_argnums(argnums, "func.value_and_grad")

    def value_and_grad_f(*args: Any, **kwargs: Any) -> Any:
        out, g, aux = _value_and_grad_impl(f, argnums, has_aux, "func.value_and_grad", args, kwargs)
        return ((out, aux), g) if has_aux else (out, g)

    value_and_grad_f.__name__ = f"value_and_grad_{getattr(f, '__name__', 'f')}"
    return value_and_grad_f


def _as_outputs(res: Any, who: str) -> tuple[list[Tensor], bool]:
    """The outputs of a function ``vjp``, ``jvp`` or ``jacobian`` differentiates: Tensors of
    a floating-point dtype (an integer output has no derivative: its Jacobian was all
    zeros; torch.func refuses it too)."""
    if isinstance(res, Tensor):
        outs, single = [res], True
    elif isinstance(res, tuple | list) and res and all(isinstance(r, Tensor) for r in res):
        outs, single = list(res), False
    else:
        raise TypeError(
            f"{who}: the function must return a Tensor or a tuple of Tensors, got {res!r}"
        )
    for i, o in enumerate(outs):
        if o.dtype not in o._backend.floating:
            raise TypeError(
                f"{who}: the function's outputs must be floating-point Tensors, but output "
                f"{i} has dtype {o._backend.dtype_name(o.dtype)}; differentiate the float "
                f"values the integers come from"
            )
    return outs, single


def _cotangent(c: Any, out: Tensor, who: str) -> Any:
    if isinstance(c, Tensor):
        if c.shape != out.shape:
            raise ValueError(
                f"{who}: a cotangent has shape {c.shape} but its output has shape {out.shape}"
            )
        return c
    return c


def vjp(f: Callable[..., Any], *primals: Any, has_aux: bool = False) -> tuple[Any, ...]:
    """The output of ``f(*primals)`` and a function computing vector-Jacobian products.

    Parameters
    ----------
    f : callable
        Takes the primals (Tensors) and returns a Tensor or a tuple of Tensors (or
        ``(output, aux)`` with ``has_aux=True``).
    *primals : Tensor
        Where to evaluate ``f``.
    has_aux : bool

    Returns
    -------
    (output, vjp_fn) or (output, vjp_fn, aux)
        ``vjp_fn(cotangents)`` takes one cotangent per output (a Tensor of the
        output's shape; a tuple for several outputs) and returns a tuple with one
        gradient per primal. It can be called any number of times.

    Examples
    --------
    >>> import minitorch
    >>> from minitorch import func
    >>> x = minitorch.tensor([1.0, 2.0], dtype="float64")
    >>> out, vjp_fn = func.vjp(lambda t: t * t, x)
    >>> (g,) = vjp_fn(minitorch.tensor([1.0, 10.0], dtype="float64"))
    >>> g.tolist()
    [2.0, 40.0]
    """
    who = "func.vjp"
    if not primals:
        raise TypeError(f"{who}: needs at least one primal")
    keep = _tracking(primals)
    enabled = _grad_mode.is_grad_enabled()
    with _grad_mode.enable_grad(), _Transform():
        xs = [_alias(_check_tensor(p, who, f"primal {i}")) for i, p in enumerate(primals)]
        res, aux = _split_aux(f(*xs), has_aux, who)
    outs, single = _as_outputs(res, who)
    keep = keep or (enabled and _closes_over(outs, xs))

    def vjp_fn(cotangents: Any) -> tuple[Tensor, ...]:
        cts = [cotangents] if single else list(cotangents)
        if len(cts) != len(outs):
            raise ValueError(f"{who}: got {len(cts)} cotangents for {len(outs)} outputs")
        cts = [_cotangent(c, o, who) for c, o in zip(cts, outs, strict=True)]
        create = keep or _tracking(cts)
        with _grad_mode.enable_grad(), _Transform():
            gs = _grads(outs, xs, cts, create)
        return gs if create else tuple(g.detach() for g in gs)

    shown: Any = outs[0] if single else tuple(outs)
    if not keep:
        shown = shown.detach() if single else tuple(o.detach() for o in shown)
    return (shown, vjp_fn, aux) if has_aux else (shown, vjp_fn)


def jvp(
    f: Callable[..., Any], primals: Sequence[Tensor], tangents: Sequence[Tensor]
) -> tuple[Any, Any]:
    """The output of ``f(*primals)`` and the Jacobian-vector product ``J @ tangents``.

    Computed with two reverse passes (the double-VJP trick): ``u -> J^T u`` is linear
    in ``u``, and its VJP with the tangent ``t`` is ``J t``.

    Parameters
    ----------
    f : callable
        Takes the primals and returns a Tensor or a tuple of Tensors.
    primals, tangents : tuple of Tensor
        Tangents have the primals' shapes.

    Returns
    -------
    (output, jvp_out)
        ``jvp_out`` has the output's shape (a tuple for several outputs).

    Examples
    --------
    >>> import minitorch
    >>> from minitorch import func
    >>> x = minitorch.tensor([1.0, 2.0], dtype="float64")
    >>> t = minitorch.tensor([1.0, 0.5], dtype="float64")
    >>> out, jt = func.jvp(lambda a: a ** 3, (x,), (t,))
    >>> jt.tolist()
    [3.0, 6.0]
    """
    who = "func.jvp"
    primals = tuple(primals) if isinstance(primals, tuple | list) else (primals,)  # type: ignore[assignment]
    tangents = tuple(tangents) if isinstance(tangents, tuple | list) else (tangents,)  # type: ignore[assignment]
    if len(primals) != len(tangents):
        raise ValueError(f"{who}: got {len(primals)} primals but {len(tangents)} tangents")
    for i, (p, t) in enumerate(zip(primals, tangents, strict=True)):
        _check_tensor(p, who, f"primal {i}")
        if not isinstance(t, Tensor) or t.shape != p.shape:
            shape = t.shape if isinstance(t, Tensor) else type(t).__name__
            raise ValueError(f"{who}: tangent {i} must be a Tensor of shape {p.shape}, got {shape}")
    keep = _tracking((*primals, *tangents))
    enabled = _grad_mode.is_grad_enabled()
    with _grad_mode.enable_grad(), _Transform():
        xs = [_alias(p) for p in primals]
        outs, single = _as_outputs(f(*xs), who)
        keep = keep or (enabled and _closes_over(outs, xs))
        # u_k: dummy cotangents; J^T u is linear in them
        us = [zeros_like(o).requires_grad_() for o in outs]
        # J^T u, one per primal, recorded so that it can be differentiated with respect to u
        jtus = _grads(outs, xs, us, True)
        # J t = d<sum_i <(J^T u)_i, t_i>>/du; a J^T u with no graph is constant in u
        jts = _grads(jtus, us, tangents, keep)
    if not keep:
        outs = [o.detach() for o in outs]
        jts = tuple(j.detach() for j in jts)
    return (outs[0], jts[0]) if single else (tuple(outs), jts)


def jacobian(
    f: Callable[..., Any], argnums: Argnums = 0, has_aux: bool = False
) -> Callable[..., Any]:
    """The Jacobian of ``f``, as a function (reverse mode: one VJP per output element).

    Parameters
    ----------
    f : callable
        Returns a Tensor or a tuple of Tensors (or ``(output, aux)`` with ``has_aux``).
    argnums : int or tuple of int
    has_aux : bool

    Returns
    -------
    callable
        ``jacobian(f)(*args)``: a Tensor of shape ``out.shape + arg.shape``; a tuple
        over ``argnums`` when it is a tuple, and a tuple over outputs when ``f``
        returns several (outputs first, then argnums, as ``torch.func.jacrev``).

    Examples
    --------
    >>> import minitorch
    >>> from minitorch import func
    >>> x = minitorch.tensor([1.0, 2.0], dtype="float64")
    >>> func.jacobian(lambda t: t * t)(x).tolist()
    [[2.0, 0.0], [0.0, 4.0]]
    """
    return _jacobian(f, argnums, has_aux, "func.jacobian")


def _jacobian(
    f: Callable[..., Any], argnums: Argnums, has_aux: bool, who: str
) -> Callable[..., Any]:
    """:func:`jacobian`, whose errors name ``who`` (the transform the user called)."""
    _check_argnums(argnums, who)

    def jac_f(*args: Any, **kwargs: Any) -> Any:
        nums = _normalize_argnums(argnums, len(args), who)
        keep = _tracking(args)
        enabled = _grad_mode.is_grad_enabled()
        with _grad_mode.enable_grad(), _Transform():
            call = _aliased(args, nums, who)
            res, aux = _split_aux(f(*call, **kwargs), has_aux, who)
            outs, single = _as_outputs(res, who)
            xs = [call[i] for i in nums]
            keep = keep or (enabled and _closes_over(outs, xs))
            per_out = []
            for o in outs:
                n = o.size
                be = o._backend
                eye = be.xp.eye(n, dtype=o.data.dtype, device=o.device) if n else None
                rows: list[list[Tensor]] = [[] for _ in xs]
                for j in range(n):
                    assert eye is not None
                    seed = Tensor._make(be.xp.reshape(eye[j, ...], o.shape), be, None)
                    for k, g in enumerate(_grads([o], xs, [seed], keep)):
                        rows[k].append(g)
                jacs = []
                for k, x in enumerate(xs):
                    if n:
                        jk = reshape(stack(rows[k], axis=0), (*o.shape, *x.shape))
                    else:  # no output element: the Jacobian has no element either
                        jk = reshape(zeros_like(o, dtype=x.dtype), (*o.shape, *x.shape))
                    jacs.append(jk if keep else jk.detach())
                per_out.append(tuple(jacs) if isinstance(argnums, tuple | list) else jacs[0])
        result: Any = per_out[0] if single else tuple(per_out)
        return (result, aux) if has_aux else result

    jac_f.__name__ = f"jacobian_{getattr(f, '__name__', 'f')}"
    return jac_f


def hessian(f: Callable[..., Any], argnums: Argnums = 0) -> Callable[..., Any]:
    """The Hessian of a scalar function: ``jacobian(grad(f, argnums), argnums)``.

    Returns
    -------
    callable
        ``hessian(f)(*args)``: a Tensor of shape ``arg.shape + arg.shape``; with a
        tuple ``argnums``, nested tuples ``H[i][j]`` of shape
        ``args[i].shape + args[j].shape``.

    Examples
    --------
    >>> import minitorch
    >>> from minitorch import func
    >>> x = minitorch.tensor([1.0, 2.0], dtype="float64")
    >>> func.hessian(lambda t: (t ** 3).sum())(x).tolist()
    [[6.0, 0.0], [0.0, 12.0]]
    """
    return _jacobian(_grad(f, argnums, False, "func.hessian"), argnums, False, "func.hessian")
