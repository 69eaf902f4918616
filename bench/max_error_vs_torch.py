"""The largest error of any op against PyTorch float64, on one backend.

For every registered op with a PyTorch reference and every sample of its catalog
entry: the max abs error of the forward, and of the gradients for a random upstream
gradient, against ``torch`` in float64 on the same inputs (rounded to the dtype under
test first).

    python bench/max_error_vs_torch.py --backend numpy
    JAX_ENABLE_X64=1 python bench/max_error_vs_torch.py --backend jax --dtype float32
"""

from __future__ import annotations

import argparse
import sys

import minitorch.backend as B
from minitorch.ops import REGISTRY
from minitorch.testing._reference import errors_vs_reference, reference_label


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="numpy")
    p.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    p.add_argument("--device", default=None)
    args = p.parse_args(argv)
    device = args.device or ("device1" if args.backend == "array_api_strict" else None)
    be = B.resolve(args.backend, args.dtype, device)
    print(f"backend {be.describe()}, inputs in {args.dtype}; reference {reference_label('torch')}")
    print(f"{'op':<14} {'samples':>7} {'forward':>10} {'gradient':>10}")
    worst_fwd = (0.0, "-")
    worst_grad = (0.0, "-")
    n_samples = 0
    no_ref = []
    for name, op in sorted(REGISTRY.items()):
        if not op.differentiable or not op.facts.samples or be.name in op.facts.skips:
            continue
        if op.facts.ref is None:
            no_ref.append(name)
            continue
        fwd = grad = 0.0
        for k in range(len(op.facts.samples)):
            r = errors_vs_reference(op, k, be, args.dtype, reference="torch")
            n_samples += 1
            fwd = max(fwd, r.forward)
            if r.forward >= worst_fwd[0]:
                worst_fwd = (r.forward, f"{name} sample {k}")
            if r.grad is not None:
                grad = max(grad, r.grad)
                if r.grad >= worst_grad[0]:
                    worst_grad = (r.grad, f"{name} sample {k}")
        print(f"{name:<14} {len(op.facts.samples):>7} {fwd:>10.2e} {grad:>10.2e}")
    print(f"\n{n_samples} samples; ops without a PyTorch reference: {', '.join(no_ref) or 'none'}")
    print(f"max forward error:  {worst_fwd[0]:.3e} ({worst_fwd[1]})")
    print(f"max gradient error: {worst_grad[0]:.3e} ({worst_grad[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
