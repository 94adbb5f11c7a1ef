"""The Training page in Streamlit's AppTest: renders, refuses bad settings, trains a tiny model end to end."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from apptest import type_sentence

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def app(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_DATA", str(tmp_path))  # before the app reads registry.data_dir()
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=60)
    at.run()
    at.switch_page("../pages/training.py")
    at.run()
    assert not at.exception, at.exception
    return at


def shown(value: str) -> str:
    """A message as the learner reads it: what a user typed is md-escaped (app.text)."""
    return re.sub(r"\\(.)", r"\1", value)


def errors(at) -> list[str]:
    return [shown(e.value) for e in at.error]


def test_page_renders(app):
    assert app.title[0].value == "Training"
    labels = [b.label for b in app.button]
    assert "Start training" in labels, labels
    # the induction preset, with the minutes measured here on its button
    assert any(re.fullmatch(r"Train the induction preset \((a few minutes; timed on this server by its first run|"
                            r"about \d+ (min|s) here, measured by the last run)\)", lbl) for lbl in labels), labels
    assert not errors(app)
    assert any("Device:" in c.value for c in app.caption)


@pytest.mark.parametrize("task", ["lm", "mlm"])
def test_text_tasks_offer_the_bundled_corpus_or_an_upload(app, task):
    app.selectbox(key="tr_task").set_value(task).run()
    assert not app.exception and not errors(app)
    assert app.radio(key="tr_source").value == "Bundled English corpus"
    assert app.text_input(key="tr_name").value.startswith(f"{task}-")
    app.radio(key="tr_source").set_value("My own UTF-8 text file").run()
    assert any("Upload a text file" in i.value for i in app.info)


def test_invalid_settings_show_an_error(app):
    app.number_input(key="tr_d_model").set_value(30).run()  # not divisible by 4 heads
    assert any("divisible" in e for e in errors(app)), errors(app)
    assert next(b for b in app.button if b.label == "Start training").disabled
    app.number_input(key="tr_d_model").set_value(64)
    app.number_input(key="tr_kv_heads").set_value(3).run()
    assert any("must divide" in e for e in errors(app)), errors(app)
    app.number_input(key="tr_kv_heads").set_value(0)
    app.number_input(key="tr_d_model").set_value(1024).run()
    assert any("d_model must be between" in e for e in errors(app)), errors(app)
    app.number_input(key="tr_d_model").set_value(64)
    app.text_input(key="tr_name").set_value("../evil").run()
    assert any("model name" in e for e in errors(app)), errors(app)
    assert not app.exception


def test_tiny_run_registers_a_model(app, tmp_path):
    at = app
    at.selectbox(key="tr_task").set_value("copy").run()
    for key, value in [("tr_d_model", 32), ("tr_layers", 1), ("tr_heads", 2), ("tr_d_ff", 64), ("tr_steps", 30),
                       ("tr_batch", 16), ("tr_warmup", 10), ("tr_smoothing", 0.0)]:
        at.number_input(key=key).set_value(value)
    at.text_input(key="tr_name").set_value("my-copy")
    at.run()
    assert not errors(at), errors(at)
    next(b for b in at.button if b.label == "Start training").click().run()
    assert not at.exception, at.exception
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if any("Saved as" in s.value for s in at.success):
            break
        assert not errors(at), errors(at)
        time.sleep(0.5)
        at.run()
    else:
        pytest.fail("the training job did not finish within 120 s")
    assert any("my-copy" in shown(s.value) for s in at.success)
    assert (tmp_path / "models" / "my-copy" / "config.json").exists()
    assert at.session_state["train_jobs"][-1].cfg.label_smoothing == 0.0  # the page's ε reached the run (default 0.1)
    assert "my-copy" in at.sidebar.selectbox(key="model").options
    assert len(at.get("plotly_chart")) >= 2  # loss curve and attention snapshots

    at.sidebar.selectbox(key="model").set_value("my-copy")
    at.run()
    at.switch_page("../pages/attention.py")
    type_sentence(at, "3 1 4 1 5 9")  # the Training page has no sentence box: typed on Attention
    assert not at.exception, at.exception
    assert not errors(at), errors(at)
    assert at.title[0].value == "Attention"
    assert at.session_state["model"] == "my-copy"


class FinishingJob:
    """A run that ends while the page runs: after app/main.py drew the sidebar, before the page reads its jobs (the
    race a real job hits now and then: its model folder appears between the two)."""
    id, name, label, published = 1, "just-saved", "reverse", False

    def __init__(self, publish):
        self._publish, self._done = publish, False

    @property
    def finished(self) -> bool:
        if not self._done:
            self._publish()
            self._done = True
        return True

    def snapshot(self) -> dict:
        return {"id": self.id, "name": self.name, "label": self.label, "task": "reverse", "status": "done",
                "error": None, "saved": self.name, "step": 30, "steps": 30, "history": [], "evals": [],
                "snapshots": [], "head_scores": [], "elapsed": 1.0, "remaining": None, "tokens_per_s": 0.0}


def test_a_run_that_ends_after_the_sidebar_is_drawn_is_listed_in_the_same_visit(app, tmp_path):
    import shutil

    from app import rooms

    def publish():
        shutil.copytree(ROOT / "assets" / "models" / "reverse", tmp_path / "models" / FinishingJob.name)

    app.session_state[rooms.OWNED_KEY] = [FinishingJob.name]
    app.session_state["train_jobs"] = [FinishingJob(publish)]
    app.run()
    assert not app.exception, app.exception
    assert any("Saved as" in s.value for s in app.success)
    assert FinishingJob.name in app.sidebar.selectbox(key="model").options
