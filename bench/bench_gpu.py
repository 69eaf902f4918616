"""minitorch on a CUDA GPU (issue #15's table): hand-written CuPy, minitorch on CuPy,
minitorch on torch/CUDA and PyTorch eager on CUDA, interleaved in one process.

Workloads (``--sizes``, default all):

- ``mlp256``, ``mlp4096``: an MLP 784-512-512-10 training step (ReLU, softmax
  cross-entropy, SGD) at batch 256 and 4096;
- ``deep4096``: an MLP of 4 layers 4096 x 4096 (ReLU, cross-entropy over 4096 classes) at
  batch 4096;
- ``elementwise``: a chain of 200 elementwise ops (mul, add, tanh, exp) on an 8x8 tensor,
  forward + backward, reported per op (the per-op overhead of bench_overhead.py, on the
  GPU: launch and Python cost, no arithmetic to speak of).

Everything is float32 with TF32 off everywhere (minitorch's default; PyTorch's and CuPy's
too unless ``torch.backends.cuda.matmul`` or ``CUPY_TF32`` say otherwise: the header
prints what they say). Each contender runs ``--steps`` steps per block, then waits for the
device (``synchronize``); the time per step is the median over ``--blocks`` blocks (15),
the contenders taking turns block by block. Before timing, the contenders' first-step
losses (or gradients) are compared.

    python bench/bench_gpu.py [--device cuda:0] [--sizes mlp256 elementwise] [--blocks 15]
    python bench/bench_gpu.py --sizes mlp256 --blocks 5 --profile 20
    python bench/bench_gpu.py --cpu-smoke

``--profile N`` then runs N more steps of each contender under cProfile and prints where
the host's time went (the functions with the most time of their own, per step, and the
Python calls per step): on a GPU at launch-bound sizes the host is the bottleneck, and
this tells minitorch's own bookkeeping from the library's launches, which CuPy's and
torch's compiled functions account to the Python function that calls them.

Exit status: 0 when it measured; 3 when there is nothing to measure here (no CUDA GPU
for CuPy nor for torch: it says why on stderr). Contenders whose library is missing (no
CuPy, a CPU build of torch) are left out with a line saying so. ``--cpu-smoke`` runs the
same code on the CPU with tiny sizes, NumPy standing in for CuPy and torch's CPU device
for CUDA, to check the script end to end where there is no GPU (its times mean
nothing); a disagreement between contenders then exits 1.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import functools
import gc
import importlib.util
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _workloads import N_OPS, chain, init

NOTHING_TO_MEASURE = 3
LR = 0.01


@dataclasses.dataclass(frozen=True)
class Workload:
    title: str
    sizes: tuple[int, ...]  # layer widths (MLPs); (rows, cols) for elementwise
    batch: int
    steps: int  # per block
    smoke: tuple[tuple[int, ...], int]  # sizes and batch under --cpu-smoke


WORKLOADS = {
    "mlp256": Workload(
        "MLP 784-512-512-10 training step, batch 256",
        (784, 512, 512, 10),
        256,
        20,
        ((32, 16, 16, 10), 8),
    ),
    "mlp4096": Workload(
        "MLP 784-512-512-10 training step, batch 4096",
        (784, 512, 512, 10),
        4096,
        10,
        ((32, 16, 16, 10), 64),
    ),
    "deep4096": Workload(
        "MLP 4 layers 4096x4096 training step, batch 4096",
        (4096,) * 5,
        4096,
        5,
        ((24,) * 5, 16),
    ),
    "elementwise": Workload(
        f"chain of {N_OPS} elementwise ops on 8x8, forward + backward",
        (8, 8),
        0,
        5,
        ((8, 8), 0),
    ),
}


@dataclasses.dataclass
class Contender:
    """One implementation: ``step()`` queues one step's work and returns its result
    (on the device, unread); ``sync()`` waits for the device."""

    name: str
    step: Callable[[], Any]
    sync: Callable[[], None]
    stats: Callable[[], dict[str, int]] | None = None  # a replay's records and replays


# ------------------------------------------------------------------ the workloads


def hand_mlp_step(xp: Any, params: list[Any], x: Any, y: Any, rows: Any) -> Any:
    """One SGD step of the MLP written out by hand in ``xp`` (NumPy or CuPy): forward,
    softmax cross-entropy, backward, update in place. Returns the loss, unread."""
    layers = len(params) // 2
    n = x.shape[0]
    inputs, pre = [], []
    h = x
    for i in range(layers):
        inputs.append(h)
        z = h @ params[2 * i] + params[2 * i + 1]
        pre.append(z)
        h = xp.maximum(z, 0.0) if i < layers - 1 else z
    m = h.max(axis=1, keepdims=True)
    e = xp.exp(h - m)
    s = e.sum(axis=1, keepdims=True)
    loss = xp.mean(xp.log(s[:, 0]) + m[:, 0] - h[rows, y])
    d = e / s
    d[rows, y] -= 1.0
    d /= n
    grads: list[Any] = [None] * len(params)
    for i in reversed(range(layers)):
        grads[2 * i] = inputs[i].T @ d
        grads[2 * i + 1] = d.sum(axis=0)
        if i:
            d = d @ params[2 * i].T
            d *= pre[i - 1] > 0
    for p, g in zip(params, grads, strict=True):
        p -= LR * g
    return loss


def hand_chain(xp: Any, x: Any) -> Any:
    """The elementwise chain and its backward by hand; returns the gradient of sum()."""
    saved = []
    y = x
    for _ in range(N_OPS // 4):
        y = y * 0.5
        y = y + 0.1
        y = xp.tanh(y)
        saved.append(y)
        y = xp.exp(y)
        saved.append(y)
    g = xp.ones_like(y)
    for t, e in zip(saved[0::2][::-1], saved[1::2][::-1], strict=True):
        g = g * e  # exp
        g = g * (1.0 - t * t)  # tanh
        g = g * 0.5  # mul (the add passes g through)
    return g


def mlp_forward(params: list[Any], x: Any, relu: Callable[[Any], Any]) -> Any:
    layers = len(params) // 2
    h = x
    for i in range(layers):
        h = h @ params[2 * i] + params[2 * i + 1]
        if i < layers - 1:
            h = relu(h)
    return h


# ------------------------------------------------------------------ the contenders


def hand_contender(
    name: str, xp: Any, sync: Callable[[], None], w: Workload, sizes: tuple[int, ...], data: Any
) -> Contender:
    if w.batch == 0:
        x = xp.asarray(data)
        return Contender(name, lambda: hand_chain(xp, x), sync)
    x, y = (xp.asarray(a) for a in data)
    params = [xp.asarray(p) for p in init(sizes)]
    rows = xp.arange(x.shape[0])
    return Contender(name, lambda: hand_mlp_step(xp, params, x, y, rows), sync)


def minitorch_contender(
    name: str,
    backend: str,
    device: str,
    sync: Callable[[], None],
    w: Workload,
    sizes: tuple[int, ...],
    data: Any,
    replay: bool = False,
) -> Contender | None:
    """minitorch's step; with ``replay`` the same step under ``minitorch.capture``
    (recorded on its first call, then replayed: CUDA graphs on a GPU)."""
    import minitorch as mt

    if replay and w.batch == 0:
        return None  # the chain is timed per op, eagerly
    with mt.use_backend(backend, dtype="float32", device=device):
        if w.batch == 0:
            x0 = mt.tensor(data)

            def step_chain() -> Any:
                x = x0.detach().requires_grad_()
                return chain(x)

            return Contender(name, step_chain, sync)
        x, y = mt.tensor(data[0]), mt.tensor(data[1])
        params = [mt.tensor(p, requires_grad=True) for p in init(sizes)]
    opt = mt.optim.SGD(params, lr=LR)

    def train(x: Any, y: Any) -> Any:
        loss = mt.cross_entropy(mlp_forward(params, x, mt.relu), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    if not replay:
        return Contender(name, lambda: train(x, y).data, sync)
    captured = mt.capture(train, optimizer=opt)
    return Contender(name, lambda: captured(x, y).data, sync, lambda: captured.stats)


def torch_contender(
    name: str,
    device: str,
    sync: Callable[[], None],
    w: Workload,
    sizes: tuple[int, ...],
    data: Any,
) -> Contender:
    import torch

    if w.batch == 0:
        x0 = torch.tensor(data, device=device)
        return Contender(name, lambda: chain(x0.detach().requires_grad_()), sync)
    x, y = (torch.tensor(a, device=device) for a in data)
    params = [torch.tensor(p, device=device, requires_grad=True) for p in init(sizes)]

    def step() -> Any:
        loss = torch.nn.functional.cross_entropy(mlp_forward(params, x, torch.relu), y)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p -= LR * p.grad
                p.grad = None
        return loss.detach()

    return Contender(name, step, sync)


# ------------------------------------------------------------------ what this machine has


@dataclasses.dataclass
class Setup:
    device: str
    contenders: list[tuple[str, Callable[[Workload, tuple[int, ...], Any], Contender | None]]]
    notes: list[str]
    header: str


def _cupy_ready() -> tuple[Any, str]:
    if importlib.util.find_spec("cupy") is None:
        return None, "CuPy is not installed (pip install 'minitorch[cupy]')"
    import cupy

    try:
        if cupy.cuda.runtime.getDeviceCount() == 0:
            return None, "CuPy sees no CUDA GPU"
    except Exception as exc:  # no driver
        return None, f"CuPy cannot reach a CUDA GPU ({type(exc).__name__}: {exc})"
    return cupy, ""


def _torch_ready() -> tuple[Any, str]:
    if importlib.util.find_spec("torch") is None:
        return None, "torch is not installed"
    import torch

    if not torch.cuda.is_available():
        return None, f"torch {torch.__version__} has no CUDA GPU here"
    return torch, ""


def gpu_setup(device: str) -> Setup | str:
    """The GPU contenders this machine can run, or why there are none."""
    import minitorch as mt

    cupy, why_cupy = _cupy_ready()
    torch, why_torch = _torch_ready()
    if cupy is None and torch is None:
        return f"no CUDA GPU to measure on: {why_cupy}; {why_torch}"
    contenders: list[tuple[str, Callable[..., Contender | None]]] = []
    notes, parts = [], []
    if cupy is not None:
        index = int(
            mt.backend.resolve_device(device, lambda k: cupy.cuda.runtime.getDevice()).partition(
                ":"
            )[2]
            or 0
        )
        cupy.cuda.Device(index).use()
        sync_cupy = cupy.cuda.Device(index).synchronize
        contenders += [
            (
                "cupy (by hand)",
                lambda w, s, d: hand_contender("cupy (by hand)", cupy, sync_cupy, w, s, d),
            ),
            (
                "minitorch-cupy",
                lambda w, s, d: minitorch_contender(
                    "minitorch-cupy", "cupy", device, sync_cupy, w, s, d
                ),
            ),
            (
                "minitorch-cupy replay",
                lambda w, s, d: minitorch_contender(
                    "minitorch-cupy replay", "cupy", device, sync_cupy, w, s, d, replay=True
                ),
            ),
        ]
        props = cupy.cuda.runtime.getDeviceProperties(index)
        name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
        parts.append(f"{name}; CuPy {cupy.__version__} (CUPY_TF32={_env('CUPY_TF32')})")
    else:
        notes.append(f"left out: hand-written CuPy and minitorch-cupy ({why_cupy})")
    if torch is not None:
        sync_torch = functools.partial(torch.cuda.synchronize, torch.device(device))
        contenders += [
            (
                "minitorch-torch-cuda",
                lambda w, s, d: minitorch_contender(
                    "minitorch-torch-cuda", "torch", device, sync_torch, w, s, d
                ),
            ),
            (
                "minitorch-torch-cuda replay",
                lambda w, s, d: minitorch_contender(
                    "minitorch-torch-cuda replay", "torch", device, sync_torch, w, s, d, True
                ),
            ),
            (
                "pytorch eager (cuda)",
                lambda w, s, d: torch_contender(
                    "pytorch eager (cuda)", device, sync_torch, w, s, d
                ),
            ),
        ]
        if cupy is None:
            parts.append(torch.cuda.get_device_name(torch.device(device)))
        parts.append(
            f"torch {torch.__version__} (matmul fp32_precision="
            f"{torch.backends.cuda.matmul.fp32_precision!r})"
        )
    else:
        notes.append(f"left out: minitorch-torch-cuda and PyTorch eager ({why_torch})")
    return Setup(device, contenders, notes, "; ".join(parts))


def smoke_setup() -> Setup:
    """The same contenders on the CPU: NumPy for CuPy, torch's CPU device for CUDA."""
    import numpy

    def no_sync() -> None:
        return None

    return Setup(
        "cpu",
        [
            (
                "cupy (by hand)",
                lambda w, s, d: hand_contender("numpy for cupy (by hand)", numpy, no_sync, w, s, d),
            ),
            (
                "minitorch-cupy",
                lambda w, s, d: minitorch_contender(
                    "minitorch-numpy for -cupy", "numpy", "cpu", no_sync, w, s, d
                ),
            ),
            (
                "minitorch-cupy replay",
                lambda w, s, d: minitorch_contender(
                    "minitorch-numpy replay", "numpy", "cpu", no_sync, w, s, d, True
                ),
            ),
            (
                "minitorch-torch-cuda",
                lambda w, s, d: minitorch_contender(
                    "minitorch-torch-cpu for -cuda", "torch", "cpu", no_sync, w, s, d
                ),
            ),
            (
                "minitorch-torch-cuda replay",
                lambda w, s, d: minitorch_contender(
                    "minitorch-torch-cpu replay", "torch", "cpu", no_sync, w, s, d, True
                ),
            ),
            (
                "pytorch eager (cuda)",
                lambda w, s, d: torch_contender("pytorch eager (cpu)", "cpu", no_sync, w, s, d),
            ),
        ],
        [
            "--cpu-smoke: tiny sizes on the CPU, NumPy for CuPy, torch CPU for CUDA; "
            "the times mean nothing"
        ],
        f"numpy {numpy.__version__} (CPU smoke run)",
    )


