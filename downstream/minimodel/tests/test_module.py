"""The Module API (registration, names, state dicts, modes, repr) and the errors of
bad input."""

from __future__ import annotations

import copy
import math
import pickle
import re
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from minimodel import (
    MLP,
    Dropout,
    Embedding,
    LayerNorm,
    Linear,
    LMConfig,
    Module,
    ModuleDict,
    ModuleList,
    MultiHeadAttention,
    Parameter,
    ReLU,
    Sequential,
    Tanh,
    TinyLM,
    TransformerBlock,
)

import minitorch
from conftest import Tied, host

CONFIG = LMConfig(vocab_size=13, block_size=8, d_model=16, n_layers=2, n_heads=4)


def small_model(**kw: Any) -> TinyLM:
    minitorch.manual_seed(0)
    return TinyLM(LMConfig(**{**CONFIG.__dict__, **kw}))


# ------------------------------------------------------------------ registration
def test_parameter_is_a_leaf_tensor_that_requires_grad() -> None:
    p = Parameter(minitorch.zeros(2, 3))
    assert isinstance(p, minitorch.Tensor)
    assert p.requires_grad and p.is_leaf and p.shape == (2, 3)
    assert repr(p).startswith("Parameter containing:\ntensor(")
    assert type(p * 2.0) is minitorch.Tensor  # results of ops are plain tensors
    assert not Parameter([1.0], requires_grad=False).requires_grad


def test_named_parameters_use_dotted_names_in_pytorch_order() -> None:
    names = [n for n, _ in small_model().named_parameters()]
    assert names[:2] == ["tok_emb.weight", "pos_emb.weight"]
    assert names[2:14] == [
        f"blocks.0.{n}"
        for n in (
            "ln1.weight",
            "ln1.bias",
            "attn.qkv.weight",
            "attn.qkv.bias",
            "attn.proj.weight",
            "attn.proj.bias",
            "ln2.weight",
            "ln2.bias",
            "mlp.fc.weight",
            "mlp.fc.bias",
            "mlp.proj.weight",
            "mlp.proj.bias",
        )
    ]
    assert names[-4:] == ["ln_f.weight", "ln_f.bias", "head.weight", "head.bias"]
    assert len(names) == len(set(names)) == 2 + 2 * 12 + 4


def test_shared_parameters_are_listed_once() -> None:
    class Tied(Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = Embedding(5, 4)
            self.out = Linear(4, 5, bias=False)
            self.out.weight = self.emb.weight

    m = Tied()
    assert [n for n, _ in m.named_parameters()] == ["emb.weight"]
    assert m.num_parameters() == 20
    every = list(m.named_parameters(remove_duplicate=False))
    assert [n for n, _ in every] == ["emb.weight", "out.weight"]
    assert every[0][1] is every[1][1]


def test_assignment_rules() -> None:
    lin = Linear(2, 3)
    with pytest.raises(TypeError, match=r"cannot assign Tensor as parameter 'weight'.*Parameter"):
        lin.weight = minitorch.zeros(3, 2)  # type: ignore[assignment]
    lin.bias = None
    assert [n for n, _ in lin.named_parameters()] == ["weight"]

    class NoInit(Module):
        def __init__(self) -> None:
            self.w = Parameter([1.0])

    with pytest.raises(AttributeError, match=r"super\(\).__init__\(\)"):
        NoInit()


def test_module_list() -> None:
    layers = ModuleList([Linear(3, 3), Linear(3, 2)])
    assert len(layers) == 2 and layers[-1].out_features == 2
    assert [type(m).__name__ for m in layers] == ["Linear", "Linear"]
    with pytest.raises(IndexError, match="out of range for 2 modules"):
        layers[2]
    with pytest.raises(IndexError, match="index -3 is out of range for 2 modules"):
        layers[-3]
    assert layers[np.int64(1)] is layers[1]
    with pytest.raises(TypeError, match="ModuleList indices must be integers or slices, got str"):
        layers["0"]  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=re.escape("got float 1.0")):
        layers[1.0]  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"expected a minimodel\.Module"):
        layers.append("relu")  # type: ignore[arg-type]


def test_module_list_slices_are_module_lists_of_the_same_modules() -> None:
    mods = [Linear(2, 2) for _ in range(4)]
    layers = ModuleList(mods)
    for key in (slice(0, 1), slice(None, None, -1), slice(1, None, 2), slice(-2, None)):
        part = layers[key]
        assert type(part) is ModuleList
        assert [id(m) for m in part] == [id(m) for m in mods[key]]
        assert [n for n, _ in part.named_parameters()][:2] == ["0.weight", "0.bias"]
    assert len(layers[5:]) == 0 and list(layers[5:].parameters()) == []


