"""End-to-end, real headless Chromium: the default translator on the sentences people type first (issue 16) —
the trophy / suitcase pair and the sister / car sentence come out as their reference translations, and an ordinary
sentence in none of the generated frames as one of its human translations, with no unknown-word notice; the
screenshots of them are the README tour's."""
from urllib.parse import quote

import pytest

from core.data import broad

pytestmark = pytest.mark.e2e

CASES = [("trophy", "The trophy doesn't fit in the suitcase because it is too big."),
         ("trophy-small", "The trophy doesn't fit in the suitcase because it is too small."),
         ("sister", "My sister bought a new car because it was cheap.")]


# outside every frame (broad.parse refuses it): its references are a person's, either reading of the progressive
ORDINARY = ("The children are playing in the garden.",
            ("Les enfants jouent dans le jardin.", "Les enfants sont en train de jouer dans le jardin."))


@pytest.mark.parametrize("name, text", CASES + [("ordinary", ORDINARY[0])])
def test_default_translator_translates_what_people_type_first(visit, name, text):
    page = visit.open(f"/attention?model=en-fr&text={quote(text)}")
    wants = ORDINARY[1] if text == ORDINARY[0] else (broad.translate(text, "fr"),)
    output = page.locator("[data-testid=stMarkdown]", has_text="Model output").first
    output.wait_for(timeout=60_000)
    assert any(want in output.inner_text() for want in wants), (wants, output.inner_text())
    assert page.locator("[data-testid=stAlert]", has_text="Unknown to").count() == 0
    visit.shot(name, also_docs=True)
    assert visit.external == [], visit.external
    assert not visit.errors, visit.errors


def test_the_ordinary_sentence_is_outside_the_generated_frames():
    with pytest.raises(ValueError):
        broad.parse(ORDINARY[0])
