"""Every layer against its torch.nn counterpart, with the same weights copied in, in
float64 on every backend: the output, the gradient of every parameter and the gradient
of the input, for a random upstream gradient, at 1e-6 (rtol and atol)."""

from __future__ import annotations

import functools
import math
import re
import warnings
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from minimodel import (
    GELU,
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
    Sigmoid,
    SiLU,
    Tanh,
    TinyLM,
    TransformerBlock,
)

import minitorch
from conftest import Tied, assert_same, host

torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")
nn = torch.nn
TOL = {"rtol": 1e-6, "atol": 1e-6}


def copy_weights(ours: Module, ref: Any, names: Callable[[str], str] = lambda n: n) -> None:
    """Copy every parameter of ``ours`` into ``ref`` (float64), by name; every
    parameter of ``ref`` must be set."""
    ref.double()
    theirs = dict(ref.named_parameters())
    mapped = {names(n): p for n, p in ours.named_parameters()}
    assert sorted(mapped) == sorted(theirs), (sorted(mapped), sorted(theirs))
    with torch.no_grad():
        for n, p in mapped.items():
            theirs[n].copy_(torch.from_numpy(p.numpy()))


def check_against_torch(
    ours: Module,
    ref: Any,
    inputs: list[np.ndarray],
    *,
    names: Callable[[str], str] = lambda n: n,
    call_ref: Callable[..., Any] | None = None,
    grad_inputs: bool = True,
) -> None:
    """Forward ``inputs`` through both, backward a random upstream gradient, and compare
    the outputs, the parameter gradients and (float inputs) the input gradients."""
    copy_weights(ours, ref, names)
    float_in = [a.dtype.kind == "f" for a in inputs]
    xs = [
        minitorch.tensor(a, requires_grad=grad_inputs and f)
        for a, f in zip(inputs, float_in, strict=True)
    ]
    ts = [
        torch.tensor(a, requires_grad=grad_inputs and f)
        for a, f in zip(inputs, float_in, strict=True)
    ]
    y = ours(*xs)
    ty = call_ref(*ts) if call_ref is not None else ref(*ts)
    g = np.random.default_rng(1).standard_normal(tuple(ty.shape))
    y.backward(minitorch.tensor(g))
    ty.backward(torch.from_numpy(g))

    np.testing.assert_allclose(host(y), host(ty), **TOL, err_msg="forward")
    assert str(y.device) == str(xs[0].device)
    theirs = dict(ref.named_parameters())
    for n, p in ours.named_parameters():
        assert p.grad is not None, f"{n} has no gradient"
        np.testing.assert_allclose(
            host(p.grad), host(theirs[names(n)].grad), **TOL, err_msg=f"grad of {n}"
        )
    for i, (x, t) in enumerate(zip(xs, ts, strict=True)):
        if x.requires_grad:
            np.testing.assert_allclose(host(x.grad), host(t.grad), **TOL, err_msg=f"input {i}")


def rng_normal(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def causal(t: int) -> Any:
    return torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)


# ------------------------------------------------------------------ layers
@pytest.mark.parametrize("bias", [True, False])
def test_linear(backend: Any, bias: bool) -> None:
    minitorch.manual_seed(0)
    check_against_torch(Linear(5, 3, bias=bias), nn.Linear(5, 3, bias=bias), [rng_normal(2, 4, 5)])


def test_linear_on_a_vector(backend: Any) -> None:
    check_against_torch(Linear(5, 3), nn.Linear(5, 3), [rng_normal(5)])


def test_embedding(backend: Any) -> None:
    minitorch.manual_seed(0)
    ids = np.array([[0, 3, 3, 9], [1, 0, 2, 3]])  # repeated ids accumulate
    check_against_torch(Embedding(10, 6), nn.Embedding(10, 6), [ids])


@pytest.mark.parametrize("fused", [True, False])
def test_layer_norm(backend: Any, fused: bool) -> None:
    ln = LayerNorm(6, eps=1e-5, fused=fused)
    with minitorch.no_grad():  # not the identity init, so the weight's gradient matters
        ln.weight.copy_(rng_normal(6, seed=3))
        ln.bias.copy_(rng_normal(6, seed=4))
    check_against_torch(ln, nn.LayerNorm(6, eps=1e-5), [rng_normal(2, 3, 6) * 3 + 1])


@pytest.mark.parametrize("p", [0.0, 0.5])
def test_dropout_in_eval_mode_and_with_p_zero(backend: Any, p: float) -> None:
    ours, ref = Dropout(p), nn.Dropout(p)
    if p:  # the identity only in eval mode
        ours.eval()
        ref.eval()
    x = rng_normal(3, 4)
    xt = minitorch.tensor(x, requires_grad=True)
    tt = torch.tensor(x, requires_grad=True)
    y, ty = ours(xt), ref(tt)
    (y * y).sum().backward()
    (ty * ty).sum().backward()
    np.testing.assert_allclose(host(y), host(ty), **TOL)
    np.testing.assert_allclose(host(xt.grad), host(tt.grad), **TOL)


def test_dropout_in_training_mode_zeroes_and_scales(backend: Any) -> None:
    minitorch.manual_seed(0)
    y = host(Dropout(0.25)(minitorch.ones(400, 50)))
    assert set(np.unique(y)) <= {0.0, 1 / 0.75}
    assert 0.2 < float(np.mean(y == 0)) < 0.3


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_mlp(backend: Any, approximate: str) -> None:
    minitorch.manual_seed(0)
    ref = nn.Sequential(nn.Linear(8, 32), nn.GELU(approximate=approximate), nn.Linear(32, 8))
    check_against_torch(
        MLP(8, gelu_approximate=approximate),
        ref,
        [rng_normal(2, 5, 8)],
        names=lambda n: n.replace("fc.", "0.").replace("proj.", "2."),
    )


def _mha_names(n: str) -> str:
    return (
        n.replace("qkv.weight", "in_proj_weight")
        .replace("qkv.bias", "in_proj_bias")
        .replace("proj.", "out_proj.")
    )


@pytest.mark.parametrize(("d", "heads", "t"), [(16, 4, 7), (12, 1, 5), (8, 8, 3)])
def test_causal_multi_head_attention(backend: Any, d: int, heads: int, t: int) -> None:
    minitorch.manual_seed(0)
    ref = nn.MultiheadAttention(d, heads, batch_first=True)

    def call_ref(x: Any) -> Any:
        return ref(x, x, x, attn_mask=causal(t), need_weights=False)[0]

    check_against_torch(
        MultiHeadAttention(d, heads),
        ref,
        [rng_normal(3, t, d)],
        names=_mha_names,
        call_ref=call_ref,
    )


def test_attention_is_causal(backend: Any) -> None:
    """Changing a later position leaves the outputs at earlier positions unchanged."""
    minitorch.manual_seed(0)
    attn = MultiHeadAttention(8, 2)
    x = rng_normal(1, 6, 8)
    x2 = x.copy()
    x2[0, 4:] += 10.0
    a, b = host(attn(minitorch.tensor(x))), host(attn(minitorch.tensor(x2)))
    np.testing.assert_array_equal(a[0, :4], b[0, :4])
    assert not np.allclose(a[0, 4:], b[0, 4:])


def _block_names(n: str) -> str:
    for ours, theirs in (
        ("ln1.", "norm1."),
        ("ln2.", "norm2."),
        ("attn.qkv.weight", "self_attn.in_proj_weight"),
        ("attn.qkv.bias", "self_attn.in_proj_bias"),
        ("attn.proj.", "self_attn.out_proj."),
        ("mlp.fc.", "linear1."),
        ("mlp.proj.", "linear2."),
    ):
        n = n.replace(ours, theirs)
    return n


def _torch_block(d: int, heads: int, approximate: str = "none") -> Any:
    act: Any = (
        "gelu"
        if approximate == "none"
        else functools.partial(torch.nn.functional.gelu, approximate=approximate)
    )
    return nn.TransformerEncoderLayer(
        d, heads, 4 * d, dropout=0.0, activation=act, batch_first=True, norm_first=True
    )


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("fused", [True, False])
def test_transformer_block(backend: Any, fused: bool, approximate: str) -> None:
    minitorch.manual_seed(0)
    d, heads, t = 16, 4, 6
    ref = _torch_block(d, heads, approximate)

    def call_ref(x: Any) -> Any:
        return ref(x, src_mask=causal(t), is_causal=True)

    check_against_torch(
        TransformerBlock(d, heads, fused_layer_norm=fused, gelu_approximate=approximate),
        ref,
        [rng_normal(2, t, d)],
        names=_block_names,
        call_ref=call_ref,
    )


# ------------------------------------------------------------------ the language model
class TorchLM(nn.Module):  # type: ignore[misc]
    """TinyLM written with torch.nn pieces (learned positions)."""

    def __init__(self, c: LMConfig) -> None:
        super().__init__()
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)
        self.pos_emb = nn.Embedding(c.block_size, c.d_model)
        self.blocks = nn.ModuleList(
            _torch_block(c.d_model, c.n_heads, c.gelu_approximate) for _ in range(c.n_layers)
        )
        self.ln_f = nn.LayerNorm(c.d_model)
        self.head = nn.Linear(c.d_model, c.vocab_size)

    def forward(self, idx: Any) -> Any:
        t = idx.shape[1]
        x = self.tok_emb(idx) + self.pos_emb.weight[:t]
        for block in self.blocks:
            x = block(x, src_mask=causal(t), is_causal=True)
        return self.head(self.ln_f(x))


