"""Many users at once, reduced: 3 Chromium sessions type 12 sentences on the Attention page while a 4th
trains a tiny model on the Training page. The code is bench/load_test.py's (the full run is
``python bench/load_test.py --sessions 8 --renders 200``); no wall-clock assertions here."""
import sys
from pathlib import Path

import pytest

from browser import require_chromium

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import load_test  # noqa: E402

pytestmark = pytest.mark.e2e
SESSIONS, RENDERS = 3, 12
RSS_GROWTH_LIMIT_MB = 300


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    # skips without Chromium/Playwright, fails instead when CI is set; starts no Playwright in this thread, where
    # another test module's browser may already run one (the sessions start their own, in their own threads)
    require_chromium()
    return load_test.run_load(SESSIONS, RENDERS, load_test.TINY_TRAIN_SETTINGS, repeat_training=False,
                              workdir=tmp_path_factory.mktemp("load"), timeout_s=150)


def test_every_session_renders_every_time(record):
    s = record["summary"]
    failed = [r for r in record["renders"] if not r["ok"]]
    assert failed == [], failed
    assert s["renders_ok"] == RENDERS and s["renders_missing"] == 0, s
    assert {r["session"] for r in record["renders"]} == set(range(SESSIONS))
    assert s["thread_errors"] == 0 and s["threads_hung"] == 0, [x["errors"] for x in record["sessions"]]


def test_the_training_session_finishes_its_run(record):
    train = next(x for x in record["sessions"] if x["name"] == "train")
    assert train["settings_seen"] == {k: str(v) for k, v in load_test.TINY_TRAIN_SETTINGS.items()}, train
    assert [r["status"] for r in train["runs"]] == ["done"], train


def test_nothing_leaves_the_machine_and_no_page_breaks(record):
    s = record["summary"]
    assert s["external_requests"] == 0, [x["external"] for x in record["sessions"]]
    assert s["page_errors"] == 0 and s["dialogs"] == 0, [(x["page_errors"], x["dialogs"]) for x in record["sessions"]]
    assert s["st_exceptions"] == 0, [x["st_exceptions"] for x in record["sessions"]]
    assert s["server_log_tracebacks"] == 0, record["server_log_tail"]


def test_server_is_healthy_afterwards_and_memory_stays_bounded(record):
    s = record["summary"]
    assert s["server_alive"] and s["server_healthy_after"], record["server_log_tail"]
    assert s["rss_at_50pct_mb"] and s["rss_end_mb"], s
    growth = s["rss_end_mb"] - s["rss_at_50pct_mb"]
    assert growth < RSS_GROWTH_LIMIT_MB, f"server RSS grew {growth:.0f} MB over the second half of the renders: {s}"
