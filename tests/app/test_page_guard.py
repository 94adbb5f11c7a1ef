"""No URL and no failure shows a user a traceback or a server path.

* Integers in a link (``layer``, ``head``, ``step``) are ASCII digits, at most 6: ``layer=²`` passed ``str.isdigit()``
  and crashed ``int()``; 5,000 digits hit Python's int-string limit.
* ``app/guard.py``: whatever escapes a page is logged on the server with its traceback and the user sees one short
  message (tests run with ``ATTENTION_LAB_RAISE_ERRORS=1`` so a failing page fails its test; here it is unset).
"""
from __future__ import annotations

import logging
import re
import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def open_with(page: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(f"../pages/{page}")
    at.run()
    return at


def shown_text(at: AppTest) -> str:
    parts = []
    for kind in ("error", "warning", "info", "markdown", "caption", "exception", "text", "code"):
        parts += [str(getattr(e, "value", "")) for e in at.get(kind)]
    return "\n".join(parts)


@pytest.mark.parametrize("page,key,raw", [
    ("attention.py", "layer", "²"), ("attention.py", "head", "¹"), ("qk.py", "layer", "³"),
    ("qk.py", "head", "١"),  # an Arabic-Indic one: int() reads it, but it is not what a link writes
    ("attention.py", "layer", "9" * 5000), ("qk.py", "head", "0" * 7), ("attention.py", "head", " 1"),
    ("attention.py", "layer", "+1"), ("lesson.py", "step", "³"), ("lesson.py", "step", "1" * 5000),
], ids=lambda v: v if len(v) <= 20 else f"{len(v)} chars")
def test_a_url_integer_that_is_not_plain_ascii_digits_gets_a_warning_not_a_traceback(page, key, raw):
    at = open_with(page, model="reverse", **{key: raw})
    assert not at.exception, [e.value for e in at.exception]
    assert any("The link asked for" in w.value or "step" in w.value.lower() for w in at.warning), \
        [w.value for w in at.warning]
    assert all(len(w.value) < 400 for w in at.warning)  # the 5,000 digits are not echoed back


def test_a_failing_page_shows_one_short_message_and_logs_the_traceback(monkeypatch, caplog):
    monkeypatch.delenv("ATTENTION_LAB_RAISE_ERRORS", raising=False)
    from app import shell
    secret = f"{ROOT}/core/secret_module.py"

    def broken(*args, **kwargs):
        raise RuntimeError(f"boom in {secret}")

    monkeypatch.setattr(shell, "traced", broken)
    with caplog.at_level(logging.ERROR, logger="attention_lab.app"):
        at = open_with("attention.py", model="reverse")
    assert not at.exception, [e.value for e in at.exception]
    assert any("Something went wrong while drawing this page" in e.value for e in at.error), [e.value for e in at.error]
    text = shown_text(at)
    assert "Traceback" not in text and str(ROOT) not in text and "boom" not in text and "RuntimeError" not in text
    logged = [r for r in caplog.records if r.exc_info]  # the server log has the whole traceback
    assert logged and "boom in" in str(logged[0].exc_info[1]) and "reference" in logged[0].getMessage()
    # the page still works for the next request
    monkeypatch.undo()
    at = open_with("attention.py", model="reverse")
    assert not at.exception and not at.error


def test_streamlit_control_flow_passes_through_the_guard(monkeypatch):
    """st.stop / st.rerun are BaseException: the guard must not swallow them (the pages use st.stop)."""
    monkeypatch.delenv("ATTENTION_LAB_RAISE_ERRORS", raising=False)
    from app.guard import run_guarded

    class Control(BaseException):
        pass

    def stop():
        raise Control

    with pytest.raises(Control):
        run_guarded(stop)


def test_the_server_never_sends_error_details_outside_the_guard():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["showErrorDetails"] == "none"
    main = (ROOT / "app" / "main.py").read_text()
    assert "run_guarded(nav.run" in main and re.search(r"run_guarded\((lambda: )?sidebar\b", main)


def test_a_model_that_cannot_be_loaded_is_named_without_a_server_path(tmp_path, monkeypatch):
    """An OSError's message names the full path of the file (here: weights that are a folder)."""
    import shutil
    from core.io import registry
    monkeypatch.setenv("ATTENTION_LAB_DATA", str(tmp_path))
    folder = tmp_path / "models" / "odd-weights"
    shutil.copytree(registry.BUNDLED / "reverse", folder)
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors").mkdir()
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
    at.query_params["model"] = "odd-weights"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [re.sub(r"\\(.)", r"\1", e.value) for e in at.error]  # shown as text: md-escaped (app.text)
    assert any("cannot be loaded" in e and "model.safetensors" in e for e in errors), errors
    assert not any(str(tmp_path) in e or "/models/" in e for e in errors), errors
