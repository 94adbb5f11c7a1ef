"""Issue 21 defect 2: everything a user or a model produced is shown as text — neither HTML nor Markdown is
interpreted. One helper (app.text.md) escapes it for every Streamlit call that renders Markdown; these tests check
the helper against a real CommonMark parser and parse pages/ and app/ for calls that put such text into Markdown
without it."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import markdown_it
import pytest

from app.text import WORD_JOINER, md

ROOT = Path(__file__).resolve().parents[2]

PAYLOADS = [
    "The dog ![p](http://198.51.100.7/t.png) is tired.",
    "[click](http://198.51.100.7/) and [x][1]\n\n[1]: http://198.51.100.7/",
    "<img src=http://198.51.100.7/t.png onerror=alert(1)>",
    "</script><script>alert(1)</script>",
    "<http://198.51.100.7/auto>",
    "`code` **bold** _it_ # head :red[x] $x^2$ ~~s~~ | a | b |",
    "a &lt;b&gt; &#60;img&#62; \\![p](x)",
    "1. one\n- two\n> quote\n## head",
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_md_shows_the_text_literally_and_fetches_nothing(payload):
    html = markdown_it.MarkdownIt("commonmark").enable("table").enable("strikethrough").render(md(payload))
    for tag in ("<img", "<a ", "<script", "<code", "<strong", "<em", "<h1", "<ol", "<ul", "<blockquote", "<table",
                "<s>", "<pre"):
        assert tag not in html, (payload, html)
    # the text itself survives, line for line (an empty line may end a paragraph) (markdown-it writes &, <, >, " as entities)
    shown = (html.replace("<p>", "").replace("</p>", "").replace("<br />\n", "\n").replace("&lt;", "<")
             .replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&").replace(WORD_JOINER, ""))
    assert [x for x in shown.splitlines() if x.strip()] == [x for x in payload.splitlines() if x.strip()]


# Streamlit calls whose text argument (or label/help) is rendered as Markdown
MARKDOWN_CALLS = {"markdown", "write", "caption", "info", "warning", "error", "success", "toast", "title", "header",
                  "subheader", "expander", "popover", "status", "metric", "button", "download_button", "link_button",
                  "page_link", "checkbox", "toggle", "radio", "selectbox", "multiselect", "select_slider", "slider",
                  "text_input", "text_area", "number_input", "file_uploader", "form_submit_button", "tabs",
                  "spinner", "progress", "table"}
# Parameters whose Streamlit docstring mentions Markdown but that hold no text shown to a reader
NOT_TEXT = {"unsafe_allow_html", "width", "anchors", "wrap", "bind", "cursor", "menu_items", "pages"}


def _documented_markdown_params(fn) -> list[str]:
    """The parameters of a Streamlit call whose own docstring says they render Markdown (label, help, a metric's
    value and delta, a radio's options, a tab's name, an image's caption, ...)."""
    import inspect
    doc = inspect.getdoc(fn) or ""
    section = re.search(r"^Parameters\n-+\n(.*?)(?:^\w[^\n]*\n-+\n|\Z)", doc, re.S | re.M)
    if not section:
        return []
    found, name, text = [], None, []
    for line in section.group(1).splitlines() + ["end_of_section :"]:
        head = re.match(r"^\*{0,2}(\w+)\s*:", line)
        if head:
            if name and re.search("markdown", "\n".join(text), re.I) and name not in NOT_TEXT:
                found.append(name)
            name, text = head.group(1), []
        else:
            text.append(line)
    return found


def markdown_arguments() -> dict[str, tuple[set[int], set[str], bool]]:
    """For every Streamlit call that renders Markdown in some argument: (positions, keyword names, all positional
    arguments (``st.write(*args)``)), read from Streamlit's own signatures and docstrings, so a parameter that
    renders Markdown is checked whichever position it is passed in (issue 35 item 5: st.metric's value)."""
    import inspect

    import streamlit as st
    out = {}
    for call in sorted(set(dir(st)) | MARKDOWN_CALLS):
        fn = getattr(st, call, None)
        if call.startswith("_") or not callable(fn):
            continue
        names = set(_documented_markdown_params(fn))
        if call in MARKDOWN_CALLS:  # the calls the first version of this check knew: their first argument too
            names |= {"body", "label", "text", "help"}
        if "options" in names:  # what format_func returns is the option shown
            names.add("format_func")
        try:
            params = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
        except (TypeError, ValueError):
            continue
        positions = {i for i, p in enumerate(params) if p.name in names
                     and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)}
        star = any(p.kind == p.VAR_POSITIONAL and p.name in names for p in params)
        keywords = {p.name for p in params if p.name in names}
        if positions or keywords or star:
            out[call] = (positions, keywords, star)
    return out


