"""Arithmetic, extrema, comparisons and matrix products of boolean tensors answer alike
on every backend, as NumPy and PyTorch answer them (``True + True`` is True, ``<``
orders False before True), where array-api-strict refused most of them and torch
``abs`` and ``@`` of booleans, NumPy ``sign``. References are written here by hand
from NumPy's logical functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import minitorch

X = np.array([[True, False, True, False], [True, True, False, False], [False, False, True, True]])
Y = np.array([[True, True, False, False], [False, True, False, True], [True, False, True, False]])


def _ints(a: Any) -> Any:
    return np.asarray(a).astype(np.int64)


#: op -> (minitorch call, reference on NumPy booleans, by logic or on 0/1 integers)
BINARY: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Any, Any], Any]]] = {
    "add": (lambda x, y: x + y, np.logical_or),
    "mul": (lambda x, y: x * y, np.logical_and),
    "maximum": (minitorch.maximum, np.logical_or),
    "minimum": (minitorch.minimum, np.logical_and),
    "lt": (lambda x, y: x < y, lambda x, y: _ints(x) < _ints(y)),
    "le": (lambda x, y: x <= y, lambda x, y: _ints(x) <= _ints(y)),
    "gt": (lambda x, y: x > y, lambda x, y: _ints(x) > _ints(y)),
    "ge": (lambda x, y: x >= y, lambda x, y: _ints(x) >= _ints(y)),
}

UNARY: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "abs": (abs, lambda x: x),
    "sign": (minitorch.sign, lambda x: x),  # as torch.sign: False is 0, True is 1
    "isfinite": (minitorch.isfinite, lambda x: np.ones_like(x)),
    "isinf": (minitorch.isinf, lambda x: np.zeros_like(x)),
    "max": (lambda x: x.max(), lambda x: np.any(x)),
    "max axis 0": (lambda x: x.max(axis=0), lambda x: np.any(x, axis=0)),
    "min": (lambda x: x.min(), lambda x: np.all(x)),
    "clip": (lambda x: x.clip(1, 2), lambda x: np.clip(x, 1, 2)),  # int64 1s, as torch.clamp
    "clip min": (lambda x: minitorch.clip(x, min=0), lambda x: np.clip(x, 0, None)),
    "min axis -1 keepdims": (
        lambda x: minitorch.min(x, axis=-1, keepdims=True),
        lambda x: np.all(x, axis=-1, keepdims=True),
    ),
}


def _check(out: minitorch.Tensor, expected: Any) -> None:
    want = np.asarray(expected).dtype.name
    assert out.backend.dtype_name(out.dtype) == want, (out.dtype, want)
    assert not out.requires_grad
    got = out.numpy()
    assert got.shape == np.shape(expected)
    np.testing.assert_array_equal(got, np.asarray(expected))


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shapes", ["same", "broadcast", "0-d"])
def test_binary_ops_of_booleans(backend: Any, name: str, shapes: str) -> None:
    call, ref = BINARY[name]
    x, y = {"same": (X, Y), "broadcast": (X, Y[1]), "0-d": (X, np.array(True))}[shapes]
    _check(call(minitorch.tensor(x), minitorch.tensor(y)), ref(x, y))
    _check(call(minitorch.tensor(y), minitorch.tensor(x)), ref(y, x))


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("number", [True, False])
def test_binary_ops_of_a_boolean_tensor_and_a_python_bool(
    backend: Any, name: str, number: bool
) -> None:
    call, ref = BINARY[name]
    t = minitorch.tensor(X)
    _check(call(t, number), ref(X, np.bool_(number)))
    _check(call(number, t), ref(np.bool_(number), X))


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_ops_and_extrema_of_booleans(backend: Any, name: str) -> None:
    call, ref = UNARY[name]
    _check(call(minitorch.tensor(X)), ref(X))


def test_abs_and_sign_of_booleans_are_new_arrays(backend: Any) -> None:
    t = minitorch.tensor(X)
    for out in (abs(t), minitorch.sign(t)):
        assert out.data is not t.data
        _check(out, X)
    _check(t, X)


@pytest.mark.parametrize(
    ("xs", "ys"), [((3, 4), (4, 2)), ((4,), (4, 2)), ((3, 4), (4,)), ((2, 3, 4), (4, 5))]
)
def test_matmul_of_booleans(backend: Any, xs: tuple[int, ...], ys: tuple[int, ...]) -> None:
    """Whether some pair of a row of x and a column of y is True (NumPy's answer);
    torch and array-api-strict refused boolean matrix products."""
    rng = np.random.default_rng(sum(xs) * 10 + sum(ys))
    x, y = rng.random(xs) < 0.3, rng.random(ys) < 0.3
    _check(minitorch.tensor(x) @ minitorch.tensor(y), (_ints(x) @ _ints(y)) > 0)


def test_what_both_libraries_refuse_stays_refused(backend: Any) -> None:
    """``-`` of booleans: NumPy and PyTorch refuse it, so every backend does; a shape
    mismatch is still the shape error, not an answer."""
    t, u = minitorch.tensor(X), minitorch.tensor(Y)
    with pytest.raises(minitorch.OpError, match="sub"):
        t - u
    with pytest.raises(minitorch.OpError, match=r"\(3, 4\).*\(3,\)"):
        t + minitorch.tensor(Y[:, 0])
    with pytest.raises(minitorch.OpError, match="matmul"):
        t @ u
    with pytest.raises(minitorch.OpError, match="max"):
        minitorch.tensor(np.zeros((0, 3), dtype=bool)).max()


def test_a_mask_of_booleans_in_a_captured_step(backend: Any) -> None:
    """A mask made of boolean arithmetic inside :func:`minitorch.capture` replays as
    the eager step computes it (array-api-strict answers through the logical
    functions)."""

    def make(captured: bool) -> tuple[minitorch.Tensor, Callable[[], Any]]:
        w = minitorch.tensor(np.linspace(-1.0, 3.0, 8), requires_grad=True)
        opt = minitorch.optim.SGD([w], lr=0.1)

        def step() -> Any:
            opt.zero_grad()
            mask = (w > 0) * (w < 2) + abs(w > 2.5)
            loss = (w * w * mask.astype(w.dtype)).sum()
            loss.backward()
            opt.step()
            return loss

        return w, minitorch.capture(step, optimizer=opt) if captured else step

    w_eager, eager = make(False)
    w_replay, replay = make(True)
    for _ in range(5):
        assert float(eager()) == float(replay())
    np.testing.assert_array_equal(w_eager.numpy(), w_replay.numpy())
    assert replay.stats["replays"] == 3  # type: ignore[attr-defined] and replay.stats["fallbacks"] == 0


@pytest.mark.parametrize(
    ("name", "ref"),
    [
        ("div", np.divide),
        ("atan2", np.arctan2),
        ("hypot", np.hypot),
        ("copysign", np.copysign),
        ("nextafter", np.nextafter),
    ],
)
@pytest.mark.parametrize("number", [True, False])
def test_functions_of_real_numbers_of_booleans_and_a_python_bool(
    backend: Any, name: str, ref: Callable[[Any, Any], Any], number: bool
) -> None:
    """A boolean tensor with a Python bool in a function of real numbers: both as the
    numbers 0 and 1 in the default float dtype, as NumPy and PyTorch compute it
    (array-api-strict refused the Python bool next to the converted tensor)."""
    fn = getattr(minitorch, name)
    t = minitorch.tensor(X[0])
    xs = X[0].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for got, want in (
            (fn(t, number), ref(xs, float(number))),
            (fn(number, t), ref(float(number), xs)),
        ):
            assert got.backend.dtype_name(got.dtype) == "float64"
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-15, atol=0)
