"""A real Attention Lab server on a free loopback port, and pages that may talk only to it."""
from __future__ import annotations

from pathlib import Path

import pytest

from browser import launch, screenshot, settle

ROOT = Path(__file__).resolve().parents[2]
import load_test  # bench/load_test.py: the server is started exactly as the load benchmark starts it



@pytest.fixture(scope="session")
def server_log(tmp_path_factory):
    """The file the server's console (stdout and stderr) goes to."""
    return tmp_path_factory.mktemp("server") / "streamlit.log"


@pytest.fixture(scope="session")
def server(tmp_path_factory, server_log):
    """Start ``streamlit run app/main.py`` headless on 127.0.0.1; yield its base URL."""
    try:
        proc, base = load_test.start_server(tmp_path_factory.mktemp("data"), server_log)
    except RuntimeError as e:
        pytest.fail(str(e))
    yield base
    load_test.stop_server(proc)


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
        """Wait until the app has drawn its title and its script is no longer running (browser.settle)."""
        settle(self.page, timeout=timeout)

    def shot(self, name: str, also_docs: bool = False):
        """test-artifacts/<name>.png; with ``also_docs``, the README's docs/screenshots/<name>.png too, but only
        when ATTENTION_LAB_UPDATE_SCREENSHOTS=1 (a plain test run leaves the tracked pictures alone)."""
        screenshot(self.page, name, also_docs)

    def close(self):
        self.context.close()


@pytest.fixture
def visit(browser, server):
    v = Visit(browser, server)
    yield v
    v.close()