def test_the_check_knows_every_argument_that_renders_markdown():
    """The check reads Streamlit's own documentation: a metric's value and delta, widget labels and help, the
    options of a radio, tab names."""
    args = markdown_arguments()
    assert args["metric"][0] >= {0, 1, 2} and {"label", "value", "delta", "help"} <= args["metric"][1]
    assert 1 in args["radio"][0] and "options" in args["radio"][1] and "help" in args["selectbox"][1]
    assert args["write"][2] and 0 in args["tabs"][0] and 0 in args["caption"][0] and 1 in args["progress"][0]


# Names that hold what a user or a model produced (sentences, tokens, outputs, model and file names, error
# messages that may quote them). In a Markdown call they must pass through md().
USER_NAMES = {"e", "err", "exc", "msg", "message", "text", "texts", "tok", "toks", "token", "tokens", "q_tokens",
              "k_tokens", "src_toks", "out_toks", "tgt_toks", "output", "outputs", "sentence", "sentences", "left",
              "right", "source", "cands", "candidates", "pron", "what", "raw", "snap", "name", "names", "label",
              "shown_name", "pair", "value", "data", "note", "notes", "res", "word", "words", "lbl",
              "decode", "display", "public"}
HTML_ONLY = {"label", "escape"}  # figures.label / html.escape: HTML-escaped, Markdown still interpreted
TRUSTED = "# md: trusted"  # a line that renders markdown we wrote (lesson text, CSS), said so where it happens


def _unsafe(expr: ast.AST) -> list[str]:
    found = []

    def walk(node):
        if isinstance(node, ast.Call):
            fn = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if fn in ("md", "code"):
                return  # escaped (code: as inline code, where nothing is markup)
            if fn in HTML_ONLY:
                found.append(f"{ast.unparse(node)} (HTML-escaped only; use md())")
                return
            if fn in {"len", "int", "float", "round", "abs", "sum", "max", "min", "bool"}:
                return  # a number
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            spec = "".join(str(v.value) for v in node.format_spec.values if isinstance(v, ast.Constant))
            if re.fullmatch(r"[-+ #0-9,_.]*[bdeEfFgGnoxX%]?", spec):
                return  # formatted as a number
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp)):
            walk(node.elt)  # what is shown; the loop's iterable is not
            return
        if isinstance(node, ast.Name) and node.id in USER_NAMES:
            found.append(node.id)
        if isinstance(node, ast.Attribute) and node.attr in USER_NAMES:
            found.append(ast.unparse(node))
            return
        for child in ast.iter_child_nodes(node):
            walk(child)

    walk(expr)
    return found


