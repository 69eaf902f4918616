"""Containers of sub-Modules, as in ``torch.nn``: ``ModuleList`` (a list), ``Sequential``
(a list whose forward chains its modules) and ``ModuleDict`` (a dict).

A container registers each module as an attribute named by its position, ``"0"``,
``"1"``, ... (in a ``ModuleDict``, and a ``Sequential`` built from an ``OrderedDict``, by
its key), so parameter names and state dicts are PyTorch's: ``"0.weight"``,
``"blocks.1.bias"``, ``"fc.weight"``. As in PyTorch, ``del``, ``insert`` and ``pop``
number the modules afresh from 0.
"""

from __future__ import annotations

import itertools
import operator
from collections import OrderedDict
from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import Any, Generic, Self, TypeVar, overload

from .module import Module, _indent

__all__ = ["ModuleDict", "ModuleList", "Sequential"]

M = TypeVar("M", bound=Module)


def _module(where: str, value: Any) -> Any:
    """``value`` if it is a Module, else a TypeError that says what it is."""
    if not isinstance(value, Module):
        raise TypeError(
            f"{where}: expected a minimodel.Module (a layer such as Linear(4, 8) or ReLU(), "
            f"not a function or a class), got {type(value).__name__}"
        )
    return value


def _name(owner: Module, where: str, key: Any) -> str:
    """``key`` as the name of a sub-module of ``owner``: a non-empty string without dots
    that is not already an attribute of it (``ModuleDict()["keys"]`` would hide a
    method), as ``torch.nn.Module.add_module`` asks."""
    if not isinstance(key, str):
        raise TypeError(f"{where}: module names must be strings, got {type(key).__name__} {key!r}")
    if not key or "." in key:
        raise KeyError(
            f"{where}: module name {key!r} must be non-empty and without '.' (a dot "
            f"joins the names of nested modules)"
        )
    if key not in owner._modules and (hasattr(type(owner), key) or key in owner.__dict__):
        raise KeyError(
            f"{where}: {key!r} is an attribute of {type(owner).__name__}; name the module otherwise"
        )
    return key


class _Positional(Module, Generic[M]):
    """What ModuleList and Sequential share: modules in order, read by position."""

    def _index(self, i: Any, kinds: str = "integers or slices") -> int:
        """Position ``i`` (negative counts from the end) as ``0 <= i < len(self)``."""
        name = type(self).__name__
        try:
            k = operator.index(i)
        except TypeError:
            raise TypeError(
                f"{name} indices must be {kinds}, got {type(i).__name__} {i!r}"
            ) from None
        n = len(self._modules)
        if not -n <= k < n:
            raise IndexError(f"{name} index {k} is out of range for {n} modules")
        return k % n

    def _renumber(self, modules: Iterable[M]) -> None:
        """Hold ``modules`` instead, named ``"0"``, ``"1"``, ..."""
        modules = list(modules)
        for key in list(self._modules):
            delattr(self, key)
        for k, m in enumerate(modules):
            setattr(self, str(k), m)

    def _slice(self, i: slice) -> Self:
        raise NotImplementedError

    @overload
    def __getitem__(self, i: int) -> M: ...

    @overload
    def __getitem__(self, i: slice) -> Self: ...

    def __getitem__(self, i: int | slice) -> M | Self:
        """``c[i]`` (negative ``i`` counts from the end) is a module; ``c[a:b:c]`` a new
        container of the same modules (not copies)."""
        if isinstance(i, slice):
            return self._slice(i)
        return list(self)[self._index(i)]

    def __setitem__(self, i: int, module: M) -> None:
        """``c[i] = module`` replaces the module at position ``i``, under its name."""
        key = list(self._modules)[self._index(i, "integers")]
        setattr(self, key, _module(f"{type(self).__name__}[{i}] = ...", module))

    def __delitem__(self, i: int | slice) -> None:
        """``del c[i]``, ``del c[a:b]``; the modules left are numbered afresh from 0."""
        modules = list(self)
        del modules[i if isinstance(i, slice) else self._index(i)]
        self._renumber(modules)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[M]:
        return iter(self._modules.values())  # type: ignore[arg-type]

    def append(self, module: M) -> Self:
        """Add ``module`` at the end, named by its position; returns the container."""
        where = f"{type(self).__name__}.append"
        key = str(len(self))
        if key in self._modules:  # only a Sequential of named modules can hold it
            raise KeyError(
                f"{where}: the new module's name {key!r} is taken (the names are "
                f"{list(self._modules)}); build the Sequential with the module instead"
            )
        setattr(self, key, _module(where, module))
        return self

    def extend(self, modules: Iterable[M]) -> Self:
        """Append each of ``modules``; returns the container."""
        where = f"{type(self).__name__}.extend"
        if not isinstance(modules, Iterable):
            raise TypeError(
                f"{where}: expected an iterable of Modules, got {type(modules).__name__}"
            )
        for m in [_module(where, m) for m in modules]:  # all checked before any is added
            self.append(m)
        return self

    def insert(self, index: int, module: M) -> Self:
        """Put ``module`` before position ``index`` (``-len(self) <= index <= len(self)``,
        negative counts from the end, as ``list.insert``); the modules are numbered
        afresh from 0. Returns the container."""
        where = f"{type(self).__name__}.insert"
        n = len(self)
        try:
            k = operator.index(index)
        except TypeError:
            raise TypeError(
                f"{where}: index must be an integer, got {type(index).__name__} {index!r}"
            ) from None
        if not -n <= k <= n:
            raise IndexError(f"{where}: index {k} is out of range for {n} modules")
        modules = list(self)
        modules.insert(k, _module(where, module))
        self._renumber(modules)
        return self

    @overload
    def pop(self, i: int = -1) -> M: ...

    @overload
    def pop(self, i: slice) -> Self: ...

    def pop(self, i: int | slice = -1) -> M | Self:
        """Remove and return ``self[i]`` (the last module by default)."""
        out = self[i]
        del self[i]
        return out


