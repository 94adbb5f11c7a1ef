"""The Training page's section "How many parameters, and where they sit" in Streamlit's AppTest."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app import sizes_view
from apptest import charts, unlabelled
from core.model import Transformer
from core.training import sizes
from core.training.tasks import make_task
from core.training.trainer import TrainConfig, model_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def page(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_DATA", str(tmp_path))
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=60)
    at.run()
    at.switch_page("../pages/training.py")
    at.run()
    assert not at.exception, at.exception
    return at


def test_the_section_counts_as_torch_does_and_builds_nothing_until_asked(page, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a meta-device build on the default render")

    built = sizes.meta_count
    monkeypatch.setattr(sizes, "meta_count", refuse)
    sizes_view.published_meta_counts.clear()  # nothing cached from an earlier run answers for it
    sizes_view.meta_count.clear()
    page.run()
    assert not page.exception and not page.error, (page.exception, page.error)
    line = next(m.value for m in page.markdown if m.value.startswith("**Your model**"))
    shown = int(re.search(r"\*\*([\d,]+)\*\* parameters", line).group(1).replace(",", ""))
    default = TrainConfig(task="reverse", d_model=64, layers=2, heads=4, d_ff=256, dropout=0.0)
    assert shown == Transformer(model_config(default, make_task("reverse"))).num_parameters()
    table = page.dataframe[0].value
    assert list(table["model"]) == ["your model", *sizes.FAMOUS]
    assert table.set_index("model").loc["GPT-3", "parameters"] == f"{sizes.famous('GPT-3').estimated_parameters():,}"
    bars = charts(page)["tr_param_shares"]["data"]
    assert [t["name"] for t in bars] == ["embeddings", "attention", "feed-forward", "layer norms", "output head"]
    n_models = len(bars[0]["x"])
    assert n_models == 1 + len(sizes.FAMOUS) + 2  # the run's model, the published ones, two ALBERTs
    for i in range(n_models):
        assert sum(t["x"][i] for t in bars) == pytest.approx(100.0)
    assert not unlabelled(page), unlabelled(page)

    # on request, each model built on the meta device: the same counts; a model that cannot be built: a plain line
    monkeypatch.setattr(sizes, "meta_count", built)
    page.toggle(key="tr_meta_count").set_value(True).run()
    assert not page.exception and not page.error, (page.exception, page.error)
    assert set(page.dataframe[0].value["same"]) == {"yes"}
    albert = page.dataframe[2].value
    assert list(albert["ALBERT on the meta device"]) == list(albert["+ shared layers = ALBERT"])
    page.number_input(key="tr_d_model").set_value(30).run()  # not divisible by 4 heads
    assert not page.exception
    assert any("cannot be counted" in i.value and "divisible" in i.value for i in page.info), [i.value for i in
                                                                                               page.info]
    assert list(page.dataframe[0].value["model"]) == list(sizes.FAMOUS)
