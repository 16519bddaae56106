"""The setup the Makefile does: `make demo` installs the kit's tools only; `make test` adds the browser."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _fake_tools(folder: Path, *names: str) -> Path:
    """A folder of executables that do nothing, plus ``id``; ``apt-get`` records its calls (it never installs).

    It is the whole ``PATH`` of the script, so that a tool installed on this machine (chromium) looks missing.
    """
    folder.mkdir()
    (folder / "id").symlink_to(shutil.which("id") or "/usr/bin/id")
    for name in names:
        tool = folder / name
        tool.write_text("#!/bin/sh\nexit 0\n")
        tool.chmod(0o755)
    apt = folder / "apt-get"
    apt.write_text(f'#!/bin/sh\necho "$@" >> "{folder}/apt-get.calls"\nexit 0\n')
    apt.chmod(0o755)
    return folder


def _setup(mode: str, path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": str(path)}
    return subprocess.run(
        [shutil.which("bash") or "/bin/bash", "scripts/setup.sh", mode],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_system_setup_needs_espeak_and_sox_but_never_chromium(tmp_path):
    tools = _fake_tools(tmp_path / "bin", "espeak-ng", "sox")
    result = _setup("system", tools)
    assert result.returncode == 0, result.stderr
    assert "chromium" not in result.stdout + result.stderr
    assert not (tools / "apt-get.calls").exists()  # nothing missing: nothing installed
    browser = _setup("browser", tools)  # the test setup's step: chromium is what it installs (or asks for)
    asked = (tools / "apt-get.calls").read_text() if (tools / "apt-get.calls").exists() else browser.stderr
    assert "chromium" in asked and "espeak-ng" not in asked


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_demo_does_not_install_the_browser_and_make_test_does():
    def planned(target: str) -> str:
        result = subprocess.run(["make", "-n", target], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return result.stdout

    demo, test = planned("demo"), planned("test")
    assert "scripts/setup.sh system" in demo and "scripts/setup.sh browser" not in demo
    assert "scripts/setup.sh system" in test and "scripts/setup.sh browser" in test


def test_uv_is_given_pip_s_own_find_links_constraints_and_indexes(tmp_path):
    """uv installs from where pip would: pip.conf and PIP_* settings become uv options; a missing file:// index is
    left out (pip skips it with a warning, uv would stop)."""
    import sys

    constraints = tmp_path / "constraints.txt"
    constraints.write_text("torch<=2.14.1\n")
    local = tmp_path / "simple"
    local.mkdir()
    config = tmp_path / "pip.conf"
    config.write_text(
        f"[global]\nfind-links = {tmp_path / 'wheels'}\nconstraint = {constraints}\n"
        f"extra-index-url = file://{local} file://{tmp_path / 'gone'}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=str(config), PIP_FIND_LINKS="/opt/more-wheels", VENV=sys.prefix)
    result = subprocess.run(
        [shutil.which("bash") or "/bin/bash", "scripts/setup.sh", "uv-args"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    options = result.stdout.split()
    assert f"--find-links={tmp_path / 'wheels'}" in options and "--find-links=/opt/more-wheels" in options
    assert f"--constraint={constraints}" in options
    assert f"--extra-index-url=file://{local}" in options
    assert not [o for o in options if "gone" in o]
