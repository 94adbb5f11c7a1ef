"""Opening a page of the real app in Streamlit's AppTest, the way every page test does."""
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
    return at
