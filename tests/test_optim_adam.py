"""minitorch.optim: Adam, AdamW and Nesterov SGD against PyTorch float64 over 100 steps,
the state_dict round trip, hyper-parameter validation and skipped parameters."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch import optim

torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")

# (minitorch class, torch class, keyword arguments): every configuration is run as is
CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("Adam", {"lr": 0.05}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.05, "amsgrad": True}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True}),
    ("Adam", {"lr": 0.02, "betas": (0.4, 0.99), "eps": 1e-3}),  # lerp weight >= 0.5
    ("AdamW", {"lr": 0.05}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.0}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.3, "amsgrad": True}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.0, "amsgrad": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.5, "weight_decay": 0.1, "nesterov": True}),
]


def _host(backend: Any, a: Any) -> np.ndarray:
    return np.asarray(backend.to_numpy(a))


def _data() -> tuple[list[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal((3, 4)), rng.standard_normal(4)], rng.standard_normal((6, 3))


def _loss(x: Any, w: Any, b: Any) -> Any:
    """A small nonlinear loss (works for minitorch and torch tensors alike)."""
    r = (x @ w + b).tanh() - 0.3
    return (r * r).sum() + (w * w * w * w).sum() * 0.05


def _run_minitorch(
    name: str, kwargs: dict[str, Any], steps: int, values: list[np.ndarray], x: np.ndarray
) -> list[minitorch.Tensor]:
    ps = [minitorch.tensor(v, requires_grad=True) for v in values]
    opt = getattr(optim, name)(ps, **kwargs)
    xt = minitorch.tensor(x)
    for _ in range(steps):
        opt.zero_grad()
        _loss(xt, *ps).backward()
        opt.step()
    return ps


@pytest.mark.parametrize(("name", "kwargs"), CONFIGS)
def test_100_steps_match_torch(backend: Any, name: str, kwargs: dict[str, Any]) -> None:
    values, x = _data()
    ps = _run_minitorch(name, kwargs, 100, values, x)
    tps = [torch.tensor(v, requires_grad=True) for v in values]
    topt = getattr(torch.optim, name)(tps, **kwargs)
    for _ in range(100):
        topt.zero_grad()
        _loss(torch.tensor(x), *tps).backward()
        topt.step()
    for p, tp, v in zip(ps, tps, values, strict=True):
        want = tp.detach().numpy()
        assert np.abs(want - v).max() > 0.1  # the run went somewhere
        np.testing.assert_allclose(_host(backend, p.data), want, rtol=1e-10, atol=0)


def test_adam_first_steps_by_hand(backend: Any) -> None:
    """Two steps of Adam on sum(w * w), worked out from the formulas."""
    w = minitorch.tensor([1.0, -2.0], requires_grad=True)
    opt = optim.Adam([w], lr=0.1, betas=(0.5, 0.75), eps=0.0)
    g = np.array([2.0, -4.0])
    for _ in range(2):
        opt.zero_grad()
        (w * w).sum().backward()
        opt.step()
    # step 1: m = 0.5 g, v = 0.25 g^2, m_hat = g, v_hat = g^2: w1 = w0 - 0.1 sign(g)
    w1 = np.array([0.9, -1.9])
    g1 = 2 * w1
    m = 0.5 * (0.5 * g) + 0.5 * g1
    v = 0.75 * (0.25 * g * g) + 0.25 * g1 * g1
    w2 = w1 - 0.1 / (1 - 0.5**2) * m / np.sqrt(v / (1 - 0.75**2))
    np.testing.assert_allclose(_host(backend, w.data), w2, rtol=1e-13)
    state = opt.state_dict()
    assert state["step"] == [2]
    np.testing.assert_allclose(state["exp_avg"][0], m, rtol=1e-13)
    np.testing.assert_allclose(state["exp_avg_sq"][0], v, rtol=1e-13)


def test_adamw_decay_and_amsgrad_by_hand(backend: Any) -> None:
    """AdamW shrinks p by (1 - lr * wd) first; AMSGrad divides by the largest v so far."""
    w = minitorch.tensor([2.0], requires_grad=True)
    opt = optim.AdamW([w], lr=0.5, betas=(0.0, 0.5), eps=0.0, weight_decay=0.2, amsgrad=True)
    w.grad = minitorch.tensor([4.0]).data
    opt.step()  # m = 4, v = 8, bias corrections 1 and 0.5: w = 2 * 0.9 - 0.5 * 4 / 4
    np.testing.assert_allclose(_host(backend, w.data), [1.3], rtol=1e-15)
    w.grad = minitorch.tensor([1.0]).data
    opt.step()  # m = 1, v = 4.5, max v = 8, bc2 = 0.75: w = 1.3 * 0.9 - 0.5 / sqrt(8 / 0.75)
    np.testing.assert_allclose(_host(backend, w.data), [1.17 - 0.5 / math.sqrt(8 / 0.75)])
    np.testing.assert_allclose(opt.state_dict()["max_exp_avg_sq"][0], [8.0], rtol=1e-15)
    np.testing.assert_allclose(opt.state_dict()["exp_avg_sq"][0], [4.5], rtol=1e-15)


def test_sgd_nesterov_by_hand(backend: Any) -> None:
    w = minitorch.tensor([1.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1, momentum=0.5, nesterov=True)
    w.grad = minitorch.tensor([2.0]).data
    opt.step()  # b = 2, direction 2 + 0.5 * 2 = 3
    np.testing.assert_allclose(_host(backend, w.data), [0.7], rtol=1e-15)
    opt.step()  # b = 0.5 * 2 + 2 = 3, direction 2 + 1.5 = 3.5
    np.testing.assert_allclose(_host(backend, w.data), [0.35], rtol=1e-14)


# ------------------------------------------------------------------ state_dict
def _train(
    opt: optim.Optimizer, ps: list[minitorch.Tensor], x: Any, steps: range
) -> list[np.ndarray]:
    for k in steps:
        opt.zero_grad()
        if k % 3 == 0:  # the bias sits out some steps: its step count falls behind
            (x @ ps[0]).tanh().sum().backward()
        else:
            _loss(x, *ps).backward()
        opt.step()
    return [np.array(p.backend.to_numpy(p.data)) for p in ps]


@pytest.mark.parametrize(("name", "kwargs"), CONFIGS)
def test_state_dict_round_trip_continues_exactly(
    backend: Any, name: str, kwargs: dict[str, Any]
) -> None:
    values, x = _data()
    xt = minitorch.tensor(x)
    ps = [minitorch.tensor(v, requires_grad=True) for v in values]
    cls: Callable[..., optim.Optimizer] = getattr(optim, name)
    opt = cls(ps, **kwargs)
    _train(opt, ps, xt, range(7))
    state = opt.state_dict()
    snapshot = [np.array(p.backend.to_numpy(p.data)) for p in ps]
    want = _train(opt, ps, xt, range(7, 15))  # uninterrupted

    ps2 = [minitorch.tensor(v, requires_grad=True) for v in snapshot]
    # other hyper-parameters: load_state_dict restores the saved ones
    fresh = cls(ps2, lr=0.5) if name == "SGD" else cls(ps2, lr=0.5, betas=(0.1, 0.2))
    fresh.load_state_dict(state)
    got = _train(fresh, ps2, xt, range(7, 15))
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    assert fresh.state_dict().keys() == state.keys()


def test_state_dict_is_plain_host_data(backend: Any) -> None:
    ps = [
        minitorch.tensor([1.0, 2.0], requires_grad=True),
        minitorch.tensor([3.0], requires_grad=True),
    ]
    opt = optim.Adam(ps, lr=0.1, amsgrad=True)
    (ps[0] * ps[0]).sum().backward()
    opt.step()
    state = opt.state_dict()
    assert state["type"] == "Adam"
    assert state["betas"] == [0.9, 0.999] and state["amsgrad"] is True
    assert state["step"] == [1, 0]  # the second parameter had no gradient
    assert state["exp_avg"][1] is None and state["max_exp_avg_sq"][1] is None
    for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
        assert type(state[k][0]) is np.ndarray and state[k][0].dtype == np.float64
    np.testing.assert_allclose(state["exp_avg"][0], [0.2, 0.4], rtol=1e-15)  # 0.1 * 2w
    # a host copy: writing into it does not reach the optimizer
    state["exp_avg"][0][...] = 1e6
    np.testing.assert_allclose(opt.state_dict()["exp_avg"][0], [0.2, 0.4], rtol=1e-15)


def test_load_state_dict_copies(backend: Any) -> None:
    """Editing the dict (or its arrays) after loading changes nothing."""
    values, x = _data()
    xt = minitorch.tensor(x)
    ps = [minitorch.tensor(v, requires_grad=True) for v in values]
    opt = optim.AdamW(ps, lr=0.05, amsgrad=True)
    _train(opt, ps, xt, range(4))
    state = opt.state_dict()
    snapshot = [np.array(p.backend.to_numpy(p.data)) for p in ps]
    want = _train(opt, ps, xt, range(4, 8))

    ps2 = [minitorch.tensor(v, requires_grad=True) for v in snapshot]
    fresh = optim.AdamW(ps2)
    fresh.load_state_dict(state)
    for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
        for a in state[k]:
            a[...] = 123.0
    state["step"][0] = 99
    state["lr"] = 7.0
    got = _train(fresh, ps2, xt, range(4, 8))
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    assert fresh.lr == 0.05


def _adam_state() -> tuple[list[minitorch.Tensor], dict[str, Any]]:
    ps = [
        minitorch.tensor([1.0, 2.0], requires_grad=True),
        minitorch.tensor([3.0], requires_grad=True),
    ]
    opt = optim.Adam(ps, lr=0.1, amsgrad=True)
    sum((p * p).sum() for p in ps).backward()
    opt.step()
    return ps, opt.state_dict()


def test_load_state_dict_refuses_mismatches(backend: Any) -> None:
    ps, state = _adam_state()
    before = [np.array(p.backend.to_numpy(p.data)) for p in ps]
    target = optim.Adam(ps)

    with pytest.raises(ValueError, match=r"Adam\.load_state_dict: the state is for 'SGD'"):
        target.load_state_dict(optim.SGD(ps, lr=0.1).state_dict())
    with pytest.raises(ValueError, match=r"AdamW\.load_state_dict: the state is for 'Adam'"):
        optim.AdamW(ps).load_state_dict(state)
    with pytest.raises(ValueError, match=r"'step' must hold one entry per parameter \(1\), got 2"):
        optim.Adam(ps[:1]).load_state_dict(state)
    with pytest.raises(ValueError, match=r"the state has no 'exp_avg_sq'"):
        target.load_state_dict({k: v for k, v in state.items() if k != "exp_avg_sq"})
    bad = dict(state, exp_avg=[np.zeros(3), state["exp_avg"][1]])
    with pytest.raises(
        ValueError, match=r"exp_avg\[0\] has shape \(3,\), but parameter 0 has shape \(2,\)"
    ):
        target.load_state_dict(bad)
    bad = dict(state, max_exp_avg_sq=[None, state["max_exp_avg_sq"][1]])
    with pytest.raises(ValueError, match="parameter 0 has step 1 but max_exp_avg_sq is missing"):
        target.load_state_dict(bad)
    bad = dict(state, step=[-1, 1])
    with pytest.raises(ValueError, match=r"step\[0\] must be an int >= 0, got -1"):
        target.load_state_dict(bad)
    with pytest.raises(ValueError, match=r"Adam: betas\[1\] must be in \[0, 1\), got 1.5"):
        target.load_state_dict(dict(state, betas=[0.9, 1.5]))
    with pytest.raises(ValueError, match="expected a dict, got list"):
        target.load_state_dict([])  # type: ignore[arg-type]
    # nothing changed: the refused loads left the fresh optimizer as it was
    assert target.state_dict()["step"] == [0, 0] and target.betas == (0.9, 0.999)
    for p, b in zip(ps, before, strict=True):
        np.testing.assert_array_equal(p.backend.to_numpy(p.data), b)


def test_load_state_dict_puts_state_on_the_parameter_backend(backend: Any) -> None:
    ps, state = _adam_state()
    fresh = optim.Adam(ps)
    fresh.load_state_dict(state)
    m = fresh._state["exp_avg"][0]
    assert isinstance(m, type(ps[0].data)) and m.dtype == ps[0].data.dtype
    assert str(m.device) == str(ps[0].device)


def test_sgd_state_dict(backend: Any) -> None:
    w = minitorch.tensor([1.0, -2.0], requires_grad=True)
    opt = optim.SGD([w], lr=0.1, momentum=0.9, nesterov=True)
    (w * w).sum().backward()
    opt.step()
    state = opt.state_dict()
    assert {k: v for k, v in state.items() if k != "momentum_buffer"} == {
        "type": "SGD",
        "lr": 0.1,
        "momentum": 0.9,
        "weight_decay": 0.0,
        "nesterov": True,
    }
    np.testing.assert_array_equal(state["momentum_buffer"][0], [2.0, -4.0])
    with pytest.raises(ValueError, match="nesterov=True requires momentum > 0"):
        optim.SGD([w], lr=0.1, momentum=0.5).load_state_dict(dict(state, momentum=0.0))


# ------------------------------------------------------------------ hyper-parameters
MAKERS: dict[str, Callable[..., optim.Optimizer]] = {
    "SGD": lambda ps, **kw: optim.SGD(ps, **{"lr": 0.1, **kw}),
    "Adam": optim.Adam,
    "AdamW": optim.AdamW,
}


@pytest.mark.parametrize("name", sorted(MAKERS))
@pytest.mark.parametrize("lr", [math.nan, math.inf, -math.inf, -0.1])
def test_bad_lr_is_refused(backend: Any, name: str, lr: float) -> None:
    w = minitorch.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match=rf"^{name}: lr must be >= 0 and finite, got {lr!r}$"):
        MAKERS[name]([w], lr=lr)


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"betas": (1.0, 0.999)}, r"betas\[0\] must be in \[0, 1\), got 1.0"),
        ({"betas": (-0.1, 0.999)}, r"betas\[0\] must be in \[0, 1\), got -0.1"),
        ({"betas": (0.9, math.nan)}, r"betas\[1\] must be in \[0, 1\), got nan"),
        ({"betas": (0.9,)}, r"betas must be a pair of numbers in \[0, 1\)"),
        ({"eps": -1e-8}, "eps must be >= 0 and finite, got -1e-08"),
        ({"eps": math.inf}, "eps must be >= 0 and finite, got inf"),
        ({"weight_decay": -0.01}, "weight_decay must be >= 0 and finite, got -0.01"),
        ({"weight_decay": math.nan}, "weight_decay must be >= 0 and finite, got nan"),
        ({"amsgrad": "yes"}, "amsgrad must be True or False, got 'yes'"),
    ],
)
def test_bad_adam_hyper_parameters_are_refused(
    backend: Any, name: str, kwargs: dict[str, Any], message: str
) -> None:
    w = minitorch.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match=f"^{name}: {message}"):
        MAKERS[name]([w], **kwargs)


def test_bad_sgd_hyper_parameters_are_refused(backend: Any) -> None:
    w = minitorch.tensor([1.0], requires_grad=True)
    with pytest.raises(ValueError, match=r"SGD: momentum must be >= 0 and finite, got -0\.5"):
        optim.SGD([w], lr=0.1, momentum=-0.5)
    with pytest.raises(ValueError, match="SGD: momentum must be >= 0 and finite, got nan"):
        optim.SGD([w], lr=0.1, momentum=math.nan)
    with pytest.raises(ValueError, match="SGD: weight_decay must be >= 0 and finite, got inf"):
        optim.SGD([w], lr=0.1, weight_decay=math.inf)
    with pytest.raises(ValueError, match="SGD: nesterov=True requires momentum > 0"):
        optim.SGD([w], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Adam: parameter 1 must be a leaf Tensor"):
        optim.Adam([w, minitorch.tensor([1.0])])


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("SGD", {"momentum": 0.9, "weight_decay": 0.1, "nesterov": True}),
        ("Adam", {"weight_decay": 0.1, "amsgrad": True}),
        ("AdamW", {"weight_decay": 0.1}),
    ],
)
def test_lr_zero_is_allowed_and_moves_nothing(
    backend: Any, name: str, kwargs: dict[str, Any]
) -> None:
    w = minitorch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    opt = MAKERS[name]([w], lr=0.0, **kwargs)
    for _ in range(3):
        opt.zero_grad()
        (w * w * w).sum().backward()
        opt.step()
    np.testing.assert_array_equal(_host(backend, w.data), [1.0, -2.0, 0.5])
    assert w._version == 3  # it was a step, that happened to move nothing


# ------------------------------------------------------------------ skipped parameters
@pytest.mark.parametrize(("name", "kwargs"), CONFIGS[::2])
def test_params_without_grad_are_skipped(backend: Any, name: str, kwargs: dict[str, Any]) -> None:
    """A parameter whose .grad is None neither moves, nor counts a step, nor bumps its
    version; the others follow torch (which skips it too)."""
    values, x = _data()
    ps = [minitorch.tensor(v, requires_grad=True) for v in values]
    tps = [torch.tensor(v, requires_grad=True) for v in values]
    opt = getattr(optim, name)(ps, **kwargs)
    topt = getattr(torch.optim, name)(tps, **kwargs)
    for _ in range(5):
        opt.zero_grad()
        topt.zero_grad()
        (minitorch.tensor(x) @ ps[0]).tanh().sum().backward()
        (torch.tensor(x) @ tps[0]).tanh().sum().backward()
        opt.step()
        topt.step()
    assert ps[1].grad is None and ps[1]._version == 0 and ps[0]._version == 5
    np.testing.assert_array_equal(_host(backend, ps[1].data), values[1])
    np.testing.assert_allclose(
        _host(backend, ps[0].data), tps[0].detach().numpy(), rtol=1e-12, atol=0
    )
    assert np.abs(values[0] - _host(backend, ps[0].data)).max() > 0.01
    state = opt.state_dict()
    arrays = ["momentum_buffer"] if name == "SGD" else ["exp_avg", "exp_avg_sq"]
    assert all(state[k][0] is not None and state[k][1] is None for k in arrays)
    if name != "SGD":
        assert state["step"] == [5, 0]


# (optimizer, keyword arguments, list operations per step): m (3), v (4), denom (3),
# update (3); weight decay adds 1 (AdamW) or 2 (Adam's L2); AMSGrad's maximum adds 1
_LAUNCHES: list[tuple[str, dict[str, Any], int]] = [
    ("Adam", {}, 13),
    ("Adam", {"betas": (0.4, 0.99), "eps": 1e-3}, 13),  # lerp weight >= 0.5
    ("Adam", {"weight_decay": 0.1, "amsgrad": True}, 16),
    ("AdamW", {"weight_decay": 0.3}, 14),
    ("AdamW", {"weight_decay": 0.3, "amsgrad": True}, 15),
]


@pytest.mark.parametrize(("name", "kwargs", "launches"), _LAUNCHES)
def test_adam_on_torch_updates_every_parameter_with_multi_tensor_kernels(
    backend: Any,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    kwargs: dict[str, Any],
    launches: int,
) -> None:
    """On the torch backend Adam and AdamW update all their parameters on a GPU together
    with torch's ``_foreach_*`` kernels: as many launches per step for 5 parameters as the
    list operations of one (each a launch on a GPU, not one per parameter), and what
    the same backend gives one array at a time (its ``foreach`` taken away), parameters
    and state, over three steps, a float32 parameter among float64 ones: to the bit on
    the CPU, to the last bits on CUDA."""
    if backend.name != "torch":
        pytest.skip(f"{backend.name}: multi-tensor kernels are torch's")
    calls: list[str] = []
    for attr in dir(torch):
        if attr.startswith("_foreach_"):
            real = getattr(torch, attr)

            def counted(*args: Any, _real: Any = real, _name: str = attr, **kw: Any) -> Any:
                calls.append(_name)
                return _real(*args, **kw)

            monkeypatch.setattr(torch, attr, counted)
    # the kernels pay on a GPU only (test_sgd_on_torch_... checks the CPU keeps its
    # path); here the backend takes CPU tensors as it takes CUDA ones
    monkeypatch.setattr(type(backend.foreach), "takes", staticmethod(lambda x, g: True))
    rng = np.random.default_rng(5)
    values = [rng.standard_normal(s) for s in [(4, 3), (3,), (), (2, 3)]]
    single = dataclasses.replace(backend, foreach=None)

    def make(be: Any) -> tuple[list[minitorch.Tensor], Any]:
        ps = [minitorch.tensor(v, requires_grad=True) for v in values]
        ps.append(minitorch.tensor(values[1], dtype="float32", requires_grad=True))
        for p in ps:
            p._backend = be
        opt = getattr(optim, name)(ps, lr=0.05, **kwargs)
        return ps, opt

    together, opt_t = make(backend)
    alone, opt_a = make(single)
    for step in range(3):  # the first creates the state
        for ps, opt in ((together, opt_t), (alone, opt_a)):
            opt.zero_grad()
            sum(((p * p * p).sum() for p in ps), minitorch.tensor(0.0)).backward()
            before = len(calls)
            opt.step()
            if ps is alone:
                assert len(calls) == before, "the one-at-a-time twin used foreach"
            else:
                assert len(calls) - before == launches, (step, calls[before:])
    # on the CPU to the bit; on CUDA torch's list division by a number takes the
    # reciprocal in double, the tensor one in float: the last bits may differ there
    cuda = str(backend.device).startswith("cuda")

    def same(a: Any, b: Any) -> bool:
        if not cuda:
            return bool(torch.equal(a, b))
        rtol = 1e-5 if a.dtype == torch.float32 else 1e-13
        return bool(torch.allclose(a, b, rtol=rtol, atol=0.0))

    for a, b in zip(together, alone, strict=True):
        assert a.data.dtype == b.data.dtype
        assert same(a.data, b.data)
    for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
        for a, b in zip(opt_t._state[key], opt_a._state[key], strict=True):
            assert (a is None and b is None) or same(a, b), key


@pytest.mark.parametrize(("name", "kwargs"), [c for c in CONFIGS if c[0] != "SGD"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adam_in_place_on_numpy_gives_the_formula_bits(
    backend: Any, name: str, kwargs: dict[str, Any], dtype: str
) -> None:
    """On NumPy, Adam and AdamW write the moments and the parameter in their own
    buffers (the buffer's address stays) and give the bits of the formula (the same
    optimizer with the in-place path taken away), parameters and state, over 5 steps."""
    if backend.name != "numpy":
        pytest.skip(f"{backend.name}: the in-place update is NumPy's")
    rng = np.random.default_rng(7)
    start = rng.standard_normal((5, 4)).astype(dtype)
    twins = [minitorch.tensor(start, requires_grad=True) for _ in range(2)]
    opts = [getattr(optim, name)([w], **kwargs) for w in twins]
    opts[1]._in_place = lambda *args: False  # the formula
    for _ in range(5):
        g = rng.standard_normal((5, 4)).astype(dtype)
        address = twins[0].data.ctypes.data
        for w, opt in zip(twins, opts, strict=True):
            w.grad = g.copy()
            opt.step()
        assert twins[0].data.ctypes.data == address, "not updated in place"
        assert twins[0].data.dtype == dtype
        np.testing.assert_array_equal(twins[0].data, twins[1].data, strict=True)
    for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
        a, b = opts[0]._state[key][0], opts[1]._state[key][0]
        assert (a is None) == (b is None), key
        if a is not None:
            np.testing.assert_array_equal(a, b, strict=True)


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_adam_never_writes_into_an_array_someone_else_holds(backend: Any, name: str) -> None:
    """Adam writes in place only into what no one else sees: an array the user holds
    (``d = w.data``), a view of the user's array (``w.data = big[0]``), a read-only
    one, and a parameter a graph saved keep their values; the update goes to a new
    array, equal to the in-place update of a twin."""
    if backend.name != "numpy":
        pytest.skip(f"{backend.name}: the in-place update is NumPy's")
    start = np.array([0.5, -1.0, 2.0])
    big = np.stack([start, start])
    frozen = start.copy()
    frozen.setflags(write=False)
    free = minitorch.tensor(start, requires_grad=True)
    held, viewed, readonly, saved = (minitorch.tensor(start, requires_grad=True) for _ in range(4))
    viewed.data = big[0]
    readonly.data = frozen
    mine = held.data
    ps = [free, held, viewed, readonly, saved]
    opt = getattr(optim, name)(ps, lr=0.1, weight_decay=0.1)
    graph = saved * saved  # saves saved's array
    for p in ps:
        (p * p).sum().backward()
    opt.step()
    np.testing.assert_array_equal(mine, start)
    np.testing.assert_array_equal(big, np.stack([start, start]))
    np.testing.assert_array_equal(frozen, start)
    for p in ps[1:]:
        np.testing.assert_array_equal(p.data, free.data)
    assert not np.array_equal(free.data, start)
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        graph.sum().backward()
