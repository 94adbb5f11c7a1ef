"""Train a small transformer live: watch the loss fall and the attention pattern form, then explore the model."""
import os
from urllib.parse import quote, urlsplit

import streamlit as st

from app import figures, rooms, saved_models, sizes_view, uploads
from app import training_jobs as tj
from app import training_settings as settings
from app import training_series as ts
from app import training_view as tv
from app.guard import guarded, public
from app.shell import browser_token, forget_model, models, owned_models, remember_browser, text_box
from app.text import md
from core.config import ACTIVATIONS, POSITIONAL
from core.training.tasks import SYNTHETIC, TASKS, TEXT_TASKS
from core.training.trainer import TrainConfig

TASK_HELP = {"copy": "copy a random symbol sequence", "reverse": "reverse it (watch the anti-diagonal form)",
             "sort": "sort it", "en-fr-tiny": "translate English → French (the 97-word grammar)",
             "en-de-tiny": "translate English → German (the 97-word grammar)",
             "lm-tiny": "predict the next token of English text (the generated stories)",
             "lm": "predict the next token of real English prose (the Python docs and the Debian Handbook, "
                   "or your own file)",
             "mlm": "BERT pre-training: predict hidden words from both sides, and whether sentence B follows A "
                    "(bundled corpus or your own file)",
             "induction": "a random syllable sequence, then the same again: the second copy can be read off the "
                          "first (induction heads; the preset above sets the model that grows them)"}
# The broad en-fr / en-de corpus (300,000 generated pairs beside the human translations, ~2 GB while it is built) and
# its 9.9 M-parameter translators take hours of both cores: they are trained from the command line, not in a page.
BROWSER_TASKS = [t for t in TASKS if t in TASK_HELP]
view = st.session_state.get("view")
present, dark = (view.present, view.dark) if view else (False, False)
jobs: list = st.session_state.setdefault("train_jobs", [])
# the models this browser session trained: it may delete them and share them (app/rooms.py)
owned: list = st.session_state.setdefault(rooms.OWNED_KEY, [])
owner = rooms.owner_key(browser_token())  # and the runs this browser saved in earlier sessions (a reload, a tab)


def delete_saved(name: str) -> None:
    """Delete a model this session saved (a button's callback: the sidebar's list is right on the next run)."""
    try:
        saved_models.delete_model(name)
    except (ValueError, OSError) as e:
        st.session_state["tr_delete_error"] = public(str(e))
        return
    forget_model(name)
    mine = st.session_state.get(rooms.OWNED_KEY, [])
    if name in mine:
        mine.remove(name)
    if st.session_state.get("model") == name:
        st.session_state["model"] = (models() or [None])[0]


def share_saved(name: str, shared: bool) -> None:
    """Share a model this session saved with everyone on this server, or make it private again (a button's
    callback: every session's Model list follows on its next run)."""
    try:
        rooms.set_sharing(name, shared, owned_models())
    except (ValueError, OSError) as e:
        st.session_state["tr_share_error"] = public(str(e))


def model_link(name: str) -> str:
    """The address that opens model ``name`` in any browser (the app's start page with ``?model=NAME``); only the
    ``?model=`` part where the page does not know its own address."""
    query = f"?model={quote(name)}"
    try:
        url = st.context.url
    except Exception:  # no browser request (AppTest)
        url = None
    if not url:
        return query
    parts = urlsplit(url)
    root = parts.path.rstrip("/")
    root = root[:-len("/training")] if root.endswith("/training") else root
    return f"{parts.scheme}://{parts.netloc}{root}/{query}"


# A finished job's model is on disk; make sure no stale cache entry shadows it. The sidebar was drawn before this
# point (app/main.py): a run that finished since then is missing from its Model list, so the page runs once more.
published = False
for job in jobs:
    if job.finished and not job.published:
        if job.snapshot()["saved"]:
            forget_model(job.name)
            published = True
        job.published = True
if published:
    st.rerun()

st.title("Training")
st.caption("The sentence is not used while training (a model learns from a whole corpus); once a run is saved, "
           "pick it in the sidebar and every other page reads your sentence with it.")
current = jobs[-1] if jobs else None
running = current is not None and not current.finished
st.caption(f"Device: **{tj.device_name()}** · training jobs on this server: {tj.active_jobs()} of {tj.MAX_JOBS} · "
           f"each job in a process of its own on one CPU thread · limits: {settings.MAX_STEPS:,} steps, "
           f"d_model ≤ {settings.MAX_D_MODEL}, ≤ {settings.MAX_LAYERS} layers")

# ----------------------------------------------------------------- settings


def suggest():
    """Offer a free ``<task>-<n>`` name unless the learner typed their own."""
    st.session_state["tr_name"] = st.session_state["tr_suggested"] = \
        saved_models.suggest_name(st.session_state.get("tr_task", "reverse"))


if "tr_name" not in st.session_state or (st.session_state["tr_name"] == st.session_state.get("tr_suggested")
                                         and saved_models.name_taken(st.session_state["tr_name"])):
    suggest()

