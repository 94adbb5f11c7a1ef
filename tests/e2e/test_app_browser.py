"""End-to-end: the real app in real headless Chromium, with no request allowed off 127.0.0.1."""
from urllib.parse import quote

import pytest

from core.io import registry

pytestmark = pytest.mark.e2e
MODEL = "en-fr" if "en-fr" in registry.bundled() else "reverse"


def tick_texts(page) -> list[str]:
    return page.eval_on_selector_all(".js-plotly-plot .xtick text", "els => els.map(e => e.textContent)")



def test_attention_page_follows_the_typed_sentence(visit):
    page = visit.open(f"/attention?model={MODEL}")
    sentence = "The dog is tired." if MODEL == "en-fr" else "9 8 7 6 5"
    box = page.get_by_label("Sentence")
    box.fill(sentence)
    box.press("Control+Enter")
    visit.settle()
    page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot .xtick text')]"
                           ".some(e => e.textContent === 'tired' || e.textContent === '9')", timeout=60_000)
    ticks = tick_texts(page)
    expected = ["dog", "tired"] if MODEL == "en-fr" else ["9", "8", "7"]
    assert all(t in ticks for t in expected), ticks
    visit.shot("attention", also_docs=True)
    assert visit.external == [], visit.external
    assert not visit.errors, visit.errors


def test_bertviz_view_renders_its_svg_offline(visit):
    page = visit.open(f"/bertviz?model={MODEL}")
    frame = page.frame_locator("iframe").first
    frame.locator("svg text").first.wait_for(timeout=60_000)
    texts = frame.locator("svg text").all_text_contents()
    assert len(texts) > 4
    visit.shot("bertviz", also_docs=True)
    assert visit.external == [], visit.external


# a script in the sentence, on every page: tests/e2e/test_lesson_and_pages_browser.py (it was also here for four pages)
@pytest.mark.parametrize("path,name", [("/decode", "decode")])
def test_other_pages_render_and_stay_local(visit, path, name):
    page = visit.open(f"{path}?model={MODEL}")
    if name == "decode":
        page.get_by_role("button", name="Run to end").click()
        visit.settle()
        page.wait_for_selector("[data-testid=stAlertContentSuccess]", timeout=60_000)
    page.wait_for_selector(".js-plotly-plot", timeout=60_000)
    visit.shot(name, also_docs=True)
    assert visit.external == [], visit.external
    assert not visit.errors, visit.errors



ADDRESSES = "See http://198.51.100.7/c and www.example.org or write to ann@example.org"


@pytest.mark.skipif("lm" not in registry.bundled(), reason="the shipped lm is promised (test_bundled)")
def test_bare_addresses_in_a_prompt_are_not_links(visit):
    """Streamlit's Markdown (GitHub-flavoured) turns bare web and mail addresses into links after backslash escapes
    are resolved: /variants shows the prompt back ("Prompt: …") and the lm's continuation, and before app.text.md
    broke them up all three addresses were <a> elements (http://198.51.100.7/c, http://www.example.org,
    mailto:ann@example.org). They must stay text."""
    page = visit.open(f"/variants?model=lm&text={quote(ADDRESSES)}")
    prompt = page.locator("[data-testid=stMarkdown]", has_text="Prompt:").first
    prompt.wait_for(timeout=120_000)
    assert "198.51.100.7/c" in prompt.inner_text() and "ann" in prompt.inner_text(), prompt.inner_text()
    links = page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
    assert not [h for h in links if "198.51" in h or "example.org" in h or h.startswith("mailto:")], links
    assert visit.external == [], visit.external
