"""``python -m minimodel``: train a TinyLM on Shakespeare's Sonnets 1-18 (NumPy backend,
float32) and print the loss, then a sample of generated text."""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence

import numpy as np

import minitorch

from .lm import CharTokenizer, LMConfig, TinyLM
from .train import TrainConfig, load_text, train


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m minimodel",
        description="Train a tiny character-level transformer on Shakespeare's Sonnets "
        "with minitorch, then sample from it.",
    )
    defaults = TrainConfig()
    parser.add_argument("--steps", type=int, default=defaults.steps, help="training steps")
    parser.add_argument("--seed", type=int, default=0, help="initialization, batches, sampling")
    parser.add_argument("--lr", type=float, default=defaults.lr, help="AdamW learning rate")
    parser.add_argument("--sample-chars", type=int, default=200, help="length of the sample")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error(f"--steps must be >= 1, got {args.steps}")

    minitorch.set_backend("numpy", dtype="float32")
    minitorch.manual_seed(args.seed)
    text = load_text()
    tok = CharTokenizer(text)
    data = np.asarray(tok.encode(text), dtype=np.int64)
    model = TinyLM(LMConfig(vocab_size=tok.vocab_size))
    config = TrainConfig(steps=args.steps, lr=args.lr, seed=args.seed)
    print(
        f"minimodel: TinyLM on Shakespeare's Sonnets 1-18 ({len(text):,} characters, "
        f"vocabulary {tok.vocab_size}), {model.num_parameters():,} parameters, "
        f"minitorch numpy float32"
    )
    print(
        f"{args.steps} steps of AdamW (lr {config.lr}), batch {config.batch_size} x "
        f"{model.config.block_size} characters, seed {args.seed}; "
        f"ln(vocabulary) = {math.log(tok.vocab_size):.3f}"
    )
    start = time.perf_counter()

    def report(step: int, loss: float) -> None:
        if step == 0 or (step + 1) % config.log_every == 0:
            print(f"step {step + 1:5d}  loss {loss:.4f}  ({time.perf_counter() - start:.1f} s)")

    losses = train(model, data, config, on_step=report)
    seconds = time.perf_counter() - start
    print(
        f"final loss {losses[-1]:.4f} after {len(losses)} steps "
        f"({seconds:.1f} s, {1000 * seconds / len(losses):.1f} ms/step)"
    )
    prompt = tok.encode("Shall I ")
    out = model.generate(prompt, args.sample_chars, rng=args.seed)
    print("sample:")
    print(tok.decode(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
