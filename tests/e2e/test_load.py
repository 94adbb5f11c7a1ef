"""Many users at once, reduced: 2 Chromium sessions and 2 scripted websocket students (app/visitor.py) walk
through a class (the teacher's shared Lesson link, three steps, their own sentence, the Attention page, then more
sentences: 28 actions) while a 5th session trains a tiny model on the Training page, against 2 app replicas behind
nginx with sticky sessions (docs/nginx-attention-lab.conf). The code is bench/load_test.py's (the full run of a class
of 30: ``python bench/load_test.py --sessions 4 --scripted 26 --renders 300 --walk classroom --replicas 2``,
docs/RELIABILITY.md); no wall-clock assertions here."""
from pathlib import Path

import pytest

from browser import require_chromium

ROOT = Path(__file__).resolve().parents[2]
import load_test

pytestmark = pytest.mark.e2e
SESSIONS, SCRIPTED, RENDERS = 2, 2, 28
WALK = load_test.CLASSROOM_WALK
RSS_GROWTH_LIMIT_MB = 300


@pytest.fixture(scope="module")
def record(tmp_path_factory):
    # skips without Chromium/Playwright, fails instead when CI is set; starts no Playwright in this thread, where
    # another test module's browser may already run one (the sessions start their own, in their own threads)
    require_chromium()
    return load_test.run_load(SESSIONS, RENDERS, load_test.TINY_TRAIN_SETTINGS, repeat_training=False,
                              workdir=tmp_path_factory.mktemp("load"), timeout_s=300, walk="classroom", replicas=2,
                              scripted=SCRIPTED)


def test_the_sentences_are_single_tokens_the_model_knows():
    from core.io import registry
    ck = registry.load(load_test.MODEL)
    for word in {w for _, words in load_test.SENTENCES for w in words}:
        assert ck.tokenizer.display(ck.tokenizer.encode(word)) == [word] and word in ck.known_words, word


def test_every_session_renders_every_time(record):
    s = record["summary"]
    failed = [r for r in record["renders"] if not r["ok"]]
    assert failed == [], failed
    assert s["renders_ok"] == RENDERS and s["renders_missing"] == 0, s
    assert {r["session"] for r in record["renders"]} == set(range(SESSIONS + SCRIPTED))
    assert {r["client"] for r in record["renders"]} == {"browser", "scripted"}
    assert s["thread_errors"] == 0 and s["threads_hung"] == 0, [x["errors"] for x in record["sessions"]]
    for sid in range(SESSIONS + SCRIPTED):  # every student did the whole walk, in order
        mine = sorted((r for r in record["renders"] if r["session"] == sid), key=lambda r: r["index"])
        assert [r["sentence"] for r in mine][:len(WALK)] == WALK, mine


def test_sessions_stay_on_one_replica_and_both_replicas_serve(record):
    sticky = record["summary"]["stickiness"]
    assert sticky["cookies"] >= SESSIONS + SCRIPTED + 1, sticky  # one cookie per student and the trainer
    assert sticky["cookies_on_two_replicas"] == 0 and sticky["probes_on_two_replicas"] == 0, sticky
    assert sticky["probe_replicas"] == 2 and sticky["probe_requests_failed"] == 0, sticky


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
