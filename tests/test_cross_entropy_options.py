"""cross_entropy's PyTorch options against torch.nn.functional.cross_entropy in float64:
weight x ignore_index x label_smoothing x reduction, for class-index and class-probability
targets, batched and unbatched; values, gradients (of the logits, and of probability
targets), second derivatives, the edge cases (everything ignored, an empty batch, -inf
logits) and the error messages, on the backend under test."""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np
import pytest
from helpers import tensor_f64, torch_f64

import minitorch
from minitorch import autograd, func, viz

torch = pytest.importorskip("torch", reason="PyTorch is the float64 reference")
F = torch.nn.functional

TOL = 1e-10
C = 5
WEIGHT = np.array([0.5, 2.0, 1.0, 1.5, 0.25])
# targets: none ignored; two of the default ignore_index; the class ignore_index=2
TARGETS = {
    "plain": (np.array([0, 3, 1, 4, 2, 1, 0]), -100),
    "ignored": (np.array([0, -100, 1, 4, -100, 1, 3]), -100),
    "class 2 ignored": (np.array([2, 3, 1, 2, 0, 2, 4]), 2),
}


def _logits(n: int = 7, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0.0, 2.0, (n, C))


def _probs(n: int = 7, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.ones(C), n)


def _index(t: Any) -> minitorch.Tensor:
    """Integer class targets on the backend under test (int64)."""
    return minitorch.tensor(np.asarray(t, dtype=np.int64))


def _same(got: Any, want: Any, what: str) -> None:
    want = want.detach().numpy() if hasattr(want, "detach") else np.asarray(want)
    got = np.asarray(got, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL, equal_nan=True, err_msg=what)


def _check(
    backend: Any,
    logits: np.ndarray,
    target: np.ndarray,
    *,
    weight: np.ndarray | None = None,
    probs: bool = False,
    **options: Any,
) -> None:
    """Loss and gradients (a random upstream gradient) against PyTorch float64."""
    x = tensor_f64(logits, backend, requires_grad=True)
    tx = torch_f64(logits, requires_grad=True)
    t = tensor_f64(target, backend, requires_grad=True) if probs else _index(target)
    tt = torch_f64(target, requires_grad=True) if probs else torch.tensor(target)
    w = None if weight is None else tensor_f64(weight, backend)
    tw = None if weight is None else torch_f64(weight)
    what = f"{'probabilities' if probs else 'classes'}, weight={weight is not None}, {options}"

    out = minitorch.cross_entropy(x, t, weight=w, **options)
    want = F.cross_entropy(tx, tt, weight=tw, **options)
    _same(out.numpy(), want, f"{what}: loss")

    g = np.random.default_rng(3).standard_normal(tuple(want.shape))
    out.backward(tensor_f64(g, backend))
    want.backward(torch_f64(g))
    assert x.grad is not None
    _same(backend.to_numpy(x.grad), tx.grad, f"{what}: gradient of the logits")
    if probs:
        assert t.grad is not None
        _same(backend.to_numpy(t.grad), tt.grad, f"{what}: gradient of the targets")


