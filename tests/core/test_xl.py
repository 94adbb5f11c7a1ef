"""Transformer-XL segment recurrence: parity with the plain model, stop-gradient memory, masking, fragmentation."""
import pytest
import torch

from core.model import Transformer
from core.variants.xl import (XLConfig, XLModel, load, position_losses, relative_distance, save, stream_segments,
                              summarize, train_xl, two_segment_attention)


pytestmark = pytest.mark.usefixtures("one_thread")


def tiny(**kw):
    base = dict(vocab_size=40, d_model=32, n_heads=4, n_layers=2, d_ff=64, seg_len=8, mem_len=8, max_distance=32)
    torch.manual_seed(0)
    return XLModel(XLConfig(**(base | kw))).eval()


def as_plain(model: XLModel) -> Transformer:
    """The decoder-only ALiBi Transformer with the XL model's weights."""
    plain = Transformer(model.cfg.model_config()).eval()
    sd = {}
    for k, v in model.state_dict().items():
        if k == "rel_bias":
            continue
        sd[("decoder." + k) if k.startswith(("layers.", "norm.")) else k] = v
    plain.load_state_dict(sd)
    return plain


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_without_memory_it_is_the_plain_causal_model(norm):
    model = tiny(mem_len=0, norm=norm)
    ids = torch.randint(5, 40, (3, 8))
    out = model(ids)
    assert out.memory == [None, None]
    torch.testing.assert_close(out.logits, as_plain(model)(ids).logits, atol=1e-5, rtol=1e-5)


def test_memory_is_detached_and_receives_no_gradient():
    model = tiny().train()
    a, b = torch.randint(5, 40, (2, 8)), torch.randint(5, 40, (2, 8))
    mem = model(a).memory
    assert all(m is not None and not m.requires_grad and m.shape == (2, 8, 32) for m in mem)
    leaf = [m.clone().requires_grad_(True) for m in mem]  # watch what a backward pass would send there
    out = model(b, leaf)
    out.logits.sum().backward()
    assert all(not m.requires_grad for m in out.memory)
    # the loss depends on the memory (its gradient is non-zero) but the memory we carry is a detached copy
    assert leaf[0].grad is not None and leaf[0].grad.abs().sum() > 0
    model.zero_grad()
    model(b, mem).logits.sum().backward()
    assert all(m.grad is None for m in mem)


def test_memory_keeps_the_last_mem_len_positions():
    model = tiny(mem_len=5)
    a, b = torch.randint(5, 40, (1, 8)), torch.randint(5, 40, (1, 3))
    m1 = model(a).memory
    assert m1[0].shape[1] == 5
    m2 = model(b, m1).memory
    assert m2[0].shape[1] == 5
    torch.testing.assert_close(m2[0][:, :2], m1[0][:, 3:])  # two old positions, then the three new ones


def test_no_query_sees_the_future():
    model = tiny()
    mem = model(torch.randint(5, 40, (1, 8))).memory
    ids = torch.randint(5, 40, (1, 8))
    out = model(ids, mem, return_weights=True)
    for w in out.weights:
        assert w.shape == (1, 4, 8, 16)
        future = relative_distance(8, 8) < 0
        assert torch.all(w[0][:, future] == 0)
        torch.testing.assert_close(w.sum(-1), torch.ones(1, 4, 8))
        assert torch.all(w[0][:, 0, :8].sum(-1) > 0)  # the first token reaches back into the memory
    changed = ids.clone()
    changed[0, 5:] = (changed[0, 5:] + 1 - 5) % 35 + 5
    after = model(changed, mem).logits
    torch.testing.assert_close(after[:, :5], out.logits[:, :5])  # editing later tokens leaves earlier outputs alone


def test_memory_changes_the_output_at_the_segment_start():
    model = tiny()
    ids = torch.randint(5, 40, (1, 8))
    cold = model(ids).logits
    warm = model(ids, model(torch.randint(5, 40, (1, 8))).memory).logits
    assert (warm[0, 0] - cold[0, 0]).abs().max() > 1e-3


