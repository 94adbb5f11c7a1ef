"""Issue 35 item 1: saved models were not capped and pages loaded every listed model for good. With 40 user models
(≈ 520 MB on disk) one visit to /mlm took a fresh server from 410 to 1,132 MiB (and 2,097 MiB with the issue's 38.6 MB
models); now the server and each browser session have a cap on saved models, pages decide what to offer from each
model's folder (core.io.checkpoint.describe) and load only the model(s) they show, and user models are kept loaded
within a byte budget, least recently used out first."""
from __future__ import annotations

import gc
import shutil
import uuid
import weakref

import pytest
from streamlit.testing.v1 import AppTest

from app import saved_models, shell
from app import training_jobs as tj
from core.io import checkpoint, registry
from core.training.trainer import TrainConfig

from apptest import ROOT

TINY = dict(task="copy", d_model=16, layers=1, heads=2, d_ff=32, batch_size=8, warmup=5, dropout=0.0)
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_DATA", str(tmp_path))
    return tmp_path


def user_copies(base: str, n: int) -> list[str]:
    """``n`` user models that are copies of the bundled ``base`` (fresh names: the app's caches are per process)."""
    names = [f"mine-{uuid.uuid4().hex[:8]}" for _ in range(n)]
    for name in names:
        shutil.copytree(registry.BUNDLED / base, registry.user_dir() / name)
    return names


# --------------------------------------------------------------------------- caps on saved models

def test_the_server_refuses_a_run_whose_model_would_pass_its_cap(data, monkeypatch):
    monkeypatch.setattr(saved_models, "MAX_SAVED_MODELS", 2)
    user_copies("copy", 2)
    message = saved_models.saved_limit_error()
    assert message and "2 saved models (the limit is 2)" in message and "delete" in message, message
    with pytest.raises(tj.SavedModelLimitError, match=r"the limit is 2\).*delete"):
        tj.Job(TrainConfig(steps=3, **TINY), "one-more").start()
    assert tj.active_jobs() == 0 and not (data / "models" / "one-more").exists()


def test_a_browser_session_may_save_only_so_many_models_and_delete_its_own(data, monkeypatch):
    monkeypatch.setattr(saved_models, "MAX_SAVED_PER_SESSION", 2)
    mine = user_copies("copy", 2)
    others = user_copies("copy", 1)
    assert saved_models.saved_limit_error(owned=others) is None  # another session's model is not this one's
    with pytest.raises(tj.SavedModelLimitError, match=r"2 models \(the limit is 2 per session\).*delete"):
        tj.Job(TrainConfig(steps=3, **TINY), "third").start(owned=mine)
    saved_models.delete_model(mine[0])
    assert mine[0] not in saved_models.names() and mine[0] not in registry.available()
    assert saved_models.saved_limit_error(owned=mine) is None
    assert sorted(p.name for p in (data / "models").iterdir()) == sorted([mine[1], *others])


@pytest.mark.parametrize("case", ["built-in", "traversal", "missing", "foreign-file"])
def test_delete_model_deletes_nothing_but_a_user_checkpoint_of_ours(data, case):
    name = {"built-in": "en-fr", "traversal": "../models", "missing": "nothing-here"}.get(case)
    if case == "foreign-file":
        name = user_copies("copy", 1)[0]
        (registry.user_dir() / name / "thesis.txt").write_text("mine")
    with pytest.raises(ValueError):
        saved_models.delete_model(name)
    if case == "foreign-file":
        assert (registry.user_dir() / name / "thesis.txt").read_text() == "mine"
    assert (registry.BUNDLED / "en-fr" / checkpoint.WEIGHTS).exists()


