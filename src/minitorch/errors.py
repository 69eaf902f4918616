"""Errors that name the op, the shapes, dtypes and backends involved."""

from __future__ import annotations


class OpError(ValueError, TypeError):
    """An op could not run on the inputs it was given.

    It is both a ``ValueError`` and a ``TypeError`` so that code catching either keeps
    working; the message names the op, every input's shape, dtype and backend, and the
    library's own message.
    """


class BackendMismatchError(OpError):
    """Tensors from different backends or devices were combined."""


class FileFormatError(ValueError):
    """A file given to :func:`minitorch.load` is not one :func:`minitorch.save` wrote, or
    is damaged (empty, truncated, corrupt); the message names the file and the fault."""


class DistributedError(RuntimeError):
    """A collective of :mod:`minitorch.distributed` failed: another rank died, raised or
    did not answer within the timeout, or the ranks' models differ; the message names
    the call and the rank."""


class CaptureError(RuntimeError):
    """A step given to :func:`minitorch.capture` cannot be recorded or replayed as it
    is (a value read on the host inside it, random draws, a data-dependent shape...);
    the message says why and what to change."""


# PyTorch spellings minitorch writes the Array API way: name -> (what a PyTorch user
# writes, what minitorch writes; ``x``, ``y`` and ``i`` stand for tensors). The
# AttributeError of a missing name quotes its line (a descriptor per name on Tensor,
# tensor._Spelling, and the package's __getattr__); tests/test_spellings.py runs every
# right-hand side against PyTorch's left-hand side.
TENSOR_SPELLINGS: dict[str, tuple[str, str]] = {
    "t": ("x.t()", "x.mT"),
    "dim": ("x.dim()", "x.ndim"),
    "nelement": ("x.nelement()", "x.numel()"),
    "unsqueeze": ("x.unsqueeze(0)", "x.expand_dims(axis=0)"),
    "flatten": ("x.flatten()", "x.reshape(-1)"),
    "expand": ("x.expand(2, 3, 4)", "x.broadcast_to((2, 3, 4))"),
    "repeat": ("x.repeat(2, 1)", "minitorch.array_api.tile(x, (2, 1))"),
    "unbind": ("x.unbind(0)", "minitorch.array_api.unstack(x, axis=0)"),
    "index_select": ("x.index_select(0, i)", "x.take(i, axis=0)"),
    "gather": ("x.gather(1, i)", "minitorch.array_api.take_along_axis(x, i, axis=1)"),
    "float": ("x.float()", "x.astype('float32')"),
    "double": ("x.double()", "x.astype('float64')"),
    "long": ("x.long()", "x.astype('int64')"),
    "int": ("x.int()", "x.astype('int32')"),
    "bool": ("x.bool()", "x.astype('bool')"),
    "type": ("x.type(torch.float64)", "x.astype('float64')"),
    "clamp": ("x.clamp(0.0, 1.0)", "x.clip(0.0, 1.0)"),
    "amax": ("x.amax(1)", "x.max(axis=1)"),
    "amin": ("x.amin(1)", "x.min(axis=1)"),
    "square": ("x.square()", "x * x"),
    "mm": ("x.mm(y)", "x @ y"),
    "cumsum": ("x.cumsum(0)", "minitorch.array_api.cumulative_sum(x, axis=0)"),
    "norm": ("x.norm()", "minitorch.vector_norm(x)"),
    "sort": ("x.sort().values", "minitorch.array_api.sort(x)"),
    "argsort": ("x.argsort()", "minitorch.array_api.argsort(x)"),
    "topk": ("x.topk(2).values", "minitorch.array_api.sort(x, descending=True)[..., :2]"),
    "chunk": ("x.chunk(2, 1)", "(x[:, :2], x[:, 2:])"),
    "split": ("x.split(2, 1)", "(x[:, :2], x[:, 2:])"),
    "new_zeros": ("x.new_zeros(2, 3)", "minitorch.zeros(2, 3, dtype=x.dtype, device=x.device)"),
    "new_ones": ("x.new_ones(2, 3)", "minitorch.ones(2, 3, dtype=x.dtype, device=x.device)"),
    "contiguous": ("x.contiguous()", "x"),
    "cpu": ("x.cpu()", "x.to(device='cpu')"),
    "cuda": ("x.cuda()", "x.to(device='cuda')"),
}

