"""minitorch.capture: a step recorded once and replayed must leave the parameters, the
optimizer state and the returned losses exactly where eager training leaves them (eager
training of an identical copy is the reference), re-record when its signature changes,
and refuse what it cannot replay with a CaptureError that says what to do."""

from __future__ import annotations

import contextlib
import enum
import importlib
import math
import operator
import re
import threading
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from test_custom_ops import forgetting_new_ops

import minitorch
from minitorch import CaptureError
from minitorch._cuda_graphs import (
    CupyGraph,
    GraphRunner,
    Lent,
    TorchGraph,
    graph_runner,
    lent_arrays,
)
from minitorch.backend import device_name, is_array_of

N_IN, N_HID, N_OUT = 6, 16, 4


def _is_real_array(a: Any, backend: Any) -> bool:
    """A real array of ``backend``: not a traced stand-in, which ``is_array_of`` also
    accepts (so an assertion with it alone could not fail on a leftover stand-in)."""
    return is_array_of(a, backend) and not getattr(type(a), "_minitorch_stand_in", False)


def _host(t: Any) -> np.ndarray:
    return np.asarray(minitorch.backend.to_host(t.data if isinstance(t, minitorch.Tensor) else t))


def _model(
    dtype: str, opt: str = "sgd"
) -> tuple[list[minitorch.Tensor], Any, Callable[..., minitorch.Tensor]]:
    """A 2-layer MLP, its optimizer and a train step (zero_grad, forward, backward, step)."""
    g = minitorch.Generator(0)
    ps = [
        (minitorch.randn(N_IN, N_HID, generator=g, dtype=dtype) * 0.5).detach(),
        minitorch.zeros(N_HID, dtype=dtype),
        (minitorch.randn(N_HID, N_OUT, generator=g, dtype=dtype) * 0.5).detach(),
        minitorch.zeros(N_OUT, dtype=dtype),
    ]
    for p in ps:
        p.requires_grad_()
    optimizer: Any
    if opt == "sgd":
        optimizer = minitorch.optim.SGD(ps, lr=0.05, momentum=0.9)
    elif opt == "adam":
        optimizer = minitorch.optim.Adam(ps, lr=0.01)
    else:
        optimizer = minitorch.optim.AdamW(ps, lr=0.01, weight_decay=0.1, amsgrad=True)

    def step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
        optimizer.zero_grad()
        h = minitorch.relu(x @ ps[0] + ps[1])
        loss = minitorch.cross_entropy(h @ ps[2] + ps[3], y)
        loss.backward()
        optimizer.step()
        return loss

    return ps, optimizer, step


