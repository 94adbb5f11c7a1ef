"""Issue 34 item 5, a training room per class: a model trained on the Training page is private to the browser session
that trained it (app/rooms.py), opens elsewhere by its name (a ``?model=`` link), and its session may share it with
everyone on the server; a model without a sharing flag (the CLI's, or one saved before rooms) stays everyone's."""
from __future__ import annotations

import shutil
import uuid

import pytest
from streamlit.testing.v1 import AppTest

from app import rooms, saved_models
from core.io import checkpoint, registry

from apptest import ROOT


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_DATA", str(tmp_path))
    return tmp_path


def user_model(sharing: str | None) -> str:
    """A user model copied from the bundled ``copy`` (no training), saved as a Training-page run saves it
    (``sharing``: "private" / "shared") or as the CLI does (None: no sharing.json)."""
    name = f"run-{uuid.uuid4().hex[:8]}"
    shutil.copytree(registry.BUNDLED / "copy", registry.user_dir() / name)
    if sharing is not None:
        rooms.write_sharing(registry.user_dir() / name, shared=sharing == rooms.SHARED)
    return name


def test_a_private_run_is_its_sessions_until_shared_and_opens_anywhere_by_its_name(data):
    mine = user_model(rooms.PRIVATE)
    session_a, session_b = {mine}, set()
    assert rooms.sharing(mine) == rooms.PRIVATE
    assert mine in rooms.visible_models(owned=session_a)
    assert mine not in rooms.visible_models(owned=session_b)
    assert mine in rooms.visible_models(owned=session_b, opened={mine})  # B came by a link ?model=<name>
    assert {"copy", "reverse"} <= set(rooms.visible_models(owned=session_b))  # bundled ones are everyone's

    rooms.set_sharing(mine, True, owned=session_a)
    assert rooms.sharing(mine) == rooms.SHARED and mine in rooms.visible_models(owned=session_b)
    rooms.set_sharing(mine, False, owned=session_a)
    assert mine not in rooms.visible_models(owned=session_b)
    assert mine in registry.available()  # the server still knows it: it opens by name


def test_a_model_without_a_flag_stays_visible_to_every_session(data):
    cli = user_model(None)  # python -m core.train --out data/models/<name>, or a run saved before rooms
    assert not (registry.user_dir() / cli / checkpoint.SHARING).exists()
    assert rooms.sharing(cli) == rooms.SHARED and cli in rooms.visible_models()


def test_only_the_session_that_trained_a_model_may_change_who_sees_it(data):
    theirs = user_model(rooms.PRIVATE)
    before = (registry.user_dir() / theirs / checkpoint.SHARING).read_bytes()
    with pytest.raises(ValueError, match="Only the browser session that trained"):
        rooms.set_sharing(theirs, True, owned={"something-else"})
    with pytest.raises(ValueError, match="Only the browser session that trained"):
        rooms.set_sharing(theirs, True, owned=set())  # opening it by its link gives no right to share it
    assert (registry.user_dir() / theirs / checkpoint.SHARING).read_bytes() == before
    assert theirs not in rooms.visible_models()
    for name, words in (("gone-1", "no saved model called 'gone-1'"), ("copy", "not a model trained"),
                        ("../models", "not a model trained")):
        with pytest.raises(ValueError, match=words):
            rooms.set_sharing(name, True, owned={name})


@pytest.mark.parametrize("content", [b"not json", b'{"sharing": "everyone"}', b"[1]", b'{"sharing": NaN}',
                                     b" " * (rooms.MAX_SHARING_BYTES + 1)],
                         ids=["not-json", "unknown-value", "not-an-object", "nan", "too-large"])
def test_a_flag_that_is_not_ours_reads_private(data, content):
    name = user_model(rooms.PRIVATE)
    (registry.user_dir() / name / checkpoint.SHARING).write_bytes(content)
    assert rooms.sharing(name) == rooms.PRIVATE and name not in rooms.visible_models()


def test_links_to_nothing_add_nothing_and_a_flagged_model_can_still_be_deleted(data):
    name = user_model(rooms.PRIVATE)
    assert rooms.visible_models(opened={"no-such-model", "../models"}) == rooms.visible_models()
    saved_models.delete_model(name)  # sharing.json is one of a checkpoint folder's own files, not someone else's
    assert not (registry.user_dir() / name).exists() and name not in rooms.visible_models(owned={name})


