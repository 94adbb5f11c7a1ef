"""Many users at once: N headless-Chromium sessions type sentences on the Attention page while one trains.

    python bench/load_test.py [--sessions 8] [--renders 200] [--out load.json]

Starts its own ``streamlit run app/main.py`` (free port on 127.0.0.1, headless, ATTENTION_LAB_DATA in a
temporary folder, log to a file), then runs ``--sessions`` browser sessions, each in its own thread with
its own Playwright and Chromium (Playwright's sync objects are not thread-safe). Each session opens
``/attention?model=en-fr`` and repeatedly types a new sentence into the sidebar "Sentence" box
(fill, Control+Enter), timing until the heatmap's x axis shows the new sentence's words. The renders
(``--renders`` in total) are shared out through one queue. Meanwhile another session uses the Training
page: small settings, "Start training", wait until saved, again, until the renders are done.

``--walk classroom`` makes every session a student in a class instead: open the teacher's shared link (the Lesson
on the class's sentence), step the Lesson three times, put their own sentence in the sidebar, open the Attention page
from the navigation, then type sentences there like the default walk; every action is timed from the click or
Control+Enter to the chart that shows its result. ``--replicas N`` (N > 1) serves the app from N Streamlit processes
behind nginx (``docs/nginx-attention-lab.conf``: sticky sessions by a cookie, websockets passed through; Debian's
``nginx`` package), and checks from nginx's log that every browser stayed on one replica. ``--scripted N`` adds N
students on the classroom walk that speak Streamlit's websocket protocol without a browser (``app/visitor.py``;
30 Chromium processes do not fit on 2 cores beside the app), and ``--think S`` gives every student S seconds
(0.5–1.5×, seeded) of reading before each action; the class of 30 in docs/RELIABILITY.md is
``--sessions 4 --scripted 26 --renders 300 --walk classroom --replicas 2 [--think 10]``.

Every request that is not for the app's own 127.0.0.1 origin is aborted and counted. The server's RSS
(its process and any children; psutil if installed, else /proc/PID/status VmRSS) is sampled every 0.5 s
and also read exactly when 25 %, 50 % and 100 % of the renders have completed.

Prints p50/p95 time to render, renders ok/failed, peak RSS, RSS after the first 25 % of renders vs at
the end, external requests, and as the last line the summary as JSON. ``--out`` also writes the full
record (every render, every RSS sample). ``tests/e2e/test_load.py`` runs a reduced version of this.
"""
from __future__ import annotations

import argparse
import asyncio
import importlib.util
import itertools
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.request
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def from_tests(name: str):
    """The test helper ``tests/<name>.py`` (``browser``: headless Chromium with the suite's flags), for the benchmarks
    that drive a browser the way the tests do. Under pytest it is the module the tests imported (tests/ is on their
    path, pytest.ini; Playwright is shared per thread, so there must be one copy); a benchmark run as a script
    loads it from its file and registers it under the same name. tests/ is a folder of helpers, not a package.
    One lock for every caller: the session threads ask at once, and a thread that found the module registered while
    another was still running its file got it half made (``module 'browser' has no attribute 'launch'``: every browser
    student but the first, and the trainer, died so in a class-of-30 run on 2026-11-27)."""
    with _FROM_TESTS_LOCK:
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / f"{name}.py")
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        return sys.modules[name]


_FROM_TESTS_LOCK = threading.Lock()


MODEL = "en-fr"
ANIMALS = "dog cat horse cow pig duck goat fox frog wolf rabbit sheep mouse bird hen animal".split()
ADJECTIVES = "tired hungry happy sad angry calm lazy slow weak sick scared proud".split()
VERBS = ["is", "was"]
# Every (animal, adjective) word is a single token of the en-fr vocabulary and a word it was trained on ("turtle" and
# "ready" were, for the 97-word en-fr it replaced; tests/e2e/test_load.py checks the list), so the heatmap's x axis
# reads exactly ["The", animal, verb, adjective, ".", "[EOS]"].
SENTENCES = [(f"The {a} {v} {j}.", (a, v, j)) for v in VERBS for a in ANIMALS for j in ADJECTIVES]
# The heatmap is the first Plotly figure of the page; wait until its ticks hold all the new words.
HEATMAP_SHOWS = ("words => { const p = document.querySelector('.js-plotly-plot');"
                 " if (!p) return false;"
                 " const t = [...p.querySelectorAll('.xtick text')].map(e => e.textContent);"
                 " return words.every(w => t.includes(w)); }")
TRAIN_SETTINGS = {"d_model": 32, "Layers": 1, "Heads": 2, "d_ff": 64, "Steps": 300, "Batch size": 32,
                  "Warm-up steps": 50}
TINY_TRAIN_SETTINGS = {"d_model": 16, "Layers": 1, "Heads": 2, "d_ff": 32, "Steps": 20, "Batch size": 8,
                       "Warm-up steps": 5}


