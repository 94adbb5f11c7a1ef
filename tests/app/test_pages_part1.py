"""AppTest: the shell and the part-1 pages render for every bundled model and follow the sentence and URL."""
import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from apptest import type_sentence

from core.io import registry

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["home.py", "attention.py", "qk.py", "bertviz_views.py", "decode.py"]


def app(**params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=90)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def open_page(at: AppTest, page: str) -> AppTest:
    at.switch_page(f"../pages/{page}")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def figures(at):
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def heatmap_ticks(at):
    fig = figures(at)[0]
    return fig["layout"]["xaxis"]["ticktext"]


@pytest.mark.parametrize("model", registry.bundled() + ["minilm"])  # mlm, minilm: the encoder-only models
@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_for_every_bundled_model(model, page):
    at = app(model=model)
    assert at.sidebar.selectbox(key="model").value == model
    open_page(at, page)
    assert not at.error, [e.value for e in at.error]
    if page == "decode.py" and model in ("minilm", "mlm"):  # encoder-only: says so instead of decoding
        assert any("does not generate" in i.value for i in at.info)
        return
    if page == "decode.py":
        at.button[0].click().run()  # next step
        assert not at.exception
    if page == "bertviz_views.py":
        assert at.get("iframe"), "bertviz view not embedded"
    elif page != "home.py":
        assert at.get("plotly_chart"), f"{page} drew no figure"


def test_changing_the_sentence_changes_the_figure():
    at = open_page(app(model="reverse"), "attention.py")
    type_sentence(at, "1 2 3 4 5")
    first = heatmap_ticks(at)
    type_sentence(at, "a b c d e f g")
    second = heatmap_ticks(at)
    assert first[:5] == ["1", "2", "3", "4", "5"]
    assert second[:7] == list("abcdefg")
    assert first != second


def test_url_parameters_restore_the_view():
    at = open_page(app(model="reverse", text="4 5 6 7 8", layer="1", head="2"), "attention.py")
    assert at.text_area(key="sentence").value == "4 5 6 7 8"
    boxes = {b.label: b.value for b in at.selectbox}
    assert boxes["Layer"] == 1 and boxes["Head"] == 2
    fig = figures(at)[0]
    assert "Layer 1, head 2" in fig["layout"]["title"]["text"]
    assert at.query_params["layer"] == ["1"] or at.query_params["layer"] == "1"


def test_invalid_url_parameters_get_a_message_and_defaults():
    at = app(model="no-such-model", layer="99", head="-1", text="1 2 3 4")
    assert any("model" in w.value for w in at.warning)  # shown on the first page loaded
    open_page(at, "attention.py")
    warnings = " ".join(w.value for w in at.warning)
    assert "layer" in warnings and "head" in warnings
    assert at.sidebar.selectbox(key="model").value in registry.bundled()
    assert figures(at)


def test_empty_sentence_gets_a_message_not_a_traceback():
    at = open_page(app(model="reverse"), "attention.py")
    type_sentence(at, "   ")
    assert not at.exception
    assert any("empty" in i.value for i in at.info)


def test_script_in_the_sentence_is_escaped_in_figures():
    at = open_page(app(model="en-fr" if "en-fr" in registry.bundled() else "reverse"), "attention.py")
    type_sentence(at, '</script><img src=x onerror="window.__pwned=1">')
    assert not at.exception
    spec = json.dumps(figures(at))
    assert "<img" not in spec


