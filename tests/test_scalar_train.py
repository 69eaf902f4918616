"""Tests of the tense-identity training example (``minigrad.examples.tense``)."""

from __future__ import annotations

import random

import pytest

from minigrad import MLP, Value, squared_error
from minigrad.examples import tense


@pytest.fixture(scope="module")
def losses() -> list[float]:
    return tense.train(epochs=300, seed=0)


def test_reaches_loss_below_half_within_300_epochs(losses: list[float]) -> None:
    assert len(losses) == 300
    assert losses[0] > 3.0  # an untrained network is far off
    assert losses[-1] < 0.5
    first_below = next(i + 1 for i, loss in enumerate(losses) if loss < 0.5)
    assert first_below <= 100
    assert all(loss >= 0.0 for loss in losses)


def test_training_is_deterministic_under_a_seed(losses: list[float]) -> None:
    assert tense.train(epochs=60, seed=0) == losses[:60]  # bit-for-bit
    assert tense.train(epochs=5, seed=1) != losses[:5]


def test_training_matches_torch_float64() -> None:
    """Three epochs of the same full-batch SGD in PyTorch give the same losses and weights."""
    torch = pytest.importorskip("torch")
    epochs, lr = 3, 0.01
    seed = 4
    model = MLP(5, [16, 5], rng=random.Random(seed))  # the initial weights tense.fit draws
    l1, l2 = model.layers

    def tensor(rows: list[list[float]]) -> torch.Tensor:
        return torch.tensor(rows, dtype=torch.float64, requires_grad=True)

    w1 = tensor([[p.data for p in n.w] for n in l1.neurons])
    b1 = tensor([[n.b.data for n in l1.neurons]])
    w2 = tensor([[p.data for p in n.w] for n in l2.neurons])
    b2 = tensor([[n.b.data for n in l2.neurons]])
    x = torch.eye(5, dtype=torch.float64)
    ref = []
    for _ in range(epochs):
        out = (x @ w1.T + b1).relu() @ w2.T + b2
        loss = ((out - x) ** 2).sum(dim=1).mean()
        loss.backward()
        with torch.no_grad():
            for t in (w1, b1, w2, b2):
                t -= lr * t.grad
                t.grad = None
        ref.append(loss.item())

    trained, ours = tense.fit(epochs=epochs, seed=seed, lr=lr)
    assert ours == pytest.approx(ref, rel=1e-12)
    first_weights = [p.data for p in trained.layers[0].neurons[0].w]
    assert first_weights == pytest.approx(w1[0].tolist(), rel=1e-12)


def test_accumulated_per_sample_gradients_equal_the_full_batch_gradient() -> None:
    model = MLP(5, [16, 5], rng=random.Random(0))
    data = [tense.one_hot(i) for i in range(5)]
    for x in data:  # what tense.fit does: one backward() per tense, grads accumulate
        (squared_error(model(x), x) * 0.2).backward()
    accumulated = [p.grad for p in model.parameters()]
    model.zero_grad()
    (Value.sum([squared_error(model(x), x) for x in data]) / 5).backward()
    full = [p.grad for p in model.parameters()]
    assert any(g != 0.0 for g in full)
    assert accumulated == pytest.approx(full, rel=1e-12, abs=1e-15)


def test_main_prints_the_curve_and_predictions(capsys: pytest.CaptureFixture[str]) -> None:
    assert tense.main(["--epochs", "40"]) == 0
    out = capsys.readouterr().out
    assert "epoch    1  loss 4.693547" in out
    assert "loss first below 0.5 at epoch 36" in out
    assert "'had walked'    past perfect -> past perfect" in out
