"""core.find_heads on a translator's encoder (Raganato et al. 2020): offset shares against maps built by hand, a head
built to attend exactly one token back left unchanged by its fixed pattern (and changed by another), the verb and
object positions of generated sentences read from their frames, and the shipped en-fr measurement re-measured."""
import pytest
import torch

from core import find_heads as fh
from core.config import ModelConfig
from core.data import broad
from core.io import budget, registry
from core.io.tokenizer import EOS, Tokenizer
from core.model import Transformer
from core.positional import frequencies
from core.probes.heads import batch_loss
from core.training.tasks import seq2seq_batch

pytestmark = pytest.mark.usefixtures("one_thread")


# ------------------------------------------------------------------ offset shares on maps built by hand
def test_offset_shares_on_constructed_maps():
    """Three heads on two rows (the second padded after 3 tokens): exactly one back (the first token on itself),
    even over the real tokens, 0.8 on the next token and 0.2 on itself (the last on itself). The shares are the means
    over real queries that a plain loop computes; padding queries count nothing, a missing offset counts 0."""
    t, lengths = 5, (5, 3)
    w = torch.zeros(1, 2, 3, t, t)
    for b, n in enumerate(lengths):
        for q in range(t):
            w[0, b, 0, q, max(q - 1, 0) if q < n else 0] = 1.0
            w[0, b, 1, q, :n] = 1.0 / n
            if q < n - 1:
                w[0, b, 2, q, q], w[0, b, 2, q, q + 1] = 0.2, 0.8
            else:
                w[0, b, 2, q, min(q, n - 1)] = 1.0
    valid = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])
    got = fh.offset_shares(w, valid)
    want = torch.zeros(3, 4)
    for b, n in enumerate(lengths):
        for q in range(n):
            for h in range(3):
                for j, off in enumerate((-1, 0, 1)):
                    if 0 <= q + off < t:
                        want[h, j] += w[0, b, h, q, q + off]
    want[:, :3] /= sum(lengths)
    want[:, 3] = 1 - want[:, :3].sum(-1)
    assert got.shape == (1, 3, 4)
    assert torch.allclose(got[0], want, atol=1e-6)
    assert got[0, 0].tolist() == pytest.approx([6 / 8, 2 / 8, 0, 0], abs=1e-6)  # two first tokens on themselves
    side = (4 / 5 + 2 / 3) / 8  # even: each real key 1/n; the first query has no previous key, the last no next
    assert got[0, 1].tolist() == pytest.approx([side, 2 / 8, side, 1 - 2 * side - 2 / 8], abs=1e-6)
    assert got[0, 2].tolist() == pytest.approx([0, (6 * 0.2 + 2) / 8, 6 * 0.8 / 8, 0], abs=1e-6)
    offset, share = fh.best_patterns(got)
    assert offset[0].tolist() == [-1, 0, 1] and share[0].tolist() == pytest.approx([0.75, 0.25, 0.6])


# ------------------------------------------------------------------ a head built to look exactly one token back
def rope_translator() -> Transformer:
    torch.manual_seed(0)
    cfg = ModelConfig(kind="encoder-decoder", vocab_size=30, d_model=32, n_heads=4, n_encoder_layers=2,
                      n_decoder_layers=1, d_ff=48, dropout=0.0, max_len=32, pos_encoding="rope")
    model = Transformer(cfg).eval()
    # encoder layer 1, head 2: q and k constant (weights 0, biases set) in the rotary pair i = 1 (angle ω per
    # position): q·k = a²·cos((m − n)ω − ω), largest exactly at n = m − 1, every other key ≥ 4 000 logits lower
    # (the first token: on itself, 1 700 lower elsewhere), so the softmax is one-hot in float32
    attn = model.encoder.layers[1].self_attn
    d, h, head = attn.d_head, attn.n_heads, 2
    omega = float(frequencies(d, cfg.pe_base)[1])
    a = 3000.0
    with torch.no_grad():
        for rows in (slice(head * d, (head + 1) * d), slice((h + head) * d, (h + head + 1) * d)):
            attn.qkv.weight[rows] = 0.0
            attn.qkv.bias[rows] = 0.0
        attn.qkv.bias[head * d + 2] = a
        attn.qkv.bias[(h + head) * d + 2] = a * torch.cos(torch.tensor(omega))
        attn.qkv.bias[(h + head) * d + 3] = a * torch.sin(torch.tensor(omega))
    return model


def translation_batch():
    gen = torch.Generator().manual_seed(1)
    rows = [torch.randint(5, 30, (n,), generator=gen).tolist() for n in (9, 6, 4)]
    return seq2seq_batch([(r, list(reversed(r))) for r in rows])


