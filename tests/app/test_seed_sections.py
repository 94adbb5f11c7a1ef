"""AppTest of two sections drawn alone (no full page): Layer outputs' "Same word, two meanings" on lm-tiny, and
Positional encoding's "Variants of the formula". Every bad input gets a message, never a traceback."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from apptest import charts, ran

pytestmark = pytest.mark.usefixtures("one_thread")


def _same_word_section():
    from types import SimpleNamespace

    from app import layers_view
    from app.shell import load_model
    layers_view.section(SimpleNamespace(name="lm-tiny", ck=load_model("lm-tiny")), 5, present=False, dark=False)


def _variants_section(d_model, n_pos, k):
    from app import positional_view
    positional_view.formula_variants(7, d_model, n_pos, 10000, k, present=False, dark=False)


def test_same_word_section_measures_and_answers_bad_input():
    at = ran(AppTest.from_function(_same_word_section, default_timeout=60))
    fig = charts(at)["same_word"]
    assert [t["name"] for t in fig["data"]] == ["“bank” in A vs in B", "“bank” in A vs in C (same meaning)",
                                                "“bank” vs “she”, both in A"]
    assert fig["data"][0]["x"][:3] == ["token", "+ position", "layer 0"]
    assert fig["data"][0]["y"][0] == pytest.approx(1.0, abs=1e-12) and fig["data"][0]["y"][-1] < 1
    assert next(m.value for m in at.metric if m.label == "A vs B, token embedding") == "1.0000"
    assert any("cuts “bank” into 4 tokens" in c.value for c in at.caption)
    assert any(m.value.startswith("**Control.**") for m in at.markdown)
    at.text_input(key="sw_c").set_value("The river was cold.")
    assert any("Sentence C has no “bank”" in i.value for i in ran(at).info)
    assert len(charts(at)["same_word"]["data"]) == 2
    at.text_input(key="sw_a").set_value("He sat by the river bank.")  # lm-tiny has no capital H: [UNK]
    assert any("as [UNK]" in w.value for w in ran(at).warning)
    at.text_input(key="sw_a").set_value("the bank " * 33)  # more tokens than lm-tiny's 128 positions
    assert any("Sentence A has" in i.value and "reads at most 128" in i.value for i in ran(at).info)
    assert "same_word" not in charts(at)
    at.text_input(key="sw_b").set_value("Nothing alike.")
    assert any("share no word" in i.value for i in ran(at).info)
    at.text_input(key="sw_a").set_value("  ")
    assert any("Type two sentences" in i.value for i in ran(at).info)


def test_formula_variants_section_measures_each_variant():
    at = ran(AppTest.from_function(_variants_section, args=(16, 24, 3), default_timeout=30))
    metrics = {m.label: m.value for m in at.metric}
    assert float(metrics["Largest |difference| of PE(i)·PE(j), the two layouts"]) < 1e-5
    assert float(metrics["Paper: largest |R_k·PE(pos) − PE(pos+3)|"]) < 1e-5
    assert float(metrics["Per dimension: the same check"]) > 0.1
    assert float(metrics["Per dimension: best 2×2 map per pair"]) > 0.1
    interleaved = charts(at)["pe_layout_table"]["data"][0]["z"]
    at.radio(key="pe_layout").set_value("halves")
    halves = charts(ran(at))["pe_layout_table"]["data"][0]["z"]
    assert halves[5] == [interleaved[5][j] for j in [*range(0, 16, 2), *range(1, 16, 2)]]
    said = next(m.value for m in at.markdown if m.value.startswith("**Wavelengths.**"))
    assert "from 6.283 (2π) to 19,869 (i = 7)" in said and "10000·π = 31,416" in said
    assert any("k = 0" in i.value for i in ran(AppTest.from_function(_variants_section, args=(16, 24, 0))).info)
