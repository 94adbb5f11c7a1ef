"""Opening a page of the real app in Streamlit's AppTest, the way every page test does."""
import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]


def open_page(page: str, model: str | None = None, timeout: float = 120, **params) -> AppTest:
    """``app/main.py`` with ``model`` and other URL ``params``, switched to ``pages/<page>``; fails on any
    exception or ``st.error`` on the way."""
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=timeout)
    if model is not None:
        at.query_params["model"] = model
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page(f"../pages/{page}")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    if model is not None:
        assert at.sidebar.selectbox(key="model").value == model
    assert not unlabelled(at), unlabelled(at)
    return at


def unlabelled(at: AppTest) -> list[str]:
    """Charts on the page that a reader cannot decode: no title, an axis with tick labels but no title, or several
    traces with the legend switched off."""
    out = []
    for el in at.get("plotly_chart"):
        fig = json.loads(el.proto.spec)
        layout = fig["layout"]
        title = (layout.get("title") or {}).get("text") or ""
        if not title:
            out.append(f"a chart without a title ({el.proto.id})")
        for name, axis in layout.items():
            if (not name.startswith(("xaxis", "yaxis")) or axis.get("showticklabels") is False
                    or axis.get("visible") is False):
                continue
            if not (axis.get("title") or {}).get("text"):
                out.append(f"{title[:50]!r}: {name} has no title")
        if sum(bool(t.get("name")) for t in fig["data"]) > 1 and layout.get("showlegend") is False:
            out.append(f"{title[:50]!r}: several named traces, legend hidden")
    return out


def type_sentence(at: AppTest, text: str) -> AppTest:
    """Type ``text`` into the shared Sentence box (the main area, app.shell.sentence_box) and run. A page without
    the box (the Start page, Training) is run once first, so that the box of the page switched to exists."""
    if not any(w.key == "sentence" for w in [*at.text_area, *at.text_input]):
        at.run()
    box = next(w for w in [*at.text_area, *at.text_input] if w.key == "sentence")  # one line in presentation mode
    box.set_value(text)
    return at.run()


def charts(at: AppTest) -> dict:
    """The plotly charts an AppTest drew, by their key (the part of the element id after its prefix), as specs."""
    return {el.proto.id.split("-", 2)[-1]: json.loads(el.proto.spec) for el in at.get("plotly_chart")}


def ran(at: AppTest) -> AppTest:
    """Run ``at`` once more and fail on any exception or ``st.error``."""
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at
