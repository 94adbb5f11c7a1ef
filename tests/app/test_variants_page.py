"""AppTest: the heads / GQA / speculative-decoding page for a translation model and the LM."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from apptest import open_page

from app.text import md
from core.inference.runner import run
from core.io import registry
from core.probes import compress as C

pytestmark = pytest.mark.usefixtures("one_thread")


def variants_page(model: str) -> AppTest:
    return open_page("variants.py", model, timeout=240)


def titles(at) -> list[str]:
    return [json.loads(el.proto.spec)["layout"]["title"]["text"] for el in at.get("plotly_chart")]


def gqa_heads(at) -> list[str]:
    """The column names of the GQA page's grid of heads."""
    spec = next(json.loads(el.proto.spec) for el in at.get("plotly_chart")
                if "K/V head" in json.loads(el.proto.spec)["layout"]["title"]["text"])
    return spec["layout"]["xaxis"]["ticktext"]


TRANSLATOR = next(n for n in ("en-fr-tiny", "en-fr") if n in registry.bundled())  # the small bundled translator


@pytest.mark.parametrize("model", [TRANSLATOR, "lm-tiny", "mlm"])
def test_page_renders_all_three_sections(model):
    at = variants_page(model)
    names = titles(at)
    for start in ("Margin drop with this head alone", "Pruning curve: loss", "Pruning curve: quality",
                  "Held-out loss vs weights pruned", "Quality vs weights pruned", "Share of each matrix pruned at 50 %",
                  "Layer 0: every query head and its K/V head", "Per target pass"):
        assert any(t.startswith(start) for t in names), (start, names)
    assert {"H0 · K/V 0", "H3 · K/V 1"} <= set(gqa_heads(at))
    assert any("identical to the target's greedy decoding" in s.value for s in at.success)
    table = next(d.value for d in at.dataframe if "n_kv_heads" in d.value.columns)
    assert list(table["n_kv_heads"]) == [4, 2, 1]
    assert table["KV cache bytes / token (fp32)"].iloc[0] == 2 * table["KV cache bytes / token (fp32)"].iloc[1]
    if model == TRANSLATOR:  # translation: exact match and pronoun accuracy along the pruning curve
        quality = next(json.loads(el.proto.spec) for el in at.get("plotly_chart")
                       if json.loads(el.proto.spec)["layout"]["title"]["text"].startswith("Pruning curve: quality"))
        assert {d["name"] for d in quality["data"]} >= {"exact match (greedy)", "pronoun accuracy"}
    unit = {TRANSLATOR: "sentence pairs", "lm-tiny": "windows", "mlm": "lines, 15 % of their tokens hidden"}[model]
    assert any(c.value.startswith(f"Evaluation: 32 held-out {unit};") for c in at.caption)
    pruned_weights_section(at, model)
    at.radio(key="gqa_g").set_value(1).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "H3 · K/V 0" in gqa_heads(at)
    at.select_slider(key="spec_k").set_value(1).run()
    assert not at.exception and not at.error
    assert any("identical" in s.value for s in at.success)


def pruned_weights_section(at, model):
    """The weight-pruning section: its curve is the model's own (compress.sparsity_curve on the same batch), the
    sentence table has one row per level, and unpruned it reads the sentence as the page's model does."""
    ck = registry.load(model)
    curve = next(json.loads(el.proto.spec) for el in at.get("plotly_chart")
                 if json.loads(el.proto.spec)["layout"]["title"]["text"].startswith("Held-out loss vs weights"))
    shipped = C.sparsity_curve(ck, levels=(0.0, 0.9))
    assert curve["data"][0]["x"] == [0, 10, 20, 30, 40, 50, 60, 70, 80, 90]
    assert [curve["data"][0]["y"][0], curve["data"][0]["y"][-1]] == pytest.approx([p.loss for p in shipped], abs=1e-4)
    text = next(w for w in [*at.text_area, *at.text_input] if w.key == "sentence").value
    assert not any("weights pruned" in t.value.columns for t in at.table)  # read only on request: ten runs
    at.toggle(key="wprune_read").set_value(True).run()
    table = next(t.value for t in at.table if "weights pruned" in t.value.columns)
    assert list(table["weights pruned"]) == [f"{x} %" for x in range(0, 100, 10)]
    first = table["what the model makes of your text"].iloc[0]
    if model == TRANSLATOR:
        assert first == md(run(ck, text).output)
    if model == "mlm":  # the typed [MASK] filled in
        assert "[MASK]" in text and "MASK" not in first and first.startswith("The ")
    assert first == md(C.read_with(ck, ck.model, text))
    at.select_slider(key="wprune_level").set_value(90).run()
    assert "Share of each matrix pruned at 90 %" in titles(at)


