"""Shared headless-Chromium helpers for browser tests (Debian's /usr/bin/chromium via Playwright).

    from browser import launch, offline_page   # tests/ is on the path (pytest.ini); one module name, one Playwright per thread

    with launch() as browser:
        page, log = offline_page(browser)
        page.goto(path.as_uri())
        ...
        assert log.external == []

``launch()`` skips the calling test when Chromium or Playwright is missing, unless the
environment variable ``CI`` is set, in which case the test fails with the reason.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

CHROMIUM_PATH = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-quic",
    "--disable-sync",
]
LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:")


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"browser test cannot run in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def require_chromium() -> None:
    """Skip the calling test when Chromium or Playwright is missing (fail instead when ``CI`` is set),
    without starting Playwright (a thread may then start its own)."""
    if not (Path(CHROMIUM_PATH).is_file() or shutil.which(CHROMIUM_PATH)):
        _unavailable(f"no Chromium at {CHROMIUM_PATH} (apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        _unavailable("the python package 'playwright' is not installed (pip install playwright)")


_PER_THREAD = threading.local()  # .playwright and .open (browsers now open in this thread)


@contextlib.contextmanager
def launch(**kwargs):
    """Yield a Playwright Chromium browser; closes it afterwards.

    One Playwright per thread, started with the thread's first browser and stopped when its last one closes: Playwright's
    sync API refuses a second ``sync_playwright()`` in a thread where one runs ("using Playwright Sync API inside the
    asyncio loop": an e2e file's session browser stays open while a later file opens its own), and a Playwright is bound
    to the thread that started it (the load test's sessions each run in a thread of their own; one process-wide
    Playwright started there was dead for the main thread's next browser: "Playwright connection closed")."""
    require_chromium()
    here = _PER_THREAD
    if getattr(here, "open", 0) == 0:
        from playwright.sync_api import sync_playwright
        here.playwright, here.open = sync_playwright().start(), 0
    here.open += 1
    try:
        browser = here.playwright.chromium.launch(executable_path=CHROMIUM_PATH, args=list(CHROMIUM_ARGS), **kwargs)
    except BaseException:
        _release(here)
        raise
    try:
        yield browser
    finally:
        try:
            browser.close()
        finally:
            _release(here)


def _release(here) -> None:
    here.open -= 1
    if here.open == 0:
        here.playwright.stop()


@dataclass
class PageLog:
    """What a page did that a test may want to assert on."""

    external: list = field(default_factory=list)   # URLs of non-local requests (all aborted)
    dialogs: list = field(default_factory=list)    # alert/confirm/prompt messages
    errors: list = field(default_factory=list)     # uncaught page errors
    console: list = field(default_factory=list)    # console messages, "type: text"


_CSP_RECORDER = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI);
});
"""


def csp_violations(page) -> list:
    """Content-Security-Policy violations seen so far on ``page`` ("directive blocked-uri")."""
    return page.evaluate("window.__cspViolations || []")


def offline_page(browser, **context_kwargs):
    """A new page in a fresh context that aborts and records every request that is not
    file:, data:, about: or blob:, and records dialogs (dismissed), page errors and the
    console. Returns (page, PageLog); see also ``csp_violations(page)``."""
    context = browser.new_context(**context_kwargs)
    log = PageLog()

    def route(r):
        if r.request.url.startswith(LOCAL_SCHEMES):
            r.continue_()
        else:
            r.abort()  # recorded by the "request" listener below

    def record(req):
        if not req.url.startswith(LOCAL_SCHEMES):
            log.external.append(req.url)

    context.route("**/*", route)
    # A Content-Security-Policy stops a load before it becomes a request; keep a note of those too.
    context.add_init_script(_CSP_RECORDER)
    page = context.new_page()
    page.on("request", record)
    page.on("dialog", lambda d: (log.dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: log.errors.append(str(e)))
    page.on("console", lambda m: log.console.append(f"{m.type}: {m.text}"))
    return page, log


def pwned_anywhere(page) -> list:
    """URLs of the frames of ``page`` where a script payload set ``window.__pwned`` (should be none)."""
    hits = []
    for frame in page.frames:
        try:
            if frame.evaluate("typeof window.__pwned !== 'undefined'"):
                hits.append(frame.url)
        except Exception:  # a detached frame
            pass
    return hits


ROOT = Path(__file__).resolve().parents[1]


def updating_screenshots() -> bool:
    """Whether this run refreshes the README's pictures (``ATTENTION_LAB_UPDATE_SCREENSHOTS=1``)."""
    return os.environ.get("ATTENTION_LAB_UPDATE_SCREENSHOTS") == "1"


def shot_folders(also_docs: bool) -> list[Path]:
    """Where an e2e screenshot goes: test-artifacts/, plus the README's docs/screenshots/ when the test asks for it
    and ATTENTION_LAB_UPDATE_SCREENSHOTS=1 (a plain test run leaves the tracked pictures alone)."""
    docs = also_docs and updating_screenshots()
    return [ROOT / "test-artifacts"] + ([ROOT / "docs" / "screenshots"] if docs else [])


def screenshot(page, name: str, also_docs: bool = False) -> None:
    """``page`` as it is on screen, saved in every folder of :func:`shot_folders`."""
    for folder in shot_folders(also_docs):
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / f"{name}.png"), full_page=False)


_IDLE = """(quiet) => {
    const app = document.querySelector('[data-testid=stApp]');
    if (!(app && app.dataset.testScriptState === 'notRunning' && document.querySelector('h1'))) {
        window.__labIdleSince = null;
        return false;
    }
    window.__labIdleSince = window.__labIdleSince || performance.now();
    return performance.now() - window.__labIdleSince >= quiet;
}"""


def settle(page, timeout: float = 60_000, quiet_ms: float = 500) -> None:
    """Wait until the page has drawn its title and its script has not been running for ``quiet_ms``: a page whose
    first run has not started yet also reads "notRunning", so a single look right after a navigation or a key press
    can see the page before its run."""
    page.wait_for_selector("[data-testid=stApp]", timeout=timeout)
    page.evaluate("() => { window.__labIdleSince = null; }")
    page.wait_for_timeout(300)
    page.wait_for_function(_IDLE, arg=quiet_ms, timeout=timeout, polling=100)


def press_until(page, key: str, done_js: str, timeout: float = 60_000, retry_after: float = 10_000) -> None:
    """Press ``key`` and wait for ``done_js`` (a JS function returning true). A key press that reached the page while it
    was busy can be lost: when nothing changed and the page has been idle for ``retry_after`` ms, press it again
    (never while a run is going, so a slow press is not counted twice)."""
    deadline = timeout
    while True:
        page.keyboard.press(key)
        try:
            page.wait_for_function(done_js, timeout=min(retry_after, deadline))
            return
        except Exception:
            deadline -= retry_after
            if deadline <= 0:
                raise
            settle(page, timeout=deadline)
            if page.evaluate(done_js):
                return


E2E = Path(__file__).resolve().parent / "e2e"


def probe(name: str) -> str:
    """The page probe ``tests/e2e/<name>`` (a function expression for ``page.evaluate``) with the shared visibility
    test of ``tests/e2e/shown.js`` put in where it says ``SHOWN``."""
    shown = "\n".join(line for line in (E2E / "shown.js").read_text().splitlines() if not line.startswith("//"))
    return (E2E / name).read_text().replace("SHOWN", "(" + shown.strip() + ")", 1)