def test_relative_bias_starts_as_alibi_and_clips_far_distances():
    model = tiny(max_distance=4)
    bias = model.bias(3, 6)  # [1, H, 3, 9]
    d = relative_distance(3, 6).clamp(min=0)
    slopes = -model.rel_bias[:, 1]
    expected = -slopes[:, None, None] * d.clamp(max=4)
    torch.testing.assert_close(bias[0], expected)


def test_stream_segments_continue_each_row():
    stream = torch.arange(101)
    segs = list(stream_segments(stream, 4, 5))
    assert len(segs) == 5
    (x0, y0), (x1, _) = segs[0], segs[1]
    assert x0[0].tolist() == [0, 1, 2, 3, 4] and x1[0].tolist() == [5, 6, 7, 8, 9] and x0[1, 0] == 25
    assert torch.equal(y0, x0 + 1)


def counter_stream(n=6000, vocab=16, noise=0.1, seed=0):
    """x_t = x_{t-2} + 1 (mod vocab) with 10 % random tokens: the token at a segment start is only
    predictable from the token two back, which lies in the previous segment."""
    g = torch.Generator().manual_seed(seed)
    s = torch.randint(0, vocab, (n,), generator=g)
    rnd = torch.rand(n, generator=g) < noise
    for t in range(2, n):
        if not rnd[t]:
            s[t] = (s[t - 2] + 1) % vocab
    return s


def test_training_with_memory_fixes_context_fragmentation(tmp_path):
    s = counter_stream()
    cfg = XLConfig(vocab_size=16, d_model=32, n_heads=2, n_layers=1, d_ff=64, seg_len=8, mem_len=8, max_distance=16)
    model, history = train_xl(cfg, s[:5000], steps=150, batch_size=16, lr=1e-2, warmup=10)
    assert len(history) == 150 and history[-1][1] < history[0][1]
    losses = position_losses(model, s[5000:], batch_size=4)
    assert len(losses["with_memory"]) == 8 and losses["segments"] > 10
    assert losses["with_memory"][0] < losses["without_memory"][0] - 1.0
    assert abs(losses["with_memory"][-1] - losses["without_memory"][-1]) < 0.3  # far from the start it matters less
    assert summarize(losses)["with_memory_first4"] < summarize(losses)["without_memory_first4"]
    save(model, tmp_path / "xl", meta={"command": "test"})
    again, tok, meta = load(tmp_path / "xl")
    assert tok is None and meta["command"] == "test"
    ids = s[:8][None]
    torch.testing.assert_close(again(ids).logits, model(ids).logits)


def test_two_segment_attention_shapes():
    model = tiny()
    weights, n_mem = two_segment_attention(model, list(range(5, 15)), split=4)
    assert n_mem == 4 and len(weights) == 2 and weights[-1].shape == (4, 6, 10)
    with pytest.raises(ValueError):
        two_segment_attention(model, [5])


# ----------------------------------------------------------------------------- the shipped folder, one format
def test_the_shipped_xl_folder_is_a_lab_checkpoint_and_reproduces_its_card():
    """assets/models/xl is written like every other model (config.json with its architecture, card.md), and the
    validation losses its card states are measured again from the shipped weights."""
    from core.io import checkpoint, registry
    from core.variants.xl import lm_data
    folder = registry.BUNDLED / "xl"
    assert sorted(p.name for p in folder.iterdir()) == ["card.md", "config.json", "model.safetensors",
                                                        "tokenizer.json"]
    assert checkpoint.architecture(folder) == "transformer-xl"
    model, tok, meta = load(folder)
    assert tok is not None and tok.vocab_size == model.cfg.vocab_size
    _, _, valid = lm_data(model.cfg.seg_len)
    again = summarize(position_losses(model, valid))
    for key, value in meta["metrics"].items():
        assert again[key] == pytest.approx(value, abs=2e-3), key
    card = (folder / "card.md").read_text()
    assert meta["command"] in card and f"with memory {meta['metrics']['with_memory_first4']:.3f}" in card


def test_a_folder_is_only_opened_as_its_own_architecture(tmp_path):
    from core.io import checkpoint, registry
    assert "xl" not in registry.bundled() and "xl" not in registry.available()  # the pages' model list
    with pytest.raises(checkpoint.CheckpointError, match="'transformer-xl' model.*Transformer-XL page"):
        registry.load("xl")
    with pytest.raises(checkpoint.CheckpointError, match="'transformer' model, not a 'transformer-xl'"):
        load(registry.BUNDLED / "copy")


