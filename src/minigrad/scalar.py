"""A scalar reverse-mode autograd engine: one Python float per node.

Every operation builds a :class:`Value` that remembers its parents and the *local*
derivative of its result with respect to each parent, computed during the forward pass
(``d out / d parent``). :meth:`Value.backward` then needs no closures: it walks the graph
in reverse topological order (reverse creation order) and applies the chain rule
``parent.grad += local * out.grad``.

Gradient semantics follow PyTorch: leaf gradients *accumulate* across calls to
:meth:`Value.backward`; call :func:`zero_grad` (or ``Module.zero_grad``) between steps.
Gradients of interior nodes are reset at the start of each backward pass, so they always
hold the gradient of the latest pass.

No NumPy: the engine uses only :mod:`math`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from numbers import Real
from operator import attrgetter
from typing import TypeAlias

__all__ = ["Operand", "Value", "topological_order", "zero_grad"]

Operand: TypeAlias = "Value | float"
"""What an arithmetic operator accepts: a :class:`Value` or a plain real number."""

_new = object.__new__
_next_seq = itertools.count().__next__
_by_seq = attrgetter("_seq")


def _node(data: float, parents: tuple[Value, ...], local: tuple[float, ...], op: str) -> Value:
    """Create an interior node without the argument checks of ``Value.__init__`` (hot path)."""
    out: Value = _new(Value)
    out.data = data
    out.grad = 0.0
    out._parents = parents
    out._local = local
    out._op = op
    out.label = ""
    out._seq = _next_seq()
    return out


def _power(x: float, p: float) -> float:
    """``x ** p`` as IEEE 754 floats (and PyTorch) give it: a result too large for a
    float is an infinity, where Python's ``**`` raises OverflowError."""
    try:
        return float(x**p)
    except OverflowError:
        odd = x < 0.0 and float(p).is_integer() and int(p) % 2 == 1
        return -math.inf if odd else math.inf


def _constant(x: object) -> float | None:
    """Return ``x`` as a float if it is a real number, else ``None`` (e.g. for a str)."""
    if type(x) is float:
        return x
    if type(x) is int or isinstance(x, Real):  # bool, Fraction, NumPy scalars...
        return float(x)
    return None


