"""Training jobs for the Training page: ``core.training.trainer.train`` in a process of its own, read through snapshots.

Each job trains in a child process (multiprocessing, spawn) on :data:`TRAIN_THREADS` torch threads: its thread
settings cannot reach the server's, a crash in it ends only the job, and the server's Python keeps its own lock
for the pages (a job in a thread of the server slowed every page of that server). The child sends every step
(loss, held-out metrics, attention snapshots, head scores) down a pipe; a reader thread in the server writes them
into the :class:`Job` under a lock, and the page only reads copies (:meth:`Job.snapshot`). Stop and pause are
events both processes share. A module-level registry limits how many jobs the whole server runs at once; a job's
settings are checked by :func:`app.training_settings.check_settings` before it is created.

A finished run is copied from its temporary folder into ``registry.user_dir()/<name>``, saved private
(app/rooms.py): the sidebar's model picker of the browser session that trained it lists it on every page, and other
sessions only once that session shares it or when they open it by its name (a ``?model=`` link). Its name and the caps
on saved models are :mod:`app.saved_models`'s; this module tells it which names running jobs will save
(:func:`names_in_progress`).

A text a learner uploads to train on is kept by :mod:`app.uploads`; this module tells it which texts running jobs
still need (:func:`texts_in_use`) and releases a job's text when the job ends.
"""
from __future__ import annotations

import dataclasses
import fcntl
import itertools
import multiprocessing
import multiprocessing.spawn
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import torch

from app import rooms, saved_models, training_settings, uploads
from app.training_series import is_count
from core.inference.runner import forward_ids
from core.io import checkpoint, registry
from core.training.tasks import SYNTHETIC, TRANSLATION
from core.io.tokenizer import BOS, EOS
from core.training.trainer import TrainConfig, pick_device, train

MAX_JOBS = 2  # concurrent training jobs on the whole server: every replica sharing ATTENTION_LAB_DATA together
# A job that has not finished preparing (data, tokenizer, model) this long after it started is ended: the slot it holds
# is the whole server's. Preparation takes 0-10 s here (lm 10 s, en-fr-tiny 8 s, a 2 MB upload of 1,000-character
# words ~5 s); this leaves room for a loaded machine.
MAX_PREPARE_S = 300.0
MAX_PAUSE_S = 600.0  # a job paused longer than this is stopped, so it does not hold a slot forever
MAX_RUN_S = 1800.0  # wall-clock limit of one run
N_SNAPSHOTS = 6
N_HEAD_SCORES = 40  # the induction task: head scores measured this many times over a run
PROBE_SYNTHETIC = "3 1 4 1 5 9"
PROBE_INDUCTION = "ba ke mo tu ri va lo ne ba ke mo tu ri va lo ne"
PROBE_SENTENCE = "The animal didn't cross the street because it was too tired."
# words.json too: without it a model trained here named none of a sentence's unknown words
MODEL_FILES = (checkpoint.WEIGHTS, checkpoint.CONFIG, checkpoint.TOKENIZER, checkpoint.CARD, checkpoint.WORDS)
FINISHED = ("done", "stopped", "error")

TRAIN_THREADS = 1  # torch threads of one training job's process
# a job's process yields the CPU to the pages: in a class of 30 with a job training the whole time (2 cores, nginx,
# 2 replicas), the pages' p95 went from 12.0 s at the same priority to the figure in docs/RELIABILITY.md
TRAIN_NICE = 10
_MP = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of the server's threads or state is forked
_CHILD_PREFIX = "attention-lab-train-"  # the name of every job's process


def _main_left_out(get_preparation_data):
    """``multiprocessing.spawn.get_preparation_data`` without the parent's ``__main__`` for a job's process.

    A spawned child first re-runs its parent's ``__main__``; while Streamlit runs a page, that is the app's script
    (Streamlit sets ``sys.modules["__main__"]`` to it), so every job's child ran app/main.py without a server: 114-128
    "missing ScriptRunContext" warnings in the server's log per run. A job's child needs nothing from
    ``__main__``: its target, :func:`_child`, is imported from this module by name. Other processes are untouched."""
    def prepare(name):
        data = get_preparation_data(name)
        if str(name).startswith(_CHILD_PREFIX):
            data.pop("init_main_from_path", None)
            data.pop("init_main_from_name", None)
        return data
    prepare.wrapped = get_preparation_data
    return prepare


