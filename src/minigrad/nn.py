"""Small neural networks built from scalar :class:`~minigrad.scalar.Value` objects.

A :class:`Neuron` computes ``activation(b + sum_i w_i * x_i)``, a :class:`Layer` is a list of
neurons, and an :class:`MLP` is a stack of layers whose last layer is linear. Every module
has :meth:`Module.parameters` and :meth:`Module.zero_grad`.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Literal, TypeAlias

from minigrad.scalar import Operand, Value

__all__ = ["MLP", "Activation", "Layer", "Module", "Neuron", "sgd_step", "squared_error"]

Activation: TypeAlias = Literal["relu", "tanh", "sigmoid", "linear"]
_ACTIVATIONS = ("relu", "tanh", "sigmoid", "linear")


class Module:
    """Base class: something with trainable :class:`Value` parameters.

    Examples
    --------
    >>> layer = Layer(2, 3, rng=random.Random(0))
    >>> len(layer.parameters())
    9
    """

    __slots__ = ()

    def parameters(self) -> list[Value]:
        """Return the trainable values, in a fixed order."""
        return []

    def zero_grad(self) -> None:
        """Reset the gradient of every parameter to ``0.0`` (gradients accumulate otherwise).

        Examples
        --------
        >>> n = Neuron(1, activation="linear", rng=random.Random(0))
        >>> n([2.0]).backward()
        >>> n.zero_grad()
        >>> [p.grad for p in n.parameters()]
        [0.0, 0.0]
        """
        for p in self.parameters():
            p.grad = 0.0


class Neuron(Module):
    """One unit: ``activation(b + w . x)``.

    Parameters
    ----------
    nin : int
        Number of inputs.
    activation : {"relu", "tanh", "sigmoid", "linear"}, optional
        The non-linearity applied to the weighted sum.
    rng : random.Random, optional
        Source of the initial weights, drawn uniformly from ``[-1, 1]``; the bias starts at
        zero. Pass a seeded generator for reproducible models.

    Examples
    --------
    >>> n = Neuron(2, activation="linear", rng=random.Random(0))
    >>> n.w[0].data = 0.5; n.w[1].data = -1.0; n.b.data = 0.25
    >>> n([2.0, 3.0]).data
    -1.75
    """

    __slots__ = ("activation", "b", "w")

    def __init__(
        self, nin: int, activation: Activation = "relu", rng: random.Random | None = None
    ) -> None:
        if activation not in _ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; expected one of {_ACTIVATIONS}")
        rng = rng if rng is not None else random.Random()
        self.w = [Value(rng.uniform(-1.0, 1.0)) for _ in range(nin)]
        self.b = Value(0.0)
        self.activation: Activation = activation

    def __call__(self, x: Sequence[Operand]) -> Value:
        if len(x) != len(self.w):
            raise ValueError(f"Neuron expects {len(self.w)} inputs, got {len(x)}")
        act = Value.sum([self.b, *(wi * xi for wi, xi in zip(self.w, x, strict=True))])
        if self.activation == "relu":
            return act.relu()
        if self.activation == "tanh":
            return act.tanh()
        if self.activation == "sigmoid":
            return act.sigmoid()
        return act

    def parameters(self) -> list[Value]:
        return [*self.w, self.b]

    def __repr__(self) -> str:
        return f"Neuron({len(self.w)}, activation={self.activation!r})"


class Layer(Module):
    """``nout`` independent neurons that read the same inputs.

    Examples
    --------
    >>> layer = Layer(3, 2, activation="tanh", rng=random.Random(0))
    >>> len(layer([1.0, 0.0, -1.0]))
    2
    """

    __slots__ = ("neurons",)

    def __init__(
        self,
        nin: int,
        nout: int,
        activation: Activation = "relu",
        rng: random.Random | None = None,
    ) -> None:
        rng = rng if rng is not None else random.Random()
        self.neurons = [Neuron(nin, activation, rng) for _ in range(nout)]

    def __call__(self, x: Sequence[Operand]) -> list[Value]:
        return [n(x) for n in self.neurons]

    def parameters(self) -> list[Value]:
        return [p for n in self.neurons for p in n.parameters()]

    def __repr__(self) -> str:
        return f"Layer({len(self.neurons[0].w) if self.neurons else 0}, {len(self.neurons)})"


class MLP(Module):
    """A multi-layer perceptron: hidden layers use ``activation``, the last one is linear.

    Parameters
    ----------
    nin : int
        Number of inputs.
    nouts : sequence of int
        Width of each layer; the last entry is the number of outputs.
    activation : {"relu", "tanh", "sigmoid", "linear"}, optional
        Non-linearity of the hidden layers.
    rng : random.Random, optional
        Source of the initial weights (see :class:`Neuron`).

    Examples
    --------
    >>> model = MLP(5, [16, 5], rng=random.Random(0))
    >>> len(model.parameters()), len(model([1.0, 0.0, 0.0, 0.0, 0.0]))
    (181, 5)
    """

    __slots__ = ("layers",)

    def __init__(
        self,
        nin: int,
        nouts: Sequence[int],
        activation: Activation = "relu",
        rng: random.Random | None = None,
    ) -> None:
        rng = rng if rng is not None else random.Random()
        sizes = [nin, *nouts]
        last = len(nouts) - 1
        self.layers = [
            Layer(sizes[i], sizes[i + 1], activation if i != last else "linear", rng)
            for i in range(len(nouts))
        ]

    def __call__(self, x: Sequence[Operand]) -> list[Value]:
        inputs: Sequence[Operand] = x
        out: list[Value] = []
        for layer in self.layers:
            out = layer(inputs)
            inputs = out
        return out

    def parameters(self) -> list[Value]:
        return [p for layer in self.layers for p in layer.parameters()]

    def __repr__(self) -> str:
        return f"MLP({', '.join(repr(layer) for layer in self.layers)})"


def squared_error(outputs: Sequence[Value], targets: Sequence[float]) -> Value:
    """Squared error summed over the outputs: ``sum_k (outputs[k] - targets[k]) ** 2``.

    Examples
    --------
    >>> out = [Value(1.0), Value(0.5)]
    >>> loss = squared_error(out, [1.0, 0.0])
    >>> loss.backward()
    >>> loss.data, out[1].grad
    (0.25, 1.0)
    """
    if len(outputs) != len(targets):
        raise ValueError(f"squared_error: {len(outputs)} outputs but {len(targets)} targets")
    return Value.sum([(o - t) ** 2 for o, t in zip(outputs, targets, strict=True)])


def sgd_step(params: Sequence[Value], lr: float) -> None:
    """Plain gradient descent: ``p.data -= lr * p.grad`` for each parameter.

    Examples
    --------
    >>> p = Value(1.0); p.grad = 2.0
    >>> sgd_step([p], lr=0.1); p.data
    0.8
    """
    for p in params:
        p.data -= lr * p.grad
