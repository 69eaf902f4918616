"""``Module`` and ``Parameter``: what ``torch.nn.Module`` and ``torch.nn.Parameter`` are to
PyTorch, on minitorch tensors.

A Module registers, on attribute assignment, its Parameters and its sub-Modules (also
those inside a ``ModuleList``, ``Sequential`` or ``ModuleDict``: see ``containers.py``),
and with :meth:`Module.register_buffer` its buffers (tensors of its state that are not
trained), so that ``parameters()``, ``buffers()``, ``state_dict()``,
``load_state_dict()``, ``to()``, ``train()``/``eval()`` and ``zero_grad()`` reach every
one of them. Forward hooks run around ``forward`` as PyTorch's do.
"""

from __future__ import annotations

import itertools
import numbers
import operator
import os
import pathlib
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple, Self, TypeVar

import numpy as np

import minitorch

__all__ = ["IncompatibleKeys", "Module", "Parameter", "RemovableHandle"]


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


_hook_ids = itertools.count()
T = TypeVar("T", bound=minitorch.Tensor)


class RemovableHandle:
    """What :meth:`Module.register_forward_hook` and
    :meth:`Module.register_forward_pre_hook` return, as ``torch.utils.hooks.
    RemovableHandle``: ``remove()`` unregisters the hook (a second call does nothing);
    used as a context manager, it removes the hook on leaving the block."""

    __slots__ = ("_flags", "_hooks", "id")

    def __init__(
        self, hooks: OrderedDict[int, Callable[..., Any]], flags: tuple[set[int], ...] = ()
    ) -> None:
        # weak references, as PyTorch's: a handle does not keep a module's hooks alive
        self._hooks = weakref.ref(hooks)
        # the sets of hook ids that mark how a hook is called (with_kwargs, always_call)
        self._flags = tuple(weakref.ref(f) for f in flags)
        self.id = next(_hook_ids)

    def remove(self) -> None:
        """Unregister the hook."""
        hooks = self._hooks()
        if hooks is not None:
            hooks.pop(self.id, None)
        for ref in self._flags:
            flags = ref()
            if flags is not None:
                flags.discard(self.id)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.remove()


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
    _buffers: dict[str, minitorch.Tensor | None]
    _non_persistent_buffers: set[str]
    _modules: dict[str, Module]
    _forward_pre_hooks: OrderedDict[int, Callable[..., Any]]
    _forward_hooks: OrderedDict[int, Callable[..., Any]]
    # the ids of the hooks registered with_kwargs=True / always_call=True
    _forward_pre_hooks_with_kwargs: set[int]
    _forward_hooks_with_kwargs: set[int]
    _forward_hooks_always_called: set[int]

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks_with_kwargs", set())
        object.__setattr__(self, "_forward_hooks_with_kwargs", set())
        object.__setattr__(self, "_forward_hooks_always_called", set())
        object.__setattr__(self, "training", True)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # a module pickled before buffers and hooks existed gets them empty
        self.__dict__.update(state)
        self.__dict__.setdefault("_buffers", {})
        self.__dict__.setdefault("_non_persistent_buffers", set())
        self.__dict__.setdefault("_forward_pre_hooks", OrderedDict())
        self.__dict__.setdefault("_forward_hooks", OrderedDict())
        for flags in (
            "_forward_pre_hooks_with_kwargs",
            "_forward_hooks_with_kwargs",
            "_forward_hooks_always_called",
        ):
            self.__dict__.setdefault(flags, set())

    # ---------------------------------------------------------------- registration
    def __setattr__(self, name: str, value: Any) -> None:
        params: dict[str, Parameter] | None = self.__dict__.get("_parameters")
        if params is None:
            raise AttributeError(
                f"cannot assign {name!r} before Module.__init__() ran: call "
                f"super().__init__() first in {type(self).__name__}.__init__"
            )
        modules: dict[str, Module] = self.__dict__["_modules"]
        buffers: dict[str, minitorch.Tensor | None] = self.__dict__["_buffers"]
        if isinstance(value, Parameter):  # also over a buffer of that name, as PyTorch
            modules.pop(name, None)
            self._forget_buffer(name)
            params[name] = value
        elif isinstance(value, Module):
            params.pop(name, None)
            self._forget_buffer(name)
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
        elif name in buffers:  # a registered buffer: replaced, persistent or not
            if value is not None and not isinstance(value, minitorch.Tensor):
                raise TypeError(
                    f"cannot assign {type(value).__name__} as buffer {name!r} of "
                    f"{type(self).__name__} (a minitorch.Tensor or None expected); convert "
                    f"it: minitorch.tensor(value)"
                )
            buffers[name] = value
        elif value is None:
            params.pop(name, None)
            modules.pop(name, None)
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self._parameters.pop(name, None)
        self._forget_buffer(name)
        self._modules.pop(name, None)
        object.__delattr__(self, name)

    def _forget_buffer(self, name: str) -> None:
        """``name`` is no buffer any more (persistent or not)."""
        self._buffers.pop(name, None)
        self._non_persistent_buffers.discard(name)

    def register_buffer(
        self, name: str, tensor: minitorch.Tensor | None, persistent: bool = True
    ) -> None:
        """Register ``tensor`` as the buffer ``name``: a tensor of the module's state that
        is not a parameter (not trained, not in ``parameters()``), such as a running
        statistic or a fixed table, as ``torch.nn.Module.register_buffer``.

        It becomes the attribute ``name``; assigning to that attribute later replaces the
        buffer (a Tensor or None). :meth:`to` moves buffers with the parameters. A
        persistent buffer is in :meth:`state_dict` (after the module's own parameters)
        and loaded by :meth:`load_state_dict`; one registered with ``persistent=False``
        is not. A buffer set to None is kept as a name but is in none of them.

        Raises
        ------
        KeyError
            If ``name`` is empty, holds a ``.``, or is already a parameter, sub-module or
            other attribute of the module.
        TypeError
            If ``name`` is not a string, or ``tensor`` neither a minitorch Tensor nor
            None.

        Examples
        --------
        >>> import minitorch
        >>> from minimodel import Linear
        >>> m = Linear(2, 2)
        >>> m.register_buffer("steps", minitorch.zeros((), dtype="int64"))
        >>> m.register_buffer("scratch", minitorch.ones(2), persistent=False)
        >>> list(m.state_dict())
        ['weight', 'bias', 'steps']
        >>> [name for name, _ in m.named_buffers()]
        ['steps', 'scratch']
        """
        where = f"{type(self).__name__}.register_buffer"
        if "_buffers" not in self.__dict__:
            raise AttributeError(
                f"{where}: cannot register a buffer before Module.__init__() ran: call "
                f"super().__init__() first in {type(self).__name__}.__init__"
            )
        if not isinstance(name, str):
            raise TypeError(
                f"{where}: the buffer name must be a string, got {type(name).__name__} {name!r}"
            )
        if not name or "." in name:
            raise KeyError(
                f"{where}: buffer name {name!r} must be non-empty and without '.' (a dot "
                f"joins the names of nested modules)"
            )
        if name not in self._buffers:
            kind = (
                "a parameter"
                if name in self._parameters
                else "a sub-module"
                if name in self._modules
                else "an attribute"
                if hasattr(self, name)
                else None
            )
            if kind is not None:
                raise KeyError(
                    f"{where}: {name!r} is already {kind} of {type(self).__name__}; name the "
                    f"buffer otherwise (or del the attribute first)"
                )
        if tensor is not None and not isinstance(tensor, minitorch.Tensor):
            raise TypeError(
                f"{where}: cannot register {type(tensor).__name__} as buffer {name!r} of "
                f"{type(self).__name__} (a minitorch.Tensor or None expected); convert it: "
                f"minitorch.tensor(value)"
            )
        if not isinstance(persistent, bool):
            raise TypeError(f"{where}: persistent must be True or False, got {persistent!r}")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)
        object.__setattr__(self, name, tensor)

    # ---------------------------------------------------------------- forward
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation; every subclass defines it."""
        raise NotImplementedError(f"{type(self).__name__} has no forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """``forward(*args, **kwargs)``, with the forward hooks around it, as PyTorch.

        Each pre-hook in turn: ``hook(module, args)`` (what it returns, if not None,
        replaces ``args``: a tuple as it is, anything else as a 1-tuple), or, registered
        ``with_kwargs=True``, ``hook(module, args, kwargs)`` (what it returns, if not
        None, must be the pair ``(args, kwargs)`` that replaces both). Then ``forward``,
        then each hook ``hook(module, args, output)`` or, ``with_kwargs=True``,
        ``hook(module, args, kwargs, output)`` (what it returns, if not None, replaces
        ``output``). If a hook or ``forward`` raises, the hooks registered
        ``always_call=True`` that have not run yet are called (``output`` None if
        ``forward`` gave none); an exception of theirs then is a warning, and the first
        exception propagates.
        """
        if not (self._forward_pre_hooks or self._forward_hooks):
            return self.forward(*args, **kwargs)
        output: Any = None
        called: set[int] = set()  # the always-called hooks that ran
        try:
            # a snapshot: a hook may remove itself (or others) while the hooks run
            for hook_id, hook in tuple(self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    result = hook(self, args, kwargs)
                    if result is not None:
                        if not (isinstance(result, tuple) and len(result) == 2):
                            got = (
                                f"a tuple of {len(result)}"
                                if isinstance(result, tuple)
                                else f"a {type(result).__name__}"
                            )
                            raise RuntimeError(
                                f"{type(self).__name__}: the forward pre-hook {hook!r} was "
                                f"registered with_kwargs=True, so it must return None or a "
                                f"tuple (new_args, new_kwargs), but it returned {got}"
                            )
                        args, kwargs = result
                else:
                    result = hook(self, args)
                    if result is not None:
                        args = result if isinstance(result, tuple) else (result,)
            output = self.forward(*args, **kwargs)
            for hook_id, hook in tuple(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called:
                    called.add(hook_id)
                output = self._run_forward_hook(hook_id, hook, args, kwargs, output)
            return output
        except Exception:
            for hook_id, hook in tuple(self._forward_hooks.items()):
                if hook_id not in self._forward_hooks_always_called or hook_id in called:
                    continue
                try:
                    output = self._run_forward_hook(hook_id, hook, args, kwargs, output)
                except Exception as exc:
                    warnings.warn(
                        f"{type(self).__name__}: the forward hook {hook!r}, registered with "
                        f"always_call=True, raised an exception that was silenced as another "
                        f"error was raised in forward: {exc}",
                        stacklevel=2,
                    )
            raise

    def _run_forward_hook(
        self,
        hook_id: int,
        hook: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        output: Any,
    ) -> Any:
        """``output`` after the forward hook ``hook``: what it returns, unless None."""
        if hook_id in self._forward_hooks_with_kwargs:
            result = hook(self, args, kwargs, output)
        else:
            result = hook(self, args, output)
        return output if result is None else result

    def register_forward_pre_hook(
        self,
        hook: Callable[[Module, tuple[Any, ...]], Any]
        | Callable[[Module, tuple[Any, ...], dict[str, Any]], Any],
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
    ) -> RemovableHandle:
        """Call ``hook(module, args)`` before every ``forward``; if it returns something
        other than None, that replaces the positional arguments (a tuple as it is,
        anything else wrapped as ``(value,)``), as ``torch.nn.Module.
        register_forward_pre_hook``. With ``with_kwargs=True`` it is called
        ``hook(module, args, kwargs)`` with the keyword arguments too, and returns None
        or the pair ``(args, kwargs)`` that replaces both (anything else is a
        RuntimeError). Hooks run in the order registered (``prepend=True``: before the
        others). Returns a handle whose ``remove()`` unregisters it.

        Examples
        --------
        >>> import minitorch
        >>> from minimodel import ReLU
        >>> m = ReLU()
        >>> handle = m.register_forward_pre_hook(lambda mod, args: -args[0])
        >>> m(minitorch.tensor([1.0, -2.0])).numpy()
        array([0., 2.], dtype=float32)
        >>> handle.remove()
        >>> m(minitorch.tensor([1.0, -2.0])).numpy()
        array([1., 0.], dtype=float32)
        """
        return _register_hook(
            self,
            self._forward_pre_hooks,
            hook,
            "forward_pre_hook",
            prepend,
            {"with_kwargs": (with_kwargs, self._forward_pre_hooks_with_kwargs)},
        )

    def register_forward_hook(
        self,
        hook: Callable[[Module, tuple[Any, ...], Any], Any]
        | Callable[[Module, tuple[Any, ...], dict[str, Any], Any], Any],
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """Call ``hook(module, args, output)`` after every ``forward``; if it returns
        something other than None, that replaces the output, as ``torch.nn.Module.
        register_forward_hook``. ``args`` are the positional arguments ``forward`` got
        (after the pre-hooks); with ``with_kwargs=True`` the hook is called
        ``hook(module, args, kwargs, output)`` with the keyword arguments too. With
        ``always_call=True`` it also runs when ``forward`` or another hook raises (see
        :meth:`__call__`). Hooks run in the order registered (``prepend=True``: before
        the others). Returns a handle whose ``remove()`` unregisters it.

        Examples
        --------
        >>> import minitorch
        >>> from minimodel import Linear, ReLU, Sequential
        >>> net = Sequential(Linear(3, 4), ReLU())
        >>> shapes = []
        >>> with net[0].register_forward_hook(lambda m, args, out: shapes.append(out.shape)):
        ...     _ = net(minitorch.ones(2, 3))
        >>> _ = net(minitorch.ones(5, 3))  # removed on leaving the block
        >>> shapes
        [(2, 4)]
        """
        return _register_hook(
            self,
            self._forward_hooks,
            hook,
            "forward_hook",
            prepend,
            {
                "with_kwargs": (with_kwargs, self._forward_hooks_with_kwargs),
                "always_call": (always_call, self._forward_hooks_always_called),
            },
        )

    # ---------------------------------------------------------------- traversal
    def named_children(self) -> Iterator[tuple[str, Module]]:
        """``(name, module)`` for each direct sub-Module, in the order they were assigned;
        a module held under two names once, under its first (as PyTorch)."""
        seen: set[int] = set()
        for name, mod in self._modules.items():
            if id(mod) not in seen:
                seen.add(id(mod))
                yield name, mod

    def children(self) -> Iterator[Module]:
        """The direct sub-Modules, in the order they were assigned (each once)."""
        for _, mod in self.named_children():
            yield mod

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
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Parameter]]:
        """``("blocks.0.attn.qkv.weight", parameter)`` for every parameter, as
        ``torch.nn.Module.named_parameters``: a parameter shared by several modules (tied
        weights) once, under its first name, or with ``remove_duplicate=False`` under
        each of its names; with ``recurse=False`` only this module's own."""
        yield from _named_members(self, lambda m: m._parameters, prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter, each once: what an optimizer takes (``recurse=False``: only
        this module's own)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, minitorch.Tensor]]:
        """``("norm.running_mean", tensor)`` for every buffer (persistent or not; those
        set to None are left out), in the order of :meth:`named_parameters`, as
        ``torch.nn.Module.named_buffers``."""
        yield from _named_members(self, lambda m: m._buffers, prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[minitorch.Tensor]:
        """Every buffer, each once (``recurse=False``: only this module's own)."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def num_parameters(self) -> int:
        """The number of scalar parameters."""
        return sum(p.size for p in self.parameters())

    def apply(self, fn: Callable[[Module], object]) -> Self:
        """Call ``fn`` on every sub-Module, then on this module (children first, as
        ``torch.nn.Module.apply``, e.g. to initialize weights); returns the module.

        Examples
        --------
        >>> from minimodel import Linear, ReLU, Sequential
        >>> seen = []
        >>> _ = Sequential(Linear(2, 2), ReLU()).apply(lambda m: seen.append(type(m).__name__))
        >>> seen
        ['Linear', 'ReLU', 'Sequential']
        """
        self._apply_to_tree(fn, frozenset())
        return self

    def _apply_to_tree(self, fn: Callable[[Module], object], above: frozenset[int]) -> None:
        path = above | {id(self)}  # a module that holds itself (a cycle) is not entered again
        for mod in self.children():
            if id(mod) not in path:
                mod._apply_to_tree(fn, path)
        fn(self)

    # ---------------------------------------------------------------- placement
    def to(
        self,
        backend: str | minitorch.Backend | None = None,
        *,
        device: Any = None,
        dtype: Any = None,
    ) -> Self:
        """Move every parameter and buffer to ``backend`` and/or ``device``, and cast the
        floating-point ones to ``dtype``, in place; returns the module. As
        ``torch.nn.Module.to``:

        * each Parameter stays the same object (an optimizer built before still holds
          it), with its ``requires_grad``; its gradient, if any, is moved and cast with
          it (PyTorch moves ``param.grad`` too);
        * buffers are replaced by their moved tensors (as PyTorch's; one that requires
          grad is a new leaf that requires grad);
        * ``dtype`` must be a floating-point dtype, and only floating-point tensors
          change dtype: integer and bool ones keep theirs.

        The arguments are those of :meth:`minitorch.Tensor.to` (``backend`` may be a
        backend name, a Backend, or a device of each tensor's own backend, such as
        ``"cpu"``). An optimizer's state (Adam's moments) is not moved: build the
        optimizer after placing the model, as in PyTorch. Nothing is changed when it
        raises. :meth:`float`, :meth:`double`, :meth:`half`, :meth:`cpu` and
        :meth:`cuda` are its shorthands, as in PyTorch.

        Examples
        --------
        >>> from minimodel import Linear
        >>> m = Linear(2, 3)
        >>> w = m.weight
        >>> m.to(dtype="float64").weight is w, w.dtype
        (True, dtype('float64'))
        >>> m.to("torch").weight.backend.name
        'torch'
        """
        where = f"{type(self).__name__}.to"
        return self._place(lambda t: _moved(t, backend, device, dtype, where))

    def double(self) -> Self:
        """Cast every floating-point parameter and buffer to float64, in place, as
        ``torch.nn.Module.double``: ``to(dtype="float64")``, with its guarantees
        (Parameters stay the same objects, gradients are cast with them, integer
        tensors keep their dtype, nothing changes when it raises); returns the module.

        Raises
        ------
        ValueError
            If a tensor's backend has no float64 (JAX without x64 mode).

        Examples
        --------
        >>> from minimodel import Linear
        >>> m = Linear(2, 3)
        >>> w = m.weight
        >>> m.double().weight is w, w.dtype
        (True, dtype('float64'))
        >>> m.float().weight.dtype
        dtype('float32')
        """
        where = f"{type(self).__name__}.double"
        return self._place(lambda t: _moved(t, None, None, "float64", where))

    def float(self) -> Self:
        """Cast every floating-point parameter and buffer to float32, in place, as
        ``torch.nn.Module.float``: ``to(dtype="float32")`` (see :meth:`double`);
        returns the module."""
        where = f"{type(self).__name__}.float"
        return self._place(lambda t: _moved(t, None, None, "float32", where))

    def half(self) -> Self:
        """Cast every floating-point parameter and buffer to float16, in place, as
        ``torch.nn.Module.half`` (see :meth:`double`); returns the module.

        Raises
        ------
        ValueError
            If the backend of a tensor has no float16 (array-api-strict: the Array API
            standard has none; NumPy, torch, JAX and CuPy have it).
        """
        where = f"{type(self).__name__}.half"
        return self._place(lambda t: _moved(t, None, None, "float16", where))

    def cpu(self) -> Self:
        """Move every parameter and buffer to the CPU device of the backend it is on
        (``"cpu"``; array-api-strict's ``CPU_DEVICE``), in place, as
        ``torch.nn.Module.cpu``: a move of :meth:`to`, with its guarantees; returns the
        module. The backend stays: ``to("numpy")`` changes it.

        Raises
        ------
        RuntimeError
            If a tensor's backend has no CPU device (CuPy's arrays live on the GPU):
            move the model to another backend, e.g. ``to("numpy")``.

        Examples
        --------
        >>> from minimodel import Linear
        >>> m = Linear(2, 3)
        >>> m.cpu() is m, str(m.weight.device)
        (True, 'cpu')
        """
        return self._to_device("cpu", "CPU", f"{type(self).__name__}.cpu")

    def cuda(self, device: int | str | None = None) -> Self:
        """Move every parameter and buffer to a CUDA device of the backend it is on, in
        place, as ``torch.nn.Module.cuda``: ``device`` None (the current CUDA device),
        an index ``i`` (``"cuda:i"``) or a name such as ``"cuda:1"``; a move of
        :meth:`to`, with its guarantees; returns the module. The backend stays: on the
        torch backend the tensors become CUDA tensors of PyTorch, on CuPy they move
        between GPUs.

        Raises
        ------
        TypeError, ValueError
            If ``device`` is none of the above.
        RuntimeError
            If a tensor's backend has no such CUDA device (NumPy, array-api-strict, a
            torch without CUDA, a machine without a GPU); the message names the backend
            and the device the module is on. Move the model to a backend that runs on
            CUDA (``to("torch", device="cuda")`` with a CUDA build of PyTorch, or
            ``to("cupy")``), or keep it on the CPU.
        """
        where = f"{type(self).__name__}.cuda"
        return self._to_device(_cuda_name(device, where), "CUDA", where)

    def _to_device(self, name: str, kind: str, where: str) -> Self:
        """:meth:`cpu` and :meth:`cuda`: every parameter and buffer to the device
        ``name`` of the backend it is on, once each backend is known to have it (a
        RuntimeError from :func:`_device_of` where one does not, before any move)."""
        backends: dict[str, minitorch.Tensor] = {}  # the first tensor on each backend
        for t in [*self.parameters(), *self.buffers()]:
            backends.setdefault(t.backend.name, t)
        for t in backends.values():
            _device_of(t, name, kind, where)
        return self._place(lambda t: _moved(t, name, None, None, where))

    def _place(self, move: Callable[[minitorch.Tensor], minitorch.Tensor]) -> Self:
        """Replace every parameter's values (and gradient) and every buffer by ``move``
        of them, as :meth:`to` describes: all moves are computed first, so nothing
        changes if one raises; a Parameter stays the same object."""
        params: list[tuple[Parameter, minitorch.Tensor, minitorch.Tensor | None]] = []
        buffers: list[tuple[Module, str, minitorch.Tensor]] = []
        moved: dict[int, minitorch.Tensor] = {}  # a buffer shared by modules: moved once
        with minitorch.no_grad():  # every move is computed before anything changes
            for p in self.parameters():
                new = move(p)
                if new is p:
                    continue
                grad = None
                if p.grad is not None:
                    grad = move(p.__array_namespace__().asarray(p.grad))
                params.append((p, new, grad))
            for mod in self.modules():
                for name, b in mod._buffers.items():
                    if b is None:
                        continue
                    if id(b) not in moved:
                        moved[id(b)] = new = move(b)
                        if b.requires_grad and b.is_leaf and new is not b:
                            new.requires_grad_(True)  # a new leaf, as the buffer was
                    buffers.append((mod, name, moved[id(b)]))
        for p, new, grad in params:
            # the Parameter is kept and made anew around the moved values: its array, and
            # the backend and device it belongs to, are those of `new`
            minitorch.Tensor.__init__(p, new, requires_grad=p.requires_grad, name=p.name)
            p.grad = grad
        for mod, name, new in buffers:
            mod._buffers[name] = new
            object.__setattr__(mod, name, new)
        return self

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

    def requires_grad_(self, requires_grad: bool = True) -> Self:
        """Set ``requires_grad`` of every parameter (``False`` freezes the module, e.g. to
        fine-tune the rest of a model), as ``torch.nn.Module.requires_grad_``; returns
        the module."""
        if not isinstance(requires_grad, bool):
            raise TypeError(
                f"requires_grad_: requires_grad must be True or False, got {requires_grad!r}"
            )
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    # ---------------------------------------------------------------- state
    def state_dict(self) -> dict[str, minitorch.Tensor]:
        """``{dotted name: tensor}`` for every parameter and persistent buffer (PyTorch's
        names and order: each module's parameters, then its buffers, then its
        sub-modules').

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
        for name, t in self._state_entries():
            if id(t) not in detached:
                detached[id(t)] = t.detach()
            out[name] = detached[id(t)]
        return out

    def _state_entries(self) -> list[tuple[str, minitorch.Tensor]]:
        """What :meth:`state_dict` lists, not detached: per module (each name of a module
        held twice), its parameters, then its persistent buffers that are not None."""
        out: list[tuple[str, minitorch.Tensor]] = []
        for mod_name, mod in self.named_modules(remove_duplicate=False):
            pre = f"{mod_name}." if mod_name else ""
            out.extend((pre + name, p) for name, p in mod._parameters.items())
            out.extend(
                (pre + name, b)
                for name, b in mod._buffers.items()
                if b is not None and name not in mod._non_persistent_buffers
            )
        return out

    def load_state_dict(
        self, state_dict: Mapping[str, Any], strict: bool = True
    ) -> IncompatibleKeys:
        """Copy ``state_dict``'s values into the parameters and persistent buffers, in
        place.

        Values may be Tensors of any backend, device and floating dtype, NumPy arrays,
        or other arrays NumPy reads, such as the CPU tensors of PyTorch's
        ``state_dict()`` or ``named_parameters()`` (detached first); each is moved and
        cast to its parameter's (or buffer's) backend, device and dtype (``copy_`` under
        ``minitorch.no_grad()``), so the parameters, and an optimizer holding them, stay
        the same objects. A tied parameter is expected under each of its names (see
        :meth:`state_dict`), as in PyTorch.

        Raises
        ------
        KeyError
            With ``strict=True``, if a parameter or persistent buffer has no entry, or an
            entry names none (a non-persistent buffer's name is unexpected, as in
            PyTorch).
        TypeError
            If an entry is not an array of numbers NumPy can read.
        ValueError
            If an entry's shape differs from its tensor's (also with
            ``strict=False``), or the names of one tied parameter get different values.

        Nothing is changed when it raises.
        """
        where = f"{type(self).__name__}.load_state_dict"
        if not isinstance(state_dict, Mapping):
            raise TypeError(
                f"{where}: expected a dict of name -> tensor, got {type(state_dict).__name__}"
            )
        own = self._state_entries()
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
        values: dict[int, tuple[minitorch.Tensor, minitorch.Tensor | np.ndarray]] = {}
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


def _loadable(
    value: Any, name: str, p: minitorch.Tensor, where: str
) -> minitorch.Tensor | np.ndarray:
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
            f"for a tensor of shape {p.shape}"
        )
    return array


def _named_members(
    module: Module,
    members: Callable[[Module], Mapping[str, T | None]],
    prefix: str,
    recurse: bool,
    remove_duplicate: bool,
) -> Iterator[tuple[str, T]]:
    """``(dotted name, tensor)`` for the ``members`` (parameters or buffers) of ``module``
    and, with ``recurse``, of every sub-Module; None entries left out, a tensor held in
    several places once unless ``remove_duplicate`` is False."""
    seen: set[int] = set()
    mods = module.named_modules(prefix, remove_duplicate) if recurse else iter([(prefix, module)])
    for mod_name, mod in mods:
        for name, t in members(mod).items():
            if t is None or (remove_duplicate and id(t) in seen):
                continue
            seen.add(id(t))
            yield (f"{mod_name}.{name}" if mod_name else name), t


def _register_hook(
    module: Module,
    hooks: OrderedDict[int, Callable[..., Any]],
    hook: Any,
    kind: str,
    prepend: bool,
    flags: dict[str, tuple[bool, set[int]]],
) -> RemovableHandle:
    """Add ``hook`` to ``hooks`` (last, or first with ``prepend``), its id to the set of
    each of ``flags`` (``name -> (value, set of ids)``) whose value is True; its handle,
    which also takes the id out of every set of ``flags`` again."""
    where = f"{type(module).__name__}.register_{kind}"
    if not callable(hook):
        raise TypeError(f"{where}: expected a function, got {type(hook).__name__} {hook!r}")
    for name, (value, _) in {"prepend": (prepend, set()), **flags}.items():
        if not isinstance(value, bool):
            raise TypeError(f"{where}: {name} must be True or False, got {value!r}")
    handle = RemovableHandle(hooks, tuple(ids for _, ids in flags.values()))
    hooks[handle.id] = hook
    for value, ids in flags.values():
        if value:
            ids.add(handle.id)
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def _moved(
    t: minitorch.Tensor, backend: Any, device: Any, dtype: Any, where: str
) -> minitorch.Tensor:
    """``t`` moved as :meth:`Module.to` moves it (``t`` itself if nothing changes): to
    ``backend``/``device``, and to ``dtype`` if ``t`` is floating point."""
    out = t.to(backend, device=device)
    if dtype is None:
        return out
    ns = out.__array_namespace__()
    be = out.backend
    try:
        want = be.resolve_dtype(dtype)
    except ValueError as exc:  # a dtype this backend lacks (float16 on array-api-strict;
        # float64 on JAX without x64)
        floats = [n for n, d in be.named.items() if ns.isdtype(d, "real floating")]
        raise ValueError(
            f"{where}: minitorch's {be.name} backend has no dtype {dtype!r}; its "
            f"floating-point dtypes are {', '.join(floats)}: use one of them "
            f"(Module.float() for float32, Module.double() for float64)"
        ) from exc
    if not ns.isdtype(want, "real floating"):
        raise TypeError(
            f"{where}: dtype must be a floating-point dtype (float32, float64, ...), got "
            f"{dtype!r}; Module.to casts only the floating-point parameters and buffers (as "
            f"torch.nn.Module.to), integer ones keep their dtype"
        )
    if ns.isdtype(out.dtype, "real floating") and out.dtype != want:
        out = out.to(dtype=want)
    return out


def _device_of(t: minitorch.Tensor, name: str, kind: str, where: str) -> None:
    """Check that the backend of ``t`` has the device ``name`` that :meth:`Module.cpu`
    (``kind`` "CPU") or :meth:`Module.cuda` ("CUDA") moves its tensors to: a
    RuntimeError that says where the module is and what to do where it has not."""
    be = t.backend
    try:
        be.parse_device(name)
    except Exception as exc:
        fix = (
            "move the model to a backend on the CPU instead, e.g. model.to('numpy')"
            if kind == "CPU"
            else "to run on CUDA, move the model to a backend that has it: "
            "model.to('torch', device='cuda') with a CUDA build of PyTorch on a machine "
            "with an NVIDIA GPU, or model.to('cupy'); or keep it on the CPU (model.cpu())"
        )
        raise RuntimeError(
            f"{where}: the module is on minitorch's {be.name} backend (device {t.device}), "
            f"which has no {kind} device {name!r} here ({str(exc).rstrip('.')}); {fix}"
        ) from exc


def _cuda_name(device: Any, where: str) -> str:
    """``device`` of :meth:`Module.cuda` (None, an index, or ``"cuda"``/``"cuda:<i>"``)
    as a device name; else a TypeError or ValueError that names it."""
    if device is None:
        return "cuda"
    if isinstance(device, str):
        if device.strip().partition(":")[0] != "cuda":
            raise ValueError(
                f"{where}: device must be a CUDA device ('cuda', 'cuda:<i>', an index or "
                f"None), got {device!r}; use cpu() for the CPU, or to(device=...) for "
                f"another device"
            )
        return device.strip()
    if isinstance(device, bool) or not isinstance(device, numbers.Integral):
        raise TypeError(
            f"{where}: device must be None, an int index or a name such as 'cuda:0', got "
            f"{device!r} ({type(device).__name__})"
        )
    index = operator.index(device)
    if index < 0:
        raise ValueError(f"{where}: a CUDA device index is >= 0, got {index}")
    return f"cuda:{index}"


def _same_values(a: minitorch.Tensor | np.ndarray, b: minitorch.Tensor | np.ndarray) -> bool:
    """Whether two entries given for one tied parameter hold the same values."""
    if a is b:
        return True
    host = [x.numpy() if isinstance(x, minitorch.Tensor) else x for x in (a, b)]
    return bool(np.array_equal(host[0], host[1], equal_nan=True))


def _indent(text: str) -> str:
    return text.replace("\n", "\n  ")
