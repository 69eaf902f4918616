"""A PyTorch spelling minitorch lacks (``x.unsqueeze(0)``, ``torch.float32``) raises an
AttributeError that says how minitorch writes it; here every such line is run: the
minitorch spelling it names gives what PyTorch's gives, on the backend under test."""

from __future__ import annotations

import inspect
import re
from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch.errors import PACKAGE_SPELLINGS, TENSOR_SPELLINGS

torch = pytest.importorskip("torch")

X = np.array([[0.5, -1.5, 2.0, 0.25], [3.0, 0.75, -0.5, 1.0], [-2.0, 1.25, 0.0, 4.0]])
Y = np.array([[1.0, 0.0], [2.0, -1.0], [0.5, 3.0], [-1.0, 1.5]])
IDX = np.array([[0, 2], [1, 1], [3, 0]])


def _minitorch_names() -> dict[str, Any]:
    x = minitorch.tensor(X)
    return {
        "minitorch": minitorch,
        "x": x,
        "y": minitorch.tensor(Y),
        "a": X.copy(),
    }


def _torch_names() -> dict[str, Any]:
    return {"torch": torch, "x": torch.tensor(X), "y": torch.tensor(Y), "a": X.copy()}


# the index each spelling takes (a row of positions, or positions along axis 1)
INDEX = {"index_select": np.array([2, 0, 2]), "gather": IDX}


def _host(value: Any) -> Any:
    """A value of either library as NumPy data, a dtype as its name, a shape as a tuple."""
    if isinstance(value, (tuple, list)) and not isinstance(value, torch.Size):
        return [_host(v) for v in value]
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    if isinstance(value, (str, int)):
        return value
    if isinstance(value, torch.Tensor):
        return value.numpy()
    if isinstance(value, minitorch.Tensor):
        return value.numpy()
    return tuple(value)  # a shape


def _message(owner: Any, name: str) -> str:
    with pytest.raises(AttributeError) as info:
        getattr(owner, name)
    assert info.value.name == name
    return str(info.value)


def _both(name: str, spellings: dict[str, tuple[str, str]], msg: str) -> tuple[Any, Any]:
    theirs, ours = spellings[name]
    assert f"PyTorch's {theirs} is written {ours}" in msg, msg
    mine, their = _minitorch_names(), _torch_names()
    if name in INDEX:
        mine["i"] = minitorch.tensor(INDEX[name])
        their["i"] = torch.tensor(INDEX[name])
    return eval(ours, mine), eval(theirs, their)


@pytest.mark.parametrize("name", sorted(TENSOR_SPELLINGS))
def test_a_tensor_names_minitorch_spelling_of_pytorch_method(name: str, backend: Any) -> None:
    msg = _message(minitorch.tensor(X), name)
    assert msg.startswith(f"'Tensor' object has no attribute {name!r}; minitorch follows")
    if name == "cuda":  # no GPU here: the spelling names the device, as x.cpu() does
        assert "x.to(device='cuda')" in msg
        return
    if name == "cpu" and backend.name == "cupy":  # no CPU device: the error says so
        with pytest.raises(ValueError, match="to: device='cpu' is not a device of the cupy"):
            minitorch.tensor(X).to(device="cpu")
        np.testing.assert_array_equal(minitorch.tensor(X).to("numpy").numpy(), X)
        return
    ours, theirs = _both(name, TENSOR_SPELLINGS, msg)
    np.testing.assert_array_equal(_host(ours), _host(theirs))


@pytest.mark.parametrize("name", sorted(PACKAGE_SPELLINGS))
def test_the_package_names_minitorch_spelling_of_pytorch_function(name: str, backend: Any) -> None:
    msg = _message(minitorch, name)
    assert msg.startswith(f"module 'minitorch' has no attribute {name!r}; minitorch follows")
    ours, theirs = _both(name, PACKAGE_SPELLINGS, msg)
    if isinstance(ours, str):  # a dtype's name: minitorch takes it where PyTorch its dtype
        made = minitorch.zeros(2, dtype=ours)
        assert minitorch.get_backend().dtype_name(made.dtype) == ours == _host(theirs)
        return
    np.testing.assert_array_equal(_host(ours), _host(theirs))


def test_minitorch_nn_points_at_the_functions_and_at_minimodel() -> None:
    """``minitorch.nn`` (a PyTorch user's ``torch.nn.functional.relu``) says where its
    contents are: minitorch's own functions, and minimodel's modules; both exist."""
    msg = _message(minitorch, "nn")
    assert msg.startswith("module 'minitorch' has no attribute 'nn'; torch.nn.functional")
    for name in ("relu", "cross_entropy", "softmax", "dropout"):
        assert f"minitorch.{name}" in msg and callable(getattr(minitorch, name))
    assert "import minimodel" in msg
    minimodel = pytest.importorskip("minimodel")
    for name in ("Linear", "Embedding", "LayerNorm", "Sequential", "TransformerBlock"):
        assert name in msg and isinstance(getattr(minimodel, name), type)


