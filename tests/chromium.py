"""Headless Chromium for tests: Debian's ``chromium`` driven from the command line.

``.ci/run`` installs ``chromium`` and ``chromium-driver``; tests that need the browser call
:func:`require_chromium`, which skips them with a reason where it is absent.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--hide-scrollbars",
)


def chromium_path() -> str | None:
    """The Chromium executable, or ``None``."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def require_chromium() -> str:
    """The Chromium executable; skips the calling test when there is none."""
    path = chromium_path()
    if path is None:
        pytest.skip("needs Chromium (Debian's chromium package, installed by .ci/run)")
    return path


def _run(url: str, profile: Path, extra: list[str], timeout: float) -> subprocess.CompletedProcess:
    profile.mkdir(parents=True, exist_ok=True)
    command = [require_chromium(), *FLAGS, f"--user-data-dir={profile}", *extra, url]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


def dump_dom(url: str, profile: Path, *, virtual_time_ms: int | None = None, timeout: float = 120) -> str:
    """The DOM after the page loaded and its scripts ran (``--dump-dom``)."""
    extra = ["--dump-dom"] + ([f"--virtual-time-budget={virtual_time_ms}"] if virtual_time_ms else [])
    done = _run(url, profile, extra, timeout)
    assert done.returncode == 0 and done.stdout, f"chromium failed ({done.returncode}): {done.stderr[-2000:]}"
    return done.stdout


def screenshot(url: str, profile: Path, out: Path, *, size: tuple[int, int] = (1280, 2400), timeout: float = 120) -> Path:
    """Saves a PNG of the page's first ``size`` pixels to ``out``."""
    done = _run(url, profile, [f"--screenshot={out}", f"--window-size={size[0]},{size[1]}"], timeout)
    assert done.returncode == 0 and out.is_file(), f"chromium failed ({done.returncode}): {done.stderr[-2000:]}"
    return out
