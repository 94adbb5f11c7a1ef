"""Reliability table: every kind of bad text, on every page, gets a clear message and the app keeps working.

The same table drives the CLIs (core.inspect, core.evaluate, core.train); the script cases also run in
real Chromium (the plain sweep of tests/e2e/test_presentation_browser.py: every page, a script in the sentence).
"""
import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from apptest import type_sentence
from cli_run import run_main
from core.io import registry

ROOT = Path(__file__).resolve().parents[2]
MODEL = "en-fr" if "en-fr" in registry.bundled() else "reverse"

# (case, text, what the user must be told — a substring of a message on the page (or a tuple: one of them), or None:
# renders normally)
BAD_TEXT = [
    ("empty", "", "empty"),
    ("whitespace", "   \n\t  ", "empty"),
    ("10,000 characters", "The dog is tired. " * 556, "cut"),
    ("emoji", "The dog 🐕 is tired 😴.", "vocabulary"),
    ("CJK", "狗很累。", "vocabulary"),
    ("right-to-left", "הכלב עייף", "unknown to"),  # words no training sentence held, named
    ("combining marks", "The d\u0301og is tire\u0308d.", "vocabulary"),
    ("control characters and NUL", "The dog\x00 is\x07 tired\x1b.", None),
    ("unknown words", "The zyzzyva didn't cross the quagmire.", "unknown to"),
    # markup: a model whose BPE learned < / > from real text names the words instead of the [UNK] pieces
    ("script tag", '</script><img src=x onerror="window.__pwned=1">', ("vocabulary", "unknown to")),
    ("javascript URL", "javascript:alert(1)", ("vocabulary", "unknown to", "probably not a correct translation")),
]
PAGES = ["attention.py", "qk.py", "bertviz_views.py", "decode.py", "layers.py", "masking.py", "positional.py",
         "coreference.py", "lesson.py"]


@pytest.fixture(scope="module")
def at():
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
    at.query_params["model"] = MODEL
    at.run()
    return at


def messages(at) -> str:
    return " ".join(m.value for m in list(at.warning) + list(at.info) + list(at.error))


@pytest.mark.parametrize("page", [p for p in PAGES if (ROOT / "pages" / p).exists()])
@pytest.mark.parametrize("case,text,told", BAD_TEXT, ids=[c for c, _, _ in BAD_TEXT])
def test_bad_text_on_every_page(at, page, case, text, told):
    at.switch_page(f"../pages/{page}")
    type_sentence(at, text)
    assert not at.exception, f"{case} on {page}: {[e.value for e in at.exception]}"
    if told and page in ("attention.py", "qk.py", "layers.py"):
        told = (told,) if isinstance(told, str) else told
        assert any(t in messages(at).lower() for t in told), \
            f"{case} on {page}: no message containing {' or '.join(told)!r}: {messages(at)!r}"
    # the app keeps working: a normal sentence right after renders again
    type_sentence(at, "The dog is tired.")
    assert not at.exception


def test_a_sentence_in_the_link_longer_than_the_limit_is_cut_with_a_notice():
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
    at.query_params["model"] = MODEL
    at.query_params["text"] = "dog " * 800
    at.run()
    assert not at.exception
    assert any("cut to 2000" in w.value for w in at.warning), [w.value for w in at.warning]
    at.switch_page("../pages/positional.py")
    at.run()
    assert len(at.text_area(key="sentence").value) == 2000  # the box of a page that reads it holds the cut text


@pytest.mark.parametrize("key,value", [("model", "no-such-model"), ("model", "../../etc/passwd"),
                                       ("present", "<script>")])
def test_bad_url_parameters_are_ignored_with_a_notice(key, value):
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
    at.query_params[key] = value
    at.run()
    assert not at.exception
    assert any(f"Ignored URL parameter {key}" in w.value for w in at.warning), [w.value for w in at.warning]


def test_html_in_text_never_reaches_markdown_unescaped(at):
    at.switch_page("../pages/attention.py")
    at.run()
    at.text_area(key="sentence").set_value("<b>bold</b> <script>x</script>")
    at.sidebar.text_input(key="tgt").set_value("<img src=x onerror=alert(1)>")
    at.run()
    for md in at.markdown:  # a "<" reaches markdown only escaped ("\\<"): a model that knows "<" writes it back
        assert not re.search(r"(?<!\\)<(img|script)", md.value), md.value
    at.sidebar.text_input(key="tgt").set_value("")
    at.run()


def cli(module, *args):
    """``python -m module args`` run as its ``main`` in this process (tests/cli_run.py; tests/core/test_cli.py runs
    each command as a real process)."""
    return run_main(module, *args)


@pytest.mark.parametrize("case,text,told", BAD_TEXT, ids=[c for c, _, _ in BAD_TEXT])
def test_bad_text_through_the_inspect_cli(case, text, told):
    r = cli("core.inspect", "--model", MODEL, "--src", text.replace("\x00", ""))  # argv cannot carry NUL
    assert "Traceback" not in r.stderr
    if told == "empty":
        assert r.returncode == 2 and r.stderr.startswith("error: ")
    else:
        assert r.returncode == 0, r.stderr
        data = json.loads(r.stdout)
        assert data["attention"]
        if told == "cut":
            assert any("cut" in n for n in data["notices"])


