"""End-to-end: train a tiny model in real Chromium, watch the progress and the loss curve move, then open the
trained model on the Attention page — with no request leaving 127.0.0.1."""
import os
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


def watch_until_saved(page, saved: str, look, polls: int) -> bool:
    """Call ``look()`` every 250 ms until the page says ``saved`` (True) or ``polls`` looks have passed (False);
    an error message on the page fails the test at once."""
    for _ in range(polls):
        look()
        if page.locator("[data-testid=stAlertContentSuccess]", has_text=saved).count():
            return True
        assert not page.locator("[data-testid=stAlertContentError]").count(), \
            page.locator("[data-testid=stAlertContentError]").first.inner_text()
        page.wait_for_timeout(250)
    return False


# Enough steps that the page's 1 s live refresh shows the run at two steps or more in between: with 500 the whole test
# took 41 s alone on 2 cores (2026-11-27); with 1,500 it took 98-138 s in the suite, near its 150 s polling budget
STEPS = 500


def test_train_watch_and_open_the_model(visit, server_log):
    page = visit.open("/training")
    page.get_by_role("button", name="Start training").wait_for(timeout=60_000)
    for label, value in [("d_model", 32), ("Layers", 1), ("Heads", 2), ("d_ff", 64), ("Steps", STEPS),
                         ("Batch size", 16), ("Warm-up steps", 20)]:
        set_number(visit, label, value)
    name = page.get_by_label("Save as", exact=True).input_value()
    assert re.fullmatch(r"reverse-\d+", name), name
    page.get_by_role("button", name="Start training").click()

    steps_seen, points_seen = set(), set()
    def look():  # the progress text and the curve move while the page stays live
        text = page.locator("[data-testid=stProgress]").first.inner_text() if page.locator(
            "[data-testid=stProgress]").count() else ""
        m = re.search(rf"step ([\d,]+) / {STEPS:,}", text)
        if m:
            steps_seen.add(int(m.group(1).replace(",", "")))
        points_seen.add(loss_points(page))

    if not watch_until_saved(page, f"Saved as {name}", look, polls=600):
        pytest.fail(f"training did not finish; steps seen {sorted(steps_seen)}")
    assert len([s for s in steps_seen if 0 < s < STEPS]) >= 2, sorted(steps_seen)  # progress advanced live
    assert len({p for p in points_seen if p}) >= 2, sorted(points_seen)  # the loss curve grew live
    # the child did not re-run the app's script without a server (issue 34: 114-128 warnings per run before)
    assert "ScriptRunContext" not in server_log.read_text(), server_log.read_text()[-3000:]
    visit.settle()
    page.get_by_role("button", name=f"Open {name} in the sidebar").click()
    visit.settle()
    # the run stays this browser's after a reload (issue 34 item 5): its owner token is in a cookie, the run's
    # sharing.json holds the token's hash; a reload is a new Streamlit session that knows nothing else of the first
    token = {c["name"]: c["value"] for c in visit.context.cookies()}.get("attention_lab_owner")
    assert token and re.fullmatch(r"[A-Za-z0-9_-]{32}", token), visit.context.cookies()
    page.reload()
    visit.settle()
    page.get_by_role("button", name="Start training").wait_for(timeout=60_000)
    assert page.get_by_role("button", name="Share with everyone on this server").count() >= 1, \
        page.locator("[data-testid=stMain]").inner_text()[-1500:]
    assert page.locator("[data-testid=stMarkdown]", has_text=f"{name} —").count() == 1

    page = visit.open(f"/attention?model={name}&text=3%201%204%201%205")
    page.wait_for_function("() => [...document.querySelectorAll('.js-plotly-plot .xtick text')]"
                           ".some(e => e.textContent === '4')", timeout=60_000)
    assert f"model={name}" in page.url
    assert "1+1 layers · 2 heads · d_model 32" in page.locator("[data-testid=stSidebar]").inner_text()  # ours
    assert visit.external == [], visit.external
    assert not visit.errors, visit.errors