class ModuleList(_Positional[M]):
    """A list of sub-Modules, as ``torch.nn.ModuleList``: indexing, slicing, ``len``,
    iteration, ``append``, ``extend``, ``insert``, ``pop``, ``c[i] = m``, ``del c[i]``,
    ``+`` (a new ModuleList) and ``+=``.

    Examples
    --------
    >>> from minimodel import Linear, ModuleList
    >>> layers = ModuleList([Linear(4, 4) for _ in range(2)])
    >>> [name for name, _ in layers.named_parameters()]
    ['0.weight', '0.bias', '1.weight', '1.bias']
    >>> layers.append(Linear(4, 2))
    ModuleList(
      (0-1): 2 x Linear(in_features=4, out_features=4, bias=True)
      (2): Linear(in_features=4, out_features=2, bias=True)
    )
    """

    def __init__(self, modules: Iterable[M] | None = None) -> None:
        super().__init__()
        if modules is not None:
            if not isinstance(modules, Iterable):
                raise TypeError(
                    f"ModuleList: expected an iterable of Modules, got "
                    f"{type(modules).__name__}; write ModuleList([module])"
                )
            self.extend(modules)

    def _slice(self, i: slice) -> Self:
        return type(self)(list(self)[i])

    def __repr__(self) -> str:
        """As PyTorch's: a run of modules with the same repr is one line, ``(0-5): 6 x
        TransformerBlock(...)``."""
        lines, k = [], 0
        for text, run in itertools.groupby(repr(m) for m in self):
            n = len(list(run))
            head = f"({k}): " if n == 1 else f"({k}-{k + n - 1}): {n} x "
            lines.append("  " + head + _indent(text) + "\n")
            k += n
        return f"{type(self).__name__}(" + ("\n" + "".join(lines) if lines else "") + ")"

    def __add__(self, other: Iterable[M]) -> ModuleList[M]:
        if not isinstance(other, Iterable):
            return NotImplemented
        return ModuleList(self).extend(other)

    def __iadd__(self, other: Iterable[M]) -> Self:
        return self.extend(other)


