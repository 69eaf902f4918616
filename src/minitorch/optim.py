"""Optimizers written against the Array API: SGD (momentum, Nesterov, weight decay), Adam
and AdamW (with AMSGrad), their ``state_dict`` round trip, and gradient clipping.

Each update follows PyTorch's single-tensor algorithm operation for operation, so a
float64 run matches ``torch.optim`` to rounding. SGD, Adam and AdamW on NumPy update in
place when no one else can see the parameter's buffer (no saved graph, no view: the
array's reference count says so), which saves allocations per parameter per step; every
other update puts the new values in a fresh array, so a graph that saved the old values
keeps them.
"""

from __future__ import annotations

import math
import numbers
import sys
import types
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, ClassVar

import numpy as np

from .backend import array_result, get_backend
from .tensor import Tensor, describe

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "clip_grad_norm_"]


def _non_negative(opt: str, name: str, value: Any) -> float:
    """``value`` as a float, if it is a finite real number >= 0."""
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not 0 <= float(value) < math.inf
    ):
        raise ValueError(f"{opt}: {name} must be >= 0 and finite, got {value!r}")
    return float(value)


def _flag(opt: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"{opt}: {name} must be True or False, got {value!r}")
    return bool(value)


def _betas(opt: str, value: Any) -> tuple[float, float]:
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise ValueError(f"{opt}: betas must be a pair of numbers in [0, 1), got {value!r}")
    for i, b in enumerate(value):
        if isinstance(b, bool) or not isinstance(b, numbers.Real) or not 0 <= float(b) < 1:
            raise ValueError(f"{opt}: betas[{i}] must be in [0, 1), got {b!r}")
    return float(value[0]), float(value[1])


def _updated(new: Any, data: Any, be: Any) -> Any:
    """A parameter's new array, an array of its dtype: a float64 learning rate from a
    NumPy schedule (``np.cos``) promotes ``lr * g`` on float32 parameters, and the
    update rounds to float32 as the in-place ``data -= lr * g`` does (as PyTorch)."""
    new = array_result(new, be)
    return new if new.dtype == data.dtype else be.xp.astype(new, data.dtype)


def _alone(a: np.ndarray) -> bool:
    """Whether an optimizer may write into ``a`` (which no one else holds: the caller
    counted the references): it owns its memory (no view of the user's array) and is
    writeable."""
    return a.base is None and a.flags.writeable


class _OnDevices:
    """Inside an optimizer's loop over its parameters, ``on(p)`` makes ``p``'s device
    current where its library works on the current device (CuPy; a backend's
    ``scope``), switching only when the device changes; the device current before
    comes back at the end of the loop. Nothing for the other libraries."""

    __slots__ = ("ctx", "device")

    def __init__(self) -> None:
        self.ctx: Any = None
        self.device: Any = None

    def __enter__(self) -> _OnDevices:
        return self

    def __call__(self, p: Tensor) -> None:
        be = p._backend
        if be.scope is None or (self.ctx is not None and self.device == be.device):
            return
        self._leave()
        ctx = be.on_device()
        ctx.__enter__()
        self.ctx, self.device = ctx, be.device

    def _leave(self) -> None:
        if self.ctx is not None:
            ctx, self.ctx = self.ctx, None
            ctx.__exit__(None, None, None)

    def __exit__(self, *exc: object) -> None:
        self._leave()


def _param_list(params: Any, who: str, optimizer: bool) -> list[Tensor]:
    """``params`` as a list, if it is an iterable of Tensors (a list, a tuple, a
    generator such as ``model.parameters()``); one tensor, a string, a dict or an
    element that is no Tensor is not (for an ``optimizer``, a dict is named as PyTorch's
    parameter group)."""
    if optimizer and isinstance(params, Mapping):
        raise TypeError(f"{who}: params is a dict; {_NO_GROUPS}")
    if isinstance(params, Tensor | str | bytes | Mapping) or not isinstance(params, Iterable):
        hint = "; wrap one tensor in a list: [w]" if isinstance(params, Tensor) else ""
        raise TypeError(
            f"{who}: params must be an iterable of Tensors (a list, or model.parameters()), "
            f"got {describe(params)}{hint}"
        )
    out = list(params)
    for i, p in enumerate(out):
        if optimizer and isinstance(p, Mapping):
            raise TypeError(f"{who}: parameter {i} is a dict; {_NO_GROUPS}")
        if not isinstance(p, Tensor):
            what = (
                "an optimizer updates minitorch Tensors (leaves that require grad)"
                if optimizer
                else "pass a Tensor or an iterable of Tensors (model.parameters())"
            )
            raise TypeError(f"{who}: parameter {i} is not a Tensor (got {describe(p)}); {what}")
    return out


