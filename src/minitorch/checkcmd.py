"""``minitorch check``: gradcheck every registered differentiable op on one backend.

For every op and every sample of its catalog entry, and the zero-size variants of those
samples (one dimension made 0), it prints the forward error against a float64 reference
(PyTorch if installed, else the op on the NumPy backend), the gradient error (max
``|analytic - numeric|``, central differences) and a status, then a summary line. A
zero-size variant the reference refuses (a max over no elements) passes if the op
refuses it too, with an ``OpError``. The exit status is 0 if every op passed, 1 if any
failed, 2 on a usage error (unknown backend or op name).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from .backend import resolve
from .ops import REGISTRY
from .ops._registry import OpDef
from .testing._check import GRADCHECK_DEFAULTS, gradient_error
from .testing._reference import (
    FORWARD_TOL,
    default_reference,
    errors_vs_reference,
    reference_label,
)
from .testing._samples import ZERO_SIZE, call, checked_samples, sample_tensors

__all__ = ["main", "run_check"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="minitorch check",
        description="Gradcheck every registered differentiable op (all its catalog samples) "
        "on one backend, and compare its forward with a float64 reference.",
    )
    p.add_argument("--backend", default="numpy", help="numpy (default), torch, jax, ...")
    p.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    p.add_argument("--device", default=None, help="e.g. cuda:0, or device1 for array_api_strict")
    p.add_argument("--ops", default=None, help="comma-separated op names (default: all)")
    p.add_argument("--fast", action="store_true", help="gradcheck one random projection per input")
    p.add_argument(
        "--reference",
        choices=["auto", "torch", "numpy"],
        default="auto",
        help="forward reference: torch float64 if installed (auto), or the NumPy backend",
    )
    return p


def _select(names: str | None) -> list[OpDef]:
    diff = sorted(n for n, op in REGISTRY.items() if op.differentiable)
    if names is None:
        return [REGISTRY[n] for n in diff]
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in REGISTRY]
    if unknown:
        raise ValueError(
            f"unknown op(s) {', '.join(map(repr, unknown))}; valid names are: {', '.join(diff)}"
        )
    nondiff = [n for n in wanted if not REGISTRY[n].differentiable]
    if nondiff:
        raise ValueError(
            f"op(s) {', '.join(map(repr, nondiff))} have no derivative to check; "
            f"differentiable ops are: {', '.join(diff)}"
        )
    return [REGISTRY[n] for n in wanted]


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.2e}"


def run_check(
    ops: Sequence[OpDef],
    backend: Any,
    dtype: str = "float64",
    *,
    reference: str = "torch",
    fast: bool = False,
    out: TextIO | None = None,
) -> int:
    """Check ``ops`` on ``backend``; print the table (to ``out``, default stdout) and
    return the number of failures."""
    out = sys.stdout if out is None else out

    width = max([len(op.name) for op in ops] + [2])
    print(
        f"{'op':<{width}}  samples  ref    {'forward err':>11}  {'grad err':>9}  status",
        file=out,
    )
    failures: list[str] = []
    n_pass = n_skip = n_zero = n_refused = 0
    for op in ops:
        skip = op.facts.skips.get(backend.name)
        samples = checked_samples(op)
        if skip or not samples:
            why = skip or "no samples in the catalog"
            print(
                f"{op.name:<{width}}  {0:>7}  {'-':<5}  {'-':>11}  {'-':>9}  skip: {why}",
                file=out,
            )
            n_skip += 1
            continue
        fwd_err = 0.0
        grad_err: float | None = None
        problems: list[str] = []
        refs: set[str] = set()
        for k, sample in enumerate(samples):
            label = f"{op.name} sample {k} ({sample.name or sample.shapes or 'make'})"
            n_zero += sample.name.startswith(ZERO_SIZE)
            try:
                ref = errors_vs_reference(op, k, backend, dtype, reference=reference)
                same = ref.reference == "numpy" and backend.name == "numpy" and dtype == "float64"
                refs.add("self" if same else ref.reference)
                if ref.refused:
                    if ref.forward_ok:
                        n_refused += 1
                    else:
                        problems.append(
                            f"{label}: the {ref.reference} reference refuses it "
                            f"({ref.refused}), but the op returned a result"
                        )
                    continue
                fwd_err = max(fwd_err, ref.forward)
                if not ref.forward_ok:
                    problems.append(
                        f"{label}: forward differs from the {ref.reference} reference by "
                        f"{ref.forward:.3g}"
                    )
                inputs = sample_tensors(op, sample, backend, dtype, seed=k)
                if any(getattr(t, "requires_grad", False) for t in inputs):
                    res = gradient_error(
                        lambda *a, op=op, p=sample.params: call(op, list(a), p),
                        inputs,
                        fast_mode=fast,
                    )
                    grad_err = max(grad_err or 0.0, res.max_abs)
                    if not res.ok:
                        problems.append(f"{label}: {res.message}")
            except Exception as exc:  # report and go on with the next op
                problems.append(f"{label}: {type(exc).__name__}: {exc}")
        status = "ok" if not problems else "FAIL"
        print(
            f"{op.name:<{width}}  {len(samples):>7}  {'+'.join(sorted(refs)) or '-':<5}  "
            f"{_fmt(fwd_err):>11}  "
            f"{_fmt(grad_err):>9}  {status}",
            file=out,
        )
        if problems:
            failures.extend(problems)
        else:
            n_pass += 1
    n_fail = len(ops) - n_pass - n_skip
    print(
        f"\n{n_zero} zero-size variant(s) checked; {n_refused} sample(s) refused by the op "
        f"as by the reference",
        file=out,
    )
    if failures:
        print("\nfailures:", file=out)
        for f in failures:
            print(f"  {f}", file=out)
    return n_fail


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``minitorch check``; returns the exit status.

    Examples
    --------
    >>> from minitorch.checkcmd import main
    >>> main(["--ops", "exp", "--reference", "numpy"])  # doctest: +ELLIPSIS
    minitorch check: backend numpy ...
    ...
    1 op(s) checked on numpy: 1 passed, 0 failed, 0 skipped ...
    0
    """
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        ops = _select(args.ops)
    except ValueError as exc:
        print(f"minitorch check: {exc}", file=sys.stderr)
        return 2
    device = args.device
    if args.backend == "array_api_strict" and device is None:
        device = "device1"  # the non-default device catches ops that drop the device
    if args.backend == "jax" and args.dtype == "float64" and "jax" not in sys.modules:
        os.environ.setdefault("JAX_ENABLE_X64", "1")  # JAX has float64 only in x64 mode
    try:
        backend = resolve(args.backend, args.dtype, device)
    except Exception as exc:
        hint = " (set JAX_ENABLE_X64=1 before JAX is imported)" if args.backend == "jax" else ""
        print(
            f"minitorch check: backend {args.backend!r} (dtype {args.dtype}, device {device}) "
            f"cannot be used: {exc}{hint}",
            file=sys.stderr,
        )
        return 2
    reference = default_reference() if args.reference == "auto" else args.reference
    print(
        f"minitorch check: backend {backend.name} {backend.version} (device={backend.device}), "
        f"dtype {args.dtype}, {'fast' if args.fast else 'full'} gradcheck"
    )
    print(
        f"forward err: max |out - ref| against {reference_label(reference)} (ref column: "
        f"torch, numpy = the op on the NumPy backend in float64, self = no independent "
        f"reference); grad err: max |analytic - numeric| (central differences"
        f"{'; fast: of one random projection per input' if args.fast else ''})"
    )
    f_atol, f_rtol = FORWARD_TOL.get(args.dtype, FORWARD_TOL["float32"])
    eps, g_atol, g_rtol = GRADCHECK_DEFAULTS.get(args.dtype, GRADCHECK_DEFAULTS["float32"])
    print(
        f"pass: forward err <= {f_atol:g} + {f_rtol:g} * |ref| (unless the op's catalog entry "
        f"sets its own); grad err <= {g_atol:g} + {g_rtol:g} * |numeric|, step {eps:g}"
    )
    print(
        "samples: the catalog's and their zero-size variants (one dimension made 0); a "
        "variant the reference refuses passes if the op refuses it too, with an OpError"
    )
    start = time.perf_counter()
    n_fail = run_check(ops, backend, args.dtype, reference=reference, fast=args.fast)
    n_skip = sum(1 for op in ops if op.facts.skips.get(backend.name) or not checked_samples(op))
    print(
        f"{len(ops)} op(s) checked on {backend.name}: {len(ops) - n_fail - n_skip} passed, "
        f"{n_fail} failed, {n_skip} skipped ({time.perf_counter() - start:.1f} s)"
    )
    return 1 if n_fail else 0
