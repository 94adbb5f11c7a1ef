"""The attention-only model and the induction task (Olsson et al. 2022): an attention-only layer is exactly
x + attention(x) (checked against the attention sublayer's own output), its FFN hook points still exist, the task's
batches are a sequence and its copy, and a reduced run grows a previous-token head in layer 0 and induction heads in
layer 1 (the Training page's preset, shortened)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from core.config import ModelConfig
from core.find_heads import head_scores
from core.io import checkpoint
from core.io.tokenizer import BOS, PAD
from core.model import Transformer
from core.training.tasks import SYLLABLES, InductionTask, make_task, model_kind

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("one_thread")


def attn_only(vocab_size=40, **kw) -> Transformer:
    torch.manual_seed(0)
    cfg = ModelConfig(kind="decoder-only", vocab_size=vocab_size, d_model=32, n_heads=4, n_encoder_layers=0,
                      n_decoder_layers=2, d_ff=64, dropout=0.0, max_len=16, norm="pre", attention_only=True, **kw)
    return Transformer(cfg).eval()


def test_an_attention_only_layer_adds_only_its_attention_and_keeps_the_ffn_hook_points():
    model = attn_only()
    assert not any("ffn" in n for n, _ in model.named_parameters())
    ids = torch.randint(4, 40, (2, 9))
    tr = model(ids, trace=True).trace
    for layer in range(2):
        pre = f"decoder.{layer}"
        torch.testing.assert_close(tr[f"{pre}.resid_post"], tr[f"{pre}.resid_mid"], rtol=0, atol=0)
        assert torch.count_nonzero(tr[f"{pre}.ffn_out"]) == 0 and tr[f"{pre}.ffn.act"].shape[-1] == 0
    # the same weights in a model with FFNs whose output is zeroed give the same logits
    full = Transformer(ModelConfig(**{**model.cfg.to_dict(), "attention_only": False})).eval()
    missing, unexpected = full.load_state_dict(model.state_dict(), strict=False)
    assert not unexpected and all("ffn" in k for k in missing)
    with full.hooks({f"decoder.{i}.ffn_out": (lambda t, name: torch.zeros_like(t)) for i in range(2)}):
        torch.testing.assert_close(full(ids).logits, model(ids).logits)


def test_an_ffn_out_hook_patches_an_attention_only_layer_too():
    model = attn_only()
    ids = torch.randint(4, 40, (1, 6))
    plus = torch.ones(32)
    with model.hooks({"decoder.1.ffn_out": lambda t, name: t + plus}):
        tr = model(ids, trace=True).trace
    torch.testing.assert_close(tr["decoder.1.resid_post"], tr["decoder.1.resid_mid"] + plus)


def test_old_configs_without_the_field_load_as_models_with_ffns():
    d = attn_only().cfg.to_dict()
    del d["attention_only"]
    assert ModelConfig.from_dict(d).attention_only is False
    with pytest.raises(ValueError, match="attention_only"):
        ModelConfig.from_dict({**d, "attention_only": "yes"})


def test_induction_batches_are_a_sequence_and_its_copy_with_varying_lengths():
    task = make_task("induction", seq_len=10)
    assert isinstance(task, InductionTask) and model_kind("induction") == "decoder-only" and task.max_len == 21
    b = task.batch(step=3, batch_size=64, seed=0)
    assert b.src is None and torch.equal(b.tgt_in[:, 1:], b.tgt_out[:, :-1])
    ids = torch.cat([b.tgt_in[:, :1], b.tgt_out], dim=1)
    lengths = set()
    syllables = {task.tokenizer.token_to_id("▁" + s) for s in SYLLABLES}
    for row in ids.tolist():
        assert row[0] == BOS
        body = [t for t in row[1:] if t != PAD]
        k = len(body) // 2
        assert body[:k] == body[k:] and set(body) <= syllables and row[1 + 2 * k:] == [PAD] * (20 - 2 * k)
        lengths.add(k)
    assert min(lengths) >= 5 and max(lengths) <= 10 and len(lengths) >= 4  # no fixed offset to find by position
    assert torch.equal(task.batch(step=3, batch_size=64, seed=0).tgt_in, b.tgt_in)
    assert not torch.equal(task.batch(step=4, batch_size=64, seed=0).tgt_in, b.tgt_in)


def test_induction_evaluation_reads_the_two_copies_apart():
    """The two losses are read from the right positions: with the stream zeroed (uniform logits) both are ln V."""
    task = InductionTask(seq_len=6)
    model = attn_only(vocab_size=task.tokenizer.vocab_size)
    m = task.evaluate(model, n=8)
    assert set(m) == {"valid_loss", "first_copy_loss", "second_copy_loss", "copy_gain"}
    assert m["copy_gain"] == pytest.approx(m["first_copy_loss"] - m["second_copy_loss"])
    with model.hooks({"decoder.1.resid_post": lambda t, name: torch.zeros_like(t)}):  # zero stream: uniform logits
        u = task.evaluate(model, n=8)
    ln_v = torch.log(torch.tensor(float(model.cfg.vocab_size))).item()
    assert u["first_copy_loss"] == pytest.approx(ln_v, abs=1e-4) and u["second_copy_loss"] == pytest.approx(ln_v, abs=1e-4)


@pytest.mark.slow
def test_a_reduced_preset_run_grows_a_previous_token_head_then_induction_heads(tmp_path):
    """The Training page's preset (app.training_settings.INDUCTION_PRESET), 1,500 steps on one thread: layer 0 grows a
    previous-token head, layer 1 induction heads, and the second copy's loss falls far below the first's."""
    from app.training_settings import INDUCTION_PRESET
    flags = []
    for k, v in {**INDUCTION_PRESET, "steps": 1500}.items():
        flags += [f"--{k.replace('_', '-')}"] + ([] if v is True else [str(v)])
    p = subprocess.run([sys.executable, "-m", "core.train", "--out", str(tmp_path / "run"), "--threads", "1",
                        "--eval-every", "1500", "--ckpt-every", "1500", *flags], cwd=ROOT, capture_output=True,
                       text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert p.returncode == 0, p.stderr[-2000:]
    metrics = json.loads(p.stdout.strip().splitlines()[-1])["metrics"]
    ck = checkpoint.load(tmp_path / "run")
    assert ck.model.cfg.attention_only and ck.model.cfg.n_decoder_layers == 2
    s = head_scores(ck.model, seq_len=16, batch=16, seed=1)
    assert max(s["previous_token"][0]) >= 0.5, s["previous_token"]
    assert max(s["induction"][1]) >= 0.5, s["induction"]
    assert max(s["induction"][0]) < 0.5  # one layer cannot do it: the induction heads are in the second
    assert metrics["copy_gain"] >= 2.0, metrics  # nats, out of ln 70 = 4.25 for a perfect copy
    assert s["induction_loss"]["second_copy"] < s["induction_loss"]["first_copy"] - 2.0
