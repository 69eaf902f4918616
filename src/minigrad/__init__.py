"""minigrad: a scalar reverse-mode autograd engine, the first step before minitorch's tensors.

Examples
--------
>>> from minigrad import Value
>>> x = Value(3.0, label="x")
>>> y = x * x + 2 * x
>>> y.backward()
>>> y.data, x.grad
(15.0, 8.0)
"""

from minigrad import nn, viz
from minigrad.nn import MLP, Layer, Module, Neuron, sgd_step, squared_error
from minigrad.scalar import Value, topological_order, zero_grad
from minigrad.viz import DotGraph, escape_label, render, render_dot, to_dot

__all__ = [
    "MLP",
    "DotGraph",
    "Layer",
    "Module",
    "Neuron",
    "Value",
    "escape_label",
    "nn",
    "render",
    "render_dot",
    "sgd_step",
    "squared_error",
    "to_dot",
    "topological_order",
    "viz",
    "zero_grad",
]