def plotted(page, title: str) -> list[dict]:
    """The traces (name, x, y) of the chart whose title starts with ``title`` (Streamlit's theme wraps it in <b>), as
    the page plots them."""
    return page.evaluate("""(title) => {
        const p = [...document.querySelectorAll('.js-plotly-plot')].find(
            p => p.layout && p.layout.title
                 && String(p.layout.title.text || '').replace(/<[^>]*>/g, '').startsWith(title));
        return p ? p.data.map(d => ({name: d.name, x: [...d.x], y: [...d.y]})) : []; }""", title)


# The preset's whole run (2,000 steps, 3.7 min measured in Chromium during the suite) is what the page promises; the
# suite runs it only until the page has plotted a few measurements of every head and then stops it, because the phase
# change itself is asserted from the same preset by tests/core/test_induction.py (CLI, 1,500 steps).
# ATTENTION_LAB_FULL_PRESET=1 runs it to the end here and checks the scores rise in the browser too.
FULL_PRESET = os.environ.get("ATTENTION_LAB_FULL_PRESET") == "1"


def test_the_induction_preset_grows_induction_heads_live(visit):
    """Olsson et al.'s phase change in the browser: the preset measures every head's induction and previous-token
    score along the run and plots them live, starting near 0 (read from the numbers the page plots); with
    FULL_PRESET, layer 1's induction score rises through 0.3 with a previous-token head beside it."""
    import json
    import time
    from pathlib import Path
    page = visit.open("/training")
    button = page.get_by_role("button", name=re.compile(r"Train the induction preset \("))
    button.wait_for(timeout=60_000)
    t0 = time.monotonic()
    button.click()
    best_seen = []
    def look():
        traces = plotted(page, "Induction score of each head")
        if traces:
            best_seen.append(max(max(t["y"]) for t in traces))
        return traces

    if not FULL_PRESET:
        for _ in range(2400):
            traces = look()
            if traces and len(traces[0]["x"]) >= 3:
                break
            page.wait_for_timeout(250)
        else:
            pytest.fail("the preset plotted fewer than 3 measurements in 10 minutes")
        assert len(traces) == 8 and {t["name"] for t in traces} == {f"L{l} H{h}" for l in (0, 1) for h in range(4)}
        assert max(t["y"][0] for t in traces) < 0.3  # no induction head at the first measurement
        assert len(plotted(page, "Previous-token score of each head")) == 8
        # the page's own Stop button: while a rerun is in flight Streamlit's header shows a "Stop" button too
        page.get_by_test_id("stMainBlockContainer").get_by_role("button", name="Stop").click()
        page.locator("[data-testid=stAlertContentWarning]", has_text="Nothing was saved").wait_for(timeout=60_000)
        assert not visit.errors, visit.errors
        return
    if not watch_until_saved(page, "Saved as induction-", look, polls=2400):
        pytest.fail(f"the preset did not finish; best induction scores seen {best_seen[-5:]}")
    minutes = (time.monotonic() - t0) / 60
    visit.settle()
    induction = plotted(page, "Induction score of each head")
    titles = page.evaluate("() => [...document.querySelectorAll('.js-plotly-plot')].map("
                           "p => String((p.layout && p.layout.title && p.layout.title.text) || ''))")
    assert induction, (titles, best_seen[-5:], page.locator("[data-testid=stMain]").inner_text()[-1500:])
    assert len(induction) == 8 and {t["name"] for t in induction} == {f"L{l} H{h}" for l in (0, 1) for h in range(4)}
    first = max(t["y"][0] for t in induction)
    last_layer1 = [t["y"][-1] for t in induction if t["name"].startswith("L1")]
    assert first < 0.3, first  # no induction head at the first measurement
    assert max(last_layer1) >= 0.3, induction  # ... one in layer 1 by the end (0.93-0.98 measured)
    assert len(induction[0]["x"]) >= 10  # the curve was measured along the run, not only at its end
    previous = plotted(page, "Previous-token score of each head")
    assert max(t["y"][-1] for t in previous if t["name"].startswith("L0")) >= 0.5, previous
    out = Path(__file__).resolve().parents[2] / "test-artifacts"
    out.mkdir(exist_ok=True)
    (out / "induction-preset.json").write_text(json.dumps({"minutes": minutes, "induction": induction,
                                                            "previous_token": previous}, allow_nan=False))
    assert not visit.errors, visit.errors
