"""AppTest: the Masked LM page fills masks with the bundled BERT-style model (numbers recomputed from
core.inference.mlm), compares with the left-only views, shows BERT's corruption on the sentence, and answers bad input."""
import json

import pytest

from apptest import open_page

from app.text import md as md_text
from core.inference import mlm
from core.io import registry
from core.io.tokenizer import MASK

pytestmark = pytest.mark.usefixtures("one_thread")


def charts(at) -> dict:
    """{title, its line breaks (app.theme.wrap_title) read as spaces: the chart's spec}."""
    return {json.loads(el.proto.spec)["layout"]["title"]["text"].replace("<br>", " "): json.loads(el.proto.spec)
            for el in at.get("plotly_chart")}


@pytest.fixture(scope="module")
def ck():
    return registry.load("mlm")


def test_the_default_sentence_is_filled_with_the_models_own_probabilities(ck):
    at = open_page("mlm.py", "en-fr")
    assert [h.value for h in at.header] == ["1. Fill in the blank", "2. Both sides, or the left side only",
                                          "3. How BERT makes a training example", "4. Over many sentences",
                                          "5. Pre-train, then fine-tune", "6. Next sentence prediction",
                                          "7. Can BERT write?"]
    assert any("is not a masked LM, so this page uses mlm" in c.value for c in at.caption)
    text = at.text_area(key="mlm_text").value
    assert "[MASK]" in text
    shown = next(m.value for m in at.markdown if m.value.startswith("**Model input:**"))
    assert "`[MASK]`" in shown and "\\" not in shown  # as inline code: no Markdown escapes showing
    ids = mlm.encode_masked(ck.tokenizer, text)
    expect = mlm.fill(ck, ids)
    figs = charts(at)
    pos = expect.fills[0].position
    bars = figs[f"[MASK] at position {pos}"]["data"][0]
    assert bars["y"] == pytest.approx(expect.fills[0].probs, abs=1e-6)
    assert bars["customdata"] == ck.tokenizer.display(expect.fills[0].ids)
    best = ck.tokenizer.decode(expect.best())
    assert any(m.value.endswith(md_text(best)) for m in at.markdown if m.value.startswith("**Best guess"))
    share = mlm.right_share(expect.trace, pos)
    right = [t for t in figs if t.startswith("Share of the mask's attention")][0]
    z = figs[right]["data"][0]["z"]
    assert [v for row in z for v in row] == pytest.approx(share.flatten().tolist(), abs=1e-6)
    for title in ("This model, whole sentence", "This model, right side cut", "Causal LM, left to right"):
        assert len(figs[title]["data"][0]["y"]) == 5


def test_hiding_words_by_picking_them_highlights_the_hidden_word(ck):
    at = open_page("mlm.py", "en-fr")
    at.text_area(key="mlm_text").set_value("The dog was too tired, so it lay down.").run()
    assert any("Nothing is hidden yet" in i.value for i in at.info)
    ids = ck.tokenizer.encode("The dog was too tired, so it lay down.")
    pos = ck.tokenizer.display(ids).index("tired")
    box = at.multiselect[0]
    box.set_value([pos]).run()
    assert not at.exception and not at.error
    figs = charts(at)
    title = f"[MASK] at position {pos} (hidden word: “tired”)"
    assert title in figs
    expect = mlm.fill(ck, mlm.mask_positions(ids, [pos]))
    colors = figs[title]["data"][0]["marker"]["color"]
    top = expect.fills[0].ids
    if ids[pos] in top:  # the hidden word is drawn red where it ranks
        assert colors[top.index(ids[pos])] == "#d62728"
    assert colors.count("#d62728") == (1 if ids[pos] in top else 0)


def test_the_corruption_table_and_rates_follow_bert_recipe(ck):
    at = open_page("mlm.py", "mlm")
    assert not any("is not a masked LM" in c.value for c in at.caption)
    table = at.dataframe[0].value
    assert len(table) >= 1 and set(table["chosen as"]) <= {"[MASK]", "random token", "unchanged"}
    for _, row in table.iterrows():
        if row["chosen as"] == "[MASK]":
            assert row["model input"] == "[MASK]"
        elif row["chosen as"] == "unchanged":
            assert row["model input"] == row["token"]
    rates = {m.label: float(m.value.rstrip("%")) / 100 for m in at.metric}
    assert abs(rates["→ [MASK]"] - 0.8) < 0.05 and abs(rates["→ random token"] - 0.1) < 0.04
    assert abs(rates["→ unchanged"] - 0.1) < 0.04 and 0.12 < rates["Chosen"] < 0.2
    first = table.to_dict("records")
    at.number_input(key="mlm_seed").set_value(7).run()
    assert at.dataframe[0].value.to_dict("records") != first  # another draw
    # T5's span corruption of the same sentence's words: an input with sentinels and a target that restores it
    shown = next(m.value for m in at.markdown if m.value.startswith("**Input:**"))
    assert "⟨X⟩" in shown and "**Target:** ⟨X⟩" in shown
    at.number_input(key="t5_seed").set_value(3).run()
    assert next(m.value for m in at.markdown if m.value.startswith("**Input:**")) != shown


