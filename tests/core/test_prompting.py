"""core.inference.prompting: candidate scores are the summed token log-probabilities a plain token-by-token loop over
the model gives; "it" is replaced as written; the accuracy of a few-shot curve is what fake scorers with a known rule
must get; the shipped curves are what the models give now."""
from __future__ import annotations

import pytest
import torch

from core.inference import prompting as P
from core.inference.decoding import Incremental
from core.io import budget, registry
from core.io.tokenizer import BOS
from core.probes import summaries

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module", params=["lm-tiny", "lm"])
def lm(request):
    ck = registry.load(request.param, allow_path=False)
    budget.limit_positions(ck.model)  # as the app loads it
    return request.param, ck


def loop_logps(model, tokenizer, prompt: str, continuation: str) -> tuple[list[float], int]:
    """The log p of every token of ``prompt + continuation`` read one token at a time ([BOS] and each token fed alone
    to the incremental decoder, its own KV cache; tests/core/test_decoding.py holds it equal to a full
    recomputation), and how many of them the prompt's own tokens cover."""
    head, ids = tokenizer.encode(prompt), tokenizer.encode(prompt + continuation)
    k = 0
    while k < len(head) and ids[k] == head[k]:
        k += 1
    row, out, inc = [BOS] + ids, [], Incremental(model)
    for t in range(1, len(row)):
        logits = inc.feed(torch.tensor([[row[t - 1]]]))[0].double()  # the next-token logits after row[t - 1]
        out.append(float(logits.log_softmax(-1)[row[t]]))
    return out, k


def loop_logp(model, tokenizer, prompt: str, continuation: str) -> tuple[float, int]:
    """Summed log p of the continuation's tokens (:func:`loop_logps`) and their number."""
    each, k = loop_logps(model, tokenizer, prompt, continuation)
    return sum(each[k:]), len(each) - k


def test_candidate_scores_equal_a_token_by_token_loop(lm):
    _, ck = lm
    prompt = P.build_prompt([("dog", "dogs"), ("cat", "cats")], "horse", P.separators(ck.tokenizer))
    answers = ["horses", "horse", "cows", "a very small grey horse"]
    got = P.score_answers(ck.model, ck.tokenizer, prompt, answers)
    for a, g in zip(answers, got):
        want, n = loop_logp(ck.model, ck.tokenizer, prompt, " " + a)
        assert len(g.tokens) == n
        assert g.logp == pytest.approx(want, abs=1e-4), a
    assert got[0].logp != pytest.approx(got[1].logp, abs=1e-3)  # the scores differ: not all read the same row


def test_winograd_scores_equal_a_token_by_token_loop(lm):
    _, ck = lm
    sentences = ["The animal didn't cross the street because it was too tired.", "The key was in the box, so I left it"]
    tired, last = P.winograd(ck.model, ck.tokenizer, sentences, ["the animal", "the box"])
    for r, before in zip(tired, ["The animal didn't cross the street because the animal",
                                 "The animal didn't cross the street because the box"]):
        each, k = loop_logps(ck.model, ck.tokenizer, before, " was too tired.")
        assert r["sentence"] == before + " was too tired."
        assert r["full"] == pytest.approx(sum(each), abs=1e-4) and r["full_tokens"] == len(each)
        assert r["partial"] == pytest.approx(sum(each[k:]), abs=1e-4) and r["partial_tokens"] == len(each) - k
    assert tired[0]["full"] != pytest.approx(tired[1]["full"], abs=1e-3)
    assert [r["partial"] for r in last] == [None, None]  # "it" ends the sentence: nothing after it to score
    assert last[1]["full"] == pytest.approx(loop_logp(ck.model, ck.tokenizer, "", last[1]["sentence"])[0], abs=1e-4)


def test_bad_inputs_get_clear_errors(lm):
    _, ck = lm
    with pytest.raises(ValueError, match="empty"):
        P.score_answers(ck.model, ck.tokenizer, "dog =", ["dogs", "  "])
    with pytest.raises(P.TooLong, match="reads at most"):
        P.score_answers(ck.model, ck.tokenizer, "dog = dogs ; " * 200 + "cat =", ["cats"])
    with pytest.raises(ValueError, match="at most 5"):
        P.parse_answers("a, b, c, d, e, f")
    with pytest.raises(ValueError, match="at least one"):
        P.parse_answers(" , ,")
    assert P.parse_answers(" horses, horse ,horses") == ["horses", "horse"]


def test_substitution_writes_each_candidate_where_it_was():
    subs = P.substitute("The animal didn't cross the street because it was too tired.", ["the animal", "the street"])
    assert [s.text for s in subs] == ["The animal didn't cross the street because the animal was too tired.",
                                      "The animal didn't cross the street because the street was too tired."]
    assert [s.after for s in subs] == [" was too tired."] * 2
    assert subs[1].before == "The animal didn't cross the street because the street"
    first = P.substitute("It was too wide. Its items were old.", ["the street"])[0]
    assert first.text == "The street was too wide. Its items were old."  # capitalised; "Its"/"items" untouched
    assert P.substitute("The box is where we left it", ["the key"])[0].text == "The box is where we left the key"
    two = P.substitute("The dog saw the cat and it ran, so it hid.", ["the dog"])[0]
    assert two.text == "The dog saw the cat and the dog ran, so it hid." and two.after == " ran, so it hid."
    with pytest.raises(ValueError, match="no \"it\""):
        P.substitute("Items fit in the kit.", ["the box"])
    assert P.candidate_phrases("The animal didn't cross the street because it was too wide.") == ["the animal",
                                                                                                   "the street"]