def _env(name: str) -> str:
    import os

    return os.environ.get(name, "unset")


# ------------------------------------------------------------------ timing


def timed_blocks(contenders: list[Contender], blocks: int, steps: int) -> dict[str, float]:
    """Median seconds per step of each contender: blocks of ``steps`` steps closed by a
    device synchronisation, the contenders taking turns block by block."""
    for c in contenders:  # warm-up: kernels compiled, memory pools filled
        for _ in range(2):
            c.step()
        c.sync()
    gc.collect()
    gc.freeze()
    times: dict[str, list[float]] = {c.name: [] for c in contenders}
    try:
        for _ in range(blocks):
            for c in contenders:
                c.sync()
                t0 = time.perf_counter()
                for _ in range(steps):
                    c.step()
                c.sync()
                times[c.name].append((time.perf_counter() - t0) / steps)
    finally:
        gc.unfreeze()
    return {k: statistics.median(v) for k, v in times.items()}


def profile(c: Contender, steps: int, top: int = 8) -> list[str]:
    """Lines on where ``steps`` steps of ``c`` spend the host's time: Python calls per
    step, then the ``top`` functions by their own time per step (the calls of a
    compiled function, a CuPy or torch launch, count for the function that makes them)."""
    c.sync()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        c.step()
    c.sync()
    prof.disable()
    stats = pstats.Stats(prof)
    rows = stats.stats  # type: ignore[attr-defined]
    calls = sum(v[1] for v in rows.values())
    lines = [f"  profile of {c.name}: {calls / steps:.0f} calls per step"]
    ranked = sorted(rows.items(), key=lambda kv: -kv[1][2])[:top]
    for (path, line, func), (_, ncalls, tottime, _, _) in ranked:
        where = f"{'/'.join(path.split('/')[-2:])}:{line}" if line else "(compiled)"
        lines.append(f"    {tottime / steps * 1e6:8.1f} us {ncalls / steps:6.1f}x  {func} {where}")
    return lines


