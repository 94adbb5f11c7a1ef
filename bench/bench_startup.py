"""Startup: from launching ``streamlit run app/main.py`` to the first page fully rendered in Chromium.

Per run: a fresh Streamlit server on a free port (the clock starts just before ``Popen``), a
fresh browser context in an already running headless Chromium (Chromium's own start-up is not
counted: a user's browser is already open). Measured points: server health ``ok``; the page's
script starts running; the page title (``h1``) is in the DOM; ``/attention?model=en-fr`` shows
its first plotly chart; and "fully rendered": Streamlit's script state is ``notRunning`` *and*
a ``.js-plotly-plot`` of the page is drawn (the invisible warm-up chart of app/warmup.py does not count).

Also, each in a fresh Python process: the import time of ``import app.shell`` (which pulls in
streamlit, torch and core), a breakdown (torch, streamlit, app.shell on top), and the time of
``registry.load('en-fr')`` plus the first traced run of a sentence.

    python bench/bench_startup.py [--runs 3] [--model en-fr] [--page attention]

Median of ``--runs``; last line: JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
# a chart of the page itself: not the invisible one app/warmup.py sends ahead on a fresh server's first run
PAGE_PLOT = "[...document.querySelectorAll('.js-plotly-plot')].some(e => !e.closest('.st-key-plotly-preload'))"
RENDERED = ("() => !!document.querySelector('[data-testid=stApp][data-test-script-state=notRunning]')"
            f" && {PAGE_PLOT}")

IMPORT_ONLY = "import time; t = time.perf_counter(); import app.shell; print(time.perf_counter() - t)"
BREAKDOWN = """
import json, time
t0 = time.perf_counter(); import torch
t1 = time.perf_counter(); import streamlit
t2 = time.perf_counter(); import app.shell
t3 = time.perf_counter()
from core.io import registry
from core.inference.runner import run
torch.set_num_threads(2)
t4 = time.perf_counter(); ck = registry.load({model!r})
t5 = time.perf_counter(); run(ck, {text!r})
t6 = time.perf_counter()
print(json.dumps({{"torch": t1 - t0, "streamlit": t2 - t1, "app_shell_rest": t3 - t2,
                  "model_load": t5 - t4, "first_traced_run": t6 - t5}}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def in_fresh_python(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                         env=os.environ | {"PYTHONPATH": str(ROOT)})
    return out.stdout.strip().splitlines()[-1]


def one_startup(browser, model: str, page_path: str, log_dir: Path, i: int) -> dict:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = open(log_dir / f"server-{i}.log", "w")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app/main.py", "--server.headless", "true",
                             "--server.port", str(port), "--server.address", "127.0.0.1"],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    try:
        while True:
            try:
                if urllib.request.urlopen(base + "/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                pass
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {proc.returncode}; see {log.name}")
            if time.perf_counter() - t0 > 120:
                raise RuntimeError("server not healthy after 120 s")
            time.sleep(0.05)
        t_health = time.perf_counter() - t0
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = ctx.new_page()
        page.goto(f"{base}/{page_path}?model={model}")
        page.wait_for_selector("[data-testid=stApp][data-test-script-state=running]", state="attached",
                               timeout=120_000)
        t_script = time.perf_counter() - t0
        page.wait_for_selector("h1", state="attached", timeout=120_000)
        t_title = time.perf_counter() - t0
        page.wait_for_function(f"() => {PAGE_PLOT}", timeout=120_000)
        t_plot = time.perf_counter() - t0
        page.wait_for_function(RENDERED, timeout=120_000)
        t_rendered = time.perf_counter() - t0
        ctx.close()
        return {"health_s": t_health, "script_running_s": t_script, "page_title_s": t_title,
                "first_plot_s": t_plot, "rendered_s": t_rendered}
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--model", default="en-fr")
    ap.add_argument("--page", default="attention", help="url path of the page to open")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright

    text = "The animal didn't cross the street because it was too tired."
    imports, breakdown, runs = [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for i in range(args.runs):  # interleaved: import, breakdown, full startup
                imports.append(float(in_fresh_python(IMPORT_ONLY)))
                breakdown.append(json.loads(in_fresh_python(BREAKDOWN.format(model=args.model, text=text))))
                runs.append(one_startup(browser, args.model, args.page, Path(tmp), i))
                print(f"run {i + 1}: import app.shell {imports[-1]:.2f} s, model load "
                      f"{breakdown[-1]['model_load']:.3f} s, health {runs[-1]['health_s']:.2f} s, "
                      f"script {runs[-1]['script_running_s']:.2f} s, title {runs[-1]['page_title_s']:.2f} s, "
                      f"first plot {runs[-1]['first_plot_s']:.2f} s, rendered {runs[-1]['rendered_s']:.2f} s",
                      flush=True)
        finally:
            browser.close()

    med = statistics.median
    out = {"runs": args.runs, "url": f"/{args.page}?model={args.model}",
           "startup_rendered_s_median": round(med(r["rendered_s"] for r in runs), 3),
           "startup_first_plot_s_median": round(med(r["first_plot_s"] for r in runs), 3),
           "server_health_s_median": round(med(r["health_s"] for r in runs), 3),
           "script_running_s_median": round(med(r["script_running_s"] for r in runs), 3),
           "page_title_s_median": round(med(r["page_title_s"] for r in runs), 3),
           "import_app_shell_s_median": round(med(imports), 3),
           "import_breakdown_s_median": {k: round(med(b[k] for b in breakdown), 3)
                                         for k in ("torch", "streamlit", "app_shell_rest")},
           "model_load_s_median": round(med(b["model_load"] for b in breakdown), 3),
           "first_traced_run_s_median": round(med(b["first_traced_run"] for b in breakdown), 3),
           "all_runs": [{k: round(v, 3) for k, v in r.items()} for r in runs],
           "goal_s": 5.0}
    out["goal_met"] = out["startup_rendered_s_median"] <= out["goal_s"]
    print(f"streamlit run -> {out['url']} rendered in Chromium: median {out['startup_rendered_s_median']} s "
          f"(server healthy {out['server_health_s_median']} s); import app.shell {out['import_app_shell_s_median']} s; "
          f"model load {out['model_load_s_median']} s")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
