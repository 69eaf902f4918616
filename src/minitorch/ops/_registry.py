"""The op registry: every op is declared once, with its forward, VJP and facts.

``defop`` takes an op's forward ``fwd(xp, *arrays, **params) -> (out, saved)`` and its
VJP ``vjp(xp, g, saved, needs, **params) -> one gradient (or None) per input``, plus
the op's *facts* (reference, sampling domain, kinks, tolerances, skips), and returns the
public function. The Tensor method and operators are bound from the same declaration,
and the test suites, ``minitorch check`` and the op table in the docs all read
``REGISTRY``.

Rules for a VJP (they make higher-order derivatives free):

* use only operators and ``xp.`` calls, so the same rule runs on backend arrays (a
  normal backward) and on Tensors (``create_graph=True``, where ``xp`` is
  :mod:`minitorch.array_api`);
* ``saved`` may hold the op's inputs, its output, and non-differentiable constants
  (masks, indices, shapes). A value *derived* from those (e.g. cross-entropy's
  ``softmax - onehot``) may be saved as a shortcut if its index is listed in
  ``defop(derived=...)``: with ``create_graph=True`` the engine passes None in its
  place and the VJP recomputes it from the inputs, so that it is differentiated too;
* return gradients in the output's (broadcast) shape: the engine sums them down to each
  input's shape and accumulates fan-out.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..autograd import apply
from ..backend import get_backend
from ..tensor import Tensor

__all__ = ["REGISTRY", "Facts", "OpDef", "Sample", "defop"]

Fwd = Callable[..., tuple[Any, tuple[Any, ...]]]
Vjp = Callable[..., Sequence[Any]]


@dataclasses.dataclass(frozen=True)
class Sample:
    """One test input for an op: shapes of its tensor inputs and its parameters.

    Each entry of ``shapes`` is a shape (a floating input drawn from the op's domain)
    or a Python number (passed as it is, e.g. the exponent of ``x ** 3``). ``make(rng)``
    may build the inputs itself (NumPy arrays), e.g. integer indices.
    """

    shapes: tuple[Any, ...] = ()
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    make: Callable[[np.random.Generator], tuple[np.ndarray, ...]] | None = None
    name: str = ""


@dataclasses.dataclass(frozen=True)
class Facts:
    """What the generic tests, ``minitorch check`` and the docs need to know of an op.

    Attributes
    ----------
    ref : callable, optional
        ``ref(torch, *torch_tensors, **params)``: the PyTorch reference (tests only).
    samples : tuple of Sample
        Inputs the generic tests run on.
    domain : (low, high)
        Where floating inputs are drawn from.
    kinks : tuple of float
        Points where the op is not differentiable; samples keep away from them.
    grad_inputs : tuple of int, optional
        Which inputs are differentiable (default: every floating input).
    kind : str
        ``unary``, ``binary`` (broadcasting elementwise), ``reduction`` or ``other``:
        picks the hypothesis strategy.
    tol : dict
        Per-dtype ``(atol, rtol)`` overrides for forward and gradient checks.
    skips : dict
        ``backend name -> reason`` where the op cannot be checked.
    second_order : str
        ``"yes"``, or why higher derivatives are zero/undefined.
    formula : str
        The VJP in words, for the op table.
    """

    ref: Callable[..., Any] | None = None
    samples: tuple[Sample, ...] = ()
    domain: tuple[float, float] = (-2.0, 2.0)
    kinks: tuple[float, ...] = ()
    grad_inputs: tuple[int, ...] | None = None
    kind: str = "other"
    tol: dict[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    skips: dict[str, str] = dataclasses.field(default_factory=dict)
    second_order: str = "yes"
    formula: str = ""


@dataclasses.dataclass(frozen=True, eq=False, slots=True)
class OpDef:
    """A registered op. ``vjp is None`` marks a non-differentiable op (comparisons);
    ``compose`` marks an op written in terms of other ops (its derivative comes from
    the chain rule)."""

    name: str
    fwd: Fwd | None
    vjp: Vjp | None
    nin: int
    params: tuple[str, ...]
    defaults: dict[str, Any]
    scalars: bool
    moves: bool
    facts: Facts
    compose: Callable[..., Tensor] | None = None
    family: str = ""
    fn: Callable[..., Any] | None = None
    derived: tuple[int, ...] = ()

    @property
    def differentiable(self) -> bool:
        return self.vjp is not None or self.compose is not None

    def __repr__(self) -> str:
        return f"<op {self.name}>"


REGISTRY: dict[str, OpDef] = {}
_EMPTY: dict[str, Any] = {}  # shared by every call without parameters; never mutated


def _first_tensor(args: Sequence[Any]) -> Tensor | None:
    for a in args:
        if isinstance(a, Tensor):
            return a
    return None


def as_tensor_args(op: OpDef, args: Sequence[Any]) -> list[Any]:
    """Tensors stay; Python scalars stay (if the op takes them) or become 0-d arrays;
    anything array-like becomes a constant Tensor on the first Tensor's backend."""
    first = _first_tensor(args)
    be = first._backend if first is not None else get_backend()
    ref_dtype = None
    for a in args:
        if isinstance(a, Tensor) and be.xp.isdtype(a.data.dtype, "real floating"):
            ref_dtype = a.data.dtype
            break
    out: list[Any] = []
    for a in args:
        if isinstance(a, np.generic):
            # NumPy scalars act as Python numbers: `float32 tensor * np.float64(2)` stays
            # float32 (NumPy's NEP 50 would upcast it; strict and JAX refuse them).
            a = a.item()
        scalar_ok = isinstance(a, bool | int | float) and op.scalars and first is not None
        if isinstance(a, Tensor) or scalar_ok:
            out.append(a)
        else:
            from ..creation import _as_backend_array

            if isinstance(a, bool):
                dt = be.dtypes["bool"]
            elif isinstance(a, float) or (isinstance(a, int) and ref_dtype is not None):
                dt = ref_dtype if ref_dtype is not None else be.dtype
            elif isinstance(a, list | tuple) and ref_dtype is not None:
                arr = np.asarray(a)
                dt = ref_dtype if arr.dtype.kind in "fiu" else None
            else:
                dt = None
            device = first.device if first is not None else be.device
            out.append(Tensor._make(_as_backend_array(a, be, dt, device), be, None))
    return out


def defop(
    name: str,
    fwd: Fwd | None = None,
    vjp: Vjp | None = None,
    *,
    nin: int = 1,
    method: bool | str | Callable[..., Any] = False,
    dunders: Sequence[str] = (),
    rdunders: Sequence[str] = (),
    scalars: bool = False,
    moves: bool = False,
    compose: Callable[..., Tensor] | None = None,
    prepare: Callable[[Sequence[Any], dict[str, Any]], dict[str, Any]] | None = None,
    derived: Sequence[int] = (),
    facts: Facts | None = None,
    doc: str | None = None,
) -> Callable[..., Tensor]:
    """Declare an op and return its public function.

    ``nin`` is the number of leading tensor arguments (``-1``: one sequence of tensors,
    as in ``concat``); the remaining arguments are parameters, named as in ``fwd``.
    ``method`` binds it as a Tensor method (under ``name``, or the given name or
    callable); ``dunders`` / ``rdunders`` bind operators (reflected: ``other op self``).
    ``prepare(tensors, params)`` may validate and normalise the parameters first.
    ``derived`` lists the indices of saved values the VJP may recompute (see above).
    """
    if name in REGISTRY:
        raise ValueError(f"op {name!r} is registered twice")
    target = compose if compose is not None else fwd
    assert target is not None, name
    sig = inspect.signature(target)
    plist = list(sig.parameters.values())
    skip = (0 if compose is not None else 1) + (1 if nin == -1 else nin)
    pnames = tuple(p.name for p in plist[skip:])
    defaults = {p.name: p.default for p in plist[skip:] if p.default is not inspect.Parameter.empty}
    op = OpDef(
        name=name,
        fwd=fwd,
        vjp=vjp,
        nin=nin,
        params=pnames,
        defaults=defaults,
        scalars=scalars,
        moves=moves,
        facts=facts or Facts(),
        compose=compose,
        family=(target.__module__ or "").rsplit(".", 1)[-1],
        derived=tuple(derived),
    )
    n = nin
    plain = compose is None and prepare is None and nin > 0
    # a call with the tensors alone uses the defaults; `defaults` is shared, never mutated
    plain_params = defaults if defaults else _EMPTY

    def fn(*args: Any, **kwargs: Any) -> Any:
        if plain and not kwargs and len(args) == n:
            # the hot path: tensors (and Python numbers where the op takes them) only
            for a in args:
                t = type(a)
                if not (t is Tensor or (scalars and (t is float or t is int))):
                    break
            else:
                return apply(op, args, plain_params)
        if n == -1:
            tensors: Sequence[Any] = list(args[0]) if args else []
            rest = args[1:]
            if not tensors:
                raise ValueError(f"{name}: needs a non-empty sequence of tensors")
        else:
            if len(args) < n:
                raise TypeError(f"{name}() takes {n} tensor argument(s), got {len(args)}")
            tensors, rest = args[:n], args[n:]
        if len(rest) > len(pnames):
            raise TypeError(f"{name}() takes at most {len(pnames)} parameter(s) after the tensors")
        if rest or kwargs or defaults:
            params = dict(defaults)
            params.update(zip(pnames, rest, strict=False))
            for k, v in kwargs.items():
                if k not in pnames:
                    raise TypeError(
                        f"{name}() got an unexpected keyword argument {k!r}; "
                        f"it takes {', '.join(pnames) or 'no parameters'}"
                    )
                params[k] = v
            missing = [p for p in pnames if p not in params]
            if missing:
                raise TypeError(f"{name}() missing parameter(s): {', '.join(missing)}")
        else:
            params = _EMPTY
        if prepare is not None:
            params = prepare(tensors, params)
        if compose is not None:
            return compose(*as_tensor_args(op, tensors), **params)
        if n != -1 and all(type(t) is Tensor for t in tensors):
            return apply(op, tensors, params)
        return apply(op, as_tensor_args(op, tensors), params)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc or target.__doc__
    fn.__module__ = "minitorch"
    params_sig = plist[skip:]
    if nin == -1:
        lead = [inspect.Parameter("tensors", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    else:
        lead = [p.replace(annotation=inspect.Parameter.empty) for p in plist[skip - nin : skip]]
    fn.__signature__ = sig.replace(parameters=[*lead, *params_sig], return_annotation="Tensor")  # type: ignore[attr-defined]
    object.__setattr__(op, "fn", fn)
    REGISTRY[name] = op
    if method:
        if callable(method) and not isinstance(method, bool):
            setattr(Tensor, getattr(method, "__name__", name), method)
        else:
            setattr(Tensor, name if method is True else str(method), fn)
    for d in dunders:
        setattr(Tensor, d, _dunder(op, fn, plain_params) if plain and nin == 2 else fn)
    for d in rdunders:
        setattr(Tensor, d, _reflected(fn))
    return fn


def _dunder(op: OpDef, fn: Callable[..., Any], params: dict[str, Any]) -> Callable[..., Any]:
    """``tensor <op> other``: straight to ``apply`` when ``other`` is a Tensor too (the
    hot path of every model), else through the public function."""

    def method(self: Tensor, other: Any) -> Any:
        if type(other) is Tensor:
            return apply(op, (self, other), params)
        return fn(self, other)

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _reflected(fn: Callable[..., Any]) -> Callable[..., Any]:
    def r(self: Tensor, other: Any) -> Any:
        return fn(other, self)

    r.__name__ = f"r{fn.__name__}"
    return r
