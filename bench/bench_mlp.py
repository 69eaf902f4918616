"""MLP training step: 784-512-512-10, ReLU, softmax cross-entropy, SGD, float32, one
thread. minitorch (NumPy backend) vs the same network written by hand in NumPy
(forward + backward) vs PyTorch eager, interleaved in one process; and the same
minitorch step under ``minitorch.capture`` (recorded once, then replayed).

    python bench/bench_mlp.py [--repeats 40] [--batch 256 32]

Targets: minitorch at most 1.10x the hand-written NumPy time at both batch sizes (issue
#3); the captured replay at most 1.0x hand-written NumPy at batch 32 (issue #15).
"""

from __future__ import annotations

import os

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

import argparse  # noqa: E402
from collections.abc import Callable  # noqa: E402

import numpy as np  # noqa: E402
from _timing import interleaved, paired_ratio  # noqa: E402
from _workloads import init  # noqa: E402

SIZES = (784, 512, 512, 10)
LR = 0.01


def numpy_step(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> float:
    w1, b1, w2, b2, w3, b3 = params
    n = x.shape[0]
    h1 = x @ w1 + b1
    a1 = np.maximum(h1, 0.0)
    h2 = a1 @ w2 + b2
    a2 = np.maximum(h2, 0.0)
    logits = a2 @ w3 + b3
    m = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - m)
    s = e.sum(axis=1, keepdims=True)
    loss = float(np.mean(np.log(s[:, 0]) + m[:, 0] - logits[np.arange(n), y]))
    d = e / s
    d[np.arange(n), y] -= 1.0
    d /= n
    gw3 = a2.T @ d
    gb3 = d.sum(axis=0)
    da2 = d @ w3.T
    da2 *= h2 > 0
    gw2 = a1.T @ da2
    gb2 = da2.sum(axis=0)
    da1 = da2 @ w2.T
    da1 *= h1 > 0
    gw1 = x.T @ da1
    gb1 = da1.sum(axis=0)
    for p, g in zip(params, (gw1, gb1, gw2, gb2, gw3, gb3), strict=True):
        p -= LR * g
    return loss


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=40)
    ap.add_argument("--batch", type=int, nargs="+", default=[256, 32])
    args = ap.parse_args()

    import torch

    import minitorch as mt

    torch.set_num_threads(1)
    for batch in args.batch:
        rng = np.random.default_rng(1)
        x = rng.standard_normal((batch, SIZES[0])).astype(np.float32)
        y = rng.integers(0, SIZES[-1], batch)

        np_params = init(SIZES)
        mt_params = [mt.tensor(p, requires_grad=True) for p in init(SIZES)]
        cap_params = [mt.tensor(p, requires_grad=True) for p in init(SIZES)]
        t_params = [torch.tensor(p, requires_grad=True) for p in init(SIZES)]
        mx, my = mt.tensor(x), mt.tensor(y)
        tx, ty = torch.tensor(x), torch.tensor(y)

        def train(params: list[mt.Tensor], opt: mt.optim.SGD) -> Callable[..., mt.Tensor]:
            def step(x: mt.Tensor, y: mt.Tensor) -> mt.Tensor:
                w1, b1, w2, b2, w3, b3 = params
                h = mt.relu(x @ w1 + b1)
                h = mt.relu(h @ w2 + b2)
                loss = mt.cross_entropy(h @ w3 + b3, y)
                loss.backward()
                opt.step()
                opt.zero_grad()
                return loss

            return step

        cap_opt = mt.optim.SGD(cap_params, lr=LR)
        eager = train(mt_params, mt.optim.SGD(mt_params, lr=LR))
        replay = mt.capture(train(cap_params, cap_opt), optimizer=cap_opt)

        def cap_step() -> float:
            return float(replay(mx, my).item())  # the loss read after the step

        def mt_step() -> float:
            return float(eager(mx, my).item())

        def torch_step() -> float:
            w1, b1, w2, b2, w3, b3 = t_params
            h = torch.relu(tx @ w1 + b1)
            h = torch.relu(h @ w2 + b2)
            loss = torch.nn.functional.cross_entropy(h @ w3 + b3, ty)
            loss.backward()
            with torch.no_grad():
                for p in t_params:
                    p -= LR * p.grad
                    p.grad = None
            return float(loss.item())

        # the three implementations agree on the first steps
        a, b, c = numpy_step(np_params, x, y), mt_step(), torch_step()
        assert abs(a - b) < 1e-4 and abs(a - c) < 1e-4, (a, b, c)
        d = cap_step()  # records
        assert d == b and cap_step() == mt_step(), "the replay must equal eager minitorch"
        numpy_step(np_params, x, y)  # all four at the same step again
        torch_step()

        steps = {
            "numpy (by hand)": lambda: numpy_step(np_params, x, y),
            "minitorch": mt_step,
            "minitorch replay": cap_step,
            "pytorch": torch_step,
        }
        t = interleaved(steps, args.repeats)
        ratio = paired_ratio(steps, "minitorch", "numpy (by hand)", args.repeats)
        cap_ratio = paired_ratio(steps, "minitorch replay", "numpy (by hand)", args.repeats)
        base = t["numpy (by hand)"]
        print(f"MLP 784-512-512-10 training step, batch {batch}, float32, 1 thread (median)")
        for k, v in t.items():
            print(f"  {k:16s}: {v * 1e3:7.3f} ms  ({v / base:.2f}x numpy)")
        print(
            f"  minitorch / numpy by hand (median of paired ratios): {ratio:.3f}x  (target <= 1.10x)"
        )
        print(
            f"  minitorch replay / numpy by hand (median of paired ratios): {cap_ratio:.3f}x  "
            f"(target <= 1.0x at batch 32); {replay.stats['replays']} replays, "
            f"{replay.stats['fallbacks']} eager fallbacks"
        )


if __name__ == "__main__":
    main()
