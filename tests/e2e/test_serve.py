"""``python -m app.serve`` (the README's start command): once the server answers, every page is visited once, in the
navigation's order, by a session with no browser, so the first student finds each page warm; ``--no-warm`` visits
nothing. Order and completeness only: bench/bench_cold_pages.py --serve measures the seconds."""
import asyncio
import concurrent.futures
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
import load_test

from app import nav
from app.visitor import Client

pytestmark = pytest.mark.e2e


def visit(base: str, page: str):
    """One fresh session opening ``page``, in its own thread: a worker that ran the Playwright tests before has an
    event loop running in this one."""
    async def go():
        client = Client(base, cookie="test", timeout_s=120)
        await client.connect()
        try:
            return await client.open(page)
        finally:
            await client.close()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, go()).result()


def test_every_page_is_visited_once_before_a_student_arrives(tmp_path):
    log = tmp_path / "serve.log"
    proc, base = load_test.start_server(tmp_path / "data", log, warm=True)
    try:
        text = log.read_text()
        lines = re.findall(r"^warm-up: (\S+) [\d.]+ s \((\d+) of (\d+)\)(.*)$", text, re.M)
        pages = [p or "home" for p in nav.url_paths()]
        assert [name for name, *_ in lines] == pages  # each page once, in the navigation's order
        assert all(int(k) == i and int(n) == len(pages) for i, (_, k, n, _) in enumerate(lines, 1))
        assert not [line for *_, line in lines if "FAILED" in line], text[-3000:]
        done = re.search(rf"^warm-up: {len(pages)} pages in [\d.]+ s \(0 failed\); ([\d,]+) objects frozen$",
                         text, re.M)
        # what every page loaded (modules, models, lexicons: 450,940 objects at stop 54) is out of Python's full
        # collections, which walked it every second or two on a busy server
        assert done and int(done.group(1).replace(",", "")) > 100_000, text[-3000:]
        # the server still serves (a student after the warm-up): the headline page draws its charts
        run = visit(base, "coreference")
        assert run.charts and not run.exceptions
    finally:
        load_test.stop_server(proc)


def test_no_warm_starts_the_same_server_without_visits(tmp_path):
    port = load_test.free_port()
    log = tmp_path / "serve.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "app.serve", "--no-warm", "--server.headless", "true",
                                 "--server.address", "127.0.0.1", "--server.port", str(port),
                                 "--browser.gatherUsageStats", "false"], cwd=ROOT, stdout=out,
                                stderr=subprocess.STDOUT, env=load_test.os.environ | {"ATTENTION_LAB_DATA":
                                                                                     str(tmp_path / "data")})
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while not load_test.healthy(base):
            assert proc.poll() is None and time.time() < deadline, log.read_text()[-2000:]
            time.sleep(0.3)
        run = visit(base, "")
        assert not run.exceptions and "Model" in run.widgets  # the shared sidebar (the Start page has no sentence box)
        time.sleep(1)
        assert "warm-up:" not in log.read_text()
    finally:
        load_test.stop_server(proc)