st.markdown("**Watch induction heads form.** A 2-layer, attention-only model reads random syllables, then the same "
            "syllables again. It cannot predict the first copy; the second can be read off the first: find the "
            "earlier occurrence of the current token and copy the token after it. For a while the loss hardly moves; "
            "then a previous-token head forms in layer 0, the layer-1 heads turn into induction heads and the loss on "
            "the second copy drops — the phase change of Olsson et al. (2022, *In-context learning and induction "
            "heads*, sec. 3). The charts below plot each head's induction score as it trains.")
yours = owned_models()  # read once a run: the page reruns every second while a job is live
full = saved_models.saved_limit_error(yours)  # a new run's model could not be saved: refused before it starts
if full:
    st.error(md(full))
if st.button(f"Train the induction preset ({settings.preset_estimate()})", key="tr_induction",
             disabled=running or bool(full), help="2 layers, d_model 64, 4 heads, no FFN, rotary positions, 2,000 "
                                                  "steps of 32 sequences of 2 × 16 syllables"):
    try:
        preset = tj.Job(settings.induction_preset(), saved_models.suggest_name("induction"), label="induction preset",
                        owner=owner)
        jobs.append(preset.start(owned=yours))
        owned.append(preset.name)
    except (tj.JobLimitError, ValueError) as e:
        st.error(md(e))
    else:
        st.rerun()

with st.expander("Run settings", expanded=not running):
    c1, c2 = st.columns([1, 2])
    task = c1.selectbox("Task", BROWSER_TASKS, index=BROWSER_TASKS.index("reverse"), key="tr_task", on_change=suggest)
    c2.markdown(f"**{task}**: {TASK_HELP[task]}")
    if task.endswith("-tiny"):
        c2.caption("The default en-fr / en-de translators (human translations beside a 300,000-pair dictionary "
                   "corpus, 9.9 M parameters) trained for 5 minutes on one GPU (en-fr then longer on a CPU "
                   "from those weights) and take hours on two cores from scratch, so they are trained from the "
                   "command line (scripts/gpu_recipe.py, core.train --init-from), not here.")
    text_path, upload_ok = None, True
    if task in TEXT_TASKS:
        source = st.radio("Text", ["Bundled English corpus", "My own UTF-8 text file"], horizontal=True, key="tr_source")
        if source.startswith("My own"):
            up = st.file_uploader(f"Plain UTF-8 text, at most {uploads.MAX_UPLOAD // 1_000_000} MB", type=["txt"],
                                  key="tr_upload")
            saved = st.session_state.setdefault("tr_uploads", {})
            if up is None:
                upload_ok = False
                st.info("Upload a text file, or use the bundled corpus.")
            elif up.file_id not in saved or (saved[up.file_id] and not os.path.exists(saved[up.file_id])):
                # new, or its copy was deleted when the run that used it ended: keep it (again) for the next run
                try:
                    saved[up.file_id] = str(uploads.save_upload(up.getvalue(), up.name))
                except ValueError as e:
                    saved[up.file_id] = None
                    st.session_state["tr_upload_error"] = str(e)
            if up is not None:
                text_path = saved.get(up.file_id)
                if text_path is None:
                    upload_ok = False
                    st.error(f"This file cannot be used: {md(st.session_state.get('tr_upload_error', 'invalid text'))}")

    st.markdown("**Model**")
    m = st.columns(5)
    d_model = m[0].number_input("d_model", 8, 4096, 64, 8, key="tr_d_model")
    layers = m[1].number_input("Layers", 1, 24, 2, key="tr_layers", help="per stack (encoder and decoder)")
    heads = m[2].number_input("Heads", 1, 64, 4, key="tr_heads")
    kv_heads = m[3].number_input("Key/value heads (0 = same as heads)", 0, 64, 0, key="tr_kv_heads",
                                 help="fewer than heads = grouped-query attention; 1 = multi-query")
    d_ff = m[4].number_input("d_ff", 8, 8192, 256, 8, key="tr_d_ff")
    a = st.columns(4)
    pos = a[0].selectbox("Positional encoding", POSITIONAL, key="tr_pos")
    norm = a[1].radio("Norm placement", ["post", "pre"], horizontal=True, key="tr_norm",
                      help="post = the original paper; pre = GPT-2 style, often steadier")
    act = a[2].selectbox("Activation", ACTIVATIONS, key="tr_act")
    attention_only = a[3].toggle("Attention-only", key="tr_attn_only", help="no feed-forward sublayers (d_ff unused)")
    st.markdown("**Optimisation**")
    o = st.columns(6)
    steps = o[0].number_input("Steps", 1, 100_000, 600, 50, key="tr_steps")
    batch = o[1].number_input("Batch size", 1, 4096, 64, 8, key="tr_batch")
    warmup = o[2].number_input("Warm-up steps", 0, 100_000, 100, 10, key="tr_warmup")
    lr = o[3].number_input("Learning-rate factor", 0.01, 20.0, 1.0, 0.1, key="tr_lr",
                           help="multiplies the paper's formula")
    smoothing = o[4].number_input("Label smoothing ε", 0.0, 0.9, 0.1, 0.05, key="tr_smoothing",
                                  help="The target gives the right token 1 − ε and spreads ε over the whole "
                                       "vocabulary (Szegedy et al. 2016; Vaswani et al. 2017, sec. 5.4, used 0.1: "
                                       "worse perplexity, better BLEU). With ε > 0 the loss cannot fall to 0: its "
                                       "floor is the entropy of that target. 0 = plain cross-entropy.")
    name = text_box("Save as", key="tr_name", limit=64, where=o[5])

