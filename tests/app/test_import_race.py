"""A chart drawn in one session's thread while another thread imports pandas for the first time: plotly reads
the half-imported module from sys.modules and raises. ``import app`` imports pandas whole first (app/__init__.py)."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RACE = """
import sys, threading
sys.path.insert(0, {root!r})
{first}
import plotly.graph_objects as go
errors, done = [], threading.Event()
def load():
    import pandas  # what the first page that shows a table does, in its own thread
    done.set()
def draw():
    while not done.is_set():
        try:
            go.Figure().add_scatter(x=[1, 2], y=[3, 4])
        except Exception as e:
            errors.append(repr(e))
            return
threads = [threading.Thread(target=draw), threading.Thread(target=load)]
[t.start() for t in threads]
[t.join() for t in threads]
print(errors)
"""


def race(first: str) -> str:
    out = subprocess.run([sys.executable, "-c", RACE.format(root=str(ROOT), first=first)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip()


def test_a_chart_drawn_while_another_thread_imports_pandas_fails_without_the_eager_import():
    # the race itself, so the next test is known to have teeth on this plotly version
    assert "partially initialized module" in race(""), "plotly no longer races on pandas: drop app/__init__'s import"


def test_after_import_app_a_chart_drawn_beside_that_import_does_not_fail():
    assert race("import app") == "[]"