# --------------------------------------------------------------------------- server

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(base: str) -> bool:
    try:
        return urllib.request.urlopen(f"{base}/_stcore/health", timeout=5).read() == b"ok"
    except OSError:
        return False


WARMED = re.compile(r"^warm-up: \d+ pages in ", re.M)  # app/serve.py's last line


def start_server(data_dir: Path, log_path: Path, timeout: float = 90, warm: bool = False,
                 warm_timeout: float = 600, env: dict | None = None) -> tuple[subprocess.Popen, str]:
    """``streamlit run app/main.py`` headless on a free 127.0.0.1 port (also the e2e tests' server). ``warm``:
    ``python -m app.serve`` instead, returning once its warm-up has visited every page (what a class finds when
    the teacher started the server beforehand). ``env``: more environment variables for the server."""
    port = free_port()
    env = dict(os.environ, ATTENTION_LAB_DATA=str(data_dir), PYTHONUNBUFFERED="1", **(env or {}))
    command = ["-m", "app.serve"] if warm else ["-m", "streamlit", "run", str(ROOT / "app" / "main.py")]
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, *command,
                                 "--server.headless", "true", "--server.address", "127.0.0.1",
                                 "--server.port", str(port), "--browser.gatherUsageStats", "false"],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if healthy(base):
            break
        time.sleep(0.3)
    else:
        stop_server(proc)
        raise RuntimeError(f"streamlit did not become healthy:\n{log_path.read_text()[-3000:]}")
    deadline = time.time() + warm_timeout
    while warm and not WARMED.search(log_path.read_text(errors="replace")):
        if proc.poll() is not None or time.time() > deadline:
            stop_server(proc)
            raise RuntimeError(f"the warm-up did not finish:\n{log_path.read_text()[-3000:]}")
        time.sleep(0.3)
    return proc, base


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


# --------------------------------------------------------------------------- memory

def _children(pid: int) -> list[int]:
    kids = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids += [int(k) for k in f.read().split()]
    except OSError:
        pass
    return kids


def _vmrss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def rss_bytes(pid: int | list[int]) -> int:
    """Resident memory of ``pid`` and all its descendants (of every pid in a list: the replicas together)."""
    if isinstance(pid, (list, tuple)):
        return sum(rss_bytes(p) for p in pid)
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        try:
            p = psutil.Process(pid)
            total = p.memory_info().rss
            for c in p.children(recursive=True):
                try:
                    total += c.memory_info().rss
                except psutil.Error:
                    pass
            return total
        except psutil.Error:
            return 0
    total, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        total += _vmrss(p)
        todo += _children(p)
    return total


class RssSampler(threading.Thread):
    """Samples the server's RSS every ``every`` seconds: (seconds since start, MB, renders done)."""

    def __init__(self, pid: int, progress, every: float = 0.5):
        super().__init__(daemon=True)
        self.pid, self.progress, self.every = pid, progress, every
        self.samples: list[tuple[float, float, int]] = []
        self._halt = threading.Event()
        self.t0 = time.perf_counter()

    def run(self):
        while not self._halt.is_set():
            self.samples.append((round(time.perf_counter() - self.t0, 2), rss_bytes(self.pid) / 2**20, self.progress()))
            self._halt.wait(self.every)

    def stop(self):
        self._halt.set()
        self.join(5)


# --------------------------------------------------------------------------- browser sessions

@dataclass
class Render:
    session: int
    index: int
    sentence: str
    ok: bool
    seconds: float | None  # Control+Enter → the heatmap shows the new sentence's words
    settled_s: float | None = None  # ... → the script has finished (the rest of the page drawn)
    error: str | None = None
    client: str = "browser"  # or "scripted" (app/visitor.py: the first chart message, not its drawing)


@dataclass
class SessionLog:
    name: str
    external: list = field(default_factory=list)
    page_errors: list = field(default_factory=list)
    dialogs: list = field(default_factory=list)
    st_exceptions: list = field(default_factory=list)
    errors: list = field(default_factory=list)  # exceptions in the driving thread


