"""The tense demo (``minitorch demo``) and its grammar grid, on the backend under test.

Training runs briefly (6 full-batch steps) on the session's backend in float64 and float32 and must
beat 90% validation accuracy on held-out verbs; one SGD step (with and without clipping)
is checked against PyTorch in float64; runs are deterministic for a seed and agree with
the NumPy backend; saved weights load back; the command writes its files.
"""

from __future__ import annotations

import itertools
import json
import math
import pathlib
import sys
import xml.etree.ElementTree as ET
from typing import Any

import numpy as np
import pytest

import minitorch
from minitorch.examples import grammar, tense
from minitorch.examples.grammar import HELD_OUT, PERSONS, TENSES, VERBS, Verb, conjugate
from minitorch.examples.tense import MLP, Config, train, train_step

# full batch: few steps and few distinct shapes (JAX compiles each op once per shape)
SHORT = Config(epochs=6, lr=2.0, batch_size=780, hidden=32, seed=0, clip=0.3)


def _device_arg(backend: Any) -> str:
    """The backend's device as ``--device`` takes it (CuPy's prints as <CUDA Device 0>)."""
    return minitorch.backend.device_name(backend, backend.device)


def _skip_unless_numpy(backend: Any, what: str) -> None:
    if backend.name != "numpy":
        pytest.skip(f"{what} does not depend on the backend: checked once, in the numpy session")


# ----------------------------------------------------------------------------- grammar
@pytest.mark.parametrize(
    ("base", "person", "tense", "phrase"),
    [
        ("walk", "he/she", "present", "he walks"),
        ("walk", "I", "past", "I walked"),
        ("walk", "you", "future", "you will walk"),
        ("walk", "he/she", "present perfect", "he has walked"),
        ("walk", "I", "past perfect", "I had walked"),
        ("study", "he/she", "present", "he studies"),
        ("stop", "you", "past", "you stopped"),
        ("go", "he/she", "present", "he goes"),
        ("go", "I", "past", "I went"),
        ("go", "you", "present perfect", "you have gone"),
        ("eat", "he/she", "past perfect", "he had eaten"),
        ("swim", "I", "past", "I swam"),
        ("do", "he/she", "present", "he does"),
        ("have", "I", "past", "I had"),
        ("have", "he/she", "present perfect", "he has had"),
        ("have", "you", "past perfect", "you had had"),
    ],
)
def test_conjugation_table(base: str, person: str, tense: str, phrase: str) -> None:
    verb = {v.base: v for v in VERBS}[base]
    assert conjugate(verb, person, tense) == phrase


def test_conjugate_rejects_unknown_person_and_tense() -> None:
    verb = Verb("walk", "walks", "walked", "walked")
    with pytest.raises(ValueError, match="person must be one of"):
        conjugate(verb, "we", "past")
    with pytest.raises(ValueError, match="tense must be one of"):
        conjugate(verb, "I", "future perfect")


def test_grid_size_and_verb_mix() -> None:
    regular = [v for v in VERBS if v.regular]
    irregular = [v for v in VERBS if not v.regular]
    assert len(VERBS) >= 30 and len(regular) >= 10 and len(irregular) >= 10
    assert len({v.base for v in VERBS}) == len(VERBS)
    grid = grammar.build_grid()
    assert len(grid) == len(VERBS) * len(PERSONS) * len(TENSES)
    assert len({c.phrase for c in grid}) == len(grid)
    held = [v for v in VERBS if v.base in HELD_OUT]
    assert len(held) == len(HELD_OUT) >= len(VERBS) // 5
    assert sum(not v.regular for v in held) >= 5 and sum(v.regular for v in held) >= 5


def test_every_tense_is_identifiable_from_the_form() -> None:
    # the past differs from the base form, so "I put" (present or past?) cannot occur
    assert all(v.past != v.base for v in VERBS)
    data = grammar.build_dataset()
    for x, cells in ((data.x_train, data.cells_train), (data.x_val, data.cells_val)):
        for i in range(0, len(cells), len(TENSES)):
            block = cells[i : i + len(TENSES)]
            assert [c.tense for c in block] == list(TENSES)
            assert len({c.verb for c in block}) == 1 and len({c.person for c in block}) == 1
            rows = {x[j].tobytes() for j in range(i, i + len(TENSES))}
            assert len(rows) == len(TENSES), f"two tenses of {block[0]} share their features"