def markdown_calls_without_md(root: Path) -> list[str]:
    bad, rendered = [], markdown_arguments()
    for path in sorted([*(root / "pages").glob("*.py"), *(root / "app").glob("*.py")]):
        src = path.read_text()
        lines = src.splitlines()
        for node in ast.walk(ast.parse(src)):
            if (isinstance(node, ast.Tuple) and len(node.elts) == 2 and isinstance(node.elts[0], ast.Constant)
                    and node.elts[0].value == "md"):  # app.lesson's ("md", text) blocks, drawn with st.markdown
                if any(TRUSTED in lines[i] for i in range(node.lineno - 1, node.end_lineno)):
                    continue
                bad += [f"{path.relative_to(root)}:{node.lineno}: (\"md\", … {w} …)" for w in _unsafe(node.elts[1])]
                continue
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in rendered):
                continue
            if node.func.attr == "write" and ast.unparse(node.func.value) not in {"st", "st.sidebar", "container"}:
                continue  # a file's write
            if any(TRUSTED in lines[i] for i in range(node.lineno - 1, node.end_lineno)):
                continue
            where = f"{path.relative_to(root)}:{node.lineno}"
            positions, keywords, star = rendered[node.func.attr]
            texts = [a for i, a in enumerate(node.args) if star or i in positions] + [
                k.value for k in node.keywords if k.arg in keywords]
            for arg in texts:
                if isinstance(arg, ast.Lambda):  # a format_func: what it returns is shown
                    arg = arg.body
                for what in _unsafe(arg):
                    bad.append(f"{where}: {node.func.attr}(… {what} …)")
            for k in node.keywords:
                if k.arg == "unsafe_allow_html" and not (isinstance(k.value, ast.Constant) and not k.value.value):
                    bad.append(f"{where}: unsafe_allow_html without '{TRUSTED}'")
    return bad


@pytest.mark.parametrize("payload", PAYLOADS + ["``two`` ticks", "`", "a\\b \\[MASK\\] --model en-fr"])
def test_code_shows_the_text_as_typed_inside_one_code_span(payload):
    from app.text import code
    html = markdown_it.MarkdownIt("commonmark").enable("table").enable("strikethrough").render(code(payload))
    for tag in ("<img", "<a ", "<script", "<strong", "<em", "<h1", "<ol", "<ul", "<blockquote", "<table", "<s>",
                "<pre"):
        assert tag not in html, (payload, html)
    assert html.count("<code>") == 1
    inner = html[html.index("<code>") + 6:html.index("</code>")]
    inner = inner.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")
    assert inner == " ".join(payload.splitlines()), (payload, html)  # backslashes and all, nothing escaped away


def test_md_is_never_put_inside_backticks():
    """Inside a code span a backslash is shown, not read: md()'s escapes would appear on the page (`en\\-fr`);
    app.text.code() is the helper for that."""
    found = [f"{p.relative_to(ROOT)}:{i}" for p in [*(ROOT / "pages").glob("*.py"), *(ROOT / "app").glob("*.py")]
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if re.search(r"`\{md\(", line)]
    assert not found, found


def test_no_page_renders_user_or_model_text_as_markdown():
    bad = markdown_calls_without_md(ROOT)
    assert not bad, "user/model text rendered as Markdown or HTML; wrap it in app.text.md():\n" + "\n".join(bad)


def test_the_helper_is_the_only_one():
    """One escaping helper for Markdown: no module keeps its own copy."""
    copies = [str(p.relative_to(ROOT)) for p in [*(ROOT / "pages").glob("*.py"), *(ROOT / "app").glob("*.py")]
              if p.name != "text.py" and "_MD_SPECIAL" in p.read_text()]
    assert not copies, copies


IMAGE_LINK = "The dog ![p](http://198.51.100.7/t.png) is [here](http://198.51.100.7/) tired."


def rendered_markdown(at) -> list[str]:
    """Every Markdown-rendering element of a page (text, captions, alerts, headers), rendered the way a browser
    would get it (CommonMark)."""
    parser = markdown_it.MarkdownIt("commonmark")
    els = [*at.markdown, *at.caption, *at.info, *at.warning, *at.error, *at.success, *at.subheader, *at.header]
    metrics = [str(part) for m in at.metric for part in (m.label, m.value, m.delta) if part]  # all three are Markdown
    return [parser.render(str(el.value)) for el in els] + [parser.render(part) for part in metrics]


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("page,model", [("variants.py", "lm"), ("mlm.py", "mlm"), ("qk.py", "lm"),
                                        ("positional.py", "lm"), ("attention.py", "lm")])
