"""BERT pre-training: the 15 % / 80-10-10 corruption against its definition, sentence pairs for next-sentence
prediction, typed masks, filling against an independent softmax, the attention-share measures, both losses,
our heads against transformers' BertForMaskedLM / BertForPreTraining, and the bundled model's use of the words
right of a mask."""
import math

import pytest
import torch
import torch.nn.functional as F

from core.inference import mlm
from core.io import registry
from core.config import ModelConfig
from core.model import Transformer
from core.training.tasks import MLMTask, bert_corrupt, make_task, model_kind, pair_row, sentences_of
from core.io.tokenizer import BOS, EOS, MASK, PAD, SPECIALS
from core.training.trainer import loss_fn

V = 300
FIRST = len(SPECIALS)


def _real(rows, cols, seed=0):
    return torch.randint(FIRST, V, (rows, cols), generator=torch.Generator().manual_seed(seed))


def test_corruption_rates_match_the_recipe():
    ids = _real(4000, 50)
    inputs, targets = bert_corrupt(ids, torch.Generator().manual_seed(1), V)
    chosen = targets.ne(PAD)
    n, total = int(chosen.sum()), ids.numel()
    # 15 % chosen (50-token rows almost never need the forced choice: 0.85^50 ≈ 3e-4)
    assert abs(n / total - 0.15) < 5 * math.sqrt(0.15 * 0.85 / total)
    masked = chosen & inputs.eq(MASK)
    same = chosen & inputs.eq(ids)
    rand = chosen & ~masked & ~same
    sd = 5 * math.sqrt(0.1 * 0.9 / n)
    assert abs(float(masked.sum()) / n - 0.8) < 5 * math.sqrt(0.8 * 0.2 / n)
    assert abs(float(rand.sum()) / n - 0.1 * (1 - 1 / (V - FIRST))) < sd
    assert abs(float(same.sum()) / n - (0.1 + 0.1 / (V - FIRST))) < sd
    assert torch.equal(targets[chosen], ids[chosen])  # the loss asks for the original token
    assert torch.equal(inputs[~chosen], ids[~chosen])  # nothing else is touched
    assert bool(inputs[rand].ge(FIRST).all())  # random replacements are ordinary tokens, never specials


def test_specials_and_padding_are_never_chosen_and_every_row_gets_a_target():
    ids = _real(500, 12, seed=2)
    ids[:, :2] = torch.tensor([2, 3])  # BOS EOS-like specials
    ids[:, -4:] = PAD
    ids[7] = PAD  # a row of padding only
    inputs, targets = bert_corrupt(ids, torch.Generator().manual_seed(3), V)
    assert bool(targets[:, :2].eq(PAD).all()) and bool(targets[:, -4:].eq(PAD).all())
    assert torch.equal(inputs[:, :2], ids[:, :2]) and torch.equal(inputs[:, -4:], ids[:, -4:])
    has = targets.ne(PAD).any(1)
    assert not bool(has[7]) and bool(has[torch.arange(500) != 7].all())


def test_short_rows_choose_fifteen_percent_plus_the_forced_one():
    """Expected share for an n-token row: 0.15 + 0.85^n / n (a row that draws nothing gets exactly one)."""
    for n in (1, 3, 6):
        ids = _real(40_000, n, seed=n)
        _, targets = bert_corrupt(ids, torch.Generator().manual_seed(n), V)
        share = float(targets.ne(PAD).float().mean())
        expect = 0.15 + 0.85 ** n / n
        assert abs(share - expect) < 0.006, (n, share, expect)


def test_corruption_is_a_function_of_the_seed_and_checks_its_arguments():
    ids = _real(8, 20)
    a = bert_corrupt(ids, torch.Generator().manual_seed(5), V)
    b = bert_corrupt(ids, torch.Generator().manual_seed(5), V)
    c = bert_corrupt(ids, torch.Generator().manual_seed(6), V)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) and not torch.equal(a[1], c[1])
    for bad in (dict(rate=0), dict(rate=1.5), dict(p_mask=0.95, p_random=0.1), dict(p_random=-0.1)):
        with pytest.raises(ValueError):
            bert_corrupt(ids, torch.Generator(), V, **bad)
    with pytest.raises(ValueError):
        bert_corrupt(ids, torch.Generator(), FIRST)