@pytest.mark.slow
def test_the_held_out_measurement_reports_core_numbers(ck):
    at = open_page("mlm.py", "mlm")
    assert not [m for m in at.metric if m.label == "Whole line (this model)"]  # only on request
    at.button(key="mlm_measure").click().run(timeout=300)
    assert not at.exception and not at.error
    from core.training.tasks import MLMTask
    score = mlm.both_sides_score(ck, MLMTask(tokenizer=ck.tokenizer).valid_rows[:300], lm=registry.load("lm-tiny"))
    shown = {m.label: m.value for m in at.metric}
    assert shown["Whole line (this model)"] == f"{score['full']:.1%}"
    assert shown["Cut after the mask"] == f"{score['cut']:.1%}"
    assert shown["Causal LM (lm), left only"] == f"{score['left_lm']:.1%}"
    assert shown["Gain from the right side"] == f"{score['gain']:.2f} nats"
    at.number_input(key="mlm_seed").set_value(3).run()  # stays on screen across reruns
    assert "Whole line (this model)" in {m.label for m in at.metric}


def test_fine_tuning_runs_on_request_and_reports_core_finetune(ck):
    from core.training import finetune

    at = open_page("mlm.py", "mlm")
    assert not [t for t in charts(at) if t.startswith("Accuracy on")]  # nothing trains on page load
    at.number_input(key="mlm_ft_steps").set_value(20)
    at.number_input(key="mlm_ft_n").set_value(16).run()
    at.button(key="mlm_ft_go").click().run(timeout=300)
    assert not at.exception and not at.error
    expect = finetune.compare(ck.model, ck.tokenizer, n_labelled=16, steps=20, seed=0)
    curve = charts(at)["Accuracy on 200 sentences with unseen adjectives"]
    series = {d["name"]: d["y"] for d in curve["data"]}
    assert series["pre-trained (mlm)"] == pytest.approx(expect["pre-trained"].accuracy, abs=1e-9)
    assert series["random start"] == pytest.approx(expect["random"].accuracy, abs=1e-9)
    shown = {m.label: m.value for m in at.metric}
    assert shown["Pre-trained, fine-tuned"] == f"{expect['pre-trained'].final:.1%}"
    assert shown["Random start, same training"] == f"{expect['random'].final:.1%}"
    table = at.dataframe[-1].value
    assert list(table["model"]) == ["pre-trained", "random"]
    assert table.iloc[0]["p(it = the animal)"] + table.iloc[0]["p(it = the place)"] == pytest.approx(1, abs=2e-3)
    at.text_input(key="mlm_ft_try").set_value("The dog was sick.").run()
    assert any("the word “it”" in i.value for i in at.info) and not at.exception


def test_next_sentence_prediction_shows_the_models_probabilities_and_segments(ck):
    at = open_page("mlm.py", "mlm")
    a, b1, b2 = (at.text_input(key=k).value for k in ("mlm_nsp_a", "mlm_nsp_b1", "mlm_nsp_b2"))
    shown = [m.value for m in at.metric if m.label == "p(B follows A)"]
    expect = [mlm.next_sentence(ck, a, b) for b in (b1, b2)]
    assert shown == [f"{r.p_next:.1%}" for r in expect]
    assert expect[0].p_next > 0.5 > expect[1].p_next  # the story's next sentence vs an unrelated one
    figs = charts(at)
    types = figs["Token types of the first pair: 0 = A, 1 = B"]["data"][0]["z"]
    assert types == [expect[0].types]
    share = figs["Share of B's attention on sentence A"]["data"][0]["z"]
    want = mlm.segment_share(expect[0].trace, expect[0].types)
    assert [v for row in share for v in row] == pytest.approx(want.flatten().tolist(), abs=1e-6)
    at.text_input(key="mlm_nsp_b2").set_value("  ").run()
    assert any("at least one word" in i.value for i in at.info) and not at.exception


def test_bad_input_gets_a_message_and_keeps_the_text():
    at = open_page("mlm.py", "en-fr")
    at.text_area(key="mlm_text").set_value("   ").run()
    assert any("empty" in w.value for w in at.warning) and not at.exception
    heads = [h.value for h in at.header]  # the sections that need no hidden word stay
    assert "2. Both sides, or the left side only" not in heads and "6. Next sentence prediction" in heads
    at.text_area(key="mlm_text").set_value("The zorblax was too [MASK].").run()
    assert any(w.value.startswith(md_text("Unknown to mlm: zorblax")) for w in at.warning) and not at.exception
    long = " ".join(["The dog was tired."] * 40) + " [MASK]"
    at.text_area(key="mlm_text").set_value(long).run()
    assert any("reads at most 128" in e.value for e in at.error) and not at.exception
    assert at.text_area(key="mlm_text").value == long


