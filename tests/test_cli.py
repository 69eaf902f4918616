"""The ``minitorch demo`` command as a user runs it: the real console script in a
subprocess. Bad options end in one clear line and exit 2, before any training; a run
that diverges stops and leaves the output folder as it was; a run owns its folder."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.backend_independent

SCRIPT = shutil.which("minitorch", path=str(Path(sys.executable).parent))


def _demo(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    cmd = [SCRIPT] if SCRIPT else [sys.executable, "-m", "minitorch"]
    env = {**os.environ, "MINITORCH_BACKEND": "numpy"}
    return subprocess.run(
        [*cmd, "demo", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def _one_clear_line(run: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    for needle in needles:
        assert needle in run.stderr, run.stderr
    assert "train on" not in run.stdout  # refused before any training


@pytest.mark.skipif(os.name != "posix", reason="POSIX paths")
def test_an_output_folder_that_cannot_be_written_is_refused_first(tmp_path: Path) -> None:
    _one_clear_line(_demo("--out", "/proc/x"), "--out /proc/x: cannot write there")
    afile = tmp_path / "file"
    afile.write_text("keep")
    _one_clear_line(_demo("--out", str(afile)), "exists and is not a folder")
    assert afile.read_text() == "keep"


@pytest.mark.parametrize(
    ("flag", "value", "needle"),
    [
        ("--seed", "-5", "argument --seed: must be an integer >= 0, got -5"),
        ("--lr", "nan", "argument --lr: must be a positive finite number, got nan"),
        ("--lr", "inf", "argument --lr: must be a positive finite number, got inf"),
        ("--lr", "-1", "argument --lr: must be a positive finite number, got -1"),
        ("--lr", "0", "argument --lr: must be a positive finite number, got 0"),
        ("--clip", "-1", "argument --clip: must be a finite number >= 0 (0: off), got -1"),
        ("--clip", "nan", "argument --clip: must be a finite number >= 0 (0: off), got nan"),
        ("--device", "cuda", "the numpy backend has only the 'cpu' device, got 'cuda'"),
    ],
)
def test_options_that_cannot_be_meant_are_refused(flag: str, value: str, needle: str) -> None:
    _one_clear_line(_demo(flag, value, "--no-plots"), needle)


def test_a_device_the_library_was_not_built_for_is_refused() -> None:
    torch = pytest.importorskip("torch", reason="torch not installed (the 'torch' extra)")
    if torch.cuda.is_available():
        pytest.skip("this PyTorch has a CUDA device")
    _one_clear_line(
        _demo("--backend", "torch", "--device", "cuda", "--no-plots"),
        "cannot use device 'cuda' here: torch.cuda.is_available() is False",
    )


def test_a_diverging_run_stops_and_keeps_the_previous_results(tmp_path: Path) -> None:
    out = tmp_path / "out"
    good = _demo("--epochs", "2", "--no-plots", "--out", str(out))
    assert good.returncode == 0, good.stderr
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    bad = _demo("--epochs", "5", "--lr", "1e30", "--clip", "0", "--no-plots", "--out", str(out))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "Traceback" not in bad.stderr
    assert "the training loss became nan or infinite in epoch 1 of 5" in bad.stderr
    assert f"Nothing was written: {out} keeps what it held" in bad.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_run_owns_its_folder(tmp_path: Path) -> None:
    """Files an earlier run wrote and this one does not (its plots, under --no-plots)
    are removed, and the command says so."""
    out = tmp_path / "out"
    out.mkdir()
    for name in ("loss.png", "overview.png"):
        (out / name).write_bytes(b"an earlier run's plot")
    (out / "notes.txt").write_text("the user's own file")
    run = _demo("--epochs", "1", "--no-plots", "--out", str(out))
    assert run.returncode == 0, run.stderr
    assert not (out / "loss.png").exists() and not (out / "overview.png").exists()
    assert "removed what an earlier run left there: loss.png, overview.png" in run.stdout
    assert (out / "notes.txt").read_text() == "the user's own file"  # not the demo's
    assert (out / "metrics.csv").is_file() and (out / "best.npz").is_file()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serving(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.skipif(os.name != "posix", reason="one process on POSIX (execve)")
def test_killing_minitorch_lab_stops_the_page() -> None:
    """`minitorch lab` becomes the Streamlit server: killing its PID stops the page (a
    child server would go on serving)."""
    pytest.importorskip("streamlit", reason="streamlit not installed (the 'lab' extra)")
    port = _free_port()
    cmd = [SCRIPT] if SCRIPT else [sys.executable, "-m", "minitorch"]
    proc = subprocess.Popen(
        [*cmd, "lab", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 90
        while not _serving(port):
            assert proc.poll() is None, "minitorch lab exited before serving"
            assert time.monotonic() < deadline, "the lab did not start serving within 90 s"
            time.sleep(0.5)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while _serving(port) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _serving(port), "the page is still served after minitorch lab was killed"