class Shared:
    """What the threads share: the render queue, the results, the RSS readings at milestones."""

    def __init__(self, total: int, pid: int, milestones=(0.25, 0.5, 1.0), walks: int = 0, think_s: float = 0.0):
        """``walks`` renders are kept for the walks' own actions (``take(walk=True)``), so a fast student looping
        on the Attention page cannot use up the tickets a slower one needs to finish its walk. ``think_s``: a
        student's pause before each action (``pause``)."""
        self.total, self.pid, self.think_s = total, pid, think_s
        self._rngs: dict[int, random.Random] = {}
        self.lock = threading.Lock()
        self._next = itertools.count()
        self._walks_left, self._extra_left = min(walks, total), total - min(walks, total)
        self.renders: list[Render] = []
        self.marks = {m: max(1, round(m * total)) for m in milestones}
        self.rss_at: dict[float, float] = {}
        self.done = threading.Event()

    def take(self, walk: bool = False) -> int | None:
        with self.lock:
            if walk and self._walks_left:
                self._walks_left -= 1
            elif self._extra_left:
                self._extra_left -= 1
            else:
                return None
            return next(self._next)

    def record(self, r: Render) -> None:
        with self.lock:
            self.renders.append(r)
            n = len(self.renders)
            for m, at in self.marks.items():
                if n == at:
                    self.rss_at[m] = rss_bytes(self.pid) / 2**20
            if n >= self.total:
                self.done.set()

    def count(self) -> int:
        return len(self.renders)

    def pause(self, sid: int, first: bool = False) -> float:
        """Seconds student ``sid`` waits before an action: reading time, uniform in 0.5–1.5 × ``think_s``; before
        the first, uniform in 0–1 × ``think_s`` (a class opens the teacher's link over that many seconds, not in
        the same millisecond). Seeded per student, so a rerun pauses the same."""
        rng = self._rngs.setdefault(sid, random.Random(sid))
        return self.think_s * (rng.uniform(0, 1) if first else rng.uniform(0.5, 1.5))


def open_context(browser, base: str, log: SessionLog):
    """A new browser context and page on ``base`` whose requests elsewhere are aborted and logged in ``log`` (with
    page errors and dialogs); also the soak's upload learner's."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})

    def route(r):
        url = r.request.url
        if url.startswith((base, "data:", "about:", "blob:")):
            r.continue_()
        else:
            log.external.append(url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("pageerror", lambda e: log.page_errors.append(str(e)))
    page.on("dialog", lambda d: (log.dialogs.append(d.message), d.dismiss()))
    return context, page


def settle(page, timeout=120_000):
    page.wait_for_selector("[data-testid=stApp]", timeout=timeout)
    page.wait_for_timeout(200)
    page.wait_for_selector("[data-testid=stApp][data-test-script-state=notRunning]", timeout=timeout)


def _note_exceptions(page, log: SessionLog):
    exc = page.locator("[data-testid=stException]")
    if exc.count():
        log.st_exceptions.append(exc.first.inner_text()[:500])


def _open_attention(page, base: str):
    page.goto(f"{base}/attention?model={MODEL}")
    settle(page)
    page.wait_for_selector(".js-plotly-plot .xtick text", timeout=120_000)


def type_sentence(page, text: str) -> None:
    """The sidebar's Sentence box, by role (on the Lesson page the title also answers to "Sentence"), then run."""
    box = page.get_by_role("textbox", name="Sentence")
    box.fill(text)
    box.press("Control+Enter")


def render_sentence(page, sid: int, i: int, shared: Shared, log: SessionLog, timeout_ms: int, label: str = "") -> bool:
    """Type sentence ``i`` of SENTENCES on the Attention page and time it until the heatmap shows its words (and
    until the script finished); the render is recorded either way. True when it rendered."""
    sentence, (a, v, j) = SENTENCES[i % len(SENTENCES)]
    t0 = time.perf_counter()
    try:
        type_sentence(page, sentence)
        page.wait_for_function(HEATMAP_SHOWS, arg=["The", a, v, j], timeout=timeout_ms)
        t1 = time.perf_counter()
        settle(page, timeout_ms)
        _note_exceptions(page, log)
        shared.record(Render(sid, i, label + sentence, True, t1 - t0, time.perf_counter() - t0))
        return True
    except Exception as e:
        shared.record(Render(sid, i, label + sentence, False, None, None, f"{type(e).__name__}: {e}"[:500]))
        _note_exceptions(page, log)
        return False


def render_session(sid: int, base: str, shared: Shared, start: threading.Barrier, log: SessionLog,
                   render_timeout_ms: int = 120_000) -> None:
    """One learner: open the Attention page, then type sentences from the shared queue until it is empty."""
    launch = from_tests("browser").launch
    try:
        with launch() as browser:
            context, page = open_context(browser, base, log)
            try:
                _open_attention(page, base)
                _wait(start)
                while (i := shared.take()) is not None:
                    if not render_sentence(page, sid, i, shared, log, render_timeout_ms):
                        try:  # a failed render is recorded, then the page is reopened
                            _open_attention(page, base)
                        except Exception as e2:
                            log.errors.append(f"reopen: {type(e2).__name__}: {e2}"[:500])
            finally:
                context.close()
    except BaseException as e:  # includes pytest's Skipped/Failed raised by launch()
        log.errors.append("".join(traceback.format_exception_only(type(e), e))[:1000])
        _wait(start, 0)


TEACHER = "The animal didn't cross the street because it was too tired."
ANY_CHART_SHOWS = ("words => [...document.querySelectorAll('.js-plotly-plot')].some(p => {"
                   " const t = [...p.querySelectorAll('.xtick text, .ytick text')].map(e => e.textContent);"
                   " return words.every(w => t.includes(w)); })")
