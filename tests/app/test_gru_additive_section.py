"""AppTest of the recurrence page's "Inside the GRU: its update gate on your symbols" and the sentence on the additive
score, drawn alone (app.recurrence_view.gru_section, additive_reading) for the shipped models on typed symbols: the
charts are the GRU's own gates and the plain LSTM's f_t + i_t, the numbers in the text are measured."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

from apptest import charts, ran

from core.variants import recurrence

SHIPPED = Path(__file__).resolve().parents[2] / "assets" / "recurrence"
shipped = pytest.mark.skipif(not all((SHIPPED / f).exists() for f in recurrence.MODEL_FILES.values()),
                             reason="no models in assets/recurrence")
pytestmark = pytest.mark.usefixtures("one_thread")
TYPED = "7 2 9 a 4 c 1 8"


def _models():
    rec = json.loads((SHIPPED / "results.json").read_text(encoding="utf-8"))
    return recurrence.load_models(SHIPPED, recurrence.config_of(rec["config"]))


def _sections():  # run by AppTest from its source alone: everything it uses is imported or named here
    import json
    from pathlib import Path
    import streamlit as st
    from app import recurrence_view
    from app.text import md
    from core.variants import recurrence
    folder = Path(recurrence.__file__).resolve().parents[2] / "assets" / "recurrence"
    rec = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    task, models = recurrence.load_models(folder, recurrence.config_of(rec["config"]))
    demo = recurrence.copy_demo(task, models, "7 2 9 a 4 c 1 8", 20)
    recurrence_view.gru_section(demo, models, dict(present=False, dark=False))
    st.markdown(md(recurrence_view.additive_reading(demo, task, models["lstm-additive"].v.in_features)))


@shipped
def test_the_gru_section_draws_the_update_gate_and_both_sums_from_the_models():
    at = ran(AppTest.from_function(_sections, default_timeout=60))
    task, models = _models()
    demo = recurrence.copy_demo(task, models, TYPED, 20)
    gru, lstm = demo["gru_gates"], demo["gates"]["lstm"]
    z = gru.steps("z")
    # the update gate read straight from torch's GRU weights (rows r, z, n), independently of gru_gates
    enc = models["gru"].encoder
    x = models["gru"].embed(torch.tensor([demo["source"]]))[0].detach()
    w_z, u_z = enc.weight_ih_l0.detach().chunk(3)[1], enc.weight_hh_l0.detach().chunk(3)[1]
    b_z = enc.bias_ih_l0.detach().chunk(3)[1] + enc.bias_hh_l0.detach().chunk(3)[1]
    with torch.no_grad():
        states = enc(x[None])[0][0]
    before = torch.cat([torch.zeros(1, enc.hidden_size), states[:-1]])
    z_enc = torch.sigmoid(x @ w_z.T + before @ u_z.T + b_z)
    drawn = charts(at)
    update = {t["name"]: t["y"] for t in drawn["rec_gru_update"]["data"]}
    assert list(update) == ["kept: z_t", "new: 1 − z_t"]
    torch.testing.assert_close(torch.tensor(update["kept: z_t"][:len(x)]), z_enc.mean(1), rtol=0, atol=1e-5)
    torch.testing.assert_close(torch.tensor(update["kept: z_t"]), z.mean(1), rtol=0, atol=1e-6)
    assert [a + b for a, b in zip(*update.values())] == pytest.approx([1.0] * len(z), abs=1e-6)
    assert drawn["rec_gru_update"]["data"][0]["x"][0] == "read 1: 7"
    sums = {t["name"]: t["y"] for t in drawn["rec_gru_sum"]["data"]}
    f_plus_i = lstm.steps("f") + lstm.steps("i")
    assert sums["GRU: z_t + (1 − z_t), lowest unit"] == pytest.approx([1.0] * len(z), abs=1e-6)
    assert sums["GRU: highest unit"] == pytest.approx([1.0] * len(z), abs=1e-6)
    assert sums["plain LSTM: f_t + i_t, lowest unit"] == pytest.approx(f_plus_i.min(1).values.tolist(), abs=1e-6)
    assert sums["plain LSTM: mean over units"] == pytest.approx(f_plus_i.mean(1).tolist(), abs=1e-6)
    assert sums["plain LSTM: highest unit"] == pytest.approx(f_plus_i.max(1).values.tolist(), abs=1e-6)
    told = next(t for m in at.markdown for t in [m.value.replace("\\", "")] if "kept + taken in is 1" in t)
    assert f"runs from {float(f_plus_i.min()):.2f} to {float(f_plus_i.max()):.2f}" in told
    near = float(((f_plus_i - 1).abs() <= 0.1).double().mean())
    assert f"within 0.1 of 1 for {near:.0%} of these pairs" in told
    gap = float(re.search(r"own GRU layers to ([0-9.e+-]+):", told).group(1))
    assert gap < 1e-5


@shipped
def test_the_additive_sentence_quotes_each_models_attention_on_the_copied_symbol():
    at = ran(AppTest.from_function(_sections, default_timeout=60))
    task, models = _models()
    src = torch.tensor([[*recurrence.copy_demo(task, models, TYPED, 20)["source"]]])
    told = next(m.value for m in at.markdown if "vᵀ tanh" in m.value).replace("\\", "")
    top = {}
    for key, name in (("lstm-attention", "the Luong model puts"), ("lstm-additive", "the additive one")):
        _, align = models[key].align(src, 10)
        own = float(align[torch.arange(8), torch.arange(8)].mean())  # output t copies source symbol t
        assert f"{name} {own:.0%}" in told, (key, own, told)
        top[key] = int(align[:8].argmax(-1).eq(torch.arange(8)).sum())
    assert f"falls on that symbol for {top['lstm-attention']} and {top['lstm-additive']} of the 8 outputs" in told
    assert f"one hidden layer of {models['lstm-additive'].v.in_features} tanh units" in told


def test_the_curves_reading_and_the_runs_caption_follow_the_numbers():
    """The sentence under the accuracy curves is read from the curves it is given (made-up ones here), and the
    caption names each run behind the shipped results with what it trained."""
    from app import recurrence_view
    names = recurrence.NAMES
    curve = {"lstm": [1.0, 0.6, 0.45, 0.0], "gru": [1.0, 0.45, 0.2, 0.0], "lstm-attention": [1.0, 1.0, 0.9, 0.8],
             "lstm-additive": [1.0, 0.9, 0.7, 0.6], "transformer": [1.0, 1.0, 1.0, 1.0]}
    rec = {"lengths": [2, 3, 4, 5], "curves": {names[k]: {"exact_match": v} for k, v in curve.items()}}
    told = recurrence_view.curves_reading(rec)
    assert told.startswith("Exact match at 5 symbols: plain LSTM 0%, LSTM + attention 80%, Transformer 100%, "
                           "plain GRU 0%, LSTM + additive attention 60%.")
    assert "at 4 symbols for the plain LSTM and at 3 for the plain GRU (the GRU, with about as many " in told
    assert "both LSTMs stay above half at every length; over all lengths the Luong score averages 92% exact and " \
           "the additive score 80%: here the Luong score does better (one seed each)." in told
    rec["curves"][names["gru"]]["exact_match"] = [1.0, 0.9, 0.8, 0.3]
    assert "at 5 for the plain GRU (the GRU later)" in recurrence_view.curves_reading(rec)
    shipped = json.loads((SHIPPED / "results.json").read_text(encoding="utf-8"))
    caption = recurrence_view.runs_caption(shipped).replace("\\", "")
    runs = recurrence.runs_of(shipped)
    first = f"Trained on CPU: the plain LSTM, LSTM + attention and Transformer by `{runs[0]['command']}`"
    assert caption.startswith(first)
    assert f"the plain GRU and LSTM + additive attention by `{runs[1]['command']}` in {runs[1]['seconds']} s" in caption
    assert "are stored in float16" in caption
