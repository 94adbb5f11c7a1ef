"""AppTest of two sections drawn alone (no full page): Layer outputs' "Same word, two meanings" on lm-tiny, and
Positional encoding's "Variants of the formula". Every bad input gets a message, never a traceback."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from apptest import charts, ran

pytestmark = pytest.mark.usefixtures("one_thread")


def _same_word_section(name="lm-tiny"):
    from types import SimpleNamespace

    from app import layers_view
    from app.shell import load_model
    layers_view.section(SimpleNamespace(name=name, ck=load_model(name)), 5, present=False, dark=False)


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
    control = next(m.value for m in at.markdown if m.value.startswith("**Control.**"))
    assert "the same meaning is" in control and "function word" not in control
    assert any(": the context has moved the vector." in m.value for m in at.markdown)
    at.text_input(key="sw_c").set_value("The river was cold.")
    assert any("Sentence C has no “bank”" in i.value for i in ran(at).info)
    assert len(charts(at)["same_word"]["data"]) == 2
    at.text_input(key="sw_a").set_value("The boat in the river was near the old mill by the water.")
    ran(at)  # shares only function words with B: "the" is picked, and said to be one; no talk of one meaning (QA2)
    assert at.selectbox[0].value == "the"
    assert any("“the” is a function word" in c.value for c in at.caption)
    control = next(m.value for m in at.markdown if m.value.startswith("**Control.**"))
    assert "function word has no second meaning" in control and "same meaning" not in control
    assert "“the” in A vs in C" in [t["name"] for t in charts(at)["same_word"]["data"]]
    at.text_input(key="sw_a").set_value("She waited before the river bank.")
    at.text_input(key="sw_b").set_value("He paid before the bank closed.")
    assert ran(at).selectbox[0].value == "bank"  # not "before", the longest shared word
    at.text_input(key="sw_a").set_value("He sat by the river bank.")  # lm-tiny has no capital H: [UNK]
    assert any("as [UNK]" in w.value for w in ran(at).warning)
    at.text_input(key="sw_a").set_value("the bank " * 33)  # more tokens than lm-tiny's 128 positions
    assert any("Sentence A has" in i.value and "reads at most 128" in i.value for i in ran(at).info)
    assert "same_word" not in charts(at)
    at.text_input(key="sw_b").set_value("Nothing alike.")
    assert any("share no word" in i.value for i in ran(at).info)
    at.text_input(key="sw_a").set_value("  ")
    assert any("Type two sentences" in i.value for i in ran(at).info)


def test_a_word_read_as_unk_gets_no_verdict():
    """QA2: on copy, "bank" is [UNK]; the page warned that the numbers say nothing, then said "the context has moved
    the vector" and "the same meaning is closer, by 0.001"."""
    at = ran(AppTest.from_function(_same_word_section, args=("copy",), default_timeout=60))
    assert any("“bank”" in w.value and "as [UNK]" in w.value for w in at.warning)
    said = " ".join(m.value for m in at.markdown)
    assert "moved the vector" not in said and "the same meaning is" not in said and "closer, by" not in said
    control = next(m.value for m in at.markdown if m.value.startswith("**Control.**"))
    assert "say nothing about the meaning" in control


def test_formula_variants_section_measures_each_variant(monkeypatch):
    from app import positional_view
    from core.probes import positions
    positional_view.layout_study.clear()  # the caches are the process's: start from nothing
    positional_view.indexing_study.clear()
    calls = []
    for fn in ("layout_check", "indexing_check"):
        real = getattr(positions, fn)
        monkeypatch.setattr(positions, fn, lambda *a, _real=real, _fn=fn, **kw: calls.append(_fn) or _real(*a, **kw))
    at = ran(AppTest.from_function(_variants_section, args=(16, 24, 3), default_timeout=30))
    metrics = {m.label: m.value for m in at.metric}
    assert float(metrics["Largest |difference| of PE(i)·PE(j), the two layouts"]) < 1e-5
    assert float(metrics["Paper: largest |R_k·PE(pos) − PE(pos+3)|"]) < 1e-5
    assert float(metrics["Per dimension: the same check"]) > 0.1
    assert float(metrics["Per dimension: best 2×2 map per pair"]) > 0.1
    assert at.radio(key="pe_layout").value == "halves"  # section 1 already draws the interleaved table
    halves = charts(at)["pe_layout_table"]["data"][0]["z"]
    at.radio(key="pe_layout").set_value("interleaved")
    interleaved = charts(ran(at))["pe_layout_table"]["data"][0]["z"]
    assert sorted(calls) == ["indexing_check", "layout_check"]  # measured once, not on every rerun (QA2)
    assert halves[5] == [interleaved[5][j] for j in [*range(0, 16, 2), *range(1, 16, 2)]]
    said = next(m.value for m in at.markdown if m.value.startswith("**Wavelengths.**"))
    assert "from 6.283 (2π) to 19,869 (i = 7)" in said and "10000·π = 31,416" in said
    assert any("k = 0" in i.value for i in ran(AppTest.from_function(_variants_section, args=(16, 24, 0))).info)


def test_the_positional_pages_headings_fit_two_lines():
    """QA2: "2. Similarity between positions depends on the offset only" wrapped to three lines at 1280 px. Read from
    the page's source (st.header with a plain string), not by opening the page."""
    import ast
    from pathlib import Path
    source = Path(__file__).resolve().parents[2] / "pages" / "positional.py"
    heads = [node.args[0].value for node in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "header"
             and node.args and isinstance(node.args[0], ast.Constant)]
    assert len(heads) >= 6 and all(len(h) <= 55 for h in heads), heads  # 58 characters took three lines


def _alibi_sign_section(n_heads, n_tokens, head):
    from app import positional_view
    positional_view.alibi_sign(n_heads, n_tokens, head)


def test_alibi_sign_check_prints_the_measured_difference_and_weights():
    """The ALiBi tab's table and caption are core.probes.positions.alibi_sign_check's numbers; one token gets a
    message instead of a table."""
    from core.probes import positions
    at = ran(AppTest.from_function(_alibi_sign_section, args=(8, 12, 1), default_timeout=30))
    sc = positions.alibi_sign_check(8, 12, 1)
    table = at.dataframe[0].value
    assert list(table["token 0 → last: weight"]) == [f"{sc['far'][f]:.3g}" for f in ("app", "seed")]
    assert list(table["token 0 → last: bias"]) == ["−2.75", "+2.75"]  # s = 1/4 for head 1 of 8, 11 keys away
    told = next(c.value for c in at.caption if "2·s·(j − i)" in c.value)
    assert "measured 0.0 on and below it, at most 5.5 above it (2·s·(t − 1) = 5.5)" in told
    assert "largest difference 0)" in told and sc["causal_gap"] == 0
    one = ran(AppTest.from_function(_alibi_sign_section, args=(8, 1, 0), default_timeout=30))
    assert any("two tokens or more" in i.value for i in one.info) and not one.dataframe
