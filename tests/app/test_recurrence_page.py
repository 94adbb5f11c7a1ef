"""AppTest: the Transformer-XL & training-stability page."""
import json
import math
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.text import md

ROOT = Path(__file__).resolve().parents[2]
HEADING_CHARS = 55  # QA2 saw headings of 58 and 62 characters wrap to three lines at 1280 px


pytestmark = pytest.mark.usefixtures("one_thread")


def page(model="lm") -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
    at.query_params["model"] = model
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page("../pages/recurrence.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


def charts(at) -> dict:
    """Chart by title, its line breaks read as spaces (app.theme.title_layout wraps long titles)."""
    return {json.loads(el.proto.spec)["layout"]["title"]["text"].replace("<br>", " "): json.loads(el.proto.spec)
            for el in at.get("plotly_chart")}


FAKE = {"config": {"task": "reverse", "lr": 0.002, "layers": 4, "d_model": 64, "batch_size": 32, "warmup": 100},
        "curves": {"post-LN, warmup": [3.0, 2.0], "post-LN, no warmup": [3.0, 2.9],
                   "pre-LN, warmup": [3.0, 2.1], "pre-LN, no warmup": [3.0, 1.9]},
        "final": {"post-LN, warmup": 2.0, "post-LN, no warmup": 2.9, "pre-LN, warmup": 2.1, "pre-LN, no warmup": 1.9},
        "metrics": {k: {"exact_match": 0.5} for k in ("post-LN, warmup", "post-LN, no warmup", "pre-LN, warmup",
                                                    "pre-LN, no warmup")},
        "seconds": 1.0, "command": "python -m core.training.stability --out x.json"}


def test_page_shows_memory_attention_losses_and_stability_curves(tmp_path, monkeypatch):
    path = tmp_path / "curves.json"
    path.write_text(json.dumps(FAKE))
    monkeypatch.setenv("ATTENTION_STABILITY_JSON", str(path))
    at = page("en-fr")
    titles = list(charts(at))
    for start in ("Last layer", "Share of each query", "Validation loss by position", "Training loss, reverse"):
        assert any(t.startswith(start) for t in titles), (start, titles)
    att = next(f for t, f in charts(at).items() if t.startswith("Last layer"))
    assert any("(mem)" in k for k in att["layout"]["xaxis"]["ticktext"])  # memory columns are labelled
    assert att["layout"]["shapes"]  # and shaded
    before = att["data"][0]["z"]
    at.slider(key="xl_split").set_value(3).run()
    assert not at.exception, [e.value for e in at.exception]
    after = next(f for t, f in charts(at).items() if t.startswith("Last layer"))["data"][0]["z"]
    assert after != before
    assert len(at.dataframe[0].value) == 4
    assert any("python -m core.training.stability --out x.json" in c.value for c in at.caption)  # shown as typed
    # the page reads its own four runs, whatever they say (here: pre-LN worse with warmup, warmup no help to it)
    told = next(m.value for m in at.markdown if m.value.startswith("**What these runs show.**"))
    assert "Pre-LN did not end lower than post-LN in both settings (2.10 against 2.00 with warmup, 1.90 against " \
           "2.90 without): not the paper's finding." in told
    assert "Warmup did not help pre-LN here (2.10 with, 1.90 without), as the paper finds." in told


def test_without_curves_the_page_offers_a_quick_run(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_STABILITY_JSON", str(tmp_path / "missing.json"))
    at = page("lm")
    stability = "Training loss, reverse task"  # not the activation section's "Training loss, mean of 50 steps"
    assert not any(t.startswith(stability) for t in charts(at))
    at.button(key="stability_run").click().run()  # 4 × 60 steps of a 2+2-layer d=32 model: a few seconds
    assert not at.exception, [e.value for e in at.exception]
    assert any(t.startswith(stability) for t in charts(at))
    assert any("quick run in the app" in c.value for c in at.caption)


def test_missing_xl_model_is_explained(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_XL_MODEL", str(tmp_path / "none"))
    monkeypatch.setenv("ATTENTION_STABILITY_JSON", str(tmp_path / "missing.json"))
    at = page("lm")
    assert any("python -m core.variants.xl" in i.value for i in at.info)


def test_bundled_model_and_precomputed_curves_render():
    at = page("lm")
    titles = list(charts(at))
    # at most two lines at 1280 px beside the sidebar (QA2: the Xiong et al. heading wrapped to three)
    assert all(len(h.value) <= HEADING_CHARS for h in at.header), [h.value for h in at.header]
    assert any(t.startswith("Validation loss by position") for t in titles)
    # how far back the memory reaches: nothing before layers × mem_len, measured on the user's text
    reach = charts(at)["Effect on the last segment, per token replaced"]
    effect = reach["data"][0]["y"]
    told = next(c.value for c in at.caption if "change nothing at all" in c.value)
    first = int(re.search(r"Tokens before position (\d+)", told).group(1))
    assert first == 32 and max(effect[:first]) == 0.0 and min(effect[first:]) > 0
    next(b for b in at.button if b.key == "xl_time").click().run()
    timed = next(m.value for m in at.markdown if m.value.startswith("With the memory"))
    assert "(96 tokens through the model, each once)" in timed and "(2,576 tokens)" in timed
    if (ROOT / "assets" / "stability" / "curves.json").exists():
        assert any(t.startswith("Training loss") for t in titles)
        assert len(at.dataframe[0].value) == 4
    if (ROOT / "assets" / "recurrence" / "results.json").exists():  # recurrence vs attention section
        rec = [f for t, f in charts(at).items() if " vs distance, " in t]
        assert len(rec) == 2 and all(len(f["data"]) == 5 for f in rec)  # with the GRU and the additive LSTM
        assert any("core.variants.recurrence" in c.value and "parameters" in c.value for c in at.caption)
    # activation and checkpoint averaging: the curves are the shipped losses' running means, the table their scores
    from app import choices_view
    res = choices_view.results()
    drawn = charts(at)[f"Training loss, mean of {choices_view.SMOOTH} steps"]
    start = res["config"]["steps"] // 4
    for trace, run in zip(drawn["data"], res["runs"]):
        assert trace["name"] == run["activation"]
        want = choices_view.running_mean(run["train_loss"], choices_view.SMOOTH)[start:]
        assert trace["y"] == pytest.approx(want) and trace["x"][0] == start + 1
    table = next(d.value for d in at.dataframe if "last weights" in d.value.columns)
    assert list(table["last weights"]) == [round(r["held_out"]["last weights"], 4) for r in res["runs"]]
    assert any(m.value == choices_view.reading(res) for m in at.markdown)


def test_a_french_sentence_read_by_the_transformer_xl_is_named_as_french():
    """QA finding: the Transformer-XL reads the shared sentence with its own tokenizer, and the page said nothing
    about a French one (the other pages name it first among their notices)."""
    from apptest import type_sentence
    at = type_sentence(page("en-fr"), "Le chat est sur la table et il dort.")
    assert not at.exception, [e.value for e in at.exception]
    said = [w.value for w in at.warning if "This looks like French" in w.value]
    assert len(said) == 1 and md("this Transformer-XL reads English") in said[0], [w.value for w in at.warning]
    at = type_sentence(at, "The dog saw a sheep in the path and it ran.")
    assert not any("This looks like" in w.value for w in at.warning)


def test_the_three_trained_models_copy_the_users_symbols_with_their_attention_drawn(monkeypatch):
    """The LSTM with Luong attention and the Transformer, shipped beside the results, on symbols the user types:
    the outputs, and for the two that attend, where each output step looked (on copy, the diagonal)."""
    import torch
    from core.variants import recurrence
    at = page("lm")
    at.text_input(key="rec_symbols").set_value("7 2 9 a 4 c 1 8").run()
    assert not at.exception and not at.error
    calls, real = [], recurrence.input_sensitivity
    with monkeypatch.context() as m:
        m.setattr(recurrence, "input_sensitivity", lambda *a, **kw: calls.append(1) or real(*a, **kw))
        at.run()
    assert not calls  # a rerun reads the input reach from the cache (QA2: three backward passes on every rerun)
    table = next(d.value for d in at.dataframe if "output" in d.value)
    assert list(table["model"]) == ["LSTM seq2seq (no attention)", "LSTM seq2seq + attention (Luong et al. 2015)",
                                    "Transformer (attention)", "GRU seq2seq (no attention)",
                                    "LSTM seq2seq + additive attention (Bahdanau et al. 2015)"]
    rows = dict(zip(table["model"], table["output"]))
    assert rows["LSTM seq2seq + attention (Luong et al. 2015)"] == rows["Transformer (attention)"] == "7 2 9 a 4 c 1 8"
    maps = [f for t, f in charts(at).items() if t.startswith(("LSTM + attention", "Transformer: cross-attention"))]
    assert len(maps) == 2
    for fig in maps:
        z = torch.tensor(fig["data"][0]["z"], dtype=torch.float64)
        assert z.shape == (9, 9) and torch.allclose(z.sum(-1), torch.ones(9, dtype=torch.float64), atol=1e-5)
        # each output symbol looked most at the source symbol it copies (rows 0-7 → columns 0-7)
        assert z[:8].argmax(-1).tolist() == list(range(8)), z.argmax(-1)
    # the additive-attention LSTM's map beside them is its own alignment on these symbols (a softer diagonal)
    additive = next(f for t, f in charts(at).items() if t.startswith("LSTM + additive attention"))
    folder = ROOT / "assets" / "recurrence"
    task, models = recurrence.load_models(folder, recurrence.config_of(
        json.loads((folder / "results.json").read_text(encoding="utf-8"))["config"]))
    want = recurrence.copy_demo(task, models, "7 2 9 a 4 c 1 8", 20)["additive_alignment"]
    torch.testing.assert_close(torch.tensor(additive["data"][0]["z"]), want, rtol=0, atol=1e-6)
    maps = [f for t, f in charts(at).items() if "the alignment α" in t or t.startswith("Transformer: cross")]
    assert len(maps) == 3 and all((m["data"][0]["zmin"], m["data"][0]["zmax"]) == (0, 1) for m in maps)  # one scale
    check_input_reach(at, "7 2 9 a 4 c 1 8")
    at.text_input(key="rec_symbols").set_value("7 2 x 9").run()
    assert any("Not symbols of this task" in e.value and "0 1 2" in e.value for e in at.error)
    at.text_input(key="rec_symbols").set_value(" ".join("1" * 21)).run()
    assert any("type 1 to 20" in e.value for e in at.error)
    at.text_input(key="rec_symbols").set_value("😀").run()  # an alert takes a leading emoji as its icon
    assert any("Not symbols of this task" in e.value and "😀" in e.value for e in at.error), \
        [(e.icon, e.value) for e in at.error]


def check_input_reach(at, typed: str) -> None:
    """"How far one input symbol reaches" on ``typed``: each model's map is log10 of the core's
    input_sensitivity, the distance chart its by_distance means, the table counts the outputs perturbation_effect
    finds changed for the chosen substitution (the first symbol by the next one, then the fourth), and the reading
    quotes the measured shares."""
    import torch
    from core.variants import recurrence
    folder = ROOT / "assets" / "recurrence"
    rec = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    task, models = recurrence.load_models(folder, recurrence.config_of(rec["config"]))
    demo = recurrence.copy_demo(task, models, typed, 20)
    src, n, figs = demo["source"], len(demo["symbols"]), charts(at)
    labels = {"lstm": "Plain LSTM", "lstm-attention": "LSTM + attention", "transformer": "Transformer"}
    distance = figs["Mean gradient length by steps from reading to writing"]
    lines = {t["name"]: t for t in distance["data"]}
    # powers of ten written 1e-4, not "100μ"; the marker's label away from the Transformer's point at n (QA2)
    assert distance["layout"]["yaxis"]["exponentformat"] == "e"
    every = [math.log10(y) for t in distance["data"] for y in t["y"]]
    (note,) = distance["layout"]["annotations"]
    assert note["text"] == "each symbol's own output" and note["yref"] == "y domain"
    for t in distance["data"]:  # each line's point at n, as a share of the axis: far from the label
        at_n = (math.log10(t["y"][t["x"].index(n)]) - min(every)) / (max(every) - min(every))
        assert abs(note["y"] - at_n) > 0.2, t["name"]
    shares = {}
    for (key, label), short in zip(labels.items(), ("plain LSTM", "LSTM + attention", "Transformer")):
        sens = recurrence.input_sensitivity(models[key], src, demo["written"][key])
        z = torch.tensor(figs[f"Log10 gradient length, {short}"]["data"][0]["z"], dtype=torch.float64)
        torch.testing.assert_close(z, sens.log10().double(), rtol=0, atol=1e-6)
        ds, means = recurrence.by_distance(sens, n)
        assert lines[label]["x"] == ds and lines[label]["y"] == pytest.approx(means, rel=1e-6)
        shares[key] = recurrence.reach_summary(sens, n, list(range(n)))["own_share"]
    told = next(m.value for m in at.markdown if m.value.startswith("**What these numbers show.**")).replace("\\", "")
    assert (f"plain LSTM {shares['lstm']:.0%}, LSTM + attention {shares['lstm-attention']:.0%}, "
            f"Transformer {shares['transformer']:.0%}") in told
    ids = {task.tokenizer.id_to_token(i).lstrip("▁"): i for i in task.ids}
    for j, to in ((0, "8"), (3, "b")):  # each symbol by the next one by default: 7 → 8, then a → b
        if j:
            at.selectbox(key=f"rec_reach_at_{n}").set_value(j).run()
            assert not at.exception, [e.value for e in at.exception]
        rows = next(d.value for d in at.dataframe if "outputs changed" in d.value)
        shown = dict(zip(rows["model"], rows["outputs changed"]))
        for key, label in labels.items():
            got = recurrence.perturbation_effect(models[key], src, demo["written"][key], [(j, ids[to])])
            assert shown[label] == f"{int(got['changed'][0].sum())} of {len(demo['written'][key])}", (j, label)
    assert any("Symbol 4 (a) replaced by b." in c.value.replace("\\", "") for c in at.caption)

def test_the_lstms_gates_on_the_users_symbols_are_recomputed_from_the_shipped_model():
    """The forget-gate map, the mean gates and the sentence that reads them are the core recomputation
    (core.variants.recurrence.seq2seq_gates) of the shipped LSTM on the typed symbols, for either LSTM."""
    import torch
    from core.variants import recurrence
    folder = ROOT / "assets" / "recurrence"
    rec = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    task, models = recurrence.load_models(folder, recurrence.config_of(rec["config"]))
    typed = "7 2 9 a 4 c 1 8"
    at = page("lm")
    at.text_input(key="rec_symbols").set_value(typed).run()
    assert not at.exception and not at.error
    kept = {}
    for key in ("lstm", "lstm-attention"):
        at.radio(key="rec_gates_model").set_value(key).run()
        assert not at.exception, [e.value for e in at.exception]
        trace = recurrence.copy_demo(task, models, typed, 20)["gates"][key]
        forget = trace.steps("f")
        fig = charts(at)["Forget gate f_t, 32 most varying units"]
        z = torch.tensor(fig["data"][0]["z"], dtype=torch.float64)
        units = [int(t.removeprefix("unit ")) for t in fig["layout"]["yaxis"]["ticktext"]]
        assert z.shape == (32, 18)  # 8 symbols + EOS read, 8 symbols + EOS written
        torch.testing.assert_close(z, forget[:, units].T.double(), rtol=0, atol=1e-6)
        var = forget.var(0, unbiased=False)
        assert sorted(units) == sorted(var.topk(32).indices.tolist())  # the 32 that vary most
        steps = fig["layout"]["xaxis"]["ticktext"]
        assert steps[0] == "read 1: 7" and steps[8] == "read 9: [EOS]" and steps[-1] == "wrote 9: [EOS]"
        means = {t["name"]: t["y"] for t in charts(at)["Mean gate per step"]["data"]}
        assert list(means) == ["forget gate f_t", "input gate i_t", "output gate o_t"]
        for name, k in (("forget gate f_t", "f"), ("input gate i_t", "i"), ("output gate o_t", "o")):
            torch.testing.assert_close(torch.tensor(means[name]), trace.steps(k).mean(1), rtol=0, atol=1e-6)
        told = next(m.value for m in at.markdown if "lets through" in m.value).replace("\\", "")
        kept[key] = trace.encoder.retention(0)
        assert "the first symbol, 7, and the final state handed to the decoder, 8 more steps" in told
        assert f"∏ f_t lets through {float(kept[key].mean()):.3f} of it" in told
        assert f"({int((kept[key] > 0.5).sum())} units keep more than half)" in told
        low = 1 + int(forget[1:].mean(1).argmin())
        assert f"lowest at “{steps[low]}” ({float(forget[low].mean()):.3f})" in told
    # the sentence compares the two LSTMs' products on the same symbols, whichever is shown
    plain = float(kept["lstm"].mean())
    assert f"Over the same steps the plain LSTM keeps {plain:.3f}" in told
    assert told.endswith("can look the source up again instead of carrying it."
                         if float(kept["lstm-attention"].mean()) < plain else f"keeps {plain:.3f}.")


def test_the_choices_reading_follows_the_numbers():
    """The sentence names the lowest and highest activation and says whether averaging helped, from the numbers."""
    from app import choices_view
    from core.training.choices import ChoicesConfig
    import dataclasses

    def run(name, last, avg):
        return {"activation": name, "held_out": {"last weights": last, "mean of the last 2": avg,
                                                 "mean of the last 5": avg, "mean of all 10": avg}}
    res = {"config": dataclasses.asdict(ChoicesConfig()),
           "runs": [run("relu", 2.5, 2.4), run("gelu", 2.6, 2.5), run("swiglu", 2.45, 2.44)]}
    text = choices_view.reading(res)
    assert "SwiGLU ended lowest" in text and "GELU highest" in text and "3 of 3 runs" in text
    assert "by 0.010 to 0.100 nats" in text and "less than the choice of activation" in text
    worse = {**res, "runs": [run("relu", 2.5, 2.6), run("gelu", 2.6, 2.7), run("swiglu", 2.45, 2.5)]}
    assert "did not lower the held-out loss of any run" in choices_view.reading(worse)
    assert choices_view.running_mean([1.0, 2.0, 3.0, 5.0], 2) == [1.0, 1.5, 2.5, 4.0]