def test_containers_refuse_what_is_not_a_module_or_a_name() -> None:
    """Each error names the container and method, and what was given; nothing is added
    when it raises."""
    for make, match in (
        (lambda: Sequential([Linear(2, 2)]), r"Sequential\(\*layers\).*got list"),
        (lambda: Sequential(minitorch.relu), "not a function or a class.*got function"),
        (
            lambda: ModuleList(Linear(2, 2)),
            r"ModuleList: .*got Linear; write ModuleList\(\[module\]\)",
        ),
        (lambda: ModuleList().extend(ReLU()), "ModuleList.extend: expected an iterable.*got ReLU"),
        (
            lambda: ModuleList([ReLU()]).insert("0", ReLU()),
            "ModuleList.insert: index must be an int",
        ),
        (
            lambda: ModuleList([ReLU()]).__setitem__(0, "relu"),
            r"ModuleList\[0\] = \.\.\.: .*got str",
        ),
        (
            lambda: ModuleList([ReLU()]).__setitem__(slice(0, 1), [ReLU()]),
            "must be integers, got slice",
        ),
        (lambda: Sequential(ReLU()) + [Tanh()], "unsupported operand"),  # noqa: RUF005
        (
            lambda: ModuleDict({1: ReLU()}),
            "ModuleDict.update: module names must be strings, got int 1",
        ),
        (lambda: ModuleDict().update(3), "ModuleDict.update: expected a mapping .* got int"),
        (
            lambda: ModuleDict().update([("a",)]),
            r"element 0 is \('a',\), not a \(key, module\) pair",
        ),
        (
            lambda: ModuleDict({"a": minitorch.relu}),
            "ModuleDict.update: 'a': expected a minimodel.Module",
        ),
    ):
        with pytest.raises(TypeError, match=match):
            make()
    for make, match in (
        (
            lambda: ModuleDict({"a": ReLU()})["b"],
            r"ModuleDict has no module 'b'; its keys are \['a'\]",
        ),
        (lambda: ModuleDict({"keys": ReLU()}), "'keys' is an attribute of ModuleDict"),
        (
            lambda: Sequential(OrderedDict([("a.b", ReLU())])),
            "module name 'a.b' must be .* without '.'",
        ),
        (lambda: Sequential(OrderedDict([("1", ReLU())])).append(Tanh()), "name '1' is taken"),
    ):
        with pytest.raises(KeyError, match=match):
            make()
    for make, match in (
        (
            lambda: ModuleList([ReLU()]).insert(2, ReLU()),
            "ModuleList.insert: index 2 is out of range",
        ),
        (lambda: ModuleList().pop(), "ModuleList index -1 is out of range for 0 modules"),
        (lambda: Sequential(ReLU())[1], "Sequential index 1 is out of range for 1 modules"),
    ):
        with pytest.raises(IndexError, match=match):
            make()
    layers = ModuleList([ReLU()])
    with pytest.raises(TypeError):
        layers.extend([Tanh(), "relu"])  # type: ignore[list-item]
    assert len(layers) == 1


def test_train_eval_and_zero_grad() -> None:
    model = small_model()
    assert all(m.training for m in model.modules())
    assert model.eval() is model and not any(m.training for m in model.modules())
    model.train()
    assert model.blocks[1].attn.attn_drop.training
    model.loss(np.zeros((1, 4), dtype=np.int64), np.ones((1, 4), dtype=np.int64)).backward()
    assert all(p.grad is not None for p in model.parameters())
    model.zero_grad(set_to_none=False)  # PyTorch's option: zeros of each gradient's shape
    for p in model.parameters():
        assert p.grad is not None and tuple(p.grad.shape) == p.shape
        assert not np.asarray(host(p.grad)).any()
    model.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    with pytest.raises(TypeError, match="zero_grad: set_to_none must be True or False"):
        model.zero_grad(set_to_none=None)  # type: ignore[arg-type]


def test_repr_reads_like_torch() -> None:
    text = repr(small_model())
    assert text.startswith("TinyLM(vocab_size=13, block_size=8, positions=learned\n")
    assert "  (tok_emb): Embedding(13, 16)\n" in text
    assert "    (0-1): 2 x TransformerBlock(\n" in text  # a ModuleList's run of equal reprs
    assert "(qkv): Linear(in_features=16, out_features=48, bias=True)" in text
    assert "(ln_f): LayerNorm((16,), eps=1e-05)" in text
    assert text.endswith("\n)")


def test_initialization_follows_pytorch() -> None:
    minitorch.manual_seed(0)
    lin = Linear(100, 400)
    w, b = lin.weight.numpy(), lin.bias.numpy()  # type: ignore[union-attr]
    bound = 1 / math.sqrt(100)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound
    emb = Embedding(300, 100).weight.numpy()
    assert abs(emb.mean()) < 0.02 and abs(emb.std() - 1) < 0.02
    ln = LayerNorm(5)
    np.testing.assert_array_equal(ln.weight.numpy(), np.ones(5))
    np.testing.assert_array_equal(ln.bias.numpy(), np.zeros(5))
    assert lin.weight.dtype == np.float32  # the backend's default dtype
    assert Linear(2, 2, dtype="float64").weight.dtype == np.float64