def device_busy(c: Contender, steps: int, kind: str = "CUDA") -> tuple[float, float]:
    """Seconds per step that the device spent running ``c``'s kernels and copies over
    ``steps`` steps (CUPTI, through torch's profiler: CuPy's launches are seen too), and
    their number per step. ``kind="CPU"`` (the CPU smoke run) counts torch's host ops
    instead, to check the code path: nested ops then count twice."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    c.sync()
    with torch_profile(activities=[getattr(ProfilerActivity, kind)]) as prof:
        for _ in range(steps):
            c.step()
        c.sync()
    events = [e for e in prof.events() if e.device_type.name == kind]
    busy = sum(e.time_range.elapsed_us() for e in events) * 1e-6
    return busy / steps, len(events) / steps


def host(value: Any) -> np.ndarray:
    from minitorch.backend import to_host

    return np.asarray(to_host(value), dtype=np.float64)


def agreement(contenders: list[Contender]) -> float:
    """The largest difference between the first step's results (losses, or the chain's
    gradients), relative to the first contender's."""
    results = [host(c.step()) for c in contenders]
    ref = results[0]
    scale = max(float(np.abs(ref).max()), 1e-30)
    return max(float(np.abs(r - ref).max()) / scale for r in results[1:])


def make_data(w: Workload, sizes: tuple[int, ...], batch: int) -> Any:
    rng = np.random.default_rng(1)
    if w.batch == 0:
        return rng.uniform(-1, 1, sizes).astype(np.float32)
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    return x, rng.integers(0, sizes[-1], batch)