@pytest.mark.parametrize("content,why", [
    (b"", "no sentence pairs"), (b"\xff\xfe\x00bad", "not UTF-8"), (b"only one column\n", "expected"),
])
def test_bad_pairs_file_through_the_evaluate_cli(tmp_path, content, why):
    f = tmp_path / "pairs.tsv"
    f.write_bytes(content)
    r = cli("core.evaluate", "--model", MODEL, "--pairs", str(f))
    assert r.returncode == 2 and "Traceback" not in r.stderr and why in r.stderr, r.stderr


@pytest.mark.parametrize("args,why", [
    (["--task", "nope"], "unknown task"), (["--steps", "0"], "steps"), (["--resume"], "resume"),
    (["--d-model", "30", "--heads", "4"], "divisible"), (["--heads", "4", "--kv-heads", "3"], "divide"),
    (["--pos-encoding", "spiral"], "positional"), (["--text", "/nonexistent/file.txt", "--task", "lm"], "file"),
])
def test_invalid_training_settings_through_the_train_cli(tmp_path, args, why):
    r = cli("core.train", "--out", str(tmp_path / "run"), "--steps", "2", *args)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and why in r.stderr.lower(), r.stderr


def broken_checkpoints(root: Path) -> dict[str, Path]:
    """Copies of the bundled reverse model, each broken one way, under ``root``."""
    import pickle
    import shutil
    src = registry.BUNDLED / "reverse"
    cases = {}
    for case in ("truncated", "pickle", "other-vocabulary", "other-architecture"):
        dst = root / f"broken-{case}"
        shutil.copytree(src, dst)
        cases[case] = dst
    weights = cases["truncated"] / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    (cases["pickle"] / "model.safetensors").write_bytes(pickle.dumps({"w": [1, 2, 3]}))
    other = json.loads((registry.BUNDLED / "en-fr" / "tokenizer.json").read_text())
    (cases["other-vocabulary"] / "tokenizer.json").write_text(json.dumps(other))
    cfg = json.loads((cases["other-architecture"] / "config.json").read_text())
    cfg["model"]["n_encoder_layers"] = 5
    (cases["other-architecture"] / "config.json").write_text(json.dumps(cfg))
    return cases


def test_broken_checkpoints_through_the_inspect_cli(tmp_path):
    for case, folder in broken_checkpoints(tmp_path).items():
        r = cli("core.inspect", "--model", str(folder), "--src", "1 2 3")
        assert r.returncode != 0, case
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), (case, r.stderr[-500:])
        assert "Traceback" not in r.stderr


BAD_CONFIGS = {  # config.json edits that once gave a traceback (or gigabytes) instead of one line
    "float-d_model": ("model", "d_model", 64.0), "bad-gelu": ("model", "gelu_approximate", "bogus"),
    "huge-max_len": ("model", "max_len", 4_000_000), "deep": ("model", "n_encoder_layers", 10_000),
    "meta-not-a-dict": (None, "meta", "notadict"),
}


def bad_config_checkpoints(root: Path) -> dict[str, Path]:
    """Copies of the bundled reverse model, each with one field of its config.json out of type or range."""
    import shutil
    cases = {}
    for case, (section, key, value) in BAD_CONFIGS.items():
        dst = root / f"badcfg-{case}"
        shutil.copytree(registry.BUNDLED / "reverse", dst)
        cfg = json.loads((dst / "config.json").read_text())
        (cfg[section] if section else cfg)[key] = value
        (dst / "config.json").write_text(json.dumps(cfg))
        cases[case] = dst
    return cases


def test_bad_configs_through_the_inspect_cli(tmp_path):
    for case, folder in bad_config_checkpoints(tmp_path).items():
        r = cli("core.inspect", "--model", str(folder), "--src", "1 2 3")
        lines = r.stderr.strip().splitlines()
        assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), (case, r.stderr[-800:])
        assert "Traceback" not in r.stderr


def test_bad_configs_in_the_app_get_a_message(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_DATA", str(tmp_path))
    for case in bad_config_checkpoints(tmp_path / "models"):
        at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
        at.query_params["model"] = f"badcfg-{case}"
        at.run()
        assert not at.exception, (case, [e.value for e in at.exception])
        assert any("cannot be loaded" in e.value for e in at.error), (case, [e.value for e in at.error])


def test_broken_checkpoints_in_the_app_get_a_message(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTENTION_LAB_DATA", str(tmp_path))
    cases = broken_checkpoints(tmp_path / "models")
    for case in cases:
        at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
        at.query_params["model"] = f"broken-{case}"
        at.run()
        assert not at.exception, (case, [e.value for e in at.exception])
        assert any("cannot be loaded" in e.value for e in at.error), (case, [e.value for e in at.error])
        at.sidebar.selectbox(key="model").set_value("reverse").run()  # the app keeps working
        assert not at.exception and not at.error, case