def test_speculative_panel_on_a_translator_page_prompts_the_lm_and_generates():
    """The sidebar holds a sentence to translate, which ends with a full stop: the English lm would end it at once.
    The panel asks for its own prompt and generates."""
    at = variants_page(TRANSLATOR)
    assert at.text_input(key="spec_prompt").value
    generated = next(m.value for m in at.metric if m.label == "Tokens generated")
    assert int(generated) > 0


def test_speculative_panel_says_why_when_nothing_is_generated():
    # a sentence after which the shipped lm's first choice is the end of the text, found from the model itself (which
    # closing sentence stops it depends on what it read)
    from core.inference.decoding import generate
    ck = registry.load("lm")
    closing = ("They were happy.", "Thank you.", "That is all.", "The end.", "See also the manual.")
    stops = [t for t in closing if not generate(ck.model, prompt=ck.tokenizer.encode(t), max_new=1).ids]
    assert stops, "none of the closing sentences makes the lm stop at once"
    at = open_page("variants.py", "lm", timeout=240, text=stops[0])
    assert any("Nothing was generated" in i.value and "final full stop" in i.value for i in at.info)
    assert not [m for m in at.metric if m.label in ("Tokens generated", "Draft tokens accepted")]
    assert at.button(key="spec_time").disabled


def test_a_synthetic_model_whose_tokenizer_lacks_its_symbols_is_named_not_a_traceback(tmp_path, monkeypatch):
    """Issue 35 item 8: a checkpoint that says it learned ``copy`` with a tokenizer of other words (here the copy
    model's own, its letters renamed) broke /variants with a TypeError; now the page says what the model lacks and
    draws what needs no held-out sequences (the GQA table)."""
    import shutil
    monkeypatch.setenv("ATTENTION_LAB_DATA", str(tmp_path))
    folder = registry.user_dir() / "copy-other-words"
    shutil.copytree(registry.BUNDLED / "copy", folder)
    tok = json.loads((folder / "tokenizer.json").read_text())
    tok["model"]["vocab"] = {k.replace("▁", "▁x") if len(k) == 2 and k[1].isalpha() else k: v
                             for k, v in tok["model"]["vocab"].items()}
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    at = open_page("variants.py", "copy-other-words", timeout=240)
    said = " ".join(i.value for i in at.info).replace("\\", "")  # the escaper's backslashes
    assert "lacks 10 of the 20 symbols of the copy task (a b c d e f g h i j)" in said, said
    assert any("n_kv_heads" in d.value.columns for d in at.dataframe)


def test_sampling_mode_shows_the_samplers_own_acceptance_probabilities_and_first_token_check():
    """Speculative sampling on the page: the table's min(1, p/q) are those speculative_sample computes for the same
    prompt, k, length, temperature and seed; the first-token histograms are first_token_check's."""
    from core.io.budget import max_positions
    from core.variants import speculative as S
    at = variants_page("lm-tiny")
    at.radio(key="spec_mode").set_value("Sampling").run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    at.slider(key="spec_temp").set_value(0.8).run()
    at.number_input(key="spec_seed").set_value(7).run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    assert not any("identical to the target's greedy decoding" in s.value for s in at.success)  # greedy's panel
    ck = registry.load("lm-tiny")
    text = next(w for w in [*at.text_area, *at.text_input] if w.key == "sentence").value
    prompt = ck.tokenizer.encode(text)[: max_positions(ck.model) - 2]
    draft = S.truncated_draft(ck.model, 1)
    res = S.speculative_sample(ck.model, draft, prompt=prompt, k=4, max_new=32, temperature=0.8, seed=7)
    assert res.proposed > 0
    table = next(d.value for d in at.dataframe if "min(1, p/q)" in d.value.columns)
    assert list(table["min(1, p/q)"]) == pytest.approx([a for s in res.steps for a in s.accept_prob], abs=1e-9)
    assert list(table["proposal"]) == [t for s in res.steps for t in ck.tokenizer.display(s.proposed)]
    assert (table["verdict"] == "kept").sum() == res.accepted
    kept = next(m.value for m in at.metric if m.label == "Proposals kept")
    assert kept == f"{res.acceptance_rate:.0%}"
    assert int(next(m.value for m in at.metric if m.label == "Tokens generated")) == len(res.ids)
    dist = next(json.loads(el.proto.spec) for el in at.get("plotly_chart")
                if json.loads(el.proto.spec)["layout"]["title"]["text"].startswith("First token: 500 draws"))
    check = S.first_token_check(ck.model, draft, prompt=prompt, n=500, temperature=0.8, seed=7)
    bars = {d["name"]: d["y"] for d in dist["data"]}
    top = check["p"].argsort(descending=True)[:8]
    assert bars["speculative ×500"][:8] == pytest.approx((check["spec"][top].double() / 500).tolist(), abs=1e-9)
    assert bars["target sampling ×500"][:8] == pytest.approx((check["plain"][top].double() / 500).tolist(), abs=1e-9)
    assert sum(bars["speculative ×500"]) == pytest.approx(1.0)
    assert any(f"**{check['tv_spec_plain']:.3f}**" in m.value for m in at.markdown)


