"""``minitorch check``: the gradcheck report over the registry, through the real CLI."""

from __future__ import annotations

import os
import re
from typing import Any

import pytest

import minitorch
from minitorch.autograd import apply
from minitorch.cli import main
from minitorch.errors import OpError
from minitorch.ops import REGISTRY
from minitorch.ops._registry import Facts, OpDef, Sample

SOME_OPS = "exp,mul,sum,cross_entropy,leaky_relu,getitem"
#: sessions that gradcheck in fast mode (JAX) run ``minitorch check --fast`` too
FAST = ["--fast"] if os.environ.get("MINITORCH_GRADCHECK_FAST") == "1" else []
ROW = re.compile(r"^(\w+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(.*)$")


def _rows(text: str) -> dict[str, tuple[str, float, float, str]]:
    """op -> (ref, forward err, grad err, status) from the printed table."""
    rows = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m and m.group(1) in REGISTRY and m.group(3) != "-":
            rows[m.group(1)] = (m.group(3), float(m.group(4)), float(m.group(5)), m.group(6))
    return rows


def _check(backend: Any, *args: str) -> list[str]:
    extra = [] if "--backend" in args else ["--backend", backend.name]
    return ["check", *extra, *FAST, *args]


def test_check_passes_and_reports_each_op(backend: Any, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch", reason="PyTorch is the forward reference")
    rc = main(_check(backend, "--ops", SOME_OPS))
    out = capsys.readouterr().out
    assert rc == 0, out
    assert f"backend {backend.name} " in out and "dtype float64" in out
    assert "PyTorch" in out and "float64" in out
    # the tolerances it passes against are in the header
    assert "pass: forward err <= 1e-07 + 1e-07 * |ref|" in out
    assert "grad err <= 1e-05 + 0.001 * |numeric|, step 1e-06" in out
    rows = _rows(out)
    assert set(rows) == set(SOME_OPS.split(",")), out
    for name, (ref, fwd, grad, status) in rows.items():
        assert ref == "torch", (name, ref)
        assert status == "ok", (name, status)
        assert fwd <= 1e-7, (name, fwd)
        assert grad <= 1e-5, (name, grad)  # central differences with eps=1e-6
    assert re.search(rf"6 op\(s\) checked on {backend.name}: 6 passed, 0 failed, 0 skipped", out)


def test_check_numpy_reference_and_float32(
    backend: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    rc = main(_check(backend, "--ops", "tanh,mul", "--reference", "numpy", "--dtype", "float32"))
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "minitorch on NumPy" in out and "dtype float32" in out
    assert "pass: forward err <= 1e-05 + 1e-05 * |ref|" in out
    assert "grad err <= 0.01 + 0.01 * |numeric|, step 0.01" in out
    rows = _rows(out)
    assert {r[0] for r in rows.values()} <= {"numpy", "self"}
    assert all(r[1] <= 1e-5 and r[3] == "ok" for r in rows.values()), out


def test_check_fast_mode(backend: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_check(backend, "--ops", "softmax,var", "--fast")) == 0
    assert "fast gradcheck" in capsys.readouterr().out


def test_unknown_op_lists_the_valid_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--ops", "exp,nosuchop"]) == 2
    err = capsys.readouterr().err
    assert "unknown op(s) 'nosuchop'" in err
    assert "valid names are:" in err and "leaky_relu" in err and "exp" in err


def test_non_differentiable_op_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--ops", "argmax"]) == 2
    assert "'argmax' have no derivative" in capsys.readouterr().err


def test_unknown_backend(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--backend", "nosuchbackend", "--ops", "exp"]) == 2
    assert "nosuchbackend" in capsys.readouterr().err


def _fake_op(name: str, fwd: Any, vjp: Any) -> OpDef:
    """An exp-like op with a PyTorch reference, built without registering anything."""
    op = OpDef(
        name=name,
        fwd=fwd,
        vjp=vjp,
        nin=1,
        params=(),
        defaults={},
        scalars=False,
        moves=False,
        family="test",
        facts=Facts(
            ref=lambda torch, x: torch.exp(x),
            samples=(Sample(((3, 4),)), Sample(((),))),
            kind="unary",
        ),
    )
    object.__setattr__(op, "fn", lambda x: apply(op, [x], {}))
    return op


def _exp(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    out = xp.exp(x)
    return out, (out,)


def _exp_vjp_wrong(xp: Any, g: Any, saved: Any, needs: Any) -> tuple[Any]:
    (out,) = saved
    return (g * out * 1.01,)  # 1% off


def _exp_off(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    out = xp.exp(x) * (1.0 + 1e-6)  # forward 1e-6 off; its own VJP is consistent
    return out, (out,)


def _exp_vjp(xp: Any, g: Any, saved: Any, needs: Any) -> tuple[Any]:
    (out,) = saved
    return (g * out,)


def test_a_wrong_vjp_fails_the_check(
    backend: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch", reason="PyTorch is the forward reference")
    monkeypatch.setitem(REGISTRY, "bad_exp", _fake_op("bad_exp", _exp, _exp_vjp_wrong))
    rc = main(_check(backend, "--ops", "bad_exp,exp"))
    out = capsys.readouterr().out
    assert rc == 1, out
    rows = _rows(out)
    assert rows["bad_exp"][3] == "FAIL" and rows["exp"][3] == "ok"
    assert rows["bad_exp"][2] > 1e-3  # 1% of exp(x) on [-2, 2]
    assert rows["bad_exp"][1] <= 1e-7  # the forward is right
    assert "1 passed, 1 failed" in out
    assert re.search(
        r"bad_exp sample 0 .*gradcheck (\(fast mode\) )?failed for input 0 \(shape \(3, 4\)\)", out
    )
    assert "analytically but" in out


def test_a_wrong_forward_fails_the_check(
    backend: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch", reason="PyTorch is the forward reference")
    monkeypatch.setitem(REGISTRY, "off_exp", _fake_op("off_exp", _exp_off, _exp_vjp))
    rc = main(_check(backend, "--ops", "off_exp"))
    out = capsys.readouterr().out
    assert rc == 1, out
    _, fwd, grad, status = _rows(out)["off_exp"]
    assert status == "FAIL" and fwd > 1e-7 and grad < 1e-5
    assert "forward differs from the torch reference" in out


@pytest.mark.backend_independent
def test_every_op_is_checked_none_skipped(capsys: pytest.CaptureFixture[str]) -> None:
    """A full run: no op is skipped for want of samples (astype and move have theirs),
    and the zero-size variants of every op's samples are checked too."""
    pytest.importorskip("torch", reason="PyTorch is the forward reference")
    diff = {n for n, op in REGISTRY.items() if op.builtin and op.differentiable}
    rc = main(["check", "--fast", "--ops", ",".join(sorted(diff))])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "skip:" not in out and "no samples" not in out, out
    rows = _rows(out)
    assert set(rows) == diff and {"astype", "move"} <= set(rows), set(rows) ^ diff
    assert all(r[3] == "ok" for r in rows.values()), out
    m = re.search(r"(\d+) zero-size variant\(s\) checked; (\d+) sample\(s\) refused", out)
    assert m and int(m.group(1)) >= 100 and int(m.group(2)) >= 10, out
    assert re.search(
        rf"{len(diff)} op\(s\) checked on numpy: {len(diff)} passed, 0 failed, 0 sk", out
    )


def test_move_is_checked_on_each_backend(backend: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """move's samples: to NumPy, and to the default device of the tensor's own backend
    (array-api-strict's CPU_DEVICE from device1), with their zero-size variants."""
    pytest.importorskip("torch", reason="PyTorch is the forward reference")
    rc = main(_check(backend, "--ops", "move,astype"))
    out = capsys.readouterr().out
    assert rc == 0, out
    rows = _rows(out)
    assert rows["move"][3] == "ok" and rows["astype"][3] == "ok", out
    assert re.search(r"^move\s+4\s", out, re.M), out  # 2 samples, 2 zero-size variants


def _exp_empty_refused(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    if 0 in x.shape:
        raise OpError(f"empty_exp: refuses the zero-size shape {tuple(x.shape)}")
    return _exp(xp, x)


def _max_of_nothing_is_zero(xp: Any, x: Any) -> tuple[Any, tuple[Any, ...]]:
    out = xp.zeros((), dtype=x.dtype, device=x.device) if 0 in x.shape else xp.max(x)
    return out, (x, out)


def _max_vjp(xp: Any, g: Any, saved: Any, needs: Any) -> tuple[Any]:
    x, out = saved
    hit = xp.astype(x == out, x.dtype)
    return (g * hit / xp.sum(hit),)


def test_zero_size_variants_are_held_to_the_reference(
    backend: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An op that refuses a zero-size input PyTorch computes fails the check, and so does
    one that returns a value where PyTorch refuses (the max of nothing)."""
    pytest.importorskip("torch", reason="PyTorch is the forward reference")
    refuses = _fake_op("empty_exp", _exp_empty_refused, _exp_vjp)
    zero_max = _fake_op("zero_max", _max_of_nothing_is_zero, _max_vjp)
    object.__setattr__(
        zero_max,
        "facts",
        Facts(ref=lambda torch, x: torch.amax(x, dim=(0, 1)), samples=(Sample(((3, 4),)),)),
    )
    monkeypatch.setitem(REGISTRY, "empty_exp", refuses)
    monkeypatch.setitem(REGISTRY, "zero_max", zero_max)
    rc = main(_check(backend, "--ops", "empty_exp,zero_max,max"))
    out = capsys.readouterr().out
    assert rc == 1, out
    rows = _rows(out)
    assert rows["empty_exp"][3] == "FAIL" and rows["zero_max"][3] == "FAIL", out
    assert rows["max"][3] == "ok", out  # it refuses the max of nothing, as PyTorch
    assert re.search(
        r"empty_exp sample 2 \(zero-size \(0, 4\).*refuses .*but the torch reference "
        r"computes it",
        out,
    ), out
    assert re.search(
        r"zero_max sample 1 \(zero-size \(0, 4\).*the torch reference refuses it .*but "
        r"the op returned a result",
        out,
    ), out


def test_the_fakes_did_not_leak() -> None:
    for name in ("bad_exp", "off_exp", "empty_exp", "zero_max"):
        assert name not in REGISTRY
    assert minitorch.REGISTRY is REGISTRY
