"""AppTest of Positional encoding's "Longer than training" section drawn alone: the held-out curves of the five
shipped models (the learned one stops at its table), the table and the reading, one passage scored live, and every
kind of text a learner types answered with a message, never a traceback."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from apptest import charts, ran

from app import positional_view

pytestmark = [pytest.mark.usefixtures("one_thread"),
              pytest.mark.skipif(positional_view.extrapolation_stamp() is None,
                                 reason="the five models are not in assets/extrapolation")]


def _section():
    from app import positional_view
    positional_view.extrapolation_section(8, present=False, dark=False)


def test_the_section_draws_the_held_out_curves_and_answers_every_text(monkeypatch):
    from core.variants import extrapolation
    for fn in (positional_view.heldout_summary, positional_view.live_summary, positional_view.passage_texts):
        fn.clear()  # the caches are the process's: start from nothing
    calls = []
    for module, fn in ((positional_view, "_reading"), (extrapolation, "running_mean"), (extrapolation, "text_ids")):
        real = getattr(module, fn)
        monkeypatch.setattr(module, fn, lambda *a, _real=real, _fn=fn, **kw: calls.append(_fn) or _real(*a, **kw))
    at = ran(AppTest.from_function(_section, default_timeout=60))
    first = sorted(calls)
    assert first == ["_reading"] + ["running_mean"] * 5
    ran(at)
    assert sorted(calls) == first  # a rerun reads the caches (QA2: the reading and the live text were recomputed)
    held = charts(at)["ex_heldout"]
    lengths = {t["name"]: len(t["y"]) for t in held["data"]}
    assert lengths == {"sinusoidal": 256, "learned": 64, "RoPE": 256, "ALiBi": 256, "none (no positions)": 256}
    assert [s["x0"] for s in held["layout"]["shapes"]] == [63.5]
    assert at.get("arrow_data_frame") or at.dataframe
    assert any(m.value.startswith("Past position 63,") for m in at.markdown)
    live = charts(at)["ex_live"]
    assert {t["name"]: len(t["y"]) for t in live["data"]} == lengths
    assert any("learned: this learned model has 64 position vectors" in c.value for c in at.caption)

    at.radio(key="ex_source").set_value("yours")
    assert any("Type or paste some English text" in i.value for i in ran(at).info)
    assert "ex_live" not in charts(at)
    at.text_area(key="ex_text").set_value("The kernel loads the module when the device appears.")
    ran(at)
    ran(at)
    assert calls.count("text_ids") == 1  # the typed text is read once
    assert any("positions 0–" in i.value and "all inside the training length of 64" in i.value for i in at.info)
    assert not any("position vectors" in c.value for c in at.caption)  # the learned model reads it all
    assert len(charts(at)["ex_live"]["data"][1]["y"]) == len(charts(at)["ex_live"]["data"][0]["y"]) < 64
    at.checkbox(key="ex_repeat").check()
    assert all(len(t["y"]) == (64 if t["name"] == "learned" else 256) for t in charts(ran(at))["ex_live"]["data"])
    assert any("position vectors" in c.value for c in at.caption)
    at.checkbox(key="ex_repeat").uncheck()
    at.text_area(key="ex_text").set_value("Debian packages are installed with apt. " * 100)
    assert any("the models read the first 256" in i.value for i in ran(at).info)
    at.text_area(key="ex_text").set_value("🙂 <b>x</b> [a](http://example.com)")
    ran(at)
    assert "ex_live" in charts(at)
