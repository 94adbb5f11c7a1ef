"""End-to-end, real headless Chromium: a sentence with words the model never saw gets them named on the page, and
the output is marked as outside what the model was trained on, not presented as a translation."""
from urllib.parse import quote

import pytest

pytestmark = pytest.mark.e2e

OUTSIDE = "outside what this model was trained on — not a translation"


def alert_text(page, has_text: str, timeout=60_000) -> str:
    alert = page.locator("[data-testid=stAlert]", has_text=has_text).first
    alert.wait_for(timeout=timeout)
    return alert.inner_text()


def test_a_link_with_unknown_words_names_them_and_typing_updates_it(visit):
    text = "The animal didn't cross the zorblax because it was too blorptastic."
    page = visit.open(f"/attention?model=en-fr&text={quote(text)}")
    note = alert_text(page, "Unknown to en-fr")
    assert "Unknown to en-fr: zorblax, blorptastic." in note, note
    output = page.locator("[data-testid=stMarkdown]", has_text="Model output").first.inner_text()
    assert OUTSIDE in output, output
    visit.shot("coverage-unknown-words", also_docs=True)

    box = page.get_by_label("Sentence")
    box.fill("The quokka didn't cross the street because it was too tired.")
    box.press("Control+Enter")
    visit.settle()
    note = alert_text(page, "quokka")
    assert "Unknown to en-fr: quokka." in note and "zorblax" not in note, note

    box.fill("The animal didn't cross the street because it was too tired.")
    box.press("Control+Enter")
    visit.settle()
    page.locator("[data-testid=stMarkdown]", has_text="Model output:").first.wait_for(timeout=60_000)
    assert page.locator("[data-testid=stAlert]", has_text="Unknown to").count() == 0
    assert OUTSIDE not in page.locator("[data-testid=stMain]").inner_text()
    assert visit.external == [], visit.external
    assert not visit.errors, visit.errors


def test_the_decode_page_names_them_too(visit):
    text = "My zorblax is blorptastic."
    page = visit.open(f"/decode?model=en-fr&text={quote(text)}")
    note = alert_text(page, "Unknown to en-fr")
    assert "zorblax" in note and "blorptastic" in note, note
    page.get_by_role("button", name="Run to end").click()
    visit.settle()
    marked = page.locator("[data-testid=stMarkdown]", has_text="Output so far").first
    marked.wait_for(timeout=60_000)
    assert OUTSIDE in marked.inner_text()
    assert visit.external == [], visit.external