PACKAGE_SPELLINGS: dict[str, tuple[str, str]] = {
    "float32": ("torch.float32", "'float32'"),
    "float64": ("torch.float64", "'float64'"),
    "int32": ("torch.int32", "'int32'"),
    "int64": ("torch.int64", "'int64'"),
    "float": ("torch.float", "'float32'"),
    "double": ("torch.double", "'float64'"),
    "long": ("torch.long", "'int64'"),
    "from_numpy": ("torch.from_numpy(a)", "minitorch.tensor(a)"),
    "as_tensor": ("torch.as_tensor(a)", "minitorch.tensor(a)"),
    "empty": ("torch.empty(2, 3).shape", "minitorch.zeros(2, 3).shape"),
    "unsqueeze": ("torch.unsqueeze(x, 0)", "minitorch.expand_dims(x, axis=0)"),
    "flatten": ("torch.flatten(x)", "minitorch.reshape(x, (-1,))"),
    "clamp": ("torch.clamp(x, 0.0, 1.0)", "minitorch.clip(x, 0.0, 1.0)"),
    "mm": ("torch.mm(x, y)", "minitorch.matmul(x, y)"),
    "bmm": ("torch.bmm(x[None], y[None])", "minitorch.matmul(x[None], y[None])"),
    "topk": ("torch.topk(x, 2).values", "minitorch.array_api.sort(x, descending=True)[..., :2]"),
    "chunk": ("torch.chunk(x, 2, 1)", "(x[:, :2], x[:, 2:])"),
    "split": ("torch.split(x, 2, 1)", "(x[:, :2], x[:, 2:])"),
    "norm": ("torch.norm(x)", "minitorch.vector_norm(x)"),
    "cumsum": ("torch.cumsum(x, 0)", "minitorch.array_api.cumulative_sum(x, axis=0)"),
    "gather": ("torch.gather(x, 1, i)", "minitorch.array_api.take_along_axis(x, i, axis=1)"),
}

#: PyTorch's submodules minitorch has no counterpart of: where their contents are
PACKAGE_ELSEWHERE: dict[str, str] = {
    "nn": (
        "torch.nn.functional's functions are minitorch's own (minitorch.relu, "
        "minitorch.cross_entropy, minitorch.softmax, minitorch.dropout), and modules "
        "(Linear, Embedding, LayerNorm, Sequential, TransformerBlock) are the minimodel "
        "package's, built on minitorch: pip install -e downstream/minimodel, then "
        "import minimodel"
    ),
}

#: PyTorch's keywords that minitorch's ops spell the Array API way
KEYWORD_SPELLINGS: dict[str, str] = {"dim": "axis", "dims": "axis", "keepdim": "keepdims"}

#: names minitorch has with other parameters than PyTorch's: what a PyTorch call means
SIGNATURE_SPELLINGS: dict[str, tuple[str, str]] = {
    "transpose": (
        "x.transpose(0, 1)",
        "x.permute_dims((1, 0)) (transpose takes one permutation, as NumPy's; x.mT "
        "swaps the last two axes)",
    ),
}


def missing_attribute(
    owner: str, name: str, spellings: dict[str, tuple[str, str]], obj: object
) -> AttributeError:
    """The AttributeError of ``owner.name``: where PyTorch has the name, it says how
    minitorch writes it (``name=`` and ``obj=`` keep Python's "Did you mean" for the
    rest)."""
    message = f"{owner} has no attribute {name!r}"
    if name in spellings:
        theirs, ours = spellings[name]
        message += (
            f"; minitorch follows the Array API standard, where PyTorch's {theirs} is "
            f"written {ours}"
        )
    return AttributeError(message, name=name, obj=obj)