def test_the_training_page_names_the_cap_and_deletes_the_sessions_own_model(data, monkeypatch):
    monkeypatch.setattr(saved_models, "MAX_SAVED_PER_SESSION", 1)
    mine = user_copies("copy", 1)[0]
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=60)
    at.run()
    at.switch_page("../pages/training.py")
    at.session_state["tr_owned"] = [mine]  # this session trained it
    at.run()
    assert not at.exception, at.exception
    shown = [e.value.replace("\\", "") for e in at.error]
    assert any("the limit is 1 per session" in e for e in shown), shown
    assert next(b for b in at.button if b.label == "Start training").disabled
    assert mine in at.sidebar.selectbox(key="model").options
    at.button(key=f"tr_delete_{mine}").click().run()
    assert not at.exception, at.exception
    assert not (registry.user_dir() / mine).exists()
    assert mine not in at.sidebar.selectbox(key="model").options
    assert not at.error and not next(b for b in at.button if b.label == "Start training").disabled


# --------------------------------------------------------------------------- pages load what they show

@pytest.mark.parametrize("page,model", [("mlm.py", "mlm"), ("coreference.py", "en-fr-tiny"),
                                        ("lm_heads.py", "en-fr-tiny")])
def test_a_page_loads_only_the_models_it_shows(data, monkeypatch, page, model):
    """/mlm, /coreference and /lm-heads offer every user model of a kind they can show; they loaded each one (for good)
    to find out. Now the listing reads folders only: the user models are offered and none is loaded."""
    names = user_copies("mlm", 4)
    loaded = []
    real_load = checkpoint.load
    monkeypatch.setattr(checkpoint, "load", lambda path, *a, **k: loaded.append(str(path)) or real_load(path, *a, **k))
    from apptest import open_page
    at = open_page(page, model, timeout=240)
    offered = {"mlm.py": lambda: at.selectbox(key="mlm_model").options,
               "coreference.py": lambda: at.multiselect[0].options,
               "lm_heads.py": lambda: at.selectbox(key="lm_heads_model").options}[page]()
    assert set(names) <= set(offered), offered
    assert not [p for p in loaded if any(n in p for n in names)], loaded
    assert not set(names) & set(shell.loaded_models())


def test_user_models_stay_loaded_within_a_byte_budget_least_recently_used_out_first(data, monkeypatch):
    names = user_copies("mlm", 4)
    one = shell.nbytes(checkpoint.load(registry.user_dir() / names[0]).model)
    monkeypatch.setattr(shell, "MODEL_CACHE_BYTES", int(2.5 * one), raising=False)
    shipped = shell.load_model("copy")
    refs = {name: weakref.ref(shell.load_model(name).model) for name in names}
    gc.collect()
    assert [n for n in names if refs[n]() is not None] == names[2:]  # gone from the cache and from memory
    shell.load_model(names[2])  # used again: names[3] is now the one used longest ago
    refs[names[0]] = weakref.ref(shell.load_model(names[0]).model)  # an evicted model loads again when used
    gc.collect()
    assert [n for n in names if refs[n]() is not None] == [names[0], names[2]]
    assert shell.load_model("copy") is shipped  # a shipped model stays loaded, outside the user models' budget


def test_a_model_that_only_a_load_finds_broken_is_named_once_tried_and_no_longer_offered(data):
    """describe cannot see non-finite weights without reading them: such a model is offered until a page loads it;
    then that page says why in plain text, and every list skips it and names it (as note_broken does)."""
    from safetensors.torch import load_file, save_file
    name = user_copies("mlm", 1)[0]
    weights = registry.user_dir() / name / checkpoint.WEIGHTS
    state = load_file(str(weights))
    next(v for v in state.values() if v.is_floating_point())[0] = float("nan")
    save_file(state, str(weights), metadata={"format": checkpoint.FORMAT})
    from apptest import open_page
    at = open_page("mlm.py", "mlm", timeout=240)
    assert name in at.selectbox(key="mlm_model").options
    at.selectbox(key="mlm_model").set_value(name).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("non" in e.value and "finite" in e.value for e in at.error), [e.value for e in at.error]
    at.selectbox(key="mlm_model").set_value("mlm").run()
    assert name not in at.selectbox(key="mlm_model").options
    assert any(name in t.value and "cannot be loaded" in t.value for t in at.text), [t.value for t in at.text]
