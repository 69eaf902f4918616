"""One training step of minimodel's tiny causal LM (forward, backward, AdamW) on the
NumPy backend vs the same model in PyTorch CPU eager, float32, one thread, in one
process, the two steps timed in turn.

    python bench/bench_transformer.py [--repeats 60] [--gelu tanh|none]

The model: d_model 64, 2 pre-LN blocks, 4 heads, context 64, batch 16, a 65-character
vocabulary, tanh GELU (as GPT-2; ``--gelu none`` for the exact one). PyTorch runs it
twice: as ``torch.nn`` users write it (``nn.TransformerEncoderLayer(norm_first=True,
batch_first=True)`` with a causal mask: its attention is the fused
``scaled_dot_product_attention``) and written out op by op as minimodel is
(``torch.nn.Linear``, ``LayerNorm``, ``Embedding``, matmul, an additive causal mask,
softmax).
Both start from minimodel's weights and see the same batch. A copy of the minimodel step
runs under ``minitorch.capture`` too (recorded on its first calls, then replayed).

Target (issue #14): minimodel at most 1.0x the ``torch.nn`` step time.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

for _v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_v] = "1"

_MINIMODEL = Path(__file__).resolve().parents[1] / "downstream" / "minimodel" / "src"
if _MINIMODEL.is_dir():  # the checkout's minimodel, when it is not installed
    sys.path.insert(0, str(_MINIMODEL))

import argparse  # noqa: E402
import math  # noqa: E402
from collections.abc import Callable  # noqa: E402
from functools import partial  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _timing import interleaved, paired_ratio  # noqa: E402
from minimodel import LMConfig, TinyLM  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402

import minitorch  # noqa: E402

VOCAB, BATCH, LR, WD = 65, 16, 3e-3, 0.01


class TorchBlock(nn.Module):
    """minimodel's TransformerBlock written op by op in torch."""

    def __init__(self, d: int, h: int, gelu: str) -> None:
        super().__init__()
        self.h, self.gelu = h, gelu
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        hd = d // self.h
        qkv = self.qkv(self.ln1(x)).reshape(b, t, 3, self.h, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        s = (q * (1.0 / math.sqrt(hd))) @ k.mT + mask
        a = (s.softmax(-1) @ v).permute(0, 2, 1, 3).reshape(b, t, d)
        x = x + self.proj(a)
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate=self.gelu))