LESSON_STEP = ("n => { const h = [...document.querySelectorAll('h2')].map(e => e.textContent);"
               " return h.some(t => t.startsWith(n + ' ·')) && document.querySelector('.js-plotly-plot') !== null; }")


CLASSROOM_WALK = ["open the shared link", "lesson step 2", "lesson step 3", "lesson step 4",
                  "own sentence in the Lesson", "open Attention"]


def classroom_session(sid: int, base: str, shared: Shared, start: threading.Barrier, log: SessionLog,
                      render_timeout_ms: int = 120_000) -> None:
    """One student: the teacher's shared link, three Lesson steps, their own sentence, the Attention page from the
    navigation, then sentences there until the shared queue is empty. Each action takes one ticket of the queue and
    is recorded as a render named after the action."""
    from urllib.parse import quote

    launch = from_tests("browser").launch
    try:
        with launch() as browser:
            context, page = open_context(browser, base, log)
            try:
                _wait(start)

                def act(name: str, do, done) -> bool:
                    time.sleep(shared.pause(sid, first=name == CLASSROOM_WALK[0]))
                    i = shared.take(walk=True)
                    if i is None:
                        return False
                    t0 = time.perf_counter()
                    try:
                        do()
                        done()
                        t1 = time.perf_counter()
                        settle(page, render_timeout_ms)
                        _note_exceptions(page, log)
                        shared.record(Render(sid, i, name, True, t1 - t0, time.perf_counter() - t0))
                    except Exception as e:
                        shared.record(Render(sid, i, name, False, None, None, f"{type(e).__name__}: {e}"[:500]))
                        _note_exceptions(page, log)
                    return True

                link = f"{base}/lesson?model={MODEL}&text={quote(TEACHER)}&step=1"
                if not act("open the shared link", lambda: page.goto(link),
                           lambda: page.wait_for_function(LESSON_STEP, arg=1, timeout=render_timeout_ms)):
                    return
                for n in (2, 3, 4):
                    if not act(f"lesson step {n}", lambda: page.get_by_role("button", name="Next ▶").click(),
                               lambda n=n: page.wait_for_function(LESSON_STEP, arg=n, timeout=render_timeout_ms)):
                        return
                own, (a, v, j) = SENTENCES[sid % len(SENTENCES)]
                if not act("own sentence in the Lesson", lambda: type_sentence(page, own),
                           lambda: page.wait_for_function(ANY_CHART_SHOWS, arg=[a, v, j], timeout=render_timeout_ms)):
                    return
                if not act("open Attention", lambda: page.get_by_role("link", name="Attention", exact=True).click(),
                           lambda: page.wait_for_function(HEATMAP_SHOWS, arg=["The", a, v, j],
                                                          timeout=render_timeout_ms)):
                    return
                while True:
                    time.sleep(shared.pause(sid))
                    if (i := shared.take()) is None:
                        break
                    render_sentence(page, sid, i, shared, log, render_timeout_ms, label="Attention: ")
            finally:
                context.close()
    except BaseException as e:
        log.errors.append("".join(traceback.format_exception_only(type(e), e))[:1000])
        _wait(start, 0)


def scripted_classroom(first_sid: int, n: int, base: str, shared: Shared, start: threading.Barrier,
                       log: SessionLog, timeout_s: float = 120) -> None:
    """``n`` scripted students (app/visitor.py) in one thread, one websocket each, on the classroom walk of
    ``classroom_session``. An action counts as rendered when its run finished with no exception, sent at least one
    chart, and left the address bar as the browser would show it (the Lesson's step, the new sentence)."""
    from urllib.parse import parse_qs

    from app import visitor

    async def student(k: int):
        sid = first_sid + k
        client = visitor.Client(base, cookie=f"scripted-{sid}", timeout_s=timeout_s)

        async def act(name: str, do, expect: dict | None = None, walk: bool = True) -> bool:
            await asyncio.sleep(shared.pause(sid, first=name == CLASSROOM_WALK[0]))
            i = shared.take(walk)
            if i is None:
                return False
            try:
                run = await do()
                query = {k: v[0] for k, v in parse_qs(client.query).items()}
                wrong = {k: query.get(k) for k, v in (expect or {}).items() if query.get(k) != v}
                problem = (f"exception: {run.exceptions[0]}" if run.exceptions else "no chart" if not run.charts
                           else f"address bar {wrong}" if wrong else None)
                log.st_exceptions += run.exceptions
                shared.record(Render(sid, i, name, problem is None, run.chart_s, run.done_s, problem,
                                     client="scripted"))
            except Exception as e:
                shared.record(Render(sid, i, name, False, None, None, f"{type(e).__name__}: {e}"[:500],
                                     client="scripted"))
            return True

        try:
            await client.connect()
            if not await act("open the shared link", lambda: client.open("lesson", model=MODEL, text=TEACHER, step=1),
                             {"step": "1"}):
                return
            for n_ in (2, 3, 4):
                if not await act(f"lesson step {n_}", lambda: client.click("lesson", "Next ▶"), {"step": str(n_)}):
                    return
            own, _ = SENTENCES[sid % len(SENTENCES)]
            if not await act("own sentence in the Lesson", lambda: client.type("lesson", "Sentence", own),
                             {"text": own}):
                return
            if not await act("open Attention", lambda: client.switch("attention"), {"text": own}):
                return
            while True:
                sentence, _ = SENTENCES[(sid + len(shared.renders)) % len(SENTENCES)]
                if not await act("Attention: " + sentence, lambda s=sentence: client.type("attention", "Sentence", s),
                                 {"text": sentence}, walk=False):
                    return
        except Exception as e:
            log.errors.append(f"scripted {sid}: {type(e).__name__}: {e}"[:500])
        finally:
            await client.close()

    async def all_students():
        await asyncio.gather(*(student(k) for k in range(n)))

    try:
        _wait(start)
        asyncio.run(all_students())
    except BaseException as e:
        log.errors.append("".join(traceback.format_exception_only(type(e), e))[:1000])


