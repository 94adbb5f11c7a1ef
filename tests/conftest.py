"""Fixtures shared by every test folder."""
import os

import pytest
import torch

# app/guard.py turns an exception escaping a page into a short message for the user; under test it re-raises, so a
# page that fails still fails its test (tests/app/test_page_guard.py checks the guard itself with this unset).
os.environ.setdefault("ATTENTION_LAB_RAISE_ERRORS", "1")
# scripts/test.sh runs the suite on two pytest-xdist workers (one file at a time each): each worker writes what the
# app saves (trained models, jobs) to a folder of its own, so two tests never write one file at once
# and uses one torch thread: two workers at torch's default of one thread per core made the card re-measures 4x
# slower (en-fr 93 s alone, 377 s beside the other worker; 2 cores, 4 busy threads); servers and subprocesses the
# tests start keep their own defaults
if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)
    if "ATTENTION_LAB_DATA" not in os.environ:
        import tempfile
        os.environ["ATTENTION_LAB_DATA"] = tempfile.mkdtemp(prefix=f"attention-lab-{os.environ['PYTEST_XDIST_WORKER']}-")


# Under ``--dist loadfile`` (scripts/test.sh, with ``--no-loadscope-reorder``) pytest-xdist hands the test files out
# in collection order; the longest go first, so that no long file is left running alone at the end. Measured
# on 2026-11-26 (2 cores, fresh clone): no time saved (1,944.8 s before, 1,966.3 and 2,012.3 s after): the suite is
# CPU-bound, and the heavy files then slow each other instead. On 2026-11-28 (a slower machine: 120 GFLOP/s for a
# 2048² float32 matmul on 2 threads against 190) the list had gone stale: the soak (332 s of test time) was handed out
# 96th of 99 files, near the end; a replay of that run's per-file times (its JUnit report) in this order
# gives the two workers 1,637 s and 1,395 s, longest first 1,516 s each. Files of ≥ 50 s in that run, longest first.
LONGEST_FIRST = ("core/test_bundled.py", "e2e/test_presentation_browser.py", "e2e/test_soak.py", "core/test_train.py",
                 "e2e/test_training_browser.py", "app/test_pages_part2.py", "app/test_bad_input.py",
                 "app/test_memory_rss.py", "e2e/test_load.py", "app/test_training_jobs.py",
                 "e2e/test_export_files_browser.py", "e2e/test_lesson_and_pages_browser.py", "e2e/test_serve.py",
                 "core/test_parallel.py", "core/test_generated_release.py")


def pytest_collection_modifyitems(config, items):
    """Puts the files of :data:`LONGEST_FIRST` first, in that order; every other file keeps its place after them."""
    rank = {"tests/" + name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


@pytest.fixture(scope="module")
def one_thread():
    """Tiny models on a shared CPU: extra intra-op threads only contend. Restores the count afterwards."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
