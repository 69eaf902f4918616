"""``Module`` and ``Parameter``: what ``torch.nn.Module`` and ``torch.nn.Parameter`` are to
PyTorch, on minitorch tensors.

A Module registers, on attribute assignment, its Parameters and its sub-Modules (also
those inside a ``ModuleList``, ``Sequential`` or ``ModuleDict``: see ``containers.py``),
so that ``parameters()``, ``named_parameters()``, ``state_dict()``, ``load_state_dict()``,
``train()``/``eval()`` and ``zero_grad()`` reach every one of them.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

import numpy as np

import minitorch

__all__ = ["IncompatibleKeys", "Module", "Parameter"]


class Parameter(minitorch.Tensor):
    """A leaf tensor that a :class:`Module` registers as one of its parameters.

    ``Parameter(data)`` copies ``data`` (a Tensor, keeping its backend, or anything
    :func:`minitorch.tensor` takes, on the current backend) and sets
    ``requires_grad=True`` unless told otherwise. Ops on a Parameter give plain Tensors,
    as in PyTorch.

    Examples
    --------
    >>> import minitorch
    >>> from minimodel import Parameter
    >>> w = Parameter(minitorch.zeros(2, 3))
    >>> w.requires_grad, w.is_leaf, w.shape
    (True, True, (2, 3))
    """

    __slots__ = ()

    def __init__(self, data: Any, requires_grad: bool = True) -> None:
        super().__init__(data, requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # a Tensor pickles (and deep-copies) as a plain Tensor: wrap it again on the way
        # back, with its gradient and requires_grad
        plain = self.detach()
        plain.grad = self.grad
        return _rebuild_parameter, (plain, self.requires_grad)


def _rebuild_parameter(plain: minitorch.Tensor, requires_grad: bool) -> Parameter:
    p = Parameter(plain, requires_grad=requires_grad)
    p.grad = plain.grad
    return p


class IncompatibleKeys(NamedTuple):
    """What :meth:`Module.load_state_dict` did not match (with ``strict=False``)."""

    missing_keys: list[str]
    unexpected_keys: list[str]


class Module:
    """Base class of every layer and model: subclass it, assign Parameters and
    sub-Modules in ``__init__`` (after ``super().__init__()``), write ``forward``.

    Examples
    --------
    >>> import minitorch
    >>> from minimodel import Module, Parameter
    >>> class Scale(Module):
    ...     def __init__(self, n: int) -> None:
    ...         super().__init__()
    ...         self.weight = Parameter(minitorch.ones(n))
    ...
    ...     def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
    ...         return x * self.weight
    >>> m = Scale(3)
    >>> [name for name, _ in m.named_parameters()]
    ['weight']
    >>> m(minitorch.ones(3)).shape
    (3,)
    """

    training: bool
    _parameters: dict[str, Parameter]
    _modules: dict[str, Module]

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    # ---------------------------------------------------------------- registration
    def __setattr__(self, name: str, value: Any) -> None:
        params: dict[str, Parameter] | None = self.__dict__.get("_parameters")
        if params is None:
            raise AttributeError(
                f"cannot assign {name!r} before Module.__init__() ran: call "
                f"super().__init__() first in {type(self).__name__}.__init__"
            )
        modules: dict[str, Module] = self.__dict__["_modules"]
        if isinstance(value, Parameter):
            modules.pop(name, None)
            params[name] = value
        elif isinstance(value, Module):
            params.pop(name, None)
            modules[name] = value
        elif name in params and value is not None:
            raise TypeError(
                f"cannot assign {type(value).__name__} as parameter {name!r} of "
                f"{type(self).__name__} (a minimodel.Parameter or None expected); wrap it: "
                f"Parameter(value)"
            )
        elif name in modules and value is not None:
            raise TypeError(
                f"cannot assign {type(value).__name__} as sub-module {name!r} of "
                f"{type(self).__name__} (a minimodel.Module or None expected)"
            )
        elif value is None:
            params.pop(name, None)
            modules.pop(name, None)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._parameters.pop(name, None)
        self._modules.pop(name, None)
        object.__delattr__(self, name)

    # ---------------------------------------------------------------- forward
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation; every subclass defines it."""
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # ---------------------------------------------------------------- traversal
    def children(self) -> Iterator[Module]:
        """The direct sub-Modules, in the order they were assigned."""
        yield from self._modules.values()

    def named_modules(
        self, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        """This module (name ``prefix``) and every sub-Module, depth first: each once, or
        with ``remove_duplicate=False`` a module held in several places under each of its
        names (as ``torch.nn.Module.named_modules``)."""
        seen: set[int] = set()
        # each entry carries the ids of its ancestors: a module that holds itself (a
        # cycle) is not entered again
        stack: list[tuple[str, Module, frozenset[int]]] = [(prefix, self, frozenset())]
        while stack:
            name, mod, above = stack.pop()
            if id(mod) in (seen if remove_duplicate else above):
                continue
            seen.add(id(mod))
            yield name, mod
            path = above | {id(mod)}
            children = [(f"{name}.{k}" if name else k, m, path) for k, m in mod._modules.items()]
            stack.extend(reversed(children))

    def modules(self) -> Iterator[Module]:
        """This module and every sub-Module."""
        for _, mod in self.named_modules():
            yield mod

    def named_parameters(
        self, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """``("blocks.0.attn.qkv.weight", parameter)`` for every parameter, as
        ``torch.nn.Module.named_parameters``: a parameter shared by several modules (tied
        weights) once, under its first name, or with ``remove_duplicate=False`` under
        each of its names."""
        seen: set[int] = set()
        for mod_name, mod in self.named_modules(prefix, remove_duplicate):
            for name, p in mod._parameters.items():
                if remove_duplicate and id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{mod_name}.{name}" if mod_name else name), p

    def parameters(self) -> Iterator[Parameter]:
        """Every parameter, each once: what an optimizer takes."""
        for _, p in self.named_parameters():
            yield p

    def num_parameters(self) -> int:
        """The number of scalar parameters."""
        return sum(p.size for p in self.parameters())

    # ---------------------------------------------------------------- modes and grads
    def train(self, mode: bool = True) -> Module:
        """Set ``training`` on this module and every sub-Module (Dropout reads it)."""
        for mod in self.modules():
            object.__setattr__(mod, "training", bool(mode))
        return self

    def eval(self) -> Module:
        """``train(False)``: dropout off."""
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Set every parameter's ``.grad`` to None (the next backward starts afresh), or
        with ``set_to_none=False`` each existing one to zeros, as ``torch.nn.Module``."""
        if not isinstance(set_to_none, bool):
            raise TypeError(f"zero_grad: set_to_none must be True or False, got {set_to_none!r}")
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = minitorch.zeros_like(p)  # of its dtype, backend and device

    # ---------------------------------------------------------------- state
    def state_dict(self) -> dict[str, minitorch.Tensor]:
        """``{dotted name: tensor}`` for every parameter (PyTorch's names and order).

        A parameter that several modules hold (tied weights: ``head.weight =
        emb.weight``) is listed under each of its names, with the same tensor, as in
        PyTorch; so a state dict of a tied PyTorch model loads here and one of ours there
        (``parameters()`` still gives it once, for an optimizer).

        The tensors are detached and share the parameters' arrays (no copy), like
        PyTorch's. Unlike PyTorch's they do not follow later changes: minitorch never
        writes into an array (an optimizer step or ``copy_`` gives the parameter a new
        one), so a state dict keeps the values of the moment it was taken.
        """
        detached: dict[int, minitorch.Tensor] = {}
        out: dict[str, minitorch.Tensor] = {}
        for name, p in self.named_parameters(remove_duplicate=False):
            if id(p) not in detached:
                detached[id(p)] = p.detach()
            out[name] = detached[id(p)]
        return out

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True
    ) -> IncompatibleKeys:
        """Copy ``state_dict``'s values into the parameters, in place.

        Values may be Tensors of any backend, device and floating dtype, NumPy arrays,
        or other arrays NumPy reads, such as the CPU tensors of PyTorch's
        ``state_dict()`` or ``named_parameters()`` (detached first); each is moved and
        cast to its parameter's backend, device and dtype (``Parameter.copy_`` under
        ``minitorch.no_grad()``), so the parameters, and an optimizer holding them, stay
        the same objects. A tied parameter is expected under each of its names (see
        :meth:`state_dict`), as in PyTorch.

        Raises
        ------
        KeyError
            With ``strict=True``, if a parameter name has no entry or an entry names no
            parameter.
        TypeError
            If an entry is not an array of numbers NumPy can read.
        ValueError
            If an entry's shape differs from its parameter's (also with
            ``strict=False``), or the names of one tied parameter get different values.

        Nothing is changed when it raises.
        """
        where = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, Mapping):
            raise TypeError(
                f"{where}: expected a dict of name -> tensor, got {type(state_dict).__name__}"
            )
        own = list(self.named_parameters(remove_duplicate=False))
        names = {name for name, _ in own}
        loaded_as: dict[int, str] = {}  # id(parameter) -> its first name in state_dict
        for name, p in own:
            if name in state_dict:
                loaded_as.setdefault(id(p), name)
        missing = [name for name, _ in own if name not in state_dict]
        unexpected = [k for k in state_dict if k not in names]
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append(f"missing key(s) {missing}")
            if unexpected:
                parts.append(f"unexpected key(s) {unexpected}")
            tied = [
                f"{name!r} is tied to {loaded_as[id(p)]!r}"
                for name, p in own
                if name not in state_dict and id(p) in loaded_as
            ]
            hint = (
                f" ({', '.join(tied)}, which the state dict has: a tied parameter is "
                f"listed under each of its names, as in PyTorch; strict=False loads a "
                f"state dict that lists it once)"
                if tied
                else ""
            )
            raise KeyError(
                f"{where}: {'; '.join(parts)}{hint}. The state dict must come from a model "
                f"of the same architecture and configuration; pass strict=False to load "
                f"only the matching keys"
            )
        # read every value before changing anything
        values: dict[int, tuple[Parameter, minitorch.Tensor | np.ndarray]] = {}
        bad, clashes = [], []
        for name, p in own:
            if name not in state_dict:
                continue
            value = _loadable(state_dict[name], name, p, where)
            if tuple(value.shape) != p.shape:
                bad.append(f"{name!r}: checkpoint {tuple(value.shape)}, model {p.shape}")
                continue
            first = values.get(id(p))
            if first is None:
                values[id(p)] = (p, value)
            elif not _same_values(first[1], value):
                clashes.append(f"{loaded_as[id(p)]!r} and {name!r}")
        if bad:
            raise ValueError(
                f"{where}: size mismatch for {'; '.join(bad)}. Build the model with the "
                f"configuration the state dict was saved with"
            )
        if clashes:
            raise ValueError(
                f"{where}: {'; '.join(clashes)} name one parameter (tied weights), but the "
                f"state dict gives them different values; it comes from a model whose "
                f"weights are not tied: build this model untied, or keep one of the names"
            )
        with minitorch.no_grad():
            for p, value in values.values():
                p.copy_(value)
        return IncompatibleKeys(missing, unexpected)

    def save(self, path: str | os.PathLike[str]) -> pathlib.Path:
        """Write ``state_dict()`` with :func:`minitorch.save` (atomic); returns the path."""
        return minitorch.save(self.state_dict(), path)

    def load(self, path: str | os.PathLike[str], strict: bool = True) -> Module:
        """Load a file written by :meth:`save` into this module (see
        :meth:`load_state_dict`); returns the module."""
        state = minitorch.load(path)
        if not isinstance(state, dict):
            raise ValueError(
                f"{type(self).__name__}.load: {os.fspath(path)!r} holds a "
                f"{type(state).__name__}, not a state dict; write it with Module.save"
            )
        self.load_state_dict(state, strict=strict)
        return self

    # ---------------------------------------------------------------- display
    def extra_repr(self) -> str:
        """The text inside the parentheses of this module's repr (its configuration)."""
        return ""

    def __repr__(self) -> str:
        lines = [f"({name}): " + _indent(repr(mod)) for name, mod in self._modules.items()]
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        head = f"{type(self).__name__}(" + (f"{extra}" if extra else "")
        body = "\n".join("  " + line for line in lines)
        return f"{head}\n{body}\n)"


def _loadable(value: Any, name: str, p: Parameter, where: str) -> minitorch.Tensor | np.ndarray:
    """``value``, an entry of a state dict, as a minitorch Tensor or a NumPy array of
    numbers: another library's tensor is detached first (a PyTorch parameter that
    requires grad refuses ``numpy()``)."""
    if isinstance(value, minitorch.Tensor):
        return value
    if isinstance(value, np.ndarray):
        array = value
    elif getattr(value, "shape", None) is None:
        raise TypeError(
            f"{where}: {name!r} is a {type(value).__name__}; expected a Tensor or an "
            f"array of shape {p.shape}"
        )
    else:
        detach = getattr(value, "detach", None)
        try:
            array = np.asarray(detach() if callable(detach) else value)
        except Exception as exc:
            kind = f"{type(value).__module__}.{type(value).__name__}"
            raise TypeError(
                f"{where}: cannot read {name!r} (a {kind} of shape {tuple(value.shape)}) as a "
                f"NumPy array: {exc}. Pass a minitorch Tensor, a NumPy array or a CPU tensor "
                f"of a NumPy dtype (e.g. t.detach().cpu().float())"
            ) from exc
    if array.dtype.kind not in "biuf":
        raise TypeError(
            f"{where}: {name!r} is an array of dtype {array.dtype}; expected real numbers "
            f"for a parameter of shape {p.shape}"
        )
    return array


def _same_values(a: minitorch.Tensor | np.ndarray, b: minitorch.Tensor | np.ndarray) -> bool:
    """Whether two entries given for one tied parameter hold the same values."""
    if a is b:
        return True
    host = [x.numpy() if isinstance(x, minitorch.Tensor) else x for x in (a, b)]
    return bool(np.array_equal(host[0], host[1], equal_nan=True))


def _indent(text: str) -> str:
    return text.replace("\n", "\n  ")