def test_an_exact_previous_token_head_is_unchanged_by_its_fixed_pattern():
    model, batch = rope_translator(), translation_batch()
    valid = batch.src.ne(0)
    maps = fh.encoder_maps(model, batch.src)
    built = maps[1, :, 2]
    for b, n in enumerate(valid.sum(1).tolist()):  # it really is the previous-token head, one-hot
        want = torch.zeros(n, built.shape[-1])
        want[0, 0] = 1.0
        want[torch.arange(1, n), torch.arange(0, n - 1)] = 1.0
        assert torch.equal(built[b, :n], want)
    shares = fh.offset_shares(maps, valid)
    n_real = int(valid.sum())
    assert shares[1, 2].tolist() == pytest.approx([(n_real - 3) / n_real, 3 / n_real, 0.0, 0.0], abs=1e-6)
    assert int(fh.best_patterns(shares)[0][1, 2]) == -1

    base = batch_loss(model, batch)[0]
    with model.hooks(fh.fixed_pattern_hooks(model, {(1, 2): -1})):
        replaced = batch_loss(model, batch)[0]
        again = fh.encoder_maps(model, batch.src)
    assert abs(replaced - base) <= 1e-6
    assert torch.equal(again[1, :, 2][valid], built[valid]) and torch.allclose(again[0], maps[0])
    assert torch.allclose(again[1, :, [0, 1, 3]], maps[1, :, [0, 1, 3]], atol=1e-6)  # the other heads untouched
    with model.hooks(fh.fixed_pattern_hooks(model, {(1, 2): 1})):  # the wrong pattern does change the model
        assert abs(batch_loss(model, batch)[0] - base) > 1e-3
    study = fh.replacement_study(model, batch, shares, heads=[(1, 2)])
    row = study["heads"][0]
    assert (row["layer"], row["head"], row["offset"]) == (1, 2, -1)
    assert abs(row["fixed"]["loss"] - study["base"]["loss"]) <= 1e-6 and row["off"]["loss"] != row["fixed"]["loss"]


def test_a_fixed_pattern_puts_all_the_weight_on_one_key_and_falls_back_to_the_token_itself():
    """Next-token pattern on a random head: weight 1 on key q + 1, except the last real token (its next key is
    padding or missing), which looks at itself."""
    model, batch = rope_translator(), translation_batch()
    valid = batch.src.ne(0)
    with model.hooks(fh.fixed_pattern_hooks(model, {(0, 1): 1})):
        w = fh.encoder_maps(model, batch.src)[0, :, 1]
    for b, n in enumerate(valid.sum(1).tolist()):
        want = torch.zeros(n, w.shape[-1])
        want[torch.arange(n - 1), torch.arange(1, n)] = 1.0
        want[n - 1, n - 1] = 1.0
        assert torch.equal(w[b, :n], want)
    with pytest.raises(ValueError, match="no head L2H0"):
        fh.fixed_pattern_hooks(model, {(2, 0): 1})


# ------------------------------------------------------------------ verbs and objects from the frames
@pytest.mark.parametrize("frame, slots, verb, obj, after", [
    ("svo_future", (("A", "cook"), ("B", "fish"), ("verb", "cook")), "cook", "fish", True),  # subject = verb's form
    ("svo_past", (("A", "dog"), ("B", "apple"), ("verb", "look at")), "looked", "apple", True),  # a phrasal verb
    ("relative_object", (("B", "apple"), ("adj", "red"), ("verb", "eat")), "ate", "apple", False),
])
def test_verb_and_object_positions_of_generated_sentences(frame, slots, verb, obj, after):
    tok = Tokenizer.load(registry.BUNDLED / "en-fr" / "tokenizer.json")
    pair = broad.make_pair(broad.Spec(frame, slots), "fr")
    item = fh.role_positions(tok, pair, broad)
    shown = tok.display(item["ids"])
    words = pair.src.rstrip(".").split()
    assert item["ids"][-1] == EOS and item["ids"][:-1] == tok.encode(pair.src)
    assert "".join(shown[i] for i in item["verb"]) == verb and "".join(shown[i] for i in item["object"]) == obj
    assert item["after"] is after and (min(item["object"]) > max(item["verb"])) is after
    if frame == "svo_future":  # "The cook will cook the fish.": the verb is the second "cook", not the subject
        assert words[1] == words[3] == "cook" and shown[:item["verb"][0]].count("cook") == 1
    assert frame in fh.verb_object_frames(broad)


def test_a_sentence_that_does_not_match_its_frame_gives_none():
    tok = Tokenizer.load(registry.BUNDLED / "en-fr" / "tokenizer.json")
    pair = broad.make_pair(broad.Spec("svo_past", (("A", "dog"), ("B", "apple"), ("verb", "eat"))), "fr")
    assert fh.role_positions(tok, pair, broad)["verb"] == [2]
    bent = type(pair)(**{**pair.__dict__, "src": "The dog quickly ate the apple."})
    assert fh.role_positions(tok, bent, broad) is None


# ------------------------------------------------------------------ the shipped measurement
def test_the_shipped_en_fr_measurement_is_what_the_weights_give():
    """summaries.json's encoder_heads (python scripts/precompute.py --parts encoder_heads): the offset shares of every
    head and, for the most positional head, the loss with its fixed pattern, re-measured here."""
    ck = registry.load("en-fr")
    budget.limit_positions(ck.model)
    shipped = fh.shipped_encoder_heads(ck, "en-fr")
    assert shipped is not None, "run: python scripts/precompute.py --model en-fr --parts encoder_heads"
    batch = fh.heldout_batch(ck)
    shares = fh.offset_shares(fh.encoder_maps(ck.model, batch.src), batch.src.ne(0))
    assert torch.allclose(shares, torch.tensor(shipped["shares"]), atol=1e-5)
    study = shipped["replacement"]
    row = max(study["heads"], key=lambda r: r["share"])
    with ck.model.hooks(fh.fixed_pattern_hooks(ck.model, {(row["layer"], row["head"]): row["offset"]})):
        loss, acc = batch_loss(ck.model, batch)
    assert loss == pytest.approx(row["fixed"]["loss"], abs=1e-5) and acc == pytest.approx(row["fixed"]["accuracy"])
    assert len(study["heads"]) == ck.model.cfg.n_encoder_layers * ck.model.cfg.n_heads