def test_a_sidebar_sentence_with_a_mask_is_taken_over(ck):
    at = open_page("mlm.py", "mlm", text="The cat was too [mask], so it lay down.")
    assert at.text_area(key="mlm_text").value == "The cat was too [mask], so it lay down."
    ids = mlm.encode_masked(ck.tokenizer, "The cat was too [mask], so it lay down.")
    assert ids.count(MASK) == 1 and f"[MASK] at position {ids.index(MASK)}" in charts(at)


def test_t5_example_is_undone_by_its_target():
    from app.mlm_view import SENTINELS, t5_example
    words = "Thank you for inviting me to your party last week .".split()
    starts = set()
    for seed in range(30):
        inputs, target = t5_example(words, seed)
        fill, k, parts = {}, None, target.split()
        for w in parts:
            if w in SENTINELS:
                k = w
                fill[k] = []
            else:
                fill[k].append(w)
        assert parts[-1] == SENTINELS[len(fill) - 1] and fill[parts[-1]] == []
        restored = [x for w in inputs.split() for x in (fill[w] if w in SENTINELS else [w])]
        assert restored == words
        starts.add(inputs.split().index(SENTINELS[0]))
    assert len(starts) > 3  # the spans fall in different places


def test_bert_writes_and_lm_judges_with_core_numbers(ck):
    """Section 7: the three continuations, the judge's bits per byte charted as core.inference.mlm.can_bert_write
    computes them (lm-tiny writes beside the masked LM, lm judges), and the sentence reading them."""
    from app.mlm_view import writes_reading
    lms = registry.load("lm-tiny"), registry.load("lm")
    at = open_page("mlm.py", "mlm")
    prompt = at.text_input(key="mlm_write_prompt").value
    expect = mlm.can_bert_write(ck, *lms, prompt, n=12, sweeps=3, temperature=0.7, seed=0)
    bars = charts(at)["Judge (lm): bits per byte of each continuation"]["data"][0]
    assert bars["customdata"] == list(mlm.WRITERS)
    assert bars["y"] == pytest.approx([r["judge_bits_per_byte"] for r in expect["rows"]], rel=1e-6)
    shown = [m.value for m in at.metric if m.label == "Judge: bits per byte"]
    assert shown == [f"{r['judge_bits_per_byte']:.3f}" for r in expect["rows"][:3]]
    for row in expect["rows"]:
        assert any(md_text(row["text"].strip()) in m.value for m in at.markdown), row["text"]
    assert any(m.value == md_text(writes_reading(expect)) for m in at.markdown)
    at.slider(key="mlm_write_n").set_value(6)
    at.slider(key="mlm_write_temp").set_value(1.0)
    at.number_input(key="mlm_write_seed").set_value(4).run()
    assert not at.exception and not at.error
    expect = mlm.can_bert_write(ck, *lms, prompt, n=6, sweeps=3, temperature=1.0, seed=4)
    bars = charts(at)["Judge (lm): bits per byte of each continuation"]["data"][0]
    assert bars["y"] == pytest.approx([r["judge_bits_per_byte"] for r in expect["rows"]], rel=1e-6)
    at.text_input(key="mlm_write_prompt").set_value("").run()  # BERT from nothing: still three texts
    assert not at.exception and not at.error
    assert len([m for m in at.metric if m.label == "Judge: bits per byte"]) == 3


def test_bert_writing_is_not_called_gibbs_at_zero_sweeps_and_a_typed_mask_is_refused(ck):
    """QA findings: at 0 sweeps the column still read "BERT, Gibbs" (it is the one-pass fill), and a [MASK] typed in
    the prompt reached BERT as a mask to fill while the judge read it as letters."""
    lms = registry.load("lm-tiny"), registry.load("lm")
    at = open_page("mlm.py", "mlm")
    prompt = at.text_input(key="mlm_write_prompt").value
    at.slider(key="mlm_write_sweeps").set_value(0).run()
    assert not at.exception and not at.error
    bars = charts(at)["Judge (lm): bits per byte of each continuation"]["data"][0]
    assert "BERT, Gibbs" not in bars["customdata"] and bars["customdata"][2] == mlm.ONE_PASS == "BERT, one pass"
    one_pass = mlm.write_gibbs(ck, ck.tokenizer.encode(prompt), 12, sweeps=0, temperature=0.7, seed=0)
    assert mlm.can_bert_write(ck, *lms, prompt, n=12, sweeps=0)["rows"][2]["text"] == one_pass.text
    reading = next(m.value for m in at.markdown if m.value.startswith("The judge needs"))
    assert md_text("its one-pass fill (0 sweeps: no Gibbs sampling)") in reading and "Gibbs text" not in reading
    at.text_input(key="mlm_write_prompt").set_value("The dog saw a [MASK] in the path.").run()
    assert not at.exception
    assert any(e.value.startswith(md_text("The prompt contains [MASK], which a model reads as its special token"))
               for e in at.error), [e.value for e in at.error]
    assert "Judge (lm): bits per byte of each continuation" not in charts(at)
    assert mlm.typed_specials(ck.tokenizer, "a [MASK], an [EOS], 😀 and [CLS]") == ["[MASK]", "[EOS]"]  # no [UNK]