def _lm_names(n: str) -> str:
    return _block_names(n) if n.startswith("blocks.") else n


def test_tiny_lm_logits_and_gradients(backend: Any) -> None:
    minitorch.manual_seed(0)
    config = LMConfig(vocab_size=11, block_size=8, d_model=16, n_layers=2, n_heads=4)
    ids = np.random.default_rng(5).integers(0, 11, size=(3, 7))
    check_against_torch(TinyLM(config), TorchLM(config), [ids], names=_lm_names)


def test_tiny_lm_loss_and_gradients(backend: Any) -> None:
    minitorch.manual_seed(0)
    config = LMConfig(vocab_size=11, block_size=8, d_model=16, n_layers=2, n_heads=2)
    model, ref = TinyLM(config), TorchLM(config)
    copy_weights(model, ref, _lm_names)
    rng = np.random.default_rng(6)
    ids, targets = rng.integers(0, 11, size=(2, 8)), rng.integers(0, 11, size=(2, 8))
    loss = model.loss(minitorch.tensor(ids), minitorch.tensor(targets))
    loss.backward()
    logits = ref(torch.from_numpy(ids))
    tloss = nn.functional.cross_entropy(logits.reshape(16, 11), torch.from_numpy(targets).view(-1))
    tloss.backward()
    np.testing.assert_allclose(loss.item(), tloss.item(), **TOL)
    theirs = dict(ref.named_parameters())
    for n, p in model.named_parameters():
        np.testing.assert_allclose(host(p.grad), host(theirs[_lm_names(n)].grad), **TOL, err_msg=n)


def test_sinusoidal_positions_match_the_formula(backend: Any) -> None:
    from minimodel import sinusoidal_positions

    table = host(sinusoidal_positions(10, 6))
    pos = np.arange(10)[:, None]
    freq = np.exp(np.arange(0, 6, 2) * (-np.log(10000.0) / 6))
    expected = np.empty((10, 6))
    expected[:, 0::2] = np.sin(pos * freq)
    expected[:, 1::2] = np.cos(pos * freq)
    np.testing.assert_allclose(table, expected, rtol=1e-12, atol=1e-12)
    model = TinyLM(
        LMConfig(vocab_size=5, block_size=10, d_model=6, n_heads=2, positions="sinusoidal")
    )
    assert "pos_emb.weight" not in dict(model.named_parameters())
    assert model(np.zeros((1, 10), dtype=np.int64)).shape == (1, 10, 5)


# ------------------------------------------------------------------ the Module API
def test_module_list_indexing_and_slicing_match_torch() -> None:
    ours = ModuleList([Linear(2, 2) for _ in range(4)])
    ref = nn.ModuleList([nn.Linear(2, 2) for _ in range(4)])
    pos = {id(m): i for i, m in enumerate(ours)}
    tpos = {id(m): i for i, m in enumerate(ref)}
    for key in (0, 3, -1, -4, np.int64(2), True):
        assert pos[id(ours[key])] == tpos[id(ref[key])], key
    for key in (slice(0, 1), slice(None, None, -1), slice(1, None, 2), slice(5, None)):
        part, tpart = ours[key], ref[key]
        assert type(part) is ModuleList and type(tpart) is nn.ModuleList
        assert [pos[id(m)] for m in part] == [tpos[id(m)] for m in tpart], key
        names = [n for n, _ in part.named_parameters()]
        assert names == [n for n, _ in tpart.named_parameters()], key
    for key in (4, -5):
        with pytest.raises(IndexError):
            ref[key]
        with pytest.raises(IndexError, match=f"index {key} is out of range for 4 modules"):
            ours[key]
    for bad in ("0", 1.0, None):
        with pytest.raises(TypeError):
            ref[bad]
        with pytest.raises(TypeError, match="ModuleList indices must be integers or slices"):
            ours[bad]