def test_same_seed_same_model_on_every_backend(backend: Any) -> None:
    ours = {n: host(p) for n, p in small_model().named_parameters()}
    with minitorch.use_backend("numpy", dtype="float64"):
        ref = {n: host(p) for n, p in small_model().named_parameters()}
    for n in ref:
        np.testing.assert_array_equal(ours[n], ref[n], err_msg=n)


# ------------------------------------------------------------------ state dicts
def test_state_dict_is_detached_and_keeps_its_values() -> None:
    model = small_model()
    sd = model.state_dict()
    assert list(sd) == [n for n, _ in model.named_parameters()]
    w = sd["head.weight"]
    assert not w.requires_grad and w.is_leaf and type(w) is minitorch.Tensor
    before = w.numpy()
    with minitorch.no_grad():
        model.head.weight.mul_(2.0)
    np.testing.assert_array_equal(w.numpy(), before)  # a snapshot, not a live view


def test_load_state_dict_copies_in_place() -> None:
    model, other = small_model(), small_model()
    with minitorch.no_grad():
        for p in other.parameters():
            p.add_(1.0)
    params = list(model.parameters())
    result = model.load_state_dict(other.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert list(model.parameters()) == params  # same Parameter objects
    for (n, p), q in zip(model.named_parameters(), other.parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=n)
        assert p.requires_grad and isinstance(p, Parameter)


def test_load_state_dict_errors_name_keys_and_shapes() -> None:
    model = small_model()
    sd = model.state_dict()
    del sd["head.bias"]
    sd["head.extra"] = minitorch.zeros(3)
    with pytest.raises(
        KeyError,
        match=r"missing key\(s\) \['head.bias'\].*unexpected key\(s\) \['head.extra'\]"
        r".*strict=False",
    ):
        model.load_state_dict(sd)
    result = model.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["head.bias"] and result.unexpected_keys == ["head.extra"]

    bigger = small_model(d_model=32).state_dict()
    before = model.state_dict()
    with pytest.raises(
        ValueError, match=re.escape("'tok_emb.weight': checkpoint (13, 32), model (13, 16)")
    ):
        model.load_state_dict(bigger)
    for n, p in model.named_parameters():  # nothing changed
        np.testing.assert_array_equal(p.numpy(), before[n].numpy())
    with pytest.raises(TypeError, match="expected a dict"):
        model.load_state_dict([1, 2])  # type: ignore[arg-type]


TIED_KEYS = ["emb.weight", "mid.weight", "mid.bias", "again.weight", "again.bias", "head.weight"]


def test_state_dict_lists_a_tied_parameter_under_each_name() -> None:
    """As torch.nn: ``named_parameters()`` and ``parameters()`` give a shared parameter
    once (an optimizer steps it once), the state dict under each of its names."""
    m = Tied()
    assert [n for n, _ in m.named_parameters()] == ["emb.weight", "mid.weight", "mid.bias"]
    sd = m.state_dict()
    assert list(sd) == TIED_KEYS
    assert sd["head.weight"] is sd["emb.weight"] and not sd["head.weight"].requires_grad
    np.testing.assert_array_equal(sd["head.weight"].numpy(), m.emb.weight.numpy())

    opt = minitorch.optim.SGD(list(m.parameters()), lr=0.5)
    assert len(list(m.parameters())) == 3
    x = minitorch.tensor(np.array([0, 3]))
    m.head(m.mid(m.emb(x))).sum().backward()
    opt.step()
    assert m.head.weight is m.emb.weight  # still one parameter, stepped once

    other = Tied()
    assert other.load_state_dict(m.state_dict()) == ([], [])
    for (n, p), q in zip(other.named_parameters(), m.parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=n)
    assert other.head.weight is other.emb.weight


def test_load_state_dict_of_a_tied_parameter_listed_once() -> None:
    """A state dict holding a tied parameter under one name (as minimodel wrote it
    before it listed every name) is refused by strict=True with the reason, and loads
    with strict=False."""
    m, src = Tied(), Tied()
    sd = src.state_dict()
    del sd["head.weight"], sd["again.weight"], sd["again.bias"]
    with pytest.raises(
        KeyError,
        match=re.escape(
            "missing key(s) ['again.weight', 'again.bias', 'head.weight'] ('again.weight' is "
            "tied to 'mid.weight', 'again.bias' is tied to 'mid.bias', 'head.weight' is tied "
            "to 'emb.weight', which the state dict has"
        ),
    ):
        m.load_state_dict(sd)
    result = m.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["again.weight", "again.bias", "head.weight"]
    np.testing.assert_array_equal(m.head.weight.numpy(), src.emb.weight.numpy())


def test_load_state_dict_refuses_different_values_for_one_tied_parameter() -> None:
    m = Tied()
    before = {n: t.numpy() for n, t in m.state_dict().items()}
    sd = {n: t.numpy() for n, t in Tied().state_dict().items()}
    sd["head.weight"] = sd["head.weight"] + 1.0  # from a model whose head is not tied
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Tied.load_state_dict: 'emb.weight' and 'head.weight' name one parameter (tied "
            "weights), but the state dict gives them different values"
        ),
    ):
        m.load_state_dict(sd)
    for n, t in m.state_dict().items():  # nothing changed
        np.testing.assert_array_equal(t.numpy(), before[n], err_msg=n)


