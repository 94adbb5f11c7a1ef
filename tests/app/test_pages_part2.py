"""Positional encoding, Masking and Layer outputs pages, rendered headless with Streamlit's AppTest
for every bundled model: no exception, figures follow the sentence, mask edits and ablations act."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from apptest import type_sentence

from core.io import checkpoint, registry

ROOT = Path(__file__).resolve().parents[2]
MODELS = registry.bundled()
PAGES = {"positional": "emb_norms", "masking": "p_scores", "layers": "norms"}  # page -> a sentence-dependent figure


def open_page(model: str, page: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app/main.py"), default_timeout=60)
    at.run()
    at.sidebar.selectbox(key="model").set_value(model).run()
    at.switch_page(f"../pages/{page}.py")
    at.run()
    check(at)
    return at


def check(at: AppTest) -> None:
    assert not at.exception, [e.message for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def charts(at: AppTest) -> dict:
    """Plotly figures by widget key (the element id ends with ``-<key>``)."""
    out = {}
    for el in at.get("plotly_chart"):
        out[el.proto.id.split("-", 2)[-1]] = json.loads(el.proto.spec)
    return out


def data(fig: dict) -> list:
    return [{k: trace.get(k) for k in ("x", "y", "z")} for trace in fig["data"]]


def set_text(at: AppTest, text: str) -> None:
    type_sentence(at, text)
    check(at)


def other_sentence(text: str) -> str:
    words = text.split()
    flipped = " ".join(reversed(words))
    return flipped if flipped != text else text + " " + words[0]


def test_models_found():
    assert MODELS, "no bundled models in assets/models"


@pytest.mark.parametrize("page", list(PAGES))
@pytest.mark.parametrize("model", MODELS + ["minilm"])  # minilm: the pretrained encoder-only model
def test_page_renders_and_follows_the_sentence(model, page):
    at = open_page(model, page)
    figs = charts(at)
    assert PAGES[page] in figs, sorted(figs)
    before = data(figs[PAGES[page]])
    set_text(at, other_sentence(at.text_area(key="sentence").value))
    after = data(charts(at)[PAGES[page]])
    assert after != before


@pytest.mark.parametrize("model", MODELS)
def test_positional_checks_hold(model):
    at = open_page(model, "positional")
    metrics = {m.label: m.value for m in at.metric}
    shift = next(v for k, v in metrics.items() if k.startswith("Largest |R_k"))
    assert float(shift) < 1e-5
    assert float(next(v for k, v in metrics.items() if k.startswith("Without positional"))) < 1e-5
    at.slider(key="pe_k").set_value(7).run()
    check(at)
    direct, rotated = (t["y"] for t in charts(at)["pe_shift"]["data"])
    assert max(abs(a - b) for a, b in zip(direct, rotated)) < 1e-5
    # the ALiBi tab states that its bias is Toeplitz (relative positions), and measures it
    toeplitz = next(c.value for c in at.caption if "Toeplitz" in c.value)
    assert "differ by at most 0.0e+00" in toeplitz
    # the sentence read from a later position: unchanged attention exactly where positions are relative
    from core.probes.positions import positional_kinds
    told = next(m.value for m in at.markdown if "read the sentence twice" in m.value)
    relative = positional_kinds()[model] in ("rope", "none")
    assert ("**the same**" in told) == relative and ("**changed**" in told) != relative
    largest = max(next(d.value for d in at.dataframe if "largest |Δ weight|" in d.value)["largest |Δ weight|"])
    assert (largest < 1e-4) == relative, largest


@pytest.mark.parametrize("model", MODELS)
def test_mask_edit_changes_weights(model):
    at = open_page(model, "masking")
    before = charts(at)["p_weights"]["data"][0]["z"]
    q = len(before) - 1  # the last query: it may look at several keys even under a causal mask
    row = before[q]
    j = max(range(len(row)), key=lambda k: row[k] if row[k] is not None else -1)  # the key it looks at most
    editor = at.data_editor[0]
    assert editor.editing_mode == "fixed"
    at.session_state[editor.key] = {"edited_rows": {q: {f"k{j}": False}}, "added_rows": [], "deleted_rows": []}
    at.run()
    check(at)
    figs = charts(at)
    after = figs["p_weights"]["data"][0]["z"]
    assert after != before
    assert after[q][j] == 0.0  # masked: exactly zero
    assert abs(sum(v for v in after[q] if v is not None) - 1) < 1e-5  # the row still sums to 1
    assert figs["rerun_w"]["data"][0]["z"][q][j] == 0.0  # the re-run model obeys the mask too


@pytest.mark.parametrize("model", MODELS)
def test_default_mask_differs_from_the_models_own(model):
    """Opened as is, sections 2-3 show a change: the custom mask starts with the head's busiest key blocked."""
    at = open_page(model, "masking")
    check(at)
    weights = charts(at)["p_weights"]["data"][0]["z"]
    blocked = [j for j in range(len(weights[-1])) if all(row[j] in (0.0, None) for row in weights)]
    assert len(blocked) == 1  # one key column is zero for every query
    change = next(m.value for m in at.metric if m.label == "Largest change of a weight in this head")
    assert float(change) > 0.01


