"""minitorch.capture of steps that draw random numbers (dropout, randn, rand, randint):
every replay takes the same draws from the same generators, in the same order, as the
eager step, so captured training equals eager training to the bit and leaves each
generator where eager steps leave it; what a replay could not repeat (a generator
reseeded in the step, or made in it and kept, or a draw from NumPy's, Python's or torch's
own global generator) is refused."""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from test_capture import (
    _assert_same_params,
    _counting_graph_runners,
    _EmulatedGraph,
    _host,
)

import minitorch
from minitorch import CaptureError

N_IN, N_HID, N_OUT = 6, 16, 4


def _dropout_mlp(
    opt: str, dtype: str, generator: minitorch.Generator | None = None
) -> tuple[list[minitorch.Tensor], Any, Callable[..., minitorch.Tensor]]:
    """An MLP with dropout after each hidden layer (p 0.3 and 0.5), its optimizer and a
    train step (forward, backward, step, zero_grad)."""
    init = minitorch.Generator(0)
    ps = [
        (minitorch.randn(N_IN, N_HID, generator=init, dtype=dtype) * 0.5).detach(),
        minitorch.zeros(N_HID, dtype=dtype),
        (minitorch.randn(N_HID, N_HID, generator=init, dtype=dtype) * 0.3).detach(),
        minitorch.zeros(N_HID, dtype=dtype),
        (minitorch.randn(N_HID, N_OUT, generator=init, dtype=dtype) * 0.5).detach(),
    ]
    for p in ps:
        p.requires_grad_()
    optimizer: Any = (
        minitorch.optim.SGD(ps, lr=0.05, momentum=0.9)
        if opt == "sgd"
        else minitorch.optim.AdamW(ps, lr=0.01, weight_decay=0.1)
    )

    def step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
        h = minitorch.dropout(minitorch.relu(x @ ps[0] + ps[1]), 0.3, generator=generator)
        h = minitorch.dropout(minitorch.relu(h @ ps[2] + ps[3]), 0.5, generator=generator)
        loss = minitorch.cross_entropy(h @ ps[4], y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss

    return ps, optimizer, step


def _batches(n: int, sizes: tuple[int, ...], dtype: str, seed: int = 1) -> list[Any]:
    rng = np.random.default_rng(seed)
    return [
        (
            minitorch.tensor(rng.standard_normal((sizes[i % len(sizes)], N_IN)), dtype=dtype),
            minitorch.tensor(rng.integers(0, N_OUT, sizes[i % len(sizes)])),
        )
        for i in range(n)
    ]


def _assert_same_training(got: tuple[Any, ...], want: tuple[Any, ...]) -> None:
    """A captured run ``(losses, params, generator state, ...)`` against the eager one:
    every loss and parameter to the bit, the generator where the eager steps left it."""
    for i, (a, b) in enumerate(zip(got[0], want[0], strict=True)):
        np.testing.assert_array_equal(a, b, err_msg=f"loss {i}")
    _assert_same_params(got[1], want[1])
    assert got[2] == want[2]


def _assert_same_state(a: dict[str, Any], b: dict[str, Any]) -> None:
    for k, v in b.items():
        if isinstance(v, list) and v and isinstance(v[0], np.ndarray):
            for x, y in zip(a[k], v, strict=True):
                np.testing.assert_array_equal(x, y, err_msg=k)
        else:
            assert a[k] == v, k


@pytest.mark.parametrize("opt", ["sgd", "adamw"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("explicit", [False, True], ids=["default_generator", "generator"])
def test_100_replayed_dropout_steps_equal_eager_training_to_the_bit(
    opt: str, dtype: str, explicit: bool
) -> None:
    """A dropout MLP trained 100 steps, captured and eagerly, from the same generator
    state: the same losses, parameters, gradients and optimizer state, and the
    generator where the eager steps left it (a later draw is the same)."""
    runs = []
    for captured in (False, True):
        minitorch.manual_seed(11)
        gen = minitorch.Generator(5) if explicit else None
        ps, optimizer, raw = _dropout_mlp(opt, dtype, gen)
        step = minitorch.capture(raw, optimizer=optimizer) if captured else raw
        losses = [_host(step(x, y)) for x, y in _batches(100, (8,), dtype)]
        g = gen if gen is not None else minitorch.default_generator
        runs.append((losses, ps, optimizer.state_dict(), g.get_state(), step))
        assert _host(minitorch.randn(3, generator=gen)).shape == (3,)  # the stream goes on
        runs[-1] += (_host(minitorch.randn(4, generator=gen)),)
    (want, eager_ps, eager_state, eager_gen, _, eager_next) = runs[0]
    (got, ps, state, gen_state, step, next_draw) = runs[1]
    assert step.stats == {"records": 1, "replays": 99, "fallbacks": 0}
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_array_equal(a, b, err_msg=f"loss {i}")
    assert len({float(v) for v in got}) > 50  # the masks differ from step to step
    _assert_same_params(ps, eager_ps)
    _assert_same_state(state, eager_state)
    assert gen_state == eager_gen
    np.testing.assert_array_equal(next_draw, eager_next)


def _noisy_step(
    w: minitorch.Tensor, opt: Any, g1: minitorch.Generator, g2: minitorch.Generator
) -> Callable[..., Any]:
    """A step drawing with randn, rand and randint, from two generators and the default
    one, interleaved; a draw nothing reads is taken too."""

    def step(x: minitorch.Tensor) -> tuple[minitorch.Tensor, minitorch.Tensor]:
        n, d = x.shape
        noise = minitorch.randn(n, d, generator=g1, dtype=x.dtype)
        minitorch.rand(5, generator=g2)  # thrown away: the stream still moves
        scale = minitorch.rand(n, 1, generator=g2, dtype=x.dtype) + 0.5
        rows = minitorch.randint(0, n, (n,))  # the default generator
        h = (x + 0.1 * noise) * scale
        h = minitorch.dropout(h[rows], 0.25, generator=g1)
        loss = ((h @ w) ** 2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss, rows

    return step


def test_randn_rand_randint_and_two_generators_interleaved_replay_as_eager() -> None:
    """Each generator's stream, and the default one's, moves as in eager steps: the
    draws of a replay are those of the eager step, including one whose result is thrown
    away and integer draws that index (their range check a guard)."""
    runs = []
    for captured in (False, True):
        minitorch.manual_seed(3)
        g1, g2 = minitorch.Generator(1), minitorch.Generator(2)
        w = minitorch.randn(N_IN, 3, generator=minitorch.Generator(9)).detach().requires_grad_()
        opt = minitorch.optim.SGD([w], lr=0.01)
        raw = _noisy_step(w, opt, g1, g2)
        step = minitorch.capture(raw, optimizer=opt) if captured else raw
        out = [step(x) for x, _ in _batches(30, (6,), "float32")]
        gens = [g.get_state() for g in (g1, g2, minitorch.default_generator)]
        runs.append(([_host(a) for o in out for a in o], _host(w), gens, step))
    (want, eager_w, eager_gens, _), (got, w_got, gens, step) = runs
    assert step.stats == {"records": 1, "replays": 29, "fallbacks": 0}
    assert "# randint: drawn" in step.source()[0] and "# rand: drawn" in step.source()[0]
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(w_got, eager_w)
    assert gens == eager_gens


def test_recording_again_for_new_shapes_keeps_the_stream() -> None:
    """Batches of two sizes alternate: two recordings, each replay drawing where the
    generator stands (also right after the other recording drew)."""
    runs = []
    for captured in (False, True):
        minitorch.manual_seed(7)
        ps, optimizer, raw = _dropout_mlp("adamw", "float64")
        step = minitorch.capture(raw, optimizer=optimizer) if captured else raw
        losses = [_host(step(x, y)) for x, y in _batches(20, (8, 5, 5), "float64")]
        runs.append((losses, ps, minitorch.default_generator.get_state(), step))
    assert runs[1][3].stats == {"records": 2, "replays": 18, "fallbacks": 0}
    _assert_same_training(runs[1], runs[0])


def test_a_generator_reseeded_between_calls_is_followed() -> None:
    """The replay draws from where the generator stands at each call: a manual_seed or
    set_state between calls (a resumed checkpoint) is seen."""
    step = minitorch.capture(lambda x: minitorch.dropout(x, 0.5))
    x = minitorch.ones(4, 5, dtype="float64")
    step(x)  # the recording
    saved = minitorch.default_generator.get_state()
    for reset in (
        lambda: minitorch.manual_seed(123),
        lambda: minitorch.default_generator.set_state(saved),
    ):
        reset()
        got = _host(step(x))
        reset()
        np.testing.assert_array_equal(got, _host(minitorch.dropout(x, 0.5)))
    assert step.stats == {"records": 1, "replays": 2, "fallbacks": 0}


def test_a_fallback_to_eager_draws_from_where_the_replay_started() -> None:
    """A guard that sees another value (a batch with an ignored target) runs the step
    eagerly: the draws the replay had taken are given back first, so the generator
    moves once per step, as eagerly."""
    runs = []
    for captured in (False, True):
        minitorch.manual_seed(4)
        ps, optimizer, raw = _dropout_mlp("sgd", "float32")
        step = minitorch.capture(raw, optimizer=optimizer) if captured else raw
        batches = _batches(12, (8,), "float32")
        for i in (3, 7, 8):  # ignored targets: the target check takes its other branch
            x, y = batches[i]
            batches[i] = (x, minitorch.tensor(np.where(np.arange(8) == 2, -100, _host(y))))
        losses = [_host(step(x, y)) for x, y in batches]
        runs.append((losses, ps, minitorch.default_generator.get_state(), step))
    assert runs[1][3].stats == {"records": 1, "replays": 8, "fallbacks": 3}
    _assert_same_training(runs[1], runs[0])


def test_a_draw_sized_by_a_value_of_the_step_is_refused() -> None:
    """``randn(n)`` with ``n`` a tensor of the step: its size is read on the host (the
    output shape depends on the values), refused like any host read."""

    def raw(x: minitorch.Tensor, n: minitorch.Tensor) -> minitorch.Tensor:
        return x.sum() + minitorch.randn(n, dtype=x.dtype).sum()

    with pytest.raises(CaptureError, match=r"a tensor used as an index \(range\(t\), seq\[t\]\)"):
        minitorch.capture(raw)(minitorch.ones(3), minitorch.tensor(2))


def test_an_optimizer_that_draws_in_its_step_draws_in_each_replay() -> None:
    """An optimizer's step() runs for real at each replay: its draws (gradient noise)
    are taken there, in their place among the step's own."""

    class NoisySGD(minitorch.optim.SGD):
        def step(self) -> None:
            for p in self.params:
                if p.grad is not None:
                    p.grad = p.grad + 0.01 * minitorch.randn(*p.shape, dtype=p.dtype).data
            super().step()

    runs = []
    for captured in (False, True):
        minitorch.manual_seed(2)
        w = minitorch.randn(N_IN, 2, generator=minitorch.Generator(1)).detach()
        w.requires_grad_()
        opt = NoisySGD([w], lr=0.1)

        def raw(x: minitorch.Tensor, w: minitorch.Tensor = w, opt: Any = opt) -> Any:
            loss = (minitorch.dropout(x, 0.5) @ w).sum()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss + minitorch.rand(1).sum()  # a draw after the optimizer's

        step = minitorch.capture(raw, optimizer=opt) if captured else raw
        losses = [_host(step(x)) for x, _ in _batches(10, (4,), "float32")]
        runs.append((losses, _host(w), minitorch.default_generator.get_state(), step))
    (want, eager_w, eager_gen, _), (got, w_got, gen, step) = runs
    assert step.stats == {"records": 1, "replays": 9, "fallbacks": 0}
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(w_got, eager_w)
    assert gen == eager_gen


def test_with_emulated_cuda_graphs_the_draws_are_inputs_of_the_graphs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With CUDA graphs (emulated on the CPU: static buffers rewritten at each launch)
    a draw is taken outside the graphs, and its array is copied into the graph's input
    buffer at each launch as the step's arguments are: training equals eager."""
    capture_module = importlib.import_module("minitorch.capture._captured")
    monkeypatch.setattr(capture_module, "graph_runner", lambda bes, arrays: _EmulatedGraph)
    _EmulatedGraph.runners = []
    runs = []
    for captured in (False, True):
        with minitorch.use_backend("numpy"):  # (the emulated runner holds NumPy buffers)
            minitorch.manual_seed(6)
            ps, optimizer, raw = _dropout_mlp("adamw", "float64")
            step = minitorch.capture(raw, optimizer=optimizer) if captured else raw
            losses = [_host(step(x, y)) for x, y in _batches(10, (8,), "float64")]
        runs.append((losses, ps, minitorch.default_generator.get_state()))
    _assert_same_training(runs[1], runs[0])
    assert any(r.launches >= 9 for r in _EmulatedGraph.runners)


@pytest.mark.gpu
def test_on_a_gpu_replayed_dropout_steps_train_as_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """On torch CUDA (every stretch a CUDA graph) or CuPy, 50 replayed float32 dropout
    steps stay within 1e-6 of eager training and leave the generator where the eager
    steps leave it: the masks, drawn on the host and uploaded at each replay, are
    copied into the graphs' input buffers at each launch."""
    made = _counting_graph_runners(monkeypatch)
    runs = []
    for captured in (False, True):
        minitorch.manual_seed(1)
        ps, optimizer, raw = _dropout_mlp("adamw", "float32")
        step = minitorch.capture(raw, optimizer=optimizer) if captured else raw
        losses = [_host(step(x, y)) for x, y in _batches(50, (8,), "float32")]
        runs.append((losses, [_host(p) for p in ps], minitorch.default_generator.get_state()))
    (want, eager_ps, eager_gen), (got, ps_got, gen) = runs
    assert step.stats == {"records": 1, "replays": 49, "fallbacks": 0}
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=f"loss {i}")
    for i, (a, b) in enumerate(zip(ps_got, eager_ps, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6, err_msg=f"param {i}")
    assert gen == eager_gen
    used = [r for r in made if r.graph is not None or r.eager]
    assert used
    if minitorch.get_backend().name == "torch":
        assert not any(r.eager for r in used)


def test_a_generator_made_inside_the_step_draws_constants() -> None:
    """A generator made in each call from a fixed seed draws the same numbers on every
    eager call: they are constants of the recording."""
    x = minitorch.ones(2, 3, dtype="float64")

    def inside(x: minitorch.Tensor) -> minitorch.Tensor:
        noise = minitorch.randn(2, 3, generator=minitorch.Generator(5), dtype="float64")
        return (x * noise).sum()

    step = minitorch.capture(inside)
    for k in range(3):
        np.testing.assert_array_equal(_host(step(x * k)), _host(inside(x * k)))
    assert step.stats == {"records": 1, "replays": 2, "fallbacks": 0}
    assert "drawn" not in step.source()[0]


class _Holder:
    gen: minitorch.Generator | None = None


def test_what_a_replay_of_draws_could_not_repeat_is_refused() -> None:
    """A generator reseeded or set inside the step, drawn from through its NumPy
    generator, or made in the step and kept after it."""
    x = minitorch.ones(2, 3, dtype="float64")
    g = minitorch.Generator(3)

    def reseeds(x: minitorch.Tensor) -> minitorch.Tensor:
        minitorch.manual_seed(0)
        return minitorch.dropout(x, 0.5).sum()

    with pytest.raises(CaptureError, match="changed the state of the default generator"):
        minitorch.capture(reseeds)(x)

    state = g.get_state()

    def sets_state(x: minitorch.Tensor) -> minitorch.Tensor:
        out = minitorch.dropout(x, 0.5, generator=g).sum()
        g.set_state(state)
        return out

    with pytest.raises(CaptureError, match=r"Generator\(seed=3\), made before the step"):
        minitorch.capture(sets_state)(x)

    def numpy_draw(x: minitorch.Tensor) -> minitorch.Tensor:
        scale = float(g.numpy.random())
        return (x * scale).sum()

    with pytest.raises(CaptureError, match=r"a draw from its \.numpy generator"):
        minitorch.capture(numpy_draw)(x)

    holder = _Holder()

    def keeps(x: minitorch.Tensor) -> minitorch.Tensor:
        if holder.gen is None:
            holder.gen = minitorch.Generator(1)
        return minitorch.dropout(x, 0.5, generator=holder.gen).sum()

    with pytest.raises(CaptureError, match=r"Generator\(seed=1\), a generator it made and kept"):
        minitorch.capture(keeps)(x)
    assert g.get_state() != minitorch.Generator(3).get_state()  # the eager step drew


@pytest.mark.parametrize(
    ("source", "draw"),
    [
        ("NumPy's global generator", lambda: float(np.random.rand())),
        ("NumPy's global generator", lambda: float(np.random.permutation(3)[0])),
        ("Python's random module", random.random),
        ("torch's default generator", lambda: float(torch.rand(()))),
    ],
)
def test_a_draw_from_a_global_generator_of_another_library_is_refused(
    source: str, draw: Callable[[], float]
) -> None:
    """Numbers drawn with NumPy, Python or torch directly would be constants of the
    recording (every replay would repeat them): refused, naming the generator."""
    x = minitorch.ones(3, dtype="float64")

    def noisy(x: minitorch.Tensor) -> minitorch.Tensor:
        return (x * draw()).sum()

    step = minitorch.capture(noisy)
    with pytest.raises(CaptureError, match=f"the step drew from {source}.*minitorch.randn"):
        step(x)
    assert step.stats["records"] == 0
    with pytest.raises(CaptureError, match=source):  # nothing kept: refused again
        step(x)
    assert step.stats["records"] == 0


def test_a_draw_on_a_backend_the_step_is_not_on_is_refused() -> None:
    # (torch: the reference, installed in every session, as NumPy is)
    other = "torch" if minitorch.get_backend().name == "numpy" else "numpy"
    x = minitorch.ones(3, dtype="float64")

    def step(x: minitorch.Tensor) -> minitorch.Tensor:
        with minitorch.use_backend(other, dtype="float64"):
            noise = minitorch.randn(3)
        return x.sum() + noise.sum()

    with pytest.raises(CaptureError, match=f"randn inside a captured step drew on the {other}"):
        minitorch.capture(step)(x)
