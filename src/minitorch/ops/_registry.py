"""The op registry: every op is declared once, with its forward, VJP and facts.

``defop`` takes an op's forward ``fwd(xp, *arrays, **params) -> (out, saved)`` and its
VJP ``vjp(xp, g, saved, needs, **params) -> one gradient (or None) per input``, plus
the op's *facts* (reference, sampling domain, kinks, tolerances, skips), and returns the
public function. Everything else is derived from that one declaration: the Tensor
methods and operators (bound here), the entry in the differentiable namespace
(:mod:`minitorch.array_api`), the export from ``minitorch`` and the typed method
signatures (``nox -s regen``), the op table in ``docs/ops.md``, and the generic tests
and ``minitorch check``, which read ``REGISTRY``.

``defop`` is public (``minitorch.defop``): code outside the package declares its own
ops exactly as minitorch's built-in ones are declared (docs/custom-ops.md).

Rules for a VJP (they make higher-order derivatives free):

* use only operators and ``xp.`` calls, so the same rule runs on backend arrays (a
  normal backward) and on Tensors (``create_graph=True``, where ``xp`` is the
  differentiable namespace of the tensors' backend);
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

from ..backend import Backend, as_array, get_backend
from ..backend.promotion import check_int_fits
from ..errors import KEYWORD_SPELLINGS, SIGNATURE_SPELLINGS, OpError
from ..tensor import INT64_MAX, INT64_MIN, TENSOR_TYPES, Tensor, apply

__all__ = [
    "BOUND",
    "OPERATORS",
    "REGISTRY",
    "Facts",
    "InputError",
    "OpDef",
    "Sample",
    "call",
    "defop",
    "tensor_method",
]

Fwd = Callable[..., tuple[Any, tuple[Any, ...]]]
Vjp = Callable[..., Sequence[Any]]
BUILTIN_PACKAGE = __name__.rsplit(".", 1)[0]  # minitorch.ops


class InputError(ValueError):
    """An op's forward refuses its inputs, with its own message of what is wrong and
    what to do. The engine reports it as an :class:`~minitorch.OpError` that adds every
    input's shape, dtype and backend (a forward has arrays, not Tensors, to name)."""


@dataclasses.dataclass(frozen=True)
class Sample:
    """One test input for an op: shapes of its tensor inputs and its parameters.

    Each entry of ``shapes`` is a shape (a floating input drawn from the op's domain)
    or a Python number (passed as it is, e.g. the exponent of ``x ** 3``). ``make(rng)``
    may build the inputs itself (NumPy arrays, e.g. integer indices; Python numbers pass
    as they are).
    """

    shapes: tuple[Any, ...] = ()
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    make: Callable[[np.random.Generator], tuple[Any, ...]] | None = None
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
    prepare: Callable[[Sequence[Any], dict[str, Any]], dict[str, Any]] | None = None
    #: Tensor attributes bound to ``fn`` (methods and operators)
    methods: tuple[str, ...] = ()
    #: other public names of ``fn`` (e.g. ``cat`` for ``concat``)
    aliases: tuple[str, ...] = ()
    #: its name in the differentiable namespace, if the Array API standard's differs
    api: str | None = None
    #: the module that declared it
    module: str = ""
    #: cast the inputs from this index on to one dtype first (``backend.promotion``),
    #: None: leave them to the backend
    promote: int | None = None
    #: ... and to the default float dtype if they are integers (true division)
    promote_float: bool = False
    #: a comparison: a Python int an integer tensor's dtype cannot hold is kept as it
    #: is (the comparison answers it), not refused
    promote_compares: bool = False
    #: the answer for boolean inputs where the library refuses them (``defop(bools=)``)
    bools: Callable[..., Any] | None = None
    #: exported as ``minitorch.<name>`` (True), or a building block of the public
    #: function this names (e.g. ``"minitorch.linalg.svd"``): in the registry, the
    #: catalog and the differentiable namespace, but not a top-level name
    public: bool | str = True

    @property
    def differentiable(self) -> bool:
        return self.vjp is not None or self.compose is not None

    @property
    def builtin(self) -> bool:
        """Declared by minitorch itself (in ``minitorch.ops``), not by a user."""
        return self.module.startswith(BUILTIN_PACKAGE + ".")

    @property
    def public_names(self) -> tuple[str, ...]:
        """The names the public function goes by: the op's name and its aliases."""
        return (self.name, *self.aliases)

    @property
    def exported_names(self) -> tuple[str, ...]:
        """The names ``minitorch`` exports it under: its public names, or none for a
        building block (``public`` not True)."""
        return self.public_names if self.public is True else ()

    def __repr__(self) -> str:
        return f"<op {self.name}>"