def test_save_load_of_a_tied_model(tmp_path: Path) -> None:
    src = Tied()
    path = src.save(tmp_path / "tied.mt")
    assert list(minitorch.load(path)) == TIED_KEYS
    m = Tied().load(path)
    assert m.head.weight is m.emb.weight
    for (n, p), q in zip(m.named_parameters(), src.parameters(), strict=True):
        np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=n)


def test_load_state_dict_reads_arrays_and_refuses_what_is_not_numbers() -> None:
    lin = Linear(3, 2)
    w = np.arange(6.0).reshape(2, 3)
    lin.load_state_dict({"weight": w, "bias": np.array([1, 2])})  # int: cast, as copy_
    np.testing.assert_array_equal(lin.weight.numpy(), w.astype(np.float32))
    np.testing.assert_array_equal(lin.bias.numpy(), [1.0, 2.0])  # type: ignore[union-attr]
    with pytest.raises(TypeError, match=r"'bias' is an array of dtype <U1; expected real"):
        lin.load_state_dict({"weight": w, "bias": np.array(["a", "b"])})
    with pytest.raises(TypeError, match=r"'bias' is a list; expected a Tensor or an array"):
        lin.load_state_dict({"weight": w, "bias": [1.0, 2.0]})
    np.testing.assert_array_equal(lin.bias.numpy(), [1.0, 2.0])  # type: ignore[union-attr]


def test_save_load_gives_identical_logits(backend: Any, tmp_path: Path) -> None:
    model = small_model()
    ids = np.random.default_rng(0).integers(0, 13, size=(2, 8))
    path = model.save(tmp_path / "model.mt")
    minitorch.manual_seed(123)  # a different initialization
    fresh = TinyLM(CONFIG)
    assert not np.array_equal(host(fresh(ids)), host(model(ids)))
    assert fresh.load(path) is fresh
    np.testing.assert_array_equal(host(fresh(ids)), host(model(ids)))
    loaded = minitorch.load(path)
    assert sorted(loaded) == sorted(n for n, _ in model.named_parameters())


def test_load_moves_between_backends_and_dtypes(backend: Any, tmp_path: Path) -> None:
    with minitorch.use_backend("numpy", dtype="float32"):
        src = small_model()
        path = src.save(tmp_path / "f32.mt")
    model = TinyLM(CONFIG).load(path)  # this backend, float64
    for (n, p), q in zip(model.named_parameters(), src.parameters(), strict=True):
        assert p.backend.name == backend.name and p.dtype == backend.resolve_dtype("float64")
        np.testing.assert_array_equal(host(p), q.numpy().astype(np.float64), err_msg=n)


def test_deepcopy_and_pickle_keep_parameters() -> None:
    model = small_model()
    model.loss(np.zeros((1, 3), dtype=np.int64), np.zeros((1, 3), dtype=np.int64)).backward()
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        for (n, p), q in zip(clone.named_parameters(), model.parameters(), strict=True):
            assert isinstance(p, Parameter) and p.requires_grad and p is not q
            np.testing.assert_array_equal(p.numpy(), q.numpy(), err_msg=n)
            np.testing.assert_array_equal(p.grad, q.grad, err_msg=n)


# ------------------------------------------------------------------ errors
def test_linear_wrong_input_shape() -> None:
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Linear(in_features=4, out_features=3, bias=True): the input has shape (2, 5), "
            "but its last axis must have in_features=4 elements"
        ),
    ):
        Linear(4, 3)(minitorch.zeros(2, 5))