def test_dataset_features_and_baseline() -> None:
    data = grammar.build_dataset()
    n_train_verbs = len(VERBS) - len(HELD_OUT)
    assert data.x_train.shape == (n_train_verbs * 15, data.n_features)
    assert data.x_val.shape == (len(HELD_OUT) * 15, data.n_features)
    assert data.y_train.dtype == np.int64 and set(data.y_val.tolist()) == set(range(5))
    assert {c.verb for c in data.cells_val} == set(HELD_OUT)
    assert not {c.verb for c in data.cells_train} & set(HELD_OUT)
    names = data.feature_names
    # irregular forms are word identities for training verbs only
    assert "word=ate" in names and "word=swam" not in names and "word=written" not in names
    row = data.x_val[data.cells_val.index(next(c for c in data.cells_val if c.phrase == "he swam"))]
    on = {names[j] for j in np.flatnonzero(row)}
    assert on == {"verb=swim", "person=he/she"}  # no auxiliary, no base/-s form, no suffix
    row = data.x_val[[c.phrase for c in data.cells_val].index("I have written")]
    on = {names[j] for j in np.flatnonzero(row)}
    assert on == {"verb=write", "person=I", "aux=have", "ends with -en", "ends with -n"}
    # every tense has one cell per (verb, person): the majority baseline is 1/5
    assert data.baseline() == ("present", pytest.approx(0.2))


def test_build_dataset_rejects_unknown_held_out_verb() -> None:
    with pytest.raises(ValueError, match="swimm"):
        grammar.build_dataset(held_out=("swimm",))


# ------------------------------------------------------------------------------ model
def test_xavier_init_draws_on_the_host(backend: Any) -> None:
    minitorch.manual_seed(7)
    model = MLP([256, 32, 5], dtype="float64")
    rng = np.random.default_rng(7)  # minitorch.rand draws with NumPy's PCG64, then moves
    for (w, b), (fan_in, fan_out) in zip(model.layers, [(256, 32), (32, 5)], strict=True):
        bound = math.sqrt(6.0 / (fan_in + fan_out))
        expected = rng.random((fan_in, fan_out)) * (2 * bound) - bound
        np.testing.assert_allclose(w.numpy(), expected, rtol=0, atol=1e-15)
        assert np.abs(w.numpy()).max() <= bound
        np.testing.assert_array_equal(b.numpy(), np.zeros(fan_out))
        assert w.is_leaf and w.requires_grad and b.requires_grad
        assert w.backend.name == backend.name
    w1 = model.layers[0][0].numpy()
    assert w1.std() == pytest.approx(math.sqrt(6.0 / 288) / math.sqrt(3), rel=0.03)


@pytest.mark.parametrize("clip", [0.0, 0.05])
def test_one_sgd_step_matches_torch(backend: Any, clip: float) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(6, 7)), rng.integers(0, 5, 6)
    minitorch.manual_seed(0)
    model = MLP([7, 4, 5], dtype="float64")
    state = model.state_dict()
    loss, norms = train_step(model, minitorch.tensor(x), minitorch.tensor(y), lr=0.3, clip=clip)

    ref = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in state.items()}
    h = torch.relu(torch.tensor(x) @ ref["layer1.weight"] + ref["layer1.bias"])
    logits = h @ ref["layer2.weight"] + ref["layer2.bias"]
    ref_loss = torch.nn.functional.cross_entropy(logits, torch.tensor(y))
    ref_loss.backward()
    ref_norms = [
        math.sqrt(sum(float((ref[f"layer{i}.{p}"].grad ** 2).sum()) for p in ("weight", "bias")))
        for i in (1, 2)
    ]
    if clip > 0:
        total = float(torch.nn.utils.clip_grad_norm_(list(ref.values()), clip))
        assert total > clip  # the clipped branch is what this case checks
    with torch.no_grad():
        for p in ref.values():
            p -= 0.3 * p.grad
    assert loss == pytest.approx(float(ref_loss.detach()), rel=1e-12)
    np.testing.assert_allclose(norms, ref_norms, rtol=1e-12)
    after = model.state_dict()
    for k, p in ref.items():
        np.testing.assert_allclose(after[k], p.detach().numpy(), rtol=1e-12, atol=1e-14)
        assert not np.array_equal(after[k], state[k]) or k.endswith("bias")


def test_clip_grad_norm_scales_to_max_norm(backend: Any) -> None:
    w = minitorch.tensor([3.0, 0.0], requires_grad=True)
    v = minitorch.tensor([[4.0]], requires_grad=True)
    ((w * w).sum() + (v * v).sum()).backward()  # grads [6, 0] and [[8]]: global norm 10
    assert tense.clip_grad_norm([w, v], 2.0) == pytest.approx(10.0)
    np.testing.assert_allclose(w.backend.to_numpy(w.grad), [1.2, 0.0], rtol=1e-6)
    np.testing.assert_allclose(v.backend.to_numpy(v.grad), [[1.6]], rtol=1e-6)
    assert tense.clip_grad_norm([w, v], 0.0) == pytest.approx(2.0, rel=1e-6)  # off: no change