def test_the_training_page_shares_and_unshares_only_the_sessions_own_models(data):
    mine, theirs = user_model(rooms.PRIVATE), user_model(rooms.PRIVATE)
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=60)
    at.run()
    at.switch_page("../pages/training.py")
    at.session_state[rooms.OWNED_KEY] = [mine]  # this session trained ``mine``
    at.run()
    assert not at.exception, at.exception
    keys = {b.key for b in at.button}
    assert f"tr_share_{mine}" in keys and f"tr_share_{theirs}" not in keys and f"tr_delete_{theirs}" not in keys
    share = at.button(key=f"tr_share_{mine}")
    assert share.label == "Share with everyone on this server"
    assert any(f"?model={mine}" in c.value for c in at.code)  # the link that opens it elsewhere
    share.click().run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert rooms.sharing(mine) == rooms.SHARED and rooms.sharing(theirs) == rooms.PRIVATE
    assert at.button(key=f"tr_share_{mine}").label == "Make private"
    at.button(key=f"tr_share_{mine}").click().run()
    assert rooms.sharing(mine) == rooms.PRIVATE

    at.session_state[rooms.OWNED_KEY] = []  # a button left from another session's page: refused, with a message
    at.button(key=f"tr_share_{mine}").click().run()
    assert rooms.sharing(mine) == rooms.PRIVATE
    assert any("Only the browser session that trained" in e.value.replace("\\", "") for e in at.error), at.error


def test_the_sidebar_lists_another_sessions_private_run_only_by_its_link(data):
    """The shell's model list (app.shell.models) is the room's: a private run of another session is not offered; its
    link opens it; once its owner shares it, every session is offered it."""
    theirs = user_model(rooms.PRIVATE)
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
    at.run()
    assert theirs not in at.sidebar.selectbox(key="model").options
    rooms.set_sharing(theirs, True, owned={theirs})
    at.run()
    assert theirs in at.sidebar.selectbox(key="model").options

    rooms.set_sharing(theirs, False, owned={theirs})
    by_link = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
    by_link.query_params["model"] = theirs
    by_link.run()
    assert not by_link.warning, [w.value for w in by_link.warning]  # not "Ignored URL parameter model"
    assert by_link.sidebar.selectbox(key="model").value == theirs


def test_a_run_stays_its_browsers_after_a_reload_by_its_owner_token(data):
    """A reload is a new Streamlit session: the run stays its browser's by the owner token the browser keeps in a
    cookie (the browser round trip: tests/e2e/test_training_browser.py). The folder holds the token's hash only."""
    from app import shell
    token, other = rooms.new_token(), rooms.new_token()
    name = user_model(None)
    rooms.write_sharing(registry.user_dir() / name, shared=False, owner=rooms.owner_key(token))
    raw = (registry.user_dir() / name / rooms.SHARING_FILE).read_text()
    assert token not in raw and rooms.owner_key(token) in raw
    assert rooms.owned_by(token) == [name] and rooms.owned_by(other) == []
    for bad in (None, "", token[:-1], token + "a", token[:-1] + ";", 42):
        assert not rooms.valid_token(bad) and rooms.owned_by(bad) == []
    rooms.set_sharing(name, True, owned={name})
    assert rooms.sharing(name) == rooms.SHARED and rooms.owner_of(name) == rooms.owner_key(token)  # owner kept
    rooms.set_sharing(name, False, owned={name})

    def training_page(tok):
        at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=60)
        at.session_state[shell.OWNER_KEY] = tok  # what the browser's cookie sent
        at.run()
        at.switch_page("../pages/training.py")
        at.run()
        assert not at.exception, at.exception
        return at

    at = training_page(token)
    assert name in at.sidebar.selectbox(key="model").options
    at.button(key=f"tr_share_{name}").click().run()
    assert not at.error, [e.value for e in at.error]
    assert rooms.sharing(name) == rooms.SHARED
    theirs = training_page(other)
    keys = {b.key for b in theirs.button}
    assert f"tr_share_{name}" not in keys and f"tr_delete_{name}" not in keys
    at.button(key=f"tr_delete_{name}").click().run()
    assert not (registry.user_dir() / name).exists()


def test_an_unknown_model_error_names_no_saved_model(data):
    """A private run's name is not listed to whoever mistypes a model name (registry.resolve's error)."""
    name = user_model(rooms.PRIVATE)
    with pytest.raises(ValueError, match="unknown model") as e:
        registry.resolve("no-such-model")
    assert name not in str(e.value) and "copy" in str(e.value) and "1 saved on this server" in str(e.value)
