"""app/bertviz_embed.py: offline, escaped bertviz head/model views (static checks + real Chromium)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]

import bertviz

from app import bertviz_embed as be
from app.bertviz_embed import (
    BertvizTemplateError,
    escape_script_json,
    head_view_html,
    model_view_html,
)

VENDOR = ROOT / "assets" / "vendor"
EVIL = '</script><img src=x onerror="window.__pwned=1">'
# json.dumps turns the quotes above into \" which spoils that attribute; this one needs none.
EVIL_BARE = "</script><img src=x onerror=window.__pwned=1>"
VIEWS = {"head": head_view_html, "model": model_view_html}
N_HEAD_SCRIPTS = 4  # d3, jQuery, require.js, AMD shim; then one per bertviz section


def _attn(layers: int, heads: int, q: int, k: int, seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.rand(1, heads, q, k, generator=g).softmax(-1) for _ in range(layers)]


ENC = ["the", "cat", "sat", "down"]
DEC = ["<s>", "le", "chat"]
CASES = {
    "encoder-only": ({"encoder": ENC}, {"encoder": _attn(2, 3, 4, 4)}),
    "decoder-only": ({"decoder": DEC}, {"decoder": _attn(3, 2, 3, 3, seed=1)}),
    # 2 encoder layers, 3 decoder layers: bertviz alone would cut the decoder to 2 layers.
    "enc-dec-2-3": ({"encoder": ENC, "decoder": DEC},
                    {"encoder": _attn(2, 4, 4, 4), "decoder": _attn(3, 4, 3, 3, seed=1),
                     "cross": _attn(3, 4, 3, 4, seed=2)}),
    # ... and the other way round (bertviz alone raises IndexError here).
    "enc-dec-3-2": ({"encoder": ENC, "decoder": DEC},
                    {"encoder": _attn(3, 4, 4, 4), "decoder": _attn(2, 4, 3, 3, seed=1),
                     "cross": _attn(2, 4, 3, 4, seed=2)}),
    "enc-dec-same": ({"encoder": ENC, "decoder": DEC},
                     {"encoder": _attn(2, 4, 4, 4), "decoder": _attn(2, 4, 3, 3, seed=1),
                      "cross": _attn(2, 4, 3, 4, seed=2)}),
}
# (names of the stacks, number of layers) per bertviz widget, in page order
SECTIONS = {
    "encoder-only": [(["Encoder"], 2)],
    "decoder-only": [(["Decoder"], 3)],
    "enc-dec-2-3": [(["Encoder"], 2), (["Decoder", "Cross"], 3)],
    "enc-dec-3-2": [(["Encoder"], 3), (["Decoder", "Cross"], 2)],
    "enc-dec-same": [(["Encoder", "Decoder", "Cross"], 2)],
}


def _evil_case():
    enc = ["hello", EVIL, "x\u2028y", EVIL_BARE]
    dec = ["<b>bold</b>", "a&amp;b"]
    return ({"encoder": enc, "decoder": dec},
            {"encoder": _attn(1, 2, 4, 4), "decoder": _attn(2, 2, 2, 2), "cross": _attn(2, 2, 2, 4)})


def _params(html: str) -> list[dict]:
    """The params object of each bertviz widget, decoded from the page."""
    out, pos = [], 0
    dec = json.JSONDecoder()
    while (i := html.find("const params = ", pos)) >= 0:
        obj, end = dec.raw_decode(html, i + len("const params = "))
        out.append(obj)
        pos = end
    return out


@pytest.fixture(scope="module")
def pages() -> dict[tuple[str, str], str]:
    return {(view, case): fn(*CASES[case]) for view, fn in VIEWS.items() for case in CASES}


# ---- static checks ------------------------------------------------------------------


def _vendor_urls() -> set[str]:
    text = "".join(p.read_text() for p in VENDOR.glob("*.js"))
    return set(re.findall(r"https?://[^\s\"'<>)]+", text))


# A comment at the top of bertviz's own JavaScript; a link, never fetched.
BERTVIZ_COMMENT_URL = "https://github.com/tensorflow/tensor2tensor/blob/master/tensor2tensor/visualization/attention.js"


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("case", CASES)
def test_no_remote_script_references(pages, view, case):
    html = pages[view, case]
    assert html.startswith("<!doctype html>")
    low = html.lower()
    for cdn in ("cdnjs", "jsdelivr", "unpkg", "googleapis", "code.jquery.com"):
        assert cdn not in low, cdn
    assert not re.search(r"""\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", html, re.I)
    bertviz_js = re.findall(r'<script data-src="bertviz">(.*?)</script>', html, re.S)
    assert len(bertviz_js) == len(SECTIONS[case])
    for js in bertviz_js:
        assert "require.config" not in js and "paths" not in js and "http" not in js.split("*/", 1)[1]
    assert html.count("require.config") == (VENDOR / "require-2.3.6.js").read_text().count("require.config")
    # d3js.org only in d3's own licence banner ("// https://d3js.org v5.7.0 Copyright ...")
    assert low.count("d3js.org") == (VENDOR / "d3-5.7.0.min.js").read_text().count("d3js.org") == 1
    # Every URL left is either inside a vendored file (namespace URIs, comments) or bertviz's comment.
    urls = set(re.findall(r"https?://[^\s\"'<>)]+", html))
    assert urls <= _vendor_urls() | {BERTVIZ_COMMENT_URL}, urls - _vendor_urls()
    assert "default-src 'none'" in html  # CSP: nothing may be fetched