REGISTRY: dict[str, OpDef] = {}
#: Tensor attribute -> what the registry bound there (op functions, operators and
#: :func:`tensor_method` functions): read by ``nox -s regen`` for the typed stubs.
BOUND: dict[str, Any] = {}
#: the Tensor attributes among those that are binary operators (``self <op> other``)
OPERATORS: set[str] = set()
_EMPTY: dict[str, Any] = {}  # shared by every call without parameters; never mutated


def _first_tensor(args: Sequence[Any]) -> Tensor | None:
    for a in args:
        if isinstance(a, Tensor):
            return a
    return None


def as_tensor_args(op: OpDef, args: Sequence[Any], backend: Backend | None = None) -> list[Any]:
    """Tensors stay; Python scalars stay (if the op takes them) or become 0-d arrays;
    anything array-like becomes a constant Tensor on the first Tensor's backend (or
    ``backend``, or the current one, where there is no Tensor)."""
    first = _first_tensor(args)
    be = first._backend if first is not None else backend or get_backend()
    ref_dtype = ref_int = None
    for a in args:
        if isinstance(a, Tensor) and be.xp.isdtype(a.data.dtype, "real floating"):
            ref_dtype = a.data.dtype
            break
    if ref_dtype is None and op.promote is not None:
        # maximum(int32 tensor, 2): int32, as `int32 tensor + 2` (a Python number takes
        # the tensor's dtype) where the number became an int64 array before
        ref_int = next(
            (
                a.data.dtype
                for a in args
                if isinstance(a, Tensor) and be.xp.isdtype(a.data.dtype, "integral")
            ),
            None,
        )
    # where(c, 1.0, 2.0): the values are numbers, and so become arrays (of the default
    # float dtype), as in PyTorch; xp.where of two numbers differs between backends
    value_tensor = _first_tensor(args[op.promote or 0 :]) is not None
    out: list[Any] = []
    values = op.promote or 0  # where(True, x, y): the condition is not a value
    for i, a in enumerate(args):
        if isinstance(a, np.generic):
            # NumPy scalars act as Python numbers: `float32 tensor * np.float64(2)` stays
            # float32 (NumPy's NEP 50 would upcast it; strict and JAX refuse them).
            a = a.item()
        scalar_ok = (
            isinstance(a, bool | int | float) and op.scalars and value_tensor and i >= values
        )
        if scalar_ok and type(a) is int and not INT64_MIN <= a <= INT64_MAX:
            a = _wide_int(op, a, be, args)
        if isinstance(a, Tensor) or scalar_ok:
            out.append(a)
            continue
        if isinstance(a, bool):
            dt = be.dtypes["bool"]
        elif isinstance(a, float) or (isinstance(a, int) and ref_dtype is not None):
            dt = ref_dtype if ref_dtype is not None else be.dtype
        elif isinstance(a, int) and ref_int is not None:
            dt = ref_int
            try:  # maximum(int8 tensor, 300) wrapped 300 to 44
                check_int_fits(be, dt, a)
            except OverflowError as exc:
                raise OpError(f"{op.name}: {exc}") from None
        elif isinstance(a, list | tuple) and ref_dtype is not None:
            try:
                kind = np.asarray(a).dtype.kind
            except ValueError:  # ragged: as_array below says so, naming the op
                kind = "O"
            dt = ref_dtype if kind in "fiu" else None
        elif isinstance(a, complex):
            # the complex tensor's dtype (complex64 * 1j stays complex64, the standard)
            dt = next(
                (
                    t.data.dtype
                    for t in args
                    if isinstance(t, Tensor) and be.xp.isdtype(t.data.dtype, "complex floating")
                ),
                None,
            )
        else:
            dt = None
        device = first.device if first is not None else be.device
        try:
            arr = as_array(a, be, dt, device)
        except TypeError as exc:  # not numbers: say which op was given them
            raise TypeError(f"{op.name}: {exc}") from exc
        out.append(Tensor._make(arr, be, None))
    return out