def test_a_shared_link_with_markdown_in_the_text_makes_no_image_or_link(page, model):
    """Issue 21 defect 2: /variants?model=lm&text=The dog ![p](http://198.51.100.7/t.png) … rendered an <img> that
    every viewer's browser fetched."""
    from apptest import open_page
    at = open_page(page, model, timeout=240, text=IMAGE_LINK)
    html = rendered_markdown(at)
    if page == "variants.py":  # the prompt is shown whole, as text
        assert any("![p](http://198.51.100.7/t.png)" in h.replace(WORD_JOINER, "") for h in html), html
    bad = [h for h in html if "<img" in h or "<a " in h]
    assert not bad, bad


@pytest.fixture
def markdown_vocabulary(monkeypatch):
    """A model whose vocabulary tokens (and decoded output) are Markdown images, as a user-trained model's can be
    (its tokenizer learned them from its training text)."""
    from app import cache
    from core.io.tokenizer import Tokenizer
    cache.clear()  # a run cached by an earlier test was decoded without the payload
    display, decode = Tokenizer.display, Tokenizer.decode
    monkeypatch.setattr(Tokenizer, "display", lambda self, ids, *a, **k: [
        f"![{t}](http://198.51.100.7/{i}.png)" for i, t in enumerate(display(self, ids, *a, **k))])
    monkeypatch.setattr(Tokenizer, "decode", lambda self, ids, *a, **k:
                        "[out](http://198.51.100.7/o) " + decode(self, ids, *a, **k))
    yield
    cache.clear()  # this test's payload runs must not reach a later test


@pytest.mark.usefixtures("one_thread", "markdown_vocabulary")
@pytest.mark.parametrize("page,model", [("qk.py", "lm"), ("layers.py", "lm"), ("mlm.py", "mlm"),
                                        ("attention.py", "en-fr-tiny")])
def test_vocabulary_tokens_and_model_output_are_shown_as_text(page, model):
    """Issue 21 defect 2, through a model: tokens on /qk, /layers, /mlm … were HTML-escaped only (figures.label)
    and put into Markdown, so a token ``![p](http://…)`` became an image every viewer's browser fetched."""
    from apptest import open_page
    at = open_page(page, model, timeout=240)
    html = rendered_markdown(at)
    assert any("198.51.100.7" in h for h in html), "the tokens should be shown (as text)"
    bad = [h for h in html if "<img" in h or "<a " in h]
    assert not bad, bad


@pytest.mark.usefixtures("one_thread", "markdown_vocabulary")
def test_a_token_shown_as_a_metric_value_is_text():
    """Issue 35 item 5: /layers' "Switch heads off" passed a token's display text as st.metric's value, which Streamlit
    renders as Markdown: a user model whose tokenizer holds ``![p](//198.51.100.7/c.png)`` made every viewer's browser
    fetch that address. (The source check above missed it: it read only a call's first argument.)"""
    from apptest import open_page
    at = open_page("layers.py", "lm", timeout=240)
    at.multiselect(key="ablate").set_value([("decoder.0.self_attn", 0)]).run()
    assert not at.exception, [e.value for e in at.exception]
    tops = [m for m in at.metric if m.label.startswith("Top token")]
    html = rendered_markdown(at)
    shown = [markdown_it.MarkdownIt("commonmark").render(m.value) for m in tops]
    assert len(tops) == 2 and all(re.search(r"!\[[^\]]*\]\(http://198\.51\.100\.7/\d+\.png\)", h) for h in [x.replace(WORD_JOINER, "") for x in shown]), shown  # as text
    bad = [h for h in html if "<img" in h or "<a " in h]
    assert not bad, bad
