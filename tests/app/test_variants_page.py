"""AppTest: the heads / GQA / speculative-decoding page for a translation model and the LM."""
import json
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models, shared CPU: extra threads only contend
    yield
    torch.set_num_threads(before)


def variants_page(model: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=240)
    at.query_params["model"] = model
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page("../pages/variants.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.sidebar.selectbox(key="model").value == model
    return at


def titles(at) -> list[str]:
    return [json.loads(el.proto.spec)["layout"]["title"]["text"] for el in at.get("plotly_chart")]


@pytest.mark.parametrize("model", ["en-fr", "lm"])
def test_page_renders_all_three_sections(model):
    at = variants_page(model)
    names = titles(at)
    for start in ("Loss increase when this head alone", "Pruning curve: loss", "Pruning curve: quality",
                  "H0 · K/V head 0", "H3 · K/V head 1", "Per target pass"):
        assert any(t.startswith(start) for t in names), (start, names)
    assert any("identical to the target's greedy decoding" in s.value for s in at.success)
    table = next(d.value for d in at.dataframe if "n_kv_heads" in d.value.columns)
    assert list(table["n_kv_heads"]) == [4, 2, 1]
    assert table["KV cache bytes / token (fp32)"].iloc[0] == 2 * table["KV cache bytes / token (fp32)"].iloc[1]
    if model == "en-fr":  # translation: exact match and pronoun accuracy along the pruning curve
        quality = next(json.loads(el.proto.spec) for el in at.get("plotly_chart")
                       if json.loads(el.proto.spec)["layout"]["title"]["text"].startswith("Pruning curve: quality"))
        assert {d["name"] for d in quality["data"]} >= {"exact match (greedy)", "pronoun accuracy"}
    at.radio(key="gqa_g").set_value(1).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(t.startswith("H3 · K/V head 0") for t in titles(at))
    at.select_slider(key="spec_k").set_value(1).run()
    assert not at.exception and not at.error
    assert any("identical" in s.value for s in at.success)