# ------------------------------------------------------------------ the option grid
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.25, 1.0])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("targets", sorted(TARGETS))
def test_class_targets_match_pytorch(
    targets: str, weighted: bool, smoothing: float, reduction: str, backend: Any
) -> None:
    t, ignore_index = TARGETS[targets]
    _check(
        backend,
        _logits(),
        t,
        weight=WEIGHT if weighted else None,
        ignore_index=ignore_index,
        label_smoothing=smoothing,
        reduction=reduction,
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("weighted", [False, True])
def test_probability_targets_match_pytorch(
    weighted: bool, smoothing: float, reduction: str, backend: Any
) -> None:
    # rows that need not sum to 1 (nor be positive) too, as PyTorch takes them
    for target in (_probs(), _probs() * 1.5 - 0.1):
        _check(
            backend,
            _logits(),
            target,
            weight=WEIGHT if weighted else None,
            probs=True,
            label_smoothing=smoothing,
            reduction=reduction,
        )


@pytest.mark.parametrize(
    ("weighted", "smoothing", "reduction"),
    list(itertools.product([False, True], [0.0, 0.2], ["mean", "sum", "none"])),
)
def test_unbatched_match_pytorch(
    weighted: bool, smoothing: float, reduction: str, backend: Any
) -> None:
    options = {"label_smoothing": smoothing, "reduction": reduction}
    weight = WEIGHT if weighted else None
    logits = _logits(1)[0]
    _check(backend, logits, np.array(3), weight=weight, **options)
    _check(backend, logits, np.array(3), weight=weight, ignore_index=3, **options)
    _check(backend, logits, _probs(1)[0], weight=weight, probs=True, **options)


def test_weight_forms_and_positional_weight(backend: Any) -> None:
    """weight as a Tensor (any floating dtype), a list, a NumPy array, or the third
    positional argument, as in PyTorch; it is a constant: it gets no gradient."""
    logits, (t, _) = _logits(), TARGETS["ignored"]
    want = F.cross_entropy(torch_f64(logits), torch.tensor(t), weight=torch_f64(WEIGHT))
    x = tensor_f64(logits, backend)
    w = tensor_f64(WEIGHT, backend, requires_grad=True)
    w32 = minitorch.tensor(WEIGHT.astype(np.float32))
    for weight, tol in ((w, TOL), (WEIGHT.tolist(), TOL), (WEIGHT, TOL), (w32, 1e-6)):
        got = minitorch.cross_entropy(x, _index(t), weight=weight)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol)
    positional = minitorch.cross_entropy(x, _index(t), w, -100, "mean", 0.0)
    _same(positional.numpy(), want, "weight, ignore_index, reduction, label_smoothing by position")
    loss = minitorch.cross_entropy(tensor_f64(logits, backend, requires_grad=True), _index(t), w)
    loss.backward()
    assert w.grad is None


# ------------------------------------------------------------------ edge cases
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_everything_ignored(weighted: bool, smoothing: float, backend: Any) -> None:
    """mean over no target is nan with a zero gradient; sum is 0 (as PyTorch)."""
    for reduction in ("mean", "sum", "none"):
        _check(
            backend,
            _logits(3),
            np.array([-100, -100, -100]),
            weight=WEIGHT if weighted else None,
            label_smoothing=smoothing,
            reduction=reduction,
        )


