"""Browser tests: a real JupyterLab started here, driven by Playwright through Debian's chromium.

The server runs on 127.0.0.1 with a random free port and a random token, ``--no-browser``, a temporary root folder,
temporary settings, workspace, config and runtime folders, and the kit's kernel (``python3``: jupyter_client starts
it with this interpreter, the venv's). It is stopped at the end of the session. The browser is never downloaded:
the tests use ``/usr/bin/chromium`` (``scripts/setup.sh browser``, run by ``make test``, installs it with apt) and
skip, saying why, where chromium or Playwright cannot be had.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.lab import TIMEOUT_MS, Lab, free_port

CHROMIUM = os.environ.get("AIRBENCH_CHROMIUM", "/usr/bin/chromium")
"""The browser binary (Debian's ``chromium`` package); never a downloaded build."""
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
"""Flags: headless, no sandbox (root in CI containers), and no network of its own."""
SETTINGS = {
    # no news or update check (a toast over the page, and network)
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    # no autosave: a reload shows the notebook as the test wrote it
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    # every cell painted (the default skips painting cells out of view: screenshots came out blank)
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}
"""User settings written into the temporary settings folder."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip the browser tests, saying why, where chromium, Playwright or JupyterLab is missing."""
    reason = None
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        reason = "Playwright for Python is not installed (pip install -e .[dev] installs it; no browser is downloaded)"
    if reason is None and not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        reason = (
            f"chromium not found at {CHROMIUM}: install it with 'apt-get install chromium' (scripts/setup.sh browser)"
        )
    if reason is None and shutil.which("jupyter-lab", path=str(Path(sys.executable).parent)) is None:
        try:
            import jupyterlab  # noqa: F401
        except ImportError:
            reason = "JupyterLab is not installed (pip install -e .[dev])"
    if reason is None:
        return
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A JupyterLab server for the session, stopped (kernels included) at the end."""
    base = tmp_path_factory.mktemp("jupyterlab")
    root, settings, workspaces, config, runtime = (base / n for n in ("root", "settings", "ws", "config", "runtime"))
    for folder in (root, settings, workspaces, config, runtime):
        folder.mkdir()
    for name, value in SETTINGS.items():
        path = settings / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    port, token = free_port(), secrets.token_hex(24)
    env = {k: v for k, v in os.environ.items() if k != "AIRBENCH_WIDGETS"}  # the kit must detect JupyterLab itself
    env.update(JUPYTER_CONFIG_DIR=str(config), JUPYTER_RUNTIME_DIR=str(runtime))
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--port-retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={workspaces}",
        "--expose-app-in-browser",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # CI containers run as root
    log = base / "jupyterlab.log"
    with open(log, "w") as handle:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, env=env, cwd=root)
    server = Lab(root, port, token, log)
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                pytest.fail(f"JupyterLab exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                server.api("/api/status")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not answer within 90 s:\n{log.read_text()[-3000:]}")
                time.sleep(0.3)
        yield server
    finally:
        try:
            server.api("/api/shutdown", method="POST")
            process.wait(timeout=20)
        except (OSError, urllib.error.URLError, subprocess.TimeoutExpired):
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """Debian's chromium, headless, through Playwright.

    Package-scoped, not session-scoped: Playwright's sync API keeps an event loop running in the main thread while
    it is open, and tests after the browser tests (``asyncio.run`` in a test body) must not find one.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """Keep each phase's report on the test item, so that the ``page`` fixture knows whether the test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """A fresh page (own context), 1400 x 2400 pixels so that tall widgets fit a screenshot.

    Leaving a page with unsaved changes is allowed (the dialog is accepted).

    When the test fails, the page at that moment is saved as ``failure.png`` in the test's temporary folder.
    """
    context = browser.new_context(viewport={"width": 1400, "height": 2400})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    page.on("dialog", lambda dialog: dialog.accept())
    try:
        yield page
    finally:
        report = getattr(request.node, "report_call", None)
        if report is not None and report.failed:
            path = tmp_path / "failure.png"
            page.screenshot(path=str(path))
            print(f"failure screenshot: {path}")
        context.close()