class TiedTorch(nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(5, 4)
        self.mid = nn.Linear(4, 4)
        self.again = self.mid
        self.head = nn.Linear(4, 5, bias=False)
        self.head.weight = self.emb.weight


def test_tied_state_dict_matches_torch(backend: Any) -> None:
    """A tied parameter: once in ``named_parameters()``, under each name in the state
    dict, as torch.nn; a tied PyTorch model's state dict loads strictly (and ours into
    PyTorch), and the model computes what PyTorch's does."""
    ours, ref = Tied(), TiedTorch().double()
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert len(list(ours.parameters())) == len(list(ref.parameters())) == 3
    assert list(ours.state_dict()) == list(ref.state_dict())
    assert ours.load_state_dict(ref.state_dict()) == ([], [])
    assert ours.head.weight is ours.emb.weight
    for n, t in ref.state_dict().items():
        np.testing.assert_array_equal(host(ours.state_dict()[n]), host(t), err_msg=n)
    x = np.array([[0, 4, 2]])
    y = ours.head(ours.again(ours.emb(minitorch.tensor(x))))
    ty = ref.head(ref.again(ref.emb(torch.from_numpy(x))))
    np.testing.assert_allclose(host(y), host(ty), **TOL)

    back = TiedTorch().double()
    back.load_state_dict({n: torch.from_numpy(host(t)) for n, t in ours.state_dict().items()})
    for n, t in back.state_dict().items():
        np.testing.assert_array_equal(host(t), host(ref.state_dict()[n]), err_msg=n)


def test_load_state_dict_takes_torch_parameters_and_numpy_arrays(backend: Any) -> None:
    """``named_parameters()`` of PyTorch (tensors that require grad, which refuse
    ``numpy()``), its ``state_dict()`` and NumPy arrays all load, in any float dtype."""
    ours = TransformerBlock(8, 2)
    ref = nn.TransformerEncoderLayer(8, 2, 32, 0.0, "gelu", batch_first=True, norm_first=True)
    names = {
        "ln1.weight": "norm1.weight",
        "ln1.bias": "norm1.bias",
        "attn.qkv.weight": "self_attn.in_proj_weight",
        "attn.qkv.bias": "self_attn.in_proj_bias",
        "attn.proj.weight": "self_attn.out_proj.weight",
        "attn.proj.bias": "self_attn.out_proj.bias",
        "ln2.weight": "norm2.weight",
        "ln2.bias": "norm2.bias",
        "mlp.fc.weight": "linear1.weight",
        "mlp.fc.bias": "linear1.bias",
        "mlp.proj.weight": "linear2.weight",
        "mlp.proj.bias": "linear2.bias",
    }
    theirs = dict(ref.named_parameters())
    assert all(t.requires_grad for t in theirs.values())
    for convert in (
        lambda t: t,  # float32, requires grad
        lambda t: t.double(),  # not a leaf
        lambda t: t.detach().numpy() * 2.0,
    ):
        sd = {n: convert(theirs[m]) for n, m in names.items()}
        assert ours.load_state_dict(sd) == ([], [])
        for n, p in ours.named_parameters():
            want = host(sd[n]).astype(np.float64)
            np.testing.assert_array_equal(host(p), want, err_msg=n)
            assert p.requires_grad and p.dtype == backend.resolve_dtype("float64")
    before = {n: host(p) for n, p in ours.named_parameters()}
    sd = {n: theirs[m].to(torch.bfloat16) for n, m in names.items()}
    with pytest.raises(
        TypeError,
        match=re.escape(
            "TransformerBlock.load_state_dict: cannot read 'ln1.weight' (a torch.Tensor of "
            "shape (8,)) as a NumPy array: Got unsupported ScalarType BFloat16. Pass a "
            "minitorch Tensor, a NumPy array or a CPU tensor of a NumPy dtype"
        ),
    ):
        ours.load_state_dict(sd)
    for n, p in ours.named_parameters():  # nothing changed
        np.testing.assert_array_equal(host(p), before[n], err_msg=n)


def test_sizes_torch_refuses_and_accepts() -> None:
    """Negative sizes and MultiheadAttention with 0 heads or 0 features are refused by
    both (PyTorch's RuntimeError is our ValueError); zero sizes built by both."""
    for make_ref, make_ours in (
        (lambda: nn.Linear(-1, 2), lambda: Linear(-1, 2)),
        (lambda: nn.Embedding(3, -1), lambda: Embedding(3, -1)),
        (lambda: nn.LayerNorm(-1), lambda: LayerNorm(-1)),
        (lambda: nn.MultiheadAttention(4, 0), lambda: MultiHeadAttention(4, 0)),
        (lambda: nn.MultiheadAttention(0, 1), lambda: MultiHeadAttention(0, 1)),
        (lambda: nn.Dropout(1.5), lambda: Dropout(1.5)),
    ):
        with pytest.raises((RuntimeError, ValueError)):
            make_ref()
        with pytest.raises(ValueError):
            make_ours()
    for make_ref, make_ours in (
        (lambda: nn.Linear(0, 2), lambda: Linear(0, 2)),
        (lambda: nn.Embedding(0, 3), lambda: Embedding(0, 3)),
        (lambda: nn.LayerNorm(0), lambda: LayerNorm(0)),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Initializing zero-element tensors is a no-op"
            ref = make_ref()
        assert make_ours().weight.shape == tuple(ref.weight.shape)


# ------------------------------------------------------------------ containers and activations
@pytest.mark.parametrize(
    ("ours", "ref"),
    [
        (ReLU(), nn.ReLU()),
        (GELU(), nn.GELU()),
        (GELU(approximate="tanh"), nn.GELU(approximate="tanh")),
        (Tanh(), nn.Tanh()),
        (Sigmoid(), nn.Sigmoid()),
        (SiLU(), nn.SiLU()),
    ],
    ids=repr,
)
def test_activation_modules(backend: Any, ours: Module, ref: Any) -> None:
    assert repr(ours) == repr(ref)
    check_against_torch(ours, ref, [rng_normal(3, 5) * 3])


def test_activation_arguments() -> None:
    for ours, ref in ((ReLU, nn.ReLU), (SiLU, nn.SiLU)):
        assert repr(ours(inplace=True)) == repr(ref(inplace=True))
        x = minitorch.tensor([-1.0, 2.0])
        np.testing.assert_allclose(
            host(ours(inplace=True)(x)), host(ref()(torch.tensor([-1.0, 2.0]))), **TOL
        )
        assert x.tolist() == [-1.0, 2.0]  # out of place: the input keeps its values
    with pytest.raises(ValueError, match="GELU: approximate must be 'none' or 'tanh', got 'fast'"):
        GELU("fast")


def check_state_dict_round_trip(ours: Module, ref: Any) -> None:
    """Our state dict loads strictly into ``ref`` and ``ref``'s into ours, with the same
    names in the same order and the same values."""
    ref.double()
    sd = ours.state_dict()
    assert list(sd) == list(ref.state_dict())
    ref.load_state_dict({n: torch.from_numpy(host(t).copy()) for n, t in sd.items()})
    for n, t in ref.state_dict().items():
        np.testing.assert_array_equal(host(t), host(sd[n]), err_msg=n)
    with torch.no_grad():
        for p in ref.parameters():
            p.normal_()
    assert ours.load_state_dict(ref.state_dict()) == ([], [])
    theirs = ref.state_dict()
    for n, t in ours.state_dict().items():
        np.testing.assert_array_equal(host(t), host(theirs[n]), err_msg=n)


def test_sequential_matches_torch(backend: Any) -> None:
    minitorch.manual_seed(0)
    ours = Sequential(Linear(4, 8), GELU(approximate="tanh"), Linear(8, 8), Tanh(), Linear(8, 3))
    ref = nn.Sequential(
        nn.Linear(4, 8), nn.GELU(approximate="tanh"), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3)
    )
    assert repr(ours) == repr(ref)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert [n for n, _ in ours.named_parameters()][:3] == ["0.weight", "0.bias", "2.weight"]
    check_against_torch(ours, ref, [rng_normal(2, 5, 4)])
    check_state_dict_round_trip(ours, ref)
    x = rng_normal(3, 4)
    np.testing.assert_allclose(
        host(ours(minitorch.tensor(x))), host(ref(torch.from_numpy(x))), **TOL
    )


def test_sequential_of_an_ordered_dict_matches_torch(backend: Any) -> None:
    ours = Sequential(OrderedDict(fc=Linear(3, 4), act=SiLU(), out=Linear(4, 2)))
    ref = nn.Sequential(OrderedDict(fc=nn.Linear(3, 4), act=nn.SiLU(), out=nn.Linear(4, 2)))
    assert repr(ours) == repr(ref)
    assert ours.fc is ours[0] and ours.out is ours[-1]
    check_against_torch(ours, ref, [rng_normal(5, 3)])
    check_state_dict_round_trip(ours, ref)
    for key in (slice(1, None), slice(None, None, -1), slice(0, 1), slice(4, None)):
        part = ours[key]
        assert type(part) is Sequential
        assert list(part.state_dict()) == list(ref[key].state_dict()), key


class Heads(Module):
    """A trunk and two heads: a Sequential and a ModuleDict inside a model."""

    def __init__(self) -> None:
        super().__init__()
        self.trunk = Sequential(Linear(3, 6), ReLU())
        self.heads = ModuleDict({"value": Linear(6, 1), "policy": Linear(6, 4)})

    def forward(self, x: minitorch.Tensor) -> minitorch.Tensor:
        h = self.trunk(x)
        return minitorch.concat([self.heads["value"](h), self.heads["policy"](h)], axis=-1)


class HeadsTorch(nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(3, 6), nn.ReLU())
        self.heads = nn.ModuleDict({"value": nn.Linear(6, 1), "policy": nn.Linear(6, 4)})

    def forward(self, x: Any) -> Any:
        h = self.trunk(x)
        return torch.cat([self.heads["value"](h), self.heads["policy"](h)], dim=-1)


def test_module_dict_matches_torch(backend: Any) -> None:
    ours, ref = Heads(), HeadsTorch()
    assert repr(ours) == repr(ref).replace("HeadsTorch", "Heads")
    assert list(ours.state_dict())[2:4] == ["heads.value.weight", "heads.value.bias"]
    check_against_torch(ours, ref, [rng_normal(4, 3)])
    check_state_dict_round_trip(ours, ref)

    d, td = ours.heads, ref.heads
    assert list(d) == list(td) == list(d.keys()) == ["value", "policy"]
    assert [type(m).__name__ for m in d.values()] == [type(m).__name__ for m in td.values()]
    assert [k for k, _ in d.items()] == [k for k, _ in td.items()]
    assert "value" in d and "trunk" not in d and len(d) == len(td) == 2
    for c, lib in ((d, minimodel_layers), (td, torch_layers)):
        c["extra"] = lib["ReLU"]()
        c.update([("aux", lib["Linear"](6, 2))])
        c.update({"value": lib["Linear"](6, 3)})  # replaced in place: the order is kept
        del c["policy"]
    assert type(d.pop("extra")) is ReLU and type(td.pop("extra")) is nn.ReLU
    assert list(d) == list(td) == ["value", "aux"]
    assert [n for n, _ in d.named_parameters()] == [n for n, _ in td.named_parameters()]
    check_state_dict_round_trip(d, td)
    d.clear()
    td.clear()
    assert len(d) == len(td) == 0 and list(d.parameters()) == []


minimodel_layers: dict[str, Any] = {"Linear": Linear, "ReLU": ReLU}
torch_layers: dict[str, Any] = {"Linear": nn.Linear, "ReLU": nn.ReLU}


@pytest.mark.parametrize("kind", ["ModuleList", "Sequential"])
def test_list_methods_match_torch(kind: str) -> None:
    """The same edits of a ModuleList (a Sequential) and of torch.nn's leave the same
    modules in the same order under the same names: appended ones are named by their
    position, and after ``insert``, ``del`` or ``pop`` the names run 0, 1, ... afresh."""
    mods = [Linear(2, 2) for _ in range(9)]
    tmods = [nn.Linear(2, 2) for _ in range(9)]
    twin = {id(m): t for m, t in zip(mods, tmods, strict=True)}
    if kind == "ModuleList":
        ours, ref = ModuleList(mods[:3]), nn.ModuleList(tmods[:3])
    else:
        ours, ref = Sequential(*mods[:3]), nn.Sequential(*tmods[:3])

    def same() -> None:
        assert len(ours) == len(ref)
        assert all(twin[id(m)] is t for m, t in zip(ours, ref, strict=True))
        assert list(ours.state_dict()) == list(ref.state_dict())
        assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
        assert repr(ours) == repr(ref)  # a ModuleList's repeated modules: "(0-2): 3 x ..."

    for edit in (
        lambda c, m: c.append(m[3]),
        lambda c, m: c.extend([m[4], m[5]]),
        lambda c, m: c.insert(1, m[6]),
        lambda c, m: c.insert(len(c), m[7]),
        lambda c, m: c.insert(0, m[8]),
        lambda c, m: c.__setitem__(-2, m[0]),  # now held twice: tied in the state dict
        lambda c, m: c.__setitem__(1, m[3]),
        lambda c, m: c.__delitem__(2),
        lambda c, m: c.__delitem__(-1),
        lambda c, m: c.__delitem__(slice(0, 4, 2)),
    ):
        returned, treturned = edit(ours, mods), edit(ref, tmods)
        assert returned is ours or treturned is None  # ModuleList.insert: None in torch
        same()
    assert twin[id(ours.pop(0))] is ref.pop(0)
    assert twin[id(ours.pop(-1))] is ref.pop(-1)
    same()
    if kind == "ModuleList":
        joined, tjoined = ours + [mods[1]], ref + [tmods[1]]  # noqa: RUF005
        assert type(joined) is ModuleList and type(tjoined) is nn.ModuleList
        ours += ModuleList([mods[2]])
        ref += nn.ModuleList([tmods[2]])
    else:
        joined, tjoined = ours + Sequential(mods[1]), ref + nn.Sequential(tmods[1])
        assert type(joined) is Sequential and type(tjoined) is nn.Sequential
        ours += Sequential(mods[2])
        ref += nn.Sequential(tmods[2])
    assert [twin[id(m)] for m in joined] == list(tjoined)
    assert list(joined.state_dict()) == list(tjoined.state_dict())
    same()


# ------------------------------------------------------------------ buffers, to(), hooks
class Stats(Module):
    """Buffers registered between the parameters: persistent, not, None, an integer one,
    and one of a sub-module."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("running_mean", minitorch.zeros(3))
        self.scale = Parameter(minitorch.ones(3))
        self.register_buffer("scratch", minitorch.ones(3), persistent=False)
        self.register_buffer("unset", None)
        self.inner = Linear(3, 2)
        self.register_buffer("count", minitorch.zeros((), dtype="int64"))
        self.inner.register_buffer("mask", minitorch.ones(2))


class StatsTorch(nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("running_mean", torch.zeros(3))
        self.scale = nn.Parameter(torch.ones(3))
        self.register_buffer("scratch", torch.ones(3), persistent=False)
        self.register_buffer("unset", None)
        self.inner = nn.Linear(3, 2)
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))
        self.inner.register_buffer("mask", torch.ones(2))


def _names(pairs: Any) -> list[str]:
    return [n for n, _ in pairs]


def _dtype_name(t: Any) -> str:
    if isinstance(t, minitorch.Tensor):
        return str(t.backend.dtype_name(t.dtype))
    return str(t.dtype).removeprefix("torch.")


def test_buffers_and_state_dict_match_torch(backend: Any) -> None:
    """Buffers: in ``named_buffers()`` persistent or not, in the state dict after each
    module's own parameters only if persistent and not None; loaded both ways with the
    same missing/unexpected keys as torch.nn."""
    ours, ref = Sequential(Stats(), Stats()), nn.Sequential(StatsTorch(), StatsTorch()).double()
    sd = list(ours.state_dict())
    assert sd == list(ref.state_dict())
    own = ["0.scale", "0.running_mean", "0.count"]
    assert sd[:6] == [*own, "0.inner.weight", "0.inner.bias", "0.inner.mask"]
    assert _names(ours.named_buffers()) == _names(ref.named_buffers())
    assert "1.scratch" in _names(ours.named_buffers()) and "1.unset" not in sd
    assert _names(ours[0].named_buffers(prefix="x", recurse=False)) == _names(
        ref[0].named_buffers(prefix="x", recurse=False)
    )
    assert len(list(ours.buffers())) == len(list(ref.buffers())) == 8
    assert _names(ours.named_parameters()) == _names(ref.named_parameters())
    assert len(list(ours[0].parameters(recurse=False))) == 1

    with torch.no_grad():
        for name, t in [*ref.named_parameters(), *ref.named_buffers()]:
            t.copy_(torch.arange(t.numel()).reshape(t.shape) + len(name))
    assert ours.load_state_dict(ref.state_dict()) == ([], [])
    theirs = ref.state_dict()
    for n, t in ours.state_dict().items():
        np.testing.assert_array_equal(host(t), host(theirs[n]), err_msg=n)
        assert _dtype_name(t) == _dtype_name(theirs[n]), n
    assert host(ours[1].count) == 7  # len("1.count")
    np.testing.assert_array_equal(host(ours[0].scratch), np.ones(3))  # not loaded

    partial = {k: v for k, v in ref.state_dict().items() if k != "1.count"}
    partial["0.scratch"] = torch.zeros(3)
    partial["0.unset"] = torch.zeros(3)
    got, want = ours.load_state_dict(partial, strict=False), ref.load_state_dict(partial, False)
    assert (
        got == (want.missing_keys, want.unexpected_keys) == (["1.count"], ["0.scratch", "0.unset"])
    )
    with pytest.raises(KeyError, match=r"missing key\(s\) \['1.count'\]; unexpected key\(s\)"):
        ours.load_state_dict(partial)

    back = nn.Sequential(StatsTorch(), StatsTorch()).double()
    back.load_state_dict({n: torch.from_numpy(host(t)) for n, t in ours.state_dict().items()})
    for n, t in back.state_dict().items():
        np.testing.assert_array_equal(host(t), host(theirs[n]), err_msg=n)


def test_buffer_assignment_matches_torch() -> None:
    """Assigning to a buffer's name replaces the buffer and keeps it (non-)persistent; None
    keeps the name; a Parameter or a Module takes the name over, as in torch.nn."""
    ours, ref = Stats(), StatsTorch()

    def same() -> None:
        assert list(ours.state_dict()) == list(ref.state_dict())
        assert _names(ours.named_buffers()) == _names(ref.named_buffers())
        assert _names(ours.named_parameters()) == _names(ref.named_parameters())
        mine = dict(ours.named_buffers())
        for n, t in ref.named_buffers():  # the parameters are drawn apart
            np.testing.assert_array_equal(host(mine[n]), host(t), err_msg=n)

    for edit in (
        lambda m, lib: setattr(m, "running_mean", lib.full((3,), 2.0)),
        lambda m, lib: setattr(m, "scratch", None),
        lambda m, lib: setattr(m, "scratch", lib.zeros(2)),  # still not persistent
        lambda m, lib: setattr(m, "running_mean", None),
        lambda m, lib: setattr(m, "unset", lib.ones(1)),  # registered as None: persistent
        lambda m, lib: setattr(m, "running_mean", lib.full((3,), 4.0)),  # back in its place
        lambda m, lib: m.register_buffer("running_mean", lib.ones(3), persistent=False),
        lambda m, lib: m.register_buffer("scratch", lib.ones(2)),
        lambda m, lib: delattr(m, "unset"),
        lambda m, lib: m.register_buffer("unset", lib.zeros(1)),
    ):
        edit(ours, minitorch)
        edit(ref, torch)
        same()
    ours.count = Parameter(minitorch.ones(2))
    ref.count = nn.Parameter(torch.ones(2))
    same()
    assert "count" not in _names(ours.named_buffers()) and ours.count is ours._parameters["count"]
    ours.scratch, ref.scratch = Linear(1, 1), nn.Linear(1, 1)
    same()
    for value in ([1.0], np.zeros(3)):
        with pytest.raises(TypeError):
            ref.running_mean = value
        with pytest.raises(
            TypeError, match=r"cannot assign \w+ as buffer 'running_mean' of Stats \(a minitorch"
        ):
            ours.running_mean = value
    same()


@pytest.mark.parametrize(
    ("name", "value", "error", "message"),
    [
        ("", "tensor", KeyError, "buffer name '' must be non-empty and without '.'"),
        ("a.b", "tensor", KeyError, "buffer name 'a.b' must be non-empty and without '.'"),
        ("scale", "tensor", KeyError, "'scale' is already a parameter of Stats"),
        ("inner", "tensor", KeyError, "'inner' is already a sub-module of Stats"),
        ("forward", "tensor", KeyError, "'forward' is already an attribute of Stats"),
        ("training", "tensor", KeyError, "'training' is already an attribute of Stats"),
        (3, "tensor", TypeError, "the buffer name must be a string, got int 3"),
        ("fresh", [1.0], TypeError, "cannot register list as buffer 'fresh' of Stats"),
        ("fresh", np.zeros(2), TypeError, "cannot register ndarray as buffer 'fresh' of Stats"),
    ],
)
def test_register_buffer_refuses_what_torch_refuses(
    name: Any, value: Any, error: type[Exception], message: str
) -> None:
    ours, ref = Stats(), StatsTorch()
    with pytest.raises(error):
        ref.register_buffer(name, torch.zeros(2) if isinstance(value, str) else value)
    with pytest.raises(error, match=re.escape(f"Stats.register_buffer: {message}")):
        ours.register_buffer(name, minitorch.zeros(2) if isinstance(value, str) else value)
    assert _names(ours.named_buffers()) == _names(ref.named_buffers())
    assert list(ours.state_dict()) == list(ref.state_dict())


def test_to_dtype_matches_torch(backend: Any) -> None:
    """``to(dtype=...)`` casts the floating parameters, buffers and gradients and keeps
    integer buffers, parameter objects and their requires_grad, as torch.nn."""
    ours, ref = Stats(), StatsTorch().double()
    with torch.no_grad():
        for t in [*ref.parameters(), ref.running_mean, ref.scratch, ref.inner.mask]:
            t.copy_(torch.from_numpy(rng_normal(*t.shape, seed=t.numel())))
    ours.load_state_dict({n: torch.from_numpy(host(t)) for n, t in ref.state_dict().items()})
    ours.scratch = minitorch.tensor(host(ref.scratch))
    ours.inner.bias.requires_grad_(False)
    ref.inner.bias.requires_grad_(False)
    x = rng_normal(3)
    (ours.inner(ours.scale * minitorch.tensor(x)) * ours.running_mean[:2]).sum().backward()
    (ref.inner(ref.scale * torch.from_numpy(x)) * ref.running_mean[:2]).sum().backward()
    params = list(ours.parameters())
    tparams = list(ref.parameters())

    assert ours.to(dtype="float32") is ours
    assert ref.to(torch.float32) is ref
    assert list(ours.parameters()) == params and all(
        p is q for p, q in zip(ours.parameters(), params, strict=True)
    )
    assert all(p is q for p, q in zip(ref.parameters(), tparams, strict=True))
    everything = [*ref.named_parameters(), *ref.named_buffers()]
    mine = dict([*ours.named_parameters(), *ours.named_buffers()])
    assert sorted(mine) == sorted(n for n, _ in everything)
    for n, t in everything:
        assert _dtype_name(mine[n]) == _dtype_name(t), n
        np.testing.assert_array_equal(host(mine[n]), host(t), err_msg=n)
        assert mine[n].requires_grad == t.requires_grad, n
        if isinstance(t, nn.Parameter):
            assert (mine[n].grad is None) == (t.grad is None), n
            if t.grad is not None:
                g = minitorch.Tensor(mine[n].grad)
                assert _dtype_name(g) == _dtype_name(t.grad) == "float32", n
                np.testing.assert_array_equal(host(g), host(t.grad), err_msg=n)
    assert _dtype_name(ours.count) == "int64"
    assert mine["running_mean"].backend.name == backend.name

    with pytest.raises(TypeError):
        ref.to(torch.int64)
    with pytest.raises(TypeError, match=r"Stats\.to: dtype must be a floating-point dtype"):
        ours.to(dtype="int64")
    assert {_dtype_name(p) for p in ours.parameters()} == {"float32"}  # nothing changed
    ours.to(dtype="float64")
    assert {_dtype_name(t) for t in [*ours.parameters(), ours.running_mean]} == {"float64"}


def test_double_float_half_match_torch(backend: Any) -> None:
    """``float()`` / ``double()`` cast what ``to(dtype=...)`` casts, as torch.nn's:
    floating parameters, buffers and gradients, not the integer buffer; parameters stay
    the same objects. ``half()`` too where the backend has float16; array-api-strict has
    none: it says so and changes nothing."""
    ours, ref = Stats(), StatsTorch().double()
    with torch.no_grad():
        for t in [*ref.parameters(), ref.running_mean, ref.scratch, ref.inner.mask]:
            t.copy_(torch.from_numpy(rng_normal(*t.shape, seed=t.numel())))
    ours.load_state_dict({n: torch.from_numpy(host(t)) for n, t in ref.state_dict().items()})
    ours.scratch = minitorch.tensor(host(ref.scratch))
    x = rng_normal(3)
    (ours.inner(ours.scale * minitorch.tensor(x)) * ours.running_mean[:2]).sum().backward()
    (ref.inner(ref.scale * torch.from_numpy(x)) * ref.running_mean[:2]).sum().backward()
    params = list(ours.parameters())

    def same(dtype: str) -> None:
        everything = [*ref.named_parameters(), *ref.named_buffers()]
        mine = dict([*ours.named_parameters(), *ours.named_buffers()])
        assert sorted(mine) == sorted(n for n, _ in everything)
        for n, t in everything:
            assert _dtype_name(mine[n]) == _dtype_name(t), n
            assert _dtype_name(t) in (dtype, "int64"), n
            np.testing.assert_array_equal(host(mine[n]), host(t), err_msg=n)
            if isinstance(t, nn.Parameter):
                g = minitorch.Tensor(mine[n].grad)
                assert _dtype_name(g) == _dtype_name(t.grad) == dtype, n
                np.testing.assert_array_equal(host(g), host(t.grad), err_msg=n)
        assert all(p is q for p, q in zip(ours.parameters(), params, strict=True))

    assert ours.float() is ours and ref.float() is ref
    same("float32")
    assert ours.double() is ours and ref.double() is ref
    same("float64")  # float32 values, widened
    assert _dtype_name(ours.count) == "int64"

    if not hasattr(backend.xp, "float16"):  # array-api-strict
        for cast, where in [
            (ours.half, "Stats.half"),
            (lambda: ours.to(dtype="float16"), "Stats.to"),
        ]:
            with pytest.raises(
                ValueError,
                match=re.escape(
                    f"{where}: minitorch's {backend.name} backend has no dtype 'float16'; "
                    f"its floating-point dtypes are float32, float64: use one of them "
                    f"(Module.float() for float32, Module.double() for float64)"
                ),
            ):
                cast()
            same("float64")  # nothing changed
        return
    assert ours.half() is ours and ref.half() is ref
    same("float16")  # float64 values and gradients, rounded to float16 as torch rounds them
    assert _dtype_name(ours.count) == "int64"
    assert ours.to(dtype="float64") is ours and ref.double() is ref
    same("float64")  # the float16 values, widened back alike


def test_apply_named_children_and_requires_grad_match_torch() -> None:
    ours, ref = Tied(), TiedTorch()
    assert _names(ours.named_children()) == _names(ref.named_children()) == ["emb", "mid", "head"]
    assert len(list(ours.children())) == len(list(ref.children())) == 3
    seen: list[str] = []
    tseen: list[str] = []
    assert ours.apply(lambda m: seen.append(type(m).__name__)) is ours
    ref.apply(lambda m: tseen.append(type(m).__name__))
    assert (
        seen
        == [n.removesuffix("Torch") for n in tseen]
        == ["Embedding", "Linear", "Linear", "Tied"]
    )

    nested = Sequential(Linear(2, 2), Sequential(ReLU(), Linear(2, 2)), Tanh())
    tnested = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Linear(2, 2)), nn.Tanh())
    seen.clear()
    tseen.clear()
    nested.apply(lambda m: seen.append(type(m).__name__))
    tnested.apply(lambda m: tseen.append(type(m).__name__))
    assert seen == tseen and seen[0] == "Linear" and seen[-1] == "Sequential"

    assert ours.mid.requires_grad_(False) is ours.mid
    ref.mid.requires_grad_(False)
    flags = [(n, p.requires_grad) for n, p in ours.named_parameters()]
    assert flags == [(n, p.requires_grad) for n, p in ref.named_parameters()]
    assert [f for _, f in flags] == [True, False, False]  # emb (= head), mid.weight, mid.bias
    ours.head(ours.again(ours.emb(minitorch.tensor([[0, 4]])))).sum().backward()
    assert ours.mid.weight.grad is None and ours.emb.weight.grad is not None
    ours.requires_grad_()
    assert all(p.requires_grad for p in ours.parameters())
    with pytest.raises(TypeError, match="requires_grad must be True or False, got 'yes'"):
        ours.requires_grad_("yes")  # type: ignore[arg-type]


def test_forward_hooks_match_torch(backend: Any) -> None:
    """Pre-hooks replace the arguments (a single value is wrapped in a tuple), forward
    hooks the output, in the order registered (prepend first), and gradients flow
    through what they return; removed hooks no longer run, as in torch.nn."""
    minitorch.manual_seed(0)
    ours = Sequential(Linear(3, 4), ReLU(), Linear(4, 2))
    ref = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    copy_weights(ours, ref)
    x = rng_normal(5, 3)
    plain = host(ours(minitorch.tensor(x)))

    def register(net: Any, log: list[tuple[Any, ...]]) -> list[Any]:
        def pre_double(m: Any, args: tuple[Any, ...]) -> Any:
            log.append(("pre_double", len(args), host(args[0])))
            return args[0] * 2.0  # one value: wrapped as (value,)

        def pre_shift(m: Any, args: tuple[Any, ...]) -> Any:
            log.append(("pre_shift", len(args), host(args[0])))
            return (args[0] + 1.0,)

        def pre_look(m: Any, args: tuple[Any, ...]) -> None:
            log.append(("pre_look", len(args), host(args[0])))

        def fwd_look(m: Any, args: tuple[Any, ...], out: Any) -> None:
            log.append(("fwd_look", len(args), host(args[0]), host(out)))

        def fwd_scale(m: Any, args: tuple[Any, ...], out: Any) -> Any:
            log.append(("fwd_scale", len(args), host(out)))
            return out * 3.0

        def fwd_outer(m: Any, args: tuple[Any, ...], out: Any) -> Any:
            log.append(("fwd_outer", len(args), host(out)))
            return out - 0.5

        return [
            net[0].register_forward_pre_hook(pre_double),
            net[0].register_forward_pre_hook(pre_shift),
            net[0].register_forward_pre_hook(pre_look, prepend=True),
            net[0].register_forward_hook(fwd_look),
            net[1].register_forward_hook(fwd_scale),
            net.register_forward_hook(fwd_outer),
        ]

    log: list[tuple[Any, ...]] = []
    tlog: list[tuple[Any, ...]] = []
    handles, thandles = register(ours, log), register(ref, tlog)
    check_against_torch(ours, ref, [x])  # the outputs and every gradient, through the hooks
    order = ["pre_look", "pre_double", "pre_shift", "fwd_look", "fwd_scale", "fwd_outer"]
    assert [e[0] for e in log] == [e[0] for e in tlog] == order
    for e, t in zip(log, tlog, strict=True):
        assert e[1] == t[1] == 1, e[0]
        for a, b in zip(e[2:], t[2:], strict=True):
            np.testing.assert_allclose(a, b, **TOL, err_msg=e[0])
    np.testing.assert_allclose(log[3][2], 2.0 * x + 1.0, **TOL)  # what forward got
    assert not np.allclose(host(ours(minitorch.tensor(x))), plain)

    for h, th in zip(handles, thandles, strict=True):
        h.remove()
        th.remove()
    handles[0].remove()  # a second time: nothing to do
    log.clear()
    np.testing.assert_allclose(host(ours(minitorch.tensor(x))), plain, **TOL)
    np.testing.assert_allclose(host(ref(torch.from_numpy(x))), plain, **TOL)
    assert log == []

    calls: list[str] = []

    def once(m: Any, args: tuple[Any, ...]) -> None:
        calls.append(type(m).__name__)
        handle.remove()  # a hook may remove itself while the hooks run

    handle = ours[2].register_forward_pre_hook(once)
    with ours[2].register_forward_hook(lambda m, a, out: calls.append("in block")):
        ours(minitorch.tensor(x))
        ours(minitorch.tensor(x))
    ours(minitorch.tensor(x))
    assert calls == ["Linear", "in block", "in block"]
    with pytest.raises(TypeError, match=r"Linear\.register_forward_hook: expected a function"):
        ours[0].register_forward_hook("print")  # type: ignore[arg-type]


class Shifted(Module):
    """A Linear whose forward takes keyword arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = Linear(3, 2)

    def forward(self, x: Any, scale: float = 1.0, shift: Any = None) -> Any:
        y = self.lin(x) * scale
        return y if shift is None else y + shift


class ShiftedTorch(nn.Module):  # type: ignore[misc]
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, x: Any, scale: float = 1.0, shift: Any = None) -> Any:
        y = self.lin(x) * scale
        return y if shift is None else y + shift


