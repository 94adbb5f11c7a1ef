"""A real Attention Lab server on a free loopback port, and pages that may talk only to it."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from browser import launch

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """Start ``streamlit run app/main.py`` headless on 127.0.0.1; yield its base URL."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("server") / "streamlit.log"
    env = dict(os.environ, ATTENTION_LAB_DATA=str(tmp_path_factory.mktemp("data")), PYTHONUNBUFFERED="1")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app" / "main.py"),
                                 "--server.headless", "true", "--server.address", "127.0.0.1",
                                 "--server.port", str(port), "--browser.gatherUsageStats", "false"],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{base}/_stcore/health", timeout=2).read() == b"ok":
                break
        except OSError:
            time.sleep(0.3)
        if proc.poll() is not None:
            break
    else:
        proc.kill()
        pytest.fail(f"streamlit did not become healthy:\n{log_path.read_text()[-3000:]}")
    if proc.poll() is not None:
        pytest.fail(f"streamlit exited:\n{log_path.read_text()[-3000:]}")
    yield base
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def browser():
    with launch() as b:
        yield b


class Visit:
    """A page limited to the app's own origin; every other request is aborted and recorded."""

    def __init__(self, browser, base):
        self.base, self.external, self.dialogs, self.errors = base, [], [], []
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def _local(self, url: str) -> bool:
        return url.startswith((self.base, "data:", "about:", "blob:"))

    def _route(self, route):
        url = route.request.url
        if self._local(url):
            route.continue_()
        else:
            self.external.append(url)
            route.abort()

    def open(self, path: str):
        self.page.goto(self.base + path)
        self.settle()
        return self.page

    def settle(self, timeout=60_000):
        """Wait until the app has rendered and its script is no longer running."""
        self.page.wait_for_selector("[data-testid=stApp]", timeout=timeout)
        self.page.wait_for_timeout(300)
        self.page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]", timeout=timeout)
        self.page.wait_for_timeout(200)

    def shot(self, name: str, also_docs: bool = False):
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)
        if also_docs:
            (ROOT / "docs" / "screenshots").mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(ROOT / "docs" / "screenshots" / f"{name}.png"), full_page=False)

    def close(self):
        self.context.close()


@pytest.fixture
def visit(browser, server):
    v = Visit(browser, server)
    yield v
    v.close()