def test_token_id_out_of_range() -> None:
    model = small_model()
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Embedding(13, 16): indices (shape (1, 3)) go from 0 to 13, but they "
            "must lie in [0, 13)"
        ),
    ):
        model(np.array([[0, 13, 2]]))
    with pytest.raises(
        ValueError,
        match=re.escape(
            "go from -1 to 2, but they must lie in [0, 13): index -1 is negative (indices "
            "do not count from the end); encode the input with the tokenizer the model was "
            "built for"
        ),
    ) as info:
        model(np.array([[-1, 2]]))
    assert "larger than" not in str(info.value)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "index -1 is negative (indices do not count from the end) and index 20 is out "
            "of range for num_embeddings=13"
        ),
    ):
        model(minitorch.tensor(np.array([[-1, 20]])))
    with pytest.raises(ValueError, match=r"index 13 is out of range .* larger than 13$"):
        model(np.array([[13, 2]]))
    with pytest.raises(ValueError, match=r"must be integers, got dtype float"):
        model.tok_emb(np.array([[0.0, 1.0]]))


def test_token_id_out_of_range_in_a_captured_step(backend: Any) -> None:
    """Bad ids on the recording call of a ``minitorch.capture``d step raise the
    ValueError that names the problem, with the range the op saw (the layer read the ids
    on the host to explain it, which the recording refuses: the user got a CaptureError
    about a ``t.numpy()`` they never wrote). Valid ids then record and replay as eager
    training does, and bad ids after the recording raise the eager message."""

    def make() -> tuple[Embedding, Any, Any]:
        minitorch.manual_seed(0)
        emb = Embedding(20, 4)
        opt = minitorch.optim.SGD(list(emb.parameters()), lr=0.1)

        def step(tok: minitorch.Tensor) -> minitorch.Tensor:
            loss = (emb(tok) ** 2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        return emb, opt, step

    eager_emb, _, eager = make()
    emb, opt, raw = make()
    captured = minitorch.capture(raw, optimizer=opt)
    bad = minitorch.tensor(np.array([[1, 2, 25], [3, -4, 5]]))
    recording = re.escape(
        "Embedding(20, 4): indices (shape (2, 3)) must be integers in [0, 20) (embedding: "
        "an index is out of range [0, 20) (indices go from -4 to 25))"
    )
    with pytest.raises(ValueError, match=recording):
        captured(bad)
    with pytest.raises(ValueError, match=r"must be integers in \[0, 20\) .*got dtype \S*float64"):
        captured(minitorch.tensor([[0.0, 1.0]]))
    for ids in ([[1, 2, 3], [3, 4, 5]], [[0, 19, 7], [7, 7, 2]], [[5, 6, 7], [8, 9, 1]]):
        tok = minitorch.tensor(np.array(ids))
        np.testing.assert_array_equal(host(captured(tok)), host(eager(tok)))
        np.testing.assert_array_equal(host(emb.weight), host(eager_emb.weight))
    assert captured.stats == {"records": 1, "replays": 2, "fallbacks": 0}
    with pytest.raises(ValueError, match=re.escape("(shape (2, 3)) go from -4 to 25, but")):
        captured(bad)


def test_context_longer_than_block_size() -> None:
    with pytest.raises(
        ValueError,
        match=re.escape(
            "TinyLM: the input has 9 tokens (shape (1, 9)), more than the context length "
            "block_size=8; keep the last 8 tokens (idx[:, -8:])"
        ),
    ):
        small_model()(np.zeros((1, 9), dtype=np.int64))
    with pytest.raises(ValueError, match=r"shape \(batch, time\), got shape \(9,\)"):
        small_model()(np.zeros(9, dtype=np.int64))


def test_other_bad_configurations() -> None:
    with pytest.raises(ValueError, match="d_model=10 must be a multiple of n_heads=4"):
        MultiHeadAttention(10, 4)
    with pytest.raises(ValueError, match=r"expected an input of shape \(batch, time, 8\)"):
        MultiHeadAttention(8, 2)(minitorch.zeros(3, 8))
    with pytest.raises(ValueError, match="positions must be 'learned' or 'sinusoidal'"):
        LMConfig(vocab_size=3, positions="rotary")
    with pytest.raises(ValueError, match=r"targets have shape \(1, 2\)"):
        small_model().loss(np.zeros((1, 3), dtype=np.int64), np.zeros((1, 2), dtype=np.int64))


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: Linear(-1, 2), ValueError, "Linear: in_features must be an int >= 0, got -1"),
        (lambda: Linear(2, -3), ValueError, "Linear: out_features must be an int >= 0, got -3"),
        (
            lambda: Linear(2.0, 3),
            TypeError,
            "Linear: in_features must be an int >= 0, got 2.0 (float)",
        ),
        (
            lambda: Embedding(3, -1),
            ValueError,
            "Embedding: embedding_dim must be an int >= 0, got -1",
        ),
        (
            lambda: Embedding(-3, 2),
            ValueError,
            "Embedding: num_embeddings must be an int >= 0, got -3",
        ),
        (
            lambda: Embedding("3", 2),
            TypeError,
            "Embedding: num_embeddings must be an int >= 0, got '3' (str)",
        ),
        (
            lambda: LayerNorm(-1),
            ValueError,
            "LayerNorm: normalized_shape must be an int >= 0, got -1",
        ),
        (
            lambda: LayerNorm(True),
            TypeError,
            "LayerNorm: normalized_shape must be an int >= 0, got True (bool)",
        ),
        (
            lambda: LayerNorm((2, 3)),
            ValueError,
            "LayerNorm: normalized_shape must be an int or a 1-element tuple",
        ),
        (
            lambda: MultiHeadAttention(4, 0),
            ValueError,
            "MultiHeadAttention: n_heads must be an int >= 1, got 0",
        ),
        (
            lambda: MultiHeadAttention(0, 1),
            ValueError,
            "MultiHeadAttention: d_model must be an int >= 1, got 0",
        ),
        (
            lambda: MultiHeadAttention(4, 2.0),
            TypeError,
            "MultiHeadAttention: n_heads must be an int >= 1, got 2.0 (float)",
        ),
        (
            lambda: TransformerBlock(-4, 2),
            ValueError,
            "TransformerBlock: d_model must be an int >= 1, got -4",
        ),
        (
            lambda: TransformerBlock(4, 0),
            ValueError,
            "TransformerBlock: n_heads must be an int >= 1, got 0",
        ),
        (lambda: MLP(4, hidden=-1), ValueError, "MLP: hidden must be an int >= 0, got -1"),
        (lambda: MLP(None), TypeError, "MLP: d_model must be an int >= 0, got None (NoneType)"),
        (
            lambda: Dropout("0.5"),
            TypeError,
            "Dropout: p must be a float in [0, 1], got '0.5' (str)",
        ),
        (lambda: Dropout(1.5), ValueError, "Dropout: p must be a probability in [0, 1], got 1.5"),
        (
            lambda: Dropout(math.nan),
            ValueError,
            "Dropout: p must be a probability in [0, 1], got nan",
        ),
        (
            lambda: MLP(4, dropout=-0.1),
            ValueError,
            "Dropout: p must be a probability in [0, 1], got -0.1",
        ),
        (
            lambda: LMConfig(vocab_size="3"),
            TypeError,
            "LMConfig: vocab_size must be an int >= 1, got '3' (str)",
        ),
        (
            lambda: LMConfig(vocab_size=3, n_heads=0),
            ValueError,
            "LMConfig: n_heads must be an int >= 1, got 0",
        ),
        (
            lambda: LMConfig(vocab_size=3, dropout="0"),
            TypeError,
            "LMConfig: dropout must be a float in [0, 1], got '0' (str)",
        ),
    ],
)
def test_bad_sizes_name_the_layer_and_the_argument(
    make: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        make()


def test_sizes_torch_accepts() -> None:
    """Zero sizes (PyTorch builds them: empty weights), NumPy integers (kept as ints)
    and LayerNorm's normalized_shape as a 1-element tuple."""
    assert Linear(0, 2).weight.shape == (2, 0) and Linear(2, 0).weight.shape == (0, 2)
    assert Embedding(0, 3).weight.shape == (0, 3)
    assert LayerNorm(0).weight.shape == (0,)
    lin = Linear(np.int64(3), np.int32(2))
    assert type(lin.in_features) is int and lin.weight.shape == (2, 3)
    ln = LayerNorm((4,))
    assert ln.normalized_shape == 4 and repr(ln) == "LayerNorm((4,), eps=1e-05)"
    assert ln(minitorch.ones(2, 4)).shape == (2, 4)
    assert Dropout(1).p == 1.0 and type(Dropout(np.float32(0.25)).p) is float


def test_float32_on_every_backend(backend: Any) -> None:
    with minitorch.use_backend(backend.name, dtype="float32", device=backend.device) as be:
        model = small_model(positions="sinusoidal", fused_layer_norm=False, dropout=0.1)
        ids = np.random.default_rng(0).integers(0, 13, size=(2, 8))
        logits = model(ids)
        loss = model.loss(ids, ids)
        loss.backward()
    f32 = be.resolve_dtype("float32")
    assert logits.dtype == f32 and loss.dtype == f32 and logits.backend.name == backend.name
    assert all(p.grad is not None and p.grad.dtype == f32 for p in model.parameters())
    assert math.isfinite(loss.item())


def test_generate() -> None:
    model = small_model()
    out = model.generate([1, 2, 3], 20, rng=0)
    assert out[:3] == [1, 2, 3] and len(out) == 23 and all(0 <= t < 13 for t in out)
    assert model.generate([1, 2, 3], 20, rng=0) == out  # the seed decides
    greedy = model.generate([4], 12, top_k=1, rng=1)
    assert model.generate([4], 12, top_k=1, rng=2) == greedy  # top_k=1: no randomness
    assert model.training  # the mode is restored
    with pytest.raises(ValueError, match="temperature must be > 0"):
        model.generate([1], 3, temperature=0.0)


# ------------------------------------------------------------------ buffers and to()
@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_to_moves_a_model_between_backends(backend: Any, positions: str) -> None:
    """``Module.to(backend)``: every parameter (the same object, still requiring grad,
    with its gradient moved) and buffer (TinyLM's sinusoidal table, not in the state
    dict) on the new backend; the model computes there what it did before, and an
    optimizer built before the move steps the moved parameters."""
    idx = np.array([[1, 2, 3, 4], [0, 5, 6, 7]])
    targets = np.array([[2, 3, 4, 5], [5, 6, 7, 8]])
    with minitorch.use_backend("numpy", dtype="float64"):
        model = small_model(positions=positions)
        model.loss(idx, targets).backward()
        logits = model(idx).numpy()
        grads = {n: np.array(p.grad) for n, p in model.named_parameters()}
        opt = minitorch.optim.SGD(model.parameters(), lr=0.1)
    params = list(model.parameters())
    assert model.to(backend) is model
    assert all(p is q for p, q in zip(model.parameters(), params, strict=True))
    buffers = [n for n, _ in model.named_buffers()]
    assert buffers == ([] if positions == "learned" else ["_pos_table"])
    assert not set(buffers) & set(model.state_dict())
    for n, t in [*model.named_parameters(), *model.named_buffers()]:
        assert t.backend.name == backend.name, n
        assert str(t.device) == str(backend.device) and t.dtype == backend.resolve_dtype("float64")
    for n, p in model.named_parameters():
        assert p.requires_grad, n
        np.testing.assert_array_equal(host(p.grad), grads[n], err_msg=n)
    np.testing.assert_allclose(host(model(idx)), logits, rtol=1e-12, atol=1e-12)
    before = {n: host(p) for n, p in model.named_parameters()}
    opt.step()
    for n, p in model.named_parameters():
        assert p.backend.name == backend.name, n
        np.testing.assert_allclose(host(p), before[n] - 0.1 * grads[n], rtol=1e-12, err_msg=n)


class _Unmovable(minitorch.Tensor):
    __slots__ = ()

    def to(self, *args: Any, **kwargs: Any) -> minitorch.Tensor:
        raise RuntimeError("this buffer cannot move")


def test_to_changes_nothing_when_a_tensor_cannot_move() -> None:
    model = Sequential(Linear(2, 2), Linear(2, 2))
    model[1].register_buffer("stuck", _Unmovable([1.0, 2.0]))
    (model(minitorch.ones(1, 2)).sum()).backward()
    with pytest.raises(RuntimeError, match="this buffer cannot move"):
        model.to(dtype="float64")
    for n, t in [*model.named_parameters(), *model.named_buffers()]:
        assert t.dtype == np.float32, n
    assert all(p.grad is not None and p.grad.dtype == np.float32 for p in model.parameters())


def test_buffers_survive_deepcopy_pickle_and_old_pickles() -> None:
    """A copy keeps its buffers (their values, which are persistent) but not the
    original's tensors; a module pickled before buffers and hooks existed loads with
    none, and takes them."""
    model = Linear(2, 2)
    model.register_buffer("steps", minitorch.tensor(3, dtype="int64"))
    model.register_buffer("scratch", minitorch.ones(2), persistent=False)
    for clone in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert [n for n, _ in clone.named_buffers()] == ["steps", "scratch"]
        assert list(clone.state_dict()) == ["weight", "bias", "steps"]
        assert clone.steps is not model.steps and int(clone.steps.item()) == 3
    legacy = Linear(2, 2)  # as an older minimodel pickled it
    for name in (
        "_buffers",
        "_non_persistent_buffers",
        "_forward_pre_hooks",
        "_forward_hooks",
        "_forward_pre_hooks_with_kwargs",
        "_forward_hooks_with_kwargs",
        "_forward_hooks_always_called",
    ):
        del legacy.__dict__[name]
    revived = pickle.loads(pickle.dumps(legacy))
    assert list(revived.state_dict()) == ["weight", "bias"]
    revived.register_buffer("steps", minitorch.zeros(()))
    seen: list[tuple[int, ...]] = []
    revived.register_forward_hook(lambda m, args, out: seen.append(out.shape))
    revived.register_forward_hook(
        lambda m, args, kwargs, out: seen.append((len(kwargs),)), with_kwargs=True
    )
    revived(minitorch.ones(3, 2))
    assert seen == [(3, 2), (0,)] and list(revived.state_dict()) == ["weight", "bias", "steps"]


def test_to_keeps_a_buffer_that_requires_grad_a_leaf() -> None:
    model = Linear(2, 2)
    model.register_buffer("temperature", minitorch.ones(2, requires_grad=True))
    model.register_buffer("steps", minitorch.zeros((), dtype="int64"))
    model.to(dtype="float64")
    t = model.temperature
    assert t.dtype == np.float64 and t.requires_grad and t.is_leaf
    assert model.steps.dtype == np.int64 and not model.steps.requires_grad


def _placed_model() -> Module:
    """A Linear with a gradient, an integer buffer and a floating one."""
    model = Linear(3, 2)
    model.register_buffer("count", minitorch.tensor(4, dtype="int64"))
    model.register_buffer("mean", minitorch.tensor([0.5, -1.5]))
    (model(minitorch.ones(1, 3)) * model.mean).sum().backward()
    return model


def test_cpu_moves_to_the_cpu_device_of_the_backend(backend: Any) -> None:
    """``cpu()``: every parameter (the same object, with its gradient) and buffer on the
    CPU device of the backend it is on (array-api-strict's is ``CPU_DEVICE``; the
    fixture puts it on ``device1``), values and dtypes kept."""
    model = _placed_model()
    if backend.name == "cupy":  # CuPy's arrays live on a GPU: it says what to do instead
        with pytest.raises(RuntimeError, match=r"no CPU device 'cpu' here .*model\.to\('numpy'\)"):
            model.cpu()
        return
    params = list(model.parameters())
    values = {n: host(t) for n, t in [*model.named_parameters(), *model.named_buffers()]}
    grads = {n: host(p.grad) for n, p in model.named_parameters()}
    cpu = "CPU_DEVICE" if backend.name == "array_api_strict" else "cpu"
    expected = str(minitorch.zeros(1, device=cpu).device)
    assert model.cpu() is model
    assert all(p is q for p, q in zip(model.parameters(), params, strict=True))
    for n, t in [*model.named_parameters(), *model.named_buffers()]:
        assert t.backend.name == backend.name and str(t.device) == expected, n
        np.testing.assert_array_equal(host(t), values[n], err_msg=n)
    assert model.count.dtype == backend.resolve_dtype("int64")
    for n, p in model.named_parameters():
        assert p.requires_grad and str(p.grad.device) == str(p.data.device), n
        np.testing.assert_array_equal(host(p.grad), grads[n], err_msg=n)
    assert model.cpu() is model  # already there: nothing to do


def _has_cuda(be: minitorch.Backend) -> bool:
    try:
        be.parse_device("cuda")
    except Exception:
        return False
    return True


def test_cuda_without_cuda_says_where_the_module_is_and_changes_nothing(backend: Any) -> None:
    model = _placed_model()
    if _has_cuda(backend):  # a machine with a GPU and a backend that reaches it: cuda() moves
        assert model.cuda() is model
        # (CuPy's device: <CUDA Device 0>)
        assert all("cuda" in str(t.device).lower() for t in model.parameters())
        return
    params = list(model.parameters())
    before = {n: (str(t.device), host(t)) for n, t in model.state_dict().items()}
    for device, name in [(None, "cuda"), (1, "cuda:1"), ("cuda:0", "cuda:0")]:
        with pytest.raises(RuntimeError) as info:
            model.cuda(device)
        message = str(info.value)
        assert message.startswith(
            f"Linear.cuda: the module is on minitorch's {backend.name} backend (device "
            f"{model.weight.device}), which has no CUDA device {name!r} here ("
        ), message
        assert message.endswith(
            "to run on CUDA, move the model to a backend that has it: model.to('torch', "
            "device='cuda') with a CUDA build of PyTorch on a machine with an NVIDIA GPU, "
            "or model.to('cupy'); or keep it on the CPU (model.cpu())"
        ), message
    assert all(p is q for p, q in zip(model.parameters(), params, strict=True))
    for n, t in model.state_dict().items():
        assert str(t.device) == before[n][0], n
        np.testing.assert_array_equal(host(t), before[n][1], err_msg=n)
    assert all(p.grad is not None for p in model.parameters())


def test_cuda_refuses_what_is_no_cuda_device() -> None:
    model = Linear(2, 2)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Linear.cuda: device must be a CUDA device ('cuda', 'cuda:<i>', an index or "
            "None), got 'cpu'; use cpu() for the CPU, or to(device=...) for another device"
        ),
    ):
        model.cuda("cpu")
    with pytest.raises(ValueError, match=r"Linear\.cuda: a CUDA device index is >= 0, got -1"):
        model.cuda(-1)
    for wrong in (1.0, True):
        with pytest.raises(
            TypeError,
            match=r"Linear\.cuda: device must be None, an int index or a name such as "
            r"'cuda:0', got",
        ):
            model.cuda(wrong)  # type: ignore[arg-type]
    assert ReLU().cuda() is not None  # no tensors: nothing to move, as in torch.nn
