"""Training: TinyLM learns the shipped text; a resumed run repeats an uninterrupted one
exactly; ``python -m minimodel`` runs."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import minimodel
import numpy as np
import pytest
from minimodel import (
    CharTokenizer,
    Linear,
    LMConfig,
    TinyLM,
    TrainConfig,
    get_batch,
    load_checkpoint,
    load_text,
    save_checkpoint,
    train,
)

import minitorch
from conftest import assert_same, host

# Measured on 2 CPU cores (NumPy, float32, default config: d_model 64, 2 layers, 4 heads,
# context 64, batch 16, tanh GELU, AdamW lr 1e-2): the first loss is 4.13-4.17 (ln 56 =
# 4.03); the mean of the last 10 of 600 steps is 1.27 / 1.25 / 1.26 for seeds 0 / 1 / 2;
# about 15 ms a step. The target leaves about 0.3 of margin (some 100 steps of progress).
STEPS = 600
TARGET = 1.6


def _data() -> tuple[CharTokenizer, np.ndarray]:
    text = load_text()
    tok = CharTokenizer(text)
    return tok, np.asarray(tok.encode(text), dtype=np.int64)


def test_the_shipped_text() -> None:
    text = load_text()
    assert text.startswith("From fairest creatures we desire increase,\n")
    assert text.rstrip().endswith("So long lives this, and this gives life to thee.")
    assert 10_000 < len(text) < 12_000 and text.count("\n\n") == 17  # Sonnets 1-18
    tok = CharTokenizer(text)
    assert tok.decode(tok.encode(text)) == text
    with pytest.raises(ValueError, match="'%' is not in the vocabulary"):
        tok.encode("thou%")


def test_batches_depend_on_seed_and_step_only() -> None:
    data = np.arange(1000)
    x, y = get_batch(data, 4, 16, seed=0, step=7)
    assert x.shape == y.shape == (4, 16) and x.dtype == np.int64
    np.testing.assert_array_equal(y, x + 1)  # the next tokens
    np.testing.assert_array_equal(get_batch(data, 4, 16, 0, 7)[0], x)
    assert not np.array_equal(get_batch(data, 4, 16, 0, 8)[0], x)
    assert not np.array_equal(get_batch(data, 4, 16, 1, 7)[0], x)


@pytest.mark.slow
def test_tiny_lm_learns_the_sonnets(numpy_float32: Any) -> None:
    tok, data = _data()
    minitorch.manual_seed(0)
    model = TinyLM(LMConfig(vocab_size=tok.vocab_size))
    assert model.tok_emb.weight.dtype == np.float32
    start = time.perf_counter()
    losses = train(model, data, TrainConfig(steps=STEPS, seed=0))
    seconds = time.perf_counter() - start
    assert len(losses) == STEPS
    assert abs(losses[0] - math.log(tok.vocab_size)) < 0.4, losses[0]
    final = float(np.mean(losses[-10:]))
    print(f"\nTinyLM: loss {losses[0]:.3f} -> {final:.3f} in {STEPS} steps, {seconds:.1f} s")
    assert final < TARGET, f"mean of the last 10 losses {final:.3f} >= {TARGET}"
    sample = tok.decode(model.generate(tok.encode("Thou "), 100, rng=0))
    assert len(sample) == 105 and sample.startswith("Thou ")


def test_resume_equals_an_uninterrupted_run(backend: Any, tmp_path: Path) -> None:
    """k steps, a checkpoint (model + optimizer + step), a fresh model and optimizer
    loaded from it, m more steps: the same losses and weights as k + m steps at once.
    Dropout is on, so the per-step reseeding of its masks is checked too."""
    tok, data = _data()
    config = LMConfig(
        vocab_size=tok.vocab_size, block_size=16, d_model=16, n_layers=1, n_heads=2, dropout=0.1
    )
    k, m = 3, 3
    run = TrainConfig(steps=k + m, batch_size=4, seed=5)

    def fresh() -> tuple[TinyLM, Any]:
        minitorch.manual_seed(0)
        model = TinyLM(config)
        return model, minitorch.optim.AdamW(model.parameters(), lr=run.lr)

    model, opt = fresh()
    straight = train(model, data, run, optimizer=opt)

    first, opt1 = fresh()
    head = train(first, data, TrainConfig(**{**run.__dict__, "steps": k}), optimizer=opt1)
    path = save_checkpoint(tmp_path / "ckpt.mt", first, opt1, step=k)
    saved = minitorch.load(path)  # the optimizer's state is plain data minitorch.save writes
    assert saved["step"] == k and saved["optimizer"]["type"] == "AdamW"
    assert saved["optimizer"]["step"] == [k] * len(list(first.parameters()))

    minitorch.manual_seed(99)  # the resumed model starts from other weights
    second = TinyLM(config)
    opt2 = minitorch.optim.AdamW(second.parameters(), lr=0.5)  # hyper-parameters come back
    start = load_checkpoint(path, second, opt2)
    assert start == k and opt2.lr == run.lr
    tail = train(second, data, run, optimizer=opt2, start_step=start)

    assert_same(np.array(head + tail), np.array(straight))
    for (n, p), q in zip(second.named_parameters(), model.parameters(), strict=True):
        assert_same(host(p), host(q), err_msg=n)


def test_a_captured_step_trains_as_the_eager_step(backend: Any) -> None:
    """``minitorch.capture`` on a TinyLM training step (as a user writes it: zero_grad,
    loss, backward, AdamW step): the attention's causal mask, made on the first call and
    kept by the module, is a constant of the recording; 6 replayed steps leave the
    losses and every weight where the eager steps leave them, to the bit (on a GPU to
    1e-12: see ``conftest.on_gpu``)."""
    tok, data = _data()
    config = LMConfig(vocab_size=tok.vocab_size, block_size=16, d_model=16, n_layers=1, n_heads=2)

    def fresh() -> tuple[TinyLM, Any]:
        minitorch.manual_seed(0)
        model = TinyLM(config)
        return model, minitorch.optim.AdamW(model.parameters(), lr=1e-2)

    def make(model: TinyLM, opt: Any) -> Any:
        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
            opt.zero_grad()
            loss = model.loss(x, y)
            loss.backward()
            opt.step()
            return loss

        return step

    (eager_model, eager_opt), (model, opt) = fresh(), fresh()
    eager, step = make(eager_model, eager_opt), minitorch.capture(make(model, opt), optimizer=opt)
    for i in range(8):
        x, y = (minitorch.tensor(a) for a in get_batch(data, 4, 16, seed=3, step=i))
        assert_same(host(step(x, y)), host(eager(x, y)))
    # zero_grad first: recorded without .grad, then with it; then replays
    assert step.stats == {"records": 2, "replays": 6, "fallbacks": 0}
    for (n, p), q in zip(model.named_parameters(), eager_model.parameters(), strict=True):
        assert_same(host(p), host(q), err_msg=n)


def test_a_captured_step_with_dropout_trains_as_the_eager_step(backend: Any) -> None:
    """A TinyLM with dropout (on the embeddings, the attention weights, the residuals):
    each replay draws its masks from minitorch's default generator as the eager step
    does, so 8 captured steps leave the losses, the weights and the generator where 8
    eager steps leave them, to the bit."""
    tok, data = _data()
    config = LMConfig(
        vocab_size=tok.vocab_size, block_size=16, d_model=16, n_layers=1, n_heads=2, dropout=0.2
    )
    runs = []
    for captured in (False, True):
        minitorch.manual_seed(0)
        model = TinyLM(config)
        opt = minitorch.optim.AdamW(model.parameters(), lr=1e-2)

        def step(
            x: minitorch.Tensor, y: minitorch.Tensor, model: TinyLM = model, opt: Any = opt
        ) -> Any:
            loss = model.loss(x, y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        run = minitorch.capture(step, optimizer=opt) if captured else step
        batches = [get_batch(data, 4, 16, seed=3, step=i) for i in range(8)]
        losses = [host(run(*(minitorch.tensor(a) for a in b))) for b in batches]
        runs.append((losses, model, minitorch.default_generator.get_state(), run))
    (want, eager_model, eager_gen, _), (got, model, gen, run) = runs
    assert run.stats == {"records": 1, "replays": 7, "fallbacks": 0}
    for a, b in zip(got, want, strict=True):
        assert_same(a, b)
    for (n, p), q in zip(model.named_parameters(), eager_model.parameters(), strict=True):
        assert_same(host(p), host(q), err_msg=n)
    assert gen == eager_gen


def test_checkpoint_of_another_configuration_is_refused(tmp_path: Path) -> None:
    model = TinyLM(LMConfig(vocab_size=5, block_size=4, d_model=8, n_layers=1, n_heads=2))
    opt = minitorch.optim.AdamW(model.parameters())
    path = save_checkpoint(tmp_path / "c.mt", model, opt, step=0)
    other = TinyLM(LMConfig(vocab_size=5, block_size=4, d_model=8, n_layers=2, n_heads=2))
    with pytest.raises(ValueError, match=r"'n_layers': \(1, 2\)"):
        load_checkpoint(path, other, minitorch.optim.AdamW(other.parameters()))


def test_python_dash_m_minimodel() -> None:
    src = str(Path(minimodel.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")])),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "minimodel", "--steps", "20", "--seed", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "step     1  loss 4." in out
    assert "final loss" in out and "after 20 steps" in out
    sample = out.split("sample:\n", 1)[1].rstrip("\n")
    assert sample.startswith("Shall I ") and len(sample) >= 200
    bad = subprocess.run(
        [sys.executable, "-m", "minimodel", "--steps", "0"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert bad.returncode == 2 and "--steps must be >= 1" in bad.stderr


def test_an_evaluation_step_must_be_given_the_models_parameters(backend: Any) -> None:
    """An evaluation step reading a model under no_grad (a target network synced between
    calls, here through an operator with a constant first, t * 1.0): minimodel's
    parameters are a Tensor subclass, which the capture missed, so the replays kept the
    weights of the recording. It is refused; given the parameters, it follows them."""
    minitorch.manual_seed(0)
    target = Linear(3, 2)

    def evaluate(x: minitorch.Tensor) -> minitorch.Tensor:
        with minitorch.no_grad():
            return x @ (target.weight * 1.0).T

    x = minitorch.ones(4, 3)
    with pytest.raises(minitorch.CaptureError, match="require grad but are no parameters"):
        minitorch.capture(evaluate)(x)
    step = minitorch.capture(evaluate, params=list(target.parameters()))
    for k in (1.0, 2.0, 3.0):
        with minitorch.no_grad():
            target.weight.copy_(minitorch.full(target.weight.shape, k))
        np.testing.assert_array_equal(host(step(x)), host(evaluate(x)))
    assert step.stats["replays"] == 2
