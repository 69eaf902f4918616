"""Thread-local grad mode: ``no_grad``, ``enable_grad``, ``set_grad_enabled``."""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Generator
from types import TracebackType
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class _State(threading.local):
    enabled: bool = True


_state = _State()


def is_grad_enabled() -> bool:
    """Whether new results record the graph in this thread."""
    return _state.enabled


class _GradMode:
    """Sets grad mode inside a ``with`` block or a decorated function, then restores it."""

    mode: bool

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._prev: list[bool] = []

    def __enter__(self) -> None:
        self._prev.append(_state.enabled)
        _state.enabled = self.mode

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _state.enabled = self._prev.pop()

    def __call__(self, fn: F) -> F:
        mode = self.mode
        if inspect.isgeneratorfunction(fn):
            return _wrap_generator(fn, mode)  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            prev = _state.enabled
            _state.enabled = mode
            try:
                return fn(*args, **kwargs)
            finally:
                _state.enabled = prev

        return wrapper  # type: ignore[return-value]


def _wrap_generator(fn: Callable[..., Generator[Any, Any, Any]], mode: bool) -> Callable[..., Any]:
    """A generator function whose body runs in ``mode`` each time it resumes, while the
    caller's code between two ``next()`` calls keeps the caller's mode (as PyTorch's
    decorators treat generators)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        gen = fn(*args, **kwargs)
        try:
            with _GradMode(mode):
                response = gen.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with _GradMode(mode):
                        gen.close()
                    raise
                except BaseException as exc:
                    with _GradMode(mode):
                        response = gen.throw(exc)
                else:
                    with _GradMode(mode):
                        response = gen.send(request)
        except StopIteration as stop:
            return stop.value

    return wrapper


class no_grad(_GradMode):
    """Context manager / decorator: results record no graph and save nothing.

    Examples
    --------
    >>> import minitorch
    >>> x = minitorch.tensor([1.0], requires_grad=True)
    >>> with minitorch.no_grad():
    ...     (x * 2).requires_grad
    False
    """

    def __init__(self) -> None:
        super().__init__(False)


class enable_grad(_GradMode):
    """Context manager / decorator: turn grad mode back on (e.g. inside ``no_grad``)."""

    def __init__(self) -> None:
        super().__init__(True)


class set_grad_enabled(_GradMode):
    """Turn grad mode on or off: takes effect at once, and as a context manager it
    restores the previous mode on exit (like PyTorch's).

    Examples
    --------
    >>> import minitorch
    >>> with minitorch.set_grad_enabled(False):
    ...     minitorch.is_grad_enabled()
    False
    >>> minitorch.is_grad_enabled()
    True
    """

    def __init__(self, mode: bool) -> None:
        super().__init__(mode)
        self._before = _state.enabled
        _state.enabled = self.mode

    def __enter__(self) -> None:
        self._prev.append(self._before)
        _state.enabled = self.mode

    def __call__(self, fn: F) -> F:
        _state.enabled = self._before  # used as a decorator: only calls change the mode
        return super().__call__(fn)
