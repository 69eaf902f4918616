"""Data-parallel training on torch.distributed (Gloo, loopback only): two local
processes against single-process training, the gradient all-reduce, and the faults.

Marked ``distributed``: they start processes, so they run in their own nox session
(``nox -s distributed``), not in the per-backend suites."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import minitorch

pytest.importorskip("torch")
dist = pytest.importorskip("minitorch.distributed")

pytestmark = pytest.mark.distributed

HERE = Path(__file__).parent
WORKER = HERE / "distributed" / "worker.py"
TIMEOUT = 10.0  # seconds a rank waits for a silent peer (the workers' timeout)


def _worker_module() -> Any:
    spec = importlib.util.spec_from_file_location("dist_worker", WORKER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclasses.dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str
    seconds: float  # from the start until this rank was seen to end


def launch(
    mode: str, backend: str, out: Path, world: int = 2, kill_after: float = 120.0
) -> list[Run]:
    """Run ``worker.py MODE OUT`` as ranks 0..world-1 on a free loopback port; a rank
    still running ``kill_after`` seconds after the start is killed."""
    port = dist.free_port()
    procs = []
    for rank in range(world):
        env = {
            **os.environ,
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(world),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "MINITORCH_BACKEND": backend,
            "TEST_TIMEOUT": str(TIMEOUT),
            "OMP_NUM_THREADS": "1",
        }
        procs.append(
            subprocess.Popen(
                [sys.executable, str(WORKER), mode, str(out)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    start = time.monotonic()
    deadline = start + kill_after
    done = []
    for p in procs:
        try:
            stdout, stderr = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, stderr = p.communicate()
        done.append(Run(p.returncode, stdout, stderr, time.monotonic() - start))
    return done


BACKENDS = ["numpy", "torch"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_ranks_train_like_one_process(backend: str, tmp_path: Path) -> None:
    out = tmp_path / "params.npz"
    runs = launch("train", backend, out)
    for r in runs:
        assert r.returncode == 0, r.stderr
    w = _worker_module()
    with minitorch.use_backend(backend, dtype="float64"):
        params = w.init_params()  # rank 0's start (the others take it by broadcast)
        before = [p.numpy().copy() for p in params]
        w.train(0, 1, None, params)  # one process, the whole global batch
        expected = [p.numpy() for p in params]
    got = np.load(out)
    for i, e in enumerate(expected):
        assert not np.allclose(e, before[i])  # training moved it
        np.testing.assert_allclose(got[f"p{i}"], e, rtol=0, atol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "torch", "array_api_strict"])
def test_all_reduce_gradients_is_the_mean_over_ranks(backend: str, tmp_path: Path) -> None:
    pytest.importorskip(backend)
    out = tmp_path / "grads.npz"
    runs = launch("mixed", backend, out)
    for r in runs:
        assert r.returncode == 0, r.stderr
    got = np.load(out)
    shapes = [(3, 4), (5,), (2, 2, 2), (), (6, 1)]
    dtypes = ["float64", "float32", "float64", "float32", "float64"]
    for i, (shape, dtype) in enumerate(zip(shapes, dtypes, strict=True)):
        base = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
        rank0, rank1 = base * 1 + i, base * 2 + i
        if i == 4:
            rank1 = np.zeros(shape)  # no gradient on rank 1: counts as zeros
        expected = (rank0 + rank1) / 2
        assert got[f"g{i}"].shape == shape
        assert got[f"g{i}"].dtype == np.dtype(dtype)
        np.testing.assert_allclose(got[f"g{i}"], expected, rtol=0, atol=0)
    assert [d.rsplit(".", 1)[-1] for d in got["dtypes"].tolist()] == dtypes


def test_parameters_off_a_ranks_gpu_stop_every_rank(tmp_path: Path) -> None:
    """A rank whose parameters NCCL cannot reduce (off its GPU) says so in the check of
    the models, which every rank takes part in: all ranks raise at once, where the
    others waited for the rank that raised alone (until NCCL's timeout)."""
    runs = launch("off_gpu", "numpy", tmp_path / "x.npz")
    for r in runs:
        assert r.returncode == 3, r.stderr
        assert "rank 1's parameters are on cuda:0" in r.stderr
        assert r.seconds < TIMEOUT, r.seconds


def test_different_models_fail_before_training(tmp_path: Path) -> None:
    runs = launch("mismatch", "numpy", tmp_path / "x.npz")
    for rank, r in enumerate(runs):
        assert r.returncode == 3, r.stderr
        assert "the ranks' models differ" in r.stderr
        assert "parameter 2 is" in r.stderr
        assert f"rank {rank}" in r.stderr


def test_a_dead_rank_stops_the_other_with_a_message(tmp_path: Path) -> None:
    rank0, rank1 = launch("die", "numpy", tmp_path / "x.npz")
    assert rank1.returncode == 17
    assert rank0.returncode == 3, rank0.stderr
    assert "all_reduce_gradients: rank 0 of 2 lost the other ranks" in rank0.stderr
    assert rank0.seconds < TIMEOUT + 15  # at most the timeout, plus two starts


def test_a_raising_rank_stops_the_other(tmp_path: Path) -> None:
    rank0, rank1 = launch("raise", "numpy", tmp_path / "x.npz")
    assert rank1.returncode == 1
    assert "ValueError: a bug in rank 1's training loop" in rank1.stderr
    assert rank0.returncode == 3, rank0.stderr
    assert "lost the other ranks" in rank0.stderr


def test_a_silent_rank_times_out(tmp_path: Path) -> None:
    rank0, _ = launch("hang", "numpy", tmp_path / "x.npz", kill_after=TIMEOUT + 20)
    assert rank0.returncode == 3, rank0.stderr
    assert "did not answer within 10 s" in rank0.stderr
    assert TIMEOUT - 1 < rank0.seconds < TIMEOUT + 15


def test_shard_matches_distributed_sampler() -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import DistributedSampler

    for n, world, drop in [(10, 3, False), (10, 3, True), (7, 2, False), (4, 4, False)]:
        for rank in range(world):
            sampler = DistributedSampler(
                range(n), num_replicas=world, rank=rank, shuffle=False, drop_last=drop
            )
            mine = dist.shard(n, rank, world, shuffle=False, drop_last=drop)
            assert mine.tolist() == list(sampler), (n, world, drop, rank)
    # shuffled: a permutation dealt out, the same length everywhere, new each epoch
    shards = [dist.shard(11, r, 3, seed=5, epoch=2) for r in range(3)]
    assert {len(s) for s in shards} == {4}
    assert set(np.concatenate(shards).tolist()) == set(range(11))
    assert dist.shard(11, 0, 3, seed=5, epoch=3).tolist() != shards[0].tolist()
    del torch


class _CudaStub:
    """torch and CuPy's current-device calls, recorded (no GPU here)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.current = 0
        self.cuda = self

    def set_device(self, i: int) -> None:
        self.calls.append(("torch.cuda.set_device", i))
        self.current = i

    def current_device(self) -> int:
        return self.current

    def Device(self, i: int) -> Any:  # CuPy's name
        return types.SimpleNamespace(use=lambda: self.calls.append(("cupy Device.use", i)))


@pytest.mark.parametrize("name", ["cupy", "torch"])
def test_init_on_a_cuda_backend_moves_every_current_device_and_keeps_tf32(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a CUDA backend, init_process_group makes cuda:LOCAL_RANK minitorch's default
    device, torch's current device (NCCL's object collectives and barrier use it) and,
    on CuPy, CuPy's (CuPy allocates there); the backend keeps its tf32 setting. CuPy's
    current device was left at 0 on every rank, torch's too, and tf32 was dropped."""
    stub = _CudaStub()
    numpy_be = minitorch.backend.resolve("numpy")
    before = dataclasses.replace(numpy_be, name=name, library=stub, device="cuda:0", tf32=True)
    made: list[dict[str, Any]] = []

    def set_backend(n: str, **kwargs: Any) -> Any:
        made.append({"name": n, **kwargs})
        return dataclasses.replace(before, device=kwargs["device"], tf32=kwargs["tf32"])

    monkeypatch.setattr(dist, "get_backend", lambda: before)
    monkeypatch.setattr(dist, "set_backend", set_backend)
    monkeypatch.setattr(dist, "_torch", lambda: stub)
    monkeypatch.setenv("LOCAL_RANK", "1")
    init = f"tcp://127.0.0.1:{dist.free_port()}"
    dist.init_process_group("gloo", init_method=init, rank=0, world_size=1)
    try:
        assert made == [{"name": name, "dtype": before.dtype, "device": "cuda:1", "tf32": True}]
        want = [("torch.cuda.set_device", 1)]
        assert stub.calls == want + ([("cupy Device.use", 1)] if name == "cupy" else [])
    finally:
        dist.destroy_process_group()


def test_nccl_refuses_parameters_off_this_ranks_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over NCCL a rank reduces the arrays on its own GPU: parameters made before
    init_process_group moved the default device (still on cuda:0, or on the CPU) are
    refused with what to do, where NCCL would refuse a CPU tensor in its own words and
    two ranks on one GPU would hang (broadcast_parameters: in the check of the models,
    on every rank)."""
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{dist.free_port()}", rank=0, world_size=1
    )
    try:
        stub = _CudaStub()
        stub.current = 1
        monkeypatch.setattr(dist, "backend_name", lambda: "nccl")
        monkeypatch.setattr(dist, "_torch", lambda: stub)
        w = minitorch.tensor([1.0, 2.0], requires_grad=True)
        (w * w).sum().backward()
        for call in (dist.all_reduce_gradients, dist.broadcast_parameters):
            with pytest.raises(minitorch.errors.DistributedError, match=r"on cpu\. .*cuda:1"):
                call([w])
    finally:
        dist.destroy_process_group()


def test_a_cupy_buffer_goes_to_torch_and_back_through_dlpack_without_a_copy() -> None:
    """The flat buffer of a CuPy-like backend (its functions run on NumPy, which speaks
    DLPack too) becomes a torch tensor sharing its memory, and the collective's result
    comes back as an array of the backend sharing it again (DLPack, which orders CuPy's
    stream after torch's), not the old buffer read on an unordered stream."""
    cupy_like = dataclasses.replace(minitorch.backend.resolve("numpy"), name="cupy")
    flat = np.arange(6.0)
    t = dist._to_torch(flat, cupy_like)
    t.mul_(2.0)  # the collective, in place
    back = dist._from_torch(t, flat, cupy_like)
    np.testing.assert_array_equal(back, np.arange(6.0) * 2.0)
    assert np.shares_memory(back, flat) and back is not flat


def test_calls_without_a_group_say_so() -> None:
    w = minitorch.tensor([1.0], requires_grad=True)
    (w * 2.0).sum().backward()
    with pytest.raises(minitorch.errors.DistributedError, match="call init_process_group"):
        dist.all_reduce_gradients([w])


def _demo(*args: str, cwd: Path, launcher: Sequence[str] = ()) -> subprocess.CompletedProcess[str]:
    cmd = [*launcher] if launcher else [sys.executable, "-m", "minitorch"]
    return subprocess.run(
        [*cmd, "demo", "--epochs", "2", "--dtype", "float64", "--no-plots", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_demo_nproc_2_trains_like_one_process(backend: str, tmp_path: Path) -> None:
    one = _demo("--backend", backend, "--out", "one", cwd=tmp_path)
    two = _demo("--backend", backend, "--out", "two", "--nproc", "2", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr
    # rank 0 alone prints: one story, one line more than a single process's
    assert two.stdout.count("wrote ") == 1
    assert "data parallel: 2 processes on torch.distributed (gloo)" in two.stdout
    a, b = np.load(tmp_path / "one" / "best.npz"), np.load(tmp_path / "two" / "best.npz")
    assert sorted(a) == sorted(b)
    for k in a:
        np.testing.assert_allclose(b[k], a[k], rtol=0, atol=1e-6)
    m1 = json.loads((tmp_path / "one" / "metrics.json").read_text())
    m2 = json.loads((tmp_path / "two" / "metrics.json").read_text())
    for r1, r2 in zip(m1["history"], m2["history"], strict=True):
        for k in ("loss", "val_loss", "train_acc", "val_acc"):
            assert r2[k] == pytest.approx(r1[k], abs=1e-9), k


def test_demo_under_torchrun(tmp_path: Path) -> None:
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "-m"]
    one = _demo("--out", "one", cwd=tmp_path)
    two = _demo("--out", "two", cwd=tmp_path, launcher=[*torchrun, "minitorch"])
    assert two.returncode == 0, two.stderr
    assert two.stdout.count("wrote ") == 1
    a, b = np.load(tmp_path / "one" / "best.npz"), np.load(tmp_path / "two" / "best.npz")
    for k in a:
        np.testing.assert_allclose(b[k], a[k], rtol=0, atol=1e-6)
    del one


def test_demo_nproc_must_be_positive(tmp_path: Path) -> None:
    r = _demo("--nproc", "0", "--out", "x", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "minitorch demo: --epochs, --batch-size, --hidden and --nproc must be positive"
    ]


def test_the_docs_example_runs_alone_and_under_torchrun(tmp_path: Path) -> None:
    text = (HERE.parent / "docs" / "distributed.md").read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, flags=re.S) if "ddp" in b]
    script = tmp_path / "example.py"
    script.write_text(block)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for launcher, world in (([], 1), (["-m", "torch.distributed.run", "--nproc-per-node", "2"], 2)):
        r = subprocess.run(
            [sys.executable, *launcher, str(script)],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            cwd=tmp_path,
        )
        assert r.returncode == 0, r.stderr
        (line,) = r.stdout.strip().splitlines()
        assert line.startswith(f"rank 0 of {world}: last loss ")
        assert float(line.rsplit(" ", 1)[1]) < 0.5  # from ln 3 = 1.1 at the start
