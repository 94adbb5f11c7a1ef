"""The Decode page scores the finished output against the user's reference (the sidebar's Target) with the numbers
of sacrebleu's sentence BLEU and chrF; with no reference it says what to type and shows no table. The Masking
page's teacher-forcing comparison runs on request."""
import json
import re

import pytest
import sacrebleu

from apptest import open_page

from app.shell import load_model
from core.io.budget import max_positions

REF = "6 5 4 3 1 2 0"


def finished(at):
    next(b for b in at.button if b.label == "Run to end").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_decode_scores_the_output_against_the_reference_as_sacrebleu_does():
    at = finished(open_page("decode.py", "reverse", text="1 2 3 4 5 6"))
    output = "6 5 4 3 2 1"
    assert any(output in s.value for s in at.success)
    for tgt in (None, "   "):  # no reference, or only spaces: what to type, and no table
        if tgt is not None:
            at.sidebar.text_input(key="tgt").set_value(tgt).run()
        assert any("type a reference translation" in i.value for i in at.info)
        assert not [d for d in at.dataframe if "matched (clipped)" in d.value.columns]
        assert not [m for m in at.metric if m.label == "BLEU"]
    at.sidebar.text_input(key="tgt").set_value(REF).run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(d.value for d in at.dataframe if "matched (clipped)" in d.value.columns)
    want = sacrebleu.sentence_bleu(output, [REF])
    assert list(table["matched (clipped)"]) == list(want.counts) and list(table["in the output"]) == list(want.totals)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["BLEU"] == f"{want.score:.1f}" and metrics["Brevity penalty BP"] == f"{want.bp:.3f}"
    assert metrics["chrF"] == f"{sacrebleu.sentence_chrf(output, [REF]).score:.1f}"
    assert any(m.value.startswith("6 of the output's 6 tokens also appear in") for m in at.markdown)
    at.sidebar.text_input(key="tgt").set_value("9 9 6").run()  # one token in common: the verb agrees (QA2)
    assert any(m.value.startswith("1 of the output's 6 tokens also appears in") for m in at.markdown), \
        [m.value for m in at.markdown]


def test_masking_compares_one_pass_with_step_by_step_passes_on_request():
    at = open_page("masking.py", "reverse", text="1 2 3 4 5 6")
    assert not [m for m in at.metric if m.label == "One causal pass"]  # off by default
    rows = [d.value for d in at.dataframe if "row" in d.value.columns][-1]
    assert list(rows.iloc[0][1:]) == ["[BOS]", "6", "5", "4", "3", "2", "1"]  # [BOS] y1 … y(n-1)
    assert list(rows.iloc[1][1:]) == ["6", "5", "4", "3", "2", "1", "[EOS]"]  # y1 … yn
    # QA2: the strict mask gave 19 of 19, as the model's own, while the text implied the diagonal is needed
    strict = next(m.value for m in at.markdown if "with the strict mask" in m.value)
    got = re.search(r"at (\d+) of (\d+) positions with the strict mask, (\d+) of \2 with the model's own", strict)
    assert got, strict
    assert ("hiding the diagonal changes nothing here" in strict) == (got[1] == got[3])
    assert "residual connection" in strict and "diagonal is safe" not in strict
    next(t for t in at.toggle if t.key == "tf_compare").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    assert [m for m in at.metric if m.label == "One causal pass"]
    said = next(m.value for m in at.markdown if m.value.startswith("Largest |logit difference|"))
    diffs = [float(x) for x in said.split("**")[1::2]]
    assert len(diffs) == 2 and max(diffs) < 1e-4


@pytest.mark.usefixtures("one_thread")
def test_a_source_longer_than_the_model_reads_is_cut_with_a_notice_and_decoded():
    """QA s58 (HIGH): en-fr reads 104 positions here (its memory budget); a 300-word paragraph gave only "src has
    128 positions …" and no decode, because the confidence notice scored the uncut text. Now: the cut is said, with
    the text's real length, and the cut source is decoded to the end."""
    para = " ".join(("The dog saw a sheep in the path and it chased the sheep across the field because it was hungry "
                     "and the farmer was not at home that day so nobody stopped it .").split() * 12)
    at = open_page("decode.py", "en-fr", text=para)
    n = len(load_model("en-fr").tokenizer.encode(para))
    limit = max_positions(load_model("en-fr").model) - 1
    assert n > limit
    said = [w.value.replace("\\", "") for w in at.warning]
    assert f"The text has {n} tokens; this model reads at most {limit} here, so it was cut after token {limit}." in said
    assert not [i.value for i in at.info if "positions" in i.value], [i.value for i in at.info]
    assert any(m.value.startswith(f"**Source** ({limit + 1} tokens)") for m in at.markdown)
    assert any(t.startswith("Step 1: top candidates") for t in
               (json.loads(el.proto.spec)["layout"]["title"]["text"] for el in at.get("plotly_chart")))
    finished(at)
    assert [m for m in [*at.success, *at.warning] if m.value.startswith("Finished: ")]