@pytest.mark.parametrize("model", MODELS)
def test_fully_masked_row_is_explained_not_nan(model):
    at = open_page(model, "masking")
    editor = at.data_editor[0]
    n_keys = len(editor.value.columns)
    at.session_state[editor.key] = {"edited_rows": {0: {f"k{j}": False for j in range(n_keys)}},
                                    "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception
    assert any("Every key is masked" in e.value for e in at.error)
    assert any("Not run" in w.value for w in at.warning)
    assert "rerun_w" not in charts(at)


@pytest.mark.parametrize("model", MODELS)
def test_ablation_changes_output(model):
    at = open_page(model, "layers")
    assert "ablation" not in charts(at)
    cfg_model = checkpoint.load(registry.resolve(model)).model
    names, heads = cfg_model.attention_names(), cfg_model.cfg.n_heads
    at.multiselect(key="ablate").set_value([(names[-1], h) for h in range(heads)]).run()
    check(at)
    bars = charts(at)["ablation"]["data"]
    assert bars[0]["y"] != bars[1]["y"]
    tv = next(m.value for m in at.metric if m.label == "Total variation distance")
    assert float(tv) > 0


def test_masking_cells_on_a_projector_an_empty_shorter_sentence_and_the_cheat_text():
    """QA s58: in presentation mode the numbers of section 2's half-width maps overprinted each other on a sentence of
    15 tokens (item 7): they are hidden where a cell of a half-page chart is too narrow (a short sentence keeps them:
    tests/app/test_presentation.py); an empty "shorter sentence" was accepted as an [EOS] alone (item 11); the cheat
    text had doubled parentheses; the padding map's title ran to three lines (a tab the browser sweep never opens)."""
    from app import theme
    at = AppTest.from_file(str(ROOT / "app/main.py"), default_timeout=60)
    for k, v in {"model": "reverse", "present": "1", "text": "1 2 3 4 5 6 7 8 9 1 2 3 4 5"}.items():
        at.query_params[k] = v
    at.run()
    at.switch_page("../pages/masking.py")
    at.run()
    check(at)
    figs = charts(at)
    assert theme.HALF_WIDTH / 16 < theme.MIN_CELL_PX <= theme.PLOT_WIDTH / 16  # hidden in half a page only
    assert 11 <= len(figs["p_sum"]["data"][0]["z"][0]) <= 16  # values asked for (T ≤ 16), too narrow at half width
    assert all(figs[k]["data"][0]["texttemplate"] == "" for k in ("p_scores", "p_sum", "p_weights"))
    assert len(figs["m_pad"]["layout"]["title"]["text"].split("<br>")) <= theme.MAX_TITLE_LINES  # was 3 (a tab)
    text = " ".join(m.value for m in at.markdown)
    assert "own translation; type a Target in the sidebar to change it)" in text and "change it))" not in text
    next(t for t in at.text_input if t.label == "A shorter sentence for the same batch").set_value("  ").run()
    check(at)
    assert "Type a shorter sentence in the box: it is empty." in [i.value for i in at.info]
    assert "m_pad" not in charts(at)