def test_the_gradient_flows_through_the_spellings(backend: Any) -> None:
    # the spellings are minitorch's differentiable ops: x.unsqueeze(0).expand(...)'s
    # gradient as PyTorch's
    x = minitorch.tensor(X, requires_grad=True)
    (x.expand_dims(axis=0).broadcast_to((2, 3, 4)) * 3.0).sum().backward()
    tx = torch.tensor(X, requires_grad=True)
    (tx.unsqueeze(0).expand(2, 3, 4) * 3.0).sum().backward()
    assert tx.grad is not None
    np.testing.assert_array_equal(np.asarray(backend.to_numpy(x.grad)), tx.grad.numpy())


def test_every_listed_name_is_one_minitorch_lacks() -> None:
    # a name minitorch gains (an op's method replaces the placeholder) leaves the table
    for name in TENSOR_SPELLINGS:
        held = inspect.getattr_static(minitorch.Tensor, name)
        assert type(held).__name__ == "_Spelling", (name, held)
        assert not hasattr(minitorch.tensor(X), name), name  # hasattr: False, as before
        assert not hasattr(minitorch.Tensor, name), name
    for name in PACKAGE_SPELLINGS:
        assert name not in vars(minitorch), name


def test_a_name_of_the_array_api_namespace_points_there() -> None:
    for name in ("eye", "sort", "tile", "roll", "isnan", "cumulative_sum"):
        msg = _message(minitorch, name)
        assert msg.endswith(
            f"; the differentiable Array API namespace has it: minitorch.array_api.{name}"
        ), msg
        assert callable(getattr(minitorch.array_api, name))


def test_other_missing_names_keep_pythons_own_message() -> None:
    msg = _message(minitorch.tensor(X), "numl")
    assert msg == "'Tensor' object has no attribute 'numl'"
    assert _message(minitorch, "no_such_thing") == (
        "module 'minitorch' has no attribute 'no_such_thing'"
    )
    # Python still suggests the near name (it reads name= and obj=)
    with pytest.raises(AttributeError) as info:
        minitorch.tensor(X).numl  # noqa: B018
    assert info.value.obj is not None and info.value.name == "numl"
    # the private and dunder names a library probes (copy, pickle, NumPy) stay plain
    t = minitorch.tensor(X)
    assert getattr(t, "__cuda_array_interface__", None) is None
    assert not hasattr(minitorch, "__wrapped__")
    assert re.fullmatch(r"module 'minitorch' has no attribute '_x'", _message(minitorch, "_x"))


def test_a_subclass_names_itself() -> None:
    class Parameter(minitorch.Tensor):
        pass

    p = Parameter(X)
    assert _message(p, "t").startswith("'Parameter' object has no attribute 't'; ")


T = torch.tensor(X)


@pytest.mark.parametrize(
    ("wrong", "keyword", "ours", "right", "theirs"),
    [
        (lambda x: x.sum(dim=0), "dim", "axis", lambda x: x.sum(axis=0), T.sum(dim=0)),
        (
            lambda x: x.mean(axis=0, keepdim=True),
            "keepdim",
            "keepdims",
            lambda x: x.mean(axis=0, keepdims=True),
            T.mean(dim=0, keepdim=True),
        ),
        (
            lambda x: minitorch.softmax(x, dim=-1),
            "dim",
            "axis",
            lambda x: minitorch.softmax(x, axis=-1),
            T.softmax(dim=-1),
        ),
        (
            lambda x: minitorch.concat([x, x], dim=1),
            "dim",
            "axis",
            lambda x: minitorch.concat([x, x], axis=1),
            torch.cat([T, T], dim=1),
        ),
        (
            lambda x: minitorch.flip(x, dims=(0,)),
            "dims",
            "axis",
            lambda x: minitorch.flip(x, axis=(0,)),
            T.flip(dims=(0,)),
        ),
    ],
)
def test_a_pytorch_keyword_names_minitorchs(
    wrong: Any, keyword: str, ours: str, right: Any, theirs: Any
) -> None:
    x = minitorch.tensor(X)
    with pytest.raises(TypeError) as info:
        wrong(x)
    assert str(info.value).endswith(f" (PyTorch's {keyword}= is written {ours}=)"), info.value
    # the keyword it names does what PyTorch's does
    np.testing.assert_allclose(right(x).numpy(), theirs.numpy(), rtol=1e-15, atol=0)


def test_the_keyword_and_arity_messages_in_full() -> None:
    with pytest.raises(TypeError) as info:
        minitorch.tensor(X).sum(dims=0)
    assert str(info.value) == (
        "sum() got an unexpected keyword argument 'dims'; it takes axis, keepdims "
        "(PyTorch's dims= is written axis=)"
    )
    with pytest.raises(TypeError) as info:
        minitorch.relu(minitorch.tensor(X), 3)
    assert str(info.value) == "relu() takes at most 0 parameter(s) after the tensors (none), got 1"


def test_pytorchs_transpose_of_two_axes_says_what_to_write() -> None:
    x = minitorch.tensor(X)
    with pytest.raises(TypeError) as info:
        x.transpose(0, 1)
    msg = str(info.value)
    assert msg.startswith(
        "transpose() takes at most 1 parameter(s) after the tensors (axes), got 2"
    )
    assert "PyTorch's x.transpose(0, 1) is written x.permute_dims((1, 0))" in msg
    np.testing.assert_array_equal(
        x.permute_dims((1, 0)).numpy(), torch.tensor(X).transpose(0, 1).numpy()
    )
    np.testing.assert_array_equal(x.mT.numpy(), torch.tensor(X).transpose(-2, -1).numpy())