@pytest.mark.parametrize("view", VIEWS)
def test_vendored_libraries_inlined_in_order(pages, view):
    html = pages[view, "encoder-only"]
    files = {name: (VENDOR / f).read_text() for name, f in be.VENDOR_SCRIPTS}
    for body in files.values():
        assert body in html  # verbatim
    marks = ["// https://d3js.org v5.7.0", "/*! jQuery v2.2.4", "@license RequireJS 2.3.6",
             "define('d3', [], function () { return window.d3; });",
             "define('jquery', [], function () { return window.jQuery; });",
             "requirejs(['jquery', 'd3']"]
    positions = [html.find(m) for m in marks]
    assert all(p >= 0 for p in positions), dict(zip(marks, positions))
    assert positions == sorted(positions), "expected d3, jQuery, require.js, shims, bertviz"


def test_vendor_readme_and_licences():
    readme = (VENDOR / "README.md").read_text()
    for pkg in ("d3@5.7.0", "jquery@2.2.4", "requirejs@2.3.6"):
        assert pkg in readme
    for _, filename in be.VENDOR_SCRIPTS:
        assert filename in readme
    for lic in ("LICENSE-d3.txt", "LICENSE-jquery.txt", "LICENSE-requirejs.txt"):
        assert (VENDOR / lic).stat().st_size > 500 and lic in readme


@pytest.mark.parametrize("view", VIEWS)
def test_malicious_token_is_escaped(view):
    html = VIEWS[view](*_evil_case())
    assert EVIL not in html and EVIL_BARE not in html
    assert "</script><img" not in html
    assert "<img" not in html.lower() and "<b>bold" not in html
    assert "\u2028" not in html and "\u2029" not in html
    # the only closing tags are the ones for the scripts we emit (2 sections: enc 1 layer, dec 2 layers)
    assert html.lower().count("</script") == N_HEAD_SCRIPTS + 2
    assert html.lower().count("<script data-src=") == N_HEAD_SCRIPTS + 2
    assert escape_script_json(json.dumps(EVIL)) in html
    assert escape_script_json(json.dumps(EVIL_BARE)) in html
    assert "\\u003c/script\\u003e\\u003cimg src=x onerror=\\\"window.__pwned=1\\\"\\u003e" in html
    # The data is intact: the page's JSON decodes to the original tokens.
    texts = [d["left_text"] + d["right_text"] for p in _params(html) for d in p["attention"]]
    flat = {t for ts in texts for t in ts}
    assert {EVIL, EVIL_BARE, "x\u2028y", "<b>bold</b>", "a&amp;b"} <= flat
    # bertviz's second copy of the params (inside a // comment) is gone
    assert "template marker" not in html


def test_escape_script_json():
    value = {"t": ["</script>", "<!--", "a & b", "\u2028\u2029", "é"], "n": [0.5]}
    raw = json.dumps(value, ensure_ascii=False)
    out = escape_script_json(raw)
    for ch in "<>&\u2028\u2029":
        assert ch not in out
    assert json.loads(out) == value
    assert escape_script_json("</") == "\\u003c/"


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("case", CASES)
def test_depths_and_sections(pages, view, case):
    params = _params(pages[view, case])
    got = [([d["name"] for d in p["attention"]], p["include_layers"]) for p in params]
    assert got == [(names, list(range(n))) for names, n in SECTIONS[case]]
    for p in params:
        for d in p["attention"]:
            assert len(d["attn"]) == len(p["include_layers"])  # no silent truncation
    tokens = CASES[case][0]
    for p in params:
        for d in p["attention"]:
            side = {"Encoder": ("encoder", "encoder"), "Decoder": ("decoder", "decoder"),
                    "Cross": ("decoder", "encoder")}[d["name"]]
            assert (d["left_text"], d["right_text"]) == (tokens[side[0]], tokens[side[1]])
    if view == "model":
        assert all(p["display_mode"] == "light" for p in params)


def test_attention_values_survive():
    tokens, attention = CASES["encoder-only"]
    (p,) = _params(head_view_html(tokens, attention))
    got = torch.tensor(p["attention"][0]["attn"], dtype=torch.float64)  # [L, H, T, T]
    want = torch.stack([a[0] for a in attention["encoder"]])
    assert torch.allclose(got, want.double(), atol=1e-4)


