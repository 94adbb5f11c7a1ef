"""Where one page render spends the server's CPU: the model, the figures, Streamlit (for the class-of-30 target).

    python bench/profile_render.py [--page attention] [--renders 5] [--top 25] [--next N] [--no-profile]

Runs the app in Streamlit's AppTest (no browser, no websocket: only the page script's own work) with the default
model, warms the page with two sentences, then renders it ``--renders`` times, each time with a sentence it has not
seen (so the run cache misses, as when each student types their own), under cProfile in the script's thread. Prints
the wall and CPU seconds per render, the share of it spent in the model (core/), in building figures (plotly's own
code) and in the rest (Streamlit, our page code), and the ``--top`` functions by cumulative time. The last line is
the summary as JSON. Run it on an idle machine: the numbers are per render, one session at a time.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import time
from pathlib import Path

from streamlit.testing.v1 import AppTest
from streamlit.testing.v1 import local_script_runner

ROOT = Path(__file__).resolve().parents[1]
SENTENCE = "The {} number {} didn't cross the street because it was too wide."
ANIMALS = ["animal", "dog", "cat", "horse", "cow", "bird", "fish", "goat"]


def profiled_renders(page: str, renders: int, next_clicks: int = 0,
                     profiled: bool = True) -> tuple[cProfile.Profile, float, float]:
    """``renders`` renders of ``page`` with new sentences under one profiler: (profile, wall s, CPU s) per render;
    ``next_clicks``: the page's "Next" button clicked that many times first (the Lesson's steps); ``profiled``
    False: timed without the profiler (whose own cost inflates Python-heavy code), the profile left empty."""
    profile = cProfile.Profile()
    on = [False]
    run_script = local_script_runner.LocalScriptRunner._run_script

    def measured(self, *args, **kwargs):  # the page script runs in its own thread: profile that thread
        if not on[0]:
            return run_script(self, *args, **kwargs)
        profile.enable()
        try:
            return run_script(self, *args, **kwargs)
        finally:
            profile.disable()

    local_script_runner.LocalScriptRunner._run_script = measured
    try:
        at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=600)
        at.run()
        at.switch_page(f"../pages/{page}.py")
        at.run()
        for _ in range(next_clicks):
            nxt = [b for b in at.button if "Next" in b.label]
            if not nxt:
                raise SystemExit(f"/{page} has no Next button to click")
            nxt[0].click()
            at.run()
        for text in ("The cat didn't cross the road because it was too tired.", "The dog sat on the mat."):
            at.session_state["text"] = text
            at.run()
        on[0] = profiled
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(renders):
            at.session_state["text"] = SENTENCE.format(ANIMALS[i % len(ANIMALS)], i)
            at.run()
            if at.exception:
                raise SystemExit(f"the page raised: {at.exception[0].value}")
        return profile, (time.perf_counter() - wall) / renders, (time.process_time() - cpu) / renders
    finally:
        local_script_runner.LocalScriptRunner._run_script = run_script


def shares(profile: cProfile.Profile) -> dict[str, float]:
    """Seconds of own time (tottime) by where the code lives: our model core, plotly, torch, everything else."""
    out = {"core (our model code)": 0.0, "torch": 0.0, "plotly": 0.0, "other (Streamlit, pages, app)": 0.0}
    for (path, _, _), (_, _, tottime, _, _) in pstats.Stats(profile).stats.items():
        if "/plotly/" in path or "/_plotly_utils/" in path:
            key = "plotly"
        elif "/torch/" in path or path == "~":  # "~": built-ins, most of them torch's C functions here
            key = "torch"
        elif str(ROOT / "core") in path:
            key = "core (our model code)"
        else:
            key = "other (Streamlit, pages, app)"
        out[key] += tottime
    return out


def main(argv: list[str] | None = None) -> int:
    """Profile ``--renders`` renders of one page; print the breakdown and a JSON summary line."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--page", default="attention", help="a file name in pages/ without .py (default attention)")
    ap.add_argument("--renders", type=int, default=5)
    ap.add_argument("--top", type=int, default=25, help="functions to list by cumulative time")
    ap.add_argument("--next", type=int, default=0, help="click the page's Next button this many times first "
                    "(the Lesson: 3 reaches step 4, one head's Q, K, V and weights)")
    ap.add_argument("--no-profile", action="store_true", help="time the renders without the profiler")
    args = ap.parse_args(argv)
    if not (ROOT / "pages" / f"{args.page}.py").is_file():
        ap.error(f"no page pages/{args.page}.py")
    profile, wall, cpu = profiled_renders(args.page, max(1, args.renders), args.next, not args.no_profile)
    if args.no_profile:
        print(json.dumps({"page": args.page, "next": args.next, "renders": args.renders, "wall_s": round(wall, 4),
                          "cpu_s": round(cpu, 4), "profiled": False}))
        return 0
    split = {k: v / max(1, args.renders) for k, v in shares(profile).items()}
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(args.top)
    print(text.getvalue())
    print(f"/{args.page}: {wall:.3f} s wall, {cpu:.3f} s CPU per render (new sentence each)")
    for k, v in split.items():
        print(f"  {k:32s} {v:.3f} s")
    print(json.dumps({"page": args.page, "renders": args.renders, "wall_s": round(wall, 4), "cpu_s": round(cpu, 4),
                      "own_time_s": {k: round(v, 4) for k, v in split.items()}}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
