"""One broken user model never breaks another model's page: /mlm and /coreference loaded every listed model unguarded,
so a truncated ``model.safetensors`` (or ``d_ff`` 1e15) in the user models folder gave every user a traceback there.
Pages that offer several models take them from ``app.shell.usable_models`` and name the broken ones in plain text."""
from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.io import registry

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def broken_users(tmp_path, monkeypatch):
    """The data folder holds two broken masked LMs (copies of the bundled mlm): truncated weights, d_ff 1e15."""
    monkeypatch.setenv("ATTENTION_LAB_DATA", str(tmp_path))
    models = tmp_path / "models"
    for case in ("truncated", "huge-ffn"):
        shutil.copytree(registry.BUNDLED / "mlm", models / f"mine-{case}")
    weights = models / "mine-truncated" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    cfg = json.loads((models / "mine-huge-ffn" / "config.json").read_text())
    cfg["model"]["d_ff"] = 10 ** 15
    (models / "mine-huge-ffn" / "config.json").write_text(json.dumps(cfg))
    return ["mine-truncated", "mine-huge-ffn"]


def open_page(page: str, model: str, monkeypatch=None) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=300)
    at.query_params["model"] = model
    at.run()
    at.switch_page(f"../pages/{page}")
    at.run()
    return at


def test_the_masked_lm_page_skips_and_names_a_broken_user_model(broken_users):
    at = open_page("mlm.py", "mlm")
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="mlm_model").options == ["mlm"]
    note = [t.value for t in at.text if "cannot be loaded" in t.value]
    assert note and all(name in note[0] for name in broken_users), [t.value for t in at.text]
    assert "truncated or corrupt" in note[0] and "d_ff must be between" in note[0]


def test_the_coreference_page_skips_and_names_a_broken_user_model(broken_users):
    at = open_page("coreference.py", "en-fr-tiny")
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert not any(name in at.multiselect[0].options for name in broken_users)
    assert any("mine-truncated" in t.value and "mine-huge-ffn" in t.value for t in at.text)


def test_no_page_loads_every_listed_model_unguarded():
    """The class: a loop or comprehension over ``models()`` that calls ``load_model`` fails for everyone when one
    model is broken; use ``usable_models`` (which skips it) instead."""
    offenders = []
    for f in sorted([*(ROOT / "pages").glob("*.py"), *(ROOT / "app").glob("*.py")]):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            loops = ([g.iter for g in node.generators] if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp,
                                                                             ast.GeneratorExp))
                     else [node.iter] if isinstance(node, ast.For) else [])
            over_models = any(isinstance(it, ast.Call) and getattr(it.func, "id", None) == "models" for it in loops)
            calls_load = any(isinstance(n, ast.Call) and getattr(n.func, "id", None) == "load_model"
                             for n in ast.walk(node))
            if over_models and calls_load and f.name != "shell.py":
                offenders.append(f"{f.relative_to(ROOT)}:{node.lineno}")
    assert offenders == [], offenders