cfg = TrainConfig(task=task, steps=int(steps), batch_size=int(batch), warmup=int(warmup), lr=float(lr),
                  d_model=int(d_model), layers=int(layers), heads=int(heads), kv_heads=int(kv_heads) or None,
                  d_ff=int(d_ff), pos_encoding=pos, norm=norm, activation=act, text=text_path,
                  attention_only=bool(attention_only), label_smoothing=float(smoothing),
                  dropout=0.0 if task in SYNTHETIC else 0.1)
errors = settings.check_settings(cfg, name)
for msg in errors:
    st.error(md(msg))

if not errors:
    xs, ys = ts.lr_curve(cfg)
    st.plotly_chart(figures.lines({"learning rate": ys}, xs, x_title="step", y_title="lr", present=present, dark=dark,
                                  title="Learning-rate schedule (warmup, then 1/√step)"), key="tr_lr_chart")
    st.caption("lrate = d_model^-0.5 · min(step^-0.5, step · warmup^-1.5) × factor (Vaswani et al. 2017, sec. 5.3)")

with st.expander("How many parameters, and where they sit"):
    sizes_view.section(cfg, present, dark)


if st.button("Start training", type="primary", disabled=bool(errors) or running or not upload_ok or bool(full),
             help="One run per session at a time." if running else None):
    try:
        jobs.append(tj.Job(cfg, name, owner=owner).start(owned=yours))
        owned.append(name)
        st.session_state["tr_suggested"] = name  # the name is now taken: the next run offers a fresh one
    except (tj.JobLimitError, ValueError) as e:
        st.error(md(e))
    else:
        finished = [j for j in jobs if j.finished]
        while len(jobs) > 10 and finished:  # keep the session's memory bounded
            jobs.remove(finished.pop(0))
        st.rerun()  # draw the page in its running state (settings folded, live progress ticking)


st.subheader("Progress")


def live():
    tv.live(jobs[-1] if jobs else None, present, dark)


st.fragment(run_every=1.0 if running else None)(guarded(live))()  # it reruns without app/main.py's guard

# ----------------------------------------------------------------- compare
done = [j for j in jobs if j.finished and j.snapshot()["history"]]
if len(done) >= 2:
    st.subheader("Compare two runs")
    labels = {f"#{j.id} {j.label}": j for j in done}
    pick = st.multiselect("Runs to overlay", list(labels), default=list(labels)[-2:], max_selections=2,
                          key="tr_compare", help="e.g. the same task with sinusoidal vs RoPE positions")
    smoothing = st.slider("Smoothing", 0.0, 0.99, 0.9, 0.01, key="tr_smooth")
    if pick:
        fig = figures.lines({}, title="Training loss", x_title="step", y_title="loss", present=present, dark=dark)
        for lbl in pick:
            xs, ys = ts.loss_series(labels[lbl].snapshot(), smoothing)
            fig.add_scatter(x=xs, y=ys, mode="lines", name=figures.label(lbl))
        st.plotly_chart(fig, key="tr_compare_chart")
elif done:
    st.caption("Finish a second run (e.g. change only the positional encoding) to overlay the two loss curves.")

# ----------------------------------------------------------------- the session's saved models
st.subheader("Your saved models")
st.caption(f"This server keeps at most {saved_models.MAX_SAVED_MODELS} saved models ({len(saved_models.names())} now), "
           f"{saved_models.MAX_SAVED_PER_SESSION} per browser. A model you train here is private: it is in the Model list of "
           "this browser only (it stays yours after a reload: a cookie holds this browser's key), and opens elsewhere "
           "by its link. Share it with everyone on this server (a teacher's run for the class) or delete it here; "
           "nobody else's.")
for error_key in ("tr_delete_error", "tr_share_error"):
    if st.session_state.get(error_key):
        st.error(md(st.session_state.pop(error_key)))
on_disk = set(saved_models.names())
mine = [n for n in yours if n in on_disk]
if not mine:
    st.caption("None yet.")
for saved_name in mine:
    shared = rooms.is_shared(saved_name)
    saving = any(j.name == saved_name and not j.finished for j in jobs)
    row = st.columns([4, 2, 1])
    row[0].markdown(f"**{md(saved_name)}** — " + ("shared with everyone on this server" if shared else
                                                 "private: this browser and whoever has its link"))
    row[0].code(model_link(saved_name), language=None)
    row[1].button("Make private" if shared else "Share with everyone on this server", key=f"tr_share_{saved_name}",
                  on_click=share_saved, args=(saved_name, not shared), disabled=saving)
    row[2].button("Delete", key=f"tr_delete_{saved_name}", on_click=delete_saved, args=(saved_name,),
                  disabled=saving)
remember_browser()  # last: its element is there on a session's first run only, so nothing after it can shift