def test_a_damaged_xl_folder_is_refused_with_a_message(tmp_path):
    from core.io import checkpoint
    model = tiny()
    save(model, tmp_path / "xl", meta={"command": "test"})
    assert checkpoint.architecture(tmp_path / "xl") == "transformer-xl"
    bad = XLModel(XLConfig(vocab_size=40, d_model=32, n_heads=4, n_layers=1, d_ff=64, seg_len=8, mem_len=8,
                           max_distance=32))
    from safetensors.torch import save_file
    save_file({k: v.contiguous() for k, v in bad.state_dict().items() if k != "lm_head.weight"},
              str(tmp_path / "xl" / "model.safetensors"))
    with pytest.raises(checkpoint.CheckpointError, match="do not match the config"):
        load(tmp_path / "xl")
    (tmp_path / "xl" / "model.safetensors").write_bytes(b"\x80\x04pickled")
    with pytest.raises(checkpoint.CheckpointError, match="pickle"):
        load(tmp_path / "xl")


def test_the_cli_refuses_to_overwrite_a_folder_that_is_not_a_checkpoint(tmp_path, capsys):
    from core.variants.xl import main
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["--out", str(tmp_path), "--steps", "1"]) == 2
    assert "not an Attention Lab checkpoint folder" in capsys.readouterr().err
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_the_cli_reads_its_flags_from_one_dataclass_and_its_card_quotes_the_command(tmp_path, capsys):
    """The shipped card's command parses back to the same run (one flag per XLRun field); --out is required; a short
    run writes a loadable folder whose card quotes exactly the command that made it."""
    import shlex

    from core.io import registry
    from core.variants.xl import XLRun, main
    shipped = load(registry.BUNDLED / "xl")[2]["command"]
    assert XLRun(out="assets/models/xl").command() == shipped
    assert main(["--steps", "1"]) == 2 and "--out FOLDER is required" in capsys.readouterr().err
    out = tmp_path / "xl"
    assert main(["--out", str(out), "--steps", "2", "--d-model", "32", "--seg-len", "8", "--mem-len", "8"]) == 0
    model, tok, meta = load(out)
    assert model.cfg.d_model == 32 and model.cfg.seg_len == 8 and len(meta["history"]) >= 1
    assert meta["command"] == XLRun(out=str(out), steps=2, d_model=32, seg_len=8, mem_len=8).command()
    assert shlex.split(meta["command"])[3:5] == ["--out", str(out)] and meta["command"] in (out / "card.md").read_text()


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_the_memory_reaches_back_layers_times_its_length_and_not_one_token_further(layers):
    """Dai et al. 2019, sec. 3.2: with memory of the previous segment at every layer, the longest dependency is
    n_layers × mem_len tokens; a token further back changes nothing at all (exactly), and every token within the
    bound does change the last segment (random weights: no exact cancellation)."""
    from core.variants.xl import context_reach
    torch.manual_seed(0)
    model = XLModel(XLConfig(vocab_size=50, d_model=16, n_heads=2, n_layers=layers, d_ff=32, seg_len=4, mem_len=4))
    ids = torch.randint(5, 50, (24,)).tolist()
    got = context_reach(model, ids, 1)
    assert got["segments"] == 6 and got["last_start"] == 20 and got["bound"] == 4 * layers
    first = got["last_start"] - got["bound"]
    assert all(e == 0.0 for e in got["effect"][:first]) and all(e > 1e-7 for e in got["effect"][first:])


def test_evaluation_with_the_memory_reads_each_token_once():
    from core.variants.xl import evaluation_cost
    model = XLModel(XLConfig(vocab_size=50, d_model=16, n_heads=2, n_layers=1, d_ff=32, seg_len=4, mem_len=4))
    got = evaluation_cost(model, list(range(5, 25)), repeats=1)
    assert got["tokens"] == {"with memory": 20, "sliding window": 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 * 13}
    assert set(got["seconds"]) == {"with memory", "sliding window"}
