"""Speculative decoding: output identical to the target's greedy decoding, whatever the draft."""
import pytest
import torch

from core.io import registry
from core.inference.decoding import generate
from core.model import Transformer
from core.variants.speculative import speculative_generate, truncated_draft
from core.io.tokenizer import EOS


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def lm():
    ck = registry.load("lm-tiny")
    torch.manual_seed(0)
    drafts = {"truncated": truncated_draft(ck.model, 1), "random": Transformer(truncated_draft(ck.model, 1).cfg).eval(),
              "target": ck.model}
    return ck, drafts


PROMPTS = ["The dog was hungry.", "The animal didn't cross the street because it", "The cat", ""]


@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("draft", ["truncated", "random", "target"])
def test_output_is_identical_to_greedy(lm, k, draft):
    ck, drafts = lm
    for text in PROMPTS:
        prompt = ck.tokenizer.encode(text)
        plain = generate(ck.model, prompt=prompt, max_new=24)
        greedy = plain.ids
        res = speculative_generate(ck.model, drafts[draft], prompt=prompt, k=k, max_new=24)
        assert res.ids == greedy, (text, k, draft)
        kept = [t for s in res.steps for t in s.proposed[:s.accepted] + ([] if s.target_token is None else [s.target_token])]
        assert kept[:len(greedy)] == greedy
        assert res.target_passes == len(res.steps)
        if draft == "target":  # a draft identical to the target: every proposal accepted, k + 1 tokens per pass
            assert res.acceptance_rate == 1.0
            produced = len(greedy) + (plain.steps[-1].chosen == EOS)  # a text that ends also produced its EOS
            assert res.target_passes == -(-produced // (k + 1))
        if draft == "random":
            assert res.acceptance_rate < 0.5


def test_stops_at_eos_and_respects_the_budget_and_max_len(lm):
    ck, drafts = lm
    prompt = ck.tokenizer.encode("The dog was hungry.")
    for max_new in (1, 3, 7):
        res = speculative_generate(ck.model, drafts["truncated"], prompt=prompt, k=4, max_new=max_new)
        assert res.ids == generate(ck.model, prompt=prompt, max_new=max_new).ids and len(res.ids) <= max_new
    long = prompt * 20
    long = long[:ck.model.cfg.max_len - 3]
    assert speculative_generate(ck.model, drafts["target"], prompt=long, k=4).ids == \
        generate(ck.model, prompt=long).ids
    assert EOS not in speculative_generate(ck.model, drafts["random"], prompt=prompt, k=2, max_new=30).ids


def test_translation_model_with_a_truncated_decoder_draft():
    ck = registry.load("en-fr")
    draft = truncated_draft(ck.model, 1)
    for text in ("The animal didn't cross the street because it was too tired.", "I am happy."):
        src = ck.tokenizer.encode(text) + [EOS]
        greedy = generate(ck.model, src=src).ids
        for k in (1, 3):
            assert speculative_generate(ck.model, draft, src=src, k=k).ids == greedy


def test_bad_arguments(lm):
    ck, drafts = lm
    with pytest.raises(ValueError):
        speculative_generate(ck.model, drafts["target"], prompt=[5], k=0)
    with pytest.raises(ValueError):
        truncated_draft(ck.model, 3)
    other = registry.load("en-fr").model
    with pytest.raises(ValueError):
        speculative_generate(ck.model, other, prompt=[5])


# ------------------------------------------------------------------ speculative SAMPLING
from core import ModelConfig  # noqa: E402
from core.inference.decoding import NEVER_GENERATED  # noqa: E402
from core.variants import speculative as S  # noqa: E402


def random_dist(gen, vocab, scale, zeros=0):
    """A random distribution over ``vocab`` tokens, ``zeros`` of them with probability exactly 0."""
    logits = torch.randn(vocab, generator=gen, dtype=torch.float64) * scale
    logits[torch.randperm(vocab, generator=gen)[:zeros]] = float("-inf")
    return logits.softmax(-1)


@pytest.mark.parametrize("seed", range(24))
def test_one_position_outputs_each_token_with_the_targets_probability(seed):
    """The theorem, exactly: P(output x) = q(x)·min(1, p(x)/q(x)) + P(reject)·norm(max(0, p − q))(x) = p(x), built
    from the two pieces the sampler uses, for random p and q (sharp, flat, with tokens one of them never gives)."""
    gen = torch.Generator().manual_seed(seed)
    vocab = (2, 5, 8, 50, 400)[seed % 5]
    p = random_dist(gen, vocab, (0.3, 1.0, 4.0)[seed % 3], zeros=vocab // 4 if seed % 2 else 0)
    q = random_dist(gen, vocab, (2.0, 0.5, 6.0)[seed % 3], zeros=vocab // 3 if seed % 4 == 1 else 0)
    a = S.acceptance_probs(p, q)
    assert ((a >= 0) & (a <= 1)).all()
    kept = q * a  # proposal x drawn from q and kept
    reject = 1 - kept.sum()
    out = kept + reject * S.residual(p, q)
    torch.testing.assert_close(out, p, atol=1e-6, rtol=0)
    torch.testing.assert_close(S.output_distribution(p, q), p, atol=1e-6, rtol=0)
    assert float(reject) == pytest.approx(S.total_variation(p, q), abs=1e-9)  # P(reject) = TV(p, q)
    if S.total_variation(p, q) > 0.05:  # the same check catches the usual mistakes: always accepting gives q
        assert (q - p).abs().sum() > 0.1
    if reject > 0.05 and S.total_variation(p, S.residual(p, q)) > 0.05:
        wrong = kept + reject * p  # a rejection replaced by a fresh draw from p, not from the residual
        assert (wrong - p).abs().sum() > 5e-3


def test_equal_distributions_are_always_accepted_and_the_residual_is_never_empty():
    p = torch.tensor([0.0, 0.5, 0.25, 0.25], dtype=torch.float64)
    assert S.acceptance_probs(p, p)[1:].tolist() == [1.0, 1.0, 1.0]
    torch.testing.assert_close(S.residual(p, p), p)  # p = q: nothing is rejected; still a distribution
    torch.testing.assert_close(S.output_distribution(p, p), p)


def tiny_lm(seed, layers=1) -> Transformer:
    """Vocabulary 12 (9 tokens a decoder may emit), random weights."""
    torch.manual_seed(seed)
    return Transformer(ModelConfig(kind="decoder-only", vocab_size=12, d_model=16, n_heads=2, n_decoder_layers=layers,
                                   d_ff=32, max_len=16, dropout=0.0)).eval()


TINY_PROMPT = [5, 6, 7]
RUNS = 2500


def first_token(res) -> int:
    s = res.steps[0]
    return s.proposed[0] if s.accepted else s.target_token


def target_first_probs(target, temperature):
    """The target's own distribution of the first token: softmax(logits / T), as generate(method="sample")."""
    from core.inference.decoding import Incremental, filter_logits
    logits = Incremental(target).next_logits(torch.tensor([[2] + TINY_PROMPT]))[0]
    return filter_logits(logits, temperature).softmax(-1).double()


def fit(counts: torch.Tensor, p: torch.Tensor) -> tuple[float, float, float]:
    """(total variation, Pearson chi-square, its 99.9 % point): cells expecting < 5 pooled into one; the point by
    Wilson and Hilferty's approximation (z = 3.09)."""
    n = counts.sum()
    exp = p * n
    big = exp >= 5
    obs = torch.cat([counts[big].double(), counts[~big].double().sum()[None]])
    e = torch.cat([exp[big], exp[~big].sum()[None]])
    keep = e > 0
    chi2 = float(((obs[keep] - e[keep]) ** 2 / e[keep]).sum())
    df = int(keep.sum()) - 1
    crit = df * (1 - 2 / (9 * df) + 3.09 * (2 / (9 * df)) ** 0.5) ** 3
    return S.total_variation(counts, p), chi2, crit


def matches(counts, p) -> bool:
    tv, chi2, crit = fit(counts, p)
    return tv < 0.04 and chi2 < crit


def sampled_first_tokens(target, draft, temperature, runs=RUNS):
    counts = torch.zeros(target.cfg.vocab_size, dtype=torch.long)
    for i in range(runs):
        counts[first_token(S.speculative_sample(target, draft, prompt=TINY_PROMPT, k=1, max_new=1,
                                                temperature=temperature, seed=i))] += 1
    return counts


@pytest.fixture(scope="module")
def tiny_pair():
    target, draft = tiny_lm(0, layers=1), tiny_lm(1, layers=1)  # a draft with weights of its own: q far from p
    return target, draft


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_the_first_token_is_distributed_as_the_targets_own_sampling(tiny_pair, temperature):
    target, draft = tiny_pair
    p = target_first_probs(target, temperature)
    assert S.total_variation(p, target_first_probs(draft, temperature)) > 0.3  # the draft alone is far off
    counts = sampled_first_tokens(target, draft, temperature)
    tv, chi2, crit = fit(counts, p)
    assert tv < 0.04 and chi2 < crit, (tv, chi2, crit)
    assert counts[list(NEVER_GENERATED)].sum() == 0


@pytest.mark.parametrize("mistake", ["always accept", "rejection redrawn from p"])
def test_the_same_check_fails_a_wrong_acceptance_rule(tiny_pair, monkeypatch, mistake):
    """The statistical check discriminates: a sampler that keeps every proposal (its output is the draft's q), or
    replaces a rejection by a fresh draw from p instead of the residual, fails it with the same runs."""
    target, draft = tiny_pair
    if mistake == "always accept":
        monkeypatch.setattr(S, "acceptance_probs", lambda p, q: torch.ones_like(p))
    else:
        monkeypatch.setattr(S, "residual", lambda p, q: p)
    counts = sampled_first_tokens(target, draft, 1.0, runs=RUNS)
    tv, chi2, crit = fit(counts, target_first_probs(target, 1.0))
    assert not matches(counts, target_first_probs(target, 1.0)), (tv, chi2, crit)
    assert chi2 > 3 * crit, (chi2, crit)


def test_the_first_two_tokens_jointly_follow_the_target(tiny_pair):
    """Two positions: the second is a kept proposal's successor, a bonus draw or the next round's, and the caches
    are rolled back in between; their joint distribution is p(x1)·p(x2 | x1)."""
    from core.inference.decoding import Incremental
    target, draft = tiny_pair
    v = target.cfg.vocab_size
    p1 = target_first_probs(target, 1.0)
    joint = torch.zeros(v, v, dtype=torch.float64)
    for x1 in range(v):
        if p1[x1] > 0 and x1 != EOS:
            logits = Incremental(target).next_logits(torch.tensor([[2] + TINY_PROMPT + [x1]]))[0]
            joint[x1] = p1[x1] * logits.softmax(-1).double()
    ends = p1[EOS]  # the text ends at once: one cell
    counts = torch.zeros(v * v + 1, dtype=torch.long)
    for i in range(RUNS):
        ids = S.speculative_sample(target, draft, prompt=TINY_PROMPT, k=1, max_new=2, seed=i).ids
        if not ids:
            counts[-1] += 1
        elif len(ids) == 1:  # the second token was EOS
            counts[ids[0] * v + EOS] += 1
        else:
            counts[ids[0] * v + ids[1]] += 1
    tv, chi2, crit = fit(counts, torch.cat([joint.flatten(), ends[None]]))
    assert chi2 < crit and tv < 0.08, (tv, chi2, crit)  # ~70 possible pairs: honest draws are further apart in TV


def test_draft_equal_to_target_keeps_every_proposal(lm):
    ck, drafts = lm
    for text in PROMPTS[:3]:
        res = S.speculative_sample(ck.model, drafts["target"], prompt=ck.tokenizer.encode(text), k=3, max_new=20,
                                   temperature=1.0, seed=3)
        assert res.acceptance_rate == 1.0 and res.proposed > 0
        assert all(a > 1 - 1e-4 for s in res.steps for a in s.accept_prob)
        assert not any(s.resampled for s in res.steps)


@pytest.mark.parametrize("k", [1, 3])
def test_near_zero_temperature_is_greedy_speculative_decoding(lm, k):
    """T → 0: p and q become one-hot on the two argmaxes; a proposal is kept iff it is the target's greedy token and
    the residual is the target's argmax, so every round keeps what greedy verification keeps."""
    ck, drafts = lm
    for text in PROMPTS:
        prompt = ck.tokenizer.encode(text)
        greedy = speculative_generate(ck.model, drafts["truncated"], prompt=prompt, k=k, max_new=24)
        res = S.speculative_sample(ck.model, drafts["truncated"], prompt=prompt, k=k, max_new=24, temperature=1e-4,
                                   seed=5)
        assert res.ids == greedy.ids == generate(ck.model, prompt=prompt, max_new=24).ids
        assert [s.accepted for s in res.steps] == [s.accepted for s in greedy.steps]
        assert [s.proposed for s in res.steps] == [s.proposed for s in greedy.steps]
        assert all(a in (0.0, 1.0) for s in res.steps for a in s.accept_prob)


def test_a_seed_or_a_generator_makes_it_deterministic_and_the_record_is_consistent(lm):
    ck, drafts = lm
    prompt = ck.tokenizer.encode("The cat")
    one = S.speculative_sample(ck.model, drafts["truncated"], prompt=prompt, k=4, max_new=30, seed=11)
    two = S.speculative_sample(ck.model, drafts["truncated"], prompt=prompt, k=4, max_new=30,
                               generator=torch.Generator().manual_seed(11))
    assert one.ids == two.ids and one.steps == two.steps
    others = {tuple(S.speculative_sample(ck.model, drafts["truncated"], prompt=prompt, k=4, max_new=30, seed=s).ids)
              for s in range(12, 18)}
    assert len(others) > 1
    assert one.target_passes == len(one.steps) and len(one.ids) <= 30
    for s in one.steps:
        n = len(s.proposed)
        assert len(s.draft_prob) == len(s.target_prob) == len(s.accept_prob) == n
        for q, p, a in zip(s.draft_prob, s.target_prob, s.accept_prob):
            assert a == pytest.approx(min(1.0, p / q), rel=1e-5)
        assert len(s.uniforms) == min(n, s.accepted + 1)
        assert all(u < a for u, a in zip(s.uniforms[:s.accepted], s.accept_prob))
        if s.resampled:
            assert s.uniforms[-1] >= s.accept_prob[s.accepted] and s.target_token is not None
    kept = [t for s in one.steps
            for t in s.proposed[:s.accepted] + ([] if s.target_token is None else [s.target_token])]
    assert kept[:len(one.ids)] == one.ids


def test_a_kept_eos_ends_the_text_without_a_bonus_token(lm):
    ck, drafts = lm
    prompt = ck.tokenizer.encode("The dog was hungry.")
    ended = 0
    for seed in range(12):
        res = S.speculative_sample(ck.model, drafts["truncated"], prompt=prompt, k=4, max_new=24, seed=seed)
        last = res.steps[-1]
        if last.accepted and last.proposed[last.accepted - 1] == EOS:
            ended += 1
            assert last.target_token is None and not last.resampled
            before = last.proposed[:last.accepted - 1]  # the kept proposals before the EOS end the output
            assert res.ids[len(res.ids) - len(before):] == before
        assert EOS not in res.ids
        assert all(EOS not in s.proposed[:s.accepted] for s in res.steps[:-1])  # nothing is generated after it
    assert ended >= 2


def test_the_pages_first_token_check_makes_the_samplers_own_draws(lm):
    """first_token_check's speculative run i is speculative_sample(max_new=1, seed=seed + i), draw for draw."""
    ck, drafts = lm
    prompt = ck.tokenizer.encode("The dog was hungry.")
    check = S.first_token_check(ck.model, drafts["truncated"], prompt=prompt, n=40, temperature=0.8, seed=100)
    counts = torch.zeros_like(check["spec"])
    for i in range(40):
        res = S.speculative_sample(ck.model, drafts["truncated"], prompt=prompt, k=4, max_new=1, temperature=0.8,
                                   seed=100 + i)
        counts[first_token(res)] += 1
    assert torch.equal(counts, check["spec"])
    assert check["plain"].sum() == check["spec"].sum() == check["draft"].sum() == 40
    assert check["tv_exact"] < 1e-6


def test_sampling_bad_arguments(lm):
    ck, drafts = lm
    for kw in (dict(k=0), dict(temperature=0.0), dict(temperature=-1.0)):
        with pytest.raises(ValueError):
            S.speculative_sample(ck.model, drafts["target"], prompt=[5], **kw)
    with pytest.raises(ValueError):
        S.speculative_sample(ck.model, registry.load("en-fr").model, prompt=[5])
