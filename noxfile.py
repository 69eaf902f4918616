"""Test sessions, one per backend manifest in backends/, plus lint and typecheck.

`nox` runs them all; `nox -s tests-numpy` one; `nox -l` lists them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).parent
MANIFESTS = {
    m["name"]: m
    for m in (tomllib.loads(p.read_text()) for p in sorted((ROOT / "backends").glob("*.toml")))
}

nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = False


def cuda_gpu_count() -> tuple[int, str]:
    """Probe for a CUDA GPU without installing anything: libcuda + cuDeviceGetCount."""
    name = ctypes.util.find_library("cuda") or "libcuda.so.1"
    try:
        lib = ctypes.CDLL(name)
    except OSError:
        return 0, "no CUDA driver (libcuda) on this machine"
    if lib.cuInit(0) != 0:
        return 0, "the CUDA driver did not initialise (no GPU?)"
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
        return 0, "the CUDA driver reports no GPU"
    return count.value, f"{count.value} CUDA GPU(s)"


def _editable(requirement: str) -> list[str]:
    return ["-e", requirement] if requirement.startswith(".") else [requirement]


def _tests(session: nox.Session, name: str) -> None:
    m = MANIFESTS[name]
    tags = m.get("tags", [])
    if "gpu" in tags:
        n, why = cuda_gpu_count()
        if n == 0:
            session.skip(f"{name}: skipped, {why}; this session needs a CUDA GPU")
    # minitorch itself editable, so that the doctests of src/ and the installed package
    # are the same files
    session.install(*(arg for req in m["install"] for arg in _editable(req)))
    env = {
        # a manifest's name is its session's; `backend` (default: the name) is what runs
        "MINITORCH_BACKEND": m.get("backend", name),
        "MINITORCH_DEVICE": str(m.get("device", "")),
        "MINITORCH_DTYPE": str(m.get("dtype", "float64")),
        **{k: str(v) for k, v in m.get("env", {}).items()},
    }
    if "light" in tags:
        env["MINITORCH_GRADCHECK_FAST"] = "1"
    if name == "numpy":
        args = [
            "-m",
            "not browser and not distributed",
            "--doctest-modules",
            "src/minitorch",
            "src/minigrad",
            "tests",
        ]
    else:
        # backend-independent suites (the scalar engine, docs) run once, in tests-numpy
        args = ["-m", "not browser and not backend_independent and not distributed", "tests"]
    # one worker per core (pytest-xdist); a GPU session shares one device: one process
    workers = [] if "gpu" in tags else ["-n", "auto"]
    session.run("pytest", *workers, *args, *session.posargs, env=env)


for _name in MANIFESTS:

    @nox.session(name=f"tests-{_name}")
    def _session(session: nox.Session, _name: str = _name) -> None:
        _tests(session, _name)


CHROMIUM = Path("/usr/bin/chromium")


@nox.session
def browser(session: nox.Session) -> None:
    """The Tensor Ops Lab in headless Chromium (the system's, driven by Playwright)."""
    if not CHROMIUM.is_file():
        session.skip(
            f"browser: skipped, no system Chromium at {CHROMIUM} (apt-get install chromium)"
        )
    session.install(".[lab,test]", "playwright")
    shot = Path(session.create_tmp()).resolve() / "lab-screenshot.png"
    env = {"MINITORCH_CHROMIUM": str(CHROMIUM), "MINITORCH_LAB_SCREENSHOT": str(shot)}
    session.run("pytest", "-m", "browser", "tests/test_lab_browser.py", *session.posargs, env=env)
    session.log(f"screenshot: {shot}")


@nox.session
def distributed(session: nox.Session) -> None:
    """Data-parallel training on torch.distributed: two local processes on Gloo
    (loopback only), against one process; the all-reduce; the faults; the demo's
    ``--nproc`` and ``torchrun``."""
    session.install("-e", ".[torch,strict,test]")
    env = {"OMP_NUM_THREADS": "1"}
    session.run(
        "pytest", "-m", "distributed", "tests/test_distributed.py", *session.posargs, env=env
    )


MINIMODEL = ROOT / "downstream" / "minimodel"


@nox.session
def downstream(session: nox.Session) -> None:
    """minimodel, the model package built on minitorch's public API, as a user installs
    it: minitorch's wheel (not an editable install) and minimodel, then minimodel's
    tests (numpy, array_api_strict, torch, jax), its doctests and ``mypy --strict`` on
    minimodel."""
    wheels = Path(session.create_tmp()).resolve() / "wheels"
    for old in wheels.glob("*.whl"):
        old.unlink()
    session.install("pip>=24")
    session.run(
        "python", "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(wheels), str(ROOT)
    )
    (wheel,) = wheels.glob("minitorch-*.whl")
    session.install(f"{wheel}[torch,jax,strict]", f"{MINIMODEL}[test]", "mypy>=1.11")
    # the version does not change between commits: reinstall what was just built
    session.install("--force-reinstall", "--no-deps", str(wheel), str(MINIMODEL))
    session.chdir(MINIMODEL)  # so neither minitorch's src/ nor its conftest.py is seen
    session.run(
        "python",
        "-c",
        "import minitorch, minimodel; "
        "assert 'site-packages' in minitorch.__file__, minitorch.__file__; "
        "assert 'site-packages' in minimodel.__file__, minimodel.__file__",
    )
    env = {"JAX_PLATFORMS": "cpu", "JAX_ENABLE_X64": "1"}
    session.run("pytest", "-n", "auto", "tests", *session.posargs, env=env)
    # the examples in minimodel's docstrings, as the installed package has them
    session.run("pytest", "-q", "--doctest-modules", "--pyargs", "minimodel", env=env)
    session.run("mypy", "--strict", "-p", "minimodel")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check, ruff format --check, and the import layers (import-linter)."""
    session.install("ruff>=0.6", "import-linter>=2.13", "-e", ".")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("lint-imports")


EXPORTS = re.compile(r"(# <regen:exports>[^\n]*\n).*?(# </regen:exports>)", re.S)


@nox.session(default=False)  # a command, not a check: `nox -s regen`
def regen(session: nox.Session) -> None:
    """Rewrite the text generated from the op registry: the exports in
    src/minitorch/__init__.py, the typed Tensor methods in tensor.py, docs/ops.md."""
    session.install("-e", ".")
    # the exports run at import time: empty them first, so that a renamed or removed op
    # cannot stop `import minitorch` before they are rewritten
    init = ROOT / "src" / "minitorch" / "__init__.py"
    init.write_text(EXPORTS.sub(r"\1\2", init.read_text()))
    session.run("python", "-m", "minitorch.dev", "regen")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy (strict for minigrad and minitorch's public API)."""
    session.install("-e", ".", "mypy>=1.11")
    session.run("mypy")