def test_mlm_task_trains_an_encoder_only_model_on_held_out_lines_it_never_saw():
    task = make_task("mlm")
    assert isinstance(task, MLMTask) and task.model_kind == model_kind("mlm") == "encoder-only"
    assert model_kind("lm") == "decoder-only" and model_kind("en-fr") == "encoder-decoder"
    train = {tuple(r) for r in task.train_rows}
    assert task.valid_rows and not any(tuple(r) in train for r in task.valid_rows)
    b = task.batch(3, 16, seed=0)
    assert b.src is None and b.tgt_in.shape == b.tgt_out.shape
    assert b.n_tokens() == int(b.tgt_in.ne(PAD).sum())  # every input token is read, not only the targets
    again = task.batch(3, 16, seed=0)
    assert torch.equal(b.tgt_in, again.tgt_in) and torch.equal(b.tgt_out, again.tgt_out)


def test_a_users_text_trains_with_its_last_lines_held_out():
    lines = [f"The {a} saw the {b} near the {c}." for a in ("dog", "cat", "fox", "hen", "owl")
             for b in ("river", "hill", "road", "farm") for c in ("gate", "barn")]
    task = MLMTask("\n".join(lines))
    assert len(task.train_rows) == 38 and len(task.valid_rows) == 2
    assert task.valid_rows == [task.tokenizer.encode(x) for x in lines[-2:]]
    assert "a user text file" in task.description
    with pytest.raises(ValueError, match="at least 20"):
        MLMTask("\n".join(lines[:19]))


def test_sentence_pairs_are_framed_like_bert_and_half_are_random():
    assert sentences_of("The dog was tired. It slept!  Did it? yes") == ["The dog was tired.", "It slept!",
                                                                         "Did it?", "yes"]
    ids, types = pair_row([10, 11], [12], 128)
    assert ids == [BOS, 10, 11, EOS, 12, EOS] and types == [0, 0, 0, 0, 1, 1]
    assert pair_row([10] * 100, [12] * 100, 128)[0] == ([BOS] + [10] * 100 + [EOS] + [12] * 100 + [EOS])[:128]
    task = make_task("mlm")
    labels = []
    for step in range(40):
        b = task.batch(step, 32, seed=0)
        lab = b.next_sentence
        assert lab[:16].eq(-100).all() and lab[16:].ge(0).all()  # first half single lines, second half pairs
        assert b.token_types[:16].eq(0).all() and b.token_types[16:].eq(1).any(1).all()
        assert b.tgt_in[16:, 0].eq(BOS).all() and b.tgt_out[16:, 0].eq(PAD).all()  # [BOS] is never a target
        labels += lab[16:].tolist()
    share = sum(labels) / len(labels)
    assert abs(share - 0.5) < 5 * (0.25 / len(labels)) ** 0.5
    pairs = task.train_pairs[:200]
    rows, types, labels = task.pair_batch(pairs, task.train_sentences, torch.Generator().manual_seed(4))
    sentences = {tuple(x) for x in task.train_sentences}
    for (first, nxt), row, lab in zip(pairs, rows, labels):
        assert row[:len(first) + 2] == [BOS] + first + [EOS]
        second = row[len(first) + 2:-1]
        assert second == nxt if lab == 0 else tuple(second) in sentences
    assert 60 < sum(labels) < 140


def test_the_loss_adds_next_sentence_prediction_for_a_model_with_the_head():
    task = make_task("mlm")
    torch.manual_seed(1)
    cfg = ModelConfig(kind="encoder-only", vocab_size=task.tokenizer.vocab_size, d_model=32, n_heads=2,
                      n_encoder_layers=1, d_ff=64, dropout=0.0, type_vocab_size=2, nsp=True)
    model = Transformer(cfg)
    b = task.batch(0, 8, seed=0)
    out = model(b.tgt_in, token_types=b.token_types)
    chosen = b.tgt_out.ne(PAD)
    pairs = b.next_sentence.ge(0)
    pooled = torch.tanh(model.pooler(out.hidden[:, 0]))
    expect = F.cross_entropy(out.logits[chosen], b.tgt_out[chosen]) + F.cross_entropy(
        model.nsp_head(pooled)[pairs], b.next_sentence[pairs])
    torch.testing.assert_close(loss_fn(model, b), expect)
    with pytest.raises(ValueError, match="next-sentence"):
        ModelConfig(kind="decoder-only", nsp=True, type_vocab_size=2)