NGINX_CONF = ROOT / "docs" / "nginx-attention-lab.conf"


def start_proxy(ports: list[int], work: Path) -> tuple[subprocess.Popen, str, Path]:
    """nginx in front of the replicas, from the documented config with its ports and folders filled in; returns the
    process, the proxy's URL and its access log (one line per request: cookie key, replica)."""
    import shutil
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not Path(nginx).exists():
        raise RuntimeError("nginx is not installed (Debian: apt-get install nginx)")
    port = free_port()
    text = NGINX_CONF.read_text()
    servers = "\n".join(f"        server 127.0.0.1:{p};" for p in ports)
    text = (text.replace("        server 127.0.0.1:8501;\n        server 127.0.0.1:8502;", servers)
            .replace("listen 127.0.0.1:8500;", f"listen 127.0.0.1:{port};")
            .replace("/var/lib/attention-lab/nginx", str(work / "nginx")))
    (work / "nginx").mkdir(exist_ok=True)
    conf = work / "nginx" / "nginx.conf"
    conf.write_text(text)
    proc = subprocess.Popen([nginx, "-c", str(conf), "-g", "daemon off;"], cwd=work, stdout=subprocess.DEVNULL,
                            stderr=open(work / "nginx" / "stderr.log", "w"))
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while time.time() < deadline and proc.poll() is None:
        if healthy(base):
            return proc, base, work / "nginx" / "access.log"
        time.sleep(0.2)
    stop_server(proc)
    raise RuntimeError("nginx did not start: " + (work / "nginx" / "stderr.log").read_text()[-2000:])


PROBES = [f"probe-{k}" for k in range(16)]


def probe_replicas(base: str) -> int:
    """Two requests for each of 16 fixed cookie values: with sticky sessions each value stays on one replica, and
    16 values reach both replicas (all on one would be a 2 in 65,536 chance). Returns the requests that failed (a
    swamped server times out; the run's record must still be written)."""
    failed = 0
    for key in PROBES * 2:
        req = urllib.request.Request(f"{base}/_stcore/health", headers={"Cookie": f"attention_lab_replica={key}"})
        try:
            urllib.request.urlopen(req, timeout=30).read()
        except OSError:
            failed += 1
    return failed


def stickiness(access_log: Path) -> dict:
    """From nginx's log: how many browser cookies (sessions) each replica served, how many cookies were ever sent to
    more than one replica (0 when sessions are sticky), and which replicas the fixed probe cookies reached."""
    by_key: dict[str, set] = {}
    for line in access_log.read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] != "-" and parts[1] != "-":
            by_key.setdefault(parts[0], set()).add(parts[1])
    probes = {k: by_key.pop(k) for k in PROBES if k in by_key}
    per_replica: dict[str, int] = {}
    for replicas in by_key.values():
        for r in replicas:
            per_replica[r] = per_replica.get(r, 0) + 1
    return {"cookies": len(by_key), "cookies_on_two_replicas": sum(len(v) > 1 for v in by_key.values()),
            "cookies_per_replica": dict(sorted(per_replica.items())),
            "probes_on_two_replicas": sum(len(v) > 1 for v in probes.values()),
            "probe_replicas": len(set().union(*probes.values())) if probes else 0}


def _wait(barrier: threading.Barrier, timeout: float = 300) -> None:
    try:
        barrier.wait(timeout)
    except threading.BrokenBarrierError:
        pass


@dataclass
class TrainLog(SessionLog):
    runs: list = field(default_factory=list)  # {"name", "status", "seconds"}
    settings_seen: dict = field(default_factory=dict)  # the page's inputs just before Start training
    capped: bool = False  # stopped at the saved-model limit of one browser (app/saved_models.py), not by an error


def set_number(page, label: str, value) -> None:
    """Type ``value`` into the number box labelled ``label``, press Enter and wait for the rerun."""
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    settle(page)