def test_plain_decoding_passes_count_the_end_of_text_only_when_it_was_chosen():
    """QA finding: the page said plain decoding takes tokens + 1 passes also when the token limit, not the end of
    text, stopped it. A pass chooses one token; generate() records one step per pass."""
    from app import variants_view as V
    from core.inference.decoding import generate
    ck = registry.load("lm")
    for text, max_new in (("The function returns a list of the values", 8), ("The function returns", 3)):
        prompt = ck.tokenizer.encode(text)
        g = generate(ck.model, prompt=prompt, max_new=max_new)
        assert V.plain_passes(ck, prompt, len(g.ids), max_new) == len(g.steps)
    assert V.plain_passes(ck, prompt, 3, 3) == 3  # cut by the limit: no pass for an end of text


def test_on_a_language_model_page_the_panel_neither_repeats_notices_nor_continues_nothing():
    """QA findings: with lm-tiny the speculative panel repeated the page's notices, and with the sentence emptied
    it still generated from nothing."""
    from apptest import type_sentence
    at = type_sentence(variants_page("lm-tiny"), "The dog saw the zorblat.")
    warnings = [w.value for w in at.warning]
    assert warnings and len(warnings) == len(set(warnings)), warnings
    at.radio(key="spec_mode").set_value("Sampling").run()
    warnings = [w.value for w in at.warning]
    assert len(warnings) == len(set(warnings)), warnings
    at = type_sentence(at, "   ")
    assert any(i.value.startswith("Type a prompt first") for i in at.info)
    assert not any(t.startswith("Per target pass") for t in titles(at))


def test_each_verification_mode_says_what_it_does_and_a_full_window_is_explained():
    """QA findings: the panel described greedy verification only (and in Sampling mode too), and a prompt that left
    room for one new token gave "Tokens generated 1" with nothing saying why."""
    from apptest import type_sentence
    from app import variants_view as V
    from core.io.budget import max_positions
    at = variants_page("lm-tiny")
    greedy = [m.value for m in at.markdown if m.value.startswith("Greedy verification")]
    assert greedy and "argmax" in greedy[0] and "exactly the target's greedy decoding" in greedy[0]
    long = " ".join(["The dog saw a sheep in the path"] * 40)
    at = type_sentence(at, long)
    ck = registry.load("lm-tiny")
    n, total = max_positions(ck.model), len(ck.tokenizer.encode(long))
    said = V.window_notice(ck, long, 32, "lm-tiny")
    assert said == (f"The prompt uses {n - 1} of lm-tiny's {n} positions ([BOS] and the first {n - 2} of its "
                    f"{total} tokens): only 1 new token fits, not the 32 asked for. Shorten the prompt to let it "
                    "write more.")
    assert md(said) in [w.value for w in at.warning]
    assert next(m.value for m in at.metric if m.label == "Tokens generated") == "1"
    at.radio(key="spec_mode").set_value("Sampling").run()
    assert not any(m.value.startswith("Greedy verification") for m in at.markdown)
    assert any(m.value.startswith("Sampling at temperature") for m in at.markdown)
    assert md(said) in [w.value for w in at.warning]
    assert V.window_notice(ck, "The dog saw a sheep", 32, "lm-tiny") == ""  # everything fits: nothing to say
    prompt = " ".join(["sheep"] * (n - 11))  # one token a word: [BOS] and the prompt leave 10 positions
    assert len(ck.tokenizer.encode(prompt)) == n - 11
    assert V.window_notice(ck, prompt, 32, "lm-tiny") == (
        f"The prompt uses {n - 10} of lm-tiny's {n} positions ([BOS] included): only 10 new tokens fit, not the 32 "
        "asked for. Shorten the prompt to let it write more.")