def test_the_loss_is_taken_at_the_chosen_positions_only():
    task = make_task("mlm")
    torch.manual_seed(0)
    model = Transformer(ModelConfig(kind="encoder-only", vocab_size=task.tokenizer.vocab_size, d_model=32,
                                    n_heads=2, n_encoder_layers=1, d_ff=64, dropout=0.0))
    b = task.batch(0, 8, seed=0)
    logits = model(b.tgt_in).logits  # no next-sentence head: the masked-LM loss alone
    chosen = b.tgt_out.ne(PAD)
    expect = F.cross_entropy(logits[chosen], b.tgt_out[chosen])
    torch.testing.assert_close(loss_fn(model, b), expect)
    grad = torch.autograd.grad(F.cross_entropy(logits.flatten(0, 1), b.tgt_out.flatten(), ignore_index=PAD), logits)[0]
    assert float(grad[~chosen].abs().max()) == 0 and float(grad[chosen].abs().max()) > 0


@pytest.fixture(scope="module")
def bundled():
    return registry.load("mlm")


def test_typed_masks_replace_whole_words(bundled):
    """Writing [MASK] for a word gives exactly the ids of the sentence with that word's token masked."""
    tok = bundled.tokenizer
    sentence = "The animal didn't cross the street because it was too wide."
    ids = tok.encode(sentence)
    words = sentence[:-1].split(" ")
    checked = 0
    for i, w in enumerate(words):
        core = w.rstrip(".")
        if "'" in core or len(tok.encode(core)) != 1:
            continue
        typed = " ".join(words[:i] + ["[MASK]" if i % 2 else "[mask]"] + words[i + 1:]) + "."
        pos = tok.display(ids).index(tok.display(tok.encode(core))[0])
        assert mlm.encode_masked(tok, typed) == mlm.mask_positions(ids, [pos]), typed
        checked += 1
    assert checked >= 7
    assert mlm.encode_masked(tok, "too [MASK].") == [tok.encode("too")[0], MASK, tok.encode("too.")[-1]]
    with pytest.raises(ValueError):
        mlm.mask_positions(ids, [len(ids)])


def test_fill_reports_the_softmax_of_the_logits(bundled):
    tok = bundled.tokenizer
    ids = mlm.encode_masked(tok, "The dog was too [MASK], so it [MASK] down.")
    res = mlm.fill(bundled, ids, top_k=5)
    with torch.no_grad():
        probs = bundled.model(torch.tensor([ids])).logits[0].double().softmax(-1)
    assert [f.position for f in res.fills] == [i for i, t in enumerate(ids) if t == MASK]
    for f in res.fills:
        expect = probs[f.position].topk(5)
        assert f.ids == expect.indices.tolist()
        assert f.probs == pytest.approx(expect.values.tolist(), abs=1e-6)
    best = res.best()
    assert [best[f.position] for f in res.fills] == [f.ids[0] for f in res.fills]
    with pytest.raises(ValueError):
        mlm.fill(registry.load("lm"), ids)


def test_right_share_is_the_attention_mass_after_the_position(bundled):
    ids = mlm.encode_masked(bundled.tokenizer, "The animal didn't cross the street because [MASK] was too wide.")
    res = mlm.fill(bundled, ids)
    pos = ids.index(MASK)
    share = mlm.right_share(res.trace, pos)
    layers, heads = bundled.model.cfg.n_encoder_layers, bundled.model.cfg.n_heads
    assert share.shape == (layers, heads)
    for lay in range(layers):
        w = res.trace.attention("encoder", lay)[0, :, pos].double()
        torch.testing.assert_close(share[lay].double(), 1 - w[:, :pos + 1].sum(-1), atol=1e-6, rtol=0)
    assert float(share.max()) > 0.05  # a bidirectional encoder does look right