def test_height_wraps_in_scroll_box():
    html = head_view_html(*CASES["encoder-only"], height=321)
    assert "max-height:321px" in html
    assert "max-height" not in head_view_html(*CASES["encoder-only"])
    for bad in (0, -5, 2.5, True, "300"):
        with pytest.raises(ValueError):
            head_view_html(*CASES["encoder-only"], height=bad)


def test_input_validation():
    with pytest.raises(ValueError, match="tokens\\['decoder'\\]"):
        head_view_html({"encoder": ENC}, {"encoder": _attn(1, 2, 4, 4), "cross": _attn(1, 2, 3, 4)})
    with pytest.raises(ValueError, match="4 encoder"):
        head_view_html({"encoder": ENC}, {"encoder": _attn(1, 2, 5, 5)})
    with pytest.raises(ValueError, match="at least one"):
        model_view_html({"encoder": ENC}, {})
    with pytest.raises(ValueError, match="shape"):
        head_view_html({"encoder": ENC}, {"encoder": [torch.rand(2, 2, 4, 4)]})
    with pytest.raises(ValueError, match="unknown keys"):
        head_view_html({"encoder": ENC}, {"self": _attn(1, 2, 4, 4)})
    with pytest.raises(TypeError):
        head_view_html({"encoder": ["a", 1, "b", "c"]}, {"encoder": _attn(1, 2, 4, 4)})


def _patched(monkeypatch, name, edit):
    real = getattr(bertviz, name)

    def fake(*args, **kwargs):
        out = real(*args, **kwargs)
        out.data = edit(out.data)
        return out

    monkeypatch.setattr(bertviz, name, fake)


@pytest.mark.parametrize("view,name", [("head", "head_view"), ("model", "model_view")])
@pytest.mark.parametrize("edit", [
    lambda s: s.replace("cdnjs.cloudflare.com/ajax/libs/require.js/2.3.6", "cdn.example/require", 1),
    lambda s: s.replace("require.config({", "requirejs.config({", 1),
    lambda s: s.replace("jquery: 'https://cdnjs", "jq: 'https://cdnjs", 1),
    lambda s: s.replace("// HACK:", "// NOTE:", 1),
    lambda s: s.replace("const params = ", "var params = ", 1),
    lambda s: s.replace("requirejs(['jquery', 'd3']", "require(['d3', 'jquery']", 1),
    lambda s: s + '<script src="https://cdnjs.cloudflare.com/x.js"></script>',
], ids=["cdn-tag", "config", "paths", "comment", "params", "requirejs-call", "extra-script"])
def test_unexpected_bertviz_output_raises(monkeypatch, view, name, edit):
    _patched(monkeypatch, name, edit)
    with pytest.raises(BertvizTemplateError):
        VIEWS[view](*CASES["encoder-only"])


# ---- real browser ----------------------------------------------------------------------

from browser import csp_violations, launch, offline_page

_RENDERED = """(n) => {
  const svgs = document.querySelectorAll('.attnlab-section svg');
  return svgs.length === n && Array.from(svgs).every(s => s.childElementCount > 0);
}"""


@pytest.fixture(scope="module")
def browser():
    with launch() as b:
        yield b


def _open(browser, tmp_path, html, name="view.html"):
    path = tmp_path / name
    path.write_text(html, encoding="utf-8")
    page, log = offline_page(browser)
    page.goto(path.as_uri())
    return page, log


def _assert_clean(page, log):
    assert log.external == [], f"requests left the machine: {log.external}"
    assert csp_violations(page) == []
    assert log.dialogs == []
    assert log.errors == [], log.errors
    assert not [c for c in log.console if c.startswith("error")], log.console
    assert page.evaluate("document.getElementById('attnlab-error').hidden")
    assert page.evaluate("typeof window.__pwned") == "undefined"


def _svg_texts(page) -> list[str]:
    return page.evaluate("Array.from(document.querySelectorAll('svg text')).map(t => t.textContent)")


