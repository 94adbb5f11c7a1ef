"""The Training page's live part: the progress of the session's latest run, redrawn every second (pages/training.py
draws the settings, the comparison and the saved-model list around it)."""
import streamlit as st

from app import figures
from app import training_jobs as tj
from app import training_series as ts
from app.guard import public
from app.text import md
from core.training.tasks import SYNTHETIC


def fmt_s(seconds) -> str:
    """Seconds as "3 min 05 s" or "42 s"; "—" for None."""
    if seconds is None:
        return "—"
    m, s = divmod(int(round(seconds)), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def use_model(name: str, task: str) -> None:
    """Pick a freshly trained model in the sidebar, with a sentence of its own kind (a button's callback)."""
    st.session_state["model"] = name
    if task in SYNTHETIC:
        st.session_state["text"], st.session_state["tgt"] = "3 1 4 1 5 9 2 6", ""
    elif task == "induction":  # its own syllables, repeated: the Attention page then shows the induction stripe
        st.session_state["text"], st.session_state["tgt"] = "ba ke mo tu ri va ba ke mo tu ri va", ""



def live(job, present: bool, dark: bool) -> None:
    """The Progress section of the Training page for ``job`` (the session's latest run, or None): controls, counters,
    loss and held-out curves, head scores and attention snapshots; redrawn every second by the page's fragment."""
    if job is None:
        st.info("Choose settings and press **Start training**. Small runs (reverse, d_model 64, 600 steps) take "
                "about a minute on a CPU.")
        return
    snap = job.snapshot()
    status = snap["status"]
    b = st.columns([1, 1, 6])
    if status in ("running", "paused"):
        if status == "paused":
            b[0].button("Resume", on_click=job.resume, key="tr_resume")
        else:
            b[0].button("Pause", on_click=job.pause, key="tr_pause")
        b[1].button("Stop", on_click=job.stop, key="tr_stop")
    b[2].markdown(f"**{md(snap['label'])}** — {md(status)}")
    st.progress(snap["step"] / snap["steps"], text=f"step {snap['step']:,} / {snap['steps']:,}")
    last = snap["history"][-1] if snap["history"] else None
    k = st.columns(4)
    k[0].metric("Loss", f"{last['loss']:.4f}" if last else "—")
    k[1].metric("Tokens / s", f"{snap['tokens_per_s']:,.0f}")
    k[2].metric("Elapsed", md(fmt_s(snap["elapsed"])))
    k[3].metric("Remaining (est.)", md(fmt_s(snap["remaining"])) if status in ("running", "paused") else "—")
    if status == "running" and not last:
        st.caption("Preparing data and model…")
    if status == "done":
        st.success(f"Saved as **{md(snap['saved'])}** — pick it in the sidebar.")
        st.button(f"Open {md(snap['saved'])} in the sidebar", on_click=use_model, args=(snap["saved"], snap["task"]),
                  key=f"tr_use_{snap['id']}")
    elif status == "stopped":
        st.warning(md((snap["error"] or "Stopped.") + " Nothing was saved."))
    elif status == "error":
        st.error(f"Training failed: {md(public(snap['error'] or ''))}")

    if snap["history"]:
        g1, g2 = st.columns(2)
        xs, ys = ts.loss_series(snap)
        series = {"loss": ys} if len(ys) < 20 else {"loss": ys, "smoothed": ts.smooth(ys)}
        g1.plotly_chart(figures.lines(series, xs, title="Training loss", x_title="step", y_title="loss",
                                      present=present, dark=dark), key="tr_loss")
        evals = ts.eval_series(snap)
        if evals:
            g2.plotly_chart(figures.lines({}, title="Held-out metrics", x_title="step", y_title=", ".join(evals),
                                          points=evals, legend=True, present=present, dark=dark), key="tr_metrics")
        else:
            g2.caption("Held-out metrics (exact match, pronoun accuracy or perplexity) appear at each evaluation.")
    if snap["head_scores"]:
        h1, h2 = st.columns(2)
        for col, kind, title in ((h1, "induction", "Induction score of each head"),
                                 (h2, "previous_token", "Previous-token score of each head")):
            col.plotly_chart(figures.lines({}, title=title, x_title="step", y_title="score",
                                           points=ts.head_score_series(snap, kind), y_range=[0, 1], present=present,
                                           dark=dark), key=f"tr_heads_{kind}")
        st.caption("Measured at each evaluation on 16 new repeated sequences (core.find_heads): induction = the "
                   "attention from each token of the second copy to the token after its first occurrence; "
                   "previous-token = the attention from each token to the one before it. 1.0 = all of a head's "
                   "attention.")
    if snap["snapshots"]:
        first = next((s for s in snap["snapshots"] if "weights" in s), None)
        if first:
            kind = {"cross": "cross-attention", "encoder": "encoder self-attention"}.get(first["kind"],
                                                                                     "decoder self-attention")
            st.markdown(f"**Attention while learning** — {kind}, last layer, mean over heads, on a fixed probe")
        cols = st.columns(3)
        for i, s in enumerate(snap["snapshots"]):
            col = cols[i % 3]
            if "weights" not in s:
                col.caption(f"step {s['step']}: no picture ({md(s['error'])})")
                continue
            col.plotly_chart(figures.heatmap(s["weights"], s["q_tokens"], s["k_tokens"], title=f"step {s['step']}",
                                             present=present, dark=dark, compact=True), key=f"tr_snap_{i}")
    if status in tj.FINISHED and not job.published:
        st.rerun(scope="app")  # the page (sidebar, buttons, comparison) catches up with the finished run
