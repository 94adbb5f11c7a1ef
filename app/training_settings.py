"""The settings a run on the Training page may have: the server's limits on model and run size, their check, and the
induction preset.

:func:`check_settings` caps the model and run size (:data:`MAX_STEPS`, :data:`MAX_D_MODEL`, ...) so one learner cannot
monopolise the machine, applies the model's own rules, and checks the new model's name (:mod:`app.saved_models`).
:data:`INDUCTION_PRESET` is the one-button run that grows induction heads; :func:`preset_estimate` quotes how long it
takes on this server, from the preset runs the job registry (:mod:`app.training_jobs`) reports as they finish
(:func:`record_preset_run`).
"""
from __future__ import annotations

from app import saved_models
from core.training.tasks import TASKS, model_kind
from core.training.trainer import TrainConfig, model_config

MAX_STEPS = 5000
MAX_D_MODEL = 256
MAX_LAYERS = 4
MAX_HEADS = 16
MAX_D_FF = 1024
MAX_BATCH = 256

# The induction preset (Olsson et al. 2022, sec. 2-3): a 2-layer attention-only model on a random sequence repeated
# twice. With rotary positions a previous-token head forms in layer 0, then every layer-1 head becomes an induction
# head (score 0.93-0.98) and the loss on the second copy falls from ~4.3 to ~0.1 nats, at steps ~1000-1500 (seed 0,
# measured with `python -m core.train --task induction --attention-only ...`, the command the card of a saved run
# quotes). Learned absolute positions reach the same loss drop far more slowly and grow no induction head in 4,000
# steps. How long it takes depends on the server and its load (0.5 min for the CLI alone on this 2-core machine, 3.7
# min inside the test suite), so the page quotes what finished preset runs took on this server (preset_estimate).
INDUCTION_PRESET = dict(task="induction", attention_only=True, layers=2, d_model=64, heads=4, pos_encoding="rope",
                        norm="pre", dropout=0.0, label_smoothing=0.0, schedule="constant", lr=1e-3, warmup=50,
                        batch_size=32, seq_len=16, steps=2000, seed=0)
_preset_timings: list[tuple[float, int]] = []  # (wall seconds from start to saved, steps) of finished preset-shaped runs


def is_preset(cfg: TrainConfig) -> bool:
    """Whether ``cfg`` is the induction preset, whatever its step count."""
    return all(getattr(cfg, k) == v for k, v in INDUCTION_PRESET.items() if k != "steps")


def record_preset_run(seconds: float, steps: int) -> None:
    """Note that a preset-shaped run of ``steps`` steps took ``seconds`` from start to saved (for
    :func:`preset_estimate`)."""
    _preset_timings.append((seconds, steps))  # one list.append: atomic, whichever job thread finishes


def preset_estimate() -> str:
    """How long the induction preset takes here, as the button says it: scaled from the last preset-shaped run that
    finished on this server (start to saved, per step × the preset's steps), or that no run has measured it yet."""
    if not _preset_timings:
        return "a few minutes; timed on this server by its first run"
    seconds, steps = _preset_timings[-1]
    total = seconds * INDUCTION_PRESET["steps"] / max(steps, 1)
    return f"about {max(1, round(total / 60))} min here, measured by the last run" if total >= 90 else \
        f"about {max(1, round(total))} s here, measured by the last run"


def induction_preset(**changes) -> TrainConfig:
    """The induction preset's :class:`TrainConfig` (``changes`` override fields, e.g. ``steps``)."""
    return TrainConfig(**{**INDUCTION_PRESET, **changes})


def check_settings(cfg: TrainConfig, name: str) -> list[str]:
    """Every problem with a run's settings, as sentences for the learner (empty list = fine)."""
    errors = []
    if cfg.task not in TASKS:
        errors.append(f"Unknown task {cfg.task!r}; choose one of {', '.join(TASKS)}.")
    for what, value, most, where in (("Steps", cfg.steps, MAX_STEPS, ""),
                                     ("Batch size", cfg.batch_size, MAX_BATCH, ""),
                                     ("Layers", cfg.layers, MAX_LAYERS, ""),
                                     ("d_model", cfg.d_model, MAX_D_MODEL, " on this server"),
                                     ("Heads", cfg.heads, MAX_HEADS, ""), ("d_ff", cfg.d_ff, MAX_D_FF, "")):
        if not 1 <= value <= most:
            errors.append(f"{what} must be between 1 and {most:,}{where} (got {value}).")
    if cfg.kv_heads is not None and cfg.kv_heads < 1:
        errors.append(f"Key/value heads must be at least 1 (got {cfg.kv_heads}).")
    if cfg.warmup < 0:
        errors.append("Warm-up steps cannot be negative.")
    if not cfg.lr > 0:
        errors.append("The learning-rate factor must be positive.")
    if not errors:  # the model's own rules: divisibility, RoPE needs an even head size, ...
        kind = model_kind(cfg.task)
        try:
            model_config(cfg, kind=kind).validate()
            cfg.validate()
        except ValueError as e:
            errors.append(_sentence(str(e)))
    problem = saved_models.name_problem(name)
    if problem:
        errors.append(problem)
    return errors


def _sentence(msg: str) -> str:
    return msg[:1].upper() + msg[1:] + ("" if msg.endswith(".") else ".")