def test_prompts_hold_exactly_k_examples_from_the_pool_and_a_seed_fixes_them():
    tasks = P.tasks()
    assert set(tasks) == {"plural", "copy", "german"}
    t = tasks["plural"]
    assert P.build_prompt(P.demonstrations(t, 0, 0), "horse") == "horse ="  # k = 0: no example at all
    assert P.build_prompt([("dog", "dogs"), ("cat", "cats")], "horse") == "dog = dogs ; cat = cats ; horse ="
    assert P.build_prompt([("dog", "dogs")], "horse", (",", ".")) == "dog , dogs . horse ,"
    for i in range(len(t.queries)):
        d8 = P.demonstrations(t, i, 8)
        assert len(d8) == 8 and len(set(d8)) == 8 and set(d8) <= set(t.pool)
        assert P.demonstrations(t, i, 2) == d8[:2]  # a larger k adds examples
    for task in tasks.values():
        assert not set(task.pool) & set(task.queries) and len(task.queries) == P.QUERIES
    assert P.tasks(0) == tasks and P.tasks(1)["plural"].queries != t.queries
    assert P.curve_spec(0) == P.curve_spec() != P.curve_spec(1)
    assert ("child", "children") in t.pool + t.queries or ("man", "men") in t.pool + t.queries  # irregular too


def test_accuracy_of_fake_scorers_with_known_rules():
    t = P.tasks()["plural"]
    n_cands = len(t.candidates(0))
    assert n_cands == P.QUERIES + 1 and t.candidates(0)[-1] == t.queries[0][0]

    def add_s(prompt, cands):  # knows only the rule "add an s" to the last word before "="
        word = prompt.split()[-2]
        return [0.0 if c == word + "s" else -1.0 for c in cands]
    curve = P.few_shot_curve(add_s, t, ks=(0, 2))
    regular = sum(a == w + "s" for w, a in t.queries) / len(t.queries)
    assert 0 < regular < 1
    assert [p["accuracy"] for p in curve["points"]] == [regular, regular]
    assert curve["points"][0]["chance"] == pytest.approx(1 / n_cands)

    def copy(prompt, cands):
        word = prompt.split()[-2]
        return [float(c == word) for c in cands]
    assert [p["accuracy"] for p in P.few_shot_curve(copy, P.tasks()["copy"], ks=(0, 8))["points"]] == [1.0, 1.0]
    picks = P.few_shot_curve(copy, t, ks=(1,))["points"][0]["picks"]
    assert picks == [w for w, _ in t.queries]  # a copier picks the singular, which is wrong
    assert P.few_shot_curve(copy, t, ks=(1,))["points"][0]["accuracy"] == 0.0

    flat = P.few_shot_curve(lambda prompt, cands: [0.0] * len(cands), t, ks=(0,))["points"][0]
    assert flat["accuracy"] == 0.0 and flat["mean_rank"] == n_cands  # a tie is never a right answer

    def learns(prompt, cands):  # right only when the prompt shows at least two examples
        word = prompt.split()[-2]
        return [float(c == dict(t.queries)[word]) if prompt.count(";") >= 2 else 0.0 for c in cands]
    assert [p["accuracy"] for p in P.few_shot_curve(learns, t)["points"]] == [0.0, 0.0, 1.0, 1.0, 1.0]

    def too_long(prompt, cands):
        if prompt.count(";") > 2:
            raise P.TooLong("long")
        return [0.0] * len(cands)
    assert [p["accuracy"] for p in P.few_shot_curve(too_long, t)["points"]] == [0.0, 0.0, 0.0, None, None]


def test_rank_accuracy_and_binomial_tail():
    assert P.rank_of([-1.0, -3.0, -2.0], 0) == 1 and P.rank_of([-1.0, -3.0, -2.0], 1) == 3
    res = P.accuracy([([0.0, -1.0], 0), ([0.0, -1.0], 1), ([-1.0, 0.0, -2.0], 1)])
    assert res["accuracy"] == pytest.approx(2 / 3) and res["mean_rank"] == pytest.approx(4 / 3)
    assert res["chance"] == pytest.approx((1 / 2 + 1 / 2 + 1 / 3) / 3) and res["ranks"] == [1, 2, 1]
    assert P.binomial_tail(2, 3, 0.5) == pytest.approx(0.5) and P.binomial_tail(0, 5, 0.1) == pytest.approx(1.0)
    assert P.binomial_tail(3, 3, 0.1) == pytest.approx(0.001)


def test_shipped_curves_are_what_the_model_gives_now(lm):
    name, ck = lm
    shipped = summaries.prompting_summary(ck, name)
    assert shipped is not None, f"run: python scripts/precompute.py --model {name} --parts prompting"
    scorer, seps = P.model_scorer(ck.model, ck.tokenizer), P.separators(ck.tokenizer)
    by_task = {c["task"]: c for c in shipped["curves"]}
    assert set(by_task) == set(P.tasks())
    for c in shipped["curves"]:
        assert c["separators"] == list(seps)
        for p in c["points"]:
            if p["accuracy"] is not None:
                assert p["accuracy"] == pytest.approx(sum(r == 1 for r in p["ranks"]) / len(p["ranks"]))
    t = P.tasks()["plural"]
    point = next(p for p in by_task["plural"]["points"] if p["k"] == 2)
    for i in range(2):  # two queries re-measured at k = 2
        cands = t.candidates(i)
        scores = scorer(P.build_prompt(P.demonstrations(t, i, 2), t.queries[i][0], seps), cands)
        assert P.rank_of(scores, cands.index(t.queries[i][1])) == point["ranks"][i]
        assert cands[P.best(scores)] == point["picks"][i]