def _wide_int(op: OpDef, a: int, be: Backend, args: Sequence[Any]) -> int | float:
    """A Python int operand beyond int64, as NumPy takes it: the float it rounds to
    where the op computes in floats (a floating tensor, or a function of real numbers);
    refused where it would be an integer (torch wrapped it around or overflowed)."""
    dtypes = [t.data.dtype for t in args if isinstance(t, Tensor)]
    if 0 <= a < 2**64 and any(be.dtype_name(d) == "uint64" for d in dtypes):
        return a  # a uint64 tensor holds it
    floating = any(be.xp.isdtype(d, ("real floating", "complex floating")) for d in dtypes)
    if op.promote_compares and not floating:
        return a  # an integer tensor == 2**70: the comparison answers (all False)
    if op.promote_float or floating:
        if abs(a) < 2**1024:
            return float(a)
        where = "beyond the float64 range"
    else:
        where = "beyond int64, the integer dtype this op computes in"
    digits = len(str(abs(a)))
    shown = (
        str(a) if digits <= 30 else f"{'-' if a < 0 else ''}{str(abs(a))[:4]}... ({digits} digits)"
    )
    raise ValueError(
        f"{op.name}: the Python int {shown} is {where}; pass a float within range, or "
        f"convert an integer tensor to a floating dtype first, e.g. x.astype('float64')"
    )


def call(
    op: OpDef, args: Sequence[Any], kwargs: dict[str, Any], backend: Backend | None = None
) -> Any:
    """Call ``op`` as its public function does, with ``backend`` for the constants made
    from non-Tensor inputs when no input is a Tensor (the differentiable namespace
    passes its own)."""
    n = op.nin
    if n == -1:
        tensors: Sequence[Any] = list(args[0]) if args else []
        rest = args[1:]
        if not tensors:
            raise ValueError(f"{op.name}: needs a non-empty sequence of tensors")
    else:
        if len(args) < n:
            raise TypeError(f"{op.name}() takes {n} tensor argument(s), got {len(args)}")
        tensors, rest = args[:n], args[n:]
    pnames = op.params
    if len(rest) > len(pnames):
        message = (
            f"{op.name}() takes at most {len(pnames)} parameter(s) after the tensors "
            f"({', '.join(pnames) or 'none'}), got {len(rest)}"
        )
        if op.name in SIGNATURE_SPELLINGS:
            theirs, ours = SIGNATURE_SPELLINGS[op.name]
            message += f"; PyTorch's {theirs} is written {ours}"
        raise TypeError(message)
    if rest or kwargs or pnames:
        params = dict(op.defaults)
        params.update(zip(pnames, rest, strict=False))
        for k, v in kwargs.items():
            if k not in pnames:
                keyword = KEYWORD_SPELLINGS.get(k)
                raise TypeError(
                    f"{op.name}() got an unexpected keyword argument {k!r}; "
                    f"it takes {', '.join(pnames) or 'no parameters'}"
                    + (f" (PyTorch's {k}= is written {keyword}=)" if keyword in pnames else "")
                )
            params[k] = v
        missing = [p for p in pnames if p not in params]
        if missing:
            raise missing_parameters(op.name, missing)
        for k, v in params.items():
            if isinstance(v, np.generic) or (
                type(v) in (tuple, list) and any(isinstance(e, np.generic) for e in v)
            ):
                params[k] = _plain(v)
    else:
        params = _EMPTY
    if op.prepare is not None:
        params = op.prepare(tensors, params)
    if op.compose is not None:
        return op.compose(*as_tensor_args(op, tensors, backend), **params)
    if n != -1 and backend is None and all(type(t) in TENSOR_TYPES for t in tensors):
        return apply(op, tensors, params)
    return apply(op, as_tensor_args(op, tensors, backend), params)


def _plain(v: Any) -> Any:
    """A parameter with NumPy scalars as the Python numbers they stand for
    (``sum(x, axis=np.int64(1))``, ``keepdims=np.True_``), in a tuple or list too."""
    if isinstance(v, np.generic):
        return v.item()
    return type(v)(e.item() if isinstance(e, np.generic) else e for e in v)


_PROMOTE: dict[str | None, int | None] = {
    None: None,
    "operands": 0,
    "values": 1,
    "division": 0,
    "float": 0,
    "comparison": 0,
}


