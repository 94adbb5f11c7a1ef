"""End-to-end: train a tiny model in real Chromium, watch the progress and the loss curve move, then open the
trained model on the Attention page — with no request leaving 127.0.0.1."""
import re

import pytest

pytestmark = pytest.mark.e2e


def set_number(visit, label: str, value) -> None:
    box = visit.page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Enter")
    visit.settle()


def loss_points(page) -> int:
    """Points on the training-loss curve (the first line of the first chart after the progress bar)."""
    return page.evaluate("""() => {
        const plots = [...document.querySelectorAll('.js-plotly-plot')].filter(
            p => p.layout && p.layout.title && String(p.layout.title.text || '').includes('Training loss'));
        return plots.length ? plots[0].data[0].x.length : 0; }""")


STEPS = 1500


def test_train_watch_and_open_the_model(visit):
    page = visit.open("/training")
    page.get_by_role("button", name="Start training").wait_for(timeout=60_000)
    # long enough (several seconds) that the page's 1 s live refresh shows the run at two steps or more in between
    for label, value in [("d_model", 32), ("Layers", 1), ("Heads", 2), ("d_ff", 64), ("Steps", STEPS),
                         ("Batch size", 16), ("Warm-up steps", 20)]:
        set_number(visit, label, value)
    name = page.get_by_label("Save as", exact=True).input_value()
    assert re.fullmatch(r"reverse-\d+", name), name
    page.get_by_role("button", name="Start training").click()

    steps_seen, points_seen = set(), set()
    for _ in range(600):  # the progress text and the curve move while the page stays live
        text = page.locator("[data-testid=stProgress]").first.inner_text() if page.locator(
            "[data-testid=stProgress]").count() else ""
        m = re.search(rf"step ([\d,]+) / {STEPS:,}", text)
        if m:
            steps_seen.add(int(m.group(1).replace(",", "")))
        points_seen.add(loss_points(page))
        if page.locator("[data-testid=stAlertContentSuccess]", has_text=f"Saved as {name}").count():
            break
        assert not page.locator("[data-testid=stAlertContentError]").count(), \
            page.locator("[data-testid=stAlertContentError]").first.inner_text()
        page.wait_for_timeout(250)
    else:
        pytest.fail(f"training did not finish; steps seen {sorted(steps_seen)}")
    assert len([s for s in steps_seen if 0 < s < STEPS]) >= 2, sorted(steps_seen)  # progress advanced live
    assert len({p for p in points_seen if p}) >= 2, sorted(points_seen)  # the loss curve grew live
    visit.settle()
    page.get_by_role("button", name=f"Open {name} in the sidebar").click()
    visit.settle()

    page = visit.open(f"/attention?model={name}&text=3%201%204%201%205")
    page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot .xtick text')]"
                           ".some(e => e.textContent === '4')", timeout=60_000)
    assert f"model={name}" in page.url
    assert "1+1 layers · 2 heads · d_model 32" in page.locator("[data-testid=stSidebar]").inner_text()  # ours
    assert visit.external == [], visit.external
    assert not visit.errors, visit.errors
