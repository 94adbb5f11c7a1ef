"""app.progress: the bar's text (count, seconds per item measured from the items done, time left), a run to the end
that leaves nothing behind, and a stopped run that returns what was done and offers to run to the end."""
from streamlit.testing.v1 import AppTest

from app.progress import estimate_text


def test_the_estimate_is_measured_from_the_items_done():
    assert estimate_text("Scoring", 0, 10, 0.0) == "Scoring: 0 of 10 · measuring this machine's speed…"
    assert estimate_text("Scoring", 4, 10, 2.0) == "Scoring: 4 of 10 · 0.50 s each on this machine · about 3 s left"
    assert estimate_text("Scoring", 10, 10, 5.0).endswith("almost done")


def _script():
    import streamlit as st

    from app import progress

    def compute(tell):
        done = []
        for i in range(5):
            done.append(i * i)
            tell(len(done), 5, list(done))
        return done

    if st.session_state.get("simulate_stop"):  # the state a Stop click leaves: a partial result, still running
        st.session_state["_progress_squares"] = {"k": 2, "n": 5, "partial": [0, 1], "running": True}
        st.session_state["squares_stop"] = True
        st.session_state["simulate_stop"] = False
    result, complete = progress.run("squares", "Squaring", compute)
    st.write(f"result={result} complete={complete}")


def test_a_complete_run_returns_everything_and_a_stopped_one_what_was_done():
    at = AppTest.from_function(_script, default_timeout=30)
    at.run()
    assert not at.exception and "result=[0, 1, 4, 9, 16] complete=True" in [m.value for m in at.markdown]
    assert at.session_state["_progress_squares"] == {}  # nothing kept after a run to the end
    at.session_state["simulate_stop"] = True
    at.run()
    assert "result=[0, 1] complete=False" in [m.value for m in at.markdown]
    assert any("Stopped after 2 of 5" in w.value for w in at.warning)
    at.button(key="squares_again").click().run()  # run it to the end
    assert "result=[0, 1, 4, 9, 16] complete=True" in [m.value for m in at.markdown]