class Sequential(_Positional[Module]):
    """Modules applied one after the other, as ``torch.nn.Sequential``:
    ``Sequential(*modules)`` names them ``"0"``, ``"1"``, ...;
    ``Sequential(OrderedDict(name=module, ...))`` by their keys. It is also a list
    (see :class:`ModuleList`); ``+`` joins two Sequentials.

    Examples
    --------
    >>> import minitorch
    >>> from minimodel import Linear, ReLU, Sequential
    >>> net = Sequential(Linear(4, 8), ReLU(), Linear(8, 2))
    >>> net(minitorch.ones(3, 4)).shape
    (3, 2)
    >>> [name for name, _ in net.named_parameters()]
    ['0.weight', '0.bias', '2.weight', '2.bias']
    """

    @overload
    def __init__(self, *modules: Module) -> None: ...

    @overload
    def __init__(self, modules: OrderedDict[str, Module], /) -> None: ...

    def __init__(self, *modules: Any) -> None:
        super().__init__()
        where = (
            "Sequential (it takes modules as arguments, Sequential(*layers), or one "
            "OrderedDict of name -> module)"
        )
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            named = list(modules[0].items())
        else:
            named = [(str(k), m) for k, m in enumerate(modules)]
        for key, m in named:
            setattr(self, _name(self, where, key), _module(where, m))

    def _slice(self, i: slice) -> Self:
        return type(self)(OrderedDict(list(self._modules.items())[i]))

    def forward(self, input: Any) -> Any:
        """``input`` through each module in turn."""
        for module in self:
            input = module(input)
        return input

    def __add__(self, other: Sequential) -> Sequential:
        if not isinstance(other, Sequential):
            return NotImplemented
        return Sequential(*self, *other)

    def __iadd__(self, other: Sequential) -> Self:
        if not isinstance(other, Sequential):
            return NotImplemented
        return self.extend(other)


class ModuleDict(Module, Generic[M]):
    """A dict of sub-Modules, as ``torch.nn.ModuleDict``: ``d[key]`` (get, set,
    ``del``), ``in``, ``len``, iteration over the keys (in insertion order), ``keys()``,
    ``values()``, ``items()``, ``update()``, ``pop()``, ``clear()``. Each module is
    registered under its key: parameter names ``"<key>.weight"``.

    Examples
    --------
    >>> from minimodel import Linear, ModuleDict
    >>> heads = ModuleDict({"policy": Linear(4, 2), "value": Linear(4, 1)})
    >>> [name for name, _ in heads.named_parameters()][:2]
    ['policy.weight', 'policy.bias']
    """

    def __init__(self, modules: Mapping[str, M] | Iterable[tuple[str, M]] | None = None) -> None:
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> M:
        if key not in self._modules:
            raise KeyError(f"ModuleDict has no module {key!r}; its keys are {list(self._modules)}")
        return self._modules[key]  # type: ignore[return-value]

    def __setitem__(self, key: str, module: M) -> None:
        where = f"ModuleDict[{key!r}] = ..."
        setattr(self, _name(self, where, key), _module(where, module))

    def __delitem__(self, key: str) -> None:
        self[key]  # a KeyError that lists the keys
        delattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def keys(self) -> KeysView[str]:
        return self._modules.keys()

    def values(self) -> ValuesView[M]:
        return self._modules.values()  # type: ignore[return-value]

    def items(self) -> ItemsView[str, M]:
        return self._modules.items()  # type: ignore[return-value]

    def update(self, modules: Mapping[str, M] | Iterable[tuple[str, M]]) -> None:
        """Add or replace the modules of a mapping, or of an iterable of ``(key, module)``
        pairs, in their order."""
        where = "ModuleDict.update"
        if isinstance(modules, Mapping):
            pairs = list(modules.items())
        elif isinstance(modules, Iterable) and not isinstance(modules, str | Module):
            pairs = list(modules)
        else:
            raise TypeError(
                f"{where}: expected a mapping or an iterable of (key, module) pairs, got "
                f"{type(modules).__name__}"
            )
        for j, pair in enumerate(pairs):  # all checked before any is added
            if not isinstance(pair, tuple | list) or len(pair) != 2:
                raise TypeError(f"{where}: element {j} is {pair!r}, not a (key, module) pair")
            _name(self, where, pair[0])
            _module(f"{where}: {pair[0]!r}", pair[1])
        for key, module in pairs:
            setattr(self, key, module)

    def pop(self, key: str) -> M:
        """Remove and return ``self[key]``."""
        module = self[key]
        del self[key]
        return module

    def clear(self) -> None:
        """Remove every module."""
        for key in list(self._modules):
            delattr(self, key)