def defop(
    name: str,
    fwd: Fwd | None = None,
    vjp: Vjp | None = None,
    *,
    nin: int = 1,
    method: bool | str | Sequence[str] = False,
    dunders: Sequence[str] = (),
    rdunders: Sequence[str] = (),
    aliases: Sequence[str] = (),
    api: str | None = None,
    scalars: bool = False,
    moves: bool = False,
    compose: Callable[..., Tensor] | None = None,
    prepare: Callable[[Sequence[Any], dict[str, Any]], dict[str, Any]] | None = None,
    derived: Sequence[int] = (),
    promote: str | None = None,
    bools: Callable[..., Any] | None = None,
    facts: Facts | None = None,
    doc: str | None = None,
    public: bool | str = True,
) -> Callable[..., Tensor]:
    """Declare an op and return its public function.

    Parameters
    ----------
    name : str
        The op's name: a Python identifier, unique among all ops.
    fwd : callable
        ``fwd(xp, *arrays, **params) -> (out, saved)``.
    vjp : callable, optional
        ``vjp(xp, g, saved, needs, **params)``: one gradient (or None) per input. None
        declares an op without gradient (a comparison).
    nin : int
        The number of leading tensor arguments (``-1``: one sequence of tensors, as in
        ``concat``); the remaining arguments are parameters, named as in ``fwd``.
    method : bool, str or sequence of str
        Bind the public function as a Tensor method: under ``name`` (True) or the
        given name(s).
    dunders, rdunders : sequence of str
        Bind operators (``rdunders`` reflected: ``other op self``).
    aliases : sequence of str
        More public names (``cat`` for ``concat``).
    api : str, optional
        The op's name in the Array API standard, where it differs from ``name`` (it is
        also listed in the differentiable namespace under that name).
    scalars : bool
        Python numbers may stand for tensor inputs (``x * 2``).
    moves : bool
        The result belongs to ``params["backend"]`` (moving between backends).
    compose : callable, optional
        An op written in terms of other ops (no fwd/vjp: the chain rule differentiates it).
    prepare : callable, optional
        ``prepare(tensors, params) -> params``: validate and normalise parameters.
    derived : sequence of int
        Indices of saved values the VJP may recompute (see the rules above).
    promote : str, optional
        Cast the tensor inputs to one dtype first, by minitorch's promotion table
        (:mod:`minitorch.backend.promotion`): ``"operands"`` (all of them),
        ``"values"`` (all but the first, as ``where``'s condition), ``"division"``
        (all, and integers to the default float dtype), ``"float"`` (the same, for a
        function of real numbers such as ``exp``: an integer or boolean input is
        converted to the default float dtype first, as in PyTorch), ``"comparison"``
        (as ``"operands"``, but a Python int that an integer tensor's dtype cannot hold
        reaches the forward as it is, which answers it: ``int8_x == 300`` is all False;
        the other modes refuse it).
    bools : callable, optional
        ``bools(xp, *arrays, **params) -> out``: the answer for boolean inputs where a
        library refuses them (array-api-strict refuses ``bool + bool``, torch ``abs`` of
        a boolean tensor), so that every backend answers as NumPy and PyTorch do
        (``add``: logical or). Called only when the forward raised and every input is
        boolean (a Python bool becomes a 0-d array first); the result has no gradient.
    facts : Facts, optional
        What the generic tests, ``minitorch check`` and the docs need to know.
    doc : str, optional
        The docstring (default: the forward's).
    public : bool or str
        True: a built-in op is exported as ``minitorch.<name>``. False, or the name of
        the public function it is a building block of (``"minitorch.linalg.svd"`` for
        ``svd_u``): not exported, nor bound on Tensor (no ``method``, ``dunders`` or
        ``aliases``); still an op of the registry, the catalog and the differentiable
        namespace.

    Raises
    ------
    ValueError
        If the name, an alias or a method name is taken by another op or by a Tensor
        attribute. Declaring the same op again from the same module (re-running a
        notebook cell, reloading a module) replaces it.
    """
    target = compose if compose is not None else fwd
    if target is None:
        raise TypeError(f"defop: {name}: give the forward (fwd) or compose=")
    module = target.__module__ or ""
    qualname = getattr(target, "__qualname__", name)
    if isinstance(method, str):
        methods: tuple[str, ...] = (method,)
    elif method is True:
        methods = (name,)
    elif method is False:
        methods = ()
    else:
        methods = tuple(method)
    bound = (*methods, *dunders, *rdunders)
    if public is not True and (bound or aliases):
        raise ValueError(
            f"defop: {name}: an op that is not public (public={public!r}) has no Tensor "
            f"methods, operators or aliases; leave method=, dunders=, rdunders= and "
            f"aliases= out, or make it public"
        )
    if not isinstance(public, bool | str):
        raise TypeError(f"defop: {name}: public must be True, False or a str, got {public!r}")
    replaces = _check_names(name, module, qualname, tuple(aliases), bound)
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
        family=module.rsplit(".", 1)[-1] if module.startswith(BUILTIN_PACKAGE + ".") else module,
        derived=tuple(derived),
        prepare=prepare,
        methods=bound,
        aliases=tuple(aliases),
        api=api,
        module=module,
        promote=_PROMOTE[promote],
        promote_float=promote in ("division", "float"),
        promote_compares=promote == "comparison",
        bools=bools,
        public=public,
    )
    fn = _public_function(op, sig, skip, doc or target.__doc__)
    object.__setattr__(op, "fn", fn)
    if replaces is not None:
        _unbind(replaces)
    REGISTRY[name] = op
    plain = compose is None and prepare is None and nin == 2 and _all_defaulted(op)
    # a call with the tensors alone uses the defaults; `defaults` is shared, never mutated
    plain_params = defaults if defaults else _EMPTY
    for m in methods:
        _bind(m, fn)
    for d in dunders:
        _bind(d, _dunder(op, fn, plain_params) if plain else fn)
        if plain:
            OPERATORS.add(d)
    for d in rdunders:
        _bind(d, _reflected(op, fn, plain_params if plain else None))
        OPERATORS.add(d)
    return fn


