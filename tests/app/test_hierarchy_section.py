"""AppTest of the recurrence page's last section, "Counting and nesting: where attention needs help", drawn alone
(app.recurrence_view.counting_section): the shipped curves, the learner's two strings read by the four models (and
only those four small predictions computed on the default render), bad strings answered with a message."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from apptest import charts, ran

from core.variants import hierarchy

SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "hierarchy"
shipped = pytest.mark.skipif(not (SHIPPED / hierarchy.RESULTS).exists(), reason="no models in assets/hierarchy")
pytestmark = pytest.mark.usefixtures("one_thread")


def _section():
    from app import recurrence_view
    recurrence_view.counting_section(dict(present=False, dark=False))


@shipped
def test_the_section_draws_the_curves_and_reads_the_learners_strings(monkeypatch):
    from app import recurrence_view
    recurrence_view.answered.clear()
    calls = []
    real = hierarchy.predict
    monkeypatch.setattr(hierarchy, "predict", lambda *a, **kw: calls.append(a[1]) or real(*a, **kw))
    at = ran(AppTest.from_function(_section, default_timeout=60))
    # the default render computes four single-string predictions and nothing else; a rerun reads the cache
    assert sorted(map(tuple, calls)) == [("(()(()))",)] * 2 + [("1101001",)] * 2
    ran(at)
    assert len(calls) == 4
    drawn = charts(at)
    assert {"hier_parity_accuracy", "hier_brackets_accuracy", "hier_brackets_depth", "hier_depth"} <= set(drawn)
    results = recurrence_view.load_hierarchy(str(recurrence_view.hierarchy_folder()),
                                             recurrence_view.hierarchy_stamp(recurrence_view.hierarchy_folder()))[1]
    parity = {t["name"]: t["y"] for t in drawn["hier_parity_accuracy"]["data"]}
    assert parity == {"Transformer": results["curves"]["parity"]["transformer"]["accuracy"],
                      "LSTM": results["curves"]["parity"]["lstm"]["accuracy"]}
    assert [s["x0"] for s in drawn["hier_parity_accuracy"]["layout"]["shapes"] if s["x0"] == s["x1"]] == [20]
    depth = {t["name"]: t["y"] for t in drawn["hier_depth"]["data"]}
    assert depth["the rule"] == [1, 2, 1, 2, 3, 2, 1, 0]
    models = recurrence_view.load_hierarchy(str(recurrence_view.hierarchy_folder()),
                                            recurrence_view.hierarchy_stamp(recurrence_view.hierarchy_folder()))[0]
    own = real(models["brackets"]["lstm"], ["(()(()))"])
    assert depth["LSTM"] == pytest.approx(own["depth"][0])
    brackets = next(d.value for d in at.dataframe if "balanced" in list(getattr(d.value, "answer", [])))
    assert list(brackets["model"]) == ["Transformer", "LSTM"]
    assert brackets["confidence"][1] == f"{own['confidence'][0]:.1%}"
    assert any(c.value.startswith("The rule: balanced, because the depth ends at 0") for c in at.caption)
    assert any(m.value.startswith("**What these curves show.**") for m in at.markdown)

    at.text_input(key="hier_brackets").set_value("(a)b")
    at.text_input(key="hier_bits").set_value("1" * 120)
    ran(at)
    said = [w.value for w in at.warning]
    assert any("Only \\( and \\) can be read here" in w and "first at character 2" in w for w in said), said
    assert any("120 characters" in w and "at most 100" in w for w in said), said
    assert "hier_depth" not in charts(at)


def test_without_the_models_the_section_says_how_to_train_them(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_HIERARCHY_DIR", str(tmp_path))
    at = ran(AppTest.from_function(_section, default_timeout=60))
    assert any("python -m core.variants.hierarchy --out assets/hierarchy" in i.value for i in at.info)


@shipped
def test_the_bracket_verdict_follows_both_measures():
    """QA s59: the reading said recurrence gave "no clear advantage" on brackets while the depth chart beside it had the
    LSTM ahead; the verdict now weighs the answer and the depth, and says "neither" only when both are close."""
    import copy

    from app import recurrence_view as rv
    _, results = rv.load_hierarchy(str(SHIPPED), rv.hierarchy_stamp(SHIPPED))
    told = rv.hierarchy_reading(results)
    assert "the LSTM is a little ahead" in told and "no clear advantage" not in told
    same = copy.deepcopy(results)
    same["curves"]["brackets"]["lstm"] = copy.deepcopy(same["curves"]["brackets"]["transformer"])
    told = rv.hierarchy_reading(same)
    assert "neither model is clearly better" in told and "no clear advantage" in told
    assert [rv._n(1, "character"), rv._n(3, "one")] == ["1 character", "3 ones"]
