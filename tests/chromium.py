"""Headless Chromium for tests: Debian's ``chromium`` driven from the command line.

``.ci/run`` installs ``chromium`` and ``chromium-driver``; tests that need the browser call
:func:`require_chromium`, which skips them with a reason where it is absent.
"""

from __future__ import annotations

import json
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


# WebDriver: Debian's chromedriver spoken to over HTTP (W3C WebDriver), no client library -------

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"
"""The key of an element reference in W3C WebDriver JSON."""


class WebDriver:
    """A headless Chromium session driven through ``chromedriver`` (typing, clicking, reading).

    Use as a context manager; it starts ``chromedriver`` on a free port and quits both at exit.
    """

    def __init__(self, profile: Path, *, timeout: float = 60) -> None:
        import socket

        browser = require_chromium()
        driver = shutil.which("chromedriver")
        if driver is None:
            pytest.skip("needs chromedriver (Debian's chromium-driver package, installed by .ci/run)")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        self._process = subprocess.Popen([driver, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._base = f"http://127.0.0.1:{port}"
        self._timeout = timeout
        self._wait_until(lambda: self._request("GET", "/status").get("ready"), "chromedriver did not start")
        profile.mkdir(parents=True, exist_ok=True)
        options = {"binary": browser, "args": [*FLAGS, f"--user-data-dir={profile}", "--window-size=1000,800"]}
        capabilities = {"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": options}}}
        self._session = self._request("POST", "/session", capabilities)["sessionId"]

    def _request(self, method: str, path: str, body: dict | None = None):
        import json
        import urllib.error
        import urllib.request

        data = json.dumps(body).encode() if body is not None else (b"{}" if method == "POST" else None)
        request = urllib.request.Request(self._base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                return json.loads(response.read() or b"{}").get("value")
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"WebDriver {method} {path}: {exc.read()[:1000]!r}") from exc

    def _wait_until(self, condition, message: str, timeout: float | None = None):
        import time

        deadline = time.monotonic() + (timeout or self._timeout)
        while True:
            try:
                value = condition()
            except (OSError, AssertionError):
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(message)
            time.sleep(0.1)

    def _session_request(self, method: str, path: str, body: dict | None = None):
        return self._request(method, f"/session/{self._session}{path}", body)

    def get(self, url: str) -> None:
        self._session_request("POST", "/url", {"url": url})

    def find(self, css: str) -> str:
        """The element id of the first match of ``css``."""
        return self._session_request("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def type(self, css: str, text: str) -> None:
        """Types ``text`` into the element as key events."""
        self._session_request("POST", f"/element/{self.find(css)}/value", {"text": text})

    def clear(self, css: str) -> None:
        """Empties an input element."""
        self._session_request("POST", f"/element/{self.find(css)}/clear")

    def click(self, css: str) -> None:
        self._session_request("POST", f"/element/{self.find(css)}/click")

    def text(self, css: str) -> str:
        return self._session_request("GET", f"/element/{self.find(css)}/text")

    def attribute(self, css: str, name: str) -> str | None:
        return self._session_request("GET", f"/element/{self.find(css)}/attribute/{name}")

    def property(self, css: str, name: str):
        return self._session_request("GET", f"/element/{self.find(css)}/property/{name}")

    def wait_for_attribute(self, css: str, name: str, value: str | None = None, timeout: float | None = None) -> str:
        """Waits until the attribute is set (to ``value`` when given); returns it."""
        return self._wait_until(
            lambda: (lambda got: got if got is not None and (value is None or got == value) else None)(
                self.attribute(css, name)),
            f"{css} never got {name}={value!r}", timeout,
        )

    def screenshot(self, out: Path) -> Path:
        import base64

        out.write_bytes(base64.b64decode(self._session_request("GET", "/screenshot")))
        return out

    def quit(self) -> None:
        try:
            self._request("DELETE", f"/session/{self._session}")
        except (OSError, AssertionError):
            pass
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()

    def __enter__(self) -> WebDriver:
        return self

    def __exit__(self, *exc) -> None:
        self.quit()


def classify_in_page(browser: WebDriver, sentences, url: str) -> list[dict]:
    """The browser example's page (examples/browser/): loads ``url``, types each sentence,
    clicks Classify and returns the page's result records (checked against the shown label)."""
    browser.get(url)
    assert browser.wait_for_attribute("#status", "data-ready") == "yes", browser.text("#status")
    results = []
    for count, sentence in enumerate(sentences, start=1):
        browser.clear("#text")
        browser.type("#text", sentence)
        browser.click("#classify")
        browser.wait_for_attribute("#result", "data-done", str(count))
        page = json.loads(browser.property("#result", "textContent"))
        assert page["text"] == sentence and page["label"] == browser.text("#label")
        results.append(page)
    return results