def missing_parameters(who: str, names: Sequence[str]) -> TypeError:
    """The error for a call of ``who`` (an op, or the Tensor method that calls it)
    without its parameters ``names``, for the caller to raise."""
    return TypeError(f"{who}() missing parameter(s): {', '.join(names)}")


def _all_defaulted(op: OpDef) -> bool:
    """Whether every parameter of ``op`` has a default, so that a call with the tensors
    alone may skip :func:`call` (which names a missing parameter: ``broadcast_to(x)``
    without its shape reached the forward, and failed there in an OpError)."""
    return all(p in op.defaults for p in op.params)


def _public_function(
    op: OpDef, sig: inspect.Signature, skip: int, doc: str | None
) -> Callable[..., Any]:
    """The function users call: a fast path for tensors alone, else :func:`call`."""
    n = op.nin
    scalars = op.scalars
    plain = op.compose is None and op.prepare is None and n > 0 and _all_defaulted(op)
    plain_params = op.defaults if op.defaults else _EMPTY
    values = op.promote or 0  # where(c, x, y): x and y

    def fn(*args: Any, **kwargs: Any) -> Any:
        if plain and not kwargs and len(args) == n:
            # the hot path: tensors (and Python numbers where the op takes them) only
            for a in args:
                t = type(a)
                if not (t is Tensor or (scalars and (t is float or t is int)) or t in TENSOR_TYPES):
                    break
                if t is int and not INT64_MIN <= a <= INT64_MAX:
                    break  # an int beyond int64: call() makes it a float or refuses it
            else:
                # Python numbers alone (as values) go the slow way: made into arrays
                if (
                    not scalars
                    or type(args[values]) is Tensor
                    or _first_tensor(args[values:]) is not None
                ):
                    return apply(op, args, plain_params)
        return call(op, args, kwargs)

    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = doc
    fn.__module__ = "minitorch" if op.builtin and op.public is True else op.module
    plist = list(sig.parameters.values())
    if n == -1:
        lead = [inspect.Parameter("tensors", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    else:
        lead = [p.replace(annotation=inspect.Parameter.empty) for p in plist[skip - n : skip]]
    fn.__signature__ = sig.replace(  # type: ignore[attr-defined]
        parameters=[*lead, *plist[skip:]], return_annotation="Tensor"
    )
    return fn


def _check_names(
    name: str, module: str, qualname: str, aliases: tuple[str, ...], bound: tuple[str, ...]
) -> OpDef | None:
    """Refuse a name that another op or a Tensor attribute already has; returns the op
    this one replaces (the same op declared again by the same module), if any."""
    for n in (name, *aliases):
        if not n.isidentifier():
            raise ValueError(f"defop: op names must be Python identifiers, got {n!r}")
    old = REGISTRY.get(name)
    replaces = None
    if old is not None:
        old_target = old.compose if old.compose is not None else old.fwd
        if old.module == module and getattr(old_target, "__qualname__", None) == qualname:
            replaces = old
        else:
            raise ValueError(
                f"defop: an op named {name!r} is already registered ({_who(old)}); "
                f"choose another name, e.g. {module.split('.')[0].strip('_') or 'my'}_{name}"
            )
    for op in REGISTRY.values():
        if op is replaces:
            continue
        for a in aliases:
            if a in op.public_names:
                raise ValueError(f"defop: {name}: the alias {a!r} is already a name of {_who(op)}")
        if name in op.aliases:
            raise ValueError(f"defop: {name!r} is already a name of {_who(op)}")
    for attr in bound:
        if replaces is not None and attr in replaces.methods:
            continue  # the op being replaced holds it
        if attr in BOUND or _defined_on_tensor(attr):
            raise ValueError(
                f"defop: {name}: Tensor.{attr} already exists; bind the op under another "
                f"method name, or leave method= out and call it as a function"
            )
    return replaces


def _defined_on_tensor(attr: str) -> bool:
    """Tensor (or a subclass' base other than ``object``) already has ``attr``."""
    return any(attr in vars(c) for c in Tensor.__mro__ if c is not object)


def _who(op: OpDef) -> str:
    return f"minitorch's built-in op minitorch.{op.name}" if op.builtin else f"{op.module}"


def _bind(attr: str, value: Any) -> None:
    """Put ``value`` on Tensor as ``attr``: the one way methods get there."""
    setattr(Tensor, attr, value)
    BOUND[attr] = value


def _unbind(op: OpDef) -> None:
    for attr in op.methods:
        if attr in BOUND:
            del BOUND[attr]
            delattr(Tensor, attr)


def tensor_method(name: str, *, as_property: bool = False) -> Callable[[Any], Any]:
    """Decorator: bind a function written in terms of ops as ``Tensor.<name>`` (e.g.
    ``x.view(2, 3)``, ``x.T``); an op's own function is bound with ``defop(method=)``."""

    def bind(fn: Any) -> Any:
        if name in BOUND or _defined_on_tensor(name):
            raise ValueError(f"tensor_method: Tensor.{name} already exists")
        _bind(name, property(fn) if as_property else fn)
        return fn

    return bind


#: what an operator leaves to Python (NotImplemented), as PyTorch's do: never a number
_NOT_OPERANDS = (str, bytes, dict, set, frozenset)


def _dunder(op: OpDef, fn: Callable[..., Any], params: dict[str, Any]) -> Callable[..., Any]:
    """``tensor <op> other``: straight to ``apply`` when ``other`` is a Tensor too (the
    hot path of every model) or a Python number the op takes (``x * 0.5``), else
    through the public function."""
    scalars = op.scalars

    def method(self: Tensor, other: Any) -> Any:
        t = type(other)
        if t is Tensor or (
            scalars and (t is float or (t is int and INT64_MIN <= other <= INT64_MAX))
        ):  # a subclass, or an int beyond int64: fn's path
            return apply(op, (self, other), params)
        if other is None or isinstance(other, _NOT_OPERANDS):
            # Python's own answer: `x == None` is False, `x + "a"` a TypeError naming
            # the operator and both types
            return NotImplemented
        return fn(self, other)

    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def _reflected(
    op: OpDef, fn: Callable[..., Any], params: dict[str, Any] | None
) -> Callable[..., Any]:
    """``other <op> tensor``: straight to ``apply`` for a Python number the op takes
    (``1.0 - x``) where ``params`` are the plain call's (None: not a plain op), else
    through the public function."""
    fast = params if op.scalars else None

    def r(self: Tensor, other: Any) -> Any:
        t = type(other)
        if fast is not None and (t is float or (t is int and INT64_MIN <= other <= INT64_MAX)):
            return apply(op, (other, self), fast)
        if other is None or isinstance(other, _NOT_OPERANDS):
            return NotImplemented
        return fn(other, self)

    r.__name__ = f"r{fn.__name__}"
    return r