def test_qk_walkthrough_matches_the_trace():
    at = open_page(app(model="reverse", text="1 2 3 4 5"), "qk.py")
    caption = next(c.value for c in at.main.caption if "max |difference|" in c.value)
    diff = float(caption.split("= ")[-1].rstrip("."))
    assert diff < 1e-5
    table = at.dataframe[0].value
    assert abs(table["softmax weight"].sum() - 1.0) < 1e-5
    # 6. without the 1/√d_k: the same dot products (plus bias and mask) through softmax, and how sharp each is
    import torch

    def vec(values):
        return torch.tensor([float(v) for v in values], dtype=torch.float64)

    d_k = int(next(c for c in table.columns if c.startswith("÷√")).split("√")[1].split(" ")[0])
    mask = vec(float("-inf") if m == "−∞" else 0.0 for m in table["mask M"])
    unscaled = torch.softmax(vec(table["q·k"]) + vec(table["bias (ALiBi)"]) + mask, -1)
    bars = next(f for f in figures(at) if f["layout"]["title"]["text"].startswith("This row's softmax"))
    assert [t["name"] for t in bars["data"]] == [f"÷√{d_k} (the model)", "not divided"]
    assert torch.allclose(vec(bars["data"][0]["y"]), vec(table["softmax weight"]), atol=1e-5)
    assert torch.allclose(vec(bars["data"][1]["y"]), unscaled, atol=1e-5)
    sharp = at.dataframe[1].value
    assert abs(sharp["largest weight"][1] - float(unscaled.max())) < 1e-5
    variance = next(f for f in figures(at) if f["layout"]["title"]["text"].startswith("Variance of the scores"))
    assert variance["layout"]["xaxis"]["type"] == "log" and variance["data"][0]["x"][0] == 4
    # 7. the Hopfield update starts at this row: its first softmax is the table's weights (masked keys blank)
    hop = next(f for f in figures(at) if f["layout"]["title"]["text"].startswith("β = 1/√"))["data"][0]["z"][0]
    assert torch.allclose(vec(0.0 if v is None else v for v in hop), vec(table["softmax weight"]), atol=1e-5)


def test_the_attention_page_measures_how_one_sided_the_map_is():
    at = open_page(app(model="en-fr"), "attention.py")
    told = next(c.value for c in at.main.caption if c.value.startswith("Not symmetric"))
    z = figures(at)[0]["data"][0]["z"]
    ticks = heatmap_ticks(at)
    a, b = re.findall(r"“([^”]+)” reads", told)
    w_ab, w_ba = (float(w) for w in re.findall(r"with (?:weight )?([0-9.]+)", told))
    i, j = ticks.index(a), ticks.index(b)
    assert abs(z[i][j] - w_ab) < 5e-4 and abs(z[j][i] - w_ba) < 5e-4
    assert w_ab - w_ba == pytest.approx(max(z[p][q] - z[q][p] for p in range(len(z)) for q in range(len(z))), abs=1e-3)


@pytest.mark.parametrize("text,doubtful", [("animal", True),
                                           ("The animal didn't cross the street because it was too tired.", False)])
def test_decode_marks_a_translation_the_model_is_unsure_of_as_the_attention_page_does(text, doubtful):
    """The notice a page shows under a translation below the model's calibrated confidence line (one wording, one
    score: core.inference.quality), at the end of the step-by-step decode too."""
    at = open_page(app(model="en-fr", text=text), "decode.py")
    next(b for b in at.button if b.label == "Run to end").click().run()
    assert not at.exception
    unsure = [w.value for w in at.warning if w.value.startswith("Finished:")]
    assert bool(unsure) == doubtful and bool(at.success) != doubtful
    other = open_page(app(model="en-fr", text=text), "attention.py")
    said = [w.value for w in other.main.warning if w.value.startswith("Probably not a correct translation")]
    assert bool(said) == doubtful
    if doubtful:
        assert said[0] in unsure[0]  # the same sentence, the same score


def test_decode_candidates_that_would_look_alike_keep_their_word_marker():
    from app.decode_view import candidate_names
    tok = registry.load("en-fr").tokenizer
    start, inside, alone = (tok.token_to_id(t) for t in ("▁3", "3", "▁"))
    assert candidate_names(tok, [start, inside]) == ["▁3", "3"]
    assert candidate_names(tok, [start]) == ["3"]  # alone it reads as the figures show tokens
    assert candidate_names(tok, [alone]) == ["▁ (a new word begins)"]