def test_forward_hooks_with_kwargs_match_torch(backend: Any) -> None:
    """``with_kwargs=True``: a pre-hook gets ``(module, args, kwargs)`` and may return
    new ``(args, kwargs)``, a forward hook gets ``(module, args, kwargs, output)``;
    they mix with plain hooks in the order registered (``prepend`` first), and the
    handle's ``remove()`` forgets the flag too, as torch.nn."""
    minitorch.manual_seed(0)
    ours, ref = Shifted(), ShiftedTorch()
    x = rng_normal(4, 3)
    shift = rng_normal(2, seed=5)

    def register(net: Any, log: list[tuple[Any, ...]], tensor: Callable[[Any], Any]) -> list[Any]:
        def pre_kw(m: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            log.append(("pre_kw", len(args), sorted(kwargs)))
            return (args[0] * 2.0,), {**kwargs, "shift": tensor(shift)}

        def pre_plain(m: Any, args: tuple[Any, ...]) -> Any:
            log.append(("pre_plain", len(args), host(args[0])))
            return args[0] - 1.0

        def pre_first(m: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
            log.append(("pre_first", len(args), sorted(kwargs)))

        def fwd_kw(m: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Any:
            log.append(("fwd_kw", len(args), sorted(kwargs), host(out)))
            return out * kwargs["scale"] if "scale" in kwargs else out + 10.0

        def fwd_plain(m: Any, args: tuple[Any, ...], out: Any) -> None:
            log.append(("fwd_plain", len(args), host(args[0]), host(out)))

        return [
            net.register_forward_pre_hook(pre_kw, with_kwargs=True),
            net.register_forward_pre_hook(pre_plain),
            net.register_forward_pre_hook(pre_first, prepend=True, with_kwargs=True),
            net.register_forward_hook(fwd_plain),
            net.register_forward_hook(fwd_kw, prepend=True, with_kwargs=True),
        ]

    log: list[tuple[Any, ...]] = []
    tlog: list[tuple[Any, ...]] = []
    handles = register(ours, log, minitorch.tensor)
    thandles = register(ref, tlog, torch.from_numpy)
    # forward called without keywords: the pre-hook adds shift (outputs, every gradient)
    check_against_torch(ours, ref, [x])
    order = ["pre_first", "pre_kw", "pre_plain", "fwd_kw", "fwd_plain"]
    assert [e[0] for e in log] == [e[0] for e in tlog] == order
    assert log[0][1:] == tlog[0][1:] == (1, []) and log[3][2] == tlog[3][2] == ["shift"]

    def same_logs() -> None:
        for e, t in zip(log, tlog, strict=True):
            for a, b in zip(e[1:], t[1:], strict=True):
                if isinstance(a, np.ndarray):
                    np.testing.assert_allclose(a, b, **TOL, err_msg=e[0])
                else:
                    assert a == b, e[0]

    same_logs()
    np.testing.assert_allclose(log[2][2], 2.0 * x, **TOL)  # what pre_plain got
    np.testing.assert_allclose(log[4][2], 2.0 * x - 1.0, **TOL)  # what forward got
    log.clear()
    tlog.clear()
    # keywords given by the caller reach the hooks that take them
    y = ours(minitorch.tensor(x), scale=3.0)
    ty = ref(torch.from_numpy(x), scale=3.0)
    np.testing.assert_allclose(host(y), host(ty), **TOL)
    assert log[0][2] == tlog[0][2] == ["scale"] and log[3][2] == ["scale", "shift"]
    same_logs()

    assert ours._forward_pre_hooks_with_kwargs and ours._forward_hooks_with_kwargs
    for h, th in zip(handles, thandles, strict=True):
        h.remove()
        th.remove()
    assert not ours._forward_pre_hooks_with_kwargs and not ours._forward_hooks_with_kwargs
    assert not ref._forward_pre_hooks_with_kwargs and not ref._forward_hooks_with_kwargs
    log.clear()
    np.testing.assert_allclose(
        host(ours(minitorch.tensor(x), shift=minitorch.tensor(shift))),
        host(ref(torch.from_numpy(x), shift=torch.from_numpy(shift))),
        **TOL,
    )
    assert log == []

    with (
        ref.register_forward_pre_hook(lambda m, a, k: a, with_kwargs=True),
        pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"),
    ):
        ref(torch.from_numpy(x))
    for wrong, got in [(lambda m, a, k: a, "a tuple of 1"), (lambda m, a, k: 1.0, "a float")]:
        with (
            ours.register_forward_pre_hook(wrong, with_kwargs=True),
            pytest.raises(
                RuntimeError,
                match=r"Shifted: the forward pre-hook <function .*> was registered "
                r"with_kwargs=True, so it must return None or a tuple \(new_args, "
                f"new_kwargs\\), but it returned {got}$",
            ),
        ):
            ours(minitorch.tensor(x))
    for flag in ("prepend", "with_kwargs"):
        with pytest.raises(
            TypeError,
            match=rf"Shifted\.register_forward_pre_hook: {flag} must be True or False, got 1",
        ):
            ours.register_forward_pre_hook(print, **{flag: 1})
    with pytest.raises(
        TypeError,
        match=r"Shifted\.register_forward_hook: always_call must be True or False, got 'yes'",
    ):
        ours.register_forward_hook(print, always_call="yes")  # type: ignore[arg-type]
    assert not ours._forward_pre_hooks and not ours._forward_hooks


def test_always_call_forward_hooks_match_torch(backend: Any) -> None:
    """``always_call=True``: the hook also runs when ``forward``, a pre-hook or an
    earlier forward hook raises (with the output so far, None if forward gave none),
    once; the first error propagates and an error of such a hook is a warning, as
    torch.nn."""
    ours, ref = Shifted(), ShiftedTorch()
    copy_weights(ours, ref)
    bad = rng_normal(4, 5)  # not 3 features: forward raises
    good = rng_normal(4, 3)
    make: dict[int, Callable[[Any], Any]] = {id(ours): minitorch.tensor, id(ref): torch.from_numpy}

    def hooks(net: Any, log: list[Any]) -> list[Any]:
        def fwd_always(m: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Any:
            log.append(("always", None if out is None else host(out)))
            return None if out is None else out + 1.0

        def fwd_plain(m: Any, args: tuple[Any, ...], out: Any) -> None:
            log.append(("plain",))

        return [
            net.register_forward_hook(fwd_plain),
            net.register_forward_hook(fwd_always, with_kwargs=True, always_call=True),
        ]

    logs: dict[int, list[Any]] = {id(ours): [], id(ref): []}
    for net in (ours, ref):
        handles = hooks(net, logs[id(net)])
        with pytest.raises((ValueError, RuntimeError)):  # ours ValueError, torch RuntimeError
            net(make[id(net)](bad))
        assert logs[id(net)] == [("always", None)]  # the plain hook did not run
        logs[id(net)].clear()
        y = net(make[id(net)](good))  # no error: each hook once, in order
        assert [e[0] for e in logs[id(net)]] == ["plain", "always"]
        logs[id(net)].clear()

        def failing_pre(m: Any, args: tuple[Any, ...]) -> None:
            raise KeyError("pre-hook failed")

        with (
            net.register_forward_pre_hook(failing_pre),
            pytest.raises(KeyError, match="pre-hook failed"),
        ):
            net(make[id(net)](good))
        assert logs[id(net)] == [("always", None)]
        logs[id(net)].clear()

        def failing_after(m: Any, args: tuple[Any, ...], out: Any) -> None:
            raise LookupError("hook failed")

        # a hook that raises after the always-called one ran: it does not run again
        with (
            net.register_forward_hook(failing_after),
            pytest.raises(LookupError, match="hook failed"),
        ):
            net(make[id(net)](good))
        assert [e[0] for e in logs[id(net)]] == ["plain", "always"]
        logs[id(net)].clear()
        # before it: the always-called hook still runs, with forward's output
        with (
            net.register_forward_hook(failing_after, prepend=True),
            pytest.raises(LookupError, match="hook failed"),
        ):
            net(make[id(net)](good))
        assert [e[0] for e in logs[id(net)]] == ["always"]
        np.testing.assert_allclose(logs[id(net)][0][1], host(y) - 1.0, **TOL)
        logs[id(net)].clear()

        def always_failing(m: Any, args: tuple[Any, ...], out: Any) -> None:
            raise ArithmeticError("always failed")

        with (
            net.register_forward_hook(always_failing, always_call=True),
            pytest.warns(UserWarning, match="always_call=True.*always failed"),
            pytest.raises((ValueError, RuntimeError)),
        ):
            net(make[id(net)](bad))
        for h in handles:
            h.remove()
    assert logs[id(ours)] == logs[id(ref)]
    assert not ours._forward_hooks_always_called and not ref._forward_hooks_always_called
    with (
        pytest.warns(
            UserWarning,
            match=r"Shifted: the forward hook <function .*>, registered with always_call=True, "
            r"raised an exception that was silenced as another error was raised in forward: "
            r"'boom'",
        ),
        ours.register_forward_hook(lambda m, a, o: {}["boom"], always_call=True),
        pytest.raises(ValueError, match="Linear"),
    ):
        ours(minitorch.tensor(bad))


@pytest.mark.parametrize("padding_idx", [0, 3, -1, -6])
def test_embedding_padding_idx_matches_torch(backend: Any, padding_idx: int) -> None:
    """The padding row starts as zeros and gets no gradient; it is still looked up as
    it is (here after being set to 5), as torch.nn.Embedding."""
    minitorch.manual_seed(0)
    ours = Embedding(6, 4, padding_idx=padding_idx)
    ref = nn.Embedding(6, 4, padding_idx=padding_idx)
    pad = ref.padding_idx
    assert ours.padding_idx == pad == padding_idx % 6
    assert repr(ours) == repr(ref)
    w = host(ours.weight)
    np.testing.assert_array_equal(w[pad], np.zeros(4))
    assert np.count_nonzero(np.delete(w, pad, axis=0)) == 20
    with minitorch.no_grad():
        ours.weight[pad] = 5.0
    ids = np.array([[0, 3, 5, 3], [pad, 1, 2, pad]])
    check_against_torch(ours, ref, [ids])
    g = host(ours.weight.grad)
    np.testing.assert_array_equal(g[pad], np.zeros(4))
    used = sorted(set(ids.ravel()) - {pad})
    assert np.all(np.abs(g[used]).sum(axis=1) > 0)
    np.testing.assert_array_equal(host(ours(minitorch.tensor(ids)))[1, 0], np.full(4, 5.0))

    ours.zero_grad()  # NumPy indices, a 1-d batch
    ref.zero_grad()
    flat = ids.ravel()
    up = rng_normal(flat.size, 4, seed=3)
    ours(flat).backward(minitorch.tensor(up))
    ref(torch.from_numpy(flat)).backward(torch.from_numpy(up))
    np.testing.assert_allclose(host(ours.weight.grad), host(ref.weight.grad), **TOL)


def test_embedding_padding_idx_out_of_range() -> None:
    for bad in (6, -7):
        with pytest.raises(AssertionError):
            nn.Embedding(6, 4, padding_idx=bad)
        with pytest.raises(
            ValueError,
            match=re.escape(
                f"Embedding: padding_idx={bad} is out of range for num_embeddings=6: it must "
                f"lie in [-6, 6)"
            ),
        ):
            Embedding(6, 4, padding_idx=bad)
    for wrong in (1.0, "0", True):
        with pytest.raises(TypeError, match="Embedding: padding_idx must be an int or None"):
            Embedding(6, 4, padding_idx=wrong)  # type: ignore[arg-type]
    assert Embedding(6, 4, padding_idx=np.int64(-2)).padding_idx == 4


@pytest.mark.parametrize(
    ("max_norm", "norm_type", "padding_idx"),
    [(1.0, 2.0, None), (0.5, 1.0, 2), (1.5, math.inf, None), (1, 3, 0)],
)
def test_embedding_max_norm_matches_torch(
    backend: Any, max_norm: float, norm_type: float, padding_idx: int | None
) -> None:
    """``max_norm``: every row a forward looks up whose norm exceeds it is scaled, in
    place and untracked, by ``max_norm / (norm + 1e-7)``; the other rows keep their
    values; the output and every gradient are those of the renormalized table, as
    torch.nn.Embedding (same initial weight)."""
    minitorch.manual_seed(0)
    ours = Embedding(10, 4, padding_idx, max_norm, norm_type)
    ref = nn.Embedding(10, 4, padding_idx, max_norm, norm_type)
    assert repr(ours) == repr(ref)
    with minitorch.no_grad():  # rows of norms from 0.1 to 10: some under max_norm
        ours.weight.copy_(rng_normal(10, 4, seed=2) * np.geomspace(0.05, 5.0, 10)[:, None])
    w0 = host(ours.weight)
    weight = ours.weight
    ids = np.array([[0, 3, 3, 9], [1, 0, 2, 3]])  # repeated ids, rows 4-8 not looked up
    check_against_torch(ours, ref, [ids])  # copies the weight into ref first
    assert ours.weight is weight and weight.requires_grad and weight.is_leaf
    w = host(ours.weight)
    np.testing.assert_allclose(w, host(ref.weight), rtol=1e-13, atol=1e-15)
    norms0 = np.linalg.norm(w0, ord=norm_type, axis=1)
    used = np.unique(ids)
    over = [i for i in used if norms0[i] > max_norm]
    assert over and len(over) < len(used)  # some rows scaled, some not
    for i in range(10):
        if i in over:
            np.testing.assert_allclose(w[i], w0[i] * max_norm / (norms0[i] + 1e-7), rtol=1e-13)
        else:  # not looked up, or within max_norm: the same values
            np.testing.assert_array_equal(w[i], w0[i], err_msg=str(i))
    assert np.all(np.linalg.norm(w[used], ord=norm_type, axis=1) <= max_norm)

    ours.zero_grad()  # a second lookup (NumPy indices): no row changes any more
    ref.zero_grad()
    flat = np.array([9, 9, 5, 4])  # and two rows seen the first time
    up = rng_normal(flat.size, 4, seed=3)
    ours(flat).backward(minitorch.tensor(up))
    ref(torch.from_numpy(flat)).backward(torch.from_numpy(up))
    np.testing.assert_allclose(host(ours.weight), host(ref.weight), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(host(ours.weight.grad), host(ref.weight.grad), **TOL)
    np.testing.assert_array_equal(host(ours.weight)[9], w[9])


def test_embedding_max_norm_errors() -> None:
    """Bad indices are refused before any row is renormalized; bad ``max_norm`` and
    ``norm_type`` are refused when the layer is built (torch.nn takes ``max_norm=0``
    and zeroes every row it looks up)."""
    emb = Embedding(3, 2, max_norm=0.1)
    w = host(emb.weight)
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Embedding(3, 2, max_norm=0.1): indices (shape (2,)) go from 0 to 5, but they "
            "must lie in [0, 3): index 5 is out of range for num_embeddings=3"
        ),
    ):
        emb(np.array([0, 5]))
    with pytest.raises(
        ValueError,
        match=re.escape("Embedding(3, 2, max_norm=0.1): indices (shape (1,)) must be integers"),
    ):
        emb(np.array([0.5]))
    np.testing.assert_array_equal(host(emb.weight), w)  # nothing renormalized
    assert emb(np.zeros(0, dtype=np.int64)).shape == (0, 2)
    np.testing.assert_array_equal(host(emb.weight), w)

    for bad in (0, -1.0, math.nan):
        with pytest.raises(
            ValueError,
            match=re.escape(
                f"Embedding: max_norm must be > 0 (the largest norm a looked-up row keeps), "
                f"got {bad}; leave it None for no renormalization"
            ),
        ):
            Embedding(3, 2, max_norm=bad)
    for wrong in ("1", True):
        with pytest.raises(
            TypeError,
            match=re.escape(f"Embedding: max_norm must be a number > 0 or None, got {wrong!r}"),
        ):
            Embedding(3, 2, max_norm=wrong)  # type: ignore[arg-type]
    with pytest.raises(
        TypeError,
        match=re.escape(
            "Embedding: norm_type must be a number (the p of the p-norm, e.g. 2.0 or "
            "math.inf), got None (NoneType)"
        ),
    ):
        Embedding(3, 2, max_norm=1.0, norm_type=None)  # type: ignore[arg-type]
    with pytest.raises(
        ValueError, match=re.escape("Embedding: norm_type must be a number (the p of the p-norm)")
    ):
        Embedding(3, 2, norm_type=math.nan)
    emb0 = nn.Embedding(3, 2, max_norm=0)
    emb0(torch.tensor([1]))
    assert not emb0.weight[1].any()


@pytest.mark.parametrize(
    ("padding_idx", "max_norm"), [(None, None), (3, None), (-1, None), (0, 1.0)]
)
def test_embedding_scale_grad_by_freq_matches_torch(
    backend: Any, padding_idx: int | None, max_norm: float | None
) -> None:
    """``scale_grad_by_freq=True``: the gradient of each row looked up is the sum of its
    upstream rows divided by how often the batch looks it up (padding ids count too),
    the padding row still gets none, and ``max_norm`` renormalizes as before, as
    torch.nn.Embedding; the output is unchanged. The gradient also against NumPy, at
    1e-12."""
    minitorch.manual_seed(0)
    ours = Embedding(10, 4, padding_idx, max_norm, scale_grad_by_freq=True)
    ref = nn.Embedding(10, 4, padding_idx, max_norm, scale_grad_by_freq=True)
    assert repr(ours) == repr(ref)
    assert ours.scale_grad_by_freq is True and ours.sparse is False
    ids = np.array([[0, 3, 3, 9], [3, 0, 2, 3], [9, 9, 1, 0]])  # 3 and 0 four times
    check_against_torch(ours, ref, [ids])

    ours.zero_grad()
    up = rng_normal(3, 4, 4, seed=5)
    ours(minitorch.tensor(ids)).backward(minitorch.tensor(up))
    flat = ids.ravel()
    want = np.zeros((10, 4))
    np.add.at(want, flat, up.reshape(-1, 4) / np.bincount(flat, minlength=10)[flat, None])
    if ours.padding_idx is not None:
        want[ours.padding_idx] = 0.0
    np.testing.assert_allclose(host(ours.weight.grad), want, rtol=1e-12, atol=1e-15)
    if padding_idx is None:  # without the option: the plain sums, 4x row 3's scaled one
        plain = Embedding(10, 4)
        plain(minitorch.tensor(ids)).backward(minitorch.tensor(up))
        np.testing.assert_allclose(host(plain.weight.grad)[3], 4 * want[3], rtol=1e-12)


def test_embedding_sparse_is_refused(backend: Any) -> None:
    """``sparse=True`` asks for a sparse gradient, which minitorch does not have: refused,
    saying what to do. The dense gradient holds the values of torch.nn's sparse one."""
    with pytest.raises(
        ValueError,
        match=re.escape(
            "Embedding(10, 4): sparse=True is not supported: minitorch has no sparse "
            "gradients. Leave sparse=False (the default): weight.grad is then a dense "
            "array of shape (10, 4) holding what a sparse gradient would (zeros in the rows "
            "not looked up), for minitorch.optim's optimizers (there is no SparseAdam: "
            "Adam moves every row)"
        ),
    ):
        Embedding(10, 4, sparse=True)
    minitorch.manual_seed(0)
    ours = Embedding(10, 4, sparse=False)
    assert ours.sparse is False and repr(ours) == repr(nn.Embedding(10, 4, sparse=False))
    ref = nn.Embedding(10, 4, sparse=True)
    copy_weights(ours, ref)
    ids, up = np.array([[1, 4, 4], [7, 1, 4]]), rng_normal(2, 3, 4, seed=6)
    ours(ids).backward(minitorch.tensor(up))
    ref(torch.from_numpy(ids)).backward(torch.from_numpy(up))
    assert ref.weight.grad.is_sparse
    np.testing.assert_allclose(host(ours.weight.grad), host(ref.weight.grad.to_dense()), **TOL)
    for name in ("scale_grad_by_freq", "sparse"):
        for wrong in (1, "yes", None):
            with pytest.raises(
                TypeError,
                match=re.escape(
                    f"Embedding: {name} must be True or False, got {wrong!r} "
                    f"({type(wrong).__name__})"
                ),
            ):
                Embedding(3, 2, **{name: wrong})


class _Bag(Module):
    """An Embedding(30, 4) read by a Linear head: token ids (B, T) -> the mean of their
    embeddings -> 3 class scores."""

    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.emb = Embedding(30, 4, **options)
        self.head = Linear(4, 3)

    def forward(self, ids: minitorch.Tensor) -> minitorch.Tensor:
        out: minitorch.Tensor = self.head(self.emb(ids).mean(axis=1))
        return out


class _TorchBag(nn.Module):  # type: ignore[misc]
    def __init__(self, **options: Any) -> None:
        super().__init__()
        self.emb = nn.Embedding(30, 4, **options)
        self.head = nn.Linear(4, 3)

    def forward(self, ids: Any) -> Any:
        return self.head(self.emb(ids).mean(dim=1))


@pytest.mark.parametrize(
    "options",
    [
        {"max_norm": 1.0},
        {"scale_grad_by_freq": True, "padding_idx": 0},
        {"max_norm": 1.0, "norm_type": 1.0, "scale_grad_by_freq": True, "padding_idx": 2},
    ],
    ids=lambda o: ",".join(o),
)
def test_embedding_trains_captured_as_eagerly_and_as_torch(
    backend: Any, options: dict[str, Any]
) -> None:
    """20 SGD steps of an Embedding with ``options`` and a Linear head, eagerly and
    ``minitorch.capture``d (one recording, 19 replays): the same losses and weights, to
    the bit (1e-12 on a GPU: ``conftest.assert_same``), and those of torch.nn in float64
    to 1e-10. ``max_norm`` renormalizes rows in place in every replayed step (rows looked
    up for the first time, and rows the updates grew back past it), so a renormalization
    run only while recording would show; with ``scale_grad_by_freq`` every batch (40
    ids of 30) repeats ids, padding ids too."""
    rng = np.random.default_rng(0)
    batches = [(rng.integers(0, 30, (8, 5)), rng.integers(0, 3, 8)) for _ in range(20)]
    ref = _TorchBag(**options)
    runs = []
    for captured in (False, True):
        minitorch.manual_seed(0)
        model = _Bag(**options)
        if not captured:
            copy_weights(model, ref)  # (ref in float64)
        opt = minitorch.optim.SGD(list(model.parameters()), lr=0.5)

        def step(
            ids: minitorch.Tensor, y: minitorch.Tensor, model: _Bag = model, opt: Any = opt
        ) -> minitorch.Tensor:
            loss = minitorch.cross_entropy(model(ids), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        run = minitorch.capture(step, optimizer=opt) if captured else step
        losses = [host(run(minitorch.tensor(i), minitorch.tensor(t))) for i, t in batches]
        runs.append((losses, model, run))
    (want, eager, _), (got, model, run) = runs
    assert run.stats == {"records": 1, "replays": 19, "fallbacks": 0}
    for k, (a, b) in enumerate(zip(got, want, strict=True)):
        assert_same(a, b, err_msg=f"loss {k}")
    for (n, p), q in zip(model.named_parameters(), eager.parameters(), strict=True):
        assert_same(host(p), host(q), err_msg=n)

    topt = torch.optim.SGD(ref.parameters(), lr=0.5)
    max_norm = options.get("max_norm")
    seen: set[int] = set()
    renormed = {"first look-up": 0, "grown back": 0}  # rows, in the replayed steps
    for k, ((ids, y), loss) in enumerate(zip(batches, want, strict=True)):
        used = np.unique(ids)
        norms = host(
            torch.linalg.vector_norm(ref.emb.weight.detach(), options.get("norm_type", 2), 1)
        )
        if max_norm is not None and k:
            for i in used[norms[used] > max_norm]:
                renormed["grown back" if i in seen else "first look-up"] += 1
        seen.update(used.tolist())
        tl = nn.functional.cross_entropy(ref(torch.from_numpy(ids)), torch.from_numpy(y))
        tl.backward()
        topt.step()
        topt.zero_grad()
        np.testing.assert_allclose(loss, host(tl), rtol=1e-10, atol=0, err_msg=f"loss {k}")
    theirs = dict(ref.named_parameters())
    for n, p in eager.named_parameters():
        np.testing.assert_allclose(host(p), host(theirs[n]), rtol=1e-10, atol=1e-12, err_msg=n)
    if max_norm is not None:
        assert renormed["first look-up"] >= 5 and renormed["grown back"] >= 20, renormed


def test_a_frozen_embedding_with_max_norm_in_a_captured_step(backend: Any) -> None:
    """A frozen Embedding(max_norm=1.0) (weight.requires_grad_(False), only the head
    trained) still renormalizes the rows it looks up in each forward, as torch.nn does:
    its weight is no parameter of the capture, so the replays would read the table of
    the recording again. The capture refuses it and says to give the weight to
    ``params=``; given there, 8 captured steps leave the table, the head and the
    losses where the eager steps leave them."""
    rng = np.random.default_rng(1)
    batches = [(rng.integers(0, 30, (8, 5)), rng.integers(0, 3, 8)) for _ in range(8)]

    def make() -> tuple[_Bag, Any, Any]:
        minitorch.manual_seed(0)
        model = _Bag(max_norm=1.0)
        model.emb.weight.requires_grad_(False)
        opt = minitorch.optim.SGD(list(model.head.parameters()), lr=0.5)

        def step(ids: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
            loss = minitorch.cross_entropy(model(ids), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        return model, opt, step

    model, opt, step = make()
    ids, y = (minitorch.tensor(a) for a in batches[0])
    with pytest.raises(
        minitorch.CaptureError,
        match=re.escape(
            "a tensor of shape (30, 4) that the step read as a constant (neither an "
            "argument nor a parameter) was given a new array computed in it"
        )
        + r".*give it to capture\(params=\[\.\.\.\]\)",
    ):
        minitorch.capture(step, optimizer=opt)(ids, y)

    (eager_model, _, eager), (model, opt, step) = make(), make()
    run = minitorch.capture(step, optimizer=opt, params=[model.emb.weight])
    for k, (i, t) in enumerate(batches):
        ids, y = minitorch.tensor(i), minitorch.tensor(t)
        assert_same(host(run(ids, y)), host(eager(ids, y)), err_msg=f"loss {k}")
    assert run.stats == {"records": 1, "replays": 7, "fallbacks": 0}
    for (n, p), q in zip(model.named_parameters(), eager_model.parameters(), strict=True):
        assert_same(host(p), host(q), err_msg=n)
    w = host(model.emb.weight)
    used = np.unique(np.concatenate([i.ravel() for i, _ in batches]))
    assert np.all(np.linalg.norm(w[used], axis=1) <= 1.0)