def test_load_state_dict_errors_name_the_problem() -> None:
    model = MLP([3, 4, 2])
    state = model.state_dict()
    with pytest.raises(KeyError, match=r"layer2\.bias"):
        model.load_state_dict({k: v for k, v in state.items() if k != "layer2.bias"})
    state["layer1.weight"] = np.zeros((4, 3))
    with pytest.raises(ValueError, match=r"layer1.weight has shape \(3, 4\)"):
        model.load_state_dict(state)


# ---------------------------------------------------------------------------- training
@pytest.fixture(scope="module", params=["float64", "float32"])
def run(request: pytest.FixtureRequest, backend: Any) -> tense.TrainResult:
    return train(SHORT, backend=backend.name, device=backend.device, dtype=request.param)


def test_training_beats_90_percent_on_held_out_verbs(run: tense.TrainResult, backend: Any) -> None:
    first, last = run.history[0], run.final
    assert last["val_acc"] > 0.9, run.history
    assert last["train_acc"] > 0.9
    assert run.baseline == ("present", pytest.approx(0.2))
    assert last["val_acc"] > run.baseline[1] + 0.6
    assert last["loss"] < 0.6 * first["loss"]
    w = run.model.layers[0][0]
    assert w.backend.name == backend.name
    assert w.backend.dtype_name(w.dtype) == run.config.dtype


def test_history_rows(run: tense.TrainResult) -> None:
    keys = ["epoch", "loss", "val_loss", "train_acc", "val_acc", "grad_norm_layer1"]
    keys += ["grad_norm_layer2", "grad_norm_total", "clipped", "w_std_layer1", "w_max_layer2"]
    assert [int(r["epoch"]) for r in run.history] == [1, 2, 3, 4, 5, 6]
    for r in run.history:
        assert set(keys) <= set(r)
        assert all(math.isfinite(v) for v in r.values())
        assert r["grad_norm_total"] >= max(r["grad_norm_layer1"], r["grad_norm_layer2"]) * 0.99
        assert 0.0 <= r["clipped"] <= 1.0
    assert run.history[0]["clipped"] > 0  # clip 0.3 engages in the first epoch
    w = run.model.layers[1][0].numpy().astype(np.float64)
    assert run.final["w_std_layer2"] == pytest.approx(w.std(), rel=1e-12)
    assert run.final["w_max_layer2"] == pytest.approx(w.max(), rel=1e-12)
    assert run.best["val_acc"] == max(r["val_acc"] for r in run.history)


def test_same_seed_same_metrics(run: tense.TrainResult, backend: Any) -> None:
    again = train(SHORT, backend=backend.name, device=backend.device, dtype=run.config.dtype)
    assert again.history == run.history
    for k, v in run.best_state.items():
        np.testing.assert_array_equal(again.best_state[k], v)


def test_other_seed_other_weights(backend: Any) -> None:
    a = train(SHORT, epochs=1, backend=backend.name, device=backend.device, dtype="float64")
    b = train(SHORT, epochs=1, seed=1, backend=backend.name, device=backend.device, dtype="float64")
    assert a.history[0]["loss"] != b.history[0]["loss"]


def test_backend_agrees_with_numpy(run: tense.TrainResult) -> None:
    if run.config.backend == "numpy":
        pytest.skip("backend numpy: it is the reference of this comparison")
    ref = train(SHORT, backend="numpy", dtype=run.config.dtype)
    rtol = 1e-9 if run.config.dtype == "float64" else 1e-3
    for r, q in zip(run.history, ref.history, strict=True):
        assert r["val_acc"] == q["val_acc"] and r["train_acc"] == q["train_acc"]
        for k in ("loss", "val_loss", "grad_norm_layer1", "w_std_layer1"):
            assert r[k] == pytest.approx(q[k], rel=rtol), k


def test_best_weights_reload(run: tense.TrainResult, backend: Any, tmp_path: pathlib.Path) -> None:
    dt = run.config.dtype
    with minitorch.use_backend(backend.name, dtype=dt, device=backend.device):
        model = MLP(run.model.sizes)
        model.load_state_dict(run.best_state)
        path = model.save(tmp_path / "best.npz")
        again = MLP.load(path)
        x = minitorch.tensor(run.data.x_val, dtype=dt)
        with minitorch.no_grad():
            np.testing.assert_array_equal(again(x).numpy(), model(x).numpy())
            preds = again(x).argmax(axis=1).numpy()
    assert np.mean(preds == run.data.y_val) == run.best["val_acc"]
    with np.load(path) as f:
        assert sorted(f.files) == ["layer1.bias", "layer1.weight", "layer2.bias", "layer2.weight"]
        assert f["layer1.weight"].dtype == np.dtype(dt)