class TorchLM(nn.Module):
    """The same LM in torch: ``layers="nn"`` uses nn.TransformerEncoderLayer,
    ``layers="ops"`` the op-by-op blocks above."""

    def __init__(self, c: LMConfig, layers: str) -> None:
        super().__init__()
        d = c.d_model
        self.tok, self.pos = nn.Embedding(c.vocab_size, d), nn.Embedding(c.block_size, d)
        act = partial(F.gelu, approximate=c.gelu_approximate)
        self.layers = layers
        if layers == "nn":
            self.blocks = nn.ModuleList(
                nn.TransformerEncoderLayer(
                    d, c.n_heads, 4 * d, 0.0, act, batch_first=True, norm_first=True
                )
                for _ in range(c.n_layers)
            )
        else:
            self.blocks = nn.ModuleList(
                TorchBlock(d, c.n_heads, c.gelu_approximate) for _ in range(c.n_layers)
            )
        self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, c.vocab_size)
        t = c.block_size
        self.register_buffer("mask", torch.triu(torch.full((t, t), -math.inf), 1))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        x = self.tok(idx) + self.pos.weight[:t]
        mask = self.mask[:t, :t]  # -inf above the diagonal, 0 elsewhere
        for blk in self.blocks:
            x = blk(x, src_mask=mask, is_causal=True) if self.layers == "nn" else blk(x, mask)
        return self.head(self.ln_f(x))

    def load_minimodel(self, sd: dict[str, np.ndarray]) -> None:
        names = {"tok.weight": "tok_emb.weight", "pos.weight": "pos_emb.weight"}
        for i in range(len(self.blocks)):
            m, p = f"blocks.{i}.", f"blocks.{i}."
            pairs = (
                {
                    "norm1": "ln1",
                    "norm2": "ln2",
                    "self_attn.in_proj_": "attn.qkv.",
                    "self_attn.out_proj.": "attn.proj.",
                    "linear1.": "mlp.fc.",
                    "linear2.": "mlp.proj.",
                }
                if self.layers == "nn"
                else {
                    "ln1": "ln1",
                    "ln2": "ln2",
                    "qkv.": "attn.qkv.",
                    "proj.": "attn.proj.",
                    "fc.": "mlp.fc.",
                    "out.": "mlp.proj.",
                }
            )
            for t_name, m_name in pairs.items():
                for w in ("weight", "bias"):
                    sep = "" if t_name.endswith(("_", ".")) else "."
                    names[f"{p}{t_name}{sep}{w}"] = f"{m}{m_name}{sep}{w}"
        names.update({f"ln_f.{w}": f"ln_f.{w}" for w in ("weight", "bias")})
        names.update({f"head.{w}": f"head.{w}" for w in ("weight", "bias")})
        own = dict(self.named_parameters())
        assert set(own) == set(names), sorted(set(own) ^ set(names))
        with torch.no_grad():
            for t_name, m_name in names.items():
                own[t_name].copy_(torch.from_numpy(sd[m_name]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=60)
    ap.add_argument("--gelu", choices=("tanh", "none"), default="tanh")
    args = ap.parse_args()
    torch.set_num_threads(1)
    minitorch.set_backend("numpy", dtype="float32")
    minitorch.manual_seed(0)
    config = LMConfig(vocab_size=VOCAB, gelu_approximate=args.gelu)
    model = TinyLM(config)
    sd = {k: np.array(v) for k, v in model.state_dict().items()}
    rng = np.random.default_rng(0)
    idx = rng.integers(0, VOCAB, (BATCH, config.block_size))
    targets = rng.integers(0, VOCAB, (BATCH, config.block_size))

    def train(model: TinyLM, opt: minitorch.optim.AdamW) -> Callable[..., minitorch.Tensor]:
        def step(x: minitorch.Tensor, y: minitorch.Tensor) -> minitorch.Tensor:
            opt.zero_grad()
            loss = model.loss(x, y)
            loss.backward()
            opt.step()
            return loss

        return step

    eager = train(model, minitorch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD))
    minitorch.manual_seed(0)
    cap_model = TinyLM(config)  # the same weights again
    cap_opt = minitorch.optim.AdamW(cap_model.parameters(), lr=LR, weight_decay=WD)
    cap_train = minitorch.capture(train(cap_model, cap_opt), optimizer=cap_opt)
    cx, cy = minitorch.tensor(idx), minitorch.tensor(targets)

    def mini_step() -> float:
        return eager(cx, cy).item()

    def cap_step() -> float:
        return cap_train(cx, cy).item()  # the loss read after the step

    ti, tt = torch.from_numpy(idx), torch.from_numpy(targets).reshape(-1)
    steps = {"minimodel": mini_step, "minimodel replay": cap_step}
    for layers in ("nn", "ops"):
        tm = TorchLM(config, layers)
        tm.load_minimodel(sd)
        topt = torch.optim.AdamW(tm.parameters(), lr=LR, weight_decay=WD)

        def torch_step(tm: TorchLM = tm, topt: torch.optim.Optimizer = topt) -> float:
            topt.zero_grad()
            loss = F.cross_entropy(tm(ti).reshape(-1, VOCAB), tt)
            loss.backward()
            topt.step()
            return loss.item()

        steps[f"torch {layers}"] = torch_step
    first = {k: f() for k, f in steps.items()}  # the same model from the same weights
    print(f"first-step losses: {', '.join(f'{k} {v:.6f}' for k, v in first.items())}")
    assert max(first.values()) - min(first.values()) < 1e-4, first
    # the second call records again (with gradients set); the third replays, exactly
    assert cap_step() == mini_step() and cap_step() == mini_step(), "replay != eager"
    for k in ("torch nn", "torch ops"):
        steps[k]()
        steps[k]()
    print(
        f"tiny LM training step, d_model {config.d_model}, {config.n_layers} layers, "
        f"{config.n_heads} heads, context {config.block_size}, batch {BATCH}, "
        f"{args.gelu} GELU, float32, 1 thread"
    )
    med = interleaved(steps, args.repeats)
    for k, v in med.items():
        print(f"  {k:16s} {v * 1e3:7.2f} ms/step")
    r_nn = paired_ratio(steps, "minimodel", "torch nn", args.repeats)
    r_ops = paired_ratio(steps, "minimodel", "torch ops", args.repeats)
    r_cap = paired_ratio(steps, "minimodel replay", "minimodel", args.repeats)
    print(
        f"paired ratios: minimodel / torch.nn {r_nn:.2f}x, minimodel / torch op-by-op {r_ops:.2f}x, "
        f"minimodel replay / minimodel {r_cap:.2f}x ({cap_train.stats['replays']} replays, "
        f"{cap_train.stats['fallbacks']} eager fallbacks)"
    )
    print(f"target: <= 1.00x torch.nn -> {'met' if r_nn <= 1.0 else 'NOT met'}")


if __name__ == "__main__":
    main()
