"""AppTest: pages name the words a model never saw and mark its output instead of presenting it as a translation.

The unknown words are made up ("zorblax", "blorptastic"), so no training corpus, small or broad, holds them."""
import pytest

from apptest import open_page, type_sentence

from app.text import md as md_text
from core.inference.coverage import OUTSIDE

pytestmark = pytest.mark.usefixtures("one_thread")

OUT = "The animal didn't cross the zorblax because it was too blorptastic."
SEED = "The animal didn't cross the street because it was too tired."


def warnings(at) -> list[str]:
    return [w.value for w in at.warning]


def unknown_named(at, model="en-fr") -> bool:
    return any(w.startswith(md_text(f"Unknown to {model}: zorblax, blorptastic.")) for w in warnings(at))


def test_attention_page_names_unknown_words_and_marks_the_output():
    at = open_page("attention.py", "en-fr", text=OUT)
    assert unknown_named(at), warnings(at)
    [out] = [m.value for m in at.markdown if m.value.startswith("**Model output")]
    assert out.startswith(f"**Model output** — :red[**{OUTSIDE}**]: ")
    type_sentence(at, SEED)
    assert not any("Unknown to" in w for w in warnings(at))
    [out] = [m.value for m in at.markdown if m.value.startswith("**Model output")]
    assert out.startswith("**Model output:** ") and OUTSIDE not in out


def test_attention_page_says_a_translation_is_probably_wrong_instead_of_naming_shapes():
    """The shipped en-fr read human translations and carries a calibrated confidence (meta.quality): a sentence of
    known words that it translates badly gets the "probably not a correct translation" notice (its own measured
    confidence), not the old "none of the 56 shapes" one; the famous sentence gets neither."""
    at = open_page("attention.py", "en-fr", text="It is raining today.")
    unsure = [w for w in warnings(at) if w.startswith("Probably not a correct translation")]
    from core.io import registry
    flags = f"flags {registry.load('en-fr').meta['quality']['flag_wrong']:.0%}"  # the calibration's own figure
    assert len(unsure) == 1 and flags in unsure[0].replace("\\", ""), warnings(at)
    assert not any("shapes" in w or "Unknown to" in w for w in warnings(at)), warnings(at)
    [out] = [m.value for m in at.markdown if m.value.startswith("**Model output")]
    assert out.startswith("**Model output:** ")  # every word known: shown as its output, the notice says the rest
    type_sentence(at, SEED)
    assert not any("Probably not" in w or "shapes" in w for w in warnings(at)), warnings(at)


def test_what_a_user_typed_is_shown_as_text_not_markdown():
    """en-fr-tiny's vocabulary lacks * [ < (the shipped en-fr learned them from real text), so its [UNK] notice
    shows them: escaped, drawn as typed."""
    at = open_page("attention.py", "en-fr-tiny", text="The **zorblax** saw [a link](http://x) <b>it</b>.")
    note = next(w for w in warnings(at) if w.startswith("Unknown to en\\-fr\\-tiny"))
    assert "zorblax" in note and "\\*" not in note  # letter words only: the word, not its stars
    unk = next(w for w in warnings(at) if "[UNK]" in w.replace("\\", ""))
    assert "\\*" in unk and "\\[" in unk and "\\<" in unk and "<b>" not in unk  # escaped, drawn as typed


def test_decode_page_names_unknown_words_and_marks_the_output():
    at = open_page("decode.py", "en-fr", text=OUT)
    assert unknown_named(at), warnings(at)
    at.button[1].click().run()  # run to end
    marked = [m.value for m in at.markdown if m.value.startswith("**Output so far** — :red[")]
    assert marked and OUTSIDE in marked[0]
    assert not at.success  # no "Finished" presented as a translation


def test_coreference_page_says_the_sentence_is_outside_instead_of_probing_it():
    at = open_page("coreference.py", "en-fr", timeout=180)
    at.text_input[0].set_value(OUT).run()
    assert any("Unknown to en-fr: zorblax, blorptastic" in w.replace("\\", "") and "mean nothing" in w
               for w in warnings(at)), warnings(at)
    assert not at.get("plotly_chart")  # no grid presented as meaningful


def test_lesson_says_the_sentence_is_outside_what_the_model_knows():
    at = open_page("lesson.py", "en-fr", text=OUT)
    assert any("outside what en-fr was trained on" in w.replace("\\", "") for w in warnings(at)), warnings(at)
    at.session_state["lesson_step"] = 7  # step 8: the output
    at.run()
    assert any(OUTSIDE in m.value and "zorblax" in m.value for m in at.markdown)
