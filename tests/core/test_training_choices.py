"""core.training.choices: activations at equal size, checkpoint averaging, and the shipped results' consistency."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from core.io import jsonio
from core.model import Transformer
from core.training import choices as C
from core.training.trainer import model_config

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "assets" / "choices" / "results.json"


def _parameters(cfg: C.ChoicesConfig, activation: str, vocab: int = 512) -> int:
    model = Transformer(model_config(C.train_config(cfg, activation), kind="decoder-only", vocab_size=vocab))
    return sum(p.numel() for p in model.parameters())


def test_the_three_activations_get_the_same_number_of_parameters_within_a_fraction_of_a_percent():
    cfg = C.ChoicesConfig()
    counts = {a: _parameters(cfg, a) for a in ("relu", "gelu", "swiglu")}
    assert counts["relu"] == counts["gelu"]
    assert abs(counts["swiglu"] - counts["relu"]) / counts["relu"] < 0.005
    # at ReLU's width SwiGLU's third matrix would add about layers × d_model × d_ff weights
    naive = C.train_config(cfg, "swiglu")
    naive.d_ff = cfg.d_ff
    extra = sum(p.numel() for p in Transformer(model_config(naive, kind="decoder-only", vocab_size=512)).parameters())
    assert extra - counts["relu"] >= cfg.layers * cfg.d_model * cfg.d_ff


def test_average_is_the_element_wise_mean_and_keeps_integer_buffers():
    a = {"w": torch.tensor([1.0, 2.0]), "n": torch.tensor([3])}
    b = {"w": torch.tensor([3.0, 6.0]), "n": torch.tensor([5])}
    out = C.average([a, b])
    assert torch.equal(out["w"], torch.tensor([2.0, 4.0]))
    assert torch.equal(out["n"], torch.tensor([5]))  # not averaged: taken from the last
    assert torch.equal(C.average([a])["w"], a["w"])
    with pytest.raises(ValueError):
        C.average([])


def test_averaging_a_real_models_snapshots_gives_the_mean_model():
    cfg = model_config(C.train_config(C.ChoicesConfig(), "gelu"), kind="decoder-only", vocab_size=40)
    torch.manual_seed(0)
    m1, m2 = Transformer(cfg).eval(), Transformer(cfg).eval()
    mean = Transformer(cfg).eval()
    mean.load_state_dict(C.average([m1.state_dict(), m2.state_dict()]))
    for (k, p1), p2, pm in zip(m1.named_parameters(), m2.parameters(), mean.parameters()):
        torch.testing.assert_close(pm, (p1 + p2) / 2, msg=k)


def test_snapshot_steps_are_the_last_multiples_and_bad_settings_are_refused():
    cfg = C.ChoicesConfig(steps=100, snapshot_every=10, snapshots=5)
    assert C.snapshot_steps(cfg) == [60, 70, 80, 90, 100]
    with pytest.raises(ValueError, match="need at least 50 steps"):
        C.ChoicesConfig(steps=40, snapshot_every=10, snapshots=5).validate()
    with pytest.raises(ValueError, match="snapshots"):
        C.ChoicesConfig(snapshots=1).validate()
    with pytest.raises(ValueError, match="unknown activation"):
        C.ffn_width(256, "tanh")


def test_the_shipped_results_match_their_config():
    res = jsonio.loads(RESULTS.read_text())
    cfg = C.ChoicesConfig(**res["config"])
    assert [r["activation"] for r in res["runs"]] == ["relu", "gelu", "swiglu"]
    assert res["snapshot_steps"] == C.snapshot_steps(cfg)
    for r in res["runs"]:
        assert r["parameters"] == _parameters(cfg, r["activation"])
        assert r["d_ff"] == C.ffn_width(cfg.d_ff, r["activation"])
        assert len(r["train_loss"]) == cfg.steps
        assert set(r["held_out"]) == {"last weights", "mean of the last 2", "mean of the last 5",
                                      f"mean of all {cfg.snapshots}"}
        name, gain = C.best_average(r)
        assert gain == pytest.approx(r["held_out"]["last weights"] - r["held_out"][name], abs=1e-4) and gain >= 0