def train_session(base: str, shared: Shared, start: threading.Barrier, log: TrainLog, settings: dict,
                  repeat: bool = True, max_runs: int = 20, run_timeout_s: float = 600) -> None:
    """Another learner on the Training page: small settings, Start training, wait for "Saved as", again
    while the renders go on (``repeat``), and always let the run in progress finish."""
    launch = from_tests("browser").launch
    started = False
    try:
        with launch() as browser:
            context, page = open_context(browser, base, log)
            try:
                page.goto(f"{base}/training")
                settle(page)
                for label, value in settings.items():
                    set_number(page, label, value)
                log.settings_seen = {label: page.get_by_label(label, exact=True).input_value() for label in settings}
                for _ in range(max_runs):
                    name = page.get_by_label("Save as", exact=True).input_value()
                    t0 = time.perf_counter()
                    page.get_by_role("button", name="Start training").click()
                    if not started:
                        started = True
                        _wait(start)
                    status = "timeout"
                    deadline = time.time() + run_timeout_s
                    while time.time() < deadline:
                        if page.locator("[data-testid=stAlertContentSuccess]", has_text=f"Saved as {name}").count():
                            status = "done"
                            break
                        if page.locator("[data-testid=stAlertContentError]", has_text="Training failed").count():
                            status = "error: " + page.locator("[data-testid=stAlertContentError]").first.inner_text()
                            break
                        page.wait_for_timeout(500)
                    log.runs.append({"name": name, "status": status, "seconds": round(time.perf_counter() - t0, 1)})
                    _note_exceptions(page, log)
                    if status != "done" or not repeat or shared.done.is_set():
                        break
                    settle(page)
                    if page.locator("[data-testid=stAlertContentError]", has_text="the limit is").count():
                        log.capped = True  # this browser has saved as many models as one may: the page says so
                        break
                    page.get_by_role("button", name="Start training").wait_for(timeout=60_000)
                    page.wait_for_function(  # enabled again, with a fresh name suggested
                        "() => [...document.querySelectorAll('button')].some(b => b.innerText.includes('Start training')"
                        " && !b.disabled)", timeout=60_000)
            finally:
                context.close()
    except BaseException as e:
        log.errors.append("".join(traceback.format_exception_only(type(e), e))[:1000])
    finally:
        if not started:
            _wait(start, 0)


# --------------------------------------------------------------------------- the whole run