# classes 1 and 3 weigh nothing: targets of only those classes have weights that sum to 0
ZERO_WEIGHT = np.array([0.5, 0.0, 1.0, 0.0, 2.0])
ZERO_TARGETS = {
    "kept": (np.array([1, 3, 3, 1]), -100),
    "some ignored": (np.array([1, -100, 3, -100]), -100),
    "class 2 ignored": (np.array([1, 2, 3, 2]), 2),
}


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("targets", sorted(ZERO_TARGETS))
def test_kept_targets_whose_weights_sum_to_0(targets: str, smoothing: float, backend: Any) -> None:
    """Targets kept, but their class weights sum to 0: the mean is nan and, as PyTorch
    (w[t] * g / 0), so is the gradient of every row kept, while the rows ignored get 0
    (the gradient was 0 everywhere). sum and none are finite, as PyTorch."""
    target, ignore_index = ZERO_TARGETS[targets]
    for reduction in ("mean", "sum", "none"):
        _check(
            backend,
            _logits(4),
            target,
            weight=ZERO_WEIGHT,
            ignore_index=ignore_index,
            label_smoothing=smoothing,
            reduction=reduction,
        )
    _check(backend, _logits(1)[0], np.array(3), weight=ZERO_WEIGHT, label_smoothing=smoothing)
    # the case itself, spelled out: nan where PyTorch has nan, 0 on an ignored row
    x = tensor_f64(_logits(4), backend, requires_grad=True)
    minitorch.cross_entropy(
        x, _index(target), weight=tensor_f64(ZERO_WEIGHT, backend), ignore_index=ignore_index
    ).backward()
    assert x.grad is not None
    grad = backend.to_numpy(x.grad)
    ignored = target == ignore_index
    assert np.isnan(grad[~ignored]).all() and (grad[ignored] == 0).all()


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize(
    ("target", "weight"),
    [
        (np.array([1, -100, 3, -100]), ZERO_WEIGHT),  # kept weights sum to 0: nan
        (np.array([-100, -100, -100, -100]), WEIGHT),  # every target ignored: 0
        (np.array([1, -100, 4, 2]), ZERO_WEIGHT),  # kept weights sum to 3
    ],
)
def test_second_derivative_when_the_mean_divides_by_0(
    target: np.ndarray, weight: np.ndarray, smoothing: float, backend: Any
) -> None:
    """create_graph: the gradient of the logits, and the derivative of (gradient . v),
    as PyTorch, where the mean has nothing to divide by (nan) or no target (0)."""
    logits = _logits(4)
    v = np.random.default_rng(6).standard_normal(logits.shape)
    x, tx = tensor_f64(logits, backend, True), torch_f64(logits, True)
    options = {"label_smoothing": smoothing}
    (gx,) = autograd.grad(
        minitorch.cross_entropy(x, _index(target), weight=tensor_f64(weight, backend), **options),
        [x],
        create_graph=True,
    )
    (hv,) = autograd.grad((gx * tensor_f64(v, backend)).sum(), [x])
    (tgx,) = torch.autograd.grad(
        F.cross_entropy(tx, torch.tensor(target), weight=torch_f64(weight), **options),
        [tx],
        create_graph=True,
    )
    (thv,) = torch.autograd.grad((tgx * torch_f64(v)).sum(), [tx])
    _same(backend.to_numpy(gx.data), tgx, "gradient of the logits under create_graph")
    _same(backend.to_numpy(hv.data), thv, "d (gradient . v) / d logits")


