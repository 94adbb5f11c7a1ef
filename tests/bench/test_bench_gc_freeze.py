"""bench/bench_gc_freeze.py: its ``sitecustomize`` hook logs every full collection of a process started with it on
the path, and only the server's collections within the soak's span are counted."""
import json
import os
import subprocess
import sys

from bench_gc_freeze import HOOK, collections_during


def test_the_hook_logs_full_collections_only(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(HOOK)

    def logged(code: str, name: str) -> list[dict]:
        log = tmp_path / name
        env = dict(os.environ, PYTHONPATH=str(tmp_path), ATTENTION_LAB_GC_LOG=str(log))
        subprocess.run([sys.executable, "-c", "import gc\n" + code], env=env, check=True)
        return [json.loads(line) for line in log.read_text().splitlines()]
    full = logged("for _ in range(3): gc.collect()", "full.jsonl")
    young = logged("for _ in range(3): gc.collect(0); gc.collect(1)", "young.jsonl")
    # the same interpreter start and shutdown in both; three full collections more in the first, none in the second
    assert len(full) - len(young) == 3
    assert all(r["seconds"] >= 0 and r["pid"] != os.getpid() for r in full)


def test_only_the_servers_collections_in_the_span_count(tmp_path):
    log = tmp_path / "gc.jsonl"
    rows = [{"pid": 1, "end": 100.5, "seconds": 0.3}, {"pid": 1, "end": 150.0, "seconds": 0.2},
            {"pid": 1, "end": 99.0, "seconds": 9.0},  # before the soak's zero: the warm-up's
            {"pid": 1, "end": 400.0, "seconds": 9.0},  # after its span
            {"pid": 2, "end": 120.0, "seconds": 5.0}]  # the training job's process
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert collections_during(log, t0=100.0, span_s=200.0) == [0.3, 0.2]
    log.write_text("")
    assert collections_during(log, t0=100.0, span_s=200.0) == []
