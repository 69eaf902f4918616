"""Grad mode: no_grad, enable_grad, set_grad_enabled, is_grad_enabled — as context
managers and decorators, nested, restored after exceptions, and thread-local."""

from __future__ import annotations

import threading
from typing import Any

import pytest

import minitorch


def _records(x: minitorch.Tensor) -> bool:
    return (x * 2.0).requires_grad


def test_default_is_enabled(backend: Any) -> None:
    assert minitorch.is_grad_enabled() is True
    assert _records(minitorch.tensor([1.0], requires_grad=True))


def test_no_grad_context(backend: Any) -> None:
    x = minitorch.tensor([1.0], requires_grad=True)
    with minitorch.no_grad():
        assert minitorch.is_grad_enabled() is False
        y = x * 2.0
        assert not y.requires_grad and y.grad_fn is None
    assert minitorch.is_grad_enabled() is True
    assert _records(x)


def test_enable_grad_inside_no_grad(backend: Any) -> None:
    x = minitorch.tensor([1.0], requires_grad=True)
    with minitorch.no_grad():
        with minitorch.enable_grad():
            assert minitorch.is_grad_enabled()
            assert _records(x)
            with minitorch.no_grad():
                assert not _records(x)
            assert _records(x)
        assert not minitorch.is_grad_enabled()
        assert not _records(x)
    assert minitorch.is_grad_enabled()


def test_set_grad_enabled_as_function_and_context(backend: Any) -> None:
    x = minitorch.tensor([1.0], requires_grad=True)
    try:
        minitorch.set_grad_enabled(False)  # takes effect at once, like torch
        assert not minitorch.is_grad_enabled() and not _records(x)
        minitorch.set_grad_enabled(True)
        assert minitorch.is_grad_enabled() and _records(x)
    finally:
        minitorch.set_grad_enabled(True)
    with minitorch.set_grad_enabled(False):
        assert not _records(x)
        with minitorch.set_grad_enabled(True):
            assert _records(x)
        assert not _records(x)
    assert minitorch.is_grad_enabled()
    with minitorch.no_grad(), minitorch.set_grad_enabled(True):
        assert _records(x)
    assert minitorch.is_grad_enabled()


def test_modes_restore_after_exceptions(backend: Any) -> None:
    with pytest.raises(ZeroDivisionError), minitorch.no_grad():
        1 / 0  # noqa: B018
    assert minitorch.is_grad_enabled()
    with minitorch.no_grad():
        with pytest.raises(KeyError), minitorch.enable_grad():
            raise KeyError
        assert not minitorch.is_grad_enabled()
    with pytest.raises(ValueError), minitorch.set_grad_enabled(False):
        raise ValueError
    assert minitorch.is_grad_enabled()


def test_decorators(backend: Any) -> None:
    x = minitorch.tensor([1.0], requires_grad=True)

    @minitorch.no_grad()
    def frozen(t: minitorch.Tensor) -> minitorch.Tensor:
        """Doc of frozen."""
        assert not minitorch.is_grad_enabled()
        return t * 2.0

    @minitorch.enable_grad()
    def tracked(t: minitorch.Tensor) -> minitorch.Tensor:
        return t * 2.0

    @minitorch.set_grad_enabled(False)
    def off(t: minitorch.Tensor) -> minitorch.Tensor:
        return t * 2.0

    assert minitorch.is_grad_enabled()  # decorating changes nothing by itself
    assert frozen.__name__ == "frozen" and frozen.__doc__ == "Doc of frozen."
    assert not frozen(x).requires_grad
    assert minitorch.is_grad_enabled()
    with minitorch.no_grad():
        assert tracked(x).requires_grad
        assert not minitorch.is_grad_enabled()
    assert not off(x).requires_grad
    assert minitorch.is_grad_enabled()

    @minitorch.no_grad()
    def boom() -> None:
        raise RuntimeError("inside")

    with pytest.raises(RuntimeError, match="inside"):
        boom()
    assert minitorch.is_grad_enabled()


def test_one_context_object_reused_and_nested(backend: Any) -> None:
    ng = minitorch.no_grad()
    with ng:
        with ng:
            assert not minitorch.is_grad_enabled()
        assert not minitorch.is_grad_enabled()
    assert minitorch.is_grad_enabled()
    with ng:
        assert not minitorch.is_grad_enabled()
    assert minitorch.is_grad_enabled()


def test_grad_mode_is_thread_local(backend: Any) -> None:
    seen: dict[str, Any] = {}
    inside = threading.Event()
    release = threading.Event()

    def worker() -> None:
        seen["start"] = minitorch.is_grad_enabled()  # main thread is under no_grad
        x = minitorch.tensor([1.0], requires_grad=True)
        seen["records"] = _records(x)
        with minitorch.no_grad():
            inside.set()
            release.wait(10)
            seen["inner"] = minitorch.is_grad_enabled()
        seen["end"] = minitorch.is_grad_enabled()

    with minitorch.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        assert inside.wait(10)
        # the worker is inside its own no_grad; leave ours
    assert minitorch.is_grad_enabled()  # not turned off by the worker's no_grad
    release.set()
    t.join(10)
    assert seen == {"start": True, "records": True, "inner": False, "end": True}


def test_backward_under_no_grad_still_fills_grad(backend: Any) -> None:
    x = minitorch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with minitorch.no_grad():
        y.backward()
    assert x.grad is not None
    assert list(backend.to_numpy(x.grad)) == [2.0, 4.0]