@pytest.mark.parametrize("probs", [False, True])
def test_empty_batch(probs: bool, backend: Any) -> None:
    target = np.zeros((0, C)) if probs else np.zeros(0, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's mean of nothing
        for reduction in ("mean", "sum", "none"):
            _check(
                backend,
                np.zeros((0, C)),
                target,
                probs=probs,
                weight=WEIGHT,
                reduction=reduction,
                label_smoothing=0.1,
            )


def test_minus_inf_logits(backend: Any) -> None:
    """A -inf logit of a class that is not the target is fine (nan where PyTorch has nan:
    label smoothing puts weight on that class)."""
    logits = _logits(4)
    logits[0, 1] = logits[2, 4] = -np.inf
    t = np.array([0, 1, -100, 3])
    for weight, smoothing in itertools.product((None, WEIGHT), (0.0, 0.2)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _check(backend, logits, t, weight=weight, label_smoothing=smoothing)


# ------------------------------------------------------------------ higher order
@pytest.mark.parametrize("probs", [False, True])
def test_hessian_matches_pytorch(probs: bool, backend: Any) -> None:
    logits = _logits(4)
    options = {"label_smoothing": 0.2}
    if probs:
        target, t, tt = _probs(4), tensor_f64(_probs(4), backend), torch_f64(_probs(4))
    else:
        target = np.array([1, -100, 4, 2])
        t, tt = _index(target), torch.tensor(target)
    w, tw = tensor_f64(WEIGHT, backend), torch_f64(WEIGHT)
    hess = func.hessian(lambda z: minitorch.cross_entropy(z, t, weight=w, **options))(
        tensor_f64(logits, backend)
    )
    want = torch.autograd.functional.hessian(
        lambda z: F.cross_entropy(z, tt, weight=tw, **options), torch_f64(logits)
    )
    _same(backend.to_numpy(hess.data), want, "Hessian of the logits")
    assert float(want.abs().max()) > 1e-2  # not a vacuous comparison


def test_mixed_second_derivative_of_probability_targets(backend: Any) -> None:
    """d/d targets of (d loss / d logits . v): the recomputed target distribution is
    differentiated under create_graph."""
    logits, target = _logits(4), _probs(4)
    v = np.random.default_rng(5).standard_normal(logits.shape)
    x, t = tensor_f64(logits, backend, True), tensor_f64(target, backend, True)
    tx, tt = torch_f64(logits, True), torch_f64(target, True)
    options = {"label_smoothing": 0.3, "reduction": "sum"}
    (gx,) = autograd.grad(
        minitorch.cross_entropy(x, t, weight=WEIGHT.tolist(), **options), [x], create_graph=True
    )
    (gt,) = autograd.grad((gx * tensor_f64(v, backend)).sum(), [t])
    (tgx,) = torch.autograd.grad(
        F.cross_entropy(tx, tt, weight=torch_f64(WEIGHT), **options), [tx], create_graph=True
    )
    (tgt,) = torch.autograd.grad((tgx * torch_f64(v)).sum(), [tt])
    _same(backend.to_numpy(gt.data), tgt, "d2 loss / d targets d logits")


# ------------------------------------------------------------------ errors
def _raises(match: str, *args: Any, **kwargs: Any) -> str:
    with pytest.raises(minitorch.OpError, match=match) as info:
        minitorch.cross_entropy(*args, **kwargs)
    msg = str(info.value)
    assert msg.startswith("cross_entropy: "), msg
    return msg


def test_targets_out_of_range(backend: Any) -> None:
    x = tensor_f64(_logits(3), backend, requires_grad=True)
    for bad, ignore_index in (([0, 5, 1], -100), ([0, -1, 1], -100), ([0, -100, 1], -1)):
        msg = _raises(
            r"targets must lie in \[0, 5\) for 5 classes \(or equal ignore_index=",
            x,
            _index(bad),
            ignore_index=ignore_index,
        )
        assert f"ignore_index={ignore_index}" in msg and "(3,) int64" in msg, msg
    # a target equal to ignore_index is no error, even outside [0, C)
    minitorch.cross_entropy(x, _index([0, -1, 1]), ignore_index=-1)
    minitorch.cross_entropy(x, _index([0, 7, 1]), ignore_index=7)
    assert x.grad is None


def test_bad_options(backend: Any) -> None:
    x, t = tensor_f64(_logits(3), backend), _index([0, 1, 2])
    for eps in (-0.1, 1.5, float("nan"), "0.1", True):
        _raises(r"label_smoothing must be a number in \[0, 1\]", x, t, label_smoothing=eps)
    for ignore_index in (1.0, "x", None):
        _raises("ignore_index must be an int", x, t, ignore_index=ignore_index)
    _raises("reduction must be one of", x, t, reduction="avg")
    probs = tensor_f64(_probs(3), backend)
    msg = _raises("ignore_index applies to class index targets only", x, probs, ignore_index=1)
    assert "(3, 5) float64" in msg, msg
    # reduction passed where PyTorch takes weight: the message says what happened
    msg = _raises("reduction must be one of", x, t, "sum")
    assert "weight (the third argument, as in PyTorch)" in msg, msg


def test_bad_weight(backend: Any) -> None:
    x, t = tensor_f64(_logits(3), backend), _index([0, 1, 2])
    for weight, desc in (
        (np.ones(4), r"\(4,\) float64"),
        (np.ones((1, 5)), r"\(1, 5\) float64"),
        (2.0, r"\(\) float64"),
    ):
        _raises(
            rf"weight must be a 1-D tensor of 5 class weights .*logits \(3, 5\) "
            rf"float64\), got {desc}",
            x,
            t,
            weight=tensor_f64(weight, backend),
        )
    _raises("weight .* must be a tensor of class weights, got the string 'sum'", x, t, weight="sum")
    _raises("weight must be a 1-D tensor of class weights, got object", x, t, weight=object())
    foreign_backend = "torch" if backend.name != "torch" else "numpy"
    with minitorch.use_backend(foreign_backend, dtype="float64"):
        foreign = minitorch.tensor(np.ones(5))
    _raises("weight and logits must be on one backend and device", x, t, weight=foreign)


def test_bad_shapes_and_dtypes(backend: Any) -> None:
    x = tensor_f64(_logits(3), backend)
    msg = _raises(r"expected logits \(N, C\) and targets \(N,\)", x, _index([0, 1]))
    assert "(3, 5) float64" in msg and "(2,) int64" in msg, msg
    msg = _raises("targets must be integer class indices", x, tensor_f64([0.0, 1.0, 2.0], backend))
    assert "(3,) float64" in msg, msg
    _raises("targets must be integer class indices", x, tensor_f64(np.ones((3, 4)), backend))
    _raises(
        "targets must be integer class indices or floating class probabilities",
        x,
        minitorch.tensor([True, False, True]),
    )
    msg = _raises(
        r"expected floating logits \(N, C\) or unbatched \(C,\), got \(2, 3, 5\) float64",
        tensor_f64(np.zeros((2, 3, 5)), backend),
        _index([[0, 1, 2], [0, 1, 2]]),
    )
    _raises(
        "expected floating logits",
        minitorch.tensor(np.zeros((3, 5), dtype=np.int64)),
        _index([0, 1, 2]),
    )
    _raises(r"expected logits \(N, C\) and targets \(N,\)", x[0], _index([1]))


def test_graph_names_the_options_given(backend: Any) -> None:
    """A node keeps the options that differ from their defaults (and the reduction), so
    the graph picture reads cross_entropy(reduction=mean) for a plain call."""
    x = tensor_f64(_logits(3), backend, requires_grad=True)
    plain = minitorch.cross_entropy(x, _index([0, 1, 2]))
    assert "cross_entropy(reduction=mean)\\n" in viz.to_dot(plain)
    smoothed = minitorch.cross_entropy(
        x, _index([0, 1, 2]), weight=WEIGHT, ignore_index=1, label_smoothing=0.1
    )
    label = "cross_entropy(reduction=mean, ignore_index=1, label_smoothing=0.1)\\n"
    assert label in viz.to_dot(smoothed)


@pytest.mark.parametrize("dtype", ["uint8", "int16", "int32", "int64"])
@pytest.mark.parametrize("classes", [10, 300])
def test_narrow_integer_targets_do_not_wrap(backend: Any, dtype: str, classes: int) -> None:
    """uint8 targets over 40 rows of 10 classes (offsets past 255), and over 300 classes
    (class numbers past 255): the loss and gradient of int64 targets, on the usual path
    and with class weights, against PyTorch (the offsets and class numbers were made in
    the targets' own dtype, and wrapped)."""
    rng = np.random.default_rng(5)
    x = rng.normal(0.0, 2.0, (40, classes))
    t = rng.integers(0, min(classes, 256), 40)
    w = rng.uniform(0.5, 2.0, classes)
    for weight in (None, w):
        xt = torch_f64(x, requires_grad=True)
        want = F.cross_entropy(xt, torch.tensor(t), None if weight is None else torch_f64(weight))
        want.backward()
        logits = tensor_f64(x, minitorch.get_backend(), requires_grad=True)
        targets = minitorch.tensor(t.astype(dtype))
        kw = {} if weight is None else {"weight": minitorch.tensor(weight)}
        loss = minitorch.cross_entropy(logits, targets, **kw)
        loss.backward()
        _same(float(loss), want, f"{dtype} loss")
        _same(backend.to_numpy(logits.grad), xt.grad, f"{dtype} gradient")
