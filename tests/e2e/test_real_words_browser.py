"""End-to-end, real headless Chromium: the default translator on the sentences people type first (issue 16) —
the trophy / suitcase pair and the sister / car sentence come out as their reference translations, with no
unknown-word notice, and the screenshots of them are the README tour's."""
from urllib.parse import quote

import pytest

from core.data import broad

pytestmark = pytest.mark.e2e

CASES = [("trophy", "The trophy doesn't fit in the suitcase because it is too big."),
         ("trophy-small", "The trophy doesn't fit in the suitcase because it is too small."),
         ("sister", "My sister bought a new car because it was cheap.")]


@pytest.mark.parametrize("name, text", CASES)
def test_default_translator_translates_what_people_type_first(visit, name, text):
    page = visit.open(f"/attention?model=en-fr&text={quote(text)}")
    want = broad.translate(text, "fr")
    output = page.locator("[data-testid=stMarkdown]", has_text="Model output").first
    output.wait_for(timeout=60_000)
    assert want in output.inner_text(), (want, output.inner_text())
    assert page.locator("[data-testid=stAlert]", has_text="Unknown to").count() == 0
    visit.shot(name, also_docs=True)
    assert visit.external == [], visit.external
    assert not visit.errors, visit.errors