def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def run_load(sessions: int = 8, renders: int = 200, train: dict | None = None, repeat_training: bool = True,
             workdir: Path | None = None, timeout_s: float = 1800, walk: str = "attention", replicas: int = 1,
             scripted: int = 0, think_s: float = 0.0, serve: bool = False) -> dict:
    """Start the server (or ``replicas`` servers behind nginx), run the sessions (``walk``: "attention" or
    "classroom"), ``scripted`` more students on the classroom walk without a browser (app/visitor.py) and
    the trainer, stop the servers; return the full record. ``think_s``: each student's pause before an action
    (``Shared.pause``; 0: every action right after the last). ``serve``: servers started as the README does,
    ``python -m app.serve``, the students arriving once its warm-up has visited every page."""
    train = TRAIN_SETTINGS if train is None else train
    tmp = tempfile.TemporaryDirectory(prefix="attention-lab-load-") if workdir is None else None
    work = Path(tmp.name) if tmp else Path(workdir)
    (work / "data").mkdir(parents=True, exist_ok=True)
    log_path = work / "streamlit.log"
    load_before = os.getloadavg()
    t_start = time.perf_counter()
    procs, logs_paths = [], []
    for k in range(replicas):
        path = log_path if k == 0 else work / f"streamlit-{k}.log"
        proc, base = start_server(work / "data", path, warm=serve)
        procs.append(proc)
        logs_paths.append(path)
    proxy = access_log = None
    if replicas > 1:
        proxy, base, access_log = start_proxy([_port_of(p) for p in procs], work)
    proc = procs[0]
    try:
        pids = [p.pid for p in procs]
        shared = Shared(renders, pids, walks=len(CLASSROOM_WALK) * (sessions + scripted) if walk == "classroom" else 0,
                        think_s=think_s)
        sampler = RssSampler(pids, shared.count)
        sampler.start()
        barrier = threading.Barrier(sessions + (1 if train else 0) + (1 if scripted else 0))
        logs = [SessionLog(f"render-{i}") for i in range(sessions)]
        target = classroom_session if walk == "classroom" else render_session
        threads = [threading.Thread(target=target, args=(i, base, shared, barrier, logs[i]), daemon=True)
                   for i in range(sessions)]
        if scripted:
            logs.append(SessionLog("scripted"))
            threads.append(threading.Thread(target=scripted_classroom, daemon=True,
                                            args=(sessions, scripted, base, shared, barrier, logs[-1])))
        tlog = TrainLog("train")
        if train:
            threads.append(threading.Thread(target=train_session, args=(base, shared, barrier, tlog, train,
                                                                         repeat_training), daemon=True))
        for t in threads:
            t.start()
        deadline = time.time() + timeout_s
        for t in threads:
            t.join(max(1, deadline - time.time()))
        hung = sum(t.is_alive() for t in threads)
        sampler.stop()
        server_alive = all(p.poll() is None for p in procs)
        server_healthy = server_alive and healthy(base)
        load_after = os.getloadavg()
        wall = time.perf_counter() - t_start
        log_text = "".join(p.read_text(errors="replace") for p in logs_paths)
        probes_failed = probe_replicas(base) if access_log else 0
        sticky = stickiness(access_log) | {"probe_requests_failed": probes_failed} if access_log else None
    finally:
        if proxy is not None:
            stop_server(proxy)
        for p in procs:
            stop_server(p)
        if tmp:
            tmp.cleanup()

    rs = sorted(shared.renders, key=lambda r: (r.session, r.index))
    ok = [r.seconds for r in rs if r.ok]
    settled = [r.settled_s for r in rs if r.ok]
    rss = [s[1] for s in sampler.samples] + list(shared.rss_at.values())
    all_logs = logs + ([tlog] if train else [])
    tracebacks = server_tracebacks(log_text)
    summary = {
        "sessions": sessions, "scripted_sessions": scripted, "think_s": think_s, "walk": walk, "replicas": replicas, "stickiness": sticky,
        "renders_requested": renders, "renders_ok": len(ok),
        "renders_failed": sum(not r.ok for r in rs), "renders_missing": renders - len(rs),
        "render_p50_s": _r(percentile(ok, 0.5)), "render_p95_s": _r(percentile(ok, 0.95)),
        "render_max_s": _r(max(ok) if ok else None),
        "by_action": _by_action(rs),
        "by_client": _by_client(rs),
        "settled_p50_s": _r(percentile(settled, 0.5)), "settled_p95_s": _r(percentile(settled, 0.95)),
        "rss_peak_mb": _r(max(rss) if rss else None, 1),
        "rss_first_mb": _r(sampler.samples[0][1] if sampler.samples else None, 1),
        "rss_at_25pct_mb": _r(shared.rss_at.get(0.25), 1), "rss_at_50pct_mb": _r(shared.rss_at.get(0.5), 1),
        "rss_end_mb": _r(shared.rss_at.get(1.0), 1),
        "external_requests": sum(len(lg.external) for lg in all_logs),
        "page_errors": sum(len(lg.page_errors) for lg in all_logs),
        "dialogs": sum(len(lg.dialogs) for lg in all_logs),
        "st_exceptions": sum(len(lg.st_exceptions) for lg in all_logs),
        "thread_errors": sum(len(lg.errors) for lg in all_logs), "threads_hung": hung,
        "training_runs": tlog.runs if train else [],
        "server_alive": server_alive, "server_healthy_after": server_healthy,
        "server_log_tracebacks": tracebacks["other"], "server_websocket_teardown_tracebacks": tracebacks["teardown"],
        "wall_s": round(wall, 1), "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after], "cpus": os.cpu_count(),
    }
    return {"summary": summary, "renders": [asdict(r) for r in rs],
            "rss_samples": [[t, round(m, 1), n] for t, m, n in sampler.samples],
            "sessions": [asdict(lg) for lg in all_logs], "server_log_tail": log_text[-4000:]}


# A browser that goes away while its websocket is being opened or closed makes Streamlit's own websocket endpoint
# (1.67, served by starlette 1.10) raise from starlette ("WebSocket is not connected", then again from its cleanup's
# close(): "Cannot call send once a close message has been sent", starlette issue #2766). These tracebacks run through
# third-party transport code only; they are counted apart so that every other traceback still fails the load test.
_TRANSPORT_EXCEPTION = "starlette.websockets.WebSocketDisconnected: "
_FRAME = re.compile(r'^\s+File "([^"]+)"')


def server_tracebacks(log: str, ours: Path = ROOT) -> dict[str, int]:
    """The tracebacks of a server log: ``teardown`` those of a websocket closing under Streamlit's transport (the
    exception starlette's WebSocketDisconnected, no frame in this repository's code: ``ours``), ``other`` the rest."""
    counts = {"other": 0, "teardown": 0}
    repo = str(ours.resolve()) + "/"
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if "Traceback (most recent call last):" not in line:
            continue
        frames, exc = [], ""
        for nxt in lines[i + 1:]:
            m = _FRAME.match(nxt)
            if m:
                frames.append(m.group(1))
            elif nxt and not nxt[0].isspace():
                exc = nxt
                break
        mine = any(f.startswith(repo) and "site-packages" not in f for f in frames)
        counts["teardown" if exc.startswith(_TRANSPORT_EXCEPTION) and frames and not mine else "other"] += 1
    return counts