_NO_GROUPS = (
    "minitorch's optimizers take no parameter groups (PyTorch's dicts), only an iterable "
    "of tensors sharing one set of hyper-parameters: make one optimizer per group"
)


class Optimizer:
    """What every optimizer here shares: the parameter list, ``zero_grad``, and a
    ``state_dict`` / ``load_state_dict`` round trip.

    ``params`` is a non-empty iterable of leaf tensors that require grad (a list,
    ``model.parameters()``), each given once; PyTorch's parameter groups (dicts) are
    not supported: one optimizer per group.

    A subclass names its hyper-parameters (``_hyper``, checked by ``_check``), its
    per-parameter arrays (``_arrays``; ``None`` until a step creates them) and its
    per-parameter counters (``_counters``), and implements ``step``.

    Examples
    --------
    >>> import minitorch
    >>> w = minitorch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = minitorch.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> sorted(opt.state_dict())
    ['lr', 'momentum', 'momentum_buffer', 'nesterov', 'type', 'weight_decay']
    >>> opt.state_dict()["momentum_buffer"]
    [array([ 2., -4.], dtype=float32)]
    """

    _hyper: ClassVar[tuple[str, ...]] = ()
    _arrays: ClassVar[tuple[str, ...]] = ()
    _counters: ClassVar[tuple[str, ...]] = ()

    def __init__(self, params: Iterable[Tensor], **hyper: Any) -> None:
        name = type(self).__name__
        self.params = _param_list(params, name, optimizer=True)
        if not self.params:
            raise ValueError(
                f"{name}: got an empty parameter list; pass the tensors to train, e.g. "
                f"{name}(model.parameters(), ...) or {name}([w, b], ...)"
            )
        first: dict[int, int] = {}
        for i, p in enumerate(self.params):
            if not p.requires_grad or not p.is_leaf:
                raise ValueError(f"{name}: parameter {i} must be a leaf Tensor that requires grad")
            j = first.setdefault(id(p), i)
            if j != i:  # each step would update it twice (PyTorch warns)
                raise ValueError(
                    f"{name}: parameter {i} is parameter {j} again (shape {p.shape}); give "
                    f"each tensor once (a weight shared by two layers: list it once)"
                )
        for k, v in self._check(hyper).items():
            setattr(self, k, v)
        n = len(self.params)
        self._state: dict[str, list[Any]] = {k: [None] * n for k in self._arrays}
        self._count: dict[str, list[int]] = {k: [0] * n for k in self._counters}

    def _check(self, hyper: Mapping[str, Any]) -> dict[str, Any]:
        """The hyper-parameters, validated and normalized (ValueError if one is bad)."""
        raise NotImplementedError

    def _check_param(self, i: int, hyper: Mapping[str, Any], state: Mapping[str, Any]) -> None:
        """Refuse an inconsistent per-parameter state (for ``load_state_dict``)."""

    def step(self) -> None:
        """Apply one update to every parameter that has a gradient."""
        raise NotImplementedError

    def _step(self, scratch: bool) -> None:
        """``step()``; with ``scratch`` it may also overwrite the gradients' arrays.

        :func:`minitorch.capture`'s replays pass True where nothing reads a gradient
        after the step (``zero_grad()`` follows it), on minitorch's own optimizers only:
        one whose class or instance overrides ``step`` or ``_step`` is replayed through
        ``step()``."""
        self.step()

    def _with_gradients(self, on: _OnDevices) -> Iterator[tuple[int, Tensor, Any]]:
        """``(i, p, p.grad)`` for each parameter that has a gradient, with its device
        made current where its library works on the current one (CuPy)."""
        for i, p in enumerate(self.params):
            g = p.grad
            if g is not None:
                on(p)
                yield i, p, g

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's gradient (the next backward starts fresh), as
        PyTorch's default; ``set_to_none=False`` sets each existing one to zeros."""
        if not isinstance(set_to_none, bool):
            raise TypeError(f"zero_grad: set_to_none must be True or False, got {set_to_none!r}")
        for p in self.params:
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                with p._backend.on_device():
                    p.grad = p._backend.xp.zeros_like(p.grad)

    def _keeps_no_gradient(self) -> bool:
        """Whether ``step()`` keeps no reference to a gradient array it reads (SGD's
        momentum starts from a copy, Adam's moments are new arrays): true of this
        module's optimizers as defined here; false for a subclass, or once a method is
        replaced on the class or set on the instance. :func:`minitorch.capture` then
        hands ``step()`` the gradients in a CUDA graph's memory, uncopied."""
        defined = _DEFINED.get(type(self))
        if defined is None:
            return False
        own = self.__dict__
        return all(c.__dict__.get(name) is f and name not in own for c, name, f in defined)

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's hyper-parameters and per-parameter state as a plain dict.

        ``"type"`` is the class name; hyper-parameters are Python numbers, bools and lists;
        per-parameter state is a list with one entry per parameter: an int for a counter,
        and for an array a host NumPy copy (``None`` before the parameter's first step).
        Nothing in it aliases the optimizer's own state.
        """
        out: dict[str, Any] = {"type": type(self).__name__}
        for k in self._hyper:
            v = getattr(self, k)
            out[k] = list(v) if isinstance(v, tuple) else v
        for k in self._counters:
            out[k] = list(self._count[k])
        for k in self._arrays:
            out[k] = [
                None if a is None else np.array(p._backend.to_numpy(a), copy=True)
                for p, a in zip(self.params, self._state[k], strict=True)
            ]
        return out

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (hyper-parameters included, as
        PyTorch does), copying each array onto its parameter's backend, dtype and device.

        Raises ValueError, changing nothing, if the state is for another optimizer type,
        another number of parameters or other shapes, or lacks an entry.
        """
        name = type(self).__name__
        where = f"{name}.load_state_dict"
        if not isinstance(state, Mapping):
            raise ValueError(f"{where}: expected a dict, got {type(state).__name__}")
        if state.get("type") != name:
            raise ValueError(f"{where}: the state is for {state.get('type')!r}, not {name!r}")
        for k in (*self._hyper, *self._counters, *self._arrays):
            if k not in state:
                raise ValueError(f"{where}: the state has no {k!r}")
        hyper = self._check({k: state[k] for k in self._hyper})
        n = len(self.params)
        for k in (*self._counters, *self._arrays):
            if not isinstance(state[k], list | tuple) or len(state[k]) != n:
                got = len(state[k]) if isinstance(state[k], list | tuple) else type(state[k])
                raise ValueError(
                    f"{where}: {k!r} must hold one entry per parameter ({n}), got {got}"
                )
        count: dict[str, list[int]] = {k: [] for k in self._counters}
        for k in self._counters:
            for i, c in enumerate(state[k]):
                if isinstance(c, bool) or not isinstance(c, numbers.Integral) or c < 0:
                    raise ValueError(f"{where}: {k}[{i}] must be an int >= 0, got {c!r}")
                count[k].append(int(c))
        host: dict[str, list[np.ndarray | None]] = {k: [] for k in self._arrays}
        for k in self._arrays:
            for i, (p, a) in enumerate(zip(self.params, state[k], strict=True)):
                if a is None:
                    host[k].append(None)
                    continue
                arr = np.array(a, copy=True)  # never alias the caller's array
                if arr.dtype.kind not in "fiu":
                    raise ValueError(f"{where}: {k}[{i}] must be a real array, not {arr.dtype}")
                if arr.shape != p.shape:
                    raise ValueError(
                        f"{where}: {k}[{i}] has shape {arr.shape}, "
                        f"but parameter {i} has shape {p.shape}"
                    )
                host[k].append(arr)
        for i in range(n):
            entry: dict[str, Any] = {k: count[k][i] for k in self._counters}
            entry.update({k: host[k][i] for k in self._arrays})
            self._check_param(i, hyper, entry)
        # all checked: now change the optimizer
        for k, v in hyper.items():
            setattr(self, k, v)
        self._count = count
        self._state = {
            k: [
                None if a is None else p._backend.from_numpy(a, p.data.dtype, p.device)
                for p, a in zip(self.params, host[k], strict=True)
            ]
            for k in self._arrays
        }


class SGD(Optimizer):
    """Stochastic gradient descent: ``p <- p - lr * (g + weight_decay * p)``, with
    optional (heavy-ball or Nesterov) momentum, as ``torch.optim.SGD`` (no dampening).

    With momentum ``mu`` the buffer is ``b <- mu * b + g`` (``b = g`` at the first step)
    and the update uses ``b``, or ``g + mu * b`` when ``nesterov`` (which needs
    ``momentum > 0``). ``lr=0`` is allowed (the parameters do not move).

    Examples
    --------
    >>> import minitorch
    >>> w = minitorch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = minitorch.optim.SGD([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.8, -1.6], dtype=float32, backend=numpy, requires_grad=True)
    """

    _hyper = ("lr", "momentum", "weight_decay", "nesterov")
    _arrays = ("momentum_buffer",)
    lr: float
    momentum: float
    weight_decay: float
    nesterov: bool

    def __init__(
        self,
        params: Iterable[Tensor],
        lr: float,
        momentum: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
    ) -> None:
        super().__init__(
            params, lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov
        )

    def _check(self, hyper: Mapping[str, Any]) -> dict[str, Any]:
        out = {
            "lr": _non_negative("SGD", "lr", hyper["lr"]),
            "momentum": _non_negative("SGD", "momentum", hyper["momentum"]),
            "weight_decay": _non_negative("SGD", "weight_decay", hyper["weight_decay"]),
            "nesterov": _flag("SGD", "nesterov", hyper["nesterov"]),
        }
        if out["nesterov"] and out["momentum"] == 0:
            raise ValueError("SGD: nesterov=True requires momentum > 0, got momentum=0.0")
        return out

    def step(self) -> None:
        """Apply one update to every parameter that has a gradient."""
        self._step(False)

    def _step(self, scratch: bool) -> None:
        lr = self.lr
        plain = not (self.weight_decay or self.momentum) and type(lr) in (float, int)
        # a backend's foreach -> the parameters it updates together, their arrays and
        # their gradients (new arrays: an alias of a parameter's array that a reference
        # count cannot see, torch's detach(), must keep its values)
        together: dict[Any, tuple[list[Tensor], list[Any], list[Any]]] = {}
        with _OnDevices() as on:
            for i, p, g in self._with_gradients(on):
                fe = p._backend.foreach
                if fe is not None and plain and fe.takes(p.data, g):
                    ps, ys, xs = together.setdefault(fe, ([], [], []))
                    ps.append(p)
                    ys.append(p.data)
                    xs.append(g)
                    continue
                fused = p._backend.sgd_update
                if fused is not None and plain:  # x - lr * g, one launch (CuPy)
                    p.data = _updated(fused(p.data, lr, g), p.data, p._backend)
                    p._version += 1
                    continue
                axpy_ = p._backend.axpy_
                if axpy_ is not None and plain:
                    # y += -lr * g in one pass (NumPy with SciPy's BLAS), in place where
                    # nothing else sees the buffer (see below)
                    data = p.data
                    if sys.getrefcount(data) <= 3 and p._backend.owns(data) and axpy_(data, -lr, g):
                        p._version += 1
                        continue
                if self.weight_decay or self.momentum:
                    step = lr * self._direction(i, p, g)
                elif (
                    scratch
                    and type(g) is np.ndarray
                    and g.flags.writeable
                    # a Python number keeps g's dtype; a NumPy float64 lr on float32 promotes
                    and (type(lr) is float or np.result_type(g, lr) == g.dtype)
                ):
                    step = np.multiply(g, lr, out=g)  # into the gradient: no temporary
                else:
                    step = lr * g
                # p.data = p.data - lr * g, in place where nothing else can see the buffer:
                # its references are p's slot, `data` and getrefcount's own argument, and
                # it is no view of another array (`w.data = big[0]`: big is the user's; a
                # NumPy scalar, which `-=` cannot change, is replaced by an array)
                data = p.data
                if (
                    sys.getrefcount(data) <= 3
                    and isinstance(data, np.ndarray)
                    and p._backend.owns(data)
                ):
                    try:
                        data -= step
                    except ValueError:  # a read-only array
                        p.data = _updated(data - step, data, p._backend)
                else:
                    p.data = _updated(data - step, data, p._backend)
                p._version += 1
        for fe, (ps, ys, xs) in together.items():
            for p, new in zip(ps, fe.sub(ys, fe.mul(xs, lr)), strict=True):  # 2 launches
                p.data = new
                p._version += 1

    def _direction(self, i: int, p: Tensor, g: Any) -> Any:
        """The gradient with weight decay added and momentum applied."""
        if self.weight_decay:
            g = g + self.weight_decay * p.data
        if self.momentum:
            buffers = self._state["momentum_buffer"]
            v = buffers[i]
            # the first buffer is a copy: changing p.grad later must not change it
            v = p._backend.xp.asarray(g, copy=True) if v is None else self.momentum * v + g
            buffers[i] = v
            g = g + self.momentum * v if self.nesterov else v
        return g


class Adam(Optimizer):
    """Adam (Kingma & Ba), as ``torch.optim.Adam``: bias-corrected moment estimates,
    optional L2 weight decay added to the gradient, and optional AMSGrad.

    Per parameter, at step ``t``: ``g <- g + weight_decay * p``;
    ``m <- beta1 * m + (1 - beta1) * g``; ``v <- beta2 * v + (1 - beta2) * g * g``;
    ``p <- p - lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)``, where
    AMSGrad uses the running maximum of ``v`` instead of ``v``. The state (``step``,
    ``exp_avg``, ``exp_avg_sq``, ``max_exp_avg_sq``) is created at a parameter's first
    step; a parameter whose ``.grad`` is None is skipped.

    Examples
    --------
    >>> import minitorch
    >>> w = minitorch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = minitorch.optim.Adam([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()  # the first step moves each entry by about lr, against its gradient
    >>> w.numpy().round(4)
    array([ 0.9, -1.9], dtype=float32)
    """

    _hyper = ("lr", "betas", "eps", "weight_decay", "amsgrad")
    _arrays = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")
    _counters = ("step",)
    _decoupled: ClassVar[bool] = False
    lr: float
    betas: tuple[float, float]
    eps: float
    weight_decay: float
    amsgrad: bool

    def __init__(
        self,
        params: Iterable[Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
    ) -> None:
        super().__init__(
            params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad
        )

    def _check(self, hyper: Mapping[str, Any]) -> dict[str, Any]:
        name = type(self).__name__
        return {
            "lr": _non_negative(name, "lr", hyper["lr"]),
            "betas": _betas(name, hyper["betas"]),
            "eps": _non_negative(name, "eps", hyper["eps"]),
            "weight_decay": _non_negative(name, "weight_decay", hyper["weight_decay"]),
            "amsgrad": _flag(name, "amsgrad", hyper["amsgrad"]),
        }

    def _check_param(self, i: int, hyper: Mapping[str, Any], state: Mapping[str, Any]) -> None:
        names = ["exp_avg", "exp_avg_sq"] + (["max_exp_avg_sq"] if hyper["amsgrad"] else [])
        for k in names:
            if (state[k] is None) != (state["step"] == 0):
                raise ValueError(
                    f"{type(self).__name__}.load_state_dict: parameter {i} has step "
                    f"{state['step']} but {k} is {'missing' if state[k] is None else 'set'}"
                )

    def step(self) -> None:
        """Apply one update to every parameter that has a gradient."""
        lr, (beta1, beta2), eps, wd = self.lr, self.betas, self.eps, self.weight_decay
        exp_avgs, exp_avg_sqs = self._state["exp_avg"], self._state["exp_avg_sq"]
        max_exp_avg_sqs, steps = self._state["max_exp_avg_sq"], self._count["step"]
        numbers_ = all(type(h) in (float, int) for h in (lr, beta1, beta2, eps, wd))
        # (a backend's foreach, step count) -> the parameters it updates together
        together: dict[tuple[Any, int], list[int]] = {}
        with _OnDevices() as on:
            for i, p, g in self._with_gradients(on):
                xp, data = p._backend.xp, p.data
                m, v, v_max = exp_avgs[i], exp_avg_sqs[i], max_exp_avg_sqs[i]
                if m is None:
                    m, v = xp.zeros_like(data), xp.zeros_like(data)
                if self.amsgrad and v_max is None:
                    v_max = xp.zeros_like(data)
                steps[i] += 1
                t = steps[i]
                fe = p._backend.foreach
                if fe is not None and numbers_ and fe.takes(data, g):
                    exp_avgs[i], exp_avg_sqs[i], max_exp_avg_sqs[i] = m, v, v_max
                    together.setdefault((fe, t), []).append(i)
                    continue
                if numbers_ and self._in_place(p, g, m, v, v_max, t):
                    exp_avgs[i], exp_avg_sqs[i], max_exp_avg_sqs[i] = m, v, v_max
                    continue
                # PyTorch's _single_tensor_adam, in its order of operations (_together does
                # the same on lists: a test checks that both give the same bits on the CPU)
                if wd != 0:
                    if self._decoupled:
                        data = data * (1 - lr * wd)
                    else:
                        g = g + wd * data
                w = 1 - beta1  # m.lerp_(g, w)
                m = m + w * (g - m) if abs(w) < 0.5 else g - (g - m) * (1 - w)
                v = v * beta2 + (1 - beta2) * g * g
                bias_correction1 = 1 - beta1**t
                bias_correction2 = 1 - beta2**t
                step_size = lr / bias_correction1
                bias_correction2_sqrt = bias_correction2**0.5
                if self.amsgrad:
                    v_max = xp.maximum(v_max, v)
                    denom = xp.sqrt(v_max) / bias_correction2_sqrt + eps
                else:
                    denom = xp.sqrt(v) / bias_correction2_sqrt + eps
                p.data = _updated(data + -step_size * m / denom, p.data, p._backend)
                p._version += 1
                exp_avgs[i], exp_avg_sqs[i], max_exp_avg_sqs[i] = m, v, v_max
        for (fe, t), idx in together.items():
            self._together(fe, t, idx)

    def _in_place(self, p: Tensor, g: Any, m: Any, v: Any, v_max: Any, t: int) -> bool:
        """Step ``t`` of ``p`` as :meth:`step` computes it, on NumPy arrays of one dtype,
        writing the moments and the parameter in their own buffers (two temporaries,
        where the formula made about fifteen arrays). The same operations in the same
        order, so the same bits (a test compares both). False, changing nothing, where
        an array is not a plain NumPy array that owns its memory, or someone else holds
        it (a graph that saved the parameter, a view; the reference counts say so:
        the caller's variable, the state list's slot or ``p``'s, and ours)."""
        data = p.data
        if not (type(data) is type(g) is type(m) is type(v) is np.ndarray):
            return False
        dt = data.dtype
        if g.dtype != dt or m.dtype != dt or v.dtype != dt or dt.kind != "f":
            return False
        if v_max is not None and (type(v_max) is not np.ndarray or v_max.dtype != dt):
            return False
        # each array's references: p's slot or the state list's, the caller's name, ours
        # and getrefcount's argument (at the first step the moments are in no list yet)
        refs = [sys.getrefcount(data), sys.getrefcount(m), sys.getrefcount(v)]
        if v_max is not None:
            refs.append(sys.getrefcount(v_max))
        if max(refs) > 4 or not all(_alone(a) for a in (data, m, v, v_max) if a is not None):
            return False
        lr, (beta1, beta2), eps, wd = self.lr, self.betas, self.eps, self.weight_decay
        if wd != 0:
            if self._decoupled:
                np.multiply(data, 1 - lr * wd, out=data)
            else:
                g = g + wd * data
        tmp = np.subtract(g, m)
        w = 1 - beta1  # m.lerp_(g, w)
        if abs(w) < 0.5:
            np.add(m, np.multiply(tmp, w, out=tmp), out=m)
        else:
            np.subtract(g, np.multiply(tmp, 1 - w, out=tmp), out=m)
        np.multiply(v, beta2, out=v)
        np.add(v, np.multiply(np.multiply(g, 1 - beta2, out=tmp), g, out=tmp), out=v)
        step_size = lr / (1 - beta1**t)
        bias_correction2_sqrt = (1 - beta2**t) ** 0.5
        if v_max is not None:
            np.maximum(v_max, v, out=v_max)
        denom = np.sqrt(v if v_max is None else v_max, out=tmp)
        np.add(np.divide(denom, bias_correction2_sqrt, out=denom), eps, out=denom)
        update = np.multiply(m, -step_size)
        np.add(data, np.divide(update, denom, out=update), out=data)
        p._version += 1
        return True

    def _together(self, fe: Any, t: int, idx: list[int]) -> None:
        """Step ``t`` of the parameters ``idx`` with the lists of ``fe``, a backend's
        multi-tensor arithmetic: the arithmetic of :meth:`step`, one list operation
        (one launch on a GPU) for all of them."""
        lr, (beta1, beta2), eps, wd = self.lr, self.betas, self.eps, self.weight_decay
        exp_avgs, exp_avg_sqs = self._state["exp_avg"], self._state["exp_avg_sq"]
        max_exp_avg_sqs = self._state["max_exp_avg_sq"]
        ps = [self.params[i] for i in idx]
        data, g = [p.data for p in ps], [p.grad for p in ps]
        m, v = [exp_avgs[i] for i in idx], [exp_avg_sqs[i] for i in idx]
        if wd != 0:
            if self._decoupled:
                data = fe.mul(data, 1 - lr * wd)
            else:
                g = fe.add(g, fe.mul(data, wd))
        w = 1 - beta1
        if abs(w) < 0.5:
            m = fe.add(m, fe.mul(fe.sub(g, m), w))
        else:
            m = fe.sub(g, fe.mul(fe.sub(g, m), 1 - w))
        v = fe.add(fe.mul(v, beta2), fe.mul(fe.mul(g, 1 - beta2), g))
        step_size = lr / (1 - beta1**t)
        bias_correction2_sqrt = (1 - beta2**t) ** 0.5
        if self.amsgrad:
            v_max = fe.maximum([max_exp_avg_sqs[i] for i in idx], v)
            denom = fe.add(fe.div(fe.sqrt(v_max), bias_correction2_sqrt), eps)
        else:
            denom = fe.add(fe.div(fe.sqrt(v), bias_correction2_sqrt), eps)
        new = fe.add(data, fe.div(fe.mul(m, -step_size), denom))
        for k, (i, p) in enumerate(zip(idx, ps, strict=True)):
            p.data = _updated(new[k], p.data, p._backend)
            p._version += 1
            exp_avgs[i], exp_avg_sqs[i] = m[k], v[k]
            if self.amsgrad:
                max_exp_avg_sqs[i] = v_max[k]


class AdamW(Adam):
    """AdamW (Loshchilov & Hutter), as ``torch.optim.AdamW``: Adam whose weight decay is
    decoupled from the gradient, ``p <- p * (1 - lr * weight_decay)`` before the Adam
    update (default ``weight_decay=1e-2``).

    Examples
    --------
    >>> import minitorch
    >>> w = minitorch.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = minitorch.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> (w * w).sum().backward()
    >>> opt.step()  # p * (1 - 0.1 * 0.5), then the Adam step of about lr
    >>> w.numpy().round(4)
    array([ 0.85, -1.8 ], dtype=float32)
    """

    _decoupled = True

    def __init__(
        self,
        params: Iterable[Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
    ) -> None:
        super().__init__(
            params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad
        )


#: each optimizer class of this module -> (class, name, function) of every function its
#: instances run, as defined here (see Optimizer._keeps_no_gradient)
_DEFINED: dict[type, tuple[tuple[type, str, Any], ...]] = {
    cls: tuple(
        (c, name, f)
        for c in cls.__mro__[:-1]  # not object
        for name, f in vars(c).items()
        if isinstance(f, types.FunctionType | staticmethod | classmethod | property)
    )
    for cls in (Optimizer, SGD, Adam, AdamW)
}


def clip_grad_norm_(params: Iterable[Tensor] | Tensor, max_norm: float) -> Tensor:
    """Scale all gradients so that their global L2 norm is at most ``max_norm``.

    As ``torch.nn.utils.clip_grad_norm_``: every gradient is multiplied by
    ``min(max_norm / (norm + 1e-6), 1)``, and the norm before clipping is returned as a
    0-d tensor of the dtype the gradients promote to, on the first gradient's backend
    (``float(norm)`` reads it). Nothing is read on the host where the gradients share
    one library and device (tensors made under two ``use_backend`` settings of one
    library too): on a GPU the step does not wait, and a captured step can clip.
    Gradients on several libraries or devices meet on the host (one read each). A NaN
    norm makes every gradient NaN, as in PyTorch.

    Examples
    --------
    >>> import minitorch
    >>> w = minitorch.tensor([3.0, 4.0], requires_grad=True)
    >>> (w * w).sum().backward()
    >>> float(minitorch.optim.clip_grad_norm_([w], 1.0))
    10.0
    >>> w.grad.round(4)
    array([0.6, 0.8], dtype=float32)
    """
    if isinstance(max_norm, bool) or not isinstance(max_norm, numbers.Real) or not max_norm >= 0:
        raise ValueError(
            f"clip_grad_norm_: max_norm must be a number >= 0 (math.inf: measure only), "
            f"got {max_norm!r}"
        )
    max_norm = float(max_norm)
    if isinstance(params, Tensor):  # one tensor, as PyTorch takes it
        params = [params]
    ps = [p for p in _param_list(params, "clip_grad_norm_", optimizer=False) if p._grad is not None]
    if not ps:  # PyTorch's tensor(0.)
        be0 = get_backend()
        return Tensor._make(be0.xp.asarray(0.0, dtype=be0.dtype, device=be0.device), be0, None)
    with _OnDevices() as on:  # CuPy: each gradient's arithmetic on its GPU
        be = ps[0]._backend
        # one library (every Backend of it shares its namespace, whatever its default dtype)
        # and one device: the sums stay there
        place = (be.xp, str(ps[0]._grad.device))
        squares = []
        for p in ps:
            on(p)
            squares.append(p._backend.xp.sum(p._grad * p._grad))
        if all((p._backend.xp, str(p._grad.device)) == place for p in ps):
            total_sq = squares[0]
            for s in squares[1:]:
                total_sq = total_sq + s
            total = be.xp.sqrt(total_sq)
            coef = be.xp.clip(max_norm / (total + 1e-6), max=1.0)
            for p in ps:
                p.grad = p._grad * be.xp.astype(coef, p._grad.dtype)
            return Tensor._make(total, be, None)
        # gradients on several backends or devices: their sums meet on the host
        norm = math.sqrt(sum(float(s) for s in squares))
        scale = min(max_norm / (norm + 1e-6), 1.0) if norm == norm else math.nan
        for p in ps:
            on(p)
            p.grad = p._grad * scale
        on(ps[0])
        dtype = _promoted_grad_dtype(ps, be)
        return Tensor._make(be.xp.asarray(norm, dtype=dtype, device=ps[0]._grad.device), be, None)


def _promoted_grad_dtype(ps: list[Tensor], be: Any) -> Any:
    """The dtype the gradients of ``ps`` promote to, as a dtype of ``be`` (the first
    gradient's backend): the norm's dtype, as the one-place path's sum and PyTorch give
    it. Each gradient's dtype is named in ``be``'s namespace (another library's
    ``float32`` is ``be``'s ``float32``); one that has no name there keeps the first
    gradient's dtype."""
    dtypes = [
        getattr(be.xp, p._backend.dtype_name(p._grad.dtype).rsplit(".", 1)[-1], None) for p in ps
    ]
    if any(d is None for d in dtypes):
        return ps[0]._grad.dtype
    return be.xp.result_type(*dtypes)