def test_left_only_reads_the_causal_lm_and_only_the_left(bundled):
    lm = registry.load("lm-tiny")
    prefix = lm.tokenizer.encode("The dog was too")
    ids, probs = mlm.left_only(lm, prefix, top_k=3)
    with torch.no_grad():
        p = lm.model(torch.tensor([[2] + prefix])).logits[0, -1].double().softmax(-1)
    assert ids == p.topk(3).indices.tolist()
    assert probs == pytest.approx(p.topk(3).values.tolist(), abs=1e-6)
    with pytest.raises(ValueError):
        mlm.left_only(bundled, prefix)


@pytest.mark.slow
def test_the_bundled_model_uses_the_words_right_of_a_mask(bundled):
    """Mask one word per held-out line: the original word is more probable when the model also reads the rest
    of the line than when the line is cut after the mask. A model blind to the right side would show no gain.
    Recomputed here with fill(), then compared with core.inference.mlm.both_sides_score (what the page reports)."""
    task = MLMTask(tokenizer=bundled.tokenizer)
    rows = task.valid_rows[:150]
    gen = torch.Generator().manual_seed(0)
    gains, right_full, right_cut = [], 0, 0
    everything = bundled.tokenizer.vocab_size
    for row in rows:
        if len(row) < 6:
            continue
        pos = int(torch.randint(1, len(row) - 3, (1,), generator=gen))
        full = mlm.fill(bundled, mlm.mask_positions(row, [pos]), positions=[pos], top_k=everything).fills[0]
        cut = mlm.fill(bundled, mlm.mask_positions(row[:pos + 1], [pos]), positions=[pos], top_k=everything).fills[0]
        gains.append(math.log(full.probs[full.ids.index(row[pos])]) - math.log(cut.probs[cut.ids.index(row[pos])]))
        right_full += full.ids[0] == row[pos]
        right_cut += cut.ids[0] == row[pos]
    assert len(gains) > 100
    mean = sum(gains) / len(gains)
    sd = (sum((g - mean) ** 2 for g in gains) / (len(gains) - 1)) ** 0.5
    assert mean > 5 * sd / len(gains) ** 0.5 and mean > 0.5, (mean, sd)
    score = mlm.both_sides_score(bundled, rows, lm=registry.load("lm-tiny"))
    assert score["n"] == len(gains) and score["gain"] == pytest.approx(mean, abs=1e-4)
    assert score["full"] == right_full / len(gains) and score["cut"] == right_cut / len(gains)
    assert score["full"] > score["cut"] and 0 < score["left_lm"] < 1


def _bert_twins(cls_name: str, seed: int, nsp: bool, **conf):
    """A random transformers BERT model (eager attention) and our Transformer holding the same weights."""
    transformers = pytest.importorskip("transformers")
    import dataclasses

    from core.io.pretrained import bert_config, bert_state_dict

    config = transformers.BertConfig(hidden_size=32, num_hidden_layers=2, type_vocab_size=2,
                                     attn_implementation="eager", **conf)
    torch.manual_seed(seed)
    theirs = getattr(transformers, cls_name)(config).eval()
    with torch.no_grad():
        theirs.cls.predictions.bias.normal_()  # non-zero, so the bias must be carried over
    weights = {k.removeprefix("bert."): v for k, v in theirs.state_dict().items()}
    ours = Transformer(dataclasses.replace(bert_config(config.to_dict()), nsp=nsp))
    missing, unexpected = ours.load_state_dict(bert_state_dict(weights, 2), strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}  # tied to the token embedding
    return theirs, ours.eval()


