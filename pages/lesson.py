"""A guided lesson for classrooms: the class's sentence through the whole transformer, one step per screen."""
import streamlit as st

from app import coverage_view, lesson
from app.shell import models, page_view, sync_url, url_int
from app.text import md

st.title("Lesson: one sentence through the transformer")
view = page_view()
name = lesson.lesson_model(view.name, view.kind, models())
if name is None:
    st.info("The lesson follows a translation model; none is available here. Train one on the Training page.")
    st.stop()
if name != view.name:
    st.info(f"The lesson follows a translation model, so it uses **{md(name)}** (the sidebar's {md(view.name)} is "
            f"{view.kind}).")
ctx = lesson.Context(name, view.text, view.present, view.dark)
try:
    ctx.run  # noqa: B018 — tokenizes and traces once (cached); bad text gets its message here
except ValueError as e:
    st.info(md(e))
    st.stop()
if ctx.run.outside:
    coverage_view.notices([lesson.outside_note(ctx)])

n = len(lesson.STEPS)
if "lesson_step" not in st.session_state:
    st.session_state["lesson_step"] = url_int("step", n + 1, default=1, lower=1) - 1  # the URL counts like the page


def move(delta: int) -> None:
    st.session_state["lesson_step"] = min(n - 1, max(0, st.session_state["lesson_step"] + delta))


i = st.session_state["lesson_step"]
nav = st.columns([1, 1, 6])
nav[0].button("◀ Back", on_click=move, args=(-1,), disabled=i == 0, shortcut="Left", key="lesson_back")
nav[1].button("Next ▶", on_click=move, args=(1,), disabled=i == n - 1, shortcut="Right", key="lesson_next",
              type="primary")
nav[2].progress((i + 1) / n, text=f"Step {i + 1} of {n} · keyboard: ← →")
sync_url(step=i + 1)

step = lesson.build(ctx, i)
st.header(step.title)
st.markdown(step.text)  # md: trusted (the lesson's own text; what it quotes goes through md)
for k, (kind, value) in enumerate(step.blocks):
    if kind == "md":
        st.markdown(value)  # md: trusted (app.lesson builds it; quoted text through md)
    elif kind == "table":  # static: long cells wrap (a translation cut at its column's edge hid step 9's result);
        # its cells are Markdown, so text goes through md()
        st.table([{md(k): md(v) if isinstance(v, str) else v for k, v in row.items()} for row in value],
                 hide_index=True)
    else:
        st.plotly_chart(value, key=f"lesson_{i}_{k}")
st.caption(f"Source: {step.source}")  # md: trusted (a citation we wrote); after the figure, so it leads the screen

with st.expander(f"Handout for the class (all {n} steps)"):
    st.caption("One HTML file with every figure, for this sentence: open it, then print to PDF or save every figure "
               "as PNG. It works offline.")
    # the click is kept as state by its callback, not read as the button's one-run value: a run cut short by another
    # rerun (a second click, a key press) while the handout is drawn would otherwise lose it
    st.button("Prepare the handout", key="lesson_prepare", on_click=st.session_state.__setitem__,
              args=("lesson_handout_wanted", (name, view.text)))
    made_for, page = st.session_state.get("lesson_handout", (None, None))
    if st.session_state.get("lesson_handout_wanted") == (name, view.text) != made_for:
        with st.spinner(f"Drawing the {n} steps for the handout…"):
            made_for, page = st.session_state["lesson_handout"] = ((name, view.text), lesson.handout(ctx))
    if made_for == (name, view.text):
        st.download_button("Download handout (HTML)", page, "attention-lab-lesson.html", "text/html",
                           key="lesson_download")