def test_switching_model_keeps_an_example_sentence_the_new_model_can_read():
    """A teacher compares models on the classic sentence: it stays for lm (which reads any English); it gives way to
    the new model's own example where the model cannot read it (reverse: digits only; en-fr: an mlm [MASK]
    sentence); a typed sentence always stays."""
    from app.shell import PRESETS
    classic = "The animal didn't cross the street because it was too tired."
    at = open_page(app(model="en-fr", text=classic), "attention.py")
    at.sidebar.selectbox(key="model").set_value("lm").run()
    assert at.session_state["text"] == classic
    at.sidebar.selectbox(key="model").set_value("reverse").run()
    assert at.session_state["text"] == PRESETS["reverse"][0]
    at = open_page(app(model="mlm", text=PRESETS["mlm"][0]), "attention.py")
    at.sidebar.selectbox(key="model").set_value("en-fr").run()
    assert at.session_state["text"] == PRESETS["en-fr"][0]
    at = open_page(app(model="en-fr", text="My own words here."), "attention.py")
    at.sidebar.selectbox(key="model").set_value("reverse").run()
    assert at.session_state["text"] == "My own words here."


def test_decode_steps_advance_and_run_to_end():
    at = open_page(app(model="reverse", text="1 2 3 4 5 6"), "decode.py")
    # issue 34 item 6: the page opens on the first step, with the source in the main area
    assert "step 1 of" in at.get("progress")[0].proto.text and at.get("plotly_chart")
    assert any(m.value.startswith("**Source** (7 tokens): 1 2 3 4 5 6") for m in at.main.markdown)
    assert any(c.value.startswith("Probabilities: ") for c in at.main.caption)
    at.button[0].click().run()
    assert "step 2 of" in at.get("progress")[0].proto.text
    at.button[2].click().run()
    assert "step 1 of" in at.get("progress")[0].proto.text
    at.button[1].click().run()
    done = [s.value for s in at.success]
    assert done and "6 5 4 3 2 1" in done[0]


@pytest.mark.parametrize("page", ["decode.py", "masking.py", "lesson.py"])
def test_every_page_keeps_model_and_sentence_in_its_link(page):
    at = open_page(app(model="reverse"), page)
    type_sentence(at, "a b c")
    assert not at.exception
    params = {k: at.query_params[k] for k in at.query_params}
    assert params["model"] in ("reverse", ["reverse"]) and params["text"] in ("a b c", ["a b c"]), params


def test_one_sentence_per_session_in_the_main_area_across_pages():
    """Issue 34 item 1: the Sentence box sits in the main area (not the sidebar) of every page that reads it; what is
    typed on one page is the sentence of every other, also across a page without the box (Training), and the link
    carries it; in presentation mode the box is one line high."""
    at = open_page(app(model="reverse"), "attention.py")
    assert not [w for w in at.sidebar.text_area if w.label == "Sentence"]
    type_sentence(at, "7 7 3 1")
    next(b for b in at.selectbox if b.label == "Layer").set_value(1).run()
    assert {"kind", "layer", "head"} <= set(at.query_params) and at.query_params["layer"] in ("1", ["1"])
    at.switch_page("../pages/training.py")
    at.run()
    assert not [w for w in [*at.text_area, *at.text_input] if w.key == "sentence"]
    # QA s58 item 14: another page's parameters left the link (they stayed, and a shared link carried them)
    assert not {"kind", "layer", "head"} & set(at.query_params), dict(at.query_params)
    at.switch_page("../pages/masking.py")
    at.run()
    assert at.text_area(key="sentence").value == "7 7 3 1" and at.query_params["text"] in ("7 7 3 1", ["7 7 3 1"])
    assert heatmap_ticks(at)[:4] == ["7", "7", "3", "1"]
    open_page(at, "attention.py")  # back on the Attention page: its layer returns, to the page and to its link
    assert next(b for b in at.selectbox if b.label == "Layer").value == 1 and at.query_params["layer"] in ("1", ["1"])
    at = open_page(app(model="reverse", present="1", text="2 4 6"), "attention.py")
    assert at.text_input(key="sentence").value == "2 4 6" and not [w for w in at.text_area if w.key == "sentence"]
