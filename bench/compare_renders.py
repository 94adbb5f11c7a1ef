"""Page renders of two versions of the app side by side, in one run: a git revision against the working tree.

    python bench/compare_renders.py --base REV [--pages lesson:3 attention ...] [--repeats 3] [--renders 6]
                                    [--out FILE.json]

Checks ``REV`` out into a temporary git worktree and times each page with ``bench/profile_render.py --no-profile``
(AppTest, no browser: the page script's own work, with a new sentence every render) in both trees, alternating
base and working tree ``--repeats`` times so that a machine that slows down or speeds up meanwhile weighs on both
alike. A page is ``name`` or ``name:N``, N the clicks on its Next button first (``lesson:3``: the Lesson's step 4).
Prints, per page, the median wall and CPU seconds a render in each tree and base / working-tree ratios; the last line
is the whole run as JSON (also written to ``--out``). Run it on an idle machine.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PAGES = ("lesson:3", "lesson", "attention", "coreference", "masking")


def render_times(tree: Path, page: str, renders: int) -> dict:
    """One ``profile_render.py --no-profile`` run of ``page`` (``name[:next]``) in ``tree``: its JSON summary."""
    name, _, clicks = page.partition(":")
    cmd = [sys.executable, "bench/profile_render.py", "--page", name, "--renders", str(renders), "--no-profile"]
    if clicks:
        cmd += ["--next", clicks]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if out.returncode or not lines:
        raise SystemExit(f"{page} in {tree} failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return json.loads(lines[-1])


def compare(base: Path, head: Path, pages, repeats: int, renders: int) -> dict:
    """Per page: every run's wall and CPU seconds a render in ``base`` and ``head``, their medians and ratios."""
    result = {}
    for page in pages:
        runs = {"base": [], "head": []}
        for _ in range(repeats):
            for which, tree in (("base", base), ("head", head)):
                runs[which].append(render_times(tree, page, renders))
        row = {k: {"wall_s": [r["wall_s"] for r in v], "cpu_s": [r["cpu_s"] for r in v]} for k, v in runs.items()}
        for measure in ("wall_s", "cpu_s"):
            b, h = (statistics.median(row[k][measure]) for k in ("base", "head"))
            row[f"median_{measure}"] = {"base": b, "head": h, "ratio": round(b / h, 3)}
        result[page] = row
        print(f"{page:14s} wall {row['median_wall_s']['base']:.3f} → {row['median_wall_s']['head']:.3f} s "
              f"({row['median_wall_s']['ratio']:.2f}×)   CPU {row['median_cpu_s']['base']:.3f} → "
              f"{row['median_cpu_s']['head']:.3f} s ({row['median_cpu_s']['ratio']:.2f}×)", flush=True)
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="a git revision: the version to compare against")
    ap.add_argument("--pages", nargs="+", default=list(DEFAULT_PAGES), help="name or name:N (N Next clicks first)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--renders", type=int, default=6)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    rev = subprocess.run(["git", "rev-parse", "--short", a.base], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                capture_output=True, text=True, check=True).stdout.strip())
    with tempfile.TemporaryDirectory(prefix="attention-lab-base-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(tree), rev], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            pages = compare(tree, ROOT, a.pages, a.repeats, a.renders)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
    summary = {"base": rev, "head": head + ("+changes" if dirty else ""), "repeats": a.repeats,
               "renders": a.renders, "cpus": os.cpu_count(), "pages": pages}
    if a.out:
        a.out.write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