def run(
    setup: Setup,
    names: list[str],
    blocks: int,
    steps: int | None,
    smoke: bool,
    profile_steps: int = 0,
    busy_steps: int = 0,
) -> int:
    print(
        f"bench_gpu: {setup.header}; device {setup.device}; float32; median of {blocks} "
        f"blocks, synchronised"
    )
    for note in setup.notes:
        print(f"  ({note})")
    status = 0
    for key in names:
        w = WORKLOADS[key]
        sizes, batch = w.smoke if smoke else (w.sizes, w.batch)
        data = make_data(w, sizes, batch)
        made = [(label, make(w, sizes, data)) for label, make in setup.contenders]
        contenders = [c for _, c in made if c is not None]
        labels = {c.name: label for label, c in made if c is not None}
        tolerance = 1e-4
        diff = agreement(contenders)
        n_steps = steps or (1 if smoke else w.steps)
        t = timed_blocks(contenders, blocks, n_steps)
        title = w.title if not smoke else f"{w.title} [smoke: sizes {sizes}, batch {batch}]"
        print(title)
        base_name = next(iter(t))
        base = t[base_name]
        per = f" per {N_OPS}-op chain" if w.batch == 0 else ""
        for name, v in t.items():
            extra = f", {v / (N_OPS + 1) * 1e6:7.2f} us per op" if w.batch == 0 else ""
            print(f"  {name:30s}: {v * 1e3:8.3f} ms{per}{extra}  ({v / base:.2f}x {base_name})")
        by_label = {labels[k]: v for k, v in t.items()}
        for num, den in (
            ("minitorch-cupy", "cupy (by hand)"),
            ("minitorch-cupy", "pytorch eager (cuda)"),
            ("minitorch-torch-cuda", "pytorch eager (cuda)"),
            ("minitorch-cupy replay", "pytorch eager (cuda)"),
            ("minitorch-torch-cuda replay", "pytorch eager (cuda)"),
        ):
            if num in by_label and den in by_label:
                print(f"  {num} / {den}: {by_label[num] / by_label[den]:.2f}x")
        verdict = "agree" if diff <= tolerance else "DISAGREE"
        print(f"  first-step results {verdict}: max relative difference {diff:.1e}")
        # every contender has taken the same number of steps: the next one's results
        # show whether the replays trained as the eager steps did
        replays = [c for c in contenders if labels[c.name].endswith("replay")]
        for c in replays:
            eager = next(e for e in contenders if labels[e.name] == labels[c.name][:-7])
            last = agreement([eager, c])
            ok = "agree" if last <= tolerance else "DISAGREE"
            stats = c.stats() if c.stats is not None else {}
            print(f"  {c.name} after the timed steps: {ok} with {eager.name} ({last:.1e}); {stats}")
            diff = max(diff, last)
        if diff > tolerance:
            status = 1 if smoke else status
        for c in contenders if busy_steps else ():
            busy, launched = device_busy(c, busy_steps, "CPU" if smoke else "CUDA")
            print(
                f"  device busy, {c.name}: {busy * 1e6:.0f} us per step, {busy / t[c.name]:.0%} "
                f"of its median step; {launched:.1f} kernels and copies per step"
            )
        for c in contenders if profile_steps else ():
            print("\n".join(profile(c, profile_steps)))
    return status


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", help="CUDA device (default: the current one)")
    ap.add_argument(
        "--sizes",
        nargs="+",
        choices=sorted(WORKLOADS),
        default=list(WORKLOADS),
        help="which workloads (default: all)",
    )
    ap.add_argument("--blocks", type=int, default=15)
    ap.add_argument(
        "--steps", type=int, default=None, help="steps per block (default: per workload)"
    )
    ap.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="then profile N steps of each contender on the host (cProfile)",
    )
    ap.add_argument(
        "--busy",
        type=int,
        default=0,
        metavar="N",
        help="then time the GPU's own work in N steps of each contender (torch's profiler)",
    )
    ap.add_argument(
        "--cpu-smoke",
        action="store_true",
        help="check the script on the CPU: tiny sizes, NumPy for CuPy, torch CPU",
    )
    args = ap.parse_args(argv)
    if args.cpu_smoke:
        blocks = min(args.blocks, 3)
        return run(smoke_setup(), args.sizes, blocks, args.steps, True, args.profile, args.busy)
    setup = gpu_setup(args.device)
    if isinstance(setup, str):
        print(
            f"bench_gpu: nothing measured, {setup}. Run it on a machine with a CUDA GPU "
            f"(pip install 'minitorch[cupy,torch]'), or try --cpu-smoke to check the script.",
            file=sys.stderr,
        )
        return NOTHING_TO_MEASURE
    if args.busy and importlib.util.find_spec("torch") is None:
        print(
            "bench_gpu: --busy reads the GPU's activity through torch's profiler", file=sys.stderr
        )
        return NOTHING_TO_MEASURE
    return run(setup, args.sizes, args.blocks, args.steps, False, args.profile, args.busy)


if __name__ == "__main__":
    sys.exit(main())
