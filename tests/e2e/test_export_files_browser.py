"""Issue 21 defect 12: every file a learner can download — bertviz's head and model views, the lesson handout, the
attention JSON and CSV — built by the app's own code from a model whose tokens and output are script and Markdown
payloads, then opened in real Chromium from disk: no script runs, no dialog opens, nothing is fetched. The live app's
JSON and CSV downloads (built on click) are opened the same way."""
from __future__ import annotations

import csv
import io
import json
from urllib.parse import quote

import pytest

from browser import offline_page, pwned_anywhere

pytestmark = pytest.mark.e2e
OUTSIDE = "198.51.100.7"
PAYLOADS = [
    '</script><img src=x onerror="window.__pwned=1">',
    "<script>window.__pwned=1</script>",
    "\u2028</SCRIPT ><svg onload=window.__pwned=1>",
    '"><iframe srcdoc="<script>parent.__pwned=1</script>">',
    f"![p](http://{OUTSIDE}/t.png)",
    f"<img src=http://{OUTSIDE}/x.png>",
    "' onmouseover='window.__pwned=1",
]
MODEL = "en-fr-tiny"
TEXT = "The animal didn't cross the street because it was too tired."


@pytest.fixture
def payload_tokens(monkeypatch):
    """Every token of every model is a payload (as a user-trained model's vocabulary can be), and so is its output."""
    from app import cache
    from core.io.tokenizer import Tokenizer
    cache.clear()  # runs cached by earlier tests were decoded by another (or no) payload tokenizer
    display, decode = Tokenizer.display, Tokenizer.decode
    monkeypatch.setattr(Tokenizer, "display", lambda self, ids, *a, **k: [
        f"{PAYLOADS[i % len(PAYLOADS)]}{t}" for i, t in enumerate(display(self, ids, *a, **k))])
    monkeypatch.setattr(Tokenizer, "decode", lambda self, ids, *a, **k: PAYLOADS[0] + decode(self, ids, *a, **k))
    yield
    cache.clear()  # nor may this test's payload runs reach a later test


def export_files(folder) -> dict:
    """Each downloadable file, built exactly as the pages build it, under the name the page gives it."""
    from app import export, lesson
    from app.bertviz_embed import head_view_html, model_view_html
    from app.shell import traced
    res = traced(MODEL, TEXT, None)
    tokens, attention = {"encoder": res.src_tokens, "decoder": res.tgt_tokens}, {}
    for kind in res.trace.kinds():
        attention[kind] = [res.trace.attention(kind, i) for i in res.trace.layer_indices(kind)]
    files = {"attention-head-view.html": head_view_html(tokens, attention),
             "attention-model-view.html": model_view_html(tokens, attention),
             "attention-lab-lesson.html": lesson.handout(lesson.Context(MODEL, TEXT)),
             "attention.json": export.attention_json(res),
             "attention.csv": export.attention_csv(res)}
    out = {}
    for name, data in files.items():
        path = folder / name
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
        out[name] = path
    return out


def open_file(browser, path):
    """Open ``path`` the way a learner would (double-click → the browser); returns (page, log)."""
    page, log = offline_page(browser, accept_downloads=True)
    try:
        page.goto(path.as_uri())
    except Exception as e:  # a CSV is not shown but downloaded: nothing in it can run
        assert "Download is starting" in str(e), e
        return page, log
    page.wait_for_load_state("load")
    page.wait_for_timeout(1500)  # bertviz and plotly draw after load
    return page, log


def assert_inert(page, log, what):
    assert pwned_anywhere(page) == [], what
    assert log.dialogs == [], (what, log.dialogs)
    assert log.external == [], (what, log.external)
    assert not [e for e in log.errors if "pwned" in e], (what, log.errors)


# These tests take the shared browser through `visit`, as the app tests of this folder do: asked for alone, after the
# whole suite, the session browser's setup once met a running event loop (seen in the full run, not in this folder's)
@pytest.mark.usefixtures("visit", "payload_tokens")
def test_every_export_file_with_payload_tokens_runs_no_script(browser, tmp_path):
    files = export_files(tmp_path)
    for name, path in files.items():
        text = path.read_text(encoding="utf-8")
        assert OUTSIDE in text, f"{name}: the payload tokens should be in the file"
        page, log = open_file(browser, path)
        if name.endswith(".html") and "view" in name:
            page.locator("svg text").first.wait_for(timeout=60_000)  # bertviz drew its tokens
        if name.endswith("lesson.html"):
            page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 15",
                                   timeout=60_000)
        assert_inert(page, log, name)
        page.context.close()
    doc = json.loads(files["attention.json"].read_text(encoding="utf-8"))
    assert doc["source_tokens"][0].startswith(PAYLOADS[0])  # the exports keep the tokens exactly, as data
    rows = list(csv.reader(io.StringIO(files["attention.csv"].read_text(encoding="utf-8"))))
    assert rows[1][4].startswith(PAYLOADS[0])


@pytest.mark.usefixtures("visit")
def test_the_harness_catches_a_file_that_runs_script(browser, tmp_path):
    """The check above can fail: an export that wrote a payload token raw would be caught."""
    raw = tmp_path / "raw.html"
    raw.write_text(f"<html><body>{PAYLOADS[0]} <img src=http://{OUTSIDE}/x.png></body></html>")
    page, log = open_file(browser, raw)
    page.wait_for_timeout(500)
    assert pwned_anywhere(page) and log.external


@pytest.mark.parametrize("label,suffix", [("Attention as JSON", ".json"), ("Attention as CSV", ".csv")])
def test_the_live_apps_exports_download_on_click_and_run_no_script(visit, browser, tmp_path, label, suffix):
    xss = PAYLOADS[0]
    page = visit.open(f"/attention?model={MODEL}&text={quote(xss + ' ' + TEXT)}")
    with page.expect_download(timeout=120_000) as dl:
        page.get_by_role("button", name=label).click()
    path = tmp_path / f"attention{suffix}"
    dl.value.save_as(path)
    assert dl.value.suggested_filename == f"attention{suffix}"
    data = path.read_text(encoding="utf-8")
    if suffix == ".json":
        assert json.loads(data)["attention"]["cross"]
    else:
        assert data.startswith("kind,layer,head,query_index")
    doc, log = open_file(browser, path)
    assert_inert(doc, log, path.name)
    assert visit.external == [] and pwned_anywhere(page) == []
