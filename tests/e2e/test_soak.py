"""The soak test of bench/soak.py, reduced: 2 sessions over every page with long sentences no visit used before,
until 150 s after every page has had three of them (about 200 s alone, longer beside the other test worker),
while the Training page trains with its defaults (the full run: ``python bench/soak.py``, 20 sessions for 8 minutes).
Every page finishes without an exception, the training run starts, and the server's memory does not keep growing
once its caches are full."""

import pytest

import soak

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def record():
    # one model (each bundled model stays loaded for good: loading a second one mid-run is not a leak) and a 48 MiB
    # run cache, so that what is cached is full early in a short run. No upload learner here (a Chromium and a 2 MB
    # BPE beside the other test worker); the full run has one, and its text is checked below
    return soak.run_soak(sessions=2, seconds=40, models=("en-fr",), cache_mb=48, uploads=0, after_fill_s=150)


def test_every_page_finishes_without_an_exception(record):
    s = record["summary"]
    assert s["n_failed"] == 0, s["failed"]
    pages = {v["page"] for v in record["visits"]}
    assert len(pages) >= 6, pages  # two sessions in 40 s, starting eight pages apart, reach six or more


def test_the_training_page_trained_meanwhile(record):
    s = record["summary"]
    assert s["training_starts"] >= 1 and not s["training_errors"], s


def test_memory_stops_growing_once_the_caches_are_full(record, record_property):
    s = record["summary"]
    for key in ("filled_at_s", "growth_mb_per_100_visits", "visits", "seconds"):  # in the JUnit report (--junitxml)
        record_property(key, s[key])
    # with the urlsplit-cache fix undone (every new long sentence on /bertviz kept ≈ 45 MB, issue 35 item 6), this
    # run measured 248 MB per 100 visits (stop 51), and 278.6 on the memory's floor (stop 54); with it, on the floor,
    # 64.9 and 74.1 (stop 54, alone on the machine), and -1.4 over a 600 s span after the fill point
    assert s["filled_at_s"] is not None, s["per_page"]
    assert s["growth_mb_per_100_visits"] is not None and s["growth_mb_per_100_visits"] < 120, s["rss_mb_curve"]


def visit(page, end, problem=None):
    return {"page": page, "at": end - 1.0, "seconds": 1.0, "problem": problem}


def test_the_fill_point_is_every_page_visited_three_times():
    visits = [visit("a", 1), visit("b", 2), visit("a", 3), visit("b", 4, problem="timeout"), visit("b", 6)]
    assert soak.filled_at(visits, ["a", "b"], k=2) == 6  # b's visit at 4 failed: it does not count
    assert soak.filled_at(visits, ["a", "b", "c"], k=2) is None
    assert soak.filled_at(visits, ["", "a"], k=2) is None  # "" is the home page, never visited here
    assert soak.filled_at(visits, ["a", "b"]) is None
    assert soak.filled_at(visits + [visit("a", 7), visit("b", 9)], ["a", "b"]) == 9


def test_growth_is_a_robust_slope_per_visit_after_the_fill_point():
    visits = [visit("a", t) for t in range(1, 101)]  # a visit a second
    flat = [(float(t), 500.0 + (300.0 if t % 10 == 0 else 0.0)) for t in range(101)]  # a page's spikes: not growth
    assert soak.growth_per_100_visits(flat, visits, since=20) == 0
    leak = [(float(t), 500.0 + 2.5 * t) for t in range(101)]  # 2.5 MB a visit
    assert soak.growth_per_100_visits(leak, visits, since=20) == 250
    assert soak.growth_per_100_visits(leak, visits[::2], since=20) == 500  # half the visits: twice per visit
    filling = [(float(t), 500.0 + 10 * min(t, 20)) for t in range(101)]  # fills until 20 s, flat after
    assert soak.growth_per_100_visits(filling, visits, since=20) == 0
    assert soak.growth_per_100_visits(filling, visits, since=None) is None  # never filled: cannot tell
    assert soak.growth_per_100_visits(filling, visits, since=80) is None  # 20 s after filling: too short


def test_growth_reads_the_floor_not_where_a_saw_of_working_memory_stops():
    """The server's memory rises and falls by 100-200 MB as pages come and go: a span ending at the top of a rise is
    not growth (the slope of every sample read such a run's saw as up to 155 MB / 100 visits); a leak under the saw
    still is."""
    visits = [visit("a", t) for t in range(1, 201)]
    for end in (150, 165, 180, 195):  # the span ends at every phase of the saw
        saw = [(float(t), 1000.0 + 5.0 * ((t - 20) % 40)) for t in range(end + 1)]  # 200 MB up over 40 s, then down
        assert abs(soak.growth_per_100_visits(saw, visits, since=20)) <= 5, end
        leak = [(t, m + 2.0 * t) for t, m in saw]  # 2 MB a visit beneath it
        assert 190 <= soak.growth_per_100_visits(leak, visits, since=20) <= 210, end
    points = [(0.0, 5.0), (5.0, 1.0), (10.0, 3.0), (19.0, 9.0), (20.0, 7.0), (25.0, 8.0)]
    assert soak.floor(points, 0, 20) == [(5.0, 1.0)]  # the second window is not whole: left out


def test_the_long_sentences_differ():
    assert soak.long_sentence(1) != soak.long_sentence(2) and 1990 <= len(soak.long_sentence(7)) <= 2020


def test_the_soak_uploads_the_worst_text_the_page_accepts(tmp_path):
    from app import uploads
    data = soak.worst_upload(tmp_path / "worst.txt").read_bytes()
    assert 0.99 * uploads.MAX_UPLOAD <= len(data) <= uploads.MAX_UPLOAD
    assert max(len(w) for w in data.split()) == uploads.MAX_WORD  # the longest word allowed: BPE's worst case
    uploads.release_upload(uploads.save_upload(data, "worst.txt"))  # accepted (a refusal raises ValueError)
    with pytest.raises(ValueError, match="word"):
        uploads.save_upload(data.replace(b" ", b"x", 1), "worse.txt")  # one word longer: refused


def test_a_recorded_run_replays_both_measures_over_every_span():
    """``python bench/soak.py --replay``: the floor is steadier than every sample on a saw with no growth."""
    samples = [(float(t), 1000.0 + 5.0 * (t % 40)) for t in range(400)]
    record = {"samples": samples, "visits": [visit("a", t) for t in range(1, 400)], "summary": {"filled_at_s": 20.0}}
    got = soak.spans(record, span_s=150)
    assert got["floor"]["spans"] == got["every sample"]["spans"] == 46  # starts 20, 25, ... 245
    assert max(abs(got["floor"]["min"]), abs(got["floor"]["max"])) <= 5 < got["every sample"]["max"]