def _train(ps: list[minitorch.Tensor], opt: Any) -> Callable[..., minitorch.Tensor]:
    """A step on :func:`_model`'s weights (no biases): forward, backward, ``opt.step()``,
    ``zero_grad()``."""

    def train(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
        loss = minitorch.cross_entropy((x @ ps[0]).relu() @ ps[2], y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return train


def _batches(n: int, batch: int, dtype: str, seed: int = 1) -> list[tuple[Any, Any]]:
    rng = np.random.default_rng(seed)
    return [
        (
            minitorch.tensor(rng.standard_normal((batch, N_IN)), dtype=dtype),
            minitorch.tensor(rng.integers(0, N_OUT, batch)),
        )
        for _ in range(n)
    ]


def _assert_same_results(got: Any, want: Any, msg: str = "") -> None:
    """A step's results (a tuple of tensors or arrays), captured and eager, to the bit."""
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_array_equal(_host(a), _host(b), err_msg=f"{msg} result {i}")


def _assert_same_params(a: list[minitorch.Tensor], b: list[minitorch.Tensor]) -> None:
    """To the bit: a replay makes the very calls of the eager step."""
    for i, (p, q) in enumerate(zip(a, b, strict=True)):
        np.testing.assert_array_equal(_host(p), _host(q), err_msg=f"param {i}")


@pytest.mark.parametrize("opt", ["sgd", "adam", "adamw"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_100_replayed_steps_equal_eager_training_to_the_bit(opt: str, dtype: str) -> None:
    eager_ps, eager_opt, eager_step = _model(dtype, opt)
    ps, optimizer, raw_step = _model(dtype, opt)
    step = minitorch.capture(raw_step, optimizer=optimizer)
    for x, y in _batches(100, 8, dtype):
        want = eager_step(x, y)
        got = step(x, y)
        assert got.grad_fn is None and not got.requires_grad
        np.testing.assert_array_equal(_host(got), _host(want))
    # zero_grad comes first: a recording without .grad, then one with it; then replays
    assert step.stats == {"records": 2, "replays": 98, "fallbacks": 0}
    _assert_same_params(ps, eager_ps)
    for p, q in zip(ps, eager_ps, strict=True):
        np.testing.assert_array_equal(_host(p.grad), _host(q.grad))
        assert _is_real_array(p.data, p.backend) and p.data.dtype == q.data.dtype
    state, eager_state = optimizer.state_dict(), eager_opt.state_dict()
    for k, v in eager_state.items():
        if isinstance(v, list) and v and isinstance(v[0], np.ndarray):
            for a, b in zip(state[k], v, strict=True):
                np.testing.assert_array_equal(a, b, err_msg=k)
        else:
            assert state[k] == v, k


class _Counting:
    """The real graph runners of a program, each one made kept in ``made``, and each
    guard's early host read counted in ``reads``."""

    def __init__(self, real: Any, made: list[Any], reads: list[Any]) -> None:
        self.real, self.made, self.reads = real, made, reads

    def __call__(self, fn: Any, keep: tuple[bool, ...]) -> Any:
        self.made.append(self.real(fn, keep))
        return self.made[-1]

    def read_early(self, a: Any) -> Callable[[], Any]:
        self.reads.append(a)
        return self.real.read_early(a)


def _counting_graph_runners(
    monkeypatch: pytest.MonkeyPatch, reads: list[Any] | None = None
) -> list[Any]:
    """The CUDA graph runners the captures below make (skips the test where the backend
    is not on a CUDA device, or has no graph runner: JAX compiles by itself); the
    arrays whose host read a replay started early go to ``reads``."""
    be = minitorch.get_backend()
    # (device_name: CuPy's device reads "<CUDA Device 0>", which the GPU runs skipped)
    if not device_name(be, be.device).startswith("cuda") or be.name not in ("cupy", "torch"):
        pytest.skip(f"needs CuPy or torch on a CUDA device (here: {be.name}, {be.device})")
    capture_module = importlib.import_module("minitorch.capture._captured")
    real = capture_module.graph_runner
    made: list[Any] = []

    def counting(backends: Any, arrays: Any) -> Any:
        factory = real(backends, arrays)
        assert factory is not None, "a CUDA backend must get a graph runner"
        return _Counting(factory, made, [] if reads is None else reads)

    monkeypatch.setattr(capture_module, "graph_runner", counting)
    return made


@pytest.mark.gpu
@pytest.mark.parametrize("opt", ["sgd", "adamw"])
def test_on_a_gpu_100_replayed_steps_train_as_eager(
    opt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On CuPy or torch CUDA, 100 replayed float32 steps leave the parameters within
    1e-6 of eager training (issue #15's criterion). On torch every stretch between the
    guard and the optimizer step is a CUDA graph; on CuPy the stretches with a matrix
    product run eagerly (CuPy refuses cuBLAS during a stream capture)."""
    reads: list[Any] = []
    made = _counting_graph_runners(monkeypatch, reads)
    eager_ps, _, eager_step = _model("float32", opt)
    ps, optimizer, raw_step = _model("float32", opt)
    step = minitorch.capture(raw_step, optimizer=optimizer)
    for x, y in _batches(100, 8, "float32"):
        want = eager_step(x, y)
        got = step(x, y)
        np.testing.assert_allclose(_host(got), _host(want), rtol=1e-6, atol=1e-6)
    assert step.stats == {"records": 2, "replays": 98, "fallbacks": 0}
    # each replay started the target check's host read before the forward pass
    assert len(reads) == 98
    # the runners of the recordings that replayed (the first one never does)
    used = [r for r in made if r.graph is not None or r.eager]
    assert used
    if minitorch.get_backend().name == "torch":
        assert not any(r.eager for r in used)
    else:
        assert all(r.eager for r in used)
    for i, (p, q) in enumerate(zip(ps, eager_ps, strict=True)):
        assert _is_real_array(p.data, p.backend) and p.data.dtype == q.data.dtype
        np.testing.assert_allclose(_host(p), _host(q), rtol=1e-6, atol=1e-6, err_msg=f"{i}")


@pytest.mark.gpu
def test_on_a_gpu_an_elementwise_step_is_one_cuda_graph(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step without matrix products (and a hand-written update, params=) is captured
    as a CUDA graph on CuPy too, and replays it to the bit."""
    made = _counting_graph_runners(monkeypatch)
    w0 = np.linspace(-1.0, 1.0, 12)

    def make(w: minitorch.Tensor) -> Callable[..., minitorch.Tensor]:
        def step(x: minitorch.Tensor) -> minitorch.Tensor:
            loss = ((w * x).tanh() ** 2 + (w - x).exp()).mean()
            loss.backward()
            with minitorch.no_grad():
                w.data = w.data - 0.1 * w.grad
            w.grad = None
            return loss

        return step

    w, w_eager = minitorch.tensor(w0, requires_grad=True), minitorch.tensor(w0, requires_grad=True)
    step, eager = minitorch.capture(make(w), params=[w]), make(w_eager)
    rng = np.random.default_rng(3)
    for _ in range(20):
        x = minitorch.tensor(rng.standard_normal(12))
        np.testing.assert_array_equal(_host(step(x)), _host(eager(x)))
    assert step.stats["replays"] == 19 and step.stats["fallbacks"] == 0
    assert made and all(r.graph is not None and not r.eager for r in made)
    np.testing.assert_array_equal(_host(w), _host(w_eager))


@pytest.mark.gpu
def test_on_a_gpu_a_failed_call_in_a_graph_stretch_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call that fails inside a CUDA graph stretch after the optimizer step is named
    in the OpError (the replay's own line is only the stretch's runner)."""
    _counting_graph_runners(monkeypatch)
    test_an_op_that_fails_after_the_optimizer_step_raises_an_op_error()


@pytest.mark.gpu
def test_on_a_gpu_a_guards_early_host_read_gives_its_value() -> None:
    """The CUDA runners' early host read (a copy to pinned memory and an event) gives
    the value the device array held when the read started, a truth value and an
    integer, with more work queued on the stream after it."""
    be = minitorch.get_backend()
    # (device_name: CuPy's device reads "<CUDA Device 0>", which the GPU runs skipped)
    if not device_name(be, be.device).startswith("cuda") or be.name not in ("cupy", "torch"):
        pytest.skip(f"needs CuPy or torch on a CUDA device (here: {be.name}, {be.device})")
    t = minitorch.tensor([1, 2, 3]).data
    flag, total = be.xp.all(t > 0), be.xp.sum(t)
    graphs = graph_runner([be], [t])
    assert graphs is not None
    wait_flag, wait_total = graphs.read_early(flag), graphs.read_early(total)
    big = minitorch.ones(2048, 2048, dtype="float32").data
    for _ in range(4):  # queued after the reads
        big = be.xp.matmul(big, big) * 1e-3
    assert bool(wait_flag()) is True
    assert operator.index(wait_total()) == 6
    assert float(minitorch.backend.to_host(big)[0, 0]) > 0


def test_decorator_form_and_hand_written_update() -> None:
    """``@capture(params=...)``: a step that updates its parameters by hand (the
    learning rate is a constant of the recording) matches the same loop run eagerly."""
    w0 = np.linspace(-1.0, 1.0, N_IN * N_OUT).reshape(N_IN, N_OUT)
    w, w_eager = minitorch.tensor(w0, requires_grad=True), minitorch.tensor(w0, requires_grad=True)

    def make(w: minitorch.Tensor) -> Callable[..., minitorch.Tensor]:
        def step(x: minitorch.Tensor) -> minitorch.Tensor:
            loss = ((x @ w).tanh() ** 2).mean()
            loss.backward()
            w.data = w.data - 0.1 * w.grad  # by hand, on the arrays
            w.grad = None
            return loss

        return step

    step = minitorch.capture(params=[w])(make(w))
    eager = make(w_eager)
    for x, _ in _batches(20, 5, "float64"):
        np.testing.assert_array_equal(_host(step(x)), _host(eager(x)))
    assert step.stats["replays"] == 19
    np.testing.assert_array_equal(_host(w), _host(w_eager))
    assert w.grad is None


def test_a_new_batch_shape_records_again_and_old_ones_are_kept() -> None:
    eager_ps, _, eager_step = _model("float64")
    ps, optimizer, raw_step = _model("float64")
    step = minitorch.capture(raw_step, optimizer=optimizer)
    big, small = _batches(6, 8, "float64"), _batches(6, 3, "float64", seed=2)
    for i in range(6):
        for x, y in (big[i], small[i]):
            np.testing.assert_array_equal(_host(step(x, y)), _host(eager_step(x, y)))
    # per shape: one recording without .grad (the first call only), one with
    assert step.stats == {"records": 3, "replays": 9, "fallbacks": 0}
    assert step.recordings == 3
    _assert_same_params(ps, eager_ps)


def test_a_changed_parameter_set_records_again() -> None:
    eager_ps, eager_opt, eager_step = _model("float64")
    ps, optimizer, raw_step = _model("float64")
    step = minitorch.capture(raw_step, optimizer=optimizer)
    data = _batches(8, 4, "float64")
    for x, y in data[:4]:
        step(x, y)
        eager_step(x, y)
    replaced, replaced_eager = minitorch.zeros(N_OUT), minitorch.zeros(N_OUT)
    for opt, new, plist in ((optimizer, replaced, ps), (eager_opt, replaced_eager, eager_ps)):
        opt.params[3] = plist[3] = new.requires_grad_()
        opt.state_dict()  # still consistent
    records = step.stats["records"]
    for x, y in data[4:]:
        np.testing.assert_array_equal(_host(step(x, y)), _host(eager_step(x, y)))
    # the new bias is read and written: one recording without its .grad, one with it
    assert step.stats["records"] == records + 2
    _assert_same_params(ps, eager_ps)
    assert not np.array_equal(_host(replaced), np.zeros(N_OUT))


def test_a_tensor_that_gets_a_gradient_but_is_no_parameter_is_refused() -> None:
    ps, optimizer, _ = _model("float64")
    extra = minitorch.Tensor(np.ones(N_OUT), requires_grad=True, name="scale")

    def train_step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
        optimizer.zero_grad()
        loss = minitorch.cross_entropy((x @ ps[0]).relu() @ ps[2] * extra, y)
        loss.backward()
        optimizer.step()
        return loss

    step = minitorch.capture(train_step, optimizer=optimizer)
    x, y = _batches(1, 4, "float64")[0]
    with pytest.raises(CaptureError, match=r"'scale'.*not a parameter.*capture\(params="):
        step(x, y)
    # the tensor holds its real gradient (as eager training would), not a traced stand-in
    assert _is_real_array(extra.grad, extra.backend) and extra.grad.shape == (N_OUT,)
    step = minitorch.capture(train_step, optimizer=optimizer, params=[extra])
    step(x, y)
    step(x, y)
    assert step.stats["replays"] == 1


@pytest.mark.parametrize(
    "form",
    [
        "x @ w",
        "x @ w[:, :2]",
        "x @ w.T.T",
        "x @ (w * 2.0)",
        "x @ -w",
        "x @ (w / 2.0)",
        "x @ w.detach()",
    ],
)
def test_a_tensor_that_requires_grad_is_refused_however_it_is_read(form: str) -> None:
    """The tensor being trained was found only where its array reached a namespace call
    (x @ w): through a view (w[:, :2], w.T) or an operator with a constant first
    (w * 2.0, -w) its array was a constant, and the replays silently kept it."""
    w = minitorch.tensor(np.ones((3, 3)), requires_grad=True)

    def evaluate(x: minitorch.Tensor) -> minitorch.Tensor:
        with minitorch.no_grad():
            out: minitorch.Tensor = eval(form, {"x": x, "w": w})
            return out

    with pytest.raises(CaptureError, match=r"reads 1 tensor\(s\) that require grad but are no"):
        minitorch.capture(evaluate)(minitorch.ones(2, 3))


def test_a_tensor_that_requires_grad_read_as_a_constant_is_refused() -> None:
    """An evaluation step reads the model's weights under no_grad: without params= they
    were constants of the recording, so every replay returned the outputs of the weights
    it was recorded with, however the model trained between calls. A tensor that
    requires grad is being trained: it is refused unless given; given, the replays follow
    it. A constant with requires_grad False (a frozen layer) stays a constant."""
    ps, _, train = _model("float64")

    def evaluate(x: minitorch.Tensor) -> minitorch.Tensor:
        with minitorch.no_grad():
            return (x @ ps[0]).relu() @ ps[2] + ps[3]

    x = _batches(1, 4, "float64", seed=7)[0][0]
    with pytest.raises(CaptureError, match=r"reads 3 tensor\(s\) that require grad but are no"):
        minitorch.capture(evaluate)(x)
    step = minitorch.capture(evaluate, params=ps)
    for i, (xb, yb) in enumerate(_batches(4, 4, "float64")):
        train(xb, yb)
        np.testing.assert_array_equal(_host(step(x)), _host(evaluate(x)), err_msg=f"call {i}")
    assert step.stats == {"records": 1, "replays": 3, "fallbacks": 0}

    frozen = [minitorch.tensor(_host(p)) for p in ps]  # copies: nothing trains them
    fixed = minitorch.capture(lambda x: (x @ frozen[0]).relu() @ frozen[2] + frozen[3])
    for _ in range(2):
        np.testing.assert_array_equal(_host(fixed(x)), _host(evaluate(x)))


#: a host read, and how the refusal names it: as the user wrote it on every backend (the
#: backends reach the array through .detach(), .to_device() or np.asarray, which the
#: message named before)
HOST_READS: dict[str, tuple[Callable[[minitorch.Tensor], Any], str]] = {
    "float": (float, "float(t)"),
    "int": (lambda t: int(t), "int(t)"),
    "item": (lambda t: t.item(), "t.item()"),
    "bool": (lambda t: bool(t > 0), "bool(t) (an `if` or `while` on a tensor)"),
    "numpy": (lambda t: t.numpy(), "t.numpy()"),
    "tolist": (lambda t: t.tolist(), "t.tolist()"),
    "repr": (repr, "print(t), str(t) or repr(t)"),
    "str": (str, "print(t), str(t) or repr(t)"),
    "f-string": (lambda t: f"{t:.4f}", "an f-string of a tensor (f'{t:.4f}')"),
}


@pytest.mark.parametrize("name", HOST_READS)
def test_a_host_read_inside_the_step_is_refused(name: str) -> None:
    read, written = HOST_READS[name]
    ps, optimizer, _ = _model("float64")

    def train_step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
        optimizer.zero_grad()
        loss = minitorch.cross_entropy((x @ ps[0]).relu() @ ps[2], y)
        read(loss)
        loss.backward()
        optimizer.step()
        return loss

    step = minitorch.capture(train_step, optimizer=optimizer)
    x, y = _batches(1, 4, "float64")[0]
    before = [_host(p) for p in ps]
    namespace = dict(vars(ps[0].backend.xp))
    with pytest.raises(CaptureError, match="Move it out of the step") as caught:
        step(x, y)
    assert str(caught.value).startswith(written + " inside a captured step reads"), caught.value
    # everything is as before the call, real arrays; the namespace is the backend's again
    for p, b in zip(ps, before, strict=True):
        assert _is_real_array(p.data, p.backend)
        np.testing.assert_array_equal(_host(p), b)
    assert all(v is namespace[k] for k, v in vars(ps[0].backend.xp).items())
    assert step.stats["records"] == 0


def test_moving_an_argument_inside_the_step_is_refused_by_its_name() -> None:
    """x.to(another backend) inside the step copies through the host: refused, naming
    the move (the message named the backend's .detach(), .to_device() or np.asarray)."""
    here = minitorch.get_backend().name
    other = next(b for b in minitorch.available_backends() if b not in (here, "cupy"))

    def step(x: minitorch.Tensor) -> minitorch.Tensor:
        return x.to(other).sum()

    with pytest.raises(
        CaptureError, match=r"^x\.to\(another backend or device\) inside a captured"
    ):
        minitorch.capture(step)(minitorch.ones(2, 3))


def test_a_method_of_a_backend_array_is_refused_by_name() -> None:
    """p.grad.sum() (a method of the backend array) is not recorded: a CaptureError
    saying to call the namespace's function (it was an AttributeError, no CaptureError),
    which is still an AttributeError, so hasattr() probes of the array libraries work."""
    ps, optimizer, _ = _model("float64")
    seen: list[bool] = []

    def step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
        loss = minitorch.cross_entropy((x @ ps[0]).relu() @ ps[2], y)
        loss.backward()
        seen.append(hasattr(ps[0].grad, "no_such_method"))
        ps[0].grad.reshape(-1)
        optimizer.step()
        return loss

    with pytest.raises(CaptureError, match=r"a\.reshape on a backend array .*xp\.reshape\(a"):
        minitorch.capture(step, optimizer=optimizer)(*_batches(1, 4, "float64")[0])
    assert seen == [False]
    assert all(_is_real_array(p.data, p.backend) for p in ps)


def test_a_host_read_in_a_minitorch_function_names_it() -> None:
    """clip_grad_norm_ over gradients on two backends sums them on the host: refused
    inside a captured step, naming clip_grad_norm_ (the message named a float() the user
    never wrote)."""
    pytest.importorskip("torch")
    made = {}
    for name in ("numpy", "torch"):
        with minitorch.use_backend(name, dtype="float64"):
            made[name] = (minitorch.ones(3), minitorch.ones(3, requires_grad=True))
    (x, w), (xt, v) = made["numpy"], made["torch"]

    def step(x: minitorch.Tensor, xt: minitorch.Tensor) -> Any:
        loss, loss_t = (x * w).sum(), (xt * v).sum()
        loss.backward()
        loss_t.backward()
        minitorch.optim.clip_grad_norm_([w, v], 1.0)
        return loss, loss_t

    with pytest.raises(CaptureError, match=r"in minitorch\.optim\.clip_grad_norm_ inside"):
        minitorch.capture(step, params=[w, v])(x, xt)


def test_indexing_with_integer_tensors_replays_and_a_host_key_is_refused_naming_take() -> None:
    """x[idx], x[rows, cols], x[:, idx] and x[idx, 1:] with integer Tensors gather on
    the device, so a step that indexes with them replays (their range check is a guard)
    and trains as eager; an index out of range runs the call eagerly, which raises the
    eager error before anything is stepped. A Tensor key after None (x[None, idx]) is
    still resolved on the host: refused as the user wrote it, naming take (the message
    named minitorch's internal _host_index, or torch's _to_numpy), which, as it says,
    replays."""
    w0 = np.linspace(-1.0, 1.0, 12).reshape(6, 2)
    rows = [minitorch.tensor(t) for t in ([1, 2, 2, 5], [0, -1, 3, 3], [4, 4, 4, 4])]
    cols = minitorch.tensor([0, 1, -1, 0])

    def indexed(w: minitorch.Tensor, r: minitorch.Tensor) -> minitorch.Tensor:
        return (w[r] ** 2).sum() + w[r, cols].sum() + (w[:, cols] ** 3).sum() + w[r, 1:].sum()

    w, w_eager = (minitorch.tensor(w0, requires_grad=True) for _ in range(2))
    opt, train = _sgd_train(w, lambda r: indexed(w, r))
    step = minitorch.capture(train, optimizer=opt)
    eager = _sgd_train(w_eager, lambda r: indexed(w_eager, r))[1]
    for i, r in enumerate(rows * 2):
        _assert_same_results((step(r),), (eager(r),), f"call {i}")
    assert step.stats == {"records": 1, "replays": 5, "fallbacks": 0}
    np.testing.assert_array_equal(_host(w), _host(w_eager))
    with pytest.raises(IndexError, match=r"axis 0 is out of range \[-6, 6\)"):
        step(minitorch.tensor([0, 6, 1, 1]))
    np.testing.assert_array_equal(_host(w), _host(w_eager))
    assert step.stats["fallbacks"] == 1

    def sliced(w: minitorch.Tensor, r: minitorch.Tensor) -> minitorch.Tensor:
        return (w[None, r] ** 2).sum()

    def taken(w: minitorch.Tensor, r: minitorch.Tensor) -> minitorch.Tensor:
        return (minitorch.take(w, r, axis=0) ** 2).sum()

    opt, train = _sgd_train(w, lambda r: sliced(w, r))
    said = r"^indexing with a boolean mask, or with a Tensor key that is not gathered "
    said += r".*x\[None, idx\]"
    with pytest.raises(CaptureError, match=said + r".* minitorch\.take\("):
        minitorch.capture(train, optimizer=opt)(rows[0])
    opt, train = _sgd_train(w, lambda r: taken(w, r))
    step = minitorch.capture(train, optimizer=opt)
    eager = _sgd_train(w_eager, lambda r: sliced(w_eager, r))[1]
    for i in range(4):
        _assert_same_results((step(rows[0]),), (eager(rows[0]),), f"call {i}")
    assert step.stats["replays"] == 3
    np.testing.assert_array_equal(_host(w), _host(w_eager))


def test_a_call_whose_result_is_a_numpy_scalar_it_was_given_is_no_write() -> None:
    """logical_and of two true 0-d checks on NumPy returns np.True_, the very object it
    was given: the recording took that for a positional out= and refused the step. A
    NumPy scalar cannot be written into; such a step replays and trains as eager."""

    def loss(w: minitorch.Tensor, x: minitorch.Tensor) -> minitorch.Tensor:
        ok = minitorch.logical_and((x > 0).all(), (x < 5).all())
        return (w * minitorch.where(ok, x, 2.0 * x)).sum()

    w, w_eager = (minitorch.tensor(np.ones(3), requires_grad=True) for _ in range(2))
    opt, train = _sgd_train(w, lambda x: loss(w, x))
    step = minitorch.capture(train, optimizer=opt)
    eager = _sgd_train(w_eager, lambda x: loss(w_eager, x))[1]
    for i, x in enumerate(([1.0, 2.0, 3.0], [0.5, 4.0, 1.0], [1.0, 6.0, 1.0], [2.0, 2.0, 2.0])):
        _assert_same_results((step(minitorch.tensor(x)),), (eager(minitorch.tensor(x)),), f"{i}")
    assert step.stats["replays"] == 3
    np.testing.assert_array_equal(_host(w), _host(w_eager))


def test_clipping_class_weights_and_ignored_targets_replay_without_host_reads() -> None:
    """clip_grad_norm_, cross_entropy's class weights and the count of targets kept by
    ignore_index stay on the device (the first versions read the norm, the summed
    weights and the count on the host: clipping and weights were refused, and every
    batch with another count of ignored targets ran eagerly). Batches with a varying
    number of ignored targets replay, equal to eager training to the bit."""
    eager_ps, eager_opt, _ = _model("float64", "adam")
    ps, optimizer, _ = _model("float64", "adam")
    weight = minitorch.tensor(np.linspace(0.5, 2.0, N_OUT))

    def make(ps: list[minitorch.Tensor], opt: Any) -> Callable[..., Any]:
        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> Any:
            opt.zero_grad()
            logits = (x @ ps[0] + ps[1]).relu() @ ps[2] + ps[3]
            loss = minitorch.cross_entropy(logits, y, weight, ignore_index=0)
            loss.backward()
            norm = minitorch.optim.clip_grad_norm_(ps, 0.5)
            opt.step()
            return loss, norm

        return step

    eager, step = (
        make(eager_ps, eager_opt),
        minitorch.capture(make(ps, optimizer), optimizer=optimizer),
    )
    rng = np.random.default_rng(3)
    for x, _ in _batches(8, 6, "float64"):
        y = minitorch.tensor(rng.integers(0, N_OUT, 6))  # 0 is ignored: a varying count
        for got, want in zip(step(x, y), eager(x, y), strict=True):
            np.testing.assert_array_equal(_host(got), _host(want))
        _assert_same_params(ps, eager_ps)
    # a second recording: from the second call on, the gradients are set at the start
    assert step.stats == {"records": 2, "replays": 6, "fallbacks": 0}


def test_what_a_replay_cannot_repeat_is_refused() -> None:
    x = minitorch.tensor(np.linspace(-1.0, 1.0, 12).reshape(3, 4))
    kept: list[minitorch.Tensor] = []

    def masked(x: minitorch.Tensor) -> minitorch.Tensor:
        return x[x > 0].sum()

    def stored(x: minitorch.Tensor) -> minitorch.Tensor:
        y = x * 2
        kept.append(y)
        return y.sum()

    def number(x: minitorch.Tensor) -> Any:
        return 2.0

    for fn, match in (
        (masked, "host"),  # a Tensor key is read on the host
        (stored, "kept outside"),
        (number, "returned float"),
    ):
        with pytest.raises(CaptureError, match=match):
            minitorch.capture(fn)(x)
    # the kept tensor got its real array back
    assert _is_real_array(kept[0].data, kept[0].backend)
    # a kept loss: the message names it, not the arrays its graph keeps (the argument's
    # tensor, the tuples of saved arrays: the first version listed four holders)
    w2 = minitorch.tensor(np.ones((4, 2)), requires_grad=True)
    history: list[minitorch.Tensor] = []

    def logged(x: minitorch.Tensor) -> minitorch.Tensor:
        loss = (x @ w2).sum()
        history.append(loss)
        return loss

    with pytest.raises(CaptureError) as info:
        minitorch.capture(logged, params=[w2])(x)
    message = str(info.value)
    assert "a tensor of shape () computed in the step is kept outside" in message
    assert "history.append(loss)" in message
    assert "tuple" not in message and "(3, 4)" not in message
    w = minitorch.ones(4, requires_grad=True)
    with pytest.raises(CaptureError, match="requires grad"):
        minitorch.capture(lambda t: t.sum())(w)
    with pytest.raises(CaptureError, match=r"Tensors, hashable values .* got ndarray"):
        minitorch.capture(lambda t: t)(np.ones(2))


class _CachedMask:
    """A layer that builds a constant on its first call and keeps it, as an attention
    layer keeps its causal mask: in a Tensor attribute, a raw array attribute, a dict, a
    list and a closure."""

    def __init__(self) -> None:
        self.mask: minitorch.Tensor | None = None
        self.raw: Any = None  # a backend array (the first version left a stand-in here)
        self.by_size: dict[int, Any] = {}
        self.history: list[Any] = []
        self.cell: Callable[[], Any] | None = None

    def __call__(self, h: minitorch.Tensor) -> minitorch.Tensor:
        if self.mask is None:
            self.mask = minitorch.tensor([i % 3 != 0 for i in range(N_HID)]).to(dtype=h.dtype)
            scale = minitorch.arange(N_HID, dtype=h.dtype) / N_HID + 0.5
            self.by_size[N_HID] = scale
            self.history.append(scale.data)
            self.cell = lambda: scale
            self.raw = (scale * 2.0).data
        cached = self.cell()  # type: ignore[misc]
        return h * self.mask * self.by_size[N_HID] + cached - self.raw


def test_a_constant_built_on_the_first_call_and_kept_is_captured() -> None:
    """What the step computes from constants alone is a constant of the recording: a
    layer may keep it (the refusal of a kept value is for values of the step). After
    recording, what it kept holds real arrays, so the layer also runs eagerly; the
    replays equal eager training to the bit."""
    eager_ps, eager_opt, _ = _model("float64")
    ps, optimizer, _ = _model("float64")
    eager_layer, layer = _CachedMask(), _CachedMask()

    def make(ps: list[minitorch.Tensor], opt: Any, layer: _CachedMask) -> Callable[..., Any]:
        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
            h = layer(minitorch.relu(x @ ps[0] + ps[1]))
            loss = minitorch.cross_entropy(h @ ps[2] + ps[3], y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        return step

    eager = make(eager_ps, eager_opt, eager_layer)
    step = minitorch.capture(make(ps, optimizer, layer), optimizer=optimizer)
    for x, y in _batches(6, 4, "float64"):
        np.testing.assert_array_equal(_host(step(x, y)), _host(eager(x, y)))
    assert step.stats == {"records": 1, "replays": 5, "fallbacks": 0}
    _assert_same_params(ps, eager_ps)
    assert layer.mask is not None and layer.cell is not None
    for kept in (
        layer.mask.data,
        layer.by_size[N_HID].data,
        layer.history[0],
        layer.cell().data,
        layer.raw,
    ):
        assert _is_real_array(kept, layer.mask.backend)
    np.testing.assert_array_equal(_host(layer.history[0]), np.arange(N_HID) / N_HID + 0.5)
    # the layer, with what it kept, computes eagerly outside the step
    h = minitorch.ones(2, N_HID, dtype="float64")
    np.testing.assert_array_equal(_host(layer(h)), _host(eager_layer(h)))


def test_what_a_step_must_not_do_to_its_arrays_is_refused() -> None:
    """A new array for a Tensor argument (eagerly the caller's tensor changes; the
    replay would not change it) and a write through ``out=`` (not recorded: the first
    version dropped it from the replay and the parameter stayed where it was) are
    refused; an array of the step kept in an object's attribute is refused and the
    attribute holds the real array afterwards."""
    w = minitorch.tensor(np.ones((2, 2)), requires_grad=True)

    def rebind(x: minitorch.Tensor) -> minitorch.Tensor:
        x.data = x.data * 0.5
        return (x @ w).sum()

    def setitem(x: minitorch.Tensor) -> minitorch.Tensor:
        x[0] = 0.0
        return (x @ w).sum()

    def iadd(x: minitorch.Tensor, *, scale: minitorch.Tensor) -> minitorch.Tensor:
        scale += 1.0
        return (x @ w).sum() * scale.sum()

    x = minitorch.tensor(np.ones((2, 2)))
    for fn, name in ((rebind, "argument 0"), (setitem, "argument 0")):
        with pytest.raises(CaptureError, match=f"gave its Tensor {name} a new array"):
            minitorch.capture(fn, params=[w])(x)
    with pytest.raises(CaptureError, match="gave its Tensor argument 'scale' a new array"):
        minitorch.capture(iadd, params=[w])(x, scale=minitorch.ones(2))
    np.testing.assert_array_equal(_host(x), np.ones((2, 2)))  # what the shadow changed

    def write_out(x: minitorch.Tensor) -> minitorch.Tensor:
        loss = (x @ w).sum()
        loss.backward()
        xp = w.backend.xp
        xp.subtract(w.data, 0.1 * w.grad, out=w.data)
        w.grad = None
        return loss

    if minitorch.get_backend().name == "numpy":  # the namespaces with out=
        with pytest.raises(CaptureError, match=r"subtract\(..., out=...\) inside a captured"):
            minitorch.capture(write_out, params=[w])(x)

    class Holder:
        last: Any = None

    holder = Holder()

    def kept(x: minitorch.Tensor) -> minitorch.Tensor:
        holder.last = (x * 2.0).data
        return x.sum()

    with pytest.raises(CaptureError, match="a Holder outside the step keeps an array"):
        minitorch.capture(kept)(x)
    assert _is_real_array(holder.last, x.backend)


#: namespace calls that write into a parameter's array: (backend, the call, how the
#: refusal names it)
WRITES: dict[str, tuple[str, Callable[[Any, minitorch.Tensor], Any], str]] = {
    "keyword out": (
        "numpy",
        lambda xp, w: xp.subtract(w.data, 0.1 * w.grad, out=w.data),
        r"subtract\(\.\.\., out=\.\.\.\) inside a captured step",
    ),
    "positional out": (
        "numpy",
        lambda xp, w: xp.subtract(w.data, 0.1 * w.grad, w.data),
        r"subtract\(\.\.\., out=\.\.\.\) inside a captured step",
    ),
    "copyto": (
        "numpy",
        lambda xp, w: xp.copyto(w.data, w.data - 0.1 * w.grad),
        r"copyto\(\.\.\.\) wrote into an array it was given inside a captured step",
    ),
    "a positional out of another function": (
        "numpy",
        lambda xp, w: xp.cumsum(w.data - 0.1 * w.grad, 0, None, w.data),
        r"cumsum\(\.\.\.\) wrote into an array it was given",
    ),
    "a ufunc's at": (
        "numpy",
        lambda xp, w: xp.subtract.at(w.data, (slice(None),), 0.1 * w.grad),
        r"subtract\.at\(\.\.\.\) inside a captured step writes into its first argument",
    ),
    "neg_": ("torch", lambda xp, w: xp.neg_(w.data), r"neg_\(\.\.\.\), an in-place function"),
    "clamp_": (
        "torch",
        lambda xp, w: xp.clamp_(w.data, min=0.0),
        r"clamp_\(\.\.\.\), an in-place function",
    ),
}


@pytest.mark.parametrize("name", WRITES)
def test_a_namespace_call_that_writes_into_an_array_is_refused(name: str) -> None:
    """A write through out= (keyword or a ufunc's positional out), np.copyto and torch's
    in-place functions: none is recorded, so the replay dropped them (the parameter
    stayed where the recording left it while eager training moved it on)."""
    backend, write, message = WRITES[name]
    if minitorch.get_backend().name != backend:
        pytest.skip(f"{name} is a function of the {backend} namespace")
    w = minitorch.tensor(np.ones((2, 2)), requires_grad=True)

    def step(x: minitorch.Tensor) -> minitorch.Tensor:
        loss = (x @ w).sum()
        loss.backward()
        write(w.backend.xp, w)
        w.grad = None
        return loss

    with pytest.raises(CaptureError, match=message):
        minitorch.capture(step, params=[w])(minitorch.tensor(np.ones((2, 2))))
    assert _is_real_array(w.data, w.backend)


def test_a_copy_of_a_constant_written_in_place_and_returned_is_captured() -> None:
    """d = c * 1.0; d += x (c a constant tensor): d is the step's own, and returned. The
    recording kept a reference to every tensor an op read, d too, which then looked like
    a tensor of the step kept outside it: refused."""
    c = minitorch.tensor(np.arange(6.0).reshape(2, 3))

    def step(x: minitorch.Tensor) -> minitorch.Tensor:
        d = c * 1.0
        d += x
        return d

    captured = minitorch.capture(step)
    for k in (1.0, 2.0, 3.0):
        x = minitorch.full((2, 3), k)
        np.testing.assert_array_equal(_host(captured(x)), _host(step(x)))
    assert captured.stats["replays"] == 2


def test_an_in_place_write_into_a_constant_array_is_refused() -> None:
    """m = buf.data; m += x.data with buf no parameter: the buffer is a constant of the
    recording and the replays would not update it (eagerly it accumulates). It was a
    bare TypeError on NumPy (naming the traced array) and array-api-strict, and on torch
    the name was silently rebound (the buffer stayed as it was, the recording call
    included). Given to params=, the buffer accumulates at every replay."""
    if not hasattr(type(minitorch.zeros(1).data), "__iadd__"):
        pytest.skip("JAX arrays are not written in place: m += ... rebinds m, eagerly too")
    buf = minitorch.zeros(2)

    def step(x: minitorch.Tensor) -> minitorch.Tensor:
        m = buf.data
        m += x.data
        return x * 2.0

    with pytest.raises(CaptureError, match="writes an array of the step into an array from"):
        minitorch.capture(step)(minitorch.ones(2))
    given = minitorch.capture(step, params=[buf])
    for _ in range(3):
        given(minitorch.ones(2))
    np.testing.assert_array_equal(_host(buf), [3.0, 3.0])  # (refused before it wrote)


def test_a_constant_tensor_given_a_new_array_in_the_step_is_refused() -> None:
    """buf[idx] = rows computed from the step's argument, buf no parameter (a frozen
    embedding table renormalized in place): the replays would read buf's old array
    again. It was refused as a tensor of the step "kept outside it", with the advice to
    return it; the error now says to give it to params=, and given there it follows
    eager steps."""

    def make(buf: minitorch.Tensor) -> Callable[..., minitorch.Tensor]:
        def step(x: minitorch.Tensor, idx: minitorch.Tensor) -> minitorch.Tensor:
            buf[idx] = buf[idx] * 0.5 + x
            return (buf * 2.0).sum()

        return step

    def table() -> minitorch.Tensor:
        return minitorch.tensor(np.arange(8.0).reshape(4, 2))

    x, idx = minitorch.ones(2, 2), minitorch.tensor([3, 1])
    buf = table()
    with pytest.raises(
        CaptureError,
        match=re.escape(
            "a tensor of shape (4, 2) that the step read as a constant (neither an argument "
            "nor a parameter) was given a new array computed in it (t[idx] = v or t += v "
            "under no_grad: a running statistic, an embedding table renormalized in "
            "place): the replay would read its old array again and not update it; give "
            "it to capture(params=[...])"
        ),
    ):
        minitorch.capture(make(buf))(x, idx)
    assert _is_real_array(buf.data, buf.backend)  # as the eager step left it
    np.testing.assert_array_equal(_host(buf), [[0, 1], [2.0, 2.5], [4, 5], [4.0, 4.5]])
    buf, eager_buf = table(), table()
    step, eager = minitorch.capture(make(buf), params=[buf]), make(eager_buf)
    for k in (1, 2, 0):
        idx = minitorch.tensor([k, 3])
        np.testing.assert_array_equal(_host(step(x, idx)), _host(eager(x, idx)))
        np.testing.assert_array_equal(_host(buf), _host(eager_buf))
    assert step.stats["replays"] == 2


def test_a_constant_tensor_assigned_at_a_basic_key_in_the_step_is_refused() -> None:
    """buf[1:3] = x[:2] and buf[0] = v, where buf is no parameter and the value comes
    from the step: refused as a constant given a new array, not written into buf's
    array unseen by the recording (NumPy writes x[key] = v in place eagerly)."""
    for key in (slice(1, 3), 0):
        buf = minitorch.zeros(4)

        def step(x: minitorch.Tensor, buf: minitorch.Tensor = buf, key: Any = key) -> Any:
            buf[key] = x[1:3] if isinstance(key, slice) else x[0] * 2.0
            return (buf * 2.0).sum()

        with pytest.raises(CaptureError, match="read as a constant"):
            minitorch.capture(step)(minitorch.ones(4))


def test_numpys_ix_is_no_in_place_function() -> None:
    """xp.ix_ ends with an underscore as torch's in-place functions do; it was refused."""
    if minitorch.get_backend().name != "numpy":
        pytest.skip("ix_ is NumPy's")

    def step(x: minitorch.Tensor, r: minitorch.Tensor, c: minitorch.Tensor) -> Any:
        rows, cols = x.backend.xp.ix_(r.data, c.data)
        return (x.data * 2.0)[rows, cols]

    captured = minitorch.capture(step)
    r, c = minitorch.tensor([0, 1]), minitorch.tensor([0, 2])
    for k in (1.0, 2.0):
        x = minitorch.tensor(np.full((2, 3), k))
        np.testing.assert_array_equal(captured(x, r, c), step(x, r, c))


def test_a_torch_inference_tensor_in_the_step_is_no_error() -> None:
    """A torch tensor made under torch.inference_mode() has no version counter: reading
    it (to see whether a call wrote into its argument) raised torch's RuntimeError."""
    if minitorch.get_backend().name != "torch":
        pytest.skip("inference tensors are torch's")
    torch = pytest.importorskip("torch")

    w = minitorch.tensor(np.ones((3, 2)), requires_grad=True)
    with torch.inference_mode():
        floor = torch.full((4, 2), 0.5, dtype=w.data.dtype)

    def step(x: minitorch.Tensor) -> minitorch.Tensor:
        return minitorch.maximum(x @ w, floor).sum()

    captured = minitorch.capture(step, params=[w])
    x = minitorch.tensor(np.ones((4, 3)))
    for _ in range(2):
        np.testing.assert_array_equal(_host(captured(x)), _host(step(x)))


def test_a_dict_argument_with_a_nan_key_is_no_change() -> None:
    """The keys of a dict the step is given were compared with !=: a NaN key never
    equals itself, so every such step was refused as changing its dict."""
    captured = minitorch.capture(lambda d: d[math.nan] * 2.0)
    key = math.nan
    np.testing.assert_array_equal(_host(captured({key: minitorch.ones(2)})), [2.0, 2.0])


def test_a_ufuncs_methods_that_make_arrays_are_recorded() -> None:
    """xp.add.reduce and the like (NumPy ufunc methods) are recorded like any call (a
    bare AttributeError inside the step: the recording's stand-in hid them)."""
    if minitorch.get_backend().name not in ("numpy", "jax"):
        pytest.skip("ufunc methods are NumPy's and JAX's")
    w = minitorch.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)

    def step(x: minitorch.Tensor) -> Any:
        xp = x.backend.xp
        return xp.add.reduce(x.data * w.data, axis=1), xp.multiply.outer(x.data[0], x.data[1])

    step_c = minitorch.capture(step, params=[w])
    for k in (1.0, 2.0, 3.0):
        x = minitorch.tensor(np.full((2, 3), k))
        _assert_same_results(step_c(x), step(x))
    assert step_c.stats["replays"] == 2


def test_matmul_in_place_on_an_array_follows_eager() -> None:
    """``d @= r`` on a parameter's array: NumPy and array-api-strict write in place (the
    first version rebound the local name, and the parameter never moved); torch has no
    ``@=``, and Python rebinds the name there, eagerly and in the replay alike."""
    r = np.array([[0.0, 1.0], [1.0, 0.5]])

    def make(w: minitorch.Tensor) -> Callable[..., minitorch.Tensor]:
        def step(x: minitorch.Tensor) -> minitorch.Tensor:
            loss = (x @ w).sum()
            d = w.data
            d @= w.backend.xp.asarray(r, dtype=d.dtype, device=d.device)
            return loss

        return step

    w = minitorch.tensor(np.eye(2), requires_grad=True, dtype="float64")
    w_eager = minitorch.tensor(np.eye(2), requires_grad=True, dtype="float64")
    step, eager = minitorch.capture(make(w), params=[w]), make(w_eager)
    x = minitorch.ones(1, 2, dtype="float64")
    for _ in range(4):
        np.testing.assert_array_equal(_host(step(x)), _host(eager(x)))
        np.testing.assert_array_equal(_host(w), _host(w_eager))
    assert step.stats["replays"] == 3
    if hasattr(type(w.data), "__imatmul__"):
        assert not np.array_equal(_host(w), np.eye(2))


def test_a_value_of_the_step_kept_in_a_list_is_refused_and_given_back() -> None:
    """An array (not a Tensor) of the step kept outside it is refused; the list holds
    the real array afterwards, not a dead stand-in."""
    kept: list[Any] = []

    def step(x: minitorch.Tensor) -> minitorch.Tensor:
        y = x * 2
        kept.append(y.data)
        return y.sum()

    with pytest.raises(CaptureError, match="a list outside the step keeps") as info:
        minitorch.capture(step)(minitorch.tensor(np.ones(3)))
    assert "cell" not in str(info.value)  # only the real holder is named
    assert _is_real_array(kept[0], minitorch.get_backend())
    np.testing.assert_array_equal(_host(kept[0]), [2.0, 2.0, 2.0])


def _inplace_update(w: minitorch.Tensor, x: minitorch.Tensor) -> minitorch.Tensor:
    loss = ((x @ w) ** 2).sum()
    loss.backward()
    data, g = w.data, w.grad
    data -= 0.01 * g  # NumPy, torch, array-api-strict: in place (w moves); JAX: rebinds data
    data *= 0.5
    w.grad = None
    return loss


def test_in_place_operators_on_arrays_behave_as_eagerly() -> None:
    """``a op= b`` on an array inside the step: where the backend writes in place, every
    reference sees it; where it cannot (JAX), only the name is rebound; the replays
    equal the eager function on each backend. On NumPy a float64 operand into a float32
    array keeps float32."""
    w0 = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    for dtype in ("float64", "float32"):
        w = minitorch.tensor(w0, requires_grad=True, dtype=dtype)
        w_eager = minitorch.tensor(w0, requires_grad=True, dtype=dtype)
        step = minitorch.capture(params=[w])(lambda x, w=w: _inplace_update(w, x))
        for k in range(4):
            x = minitorch.tensor(np.full((2, 3), 0.5 + k), dtype=dtype)
            np.testing.assert_array_equal(_host(step(x)), _host(_inplace_update(w_eager, x)))
            np.testing.assert_array_equal(_host(w), _host(w_eager))
        assert step.stats["replays"] == 3 and w.data.dtype == w_eager.data.dtype
    if minitorch.get_backend().name == "numpy":  # a float64 array into a float32 one
        a, b = (minitorch.tensor(np.ones(3), dtype="float32") for _ in range(2))

        def halve(t: minitorch.Tensor, x: minitorch.Tensor) -> minitorch.Tensor:
            data = t.data
            data *= np.asarray([0.5, 0.25, 0.125]) * x.data  # float64: cast back
            return x * 1.0

        step = minitorch.capture(params=[a])(lambda x: halve(a, x))
        for k in range(3):
            x = minitorch.tensor(np.full(3, 1.0 + k), dtype="float32")
            step(x)
            halve(b, x)
            assert a.data.dtype == np.float32
            np.testing.assert_array_equal(_host(a), _host(b))


def test_an_in_place_operator_on_an_array_with_a_view_is_refused() -> None:
    """Eagerly a view taken before ``a op= b`` changes with ``a``; the replay would not
    change it, so the recording refuses (where the backend writes in place at all)."""
    w = minitorch.tensor(np.ones((2, 3)), requires_grad=True)

    def step(x: minitorch.Tensor) -> minitorch.Tensor:
        loss = (x * w).sum()
        loss.backward()
        data = w.data
        row = data[0, :]  # a view, alive while data changes
        data -= w.grad
        w.grad = None
        assert row is not None
        return loss

    writes_in_place = hasattr(type(w.data), "__isub__")
    if writes_in_place:
        with pytest.raises(CaptureError, match="shares memory with another one"):
            minitorch.capture(params=[w])(step)(minitorch.ones(2, 3))
    else:  # JAX: no in-place operator, nothing to refuse
        minitorch.capture(params=[w])(step)(minitorch.ones(2, 3))


def _write_through(w: minitorch.Tensor, x: minitorch.Tensor) -> minitorch.Tensor:
    """A hand-written update that writes into the parameter's and the argument's arrays."""
    xp = w.backend.xp
    loss = ((x @ w) ** 2).sum()
    loss.backward()
    buf = xp.zeros_like(w.data)  # a constant of the recording: fresh zeros every step
    buf += w.grad
    data = w.data
    data -= 0.01 * buf
    w.grad = None
    arg = x.data
    arg *= 0.5  # into the caller's array; nothing in the step reads it again
    return loss


def test_the_same_tensor_passed_twice_may_be_written_in_place() -> None:
    """step(x, x) with x.data *= 0.5 (the documented write into an argument's array):
    refused as a write into 'a view' the user never made; the same array twice is no
    view, and the replays follow eager."""
    if not hasattr(type(minitorch.zeros(1).data), "__imul__"):
        pytest.skip("JAX arrays are not written in place")

    def halve(a: minitorch.Tensor, b: minitorch.Tensor) -> minitorch.Tensor:
        out = (a * b).sum()
        d = a.data
        d *= 0.5
        return out

    step = minitorch.capture(halve)
    x, x_eager = minitorch.tensor([1.0, 2.0]), minitorch.tensor([1.0, 2.0])
    for _ in range(3):
        np.testing.assert_array_equal(_host(step(x, x)), _host(halve(x_eager, x_eager)))
        np.testing.assert_array_equal(_host(x), _host(x_eager))
    assert step.stats["replays"] == 2


def test_an_in_place_write_through_a_second_stand_in_of_an_array_is_kept() -> None:
    """b = xp.asarray(a) returns a itself: two stand-ins of one array. b += 1 moved only
    b's variable on, so nothing read the write and the replays dropped it (a kept its
    old values), where eagerly a sees it."""
    arr = minitorch.zeros(1).data
    if not hasattr(type(arr), "__iadd__") or minitorch.get_backend().xp.asarray(arr) is not arr:
        pytest.skip("asarray(a) is no second name of a here (or arrays are not written in place)")
    w = minitorch.tensor(np.ones(3), requires_grad=True)

    def step(x: minitorch.Tensor) -> minitorch.Tensor:
        xp = x.backend.xp
        a = xp.exp(x.data)
        b = xp.asarray(a)
        b += 1.0
        return minitorch.Tensor._make(a, x.backend, None) + (w * 0.0).sum().detach()

    captured = minitorch.capture(step, params=[w])
    for k in (0.0, 1.0, 2.0):
        x = minitorch.full((3,), k)
        np.testing.assert_array_equal(_host(captured(x)), _host(step(x)))
    assert captured.stats["replays"] == 2


@pytest.mark.parametrize("graphs", [False, True])
def test_in_place_writes_reach_arrays_outside_the_step(
    graphs: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An in-place write into a parameter's array reaches an alias of it kept outside the
    step, and one into an argument's array reaches the caller's, at every replay as
    eagerly (the first version computed them out of place: the alias kept the old values
    and the argument was never written). A constant written in place is not: each
    replay starts from fresh zeros as eager steps do. With CUDA graphs (emulated on
    NumPy) the writes run outside the graphs."""
    if graphs:
        if minitorch.get_backend().name != "numpy":
            pytest.skip("the emulated graph runner holds NumPy buffers")
        capture_module = importlib.import_module("minitorch.capture._captured")
        monkeypatch.setattr(capture_module, "graph_runner", lambda bes, arrays: _EmulatedGraph)
    w0 = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    w = minitorch.tensor(w0, requires_grad=True, dtype="float64")
    w_eager = minitorch.tensor(w0, requires_grad=True, dtype="float64")
    alias, alias_eager = w.data, w_eager.data  # held outside, before any call
    step = minitorch.capture(params=[w])(lambda x: _write_through(w, x))
    for k in range(5):
        x0 = np.full((2, 3), 1.0 + k)
        x, x_eager = minitorch.tensor(x0), minitorch.tensor(x0)
        np.testing.assert_array_equal(_host(step(x)), _host(_write_through(w_eager, x_eager)))
        np.testing.assert_array_equal(_host(w), _host(w_eager))
        np.testing.assert_array_equal(_host(alias), _host(alias_eager))
        np.testing.assert_array_equal(_host(x), _host(x_eager))
    assert step.stats["replays"] == 4
    if hasattr(type(w.data), "__isub__"):  # written in place: the alias followed
        assert w.data is alias
        np.testing.assert_array_equal(_host(x), np.full((2, 3), 2.5))
        assert not np.array_equal(_host(alias), w0)


def _targets_of(h: minitorch.Tensor, thr: minitorch.Tensor) -> minitorch.Tensor:
    """Class targets read off the logits ``h`` (their argmax), a row ignored (-100)
    where its largest logit is not above ``thr``: a target check that depends on ``h``."""
    return minitorch.where(h.max(axis=1) > thr, h.argmax(axis=1), -100)


def test_a_guard_after_an_in_place_write_into_a_parameter_cannot_fall_back() -> None:
    """After a write into a parameter's array, a guard whose value depends on that
    parameter and changes cannot run the step eagerly again (the parameter has moved):
    it raises, as after an optimizer step, and the parameters are those of the eager
    step."""
    w0 = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    w = minitorch.tensor(w0, requires_grad=True, dtype="float64")
    w_eager = minitorch.tensor(w0, requires_grad=True, dtype="float64")

    def make(w: minitorch.Tensor) -> Callable[..., Any]:
        def step(x: minitorch.Tensor, thr: minitorch.Tensor) -> Any:
            loss = ((x @ w) ** 2).sum()
            loss.backward()
            data = w.data
            data -= 0.01 * w.grad
            w.grad = None
            with minitorch.no_grad():
                h = x @ w  # the written parameter: the guard cannot move before the write
                metric = minitorch.cross_entropy(h, _targets_of(h, thr))
            return loss, metric

        return step

    if not hasattr(type(w.data), "__isub__"):
        pytest.skip("JAX arrays are not written in place")
    step, eager = minitorch.capture(make(w), params=[w]), make(w_eager)
    x = minitorch.tensor(np.ones((2, 3)))
    for thr in (-10.0, -20.0):  # every row kept
        step(x, minitorch.tensor(thr))
        eager(x, minitorch.tensor(thr))
    with pytest.raises(CaptureError, match="in-place write into a parameter"):
        step(x, minitorch.tensor(10.0))  # every row ignored: another check
    eager(x, minitorch.tensor(10.0))
    np.testing.assert_array_equal(_host(w), _host(w_eager))


@pytest.mark.parametrize("opt", ["sgd", "adam"])
def test_an_optimizer_step_bound_before_the_capture_is_refused(opt: str) -> None:
    """``opt_step = opt.step`` taken before the capture (a trainer keeps it) reaches the
    real step(), not the capture's stand-in: SGD was traced with its learning rate as a
    constant, so a schedule between calls was silently ignored; Adam was refused with a
    message to give the optimizer, which had been given."""
    ps, optimizer, _ = _model("float64", opt)
    opt_step = optimizer.step

    def train_step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
        optimizer.zero_grad()
        loss = minitorch.cross_entropy((x @ ps[0]).relu() @ ps[2], y)
        loss.backward()
        opt_step()
        return loss

    step = minitorch.capture(train_step, optimizer=optimizer)
    x, y = _batches(1, 4, "float64")[0]
    name = "SGD" if opt == "sgd" else "Adam"
    with pytest.raises(CaptureError, match=rf"{name}\.step\(\) ran on the step's arrays"):
        step(x, y)
    assert all(_is_real_array(p.data, p.backend) for p in ps)


def test_an_optimizer_not_given_to_the_capture_is_refused() -> None:
    """An optimizer whose tensors were given with params= (as the refusal of a tensor
    that gets a gradient suggests) but not the optimizer itself: its step() was traced,
    its learning rate frozen, so a schedule between calls was silently ignored."""
    ps, _, train_step = _model("float64")
    step = minitorch.capture(train_step, params=ps)
    with pytest.raises(CaptureError, match=r"SGD\.step\(\) ran inside the captured step, but its"):
        step(*_batches(1, 4, "float64")[0])
    assert all(_is_real_array(p.data, p.backend) for p in ps)


def test_a_user_optimizer_not_given_to_the_capture_is_refused() -> None:
    """A subclass of minitorch's Optimizer, its tensors given with params=: traced, its
    learning rate frozen (only the step functions of minitorch.optim were looked for)."""

    class SignSGD(minitorch.optim.Optimizer):
        _hyper = ("lr",)

        def _check(self, hyper: Any) -> dict[str, Any]:
            return {"lr": float(hyper["lr"])}

        def step(self) -> None:
            for p in self.params:
                if p.grad is not None:
                    p.data = p.data - self.lr * p.backend.xp.sign(p.grad)

    ps, _, _ = _model("float64")
    opt = SignSGD(ps, lr=0.1)
    train = _train(ps, opt)

    with pytest.raises(CaptureError, match=r"SignSGD\.step\(\) ran inside the captured step"):
        minitorch.capture(train, params=ps)(*_batches(1, 4, "float64")[0])
    step = minitorch.capture(train, optimizer=opt)  # given: its step runs at each replay
    for x, y in _batches(3, 4, "float64"):
        step(x, y)
        opt.lr *= 0.5
    assert step.stats["replays"] == 1  # (records with and without .grad)


def test_a_decorator_shared_by_an_optimizer_step_and_the_model_is_no_false_alarm() -> None:
    """A decorator without functools.wraps on an optimizer's step and on the model's
    forward: its wrapper's code is one for both, so the forward looked like the step
    reached through a reference taken before the capture."""

    def timed(f: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return f(*args, **kwargs)

        return wrapper

    class TimedSGD(minitorch.optim.SGD):
        @timed
        def step(self) -> None:
            super().step()

    eager_ps, ps = _model("float64")[0], _model("float64")[0]

    def make(ps: list[minitorch.Tensor]) -> tuple[Any, Callable[..., Any]]:
        opt = TimedSGD(ps, lr=0.1)

        @timed
        def forward(x: minitorch.Tensor) -> minitorch.Tensor:
            return (x @ ps[0]).relu() @ ps[2]

        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
            loss = minitorch.cross_entropy(forward(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        return opt, step

    opt, train = make(ps)
    step, eager = minitorch.capture(train, optimizer=opt), make(eager_ps)[1]
    for x, y in _batches(3, 4, "float64"):
        np.testing.assert_array_equal(_host(step(x, y)), _host(eager(x, y)))
    _assert_same_params(ps, eager_ps)


def test_an_optimizers_own_error_in_a_replay_is_raised_as_it_is() -> None:
    """An optimizer whose step() raises (a non-finite gradient: skip the batch): the
    replay wrapped it in an OpError about a failed call, which the loop's handler did
    not catch; it is raised as eagerly."""

    class CheckedSGD(minitorch.optim.SGD):
        def step(self) -> None:
            for p in self.params:
                if p.grad is not None and not bool(p.backend.xp.all(p.backend.xp.isfinite(p.grad))):
                    raise FloatingPointError("a gradient is not finite")
            super().step()

    ps, _, _ = _model("float64")
    opt = CheckedSGD(ps, lr=0.1)
    train = _train(ps, opt)

    step = minitorch.capture(train, optimizer=opt)
    (x, y), (x2, y2) = _batches(2, 4, "float64")
    step(x, y)
    step(x, y)
    bad = minitorch.tensor(np.where(_host(x2) > 0, np.inf, _host(x2)))
    with pytest.raises(FloatingPointError, match="not finite"), np.errstate(all="ignore"):
        step(bad, y2)


def test_an_optimizer_step_decorated_with_no_grad_is_no_false_alarm() -> None:
    """``@minitorch.no_grad()`` on an optimizer's step (PyTorch's idiom) and on a metric
    helper: the decorator's wrapper is one code object for every decorated function, so
    the metric was refused as a step reached through a reference taken before the
    capture. Now both replay equal to eager."""

    class MySGD(minitorch.optim.SGD):
        @minitorch.no_grad()
        def step(self) -> None:
            super().step()

    @minitorch.no_grad()
    def accuracy(logits: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
        return (minitorch.argmax(logits, axis=-1) == y).astype("float64").mean()

    def make(ps: list[minitorch.Tensor]) -> tuple[Any, Callable[..., Any]]:
        opt = MySGD(ps, lr=0.1)

        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> Any:
            logits = (x @ ps[0]).relu() @ ps[2]
            loss = minitorch.cross_entropy(logits, y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss, accuracy(logits, y)

        return opt, step

    eager_ps, ps = _model("float64")[0], _model("float64")[0]
    opt, train = make(ps)
    step, eager = minitorch.capture(train, optimizer=opt), make(eager_ps)[1]
    for i, (x, y) in enumerate(_batches(4, 8, "float64")):
        _assert_same_results(step(x, y), eager(x, y), f"call {i}")
    _assert_same_params(ps, eager_ps)
    assert step.stats["replays"] == 3


def test_a_step_that_changes_its_optimizers_learning_rate_is_refused() -> None:
    """A schedule advanced inside the step would run only while recording: refused,
    naming the hyper-parameter; the same schedule between calls is honoured."""
    eager_ps, eager_opt, eager_raw = _model("float64", "adam")
    ps, optimizer, raw = _model("float64", "adam")

    def scheduled(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
        loss = raw(x, y)
        optimizer.lr *= 0.5
        return loss

    batches = _batches(4, 4, "float64")
    with pytest.raises(CaptureError, match=r"changed its optimizer's lr \(0.01 -> 0.005\)"):
        minitorch.capture(scheduled, optimizer=optimizer)(*batches[0])
    optimizer.lr = 0.01
    eager_raw(*batches[0])  # both have taken the first step
    step = minitorch.capture(raw, optimizer=optimizer)
    for x, y in batches[1:]:
        np.testing.assert_array_equal(_host(step(x, y)), _host(eager_raw(x, y)))
        optimizer.lr *= 0.5
        eager_opt.lr *= 0.5
    # the refused call left gradients set: one recording (with them), then replays
    assert step.stats == {"records": 1, "replays": 2, "fallbacks": 0}
    _assert_same_params(ps, eager_ps)


def test_tensor_ops_on_arrays_computed_in_the_step_are_recorded() -> None:
    """Arrays of the step (``p.grad`` inside the step, what a VJP saved) meet Tensors in
    PyTorch-style updates, in a gradient clipped by a tensor and assigned to ``.grad``,
    and in a gradient penalty through ``cross_entropy`` (its VJP mixes saved arrays with
    Tensors): each replays as eager steps run (the first version refused them as host
    reads, or as a wrong type for ``.grad``)."""

    def make(kind: str, ps: list[minitorch.Tensor], opt: Any) -> Callable[..., Any]:
        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
            opt.zero_grad()
            logits = minitorch.relu(x @ ps[0] + ps[1]) @ ps[2] + ps[3]
            loss = minitorch.cross_entropy(logits, y)
            if kind == "penalty":
                (g,) = minitorch.autograd.grad(loss, [ps[2]], create_graph=True)
                (loss + 0.1 * (g * g).sum()).backward()
            else:
                loss.backward()
            if kind == "clip":
                for p in ps:
                    xp = p.backend.xp
                    norm = xp.sqrt(xp.sum(p.grad * p.grad))
                    p.grad = p.grad * xp.minimum(1.0, 0.5 / (norm + 1e-12))
            if kind == "by_hand":
                with minitorch.no_grad():
                    for p in ps:
                        p -= 0.05 * p.grad
                        p.grad = None
            else:
                opt.step()
            return loss

        return step

    for kind in ("by_hand", "clip", "penalty"):
        eager_ps, eager_opt, _ = _model("float64")
        ps, optimizer, _ = _model("float64")
        eager = make(kind, eager_ps, eager_opt)
        step = minitorch.capture(make(kind, ps, optimizer), optimizer=optimizer, params=ps)
        for x, y in _batches(5, 4, "float64"):
            np.testing.assert_array_equal(_host(step(x, y)), _host(eager(x, y)), err_msg=kind)
        assert step.stats["replays"] >= 3, kind
        _assert_same_params(ps, eager_ps)


def test_a_guard_after_the_optimizer_step_on_the_targets_alone_falls_back() -> None:
    """A metric after opt.step() checks its targets on the host (are they all in range,
    or is one ignored?). That check reads only the targets, so the replay makes it before
    the optimizer's step: when it changes, the call runs eagerly, as any guard does (the
    check stayed after the step before: the call raised, and the gradients the step
    would have cleared stayed set, so the next calls trained on stale gradients)."""
    eager_ps, eager_opt, _ = _model("float64")
    ps, optimizer, _ = _model("float64")

    def make(ps: list[minitorch.Tensor], opt: Any) -> Callable[..., Any]:
        def step(x: minitorch.Tensor, y: minitorch.Tensor, t: minitorch.Tensor) -> Any:
            loss = minitorch.cross_entropy((x @ ps[0]).relu() @ ps[2], y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            with minitorch.no_grad():
                metric = minitorch.cross_entropy((x @ ps[0]).relu() @ ps[2], t)
            return loss, metric

        return step

    eager, step = (
        make(eager_ps, eager_opt),
        minitorch.capture(make(ps, optimizer), optimizer=optimizer),
    )
    x = _batches(1, 4, "float64")[0][0]
    y = minitorch.tensor([1, 2, 3, 1])
    targets = ([1, 2, 3, 1], [1, 2, 3, 2], [-100, 2, 3, 1], [2, 2, 3, 2], [-100, 2, -100, 1])
    for i, t in enumerate(targets):  # in range, in range, one ignored, ...
        _assert_same_results(
            step(x, y, minitorch.tensor(t)), eager(x, y, minitorch.tensor(t)), f"call {i}"
        )
        _assert_same_params(ps, eager_ps)
        assert all(p.grad is None for p in ps)
    assert step.stats == {"records": 1, "replays": 2, "fallbacks": 2}


def test_a_guard_reading_what_the_optimizer_step_writes_in_place_stays_after_it() -> None:
    """An optimizer that zeroes each gradient in place in its step(), and a metric after
    the step whose targets are read off that gradient: the guard (the target check) was
    moved before the step, where the gradient was not zeroed yet, and the metric was
    silently wrong. Arrays handed to an optimizer's step count as written."""

    class SGDZero(minitorch.optim.SGD):
        def step(self) -> None:
            super().step()
            for p in self.params:
                if p.grad is not None and hasattr(type(p.grad), "__imul__"):
                    g = p.grad
                    g *= 0

    if not hasattr(type(minitorch.zeros(1).data), "__imul__"):
        pytest.skip("JAX arrays are not written in place")

    def make(w: minitorch.Tensor) -> tuple[Any, Callable[..., Any]]:
        opt = SGDZero([w], lr=0.1)

        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> Any:
            logits = x @ w
            loss = minitorch.cross_entropy(logits, y)
            loss.backward()
            g = minitorch.Tensor._make(w.grad, w.backend, None)  # zeroed in place by the step
            opt.step()
            keep = (minitorch.abs(g).sum(axis=0) == 0) & (minitorch.arange(3) != 2)
            y2 = minitorch.where(minitorch.take(keep, y, axis=0), y, -100)
            return loss, minitorch.cross_entropy(logits.detach(), y2, reduction="sum")

        return opt, step

    w0 = np.random.default_rng(1).standard_normal((4, 3))
    w, w_eager = (minitorch.tensor(w0, dtype="float64", requires_grad=True) for _ in range(2))
    opt, train = make(w)
    step, eager = minitorch.capture(train, optimizer=opt), make(w_eager)[1]
    rng = np.random.default_rng(0)
    for i in range(4):
        x = minitorch.tensor(rng.standard_normal((6, 4)), dtype="float64")
        y = minitorch.tensor(rng.integers(0, 3, 6))
        _assert_same_results(step(x, y), eager(x, y), f"call {i}")


def test_a_guard_reading_an_alias_written_in_place_stays_after_the_write() -> None:
    """view = w.detach() taken before the call, an in-place update of w's array in the
    step, then a metric whose targets come from the alias: the target check, argmax and
    matmul were moved before the write (the alias's array is a constant of the recording,
    no variable), so the metric used the weights before the update, silently."""
    if not hasattr(type(minitorch.zeros(1).data), "__isub__"):
        pytest.skip("JAX arrays are not written in place")
    results = []
    for captured in (False, True):
        rng = np.random.default_rng(0)
        w = minitorch.tensor(rng.standard_normal((4, 3)), dtype="float64", requires_grad=True)
        view = w.detach()  # follows the in-place writes into w's array

        def step(
            x: minitorch.Tensor,
            y: minitorch.Tensor,
            w: minitorch.Tensor = w,
            view: minitorch.Tensor = view,
        ) -> Any:
            logits = x @ w
            loss = minitorch.cross_entropy(logits, y)
            loss.backward()
            d = w.data
            d -= 0.5 * w.grad
            w.grad = None
            pseudo = minitorch.argmax(x @ view, axis=1)
            return loss, minitorch.cross_entropy(logits.detach(), pseudo)

        run = minitorch.capture(step, params=[w]) if captured else step
        out = []
        for _ in range(5):
            x = minitorch.tensor(rng.standard_normal((6, 4)), dtype="float64")
            out.append(_host(run(x, minitorch.tensor(rng.integers(0, 3, 6)))[1]))
        results.append(out)
    for i, (a, b) in enumerate(zip(*results, strict=True)):
        np.testing.assert_array_equal(a, b, err_msg=f"call {i}")


def test_a_guard_after_the_optimizer_step_that_changes_raises_and_records_again() -> None:
    """A guard after opt.step() on values the step changed (targets read off the updated
    model) cannot fall back: the parameters have moved. It raises, having stepped as
    eager does, and drops the recording."""
    eager_ps, eager_opt, _ = _model("float64")
    ps, optimizer, _ = _model("float64")

    def make(ps: list[minitorch.Tensor], opt: Any) -> Callable[..., Any]:
        def step(x: minitorch.Tensor, y: minitorch.Tensor, thr: minitorch.Tensor) -> Any:
            opt.zero_grad()
            loss = minitorch.cross_entropy((x @ ps[0]).relu() @ ps[2], y)
            loss.backward()
            opt.step()
            with minitorch.no_grad():
                h = (x @ ps[0]).relu() @ ps[2]
                metric = minitorch.cross_entropy(h, _targets_of(h, thr))
            return loss, metric

        return step

    eager, step = (
        make(eager_ps, eager_opt),
        minitorch.capture(make(ps, optimizer), optimizer=optimizer),
    )
    x = _batches(1, 4, "float64")[0][0]
    y = minitorch.tensor([1, 2, 3, 1])
    for thr in (-50.0, -60.0, -70.0):  # every row kept: record, record, replay
        step(x, y, minitorch.tensor(thr))
        eager(x, y, minitorch.tensor(thr))
    thr = minitorch.tensor(50.0)  # every row ignored: the metric's check differs
    with pytest.raises(CaptureError, match="the optimizer has stepped"):
        step(x, y, thr)
    eager(x, y, thr)
    _assert_same_params(ps, eager_ps)  # both stepped
    assert step.recordings == 1  # the one made without gradients is kept
    step(x, y, thr)  # records again
    assert step.recordings == 2 and step.stats["records"] == 3


def test_a_guard_failing_after_an_sgd_step_that_overwrote_the_gradients_leaves_none() -> None:
    """Plain SGD, ``zero_grad()`` right after its step, then a metric whose target check
    reads the updated model: where that check changes, the replay raises, and the
    gradients SGD wrote ``lr * grad`` into are gone (None, as ``zero_grad()`` had left
    them eagerly), not left in ``.grad``."""
    ps, opt, _ = _sgd_step("zero_grad after")
    eager_ps, eager_opt, _ = _sgd_step("zero_grad after")

    def make(ps: list[minitorch.Tensor], opt: Any) -> Callable[..., Any]:
        def step(x: minitorch.Tensor, y: minitorch.Tensor, thr: minitorch.Tensor) -> Any:
            loss = minitorch.cross_entropy(x @ ps[0] + (x * x) @ ps[1], y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            with minitorch.no_grad():
                h = x @ ps[0] + (x * x) @ ps[1]
                metric = minitorch.cross_entropy(h, _targets_of(h, thr))
            return loss, metric

        return step

    eager, step = make(eager_ps, eager_opt), minitorch.capture(make(ps, opt), optimizer=opt)
    x, y = _batches(1, 4, "float32")[0]
    for thr in (-50.0, -60.0):  # every row kept: record, replay
        step(x, y, minitorch.tensor(thr))
        eager(x, y, minitorch.tensor(thr))
    scratch = minitorch.get_backend().name == "numpy"
    assert (_SCRATCH in step.source()[0]) == scratch
    thr = minitorch.tensor(50.0)  # every row ignored: the metric's check differs
    with pytest.raises(CaptureError, match="the optimizer has stepped"):
        step(x, y, thr)
    eager(x, y, thr)
    _assert_same_params(ps, eager_ps)
    if scratch:  # (elsewhere .grad keeps the gradients the step used: documented)
        assert all(p.grad is None for p in ps)


def test_a_guard_falls_back_to_eager_when_an_op_reads_another_value() -> None:
    """cross_entropy checks on the host that its targets are in range (and, where one
    is not, that it is ignored): a batch with an ignored target, where the recording
    had none, runs eagerly (same values); a batch like the recording's replays."""
    eager_ps, eager_opt, _ = _model("float64")
    ps, optimizer, _ = _model("float64")

    eager = _train(eager_ps, eager_opt)
    step = minitorch.capture(_train(ps, optimizer), optimizer=optimizer)
    # an ignored target (-100) or none -> record, replay, eager, eager, replay, eager
    ys = [
        [1, 2, 3, 1],
        [1, 2, 3, 0],
        [-100, 2, 3, 1],
        [-100, 2, 3, -100],
        [1, 1, 1, 1],
        [3, -100, 2, 1],
    ]
    x = _batches(1, 4, "float64")[0][0]
    for y in ys:
        t = minitorch.tensor(y)
        np.testing.assert_array_equal(_host(step(x, t)), _host(eager(x, t)))
    assert step.stats == {"records": 1, "replays": 2, "fallbacks": 3}
    _assert_same_params(ps, eager_ps)


def test_a_guard_that_changes_on_most_calls_warns_once() -> None:
    """Recorded on a batch without ignored targets, then 12 batches with one: each runs
    eagerly, and after 10 of them (a majority) one RuntimeWarning says so."""
    _, optimizer, raw_step = _model("float64")
    step = minitorch.capture(raw_step, optimizer=optimizer)
    x, _ = _batches(1, 4, "float64")[0]
    step(x, minitorch.tensor([1, 2, 3, 1]))
    step(x, minitorch.tensor([1, 2, 3, 0]))  # with gradients: the kept recording
    with pytest.warns(RuntimeWarning, match="10 of 10 calls ran eagerly") as seen:
        for _ in range(12):
            step(x, minitorch.tensor([-100, 2, 3, 1]))
    assert len(seen) == 1
    assert step.stats == {"records": 2, "replays": 0, "fallbacks": 12}


def test_a_guard_lets_the_op_raise_as_eager_does() -> None:
    """The recording saw targets in range; a replay on an out-of-range target runs the
    step eagerly, which raises cross_entropy's own error (no silent garbage)."""
    _, optimizer, raw_step = _model("float64")
    step = minitorch.capture(raw_step, optimizer=optimizer)
    x, y = _batches(1, 4, "float64")[0]
    step(x, y)
    step(x, y)
    with pytest.raises(minitorch.OpError, match="targets must lie in"):
        step(x, minitorch.tensor([0, 1, 7, 2]))


def _guard_and_check_lines(source: str) -> tuple[int, int, list[int]]:
    """In a replay's source: the line of its one guard, the line that makes the value
    the guard reads, and the lines that call something (not a parameter's read)."""
    lines = source.splitlines()
    guard = next(i for i, ln in enumerate(lines) if "raise GuardFailed" in ln) - 1
    # `C(v15)`, or on CUDA `C(r15())`: r15 waits for the host read of v15 started earlier
    var = re.search(r"\([vr](\d+)(?:\(\))?\)", lines[guard])
    assert var is not None, lines[guard]
    made = next(i for i, ln in enumerate(lines) if re.match(rf"\s*v{var[1]},? += ", ln))
    calls = [
        i
        for i, ln in enumerate(lines)
        if re.match(r"\s*v\d+(, v\d+)*,? +=", ln) and not re.search(r"= P\d+\.", ln)
    ]
    return guard, made, calls


def test_a_guards_calls_run_first_and_the_guard_stays_where_it_was() -> None:
    """cross_entropy's target check reads only the targets: the replay makes it before
    the forward pass, and checks its value where the op read it (on CUDA the host read
    starts first and is waited for after the forward pass is queued, so the GPU works
    while the host waits). It trains as eager does, and an out-of-range target still
    raises cross_entropy's own error before anything is stepped."""
    eager_ps, _, eager_step = _model("float64")
    ps, optimizer, raw_step = _model("float64")
    step = minitorch.capture(raw_step, optimizer=optimizer)
    for i, (x, y) in enumerate(_batches(4, 4, "float64")):
        _assert_same_results((step(x, y),), (eager_step(x, y),), f"call {i}")
    _assert_same_params(ps, eager_ps)
    assert step.stats == {"records": 2, "replays": 2, "fallbacks": 0}
    source = step.source()[-1]
    guard, made, calls = _guard_and_check_lines(source)
    # the check first, then the forward pass (matmul, add, relu, matmul, add), the guard;
    # on CUDA the forward pass is one graph, queued after the host read has started
    assert made == calls[0], source
    between = [i for i in calls if made < i < guard]
    started = [i for i, ln in enumerate(source.splitlines()) if "start the host read" in ln]
    assert len(between) >= (1 if started else 5), source
    assert all(made < i < between[0] for i in started), source
    before = [_host(p) for p in ps]
    with pytest.raises(minitorch.OpError, match="targets must lie in"):
        step(x, minitorch.tensor([0, 1, 7, 2]))
    for p, b in zip(ps, before, strict=True):
        np.testing.assert_array_equal(_host(p), b)


def test_an_op_that_fails_on_a_replays_values_raises_the_eager_error() -> None:
    """A library error raised inside a replay before anything changed (cholesky of a
    matrix that is not positive definite) runs the step eagerly, which raises
    minitorch's OpError naming the op and its inputs: the replay raised the library's
    bare exception (numpy's LinAlgError), which ``except minitorch.OpError`` missed.
    cholesky checks its factor with one host read where it is good (CuPy factors a
    singular matrix, JAX returns nan): one guard of the recording, one GPU sync (it
    made two; PyTorch's own cholesky syncs once too)."""
    w = minitorch.tensor(np.ones(3), dtype="float64", requires_grad=True)
    optimizer = minitorch.optim.SGD([w], lr=0.1)

    def train_step(a: minitorch.Tensor) -> minitorch.Tensor:
        loss = ((minitorch.linalg.cholesky(a) @ w) ** 2).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    step = minitorch.capture(train_step, optimizer=optimizer)
    good = minitorch.tensor(np.eye(3) * 2.0, dtype="float64")
    step(good)
    step(good)
    assert step.source()[-1].count("raise GuardFailed") == 1
    before = _host(w)
    with pytest.raises(minitorch.OpError, match=r"cholesky .*not positive definite"):
        step(minitorch.tensor(-np.eye(3), dtype="float64"))
    np.testing.assert_array_equal(_host(w), before)  # nothing stepped
    assert w.grad is None
    step(good)
    assert step.stats == {"records": 1, "replays": 2, "fallbacks": 1}


def test_an_op_that_fails_after_the_optimizer_step_raises_an_op_error() -> None:
    """cholesky of the updated parameter in a metric after opt.step(): the replay cannot
    run the step again (the parameter has moved), and it raised the library's bare
    error (numpy's LinAlgError), which ``except minitorch.OpError`` missed. It raises an
    OpError naming the failed call; the parameter has moved as eagerly."""

    def make(w: minitorch.Tensor) -> Callable[..., Any]:
        opt = minitorch.optim.SGD([w], lr=1.0)

        def step(x: minitorch.Tensor) -> Any:
            loss = (x @ w).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            with minitorch.no_grad():
                logdet = 2.0 * minitorch.log(minitorch.diagonal(minitorch.linalg.cholesky(w))).sum()
            return loss, logdet

        step.opt = opt  # type: ignore[attr-defined]
        return step

    w, w_eager = (
        minitorch.tensor(np.eye(2) * 2.0, dtype="float64", requires_grad=True) for _ in "ab"
    )
    train = make(w)
    step, eager = minitorch.capture(train, optimizer=train.opt), make(w_eager)  # type: ignore[attr-defined]
    x = minitorch.tensor([[0.5, 0.5]], dtype="float64")
    step(x)  # w: [[1.5, -0.5], [-0.5, 1.5]], records
    eager(x)
    with pytest.raises(minitorch.OpError, match="cholesky") as info:
        eager(x)  # w: [[1, -1], [-1, 1]], not positive definite
    if minitorch.get_backend().name in ("jax", "cupy"):
        # they factor it without complaint; minitorch's check reads the host: a guard
        with pytest.raises(CaptureError, match="the optimizer has stepped"):
            step(x)
    else:
        with pytest.raises(minitorch.OpError, match=r"after the optimizer's step .*# \w*cholesky`"):
            step(x)
    np.testing.assert_array_equal(_host(w), _host(w_eager))
    assert info.value is not None


def test_a_replay_that_fails_where_the_eager_step_does_not_says_so() -> None:
    """If the replay itself fails before changing anything while the eager step runs (a
    defect of the capture: a CUDA graph that cannot be made, say), the call runs eagerly
    and a RuntimeWarning says so, rather than passing for an error of the data."""
    eager_ps, _, eager_step = _model("float64")
    ps, optimizer, train_step = _model("float64")
    step = minitorch.capture(train_step, optimizer=optimizer)
    batches = _batches(3, 4, "float64")
    for x, y in batches[:2]:
        step(x, y)
        eager_step(x, y)
    scope: dict[str, Any] = {}
    exec(
        compile("def replay(*a):\n    raise RuntimeError('boom')\n", "<minitorch.capture>", "exec"),
        scope,
    )
    for prog in step._programs.values():
        prog.run = scope["replay"]
    x, y = batches[2]
    with pytest.warns(
        RuntimeWarning, match="the replay raised RuntimeError: boom, where the eager"
    ):
        got = step(x, y)
    np.testing.assert_array_equal(_host(got), _host(eager_step(x, y)))
    _assert_same_params(ps, eager_ps)
    assert step.stats["fallbacks"] == 1


def test_inputs_are_not_mutated_and_results_not_reused() -> None:
    ps, optimizer, raw_step = _model("float64")

    def train_step(x: minitorch.Tensor, y: minitorch.Tensor) -> dict[str, Any]:
        loss = raw_step(x, y)
        return {"loss": loss, "pair": (loss * 2, None)}

    step = minitorch.capture(train_step, optimizer=optimizer)
    data = _batches(4, 4, "float64")
    x_before = [_host(x).copy() for x, _ in data]
    results = [step(x, y) for x, y in data]
    assert step.stats["replays"] == 2
    for (x, _), before in zip(data, x_before, strict=True):
        np.testing.assert_array_equal(_host(x), before)
        assert not x.requires_grad and x.grad is None
        assert all(x.data is not p.data for p in ps)
    losses = [_host(r["loss"]) for r in results]
    assert len({float(v) for v in losses}) == 4  # each call its own array, not one reused
    for r in results:
        np.testing.assert_allclose(_host(r["pair"][0]), 2 * _host(r["loss"]), rtol=1e-15)
        assert r["pair"][1] is None
    assert results[2]["loss"].data is not results[3]["loss"].data


def test_dead_code_is_dropped_from_the_replay() -> None:
    x = minitorch.tensor(np.ones((3, 4)))
    w = minitorch.tensor(np.full((4, 2), 0.5), requires_grad=True)

    def lean(x: minitorch.Tensor) -> minitorch.Tensor:
        return (x @ w).tanh().sum()

    def wasteful(x: minitorch.Tensor) -> minitorch.Tensor:
        (x * 3).exp().mean()  # nothing uses it
        return (x @ w).tanh().sum()

    sources = []
    for fn in (lean, wasteful):
        step = minitorch.capture(fn, params=[w])
        values = [_host(step(x)) for _ in range(2)]  # x @ w is 2.0 everywhere
        np.testing.assert_allclose(values, np.full(2, 6 * np.tanh(2.0)), rtol=1e-12)
        assert step.stats["replays"] == 1
        sources.append(step.source()[0])
    assert len(sources[0].splitlines()) == len(sources[1].splitlines())
    assert "exp" not in sources[1] and sources[1].count("(") == sources[0].count("(")


def test_capture_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match="optimizer 0 must be a minitorch optimizer"):
        minitorch.capture(lambda: None, optimizer=object())
    with pytest.raises(ValueError, match="max_recordings"):
        minitorch.capture(lambda: None, max_recordings=0)
    step = minitorch.capture(lambda t: (t * 2).sum())

    def outer(t: minitorch.Tensor) -> minitorch.Tensor:
        return step(t)

    with pytest.raises(CaptureError, match="do not nest"):
        minitorch.capture(outer)(minitorch.ones(2))


def test_the_docs_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    """docs/capture.md's example, as written (NumPy, float32)."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "capture.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S)
    assert code is not None
    with minitorch.use_backend("numpy"):
        exec(compile(code.group(1), "docs/capture.md", "exec"), {})
    out = capsys.readouterr().out
    assert "{'records': 1, 'replays': 2, 'fallbacks': 0}" in out
    assert out.count("epoch") == 3


def test_the_replay_never_overwrites_an_array_still_in_use() -> None:
    """On NumPy the replay lets a ufunc write into an operand that dies with it; an
    operand that a live view still reads (b below is a view of a) must be left alone."""
    x0 = np.linspace(-1.0, 1.0, 6).reshape(2, 3)

    def f(x: minitorch.Tensor) -> minitorch.Tensor:
        a = x * 2.0
        b = a.reshape(-1)  # a view of a's array on NumPy
        c = a + 1.0  # a's last use: writing c into a's buffer would change b
        d = (c * 3.0).exp()  # c dies here: free to reuse
        return (d * b.reshape(2, 3)).sum()

    step = minitorch.capture(f)
    want = float(np.sum(np.exp((2 * x0 + 1) * 3) * 2 * x0))
    for _ in range(3):
        np.testing.assert_allclose(_host(step(minitorch.tensor(x0))), want, rtol=1e-12)
    assert step.stats["replays"] == 2


_SCRATCH = "free to overwrite the gradients"


def _sgd_step(variant: str) -> tuple[list[minitorch.Tensor], Any, Callable[..., Any]]:
    """Two parameters, plain SGD (no momentum: it scales the gradient itself) and a step
    that reads the gradients after ``opt.step()`` or not, as ``variant`` says."""
    g = minitorch.Generator(3)
    w = (minitorch.randn(N_IN, N_OUT, generator=g) * 0.5).detach().requires_grad_()
    v = (minitorch.randn(N_IN, N_OUT, generator=g) * 0.5).detach().requires_grad_()
    opt = minitorch.optim.SGD([w, v], lr=0.1)

    def step(x: minitorch.Tensor, y: minitorch.Tensor) -> Any:
        if variant == "zero_grad first":
            opt.zero_grad()
        loss = minitorch.cross_entropy(x @ w + (x * x) @ v, y)
        loss.backward()
        if variant == "one gradient twice":  # a step that hands both one array
            v.grad = w.grad
        opt.step()
        out: tuple[Any, ...] = (loss,)
        if variant == "gradient returned":
            out = (loss, w.grad)
        elif variant == "gradient read after":
            out = (loss, (minitorch.tensor(w.grad) ** 2).sum())
        if variant != "zero_grad first":
            opt.zero_grad()
        return out

    return [w, v], opt, step


@pytest.mark.parametrize(
    "variant",
    [
        "zero_grad after",
        "zero_grad first",
        "gradient returned",
        "gradient read after",
        "one gradient twice",
    ],
)
def test_an_sgd_replay_overwrites_only_gradients_nothing_reads_after(variant: str) -> None:
    """On NumPy a replay lets SGD write ``lr * grad`` into the gradient's own array
    (no temporary) where nothing reads the gradient after the step: the parameters,
    the gradients left and the results equal eager training's to the bit either way."""
    eager_ps, _, eager_step = _sgd_step(variant)
    ps, opt, raw = _sgd_step(variant)
    step = minitorch.capture(raw, optimizer=opt)
    for x, y in _batches(6, 8, "float32"):
        want, got = eager_step(x, y), step(x, y)
        _assert_same_results(got, want, variant)
        _assert_same_params(ps, eager_ps)
        for p, q in zip(ps, eager_ps, strict=True):
            if q.grad is None:
                assert p.grad is None
            else:
                np.testing.assert_array_equal(_host(p.grad), _host(q.grad))
    assert step.stats["replays"] >= 4 and step.stats["fallbacks"] == 0
    fast = variant == "zero_grad after" and minitorch.get_backend().name == "numpy"
    assert (_SCRATCH in step.source()[-1]) == fast, step.source()[-1]


@pytest.mark.parametrize("also_private", [False, True])
def test_an_sgd_subclass_with_its_own_step_is_replayed_with_it(also_private: bool) -> None:
    """A subclass that overrides ``step()`` (and ``_step``, or not) is replayed through
    that step."""
    calls = []

    class Counting(minitorch.optim.SGD):
        def step(self) -> None:
            calls.append(1)
            super().step()

    class CountingBoth(Counting):  # step and _step, in one class
        def step(self) -> None:
            super().step()

        def _step(self, scratch: bool) -> None:
            super()._step(scratch)

    ps, _, _ = _sgd_step("zero_grad after")
    eager_ps = [minitorch.tensor(p.data, requires_grad=True) for p in ps]
    counting = (CountingBoth if also_private else Counting)(ps, lr=0.1)
    eager_opt = minitorch.optim.SGD(eager_ps, lr=0.1)

    def step(opt: Any, params: list[minitorch.Tensor], x: Any, y: Any) -> minitorch.Tensor:
        loss = minitorch.cross_entropy(x @ params[0] + (x * x) @ params[1], y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    captured = minitorch.capture(lambda x, y: step(counting, ps, x, y), optimizer=counting)
    for x, y in _batches(4, 8, "float32"):
        _assert_same_results([captured(x, y)], [step(eager_opt, eager_ps, x, y)])
    _assert_same_params(ps, eager_ps)
    assert len(calls) == 4 and captured.stats["replays"] == 3
    assert _SCRATCH not in captured.source()[0]


@pytest.mark.parametrize("when", ["before the recording", "after it"])
def test_a_wrapper_set_on_sgds_step_runs_in_every_replay(
    when: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A replay calls the ``step`` bound when it recorded, and on NumPy SGD's ``_step``
    itself (to let it write ``lr * grad`` into the gradients). A wrapper set on the
    class's ``step`` (a trainer's logging), before the recording or after it, must still
    run at every call: the call records again, and the replay calls ``step()``, with
    eager's values."""
    calls = []
    sgd = minitorch.optim.SGD
    real = sgd.step

    def counting(self: Any) -> None:
        calls.append(1)
        real(self)

    eager_ps, _, _ = _model("float64")
    ps, _, _ = _model("float64")
    eager, opt = sgd(eager_ps, lr=0.05), sgd(ps, lr=0.05)
    train, step = _train(eager_ps, eager), minitorch.capture(_train(ps, opt), optimizer=opt)
    if when == "before the recording":
        monkeypatch.setattr(sgd, "step", counting)
    for i, (x, y) in enumerate(_batches(6, 4, "float64")):
        if i == 3 and when == "after it":
            monkeypatch.setattr(sgd, "step", counting)
        np.testing.assert_array_equal(_host(step(x, y)), _host(train(x, y)))
        _assert_same_params(ps, eager_ps)
    assert len(calls) == (12 if when == "before the recording" else 6)  # eager's too
    assert _SCRATCH not in step.source()[-1]


def test_an_optimizer_step_set_on_the_instance_between_calls_records_again() -> None:
    """``opt.step`` replaced between calls (a trainer wrapping it): the replay would call
    the old one, so the step records again."""
    eager_ps, eager_opt, eager_step = _sgd_step("zero_grad after")
    ps, opt, raw = _sgd_step("zero_grad after")
    step = minitorch.capture(raw, optimizer=opt)
    for k, (x, y) in enumerate(_batches(4, 8, "float32")):
        if k == 2:
            for o in (opt, eager_opt):
                sgd_step = o.step
                o.step = lambda sgd_step=sgd_step, o=o: (  # type: ignore[method-assign]
                    sgd_step(),
                    [setattr(p, "data", p.data * 0.5) for p in o.params],
                )
        _assert_same_results(step(x, y), eager_step(x, y), f"call {k}")
        _assert_same_params(ps, eager_ps)
    assert step.stats == {"records": 2, "replays": 2, "fallbacks": 0}


def test_an_sgd_replay_rounds_as_eager_with_a_numpy_float64_learning_rate() -> None:
    """A schedule made with NumPy (``np.cos``) sets a float64 ``lr`` on float32
    parameters: eagerly ``lr * g`` is float64 and rounds once; the replay must not
    round ``lr * g`` to float32 first (as writing it into the gradient would)."""
    if minitorch.get_backend().name != "numpy":
        pytest.skip("a NumPy scalar learning rate is NumPy's (the path under test too)")

    def make() -> tuple[minitorch.Tensor, Any, Callable[..., Any]]:
        rng = np.random.default_rng(0)  # 2048 weights: about 2% would differ by an ulp
        w = minitorch.tensor(rng.standard_normal((64, 32)), dtype="float32")
        w.requires_grad_()
        opt = minitorch.optim.SGD([w], lr=0.1)

        def step(x: minitorch.Tensor) -> Any:
            loss = ((x @ w) ** 2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return (loss,)

        return w, opt, step

    ew, eager_opt, eager_step = make()
    w, opt, raw = make()
    step = minitorch.capture(raw, optimizer=opt)
    rng = np.random.default_rng(1)
    for k in range(4):
        x = minitorch.tensor(rng.standard_normal((16, 64)), dtype="float32")
        if k:
            eager_opt.lr = opt.lr = np.float64(0.05) * (1 + np.cos(np.pi * k / 10))
        _assert_same_results(step(x), eager_step(x), f"call {k}")
        _assert_same_params([w], [ew])
    assert step.stats["replays"] == 3


def test_an_array_an_optimizer_keeps_is_never_overwritten_by_the_replay() -> None:
    """An optimizer that keeps the gradients it used (Rprop-style, :class:`_KeepsGrads`),
    a gradient read after its step: the replay writes no result into that array
    (``out=``)."""

    def make() -> tuple[minitorch.Tensor, _KeepsGrads, Callable[..., Any]]:
        w = minitorch.tensor(np.linspace(-1.0, 1.0, N_IN * N_OUT).reshape(N_IN, N_OUT))
        w.requires_grad_()
        opt = _KeepsGrads([w], lr=0.1)

        def step(x: minitorch.Tensor) -> Any:
            ((x @ w) ** 2).mean().backward()
            g = w.grad
            opt.step()
            metric = w.backend.xp.sum(g * 2.0)  # g dies here: no out= into it
            opt.zero_grad()
            return (metric,)

        return w, opt, step

    ew, eopt, eager_step = make()
    w, opt, raw = make()
    step = minitorch.capture(raw, optimizer=opt)
    for x, _ in _batches(3, 5, "float64"):
        _assert_same_results(step(x), eager_step(x))
        np.testing.assert_array_equal(_host(opt.prev[0]), _host(eopt.prev[0]))
        _assert_same_params([w], [ew])
    assert step.stats["replays"] == 2


def test_an_input_of_another_memory_layout_records_again() -> None:
    """Whether a call returns its input or a copy (``ascontiguousarray``, ``reshape``)
    depends on the input's strides, and a replay writes into copies it made: an input
    of another layout records again, and the caller's array is never written."""
    if minitorch.get_backend().name != "numpy":
        pytest.skip("strides and ascontiguousarray are NumPy's (and so is out=)")
    w = minitorch.tensor(np.ones((N_OUT, N_IN)), requires_grad=True)

    def f(z: minitorch.Tensor) -> minitorch.Tensor:
        c = w.backend.xp.ascontiguousarray(z.data)  # a copy of z.T, z itself otherwise
        return minitorch.Tensor._make(c * 2.0, w.backend, None) @ w

    step = minitorch.capture(f, params=[w])
    a = np.arange(N_IN * N_OUT, dtype=np.float64).reshape(N_OUT, N_IN)
    for z in (a.copy().T, a.copy().T, np.ascontiguousarray(a.T), np.ascontiguousarray(a.T)):
        t = minitorch.tensor(z)
        before = _host(t).copy()
        np.testing.assert_array_equal(_host(step(t)), (before * 2.0) @ np.ones((N_OUT, N_IN)))
        np.testing.assert_array_equal(_host(t), before)
    assert step.stats["records"] == 2


def test_keyword_and_number_arguments_are_part_of_the_signature() -> None:
    x0 = np.arange(6.0).reshape(2, 3)

    @minitorch.capture
    def f(x: minitorch.Tensor, *, scale: float, bias: minitorch.Tensor) -> minitorch.Tensor:
        return (x * scale + bias).sum()

    b = minitorch.tensor(np.ones(3))
    x = minitorch.tensor(x0)
    for scale in (2.0, 2.0, 3.0, 3.0, 2.0):
        got = f(x, scale=scale, bias=b)
        np.testing.assert_allclose(_host(got), x0.sum() * scale + 6.0, rtol=1e-12)
    assert f.stats == {"records": 2, "replays": 3, "fallbacks": 0}
    # a new bias array (same shape) is read afresh: it is an argument, not a constant
    np.testing.assert_allclose(
        _host(f(x, scale=2.0, bias=minitorch.tensor(np.zeros(3)))), x0.sum() * 2, rtol=1e-12
    )
    assert f.stats["replays"] == 4


def _frozen_model() -> tuple[list[minitorch.Tensor], Any, Callable[..., minitorch.Tensor]]:
    ps, optimizer, _ = _model("float64")

    def step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
        loss = minitorch.cross_entropy(minitorch.relu(x @ ps[0] + ps[1]) @ ps[2] + ps[3], y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    return ps, optimizer, step


def test_freezing_a_parameter_between_calls_records_again() -> None:
    """requires_grad_(False) on a parameter between calls: the eager step leaves it
    alone (no gradient, the optimizer skips it); a replay of the recording made while
    it trained must not update it."""
    eager_ps, _, eager_step = _frozen_model()
    ps, optimizer, raw_step = _frozen_model()
    step = minitorch.capture(raw_step, optimizer=optimizer)
    data = _batches(6, 4, "float64")
    for i, (x, y) in enumerate(data):
        if i == 3:
            ps[0].requires_grad_(False)
            eager_ps[0].requires_grad_(False)
            frozen = _host(ps[0]).copy()
        np.testing.assert_array_equal(_host(step(x, y)), _host(eager_step(x, y)))
    np.testing.assert_array_equal(_host(ps[0]), frozen)
    assert ps[0].grad is None
    _assert_same_params(ps, eager_ps)
    assert step.stats == {"records": 2, "replays": 4, "fallbacks": 0}


class _Part(enum.Enum):
    LOSS = "loss"


def test_a_batch_of_tensors_in_a_tuple_or_dict_is_an_argument() -> None:
    """step(batch) with batch = (x, y) or {"x": x, "y": y}, as a data loader yields
    them: the tensors inside are read afresh at every replay (the call was refused, its
    message saying tuples were allowed), their shapes are part of the signature, and a
    new array given to one of them is refused by its place in the batch."""
    eager_ps, _, eager_step = _model("float64")
    ps, optimizer, train_step = _model("float64")
    as_tuple = minitorch.capture(lambda b: train_step(*b), optimizer=optimizer)
    as_dict = minitorch.capture(lambda b: train_step(b["x"], b["y"]), optimizer=optimizer)
    for i, (x, y) in enumerate(_batches(4, 8, "float64") + _batches(2, 5, "float64", seed=3)):
        got = as_tuple((x, y)) if i % 2 == 0 else as_dict({"x": x, "y": y})
        np.testing.assert_array_equal(_host(got), _host(eager_step(x, y)), err_msg=f"call {i}")
    _assert_same_params(ps, eager_ps)
    # records: each capture with no .grad yet, with .grad set, with 5 rows (one the first)
    assert as_tuple.stats["records"] + as_dict.stats["records"] == 5
    assert as_tuple.stats["replays"] + as_dict.stats["replays"] == 1

    def rebind(batch: tuple[minitorch.Tensor, ...]) -> minitorch.Tensor:
        batch[1].data = batch[1].data * 2.0
        return (batch[0] @ ps[0]).sum()

    with pytest.raises(CaptureError, match=r"Tensor argument 0\[1\] a new array"):
        minitorch.capture(rebind, params=ps)((x, minitorch.ones(2)))


def test_a_constant_tensor_left_of_an_operator_is_recorded() -> None:
    """A fixed tensor (a scale, a mask, a table: no parameter) on the left of an operator
    whose right operand comes from the step: array-api-strict's arrays raise TypeError
    for an operand they do not know instead of returning NotImplemented, so the call
    failed with an OpError naming the internal traced array; on every backend now the
    replays equal eager training."""
    eager_ps, _, _ = _model("float64")
    ps, _, _ = _model("float64")
    scale = minitorch.tensor(np.linspace(0.5, 1.5, N_IN), dtype="float64")
    table = minitorch.tensor(np.eye(N_IN) * 2.0, dtype="float64")

    def make(ps: list[minitorch.Tensor]) -> Callable[..., Any]:
        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
            z = table @ (scale * x - 0.25).mT  # the constants on the left
            h = minitorch.where(scale < z.mT, z.mT, 0.0) @ ps[0]
            loss = minitorch.cross_entropy(h.relu() @ ps[2], y)
            loss.backward()
            with minitorch.no_grad():
                for p in ps:
                    if p.grad is not None:
                        p -= 0.1 * p.grad
                    p.grad = None
            return loss

        return step

    step, eager = minitorch.capture(make(ps), params=ps), make(eager_ps)
    for i, (x, y) in enumerate(_batches(4, 8, "float64")):
        np.testing.assert_array_equal(_host(step(x, y)), _host(eager(x, y)), err_msg=f"call {i}")
    _assert_same_params(ps, eager_ps)
    assert step.stats["replays"] == 3


def test_replays_bump_the_versions_as_the_eager_step_does() -> None:
    """Tensor.version counts in-place changes (the engine checks it for saved tensors):
    a replay bumps each parameter's version as the eager step does, by its in-place
    Tensor ops and by the optimizer's step, once each (the replays bumped only the
    optimizer's)."""
    eager_ps, eager_opt, _ = _model("float64")
    ps, optimizer, _ = _model("float64")

    def make(ps: list[minitorch.Tensor], opt: Any) -> Callable[..., Any]:
        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
            loss = minitorch.cross_entropy((x @ ps[0]).relu() @ ps[2], y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            with minitorch.no_grad():
                ps[1].mul_(0.5)  # an in-place Tensor op on a parameter
                ps[1].add_(0.25)
            return loss

        return step

    step, eager = (
        minitorch.capture(make(ps, optimizer), optimizer=optimizer),
        make(eager_ps, eager_opt),
    )
    for x, y in _batches(4, 8, "float64"):
        step(x, y)
        eager(x, y)
    _assert_same_params(ps, eager_ps)
    # b1 gets no gradient here: only its two in-place ops bump it; b2 is not used
    assert [p.version for p in ps] == [p.version for p in eager_ps] == [4, 8, 4, 0]
    assert step.stats["replays"] == 3


def test_an_object_holding_data_tensors_is_refused_and_one_holding_parameters_is_not() -> None:
    """A batch object with .x and .y Tensors was keyed by its identity and its tensors
    read as constants: a loader refilling one object replayed the first batch. It is
    refused; an object holding only parameters of the capture (the model) is an argument
    like a number, its parameters read afresh as parameters."""
    eager_ps, _, eager_step = _model("float64")
    ps, optimizer, train_step = _model("float64")

    class Batch:
        def __init__(self, x: minitorch.Tensor, y: minitorch.Tensor) -> None:
            self.x, self.y = x, y

    class Model:
        def __init__(self, ps: list[minitorch.Tensor]) -> None:
            self.w1, self.w2 = ps[0], ps[2]
            self.table = minitorch.ones(3)  # a constant it keeps (a positional table)

    class Nested:
        def __init__(self, x: minitorch.Tensor, y: minitorch.Tensor) -> None:
            self.inputs = {"x": x}
            self.labels = Batch(y, y)

    x, y = _batches(1, 4, "float64")[0]
    refused = "argument 0, of type {}, holds Tensors \\(and no parameter"
    with pytest.raises(CaptureError, match=refused.format("Batch")):
        minitorch.capture(lambda b: train_step(b.x, b.y), optimizer=optimizer)(Batch(x, y))
    with pytest.raises(CaptureError, match=refused.format("Nested")):
        minitorch.capture(lambda b: train_step(b.inputs["x"], y), optimizer=optimizer)(Nested(x, y))
    with pytest.raises(CaptureError, match=refused.format("frozenset")):
        minitorch.capture(lambda b: train_step(x, y), optimizer=optimizer)(frozenset([x]))

    def fit(model: Model, x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
        assert model.w1 is ps[0]
        return train_step(x, y)

    step, model = minitorch.capture(fit, optimizer=optimizer), Model(ps)
    for x, y in _batches(4, 8, "float64"):
        np.testing.assert_array_equal(_host(step(model, x, y)), _host(eager_step(x, y)))
    _assert_same_params(ps, eager_ps)
    assert step.stats["replays"] == 2  # (a recording without .grad, one with)


def test_a_step_that_changes_a_list_or_dict_it_was_given_is_refused() -> None:
    """The step gets its own list or dict in place of the caller's (with the tensors
    traced): batch["loss"] = ... or queue.pop() changed the caller's container eagerly
    but not under capture, silently."""
    x = minitorch.ones(2)

    def store(batch: dict[str, Any]) -> minitorch.Tensor:
        batch["loss"] = batch["x"].sum()
        return batch["x"] * 2.0

    def consume(queue: list[minitorch.Tensor]) -> minitorch.Tensor:
        return queue.pop().sum()

    with pytest.raises(CaptureError, match="the step changed a dict it was given"):
        minitorch.capture(store)({"x": x})
    with pytest.raises(CaptureError, match="the step changed a list it was given"):
        minitorch.capture(consume)([x, x])
    read = minitorch.capture(lambda batch: batch["x"] * batch["k"])
    for k in (2.0, 2.0, 3.0):
        np.testing.assert_array_equal(_host(read({"x": x, "k": k})), np.full(2, k))


def test_a_step_may_return_backend_arrays() -> None:
    """A step returning a backend array (a gradient, before zero_grad) hands it back as
    the eager step does (it was refused as 'a number computed in the step')."""
    eager_ps, _, _ = _model("float64")
    ps, _, _ = _model("float64")

    def make(ps: list[minitorch.Tensor]) -> Callable[..., Any]:
        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> Any:
            loss = minitorch.cross_entropy((x @ ps[0]).relu() @ ps[2], y)
            loss.backward()
            grads = [p.grad for p in ps]
            with minitorch.no_grad():
                for p in ps:
                    if p.grad is not None:
                        p -= 0.1 * p.grad
                    p.grad = None
            return loss, grads[0], {"out": grads[2]}

        return step

    step, eager = minitorch.capture(make(ps), params=ps), make(eager_ps)
    for i, (x, y) in enumerate(_batches(4, 8, "float64")):
        got, want = step(x, y), eager(x, y)
        flat = [(r[0], r[1], r[2]["out"]) for r in (got, want)]
        _assert_same_results(*flat, f"call {i}")
        assert _is_real_array(got[1], ps[0].backend)
    assert step.stats["replays"] == 3


def test_a_parameter_the_step_returns_is_the_parameter_itself() -> None:
    """``return loss, w``: eagerly the result holds the parameter, which later steps
    move; a replay (and a fallback) handed back a detached tensor of its array instead,
    which kept the values of that call (SGD with momentum writes a new array)."""
    eager_ps, eager_opt, _ = _model("float64")
    ps, optimizer, _ = _model("float64")

    def make(ps: list[minitorch.Tensor], opt: Any) -> Callable[..., Any]:
        train = _train(ps, opt)

        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> Any:
            return train(x, y), {"w": ps[0]}

        return step

    step = minitorch.capture(make(ps, optimizer), optimizer=optimizer)
    eager = make(eager_ps, eager_opt)
    got, want = [], []
    for i, (x, y) in enumerate(_batches(4, 8, "float64")):
        if i == 3:  # an ignored target: the guard of cross_entropy runs the step eagerly
            y = minitorch.tensor(np.where(np.arange(8) == 0, -100, _host(y)))
        got.append(step(x, y))
        want.append(eager(x, y))
    assert step.stats == {"records": 1, "replays": 2, "fallbacks": 1}
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert g[1]["w"] is ps[0] and w[1]["w"] is eager_ps[0]
        _assert_same_results((g[0], g[1]["w"]), (w[0], w[1]["w"]), f"call {i}")
    # the first call's result holds the values after the last one, as eagerly
    np.testing.assert_array_equal(_host(got[0][1]["w"]), _host(eager_ps[0]))


def test_a_tensor_argument_the_step_returns_is_that_argument_itself() -> None:
    """``return loss, x``: eagerly the result holds the caller's x; the recording, a
    replay and a fallback handed back a new tensor sharing x's array instead (so
    ``out is x`` was False, and x.name, or an attribute set on x, was not on it)."""
    eager_ps, eager_opt, _ = _model("float64")
    ps, optimizer, _ = _model("float64")

    def make(ps: list[minitorch.Tensor], opt: Any) -> Callable[..., Any]:
        train = _train(ps, opt)

        def step(x: minitorch.Tensor, batch: dict[str, Any]) -> Any:
            y = batch["y"][0]
            return train(x, y), (x, {"y": y}), batch["y"][1] * 2

        return step

    step = minitorch.capture(make(ps, optimizer), optimizer=optimizer)
    eager = make(eager_ps, eager_opt)
    for i, (x, y) in enumerate(_batches(4, 8, "float64")):
        if i == 3:  # an ignored target: the guard of cross_entropy runs the step eagerly
            y = minitorch.tensor(np.where(np.arange(8) == 0, -100, _host(y)))
        x.name = f"x{i}"
        two = minitorch.tensor([1.0, 2.0], dtype="float64")
        got = step(x, {"y": [y, two]})
        want = eager(x, {"y": [y, two]})
        assert want[1][0] is x and want[1][1]["y"] is y
        assert got[1][0] is x and got[1][1]["y"] is y, f"call {i}"
        assert got[1][0].name == f"x{i}"
        assert got[2] is not two
        _assert_same_results((got[0], got[2]), (want[0], want[2]), f"call {i}")
        np.testing.assert_array_equal(_host(got[2]), [2.0, 4.0])
        _assert_same_params(ps, eager_ps)
    assert step.stats == {"records": 1, "replays": 2, "fallbacks": 1}

    # the same tensor given twice, and returned alone
    @minitorch.capture
    def first(a: minitorch.Tensor, b: minitorch.Tensor) -> Any:
        return b, a + b

    for k in range(3):
        x = minitorch.tensor([1.0, float(k)], dtype="float64")
        out = first(x, x)
        assert out[0] is x
        np.testing.assert_array_equal(_host(out[1]), [2.0, 2.0 * k])
    assert first.stats == {"records": 1, "replays": 2, "fallbacks": 0}


def test_a_result_dict_may_have_any_hashable_keys() -> None:
    """The replay's source names a key it cannot write as a literal (here an Enum,
    whose repr is no Python expression) instead of pasting its repr."""
    x0 = np.arange(4.0)

    @minitorch.capture
    def f(x: minitorch.Tensor) -> dict[Any, minitorch.Tensor]:
        return {_Part.LOSS: (x * 2).sum(), (1, "b"): x + 1}

    for _ in range(3):
        out = f(minitorch.tensor(x0))
        assert set(out) == {_Part.LOSS, (1, "b")}
        np.testing.assert_array_equal(_host(out[_Part.LOSS]), 12.0)
        np.testing.assert_array_equal(_host(out[(1, "b")]), x0 + 1)
    assert f.stats["replays"] == 2
    assert "Part" not in f.source()[0]  # a name for it, not its repr


def test_numbers_in_the_signature_are_typed_at_every_level() -> None:
    """(2,) and (2.0,) are equal tuples but make an int and a float constant; 0.0 and
    -0.0 are equal floats but give zeros of another sign."""
    x = minitorch.tensor(np.arange(3))  # int64

    @minitorch.capture
    def f(x: minitorch.Tensor, c: tuple[Any, ...]) -> minitorch.Tensor:
        return x * c[0]

    assert "int" in str(f(x, (2,)).dtype)
    scaled = f(x, (2.0,))
    assert "float" in str(scaled.dtype)
    np.testing.assert_array_equal(_host(scaled), [0.0, 2.0, 4.0])
    assert f.stats == {"records": 2, "replays": 0, "fallbacks": 0}

    @minitorch.capture
    def g(x: minitorch.Tensor, s: float) -> minitorch.Tensor:
        return x * s

    xf = minitorch.tensor(np.ones(2))
    g(xf, 0.0)
    assert np.all(np.signbit(_host(g(xf, -0.0))))
    g(xf, float("nan"))
    assert np.all(np.isnan(_host(g(xf, float("nan")))))
    assert g.stats == {"records": 3, "replays": 1, "fallbacks": 0}
    # NumPy scalars too (np.float64 is a float subclass; np.float32 is not)
    for zero in (np.float64, np.float32):
        g(xf, zero(0.0))
        assert np.all(np.signbit(_host(g(xf, zero(-0.0)))))
    assert g.stats == {"records": 7, "replays": 1, "fallbacks": 0}


def test_an_optimizer_given_twice_is_stepped_once_and_restored() -> None:
    eager_ps, _, eager_step = _frozen_model()
    ps, optimizer, raw_step = _frozen_model()
    step = minitorch.capture(raw_step, optimizer=[optimizer, optimizer])
    for x, y in _batches(4, 4, "float64"):
        np.testing.assert_array_equal(_host(step(x, y)), _host(eager_step(x, y)))
    _assert_same_params(ps, eager_ps)
    assert "step" not in vars(optimizer)  # the class's step() again, not the recorder's


def test_linalg_functions_inside_the_step_are_recorded() -> None:
    """The namespace's linalg extension is recorded like its main functions: inv, det,
    slogdet and eigh (a named tuple of results) replay on new parameters' values."""
    a0 = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]])

    def make() -> tuple[minitorch.Tensor, Any, Callable[..., minitorch.Tensor]]:
        a = minitorch.tensor(a0, requires_grad=True)
        opt = minitorch.optim.SGD([a], lr=0.01)

        def f(x: minitorch.Tensor) -> minitorch.Tensor:
            w = minitorch.linalg.eigh(a + a.mT).eigenvalues
            loss = (
                (minitorch.linalg.inv(a) @ x).sum()
                + minitorch.linalg.det(a)
                + minitorch.linalg.slogdet(a).logabsdet
                + (w * w).sum()
            )
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        return a, opt, f

    a, opt, raw = make()
    a_eager, _, eager = make()
    step = minitorch.capture(raw, optimizer=opt)
    rng = np.random.default_rng(3)
    for _ in range(5):
        x = minitorch.tensor(rng.standard_normal((3, 2)))
        np.testing.assert_array_equal(_host(step(x)), _host(eager(x)))
    assert step.stats["replays"] == 4
    np.testing.assert_array_equal(_host(a), _host(a_eager))
    assert not np.array_equal(_host(a), a0)


def test_other_threads_compute_and_replay_while_a_step_records() -> None:
    """Recording wraps the backend namespace for the whole process: another thread's
    eager ops run as they are (not recorded into this step), and its replays of another
    captured step go on."""
    x0 = np.arange(6.0).reshape(2, 3)
    x = minitorch.tensor(x0)  # made here: this thread's backend
    other = minitorch.capture(lambda t: (t * 3).sum())
    other(x)  # recorded: later calls replay
    inside, done = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def slow(t: minitorch.Tensor) -> minitorch.Tensor:
        y = t * 2
        inside.set()
        assert done.wait(10)
        return y.sum()

    def worker() -> None:
        assert inside.wait(10)
        try:
            eager = (x + 1).exp()
            seen["eager"] = (eager.data, float(eager.sum()))
            seen["replay"] = float(other(x))
        except Exception as exc:  # reported below
            seen["error"] = exc
        finally:
            done.set()

    step = minitorch.capture(slow)
    th = threading.Thread(target=worker)
    th.start()
    got = step(x)
    th.join()
    assert "error" not in seen, seen.get("error")
    assert _is_real_array(seen["eager"][0], x.backend)
    np.testing.assert_allclose(seen["eager"][1], np.exp(x0 + 1).sum(), rtol=1e-12)
    assert seen["replay"] == 45.0 and other.stats["replays"] == 1
    np.testing.assert_array_equal(_host(got), 30.0)
    assert step.stats["records"] == 1


def test_two_threads_recording_at_once_leave_the_namespace_as_it_was() -> None:
    """Two recordings in two threads would swap the shared namespace twice, and the
    first to finish would restore it under the other: recordings take turns (the
    second waits), and the namespace ends as the backend's own."""
    x = minitorch.tensor(np.arange(3.0))
    namespace = dict(vars(x.backend.xp))
    a_inside, b_inside, a_done = threading.Event(), threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def step_a(t: minitorch.Tensor) -> minitorch.Tensor:
        a_inside.set()
        b_inside.wait(1.0)  # without turns, B records now, inside A's recording
        return (t * 2).sum()

    def step_b(t: minitorch.Tensor) -> minitorch.Tensor:
        b_inside.set()
        a_done.wait(5.0)  # ... and restores after A did
        return (t + 1).sum()

    def run_b() -> None:
        a_inside.wait(5.0)
        try:
            np.testing.assert_array_equal(_host(minitorch.capture(step_b)(x)), 6.0)
        except BaseException as exc:  # reported below
            errors.append(exc)

    th = threading.Thread(target=run_b)
    th.start()
    np.testing.assert_array_equal(_host(minitorch.capture(step_a)(x)), 6.0)
    a_done.set()
    th.join()
    assert not errors, errors
    assert all(v is namespace[k] for k, v in vars(x.backend.xp).items())


def test_a_refused_step_leaves_every_tensor_it_touched_with_real_arrays() -> None:
    """A recording that raises (here a host read after backward) still gives back the
    real arrays to tensors outside the parameters: a gradient the step computed for
    another tensor, a tensor the step stored away, as the eager step left them."""
    w = minitorch.tensor(np.ones(3), requires_grad=True)
    scale = minitorch.Tensor(np.full(3, 2.0), requires_grad=True)
    kept: dict[str, minitorch.Tensor] = {}

    def f(x: minitorch.Tensor) -> minitorch.Tensor:
        loss = (w * x * scale).sum()
        loss.backward()
        kept["h"] = w * 3
        float(loss)  # refused
        return loss

    with pytest.raises(CaptureError, match="Move it out of the step"):
        minitorch.capture(f, params=[w])(minitorch.tensor(np.arange(3.0)))
    for t in (scale.grad, kept["h"].data, w.grad):
        assert _is_real_array(t, w.backend)
    np.testing.assert_array_equal(_host(scale.grad), [0.0, 1.0, 2.0])
    np.testing.assert_array_equal(_host(w.grad), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(_host(kept["h"] + 1), [4.0, 4.0, 4.0])


def test_a_cuda_graph_runner_is_chosen_only_for_gpu_arrays() -> None:
    torch = pytest.importorskip("torch")
    numpy_be = minitorch.backend.resolve("numpy")
    torch_be = minitorch.backend.resolve("torch")
    assert graph_runner([numpy_be], [np.ones(2)]) is None
    assert graph_runner([torch_be], [torch.ones(2)]) is None  # CPU tensors: no graph


def test_an_early_host_read_of_a_cpu_value_is_the_value_itself() -> None:
    """The CUDA runners' early host read hands back a value that is not on the GPU as it
    is (a stretch that ran eagerly on CPU tensors, a Python bool): no copy, no event."""
    torch = pytest.importorskip("torch")
    flag = torch.tensor(True)
    assert TorchGraph.read_early(torch, flag)() is flag
    assert TorchGraph.read_early(torch, True)() is True
    not_cupy = types.SimpleNamespace(ndarray=type(None))  # no array is this one's
    value = np.array(3)
    assert CupyGraph.read_early(not_cupy, value)() is value


def test_a_torch_graph_stretch_that_reads_cpu_tensors_runs_eagerly() -> None:
    # a CUDA graph replays only GPU work: a stretch on CPU tensors must run each time
    torch = pytest.importorskip("torch")
    runner = TorchGraph(lambda a, b: (a * b + 1.0,), (True,), torch, lent_arrays())
    (out,) = runner(torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0]))
    assert torch.equal(out, torch.tensor([4.0, 9.0]))
    (out,) = runner(torch.tensor([2.0, 0.5]), torch.tensor([3.0, 4.0]))
    assert torch.equal(out, torch.tensor([7.0, 3.0])) and runner.graph is None


class _FakeStream:
    def __init__(self, name: str) -> None:
        self.name = name

    def wait_stream(self, other: _FakeStream) -> None:
        pass


class _FakeCudaTensor:
    """A CUDA tensor's stand-in for TorchGraph's capture path (a NumPy array inside)."""

    is_cuda = True
    device = "cuda:1"

    def __init__(self, a: Any) -> None:
        self.a = np.array(a, dtype=float)

    def clone(self) -> _FakeCudaTensor:
        return _FakeCudaTensor(self.a)

    def __mul__(self, other: _FakeCudaTensor) -> _FakeCudaTensor:
        return _FakeCudaTensor(self.a * other.a)


class _FakeTorch:
    """The part of torch (and torch.cuda) that TorchGraph calls, as torch behaves: entering
    ``torch.cuda.graph`` makes the capture stream current (torch's own, made once per
    process, unless one is given), and a capture that fails at its end raises without
    making the previous stream current again (torch's ``__exit__`` has no ``finally``)."""

    Tensor = _FakeCudaTensor

    def __init__(self, fail_at_end: bool) -> None:
        self.cuda = self
        self.fail_at_end = fail_at_end
        self.current = _FakeStream("the caller's stream")
        self.made: list[_FakeStream] = []
        self.captured_on: _FakeStream | None = None

    def device(self, d: Any) -> Any:
        return contextlib.nullcontext()

    def Stream(self) -> _FakeStream:  # torch's name
        self.made.append(_FakeStream(f"side stream {len(self.made)}"))
        return self.made[-1]

    def current_stream(self) -> _FakeStream:
        return self.current

    def set_stream(self, stream: _FakeStream) -> None:
        self.current = stream

    @contextlib.contextmanager
    def stream(self, stream: _FakeStream) -> Iterator[None]:
        before, self.current = self.current, stream
        yield
        self.current = before

    def get_sync_debug_mode(self) -> int:
        return 0

    def set_sync_debug_mode(self, mode: Any) -> None:
        pass

    def CUDAGraph(self) -> Any:  # torch's name
        return types.SimpleNamespace(replay=lambda: None)

    @contextlib.contextmanager
    def graph(self, graph: Any, stream: _FakeStream | None = None) -> Iterator[None]:
        self.captured_on = stream or _FakeStream("torch's capture stream, made once")
        before, self.current = self.current, self.captured_on
        yield
        if self.fail_at_end:
            raise RuntimeError(
                "CUDA error: operation failed due to a previous error during capture"
            )
        self.current = before

    def empty_like(self, t: _FakeCudaTensor) -> _FakeCudaTensor:
        return _FakeCudaTensor(np.empty_like(t.a))

    def _foreach_copy_(self, dst: list[Any], src: list[Any]) -> None:
        for d, s_ in zip(dst, src, strict=True):
            d.a[...] = s_.a


@pytest.mark.parametrize("fail_at_end", [False, True])
def test_a_torch_graph_is_captured_on_its_warmed_up_stream_and_restores_the_callers(
    fail_at_end: bool,
) -> None:
    """TorchGraph captures on the side stream it warmed up on (the inputs' device), not
    on torch's process-wide capture stream, which is made on whatever device was current
    at the process's first capture (a step on another GPU then captured nothing and
    replayed nothing). A capture that fails at its end leaves torch on the capture
    stream: the runner makes the caller's stream current again and runs eagerly."""
    torch = _FakeTorch(fail_at_end)
    callers = torch.current
    runner = TorchGraph(lambda a, b: (a * b,), (True,), torch, lent_arrays())
    (out,) = runner(_FakeCudaTensor([1.0, 2.0]), _FakeCudaTensor([3.0, 4.0]))
    np.testing.assert_array_equal(out.a, [3.0, 8.0])
    assert torch.captured_on is torch.made[0]  # the warm-up's stream
    assert torch.current is callers
    assert runner.eager is fail_at_end and (runner.graph is None) is fail_at_end


class _EmulatedGraph(GraphRunner):
    """What a CUDA graph runner does, on the CPU: on its first call the stretch runs on
    static copies of its inputs (the capture); each call then copies the inputs into
    those buffers, runs the stretch again with its outputs written into the same output
    buffers (a replay rewrites the graph's memory) and hands out copies of the outputs
    ``keep`` marks, the buffers themselves for the others (read before the next call).
    A stretch it refuses runs through the runners' own eager path."""

    runners: ClassVar[list[_EmulatedGraph]] = []
    #: what happened, in order: "launch <n>" (runner n of the program), "read", "wait"
    log: ClassVar[list[str]] = []
    lent_ids: ClassVar[Lent] = lent_arrays()  # the arrays handed on uncopied, by id
    #: run the stretches with a matrix product eagerly, as CuPy's runner must
    refuse_matmul: ClassVar[bool] = False

    def __init__(self, fn: Callable[..., tuple[Any, ...]], keep: tuple[bool, ...]) -> None:
        super().__init__(fn, keep, np, _EmulatedGraph.lent_ids)
        self.launches = 0
        names = [getattr(fn.__globals__.get(n), "__name__", "") for n in fn.__code__.co_names]
        self.eager = self.refuse_matmul and "matmul" in names
        _EmulatedGraph.runners.append(self)

    def __call__(self, *ins: Any) -> tuple[Any, ...]:
        self.launches += 1
        _EmulatedGraph.log.append(f"launch {_EmulatedGraph.runners.index(self)}")
        if self.eager:
            return self._run(ins)
        if self.graph is None:
            self.static_in = [np.array(x, copy=True) for x in ins]
            self.static_out = tuple(np.array(o, copy=True) for o in self.fn(*self.static_in))
            self.graph = True
            self._lend()
        for buf, x in zip(self.static_in, ins, strict=True):
            np.copyto(buf, x)
        for buf, o in zip(self.static_out, self.fn(*self.static_in), strict=True):
            np.copyto(buf, o)
        return tuple(o.copy() if k else o for o, k in zip(self.static_out, self.keep, strict=True))

    def _shares(self, a: Any, b: Any) -> bool:
        return bool(np.may_share_memory(a, b))

    def _copy(self, a: Any) -> Any:
        return a.copy()

    @staticmethod
    def read_early(a: Any) -> Callable[[], Any]:
        """A guard's host read started: the value is copied now (as the pinned copy
        queued right after the stretch that makes it), handed over when waited for."""
        host = np.array(a, copy=True)
        _EmulatedGraph.log.append("read")

        def wait() -> Any:
            _EmulatedGraph.log.append("wait")
            return host

        return wait


class _KeepsGrads(minitorch.optim.SGD):
    """SGD that keeps the gradients backward left (``prev``; eagerly nothing writes them
    again) and adds them to the next step's."""

    def __init__(self, params: list[minitorch.Tensor], lr: float) -> None:
        super().__init__(params, lr=lr)
        self.prev: list[Any] = []

    def step(self) -> None:
        backward = [p.grad for p in self.params]  # the arrays backward left: kept
        for p, g in zip(self.params, self.prev or [None] * len(self.params), strict=True):
            if p.grad is not None and g is not None:
                p.grad = p.grad + 0.5 * g
        self.prev = backward
        super().step()


def test_emulated_graphs_copy_out_what_outlives_the_replay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A graph's outputs live in its own memory, which its next launch rewrites: what
    the replay returns, what an optimizer keeps and the gradients left at the end are
    copied out; what only later calls of the same replay read is not."""
    if minitorch.get_backend().name != "numpy":
        pytest.skip("the emulated graph runner holds NumPy buffers")
    capture_module = importlib.import_module("minitorch.capture._captured")
    monkeypatch.setattr(capture_module, "graph_runner", lambda bes, arrays: _EmulatedGraph)
    _EmulatedGraph.runners = []

    def make(ps: list[minitorch.Tensor], opt: _KeepsGrads) -> Callable[..., Any]:
        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> Any:
            h = minitorch.relu(x @ ps[0] + ps[1])
            loss = minitorch.cross_entropy(h @ ps[2] + ps[3], y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss, h.sum()

        return step

    results = []
    for graphs in (False, True):
        ps, _, _ = _model("float64")
        opt = _KeepsGrads(ps, lr=0.05)
        step = make(ps, opt)
        run = minitorch.capture(step, optimizer=opt) if graphs else step
        out = [run(x, y) for x, y in _batches(6, 4, "float64")]
        results.append(([_host(a) for o in out for a in o], [_host(p.grad) for p in ps], ps))
    (want, want_grads, eager_ps), (got, got_grads, graph_ps) = results
    for a, b in zip(got, want, strict=True):  # all held until now
        np.testing.assert_array_equal(a, b)
    for a, b in zip(got_grads, want_grads, strict=True):
        np.testing.assert_array_equal(a, b)
    _assert_same_params(graph_ps, eager_ps)
    assert any(r.launches >= 4 for r in _EmulatedGraph.runners)


def test_emulated_graphs_start_a_guards_host_read_before_the_forward_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With CUDA graphs (emulated), a replay launches the target check's stretch, starts
    the host read of its value, launches the forward pass and only then waits for the
    read, before it launches the stretch after the guard (cross_entropy and backward):
    the read used to come after the forward pass, whose end the host then waited for
    with nothing queued. A failing check still runs the step eagerly, which raises."""
    if minitorch.get_backend().name != "numpy":
        pytest.skip("the emulated graph runner holds NumPy buffers")
    capture_module = importlib.import_module("minitorch.capture._captured")
    monkeypatch.setattr(capture_module, "graph_runner", lambda bes, arrays: _EmulatedGraph)
    _EmulatedGraph.runners = []
    eager_ps, _, eager_step = _model("float64")
    ps, optimizer, raw_step = _model("float64")
    step = minitorch.capture(raw_step, optimizer=optimizer)
    batches = _batches(5, 4, "float64")
    for i, (x, y) in enumerate(batches[:4]):
        _assert_same_results((step(x, y),), (eager_step(x, y),), f"call {i}")
    _EmulatedGraph.log = []
    x, y = batches[4]
    _assert_same_results((step(x, y),), (eager_step(x, y),), "call 4")
    _assert_same_params(ps, eager_ps)
    log = _EmulatedGraph.log
    assert log.count("read") == 1 and log.count("wait") == 1, log
    assert log[0].startswith("launch") and log[1] == "read", log
    assert log[2].startswith("launch") and log[2] != log[0] and log[3] == "wait", log
    assert log[4].startswith("launch") and log[4] not in log[:3], log
    before = [_host(p) for p in ps]
    with pytest.raises(minitorch.OpError, match="targets must lie in"):
        step(x, minitorch.tensor([0, 1, 7, 2]))
    for p, b in zip(ps, before, strict=True):
        np.testing.assert_array_equal(_host(p), b)


def _sgd_train(
    w: minitorch.Tensor, loss: Callable[..., minitorch.Tensor]
) -> tuple[minitorch.optim.SGD, Callable[..., minitorch.Tensor]]:
    """SGD on ``w`` (lr 0.1) and a step: ``loss(*args)``, backward, step, zero_grad."""
    opt = minitorch.optim.SGD([w], lr=0.1)

    def train(*args: minitorch.Tensor) -> minitorch.Tensor:
        out = loss(*args)
        out.backward()
        opt.step()
        opt.zero_grad()
        return out

    return opt, train


def test_emulated_graphs_read_a_guard_in_place_when_nothing_comes_before_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A guard whose calls are the first of the step has nothing to overlap: it is
    read where it stands, with no early read."""
    if minitorch.get_backend().name != "numpy":
        pytest.skip("the emulated graph runner holds NumPy buffers")
    capture_module = importlib.import_module("minitorch.capture._captured")
    monkeypatch.setattr(capture_module, "graph_runner", lambda bes, arrays: _EmulatedGraph)
    _EmulatedGraph.runners = []
    w0 = np.linspace(-1.0, 1.0, 12).reshape(4, 3)
    w, w_eager = minitorch.tensor(w0, requires_grad=True), minitorch.tensor(w0, requires_grad=True)

    opt, train = _sgd_train(w, lambda y: minitorch.cross_entropy(w, y))
    step = minitorch.capture(train, optimizer=opt)
    eager = _sgd_train(w_eager, lambda y: minitorch.cross_entropy(w_eager, y))[1]
    _EmulatedGraph.log = []
    for i in range(4):
        y = minitorch.tensor([i % 3, 1, 2, 0])
        _assert_same_results((step(y),), (eager(y),), f"call {i}")
    assert step.stats["replays"] == 3
    assert "read" not in _EmulatedGraph.log and "raise GuardFailed" in step.source()[-1]
    np.testing.assert_array_equal(_host(w), _host(w_eager))


def test_emulated_graphs_start_the_host_read_of_a_value_read_twice_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An op that reads one value on the host twice (a custom op that checks its input
    and then branches on the same check) makes two guards on one value: the replay
    starts its host read once, and both guards wait for it."""
    if minitorch.get_backend().name != "numpy":
        pytest.skip("the emulated graph runner holds NumPy buffers")
    capture_module = importlib.import_module("minitorch.capture._captured")
    monkeypatch.setattr(capture_module, "graph_runner", lambda bes, arrays: _EmulatedGraph)
    _EmulatedGraph.runners = []

    def fwd(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
        ok = xp.all(x > 0)
        if not bool(ok):
            raise ValueError("checked_sqrt: every input must be positive")
        out = xp.sqrt(x) if bool(ok) else x
        return out, (out,)

    def vjp(xp: Any, g: Any, saved: tuple[Any, ...], needs: tuple[bool, ...]) -> tuple[Any]:
        return (g / (2.0 * saved[0]),)

    def loss(w: minitorch.Tensor, op: Callable[..., Any], x: minitorch.Tensor) -> Any:
        h = minitorch.tanh(w * 3.0)  # before the op, not needed by its check
        return (h * op(x)).sum()

    with forgetting_new_ops():
        checked_sqrt = minitorch.defop("checked_sqrt_twice", fwd, vjp)
        w0 = np.linspace(-1.0, 1.0, 4)
        w, w_eager = (minitorch.tensor(w0, requires_grad=True) for _ in range(2))
        opt, train = _sgd_train(w, lambda x: loss(w, checked_sqrt, x))
        step = minitorch.capture(train, optimizer=opt)
        eager = _sgd_train(w_eager, lambda x: loss(w_eager, checked_sqrt, x))[1]
        rng = np.random.default_rng(2)
        for i in range(4):
            _EmulatedGraph.log = []
            x = minitorch.tensor(rng.uniform(0.5, 2.0, 4))
            _assert_same_results((step(x),), (eager(x),), f"call {i}")
        assert step.stats["replays"] == 3
        assert step.source()[-1].count("raise GuardFailed") == 2
        assert _EmulatedGraph.log.count("read") == 1 and _EmulatedGraph.log.count("wait") == 2
        np.testing.assert_array_equal(_host(w), _host(w_eager))


def _emulate_cupy_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replays on NumPy with emulated CUDA graphs that, as CuPy's, run every stretch with
    a matrix product eagerly (skips where the backend under test is not NumPy)."""
    if minitorch.get_backend().name != "numpy":
        pytest.skip("the emulated graph runner holds NumPy buffers")
    capture_module = importlib.import_module("minitorch.capture._captured")
    monkeypatch.setattr(capture_module, "graph_runner", lambda bes, arrays: _EmulatedGraph)
    monkeypatch.setattr(_EmulatedGraph, "refuse_matmul", True)
    monkeypatch.setattr(_EmulatedGraph, "lent_ids", lent_arrays())
    _EmulatedGraph.runners = []


def _eager_then_replayed(make: Callable[..., Any], batches: list[Any]) -> list[list[Any]]:
    """The results of ``make(w, opt)``'s step on each batch, eagerly and then replayed
    by minitorch.capture (each with a fresh weight (6, 2) and SGD), all kept to the end
    (a replay's next launch must not rewrite what an earlier call returned)."""
    held = []
    for graphs in (False, True):
        w = minitorch.tensor(np.linspace(-1, 1, 12).reshape(6, 2), requires_grad=True)
        opt = minitorch.optim.SGD([w], lr=0.1)
        f = minitorch.capture(make(w, opt), optimizer=opt) if graphs else make(w, opt)
        held.append([f(*b) for b in batches])
    return held


def test_a_stretch_run_eagerly_copies_a_view_of_a_graphs_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On CuPy a stretch with a matrix product runs eagerly between graphs. A graph
    hands the next stretch its output uncopied (only that stretch reads it); a view of
    it that the eager stretch returns must be copied, or the graph's next launch
    rewrites what the caller holds (it did: call 2's result became call 3's)."""
    _emulate_cupy_graphs(monkeypatch)

    def make(w: minitorch.Tensor, opt: Any) -> Callable[..., Any]:
        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> Any:
            opt.zero_grad()
            xs = (x * 2.0).tanh()  # a graph
            ce = minitorch.cross_entropy(xs[:, :4], y)  # the targets' check: a guard
            xt = xs.T  # a view, in the next stretch, which runs eagerly:
            loss = ce + ((xs @ w) ** 2).mean()  # it has a matrix product
            loss.backward()
            opt.step()
            return loss, xt

        return step

    rng = np.random.default_rng(0)
    batches = [
        (minitorch.tensor(rng.standard_normal((3, 6))), minitorch.tensor(rng.integers(0, 4, 3)))
        for _ in range(4)
    ]
    held = _eager_then_replayed(make, batches)
    for (loss_e, xt_e), (loss_c, xt_c) in zip(*held, strict=True):
        np.testing.assert_array_equal(_host(loss_c), _host(loss_e))
        np.testing.assert_array_equal(_host(xt_c), _host(xt_e))
    runners = _EmulatedGraph.runners
    assert any(r.eager for r in runners) and any(not r.eager and r.launches for r in runners)


def test_a_view_of_a_view_of_a_graphs_memory_is_copied_too(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A view of a graph's output handed from one eager stretch to the next (the step
    between them) is lent in turn: the view of it that the second stretch returns is
    copied. It was not (only the graph's own outputs were known), and the graph's next
    launch rewrote what the caller held: every element of call 1's result differed."""
    _emulate_cupy_graphs(monkeypatch)

    def make(w: minitorch.Tensor, opt: Any) -> Callable[..., Any]:
        def step(x: minitorch.Tensor, y: minitorch.Tensor, z: minitorch.Tensor) -> Any:
            opt.zero_grad()
            xs = (x * 2.0).tanh()  # a graph
            ce = minitorch.cross_entropy(xs[:, :4], y)  # a guard
            xt = xs.T  # a view, in a stretch run eagerly (a matrix product)
            loss = ce + ((xs @ w) ** 2).mean()
            loss.backward()
            opt.step()  # ends that stretch
            v = xt[:2]  # a view of the view, in the next eager stretch, returned
            return loss, v, (v @ z).sum()

        return step

    rng = np.random.default_rng(0)
    batches = [
        (
            minitorch.tensor(rng.standard_normal((3, 6))),
            minitorch.tensor(rng.integers(0, 4, 3)),
            minitorch.tensor(rng.standard_normal((3, 2))),
        )
        for _ in range(4)
    ]
    held = _eager_then_replayed(make, batches)
    for eager, replayed in zip(*held, strict=True):
        for e, c in zip(eager, replayed, strict=True):
            np.testing.assert_array_equal(_host(c), _host(e))
    runners = _EmulatedGraph.runners
    assert sum(r.eager for r in runners) >= 2 and any(not r.eager and r.launches for r in runners)


@pytest.mark.parametrize("opt", ["sgd", "adamw"])
def test_the_cuda_graph_program_equals_eager_training_with_emulated_graphs(
    opt: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The program a CUDA backend gets (each stretch between optimizer steps and guards
    compiled as a function of its live inputs and outputs, run by a graph runner) is
    built on NumPy with a runner that behaves as a graph does: 30 replayed steps, with
    guards that fall back (ignore_index), equal eager training to the bit."""
    if minitorch.get_backend().name != "numpy":
        pytest.skip("the emulated graph runner holds NumPy buffers")
    capture_module = importlib.import_module("minitorch.capture._captured")
    monkeypatch.setattr(capture_module, "graph_runner", lambda bes, arrays: _EmulatedGraph)
    _EmulatedGraph.runners = []
    eager_ps, eager_opt, _ = _model("float64", opt)
    ps, optimizer, _ = _model("float64", opt)

    def make(ps: list[minitorch.Tensor], o: Any) -> Callable[..., minitorch.Tensor]:
        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
            o.zero_grad()
            h = minitorch.relu(x @ ps[0] + ps[1])
            loss = minitorch.cross_entropy(h @ ps[2] + ps[3], y)
            loss.backward()
            o.step()
            return loss * 2.0

        return step

    eager, step = (
        make(eager_ps, eager_opt),
        minitorch.capture(make(ps, optimizer), optimizer=optimizer),
    )
    rng = np.random.default_rng(5)
    for i, (x, _) in enumerate(_batches(30, 4, "float64")):
        y = minitorch.tensor(rng.integers(0, N_OUT, 4))  # no target is ignored...
        if i % 7 == 3:  # ...but here: the targets' check differs, the guard sends it to eager
            y = minitorch.tensor([-100, 1, 2, 3])
        np.testing.assert_array_equal(_host(step(x, y)), _host(eager(x, y)))
        _assert_same_params(ps, eager_ps)
    assert step.stats["replays"] >= 20 and step.stats["fallbacks"] >= 3
    assert any(r.launches > 20 for r in _EmulatedGraph.runners)
    assert "= S" in step.source()[-1]  # the replay calls the graph runners
    # the stretch before the targets' guard hands its outputs to the next one uncopied
    assert any(not all(r.keep) for r in _EmulatedGraph.runners)


def _train_alongside(
    step: Callable[..., Any],
    eager: Callable[..., Any],
    ps: list[minitorch.Tensor],
    eager_ps: list[minitorch.Tensor],
    n: int,
) -> None:
    """``n`` steps of each on the same batches: results, parameters and ``.grad`` the
    same to the bit after every one."""
    for x, y in _batches(n, 4, "float64"):
        np.testing.assert_array_equal(_host(step(x, y)), _host(eager(x, y)))
        _assert_same_params(ps, eager_ps)
        for p, q in zip(ps, eager_ps, strict=True):
            assert (p.grad is None) == (q.grad is None)
            if p.grad is not None:
                np.testing.assert_array_equal(_host(p.grad), _host(q.grad))


@pytest.mark.parametrize("numpy_sgd_in_place", [True, False])
@pytest.mark.parametrize("opt", ["sgd", "adamw"])
def test_emulated_graphs_hand_minitorchs_optimizer_the_gradients_uncopied(
    opt: str, numpy_sgd_in_place: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where ``opt.step()`` is the last reader of the gradients (``zero_grad()``
    follows) and the optimizer is minitorch's own (it keeps no gradient array: SGD's
    momentum starts from a copy), the step reads them in the graph's memory: nothing
    is copied out but the loss, and training equals eager to the bit. With
    ``zero_grad()`` first, the gradients outlive the replay in ``.grad`` and are
    copied out, as they must be (the next launch rewrites the graph's memory). Without
    NumPy's in-place SGD (CUDA has none), the step is the plain ``step()``."""
    if minitorch.get_backend().name != "numpy":
        pytest.skip("the emulated graph runner holds NumPy buffers")
    capture_module = importlib.import_module("minitorch.capture._captured")
    monkeypatch.setattr(capture_module, "graph_runner", lambda bes, arrays: _EmulatedGraph)
    if not numpy_sgd_in_place:
        monkeypatch.setattr(
            importlib.import_module("minitorch.capture._program"),
            "_scratch_grads",
            lambda *args: False,
        )
    for zero_grad_first in (False, True):
        _EmulatedGraph.runners = []
        eager_ps, eager_opt, eager_first = _model("float64", opt)
        ps, optimizer, first = _model("float64", opt)
        eager = eager_first if zero_grad_first else _train(eager_ps, eager_opt)
        raw = first if zero_grad_first else _train(ps, optimizer)
        step = minitorch.capture(raw, optimizer=optimizer)
        _train_alongside(step, eager, ps, eager_ps, 20)
        assert step.stats["replays"] >= 18
        # the runners of the program replayed (the first call records another one
        # where zero_grad() comes first: the gradients are None before it)
        copied = sum(sum(r.keep) for r in _EmulatedGraph.runners if r.launches >= 10)
        source = step.source()[-1]
        if zero_grad_first:
            assert copied == 1 + len(ps)  # the loss and the gradients
            assert "handed the gradients" not in source
        else:
            assert copied == 1, source  # the loss
            handed = "handed the gradients in a graph's memory" in source
            assert handed == (not numpy_sgd_in_place or opt != "sgd"), source


def test_emulated_graphs_hand_on_only_the_gradients_their_optimizer_reads_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two optimizers over two halves of the model, two updates per step: the
    gradients that ``zero_grad()`` drops after each step are handed uncopied, those
    left in ``.grad`` at the end (the first optimizer's, after its second step) are
    copied out; every replay equals eager to the bit, ``.grad`` included."""
    if minitorch.get_backend().name != "numpy":
        pytest.skip("the emulated graph runner holds NumPy buffers")
    capture_module = importlib.import_module("minitorch.capture._captured")
    monkeypatch.setattr(capture_module, "graph_runner", lambda bes, arrays: _EmulatedGraph)
    monkeypatch.setattr(
        importlib.import_module("minitorch.capture._program"), "_scratch_grads", lambda *args: False
    )  # as on CUDA
    _EmulatedGraph.runners = []

    def make() -> tuple[list[minitorch.Tensor], list[Any], Callable[..., Any]]:
        ps, _, _ = _model("float64")
        first = minitorch.optim.SGD(ps[:2], lr=0.05, momentum=0.9)
        second = minitorch.optim.Adam(ps[2:], lr=0.01)

        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
            for k in range(2):
                loss = minitorch.cross_entropy(minitorch.relu(x @ ps[0] + ps[1]) @ ps[2] + ps[3], y)
                loss.backward()
                first.step()
                second.step()
                if k == 0:
                    first.zero_grad()  # after the second step, its gradients stay
                second.zero_grad()
            return loss

        return ps, [first, second], step

    eager_ps, _, eager = make()
    ps, optimizers, raw = make()
    step = minitorch.capture(raw, optimizer=optimizers)
    _train_alongside(step, eager, ps, eager_ps, 15)
    assert step.stats["replays"] >= 12
    assert step.source()[-1].count("handed the gradients in a graph's memory") == 3
    kept = [r.keep for r in _EmulatedGraph.runners if r.launches >= 10]
    assert sum(map(sum, kept)) == 1 + 2  # the loss, and the first optimizer's gradients


def _emulate_cuda_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Replays with :class:`_EmulatedGraph` and without NumPy's in-place SGD (as on
    CUDA), on the NumPy backend (skipped elsewhere)."""
    if minitorch.get_backend().name != "numpy":
        pytest.skip("the emulated graph runner holds NumPy buffers")
    capture_module = importlib.import_module("minitorch.capture._captured")
    monkeypatch.setattr(capture_module, "graph_runner", lambda bes, arrays: _EmulatedGraph)
    monkeypatch.setattr(
        importlib.import_module("minitorch.capture._program"), "_scratch_grads", lambda *args: False
    )
    monkeypatch.setattr(_EmulatedGraph, "lent_ids", lent_arrays())
    _EmulatedGraph.runners = []


def _lending_sgd(
    monkeypatch: pytest.MonkeyPatch, n: int
) -> tuple[list[minitorch.Tensor], Any, Any, list[tuple[Any, Any]]]:
    """:func:`_model`'s weights, plain SGD and ``_train`` captured with emulated graphs
    and no NumPy in-place SGD (as on CUDA), run on the first 3 of ``n`` batches: the
    recording hands the step the gradients uncopied. Returns the batches too."""
    _emulate_cuda_graphs(monkeypatch)
    ps, _, _ = _model("float64")
    opt = minitorch.optim.SGD(ps, lr=0.05)
    step = minitorch.capture(_train(ps, opt), optimizer=opt)
    batches = _batches(n, 4, "float64")
    for x, y in batches[:3]:
        step(x, y)
    assert step.stats["replays"] == 2 and "handed the gradients" in step.source()[-1]
    return ps, opt, step, batches


def test_a_step_that_raises_leaves_no_gradient_in_a_graphs_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``opt.step()`` raises inside a replay (a bad learning rate): the gradients it was
    handed in the graph's memory stay in ``.grad`` as eagerly, but as copies; the next
    launch of the graph does not change what the user holds."""
    ps, opt, step, batches = _lending_sgd(monkeypatch, 5)
    opt.lr = "oops"
    with pytest.raises(TypeError):
        step(*batches[3])
    held = ps[0].grad
    assert held is not None
    before = held.copy()
    opt.lr = 0.05
    opt.zero_grad()
    step(*batches[4])  # the graph launches again
    np.testing.assert_array_equal(held, before)


def test_a_call_failing_after_the_step_leaves_the_gradients_as_eager_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A call after ``opt.step()`` fails in the replay (cholesky of a matrix made from
    the updated weight): ``zero_grad()`` was not reached, so ``.grad`` still holds the
    gradient, as eagerly (a copy out of the graph's memory), with eager's values."""
    _emulate_cuda_graphs(monkeypatch)

    def make(w: minitorch.Tensor, opt: Any) -> Callable[..., Any]:
        def step(x: minitorch.Tensor, s: minitorch.Tensor) -> Any:
            loss = ((x @ w) ** 2).sum()
            loss.backward()
            opt.step()
            factor = minitorch.linalg.cholesky(w @ w.T * s)
            opt.zero_grad()
            return loss, factor

        return step

    x = minitorch.tensor(np.eye(2), dtype="float64")
    good, bad = (minitorch.tensor(v, dtype="float64") for v in (1.0, -1.0))
    grads = []
    for captured in (False, True):
        w = minitorch.tensor([[2.0, 0.1], [0.1, 2.0]], dtype="float64", requires_grad=True)
        opt = minitorch.optim.SGD([w], lr=0.001)
        f = minitorch.capture(make(w, opt), optimizer=opt) if captured else make(w, opt)
        for _ in range(3):
            f(x, good)
        with pytest.raises(minitorch.OpError, match="cholesky"):
            f(x, bad)
        assert w.grad is not None
        grads.append(_host(w.grad))
    np.testing.assert_array_equal(grads[1], grads[0])


@pytest.mark.parametrize("where", ["instance", "class"])
def test_an_optimizer_method_replaced_after_recording_records_again(
    where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A step that keeps the gradients (a logging wrapper of SGD's ``_step`` set on the
    instance, or of ``step`` on the class) after the recording must not be handed the
    graph's memory, which the next launch rewrites: the call records again, and what
    the wrapper keeps keeps its values."""
    _, opt, step, batches = _lending_sgd(monkeypatch, 6)
    kept: list[list[Any]] = []
    sgd = minitorch.optim.SGD
    real_step, real_private = sgd.step, sgd._step

    def keeping() -> None:
        kept.append([p.grad for p in opt.params if p.grad is not None])

    if where == "instance":

        def private(scratch: bool) -> None:
            keeping()
            real_private(opt, scratch)

        monkeypatch.setattr(opt, "_step", private, raising=False)
    else:

        def public(self: Any) -> None:
            keeping()
            real_step(self)

        monkeypatch.setattr(sgd, "step", public)
    for x, y in batches[3:]:
        step(x, y)
    assert step.stats["records"] == 2 and "handed the gradients" not in step.source()[-1]
    first = [g.copy() for g in kept[0]]
    assert len(kept) == 3
    for a, b in zip(kept[0], first, strict=True):
        np.testing.assert_array_equal(a, b)
