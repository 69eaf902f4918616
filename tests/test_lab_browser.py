"""The Tensor Ops Lab in a real browser: serve the page, click through it (forward,
backward, a slider, the step-by-step backward pass, the error demo) with headless Chromium
(Playwright driving the system's Chromium) and save screenshots.

Run it with ``nox -s browser`` or ``pytest -m browser tests/test_lab_browser.py``. It is
skipped where Streamlit, Playwright or Chromium is missing. ``MINITORCH_LAB_SCREENSHOT``
names where the screenshot goes (default: a temporary directory).
"""

from __future__ import annotations

import math
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

pytest.importorskip("streamlit", reason="the browser test needs the 'lab' extra (streamlit)")
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the browser test needs the 'playwright' Python package"
)
expect = sync_api.expect

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
STARTUP_TIMEOUT_S = 90.0


def _chromium() -> str | None:
    for cand in (
        os.environ.get("MINITORCH_CHROMIUM"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
    ):
        if cand and Path(cand).is_file():
            return cand
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def chromium() -> str:
    path = _chromium()
    if path is None:
        pytest.skip("no system Chromium (apt-get install chromium, or set MINITORCH_CHROMIUM)")
    return path


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The lab served on a free local port; stopped at the end."""
    from minitorch.lab import command

    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "JAX_ENABLE_X64": "1"}
    proc = subprocess.Popen(
        command(port=port), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                out = proc.stdout.read() if proc.stdout else ""
                pytest.fail(f"the lab server exited with code {proc.returncode}:\n{out}")
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the lab server did not answer at {url} within {STARTUP_TIMEOUT_S} s")
            time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_click_forward_backward_steps_and_error(server: str, chromium: str, tmp_path: Path) -> None:
    shot = Path(os.environ.get("MINITORCH_LAB_SCREENSHOT", tmp_path / "lab-screenshot.png"))
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1450})
            page.set_default_timeout(60_000)
            page.goto(server)

            # the forward pass is shown at once: the graph (an SVG with the leaves a, b, c,
            # the ops and the local derivative on every edge)
            page.get_by_text("Output = ").wait_for()
            graph = page.locator("[data-testid='stGraphVizChart'] svg")
            graph.first.wait_for()
            svg = graph.first.inner_html()
            for label in ("a", "b", "c", "tanh", "a * b", "a + b", "∂ = -1", "∂ = 0.5"):
                assert f">{label}<" in svg, f"{label!r} missing from the graph"

            # backward: signed gradients, the chain rule and the finite-difference check
            page.get_by_role("button", name="Backward pass").click()
            page.get_by_text("Gradients match finite differences").wait_for()
            svg = graph.first.inner_html()
            assert ">grad -0.94<" in svg  # d out/da = (1 - y^2) b: signed
            assert ">g·∂ = -0.94<" in svg
            # (Streamlit sends the page in parts: wait for each, do not count at once; the
            # count of a part not rendered yet was 0 once)
            page.get_by_text("dL/da = dL/d(a*b) · ∂(a*b)/∂a = 0.94 × -1 = -0.94").first.wait_for()
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot), full_page=True)
            expect(page.locator("td", has_text="-0.9400148488")).to_have_count(2)  # autograd, FD

            # a slider moves: everything is computed again, no button pressed
            slider = page.get_by_role("slider").first  # a
            slider.focus()
            page.keyboard.press("ArrowRight")  # a = 0.55
            y = math.tanh(0.55 * -1.0 + 0.25)
            page.get_by_text(f"Output = {y:.6g}").wait_for()
            page.get_by_text("Gradients match finite differences").wait_for()
            page.keyboard.press("ArrowLeft")  # back to a = 0.5
            page.get_by_text(f"Output = {math.tanh(-0.25):.6g}").wait_for()

            # step by step: one op per click, the current one highlighted
            page.get_by_role("button", name="Backward step by step").click()
            page.get_by_text("Before the first step").wait_for()
            for p, title in enumerate(("out = tanh(a*b + c)", "a*b + c", "a*b"), start=1):
                page.get_by_role("button", name="Next step").click()
                page.get_by_text(f"Step {p} of 3: {title}").wait_for()
            page.get_by_text("Backward is complete after 3 steps").wait_for()
            assert page.get_by_role("button", name="Next step").is_disabled()
            assert ">g·∂ = 0.47<" in graph.first.inner_html()  # d out/db, passed back
            page.screenshot(path=str(shot.with_name(f"{shot.stem}-steps.png")), full_page=True)

            # simulate error: minitorch's error next to the naive engine's wrong number
            page.get_by_role("button", name="Simulate error").click()
            err = page.get_by_text("RuntimeError: one of the tensors needed")
            err.wait_for()
            text = err.inner_text()
            assert "input 0 of mul, is at version 1; expected version 0" in text
            # the naive engine's d/db = (1 - y^2)(a + 1)
            expect(page.locator("td", has_text="1.410022273")).to_have_count(1)
            expect(page.locator("td", has_text="WRONG")).to_have_count(1)
            page.screenshot(path=str(shot.with_name(f"{shot.stem}-error.png")), full_page=True)
        finally:
            browser.close()
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}", file=sys.stderr)