def _by_action(renders: list[Render]) -> dict:
    """p50 / p95 / n per action of the classroom walk ("Attention: <sentence>" renders count as one action)."""
    groups: dict[str, list[float]] = {}
    for r in renders:
        if r.ok:
            groups.setdefault("type a sentence on Attention" if r.sentence.startswith(("Attention: ", "The "))
                              else r.sentence, []).append(r.seconds)
    return {k: {"n": len(v), "p50_s": _r(percentile(v, 0.5)), "p95_s": _r(percentile(v, 0.95))}
            for k, v in groups.items()}


def _by_client(renders: list[Render]) -> dict:
    """Per kind of student ("browser", "scripted") with at least one render: n, and p50 / p95 of action → first
    chart and of action → script finished."""
    out = {}
    for client in ("browser", "scripted"):
        ok = [r for r in renders if r.ok and r.client == client]
        if ok:
            chart = [r.seconds for r in ok if r.seconds is not None]
            done = [r.settled_s for r in ok]
            out[client] = {"n": len(ok), "chart_p50_s": _r(percentile(chart, 0.5)),
                           "chart_p95_s": _r(percentile(chart, 0.95)),
                           "done_p50_s": _r(percentile(done, 0.5)), "done_p95_s": _r(percentile(done, 0.95))}
    return out


def _port_of(proc: subprocess.Popen) -> int:
    return int(proc.args[proc.args.index("--server.port") + 1])


def _r(x, nd=3):
    return None if x is None else round(x, nd)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=8)
    ap.add_argument("--renders", type=int, default=200, help="total, shared out among the sessions")
    ap.add_argument("--train-steps", type=int, default=TRAIN_SETTINGS["Steps"], help="steps of each training run")
    ap.add_argument("--no-train", action="store_true")
    ap.add_argument("--walk", choices=["attention", "classroom"], default="attention",
                    help="attention: type sentences on the Attention page; classroom: shared link, Lesson steps, own "
                         "sentence, Attention page, then sentences")
    ap.add_argument("--replicas", type=int, default=1, help="app processes behind nginx (sticky sessions)")
    ap.add_argument("--scripted", type=int, default=0,
                    help="more students on the classroom walk as scripted websocket clients (app/visitor.py)")
    ap.add_argument("--think", type=float, default=0.0,
                    help="a student's reading time before each action, seconds (0.5-1.5x, seeded); 0: none")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds before the run is abandoned")
    ap.add_argument("--out", type=Path, help="write the full record (every render, every RSS sample) here")
    ap.add_argument("--serve", action="store_true",
                    help="start each server with python -m app.serve (the README's command: every page visited once "
                         "before the students arrive)")
    args = ap.parse_args(argv)
    train = None if args.no_train else dict(TRAIN_SETTINGS, Steps=args.train_steps)
    record = run_load(args.sessions, args.renders, train or {}, timeout_s=args.timeout, walk=args.walk,
                      replicas=args.replicas, scripted=args.scripted, think_s=args.think, serve=args.serve)
    s = record["summary"]
    print(f"sessions {s['sessions']} + {'1 training' if train else 'no training'} · renders ok {s['renders_ok']} / "
          f"failed {s['renders_failed']} / missing {s['renders_missing']} of {s['renders_requested']}")
    print(f"time to render (Control+Enter → heatmap shows the new words): p50 {s['render_p50_s']} s, "
          f"p95 {s['render_p95_s']} s, max {s['render_max_s']} s; script finished: p50 {s['settled_p50_s']} s, "
          f"p95 {s['settled_p95_s']} s")
    print(f"server RSS: start {s['rss_first_mb']} MB, after 25% of renders {s['rss_at_25pct_mb']} MB, "
          f"after 50% {s['rss_at_50pct_mb']} MB, end {s['rss_end_mb']} MB, peak {s['rss_peak_mb']} MB")
    print(f"training runs: {[(r['name'], r['status'], r['seconds']) for r in s['training_runs']]}")
    print(f"external requests {s['external_requests']} · page errors {s['page_errors']} · dialogs {s['dialogs']} · "
          f"Streamlit exceptions {s['st_exceptions']} · thread errors {s['thread_errors']} · "
          f"server healthy after: {s['server_healthy_after']} · wall {s['wall_s']} s · "
          f"load average before {s['loadavg_before']} after {s['loadavg_after']} on {s['cpus']} CPUs")
    for client, v in s["by_client"].items():
        print(f"  {client} students: n {v['n']}, first chart p50 {v['chart_p50_s']} s, p95 {v['chart_p95_s']} s; "
              f"script finished p50 {v['done_p50_s']} s, p95 {v['done_p95_s']} s")
    for action, v in s["by_action"].items():
        print(f"  {action}: n {v['n']}, p50 {v['p50_s']} s, p95 {v['p95_s']} s")
    if s["stickiness"]:
        print(f"nginx: {s['stickiness']}")
    if args.out:
        args.out.write_text(json.dumps(record, indent=1))
    print(json.dumps(s))
    return 0 if s["renders_ok"] == s["renders_requested"] else 1


if __name__ == "__main__":
    sys.exit(main())