# -------------------------------------------------------------------------- command
def test_command_on_backend(backend: Any, tmp_path: pathlib.Path, capsys: Any) -> None:
    out = tmp_path / "out"
    argv = ["--backend", backend.name, "--device", _device_arg(backend), "--dtype", "float64"]
    argv += ["--epochs", "2", "--batch-size", "780", "--lr", "2", "--out", str(out), "--no-plots"]
    assert tense.main(argv) == 0
    text = capsys.readouterr().out
    assert f"on {backend.name}" in text and "dtype=float64" in text
    assert "validation accuracy" in text and "majority baseline (present)" in text
    rows = (out / "metrics.csv").read_text().splitlines()
    assert len(rows) == 3 and rows[0].startswith("epoch,loss,val_loss,train_acc,val_acc,")
    meta = json.loads((out / "metrics.json").read_text())
    assert meta["baseline"] == {"majority_class": "present", "val_acc": pytest.approx(0.2)}
    assert len(meta["history"]) == 2 and meta["config"]["backend"] == backend.name
    with minitorch.use_backend(backend.name, dtype="float64", device=backend.device):
        model = MLP.load(out / "best.npz")
        data = grammar.build_dataset()
        with minitorch.no_grad():
            preds = model(minitorch.tensor(data.x_val)).argmax(axis=1).numpy()
    assert np.mean(preds == data.y_val) == pytest.approx(meta["best"]["val_acc"])
    dot = (out / "graph.dot").read_text()
    assert dot.startswith('digraph "minitorch"') and "cross_entropy" in dot
    assert "layer1.weight" in dot and "h1 = relu(z1)" in dot


def test_command_rejects_bad_options(capsys: Any) -> None:
    assert tense.main(["--epochs", "0", "--no-plots"]) == 2
    assert "must be positive" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        tense.main(["--backend", "tensorflow"])


@pytest.fixture(scope="module")
def demo_out(backend: Any, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    _skip_unless_numpy(backend, "the demo's plots and graph picture")
    out = tmp_path_factory.mktemp("demo") / "out"
    assert tense.main(["--epochs", "3", "--out", str(out)]) == 0
    return out


def test_command_draws_the_graph_svg(demo_out: pathlib.Path) -> None:
    svg = demo_out / "graph.svg"
    assert svg.stat().st_size > 1000
    texts = [t.text or "" for t in ET.parse(svg).iter("{http://www.w3.org/2000/svg}text")]
    assert "cross_entropy(reduction=mean)" in texts and "layer2.weight" in texts
    assert any(t.startswith("‖grad‖₂ ") for t in texts)


def test_command_writes_plots(demo_out: pathlib.Path) -> None:
    pytest.importorskip("matplotlib", reason="matplotlib not installed (the 'plots' extra)")
    for name in ("loss", "accuracy", "grad_norms", "weights", "overview"):
        png = demo_out / f"{name}.png"
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000, name


def test_command_without_matplotlib(
    backend: Any, tmp_path: pathlib.Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _skip_unless_numpy(backend, "the missing-matplotlib message")
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert tense.main(["--epochs", "1", "--out", str(tmp_path)]) == 0
    assert "pip install 'minitorch[plots]' for plots" in capsys.readouterr().out
    assert (tmp_path / "metrics.csv").exists() and not list(tmp_path.glob("*.png"))


def test_progress_bar_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    assert tense._progress(3, enabled=True) is None  # pytest's stdout is not a terminal
    assert tense._progress(3, enabled=False) is None
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    monkeypatch.setitem(sys.modules, "tqdm", None)
    assert tense._progress(3, enabled=True) is None  # no tqdm: plain lines instead
    monkeypatch.delitem(sys.modules, "tqdm")
    pytest.importorskip("tqdm", reason="tqdm not installed (the 'plots' extra)")
    bar = tense._progress(3, enabled=True)
    assert bar is not None and bar.total == 3
    bar.close()


@pytest.mark.parametrize("lr", ["0", "-0.5", "nan"])
def test_demo_refuses_a_learning_rate_that_is_not_positive(
    lr: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        tense._parser().parse_args(["--lr", lr])
    assert exc.value.code == 2
    assert f"argument --lr: must be a positive finite number, got {lr}" in capsys.readouterr().err


def test_plot_epoch_ticks_show_the_first_and_the_last_epoch() -> None:
    for n in range(1, 400):
        ticks = tense.epoch_ticks(n)
        assert ticks[0] == 1 and ticks[-1] == n, (n, ticks)
        assert ticks == sorted(set(ticks)) and len(ticks) <= 8, (n, ticks)
        gaps = [b - a for a, b in itertools.pairwise(ticks)]
        assert not gaps or min(gaps) * 4 >= max(gaps) or n <= 6, (n, ticks)
