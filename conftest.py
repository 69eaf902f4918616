"""Root test configuration: the backend under test, fixtures and hypothesis profiles.

The backend comes from ``--backend`` or ``MINITORCH_BACKEND`` (default ``numpy``), its
device from ``--device`` / ``MINITORCH_DEVICE``. A session fails (it does not skip) if
the backend it names cannot be loaded.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from typing import Any

import pytest

try:
    from hypothesis import HealthCheck, settings

    settings.register_profile(
        "ci",
        max_examples=100,
        deadline=None,
        derandomize=True,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    settings.register_profile("dev", max_examples=25, deadline=None)
    settings.register_profile("thorough", max_examples=1000, deadline=None)
    settings.load_profile(
        os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
    )
except ImportError:  # pragma: no cover
    pass

BACKEND_INDEPENDENT = ("test_scalar", "test_docs", "test_minigrad")

# --doctest-modules imports every module: skip the ones whose optional library is absent
collect_ignore = [
    path
    for path, library in {
        "src/minitorch/backend/_cupy.py": "cupy",
        "src/minitorch/backend/_jax.py": "jax",
        "src/minitorch/backend/_strict.py": "array_api_strict",
        "src/minitorch/backend/_torch.py": "torch",
        "src/minitorch/distributed.py": "torch",
        "src/minitorch/lab/app.py": "streamlit",
    }.items()
    if importlib.util.find_spec(library) is None
]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backend", default=os.environ.get("MINITORCH_BACKEND", "numpy"))
    parser.addoption("--device", default=os.environ.get("MINITORCH_DEVICE") or None)


def _resolve(config: pytest.Config) -> Any:
    import minitorch.backend as B

    name = config.getoption("--backend")
    device = config.getoption("--device")
    if name == "array_api_strict" and device is None:
        device = "device1"
    try:
        return B.resolve(name, "float64", device)
    except Exception as exc:
        raise pytest.UsageError(
            f"backend {name!r} (device {device!r}) cannot be loaded: {exc}"
        ) from exc


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "backend_independent: runs once, in the numpy session")
    config._minitorch_backend = _resolve(config)  # type: ignore[attr-defined]
    try:  # torch is the reference; its thread pool only slows down tiny ops on 2 cores
        import torch

        torch.set_num_threads(1)
    except ImportError:
        pass


def pytest_report_header(config: pytest.Config) -> list[str]:
    be = config._minitorch_backend  # type: ignore[attr-defined]
    return [
        f"minitorch backend: {be.name} {be.version}, device={be.device}, "
        f"dtype under test: float64 (and float32 where a test says so)"
    ]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.fspath.basename.startswith(p) for p in BACKEND_INDEPENDENT):
            item.add_marker(pytest.mark.backend_independent)


@pytest.fixture(scope="session")
def backend(request: pytest.FixtureRequest) -> Any:
    """The Backend under test, with float64 as the default dtype."""
    return request.config._minitorch_backend  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def xp(backend: Any) -> Any:
    """The backend's Array API namespace."""
    return backend.xp


@pytest.fixture(autouse=True)
def _backend_for_each_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test starts on the backend under test (float64) and is restored after."""
    import minitorch

    if isinstance(request.node, pytest.DoctestItem):
        # docstring examples show the library's defaults: NumPy, float32
        with minitorch.use_backend("numpy"):
            yield
        return
    be = request.config._minitorch_backend  # type: ignore[attr-defined]
    with minitorch.use_backend(be.name, dtype="float64", device=be.device):
        yield


@pytest.fixture(autouse=True)
def _doctest_namespace(doctest_namespace: dict[str, Any]) -> None:
    import numpy as np

    import minitorch

    doctest_namespace["minitorch"] = minitorch
    doctest_namespace["np"] = np