def test_pretraining_heads_equal_bert_for_pretraining():
    """transformers' BertForPreTraining (both heads) and ours with its weights: masked-LM logits and
    next-sentence logits agree on sentence pairs with token types."""
    theirs, ours = _bert_twins("BertForPreTraining", 2, True, vocab_size=90, num_attention_heads=2,
                               intermediate_size=48, max_position_embeddings=32)
    ids = torch.randint(5, 90, (2, 13), generator=torch.Generator().manual_seed(3))
    types = torch.tensor([[0] * 6 + [1] * 7, [0] * 9 + [1] * 4])
    with torch.no_grad():
        expect = theirs(input_ids=ids, token_type_ids=types)
        got = ours(ids, token_types=types)
    torch.testing.assert_close(got.logits, expect.prediction_logits, atol=2e-5, rtol=1e-5)
    torch.testing.assert_close(got.next_sentence, expect.seq_relationship_logits, atol=2e-5, rtol=1e-5)


def test_encoder_only_mlm_head_equals_bert_for_masked_lm():
    """A random BertForMaskedLM and our encoder-only model with its weights give the same vocabulary logits:
    embeddings, post-LN layers, GELU, and the head dense → GELU → LayerNorm → tied decoder + bias."""
    theirs, ours = _bert_twins("BertForMaskedLM", 0, False, vocab_size=120, num_attention_heads=4,
                               intermediate_size=64, max_position_embeddings=40)
    ids = torch.randint(5, 120, (3, 17), generator=torch.Generator().manual_seed(1))
    ids[:, 4] = MASK
    with torch.no_grad():
        expect = theirs(input_ids=ids).logits
        got = ours(ids, token_types=torch.zeros_like(ids))
    assert got.next_sentence is None
    torch.testing.assert_close(got.logits, expect, atol=2e-5, rtol=1e-5)


def test_next_sentence_reads_the_head_and_the_segments(bundled):
    a, b = "The dog saw a sheep in the path.", "It chased the sheep across the path."
    res = mlm.next_sentence(bundled, a, b)
    ids_a, ids_b = bundled.tokenizer.encode(a), bundled.tokenizer.encode(b)
    assert res.ids == [BOS] + ids_a + [EOS] + ids_b + [EOS] and not res.cut
    assert res.types == [0] * (len(ids_a) + 2) + [1] * (len(ids_b) + 1)
    with torch.no_grad():
        logits = bundled.model(torch.tensor([res.ids]), token_types=torch.tensor([res.types])).next_sentence[0]
    assert res.p_next == pytest.approx(float(logits.double().softmax(-1)[0]), abs=1e-6)
    share = mlm.segment_share(res.trace, res.types)
    lay, head = 1, 0
    w = res.trace.attention("encoder", lay)[0, head].double()
    rows = [i for i, t in enumerate(res.types) if t == 1]
    cols = [j for j, t in enumerate(res.types) if t == 0]
    assert float(share[lay, head]) == pytest.approx(float(w[rows][:, cols].sum(-1).mean()), abs=1e-6)
    held = bundled.meta["heldout"]
    assert held["next_sentence_accuracy"] >= 0.85 and held["n_pairs"] >= 300
    with pytest.raises(ValueError, match="at least one word"):
        mlm.next_sentence(bundled, a, " ")
    with pytest.raises(ValueError, match="no next-sentence head"):
        mlm.next_sentence(registry.load("lm"), a, b)


def test_the_runner_reads_typed_masks_for_a_masked_lm(bundled):
    """Every page's traced run (core.inference.runner) gives a masked LM the same ids as the Masked LM page."""
    from core.inference.runner import run

    text = "The [MASK] was muddy. A dog came to the garden."
    res = run(bundled, text)
    assert res.src_ids == mlm.encode_masked(bundled.tokenizer, text)
    assert res.src_tokens[:3] == ["The", "[MASK]", "was"]


@pytest.mark.parametrize("n", [2, 3, 11, 20, 100, 513])
def test_t5_span_corruption_drops_15_percent_in_separate_spans_of_mean_3(n):
    from core.training.tasks import span_corrupt
    for seed in range(20):
        spans = span_corrupt(n, torch.Generator().manual_seed(seed))
        noise = min(max(1, round(n * 0.15)), n - 1)
        assert sum(e - s for s, e in spans) == noise
        assert len(spans) == max(1, min(round(noise / 3), noise, n - noise))
        assert all(0 <= s < e <= n for s, e in spans)
        assert all(e1 < s2 for (_, e1), (s2, _) in zip(spans, spans[1:]))  # a kept token between two spans

