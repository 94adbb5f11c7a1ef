"""The soak test of bench/soak.py, reduced: 2 sessions for 40 s over every page with long sentences no visit used
before, while the Training page trains with its defaults (the full run: ``python bench/soak.py``, 20 sessions for 8
minutes). Every page finishes without an exception, the training run starts, and the server's memory does not keep
growing once its caches are full."""

import pytest

import soak

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def record():
    # one model (each bundled model stays loaded for good: loading a second one mid-run is not a leak) and a 48 MiB
    # run cache, so that what is cached is full early in a short run. No upload learner here (a Chromium and a 2 MB
    # BPE beside the other test worker); the full run has one, and its text is checked below
    return soak.run_soak(sessions=2, seconds=40, models=("en-fr",), cache_mb=48, uploads=0)


def test_every_page_finishes_without_an_exception(record):
    s = record["summary"]
    assert s["n_failed"] == 0, s["failed"]
    pages = {v["page"] for v in record["visits"]}
    assert len(pages) >= 6, pages  # two sessions in 40 s, starting eight pages apart, reach six or more


def test_the_training_page_trained_meanwhile(record):
    s = record["summary"]
    assert s["training_starts"] >= 1 and not s["training_errors"], s


def test_memory_stops_growing_once_the_caches_are_full(record):
    s = record["summary"]
    # before the urlsplit-cache fix, every new long sentence on /bertviz kept ≈ 45 MB (issue 35 item 6)
    assert s["growth_after_full_mb"] is not None and s["growth_after_full_mb"] < 200, s["rss_mb_curve"]


def test_growth_reads_the_last_fifth_against_the_middle():
    flat = [(t, 500.0) for t in range(50)]
    assert soak.growth(flat) == 0
    rising = [(t, 500.0 + 10 * t) for t in range(50)]
    assert soak.growth(rising) == 10 * (45 - 25)  # medians of samples 40-49 and 20-29
    assert soak.growth(flat[:5]) is None
    assert soak.long_sentence(1) != soak.long_sentence(2) and 1990 <= len(soak.long_sentence(7)) <= 2020


def test_the_soak_uploads_the_worst_text_the_page_accepts(tmp_path):
    from app import uploads
    data = soak.worst_upload(tmp_path / "worst.txt").read_bytes()
    assert 0.99 * uploads.MAX_UPLOAD <= len(data) <= uploads.MAX_UPLOAD
    assert max(len(w) for w in data.split()) == uploads.MAX_WORD  # the longest word allowed: BPE's worst case
    uploads.release_upload(uploads.save_upload(data, "worst.txt"))  # accepted (a refusal raises ValueError)
    with pytest.raises(ValueError, match="word"):
        uploads.save_upload(data.replace(b" ", b"x", 1), "worse.txt")  # one word longer: refused