@pytest.mark.parametrize("case", CASES)
def test_browser_head_view(browser, tmp_path, case):
    tokens, attention = CASES[case]
    page, log = _open(browser, tmp_path, head_view_html(tokens, attention))
    n = len(SECTIONS[case])
    page.wait_for_function(_RENDERED, arg=n, timeout=15_000)
    assert page.evaluate("document.querySelectorAll('svg line').length") > 0
    # every stack of every section, at every layer (a deeper decoder's last layer included),
    # draws lines and shows its query tokens on the left and key tokens on the right
    for i, (names, n_layers) in enumerate(SECTIONS[case]):
        sec = page.locator(".attnlab-section").nth(i)
        assert sec.locator("select#layer option").count() == n_layers
        for j, name in enumerate(names):
            if len(names) > 1:
                sec.locator("select#filter").select_option(str(j))
            for layer in range(n_layers):
                sec.locator("select#layer").select_option(str(layer))
                left = sec.locator("svg g#left text").all_text_contents()
                right = sec.locator("svg g#right text").all_text_contents()
                q_side, k_side = {"Encoder": ("encoder", "encoder"), "Decoder": ("decoder", "decoder"),
                                  "Cross": ("decoder", "encoder")}[name]
                assert (left, right) == (tokens[q_side], tokens[k_side]), (name, layer)
                assert sec.locator("svg line").count() > 0
    page.wait_for_function(_RENDERED, arg=n, timeout=5_000)
    _assert_clean(page, log)


@pytest.mark.parametrize("case", CASES)
def test_browser_model_view(browser, tmp_path, case):
    tokens, attention = CASES[case]
    page, log = _open(browser, tmp_path, model_view_html(tokens, attention))
    sections = SECTIONS[case]
    page.wait_for_function(_RENDERED, arg=len(sections), timeout=15_000)
    for i, (names, n_layers) in enumerate(sections):
        sec = page.locator(".attnlab-section").nth(i)
        n_heads = attention[names[0].lower()][0].shape[1]
        assert sec.locator("rect.attn_background").count() == n_layers * n_heads
        # open the detail view of the last layer's first head; it lists the tokens
        box = sec.locator(f"#attn_background_{n_layers - 1}_0").bounding_box()
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        side = {"Encoder": "encoder", "Decoder": "decoder", "Cross": "decoder"}[names[0]]
        texts = sec.locator("text.token").all_text_contents()
        assert set(tokens[side]) <= set(texts), texts
    _assert_clean(page, log)


@pytest.mark.parametrize("with_csp", [True, False], ids=["csp", "csp-removed"])
@pytest.mark.parametrize("view", VIEWS)
def test_browser_malicious_tokens_stay_text(browser, tmp_path, view, with_csp):
    tokens, attention = _evil_case()
    html = VIEWS[view](tokens, attention)
    if not with_csp:  # the escaping alone must hold, and nothing may be fetched even without the CSP
        html, n = re.subn(r'<meta http-equiv="Content-Security-Policy"[^>]*>\n', "", html)
        assert n == 1
    page, log = _open(browser, tmp_path, html)
    page.wait_for_function(_RENDERED, arg=2, timeout=15_000)
    if view == "model":
        for i in range(2):
            box = page.locator(".attnlab-section").nth(i).locator("#attn_background_0_0").bounding_box()
            page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_timeout(300)
    texts = _svg_texts(page)
    assert {EVIL, EVIL_BARE, "x\u2028y", "<b>bold</b>", "a&amp;b"} <= set(texts), texts
    assert page.evaluate("document.querySelectorAll('img, b').length") == 0
    _assert_clean(page, log)


def test_browser_harness_catches_raw_bertviz(browser, tmp_path):
    """Control: bertviz's own output does run the token's markup and does call the CDN,
    so the checks above are able to fail."""
    tokens, attention = _evil_case()
    raw = bertviz.head_view(encoder_attention=attention["encoder"], encoder_tokens=tokens["encoder"],
                            html_action="return").data
    page, log = _open(browser, tmp_path, f"<!doctype html><html><body>{raw}</body></html>", "raw.html")
    page.wait_for_function("window.__pwned === 1", timeout=10_000)
    assert any("cdnjs.cloudflare.com" in u for u in log.external)


@pytest.mark.usefixtures("one_thread")
def test_the_page_keeps_no_copy_of_its_documents():
    """Issue 35 item 6: st.iframe asks urllib.parse whether a bertviz document is a URL, and urlsplit's LRU cache
    (128 entries) kept every document and its pieces alive — ≈ 45 MB per new 2,000-character minilm sentence, RSS
    554 → 2,680 MB over 20 sentences. After three different sentences, nothing allocated inside urllib.parse may
    still be held."""
    import gc
    import tracemalloc
    import urllib.parse

    from apptest import open_page
    urllib.parse.urlsplit.cache_clear()
    tracemalloc.start(3)
    try:
        for k in range(3):
            at = open_page("bertviz_views.py", "en-fr-tiny", timeout=240,
                           text=f"{k} " + "The dog is happy and the cat is tired. " * 12)
            assert at.get("iframe"), "no frame drawn"
        del at
        gc.collect()
        held = sum(stat.size for stat in tracemalloc.take_snapshot().statistics("filename")
                   if stat.traceback[0].filename == urllib.parse.__file__)
    finally:
        tracemalloc.stop()
    assert held < 256 * 1024, f"{held / 2**20:.1f} MiB held by urllib.parse after three pages"