if not hasattr(multiprocessing.spawn.get_preparation_data, "wrapped"):  # once, even if this module is reloaded
    multiprocessing.spawn.get_preparation_data = _main_left_out(multiprocessing.spawn.get_preparation_data)

_lock = threading.Lock()
_active: set["Job"] = set()
_ids = itertools.count(1)


def _slot_files() -> list[Path]:
    folder = registry.data_dir() / "training-slots"
    folder.mkdir(parents=True, exist_ok=True)
    return [folder / f"{i}.lock" for i in range(MAX_JOBS)]


def take_slot():
    """One of the server's :data:`MAX_JOBS` training slots, or None when all are taken. A slot is an exclusive
    ``flock`` on ``<data>/training-slots/<i>.lock``: it is shared by every replica serving the same data folder (a
    limit kept per process let two replicas run twice the limit on 2 cores), and the kernel releases it when its
    holder's file is closed or its process dies, so a crashed replica never keeps a slot. Close the returned file to
    release it."""
    for path in _slot_files():
        f = open(path, "a")
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return f
        except BlockingIOError:
            f.close()
    return None


def slots_taken() -> int:
    """How many training slots are held now, by any replica (each slot is probed and let go at once)."""
    taken = 0
    for path in _slot_files():
        with open(path, "a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(f, fcntl.LOCK_UN)
            except BlockingIOError:
                taken += 1
    return taken


class JobLimitError(RuntimeError):
    """The server already runs :data:`MAX_JOBS` training jobs."""


class SavedModelLimitError(JobLimitError):
    """A new run would pass :data:`app.saved_models.MAX_SAVED_MODELS` (the server) or
    :data:`app.saved_models.MAX_SAVED_PER_SESSION` (a session)."""


def device_name() -> str:
    """The kind of torch device a job trains on here ("cpu", "cuda", ...)."""
    return pick_device("auto").type


def active_jobs() -> int:
    """Training jobs running on the whole server (every replica sharing the data folder)."""
    return slots_taken()


def texts_in_use() -> set[str]:
    """The text files the running jobs of this server process train on: uploads that must not be deleted yet
    (registered with :func:`app.uploads.register_in_use`)."""
    with _lock:
        return {j.cfg.text for j in _active if j.cfg.text}


uploads.register_in_use(__name__, texts_in_use)


def names_in_progress() -> set[str]:
    """The names of the models the running jobs of this server process will save: taken, counted towards the caps
    and not deletable (registered with :func:`app.saved_models.register_pending`)."""
    with _lock:
        return {j.name for j in _active}


saved_models.register_pending(__name__, names_in_progress)


# --------------------------------------------------------------------------- the job

class Job:
    """One training run in a child process. Create, then :meth:`start`; read with :meth:`snapshot`."""

    def __init__(self, cfg: TrainConfig, name: str, label: str | None = None, owner: str | None = None):
        """``owner``: the owner key (app.rooms.owner_key) of the browser that starts it, recorded with the saved
        model so that the browser keeps its rights after a reload."""
        cfg = dataclasses.replace(cfg, history=[])
        errors = training_settings.check_settings(cfg, name)
        if errors:
            raise ValueError(" ".join(errors))
        self.id = next(_ids)
        self.cfg, self.name, self.owner = cfg, name, owner
        self.label = label or f"{name} ({cfg.task}, {cfg.pos_encoding}, d{cfg.d_model} L{cfg.layers} H{cfg.heads})"
        self.published = False  # the page has announced the saved model
        self._lock = threading.Lock()
        self._stop, self._pause = _MP.Event(), _MP.Event()
        self._status, self._error, self._saved = "created", None, None
        self._history: list[dict] = []  # one row per step
        self._evals: list[dict] = []  # {"step": s, **metrics} each time the held-out set was scored
        self._snapshots: list[dict] = []
        self._head_scores: list[dict] = []  # the induction task: {"step", "induction", "previous_token"} per eval
        self._threads: set[int] = set()  # torch threads the child reported at each step
        self._nice: set[int] = set()  # and its niceness
        self._paused_s, self._paused_since = 0.0, None
        self._snap_steps = sorted({max(1, round(i * cfg.steps / (N_SNAPSHOTS - 1))) for i in range(N_SNAPSHOTS)})
        self._thread: threading.Thread | None = None  # reads the child's messages
        self._proc = None
        self._slot = None  # the open lock file of the training slot this job holds (take_slot)

    # ---- control (page side)
    def start(self, owned=()) -> "Job":
        """Start training in a child process. ``owned``: the names of the models this browser session trained (for
        :data:`app.saved_models.MAX_SAVED_PER_SESSION`). Raises :class:`JobLimitError` (server busy, or the saved-model limits) or
        ValueError."""
        if self.cfg.text:  # server side, whatever path the text came by: a text the tokenizer could not train on soon
            from core.data.lm import load_text
            uploads.check_text(load_text(self.cfg.text, max_bytes=uploads.MAX_UPLOAD), "The text")
        with _lock:
            if any(j.name == self.name for j in _active):
                raise ValueError(f"Another run is already saving a model called {self.name!r}; choose another name.")
            refused = saved_models.saved_limit_error(owned, running={j.name for j in _active})
            if refused:
                raise SavedModelLimitError(refused)
            self._slot = take_slot()
            if self._slot is None:
                raise JobLimitError(f"The server is already training {MAX_JOBS} models (the limit is {MAX_JOBS}, "
                                    "for every replica together). Wait until one finishes, then start again.")
            _active.add(self)
        self._set(status="running")
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._work, name=f"train-{self.id}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._pause.clear()

    def pause(self) -> None:
        if not self._stop.is_set():
            self._pause.set()

    def resume(self) -> None:
        self._pause.clear()

    @property
    def paused(self) -> bool:
        return self._pause.is_set()

    @property
    def finished(self) -> bool:
        with self._lock:
            return self._status in FINISHED

    def join(self, timeout: float | None = None) -> bool:
        if self._thread is not None:
            self._thread.join(timeout)
        return self.finished

    def snapshot(self) -> dict:
        """A consistent copy of everything the page draws."""
        with self._lock:
            last = self._history[-1] if self._history else None
            paused = self._paused_s + (time.monotonic() - self._paused_since if self._paused_since else 0.0)
            status = self._status
            if status == "running" and self._pause.is_set():
                status = "paused"
            elif status == "running" and self._stop.is_set():
                status = "stopping"
            step = last["step"] if last else 0
            active = last["elapsed"] - self._paused_s if last else 0.0
            remaining = active / step * (self.cfg.steps - step) if step else None
            return {"id": self.id, "name": self.name, "label": self.label, "task": self.cfg.task,
                    "status": status, "error": self._error, "saved": self._saved,
                    "step": step, "steps": self.cfg.steps, "history": list(self._history),
                    "evals": list(self._evals), "snapshots": list(self._snapshots),
                    "head_scores": list(self._head_scores), "threads": sorted(self._threads),
                    "nice": sorted(self._nice),
                    "elapsed": active, "paused_s": paused, "remaining": remaining,
                    "tokens_per_s": last["tokens_per_s"] if last else 0.0, "config": dataclasses.asdict(self.cfg)}

    # ---- worker side (never calls Streamlit)
    def _set(self, **kw) -> None:
        with self._lock:
            for k, v in kw.items():
                setattr(self, f"_{k}", v)

    def _work(self) -> None:
        tmp = None
        try:
            work_root = registry.data_dir() / "tmp"
            work_root.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f"train-{self.id}-", dir=work_root))
            # threads=None: train() leaves the thread count as the child set it
            evals = N_HEAD_SCORES if self.cfg.task == "induction" else 10
            cfg = dataclasses.replace(self.cfg, out=str(tmp / "ckpt"), resume=False, threads=None, quiet=True,
                                      ckpt_every=self.cfg.steps + 1, eval_every=max(5, self.cfg.steps // evals),
                                      max_seconds=MAX_RUN_S, history=[])
            outcome = self._run_child(cfg)
            if outcome is not None and outcome[0] == "ended":  # the server ended a child still preparing
                if self._stop.is_set():
                    self._set(status="stopped", error="Stopped while preparing the data and the model.")
                else:
                    self._set(status="error", error=outcome[1])
                return
            if outcome is None:
                raise RuntimeError(f"the training process ended unexpectedly (exit code {self._proc.exitcode})")
            if outcome[0] == "failed":
                self._set(status="error", error=outcome[1])
                return
            if self._stop.is_set():
                self._set(status="stopped")
                return
            src = tmp / "ckpt"
            dest = registry.user_dir() / self.name
            limit = saved_models.MAX_SAVED_MODELS
            if len(saved_models.names()) >= limit:  # filled meanwhile (another server process on the folder)
                raise SavedModelLimitError(f"Not saved: the server now holds {limit} saved models, its "
                                           f"limit; {saved_models.HOW_TO_DELETE}.")

            def fill(folder: Path):
                for f in MODEL_FILES:
                    if (src / f).exists():
                        shutil.copy2(src / f, folder / f)
                card = folder / checkpoint.CARD
                if card.exists():  # the card names the temporary folder; name the model instead
                    card.write_text(card.read_text(encoding="utf-8").replace(str(src), self.name), encoding="utf-8")
                rooms.write_sharing(folder, shared=False, owner=self.owner)  # in the folder before it is swapped in: never listed shared

            checkpoint.write_dir_atomically(dest, fill)
            self._set(saved=self.name, status="done")
            if training_settings.is_preset(self.cfg):
                training_settings.record_preset_run(time.monotonic() - self._started, self.cfg.steps)
        except Exception as e:  # shown to the learner; the thread must not die silently
            self._set(status="error", error=str(e) if isinstance(e, (ValueError, JobLimitError)) else f"{type(e).__name__}: {e}")
        finally:
            if self._proc is not None and self._proc.is_alive():
                self._proc.kill()
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
            with _lock:
                _active.discard(self)
                if self._slot is not None:
                    self._slot.close()  # the slot is free for any replica
                    self._slot = None
            uploads.release_upload(self.cfg.text)  # the uploaded text was needed for this run only

    def _run_child(self, cfg: TrainConfig) -> tuple[str, str | None] | None:
        """Start the child and apply its messages until it says how it ended (None: it died without saying).

        Until its first step the child is preparing (data, tokenizer, model) and reads no Stop: a Stop then, or
        preparing past :data:`MAX_PREPARE_S`, ends it here (``("ended", why)``); nothing it prepared is kept."""
        receive, send = _MP.Pipe(duplex=False)
        self._proc = _MP.Process(target=_child, args=(cfg, self._snap_steps, send, self._stop, self._pause),
                                 name=f"{_CHILD_PREFIX}{self.id}", daemon=True)
        self._proc.start()
        send.close()  # the child holds the only sending end: its exit ends recv() with EOFError
        began, stepped = time.monotonic(), False
        try:
            while True:
                if not stepped and (self._stop.is_set() or time.monotonic() - began > MAX_PREPARE_S):
                    self._proc.kill()
                    return "ended", (f"Preparing the data and the model took longer than {MAX_PREPARE_S:.0f} s; the "
                                     "run was ended. Try a smaller text or model.")
                if not receive.poll(0.2):
                    continue
                try:
                    kind, payload = receive.recv()
                except EOFError:
                    return None
                stepped = stepped or kind == "step"
                if kind == "step":
                    self._record(payload)
                elif kind == "pause":
                    with self._lock:
                        self._paused_since = time.monotonic()
                elif kind == "resume":
                    with self._lock:
                        self._paused_s += payload
                        self._paused_since = None
                elif kind == "note":
                    self._set(error=payload)
                else:  # "finished" or "failed"
                    return kind, payload
        finally:
            receive.close()
            self._proc.join(30)

    def _record(self, msg: dict) -> None:
        row = msg["row"]
        with self._lock:
            active = row["elapsed"] - self._paused_s
            row["tokens_per_s"] = row["tokens_per_s"] * row["elapsed"] / max(active, 1e-9)
            row["elapsed"] = active
            self._history.append(row)
            self._threads.add(msg["threads"])
            self._nice.add(msg["nice"])
            if "metrics" in msg:
                self._evals.append({"step": row["step"], **msg["metrics"]})
            if "snap" in msg:
                snap = msg["snap"]
                if "weights" in snap:
                    snap["weights"] = torch.tensor(snap["weights"])
                self._snapshots.append(snap)
            if "heads" in msg:
                self._head_scores.append(msg["heads"])


# --------------------------------------------------------------------------- the child process

def _child(cfg: TrainConfig, snap_steps: list[int], send, stop, pause) -> None:
    """Train ``cfg`` on :data:`TRAIN_THREADS` threads; after each step send its row (and the held-out metrics,
    attention snapshot and head scores due at it), then wait while ``pause`` is set."""
    torch.set_num_threads(TRAIN_THREADS)
    os.nice(TRAIN_NICE)
    last, probe = None, None

    def on_step(info: dict) -> None:
        nonlocal last, probe
        step = info["step"]
        msg = {"row": {k: info[k] for k in ("step", "loss", "lr", "elapsed", "tokens_per_s")},
               "threads": torch.get_num_threads(), "nice": os.nice(0)}
        if info["metrics"] and info["metrics"] is not last:
            msg["metrics"] = {k: v for k, v in info["metrics"].items() if isinstance(v, (int, float)) and not is_count(k)}
            if cfg.task == "induction":
                try:
                    msg["heads"] = _induction_scores(cfg, info["model"], step)
                except Exception as e:  # a failed measurement must not end the run
                    msg["heads"] = {"step": step, "error": str(e)}
        last = info["metrics"]
        if step in snap_steps:
            try:
                probe = probe or _probe_ids(cfg, info["tokenizer"])
                msg["snap"] = _attention_snapshot(info["model"], info["tokenizer"], probe, step)
            except Exception as e:  # a failed picture must not end the run
                msg["snap"] = {"step": step, "error": str(e)}
        send.send(("step", msg))
        _wait_while_paused(send, stop, pause)

    try:
        train(cfg, on_step=on_step, stop=stop)
        send.send(("finished", None))
    except Exception as e:  # told to the learner; ValueErrors are the trainer's own readable messages
        send.send(("failed", str(e) if isinstance(e, ValueError) else f"{type(e).__name__}: {e}"))
    finally:
        send.close()


def _wait_while_paused(send, stop, pause) -> None:
    if not pause.is_set() or stop.is_set():
        return
    began = time.monotonic()
    send.send(("pause", None))
    while pause.is_set() and not stop.is_set():
        if time.monotonic() - began > MAX_PAUSE_S:
            send.send(("note", f"Stopped after being paused for more than {MAX_PAUSE_S / 60:.0f} minutes."))
            stop.set()
            break
        time.sleep(0.05)
    send.send(("resume", time.monotonic() - began))


def _induction_scores(cfg: TrainConfig, model, step: int) -> dict:
    """core.find_heads.head_scores on 16 held-out rows of the task's own shape (random syllables, repeated)."""
    from core import find_heads
    scores = find_heads.head_scores(model, seq_len=cfg.seq_len or 16, batch=16, seed=1)
    return {"step": step, "induction": scores["induction"], "previous_token": scores["previous_token"]}


def _probe_ids(cfg: TrainConfig, tokenizer) -> tuple[list[int] | None, list[int]]:
    """(source ids, decoder input ids) of the fixed probe; the reference target is teacher-forced."""
    task = cfg.task
    if task == "induction":  # its own syllables, twice: the induction stripe appears as the heads form
        ids = tokenizer.encode(PROBE_INDUCTION)
        return None, [BOS] + ids
    if task in SYNTHETIC:
        src = tokenizer.encode(PROBE_SYNTHETIC)
        tgt = list(src) if task == "copy" else src[::-1] if task == "reverse" else sorted(src)
        return src + [EOS], [BOS] + tgt
    if task in TRANSLATION:
        from core.data import corpus_for, lang_of
        pair = corpus_for(task).pair_for(PROBE_SENTENCE, lang_of(task))
        return tokenizer.encode(pair.src) + [EOS], [BOS] + tokenizer.encode(pair.tgt)
    text = PROBE_SENTENCE
    if cfg.text:
        from core.data.lm import load_text
        text = next((ln for ln in load_text(cfg.text).splitlines() if ln.strip()), PROBE_SENTENCE)
    if task == "mlm":  # an encoder reads the sentence as it is
        return None, tokenizer.encode(text)[:24]
    return None, ([BOS] + tokenizer.encode(text))[:24]


def _attention_snapshot(model, tokenizer, probe, step: int) -> dict:
    """The mean over heads of the last layer's attention on the probe (cross-attention for a translator), as lists."""
    src_ids, tgt_ids = probe
    was_training = model.training
    model.eval()
    try:
        trace = forward_ids(model, src_ids, tgt_ids).trace  # no gradients (forward_ids runs under no_grad)
    finally:
        model.train(was_training)
    kind, keys = ("cross", src_ids) if src_ids is not None else (trace.kinds()[0], tgt_ids)  # LM: decoder, MLM: encoder
    layer = trace.n_layers(kind) - 1
    weights = trace.attention(kind, layer)[0].float().mean(0).cpu()  # [Tq, Tk], mean over heads
    return {"step": step, "kind": kind, "layer": layer, "weights": weights.tolist(),
            "q_tokens": tokenizer.display(tgt_ids), "k_tokens": tokenizer.display(keys)}
