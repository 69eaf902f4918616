"""minimodel: a small model library on minitorch, as ``torch.nn`` is on PyTorch.

Modules with registered parameters and buffers, forward hooks and ``to()``
(``Module``, ``Parameter``), containers (``ModuleList``, ``Sequential``,
``ModuleDict``), layers (``Linear``, ``Embedding``, ``LayerNorm``, ``Dropout``,
``MLP``), activations (``ReLU``, ``GELU``, ``Tanh``,
``Sigmoid``, ``SiLU``), causal multi-head attention and the pre-LN transformer block,
and ``TinyLM``, a character-level GPT with its tokenizer and training loop. It uses only
minitorch's public API; its layer norm is a custom op declared with ``minitorch.defop``.

``python -m minimodel`` trains a TinyLM on Shakespeare's Sonnets and prints a sample.
"""

from __future__ import annotations

from . import functional
from .activation import GELU, ReLU, Sigmoid, SiLU, Tanh
from .attention import MultiHeadAttention, TransformerBlock
from .containers import ModuleDict, ModuleList, Sequential
from .layers import MLP, Dropout, Embedding, LayerNorm, Linear
from .lm import CharTokenizer, LMConfig, TinyLM, sinusoidal_positions
from .module import IncompatibleKeys, Module, Parameter, RemovableHandle
from .train import (
    TrainConfig,
    get_batch,
    load_checkpoint,
    load_text,
    save_checkpoint,
    step_seed,
    train,
)

__version__ = "0.1.0"

__all__ = [
    "GELU",
    "MLP",
    "CharTokenizer",
    "Dropout",
    "Embedding",
    "IncompatibleKeys",
    "LMConfig",
    "LayerNorm",
    "Linear",
    "Module",
    "ModuleDict",
    "ModuleList",
    "MultiHeadAttention",
    "Parameter",
    "ReLU",
    "RemovableHandle",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "Tanh",
    "TinyLM",
    "TrainConfig",
    "TransformerBlock",
    "functional",
    "get_batch",
    "load_checkpoint",
    "load_text",
    "save_checkpoint",
    "sinusoidal_positions",
    "step_seed",
    "train",
]
