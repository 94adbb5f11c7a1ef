"""AppTest: the heads / GQA / speculative-decoding page for a translation model and the LM."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from apptest import open_page

from core.io import registry

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
    at.radio(key="gqa_g").set_value(1).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "H3 · K/V 0" in gqa_heads(at)
    at.select_slider(key="spec_k").set_value(1).run()
    assert not at.exception and not at.error
    assert any("identical" in s.value for s in at.success)


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
