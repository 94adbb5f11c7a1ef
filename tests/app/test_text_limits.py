"""Issue 35 item 8: every free-text box holds a bounded number of characters on the server too. A browser stops
typing at ``max_chars``; a client that writes to the websocket is not bound by the browser, and a 10 MB paste into
/coreference's Sentence A (a box without ``max_chars``) cost 25 s and +700 MB while every other visitor waited."""
import ast
from pathlib import Path

import pytest

from apptest import open_page

ROOT = Path(__file__).resolve().parents[2]


def test_every_text_box_is_the_bounded_one():
    """No page or shared module calls st.text_input / st.text_area itself but app.shell, whose text_box always
    passes max_chars and whose sidebar boxes pass MAX_TEXT."""
    calls = []
    for path in [*ROOT.joinpath("pages").glob("*.py"), *ROOT.joinpath("app").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("text_input", "text_area"):
                calls.append((str(path.relative_to(ROOT)), node))
    assert not [f"{p}:{n.lineno}" for p, n in calls if p != "app/shell.py"]
    assert all(any(k.arg == "max_chars" for k in n.keywords) for _, n in calls), [n.lineno for _, n in calls]


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize("page,model,label,limit", [
    ("coreference.py", "en-fr", "Sentence A", 2000),
    ("masking.py", "en-fr", "A shorter sentence for the same batch", 2000),
    ("mlm.py", "mlm", "Sentence A", 500)])
def test_a_huge_value_sent_past_the_browser_reaches_the_page_cut(page, model, label, limit):
    at = open_page(page, model, timeout=240)
    box = next(w for w in at.text_input if w.label == label)
    box.set_value("the dog " * 250_000)  # 2,000,000 characters; .input() would refuse it as a browser does
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert len(next(w for w in at.text_input if w.label == label).value) == limit