class Value:
    """A scalar that records how it was computed, so that gradients can flow back to it.

    Parameters
    ----------
    data : float
        The number to wrap (any real number: ``int``, ``float``, NumPy scalars...); it is
        stored as a Python ``float``.
    label : str, optional
        A name shown by :func:`minigrad.viz.to_dot` and in ``repr``.

    Attributes
    ----------
    data : float
        The value computed by the forward pass.
    grad : float
        ``d root / d self`` after ``root.backward()``; starts at ``0.0``.
    label : str
        The node's display name.

    Examples
    --------
    >>> x = Value(2.0, label="x")
    >>> y = x * x + 3 * x
    >>> y.backward()
    >>> y.data, x.grad
    (10.0, 7.0)
    """

    __slots__ = ("_local", "_op", "_parents", "_seq", "data", "grad", "label")

    data: float
    grad: float
    label: str
    _parents: tuple[Value, ...]
    _local: tuple[float, ...]
    _op: str
    _seq: int

    def __init__(self, data: float, label: str = "") -> None:
        if type(data) is not float:
            if isinstance(data, Value) or not isinstance(data, Real):
                raise TypeError(
                    f"Value() expects a real number (int or float), got "
                    f"{type(data).__name__} {data!r}"
                )
            data = float(data)
        if not isinstance(label, str):
            raise TypeError(f"Value label must be a str, got {type(label).__name__}")
        self.data = data
        self.grad = 0.0
        self._parents = ()
        self._local = ()
        self._op = ""
        self.label = label
        self._seq = _next_seq()

    # ------------------------------------------------------------------ introspection
    @property
    def parents(self) -> tuple[Value, ...]:
        """The operands this node was computed from (empty for a leaf).

        Examples
        --------
        >>> a, b = Value(1.0, "a"), Value(2.0, "b")
        >>> [p.label for p in (a * b).parents]
        ['a', 'b']
        """
        return self._parents

    @property
    def op(self) -> str:
        """The name of the operation that produced this node (``""`` for a leaf).

        Examples
        --------
        >>> (Value(1.0) + 2).op, Value(3.0).relu().op, Value(1.0).op
        ('+', 'relu', '')
        """
        return self._op

    @property
    def local_grads(self) -> tuple[float, ...]:
        """``d self / d parent`` for each parent, saved by the forward pass.

        Examples
        --------
        >>> a, b = Value(3.0), Value(5.0)
        >>> (a * b).local_grads
        (5.0, 3.0)
        """
        return self._local

    @property
    def is_leaf(self) -> bool:
        """Whether the node was created by the user rather than by an operation.

        Examples
        --------
        >>> x = Value(1.0)
        >>> x.is_leaf, (x + 1).is_leaf
        (True, False)
        """
        return not self._parents

    def __repr__(self) -> str:
        name = f", label={self.label!r}" if self.label else ""
        op = f", op={self._op!r}" if self._op else ""
        return f"Value(data={self.data!r}, grad={self.grad!r}{name}{op})"

    # ---------------------------------------------------------------- binary operators
    # Each rule stores (d out / d self, d out / d other).
    def __add__(self, other: Operand) -> Value:
        if isinstance(other, Value):
            return _node(self.data + other.data, (self, other), (1.0, 1.0), "+")
        c = _constant(other)
        if c is None:
            return NotImplemented
        return _node(self.data + c, (self,), (1.0,), "+")

    def __radd__(self, other: float) -> Value:
        c = _constant(other)
        if c is None:
            return NotImplemented
        return _node(c + self.data, (self,), (1.0,), "+")

    def __sub__(self, other: Operand) -> Value:
        if isinstance(other, Value):
            return _node(self.data - other.data, (self, other), (1.0, -1.0), "-")
        c = _constant(other)
        if c is None:
            return NotImplemented
        return _node(self.data - c, (self,), (1.0,), "-")

    def __rsub__(self, other: float) -> Value:
        c = _constant(other)
        if c is None:
            return NotImplemented
        return _node(c - self.data, (self,), (-1.0,), "-")

    def __mul__(self, other: Operand) -> Value:
        if isinstance(other, Value):
            return _node(self.data * other.data, (self, other), (other.data, self.data), "*")
        c = _constant(other)
        if c is None:
            return NotImplemented
        return _node(self.data * c, (self,), (c,), "*")

    def __rmul__(self, other: float) -> Value:
        c = _constant(other)
        if c is None:
            return NotImplemented
        return _node(c * self.data, (self,), (c,), "*")

    def __truediv__(self, other: Operand) -> Value:
        # d(a/b)/da = 1/b, d(a/b)/db = -a/b**2 = -out/b
        if isinstance(other, Value):
            b = other.data
            if b == 0.0:
                raise ZeroDivisionError(
                    f"Value division by zero: {self.data!r} / Value(0.0); "
                    "the quotient and its gradient are undefined"
                )
            out = self.data / b
            return _node(out, (self, other), (1.0 / b, -out / b), "/")
        c = _constant(other)
        if c is None:
            return NotImplemented
        if c == 0.0:
            raise ZeroDivisionError(f"Value division by zero: Value({self.data!r}) / 0")
        return _node(self.data / c, (self,), (1.0 / c,), "/")

    def __rtruediv__(self, other: float) -> Value:
        # d(c/x)/dx = -c/x**2 = -out/x
        c = _constant(other)
        if c is None:
            return NotImplemented
        x = self.data
        if x == 0.0:
            raise ZeroDivisionError(f"Value division by zero: {c!r} / Value(0.0)")
        out = c / x
        return _node(out, (self,), (-out / x,), "/")

    def __pow__(self, exponent: float) -> Value:
        # d(x**p)/dx = p * x**(p - 1)
        if isinstance(exponent, Value):
            raise TypeError(
                "Value ** Value is not supported: the exponent must be a plain number. "
                "For a differentiable exponent y and a positive base x, write "
                "(y * x.log()).exp()."
            )
        p = _constant(exponent)
        if p is None:
            return NotImplemented
        x = self.data
        if x < 0.0 and not p.is_integer():
            raise ValueError(
                f"Value ** {p!r}: a negative base ({x!r}) needs an integer exponent; "
                "the result would be complex"
            )
        if x == 0.0 and p < 0.0:
            raise ZeroDivisionError(f"Value ** {p!r}: zero cannot be raised to a negative power")
        if p == 0.0:
            local = 0.0
        elif x == 0.0 and p < 1.0:
            local = math.inf  # d/dx x**p is unbounded at 0 for 0 < p < 1 (as in PyTorch)
        else:
            local = p * _power(x, p - 1.0)
        return _node(_power(x, p), (self,), (local,), f"**{p:g}")

    def __rpow__(self, base: float) -> Value:
        # d(c**x)/dx = c**x * log(c) = out * log(c)
        c = _constant(base)
        if c is None:
            return NotImplemented
        if c <= 0.0:
            raise ValueError(
                f"{c!r} ** Value: the base must be positive for the gradient "
                "d/dx c**x = c**x * log(c) to exist"
            )
        out = _power(c, self.data)
        return _node(out, (self,), (out * math.log(c),), f"{c:g}**")

    def __neg__(self) -> Value:
        return _node(-self.data, (self,), (-1.0,), "neg")

    def __pos__(self) -> Value:
        return self

    # ------------------------------------------------------------------ unary functions
    def exp(self) -> Value:
        """Return ``e ** self``; its derivative reuses the output: ``d/dx = out``.

        Examples
        --------
        >>> x = Value(0.0)
        >>> y = x.exp()
        >>> y.backward()
        >>> y.data, x.grad
        (1.0, 1.0)
        """
        try:
            out = math.exp(self.data)
        except OverflowError:
            raise OverflowError(f"Value.exp({self.data!r}) overflows float64") from None
        return _node(out, (self,), (out,), "exp")

    def log(self) -> Value:
        """Return the natural logarithm; ``d/dx = 1 / x``. Raises for ``x <= 0``.

        Examples
        --------
        >>> x = Value(2.0)
        >>> y = x.log()
        >>> y.backward()
        >>> round(y.data, 6), x.grad
        (0.693147, 0.5)
        """
        x = self.data
        if not x > 0.0:
            raise ValueError(
                f"Value.log({x!r}): the logarithm needs a positive number; "
                "clamp or shift the input (e.g. (x * x + 1e-12).log())"
            )
        return _node(math.log(x), (self,), (1.0 / x,), "log")

    def relu(self) -> Value:
        """Return ``max(self, 0)``; ``d/dx = 1 if x > 0 else 0``.

        At the kink ``x == 0`` the subgradient 0 is chosen, as in PyTorch.

        Examples
        --------
        >>> Value(-2.0).relu().data, Value(3.0).relu().data
        (0.0, 3.0)
        """
        x = self.data
        if x > 0.0:
            return _node(x, (self,), (1.0,), "relu")
        return _node(0.0, (self,), (0.0,), "relu")

    def tanh(self) -> Value:
        """Return the hyperbolic tangent; ``d/dx = 1 - out**2`` reuses the output.

        Examples
        --------
        >>> x = Value(0.0)
        >>> y = x.tanh()
        >>> y.backward()
        >>> y.data, x.grad
        (0.0, 1.0)
        """
        t = math.tanh(self.data)
        return _node(t, (self,), (1.0 - t * t,), "tanh")

    def sigmoid(self) -> Value:
        """Return ``1 / (1 + exp(-self))``, composed from other ops (no rule of its own).

        The chain rule supplies the derivative. The branch on the sign keeps every
        ``exp`` argument non-positive, so it cannot overflow.

        Examples
        --------
        >>> x = Value(0.0)
        >>> y = x.sigmoid()
        >>> y.backward()
        >>> y.data, x.grad
        (0.5, 0.25)
        """
        if self.data >= 0.0:
            return 1.0 / (1.0 + (-self).exp())
        e = self.exp()
        return e / (1.0 + e)

    # ------------------------------------------------------------------------ n-ary sum
    @staticmethod
    def sum(values: Iterable[Operand]) -> Value:
        """Add many operands with one node (``d/dv_i = 1``) instead of a chain of ``+``.

        Plain numbers are folded into the result as constants.

        Examples
        --------
        >>> a, b = Value(1.0), Value(2.0)
        >>> s = Value.sum([a, b, a, 0.5])
        >>> s.backward()
        >>> s.data, a.grad, b.grad
        (4.5, 2.0, 1.0)
        """
        parents: list[Value] = []
        total = 0.0
        for v in values:
            if isinstance(v, Value):
                parents.append(v)
                total += v.data
                continue
            c = _constant(v)
            if c is None:
                raise TypeError(f"Value.sum: cannot add {type(v).__name__} {v!r}")
            total += c
        return _node(total, tuple(parents), (1.0,) * len(parents), "sum")

    # ------------------------------------------------------------------------- backward
    def backward(self) -> None:
        """Compute ``d self / d node`` for every node of the graph that produced ``self``.

        The seed ``d self / d self = 1.0`` is propagated in reverse topological order.
        Leaf gradients *accumulate* (as in PyTorch): calling ``backward()`` twice doubles
        them, and :func:`zero_grad` resets them. Interior nodes are reset to zero first,
        so their ``grad`` is that of this pass only. The graph is kept, so ``backward``
        may be called again.

        Examples
        --------
        >>> x = Value(3.0)
        >>> y = x * x
        >>> y.backward()
        >>> x.grad
        6.0
        >>> y.backward()  # accumulates, like PyTorch
        >>> x.grad
        12.0
        >>> zero_grad([x]); y.backward(); x.grad
        6.0
        """
        order = topological_order(self)
        for v in order:  # interior grads belong to one pass; leaf grads accumulate
            if v._parents:
                v.grad = 0.0
        if self._parents:
            self.grad = 1.0
        else:
            self.grad += 1.0
        # Chain rule, consumers before producers. Unrolled for the usual one- and two-operand
        # nodes: about a third faster than the generic zip loop, which n-ary sums still use.
        for v in reversed(order):
            parents = v._parents
            if not parents:
                continue
            g = v.grad
            if len(parents) == 1:
                parents[0].grad += v._local[0] * g
            elif len(parents) == 2:
                a, b = parents
                da, db = v._local
                a.grad += da * g
                b.grad += db * g
            else:
                for p, d in zip(parents, v._local, strict=True):
                    p.grad += d * g


def topological_order(root: Value) -> list[Value]:
    """Return every node ``root`` depends on, each after all of its parents.

    Nodes come out in creation order. Each node takes a sequence number when it is created
    (as PyTorch's autograd nodes do), and an operation's result is always created after its
    operands, so sorting the reachable nodes by that number is a topological order. The
    search for reachable nodes is iterative, so a 100,000-deep chain is fine, and the order
    depends neither on set iteration nor on memory addresses.

    Examples
    --------
    >>> a, b = Value(1.0, "a"), Value(2.0, "b")
    >>> c = a * b
    >>> c.label = "c"
    >>> [v.label for v in topological_order(c + a)]
    ['a', 'b', 'c', '']
    """
    seen = {root}
    stack = [root]
    while stack:
        for p in stack.pop()._parents:
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return sorted(seen, key=_by_seq)


def zero_grad(values: Iterable[Value]) -> None:
    """Set ``grad`` to ``0.0`` on each value (typically the parameters of a model).

    Examples
    --------
    >>> x = Value(1.0)
    >>> (x * 5).backward()
    >>> zero_grad([x]); x.grad
    0.0
    """
    for v in values:
        v.grad = 0.0
