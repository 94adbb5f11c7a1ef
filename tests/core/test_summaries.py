"""core.probes.summaries: the JSON round trip is exact, a file for other weights or other sentences is ignored, and
every shipped summaries.json still matches its model (a small part recomputed here must equal the shipped numbers)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from core.io import budget, checkpoint, jsonio, registry
from core.probes import coref, heads as H, summaries as S

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted([*ROOT.glob("assets/models/*/summaries.json"), *ROOT.glob("assets/precomputed/*/summaries.json")])


@pytest.fixture(scope="module")
def tiny(one_thread, tmp_path_factory):
    """en-fr-tiny loaded from a copy of its folder (summaries written next to it stay out of assets/)."""
    import shutil
    dst = tmp_path_factory.mktemp("m") / "en-fr-tiny"
    shutil.copytree(registry.BUNDLED / "en-fr-tiny", dst)
    return checkpoint.load(dst)


def test_coref_round_trip_and_staleness(tiny):
    items = S.probe_items(tiny)[:4]
    boards = coref.scoreboards(tiny, items)
    S.write(tiny, "en-fr-tiny", {"weights_sha256": S.fingerprint(tiny.model), "coref": S.coref_to_json(boards, items)})
    back = S.coref_boards(tiny, "en-fr-tiny", items)
    assert back is not None and set(back) == set(boards)
    for kind in boards:
        assert torch.equal(back[kind]["share"], boards[kind]["share"])
        assert torch.equal(back[kind]["rollout_share"], boards[kind]["rollout_share"])
        assert back[kind]["ranked"] == boards[kind]["ranked"] and back[kind]["n"] == boards[kind]["n"]
    assert S.coref_boards(tiny, "en-fr-tiny", items[:3]) is None  # other sentences: not this file's
    assert "scripts/precompute.py --model en-fr-tiny" in S.source(tiny, "en-fr-tiny")
    other = checkpoint.load(tiny.path)
    with torch.no_grad():
        next(other.model.parameters()).add_(1e-3)  # other weights, same folder: the file is ignored
    assert S.fingerprint(other.model) != S.fingerprint(tiny.model)
    assert S.coref_boards(other, "en-fr-tiny", items) is None and S.source(other, "en-fr-tiny") is None


def test_heads_round_trip(tiny):
    batch, _ = H.eval_batch(tiny, n=2)
    imp = H.head_importance(tiny.model, batch)
    curve = H.prune_curve(tiny.model, batch, imp.least_first(), every=5)
    res = {"imp": imp, "curve": curve, "n": 2, "translation": False, "unit": "sequences"}
    back = S.heads_from_json(json.loads(json.dumps(jsonio.finite(S.heads_to_json(res, n=2)))))
    assert back["imp"].ranking == imp.ranking and torch.equal(back["imp"].margin_drop, imp.margin_drop)
    assert torch.equal(back["imp"].delta, imp.delta) and back["imp"].base_loss == imp.base_loss
    assert [(p.kept, p.removed, p.loss, p.acc) for p in back["curve"]] == [(p.kept, p.removed, p.loss, p.acc)
                                                                            for p in curve]


def _app_model(name: str):
    ck = registry.load(name, allow_path=False)
    budget.limit_positions(ck.model)
    return ck


@pytest.mark.parametrize("path", SHIPPED or [None], ids=[p.parent.name for p in SHIPPED] or ["none"])
def test_shipped_summaries_match_their_model(path, one_thread):
    """Recompute a small part of each shipped file: its weights, the 8-sentence scoreboard, two heads' importance and
    one GQA conversion must come out as shipped (else: run scripts/precompute.py again)."""
    if path is None:
        pytest.skip("no summaries.json shipped yet")
    raw = json.loads(path.read_text(encoding="utf-8"))
    name = path.parent.name
    ck = _app_model(name)
    assert raw["weights_sha256"] == S.fingerprint(ck.model), f"{path} was made for other weights: {raw['command']}"
    if "coref" in raw:
        assert raw["coref"]["items_sha256"] == S.texts_sha(it.text for it in S.probe_items(ck)), "probe set changed"
        few = S.probe_items(ck)[:S.CHECK_ITEMS]
        assert "coref_check" in raw, "run scripts/precompute.py --parts coref_check"
        assert raw["coref_check"]["items_sha256"] == S.texts_sha(it.text for it in few)
        shipped = S.coref_from_json(raw["coref_check"])
        for kind, board in coref.scoreboards(ck, few).items():
            assert torch.allclose(shipped[kind]["share"], board["share"], atol=1e-6), kind
    if "heads" in raw:
        imp = S.heads_from_json(raw["heads"])["imp"]
        batch, _ = H.eval_batch(ck, n=raw["heads"]["spec"]["n"])
        base, _, margin = H.batch_scores(ck.model, batch)
        assert abs(base - imp.base_loss) < 1e-5 and abs(margin - imp.base_margin) < 1e-4
        for i, h in [(0, 0), (len(imp.names) - 1, ck.model.cfg.n_heads - 1)]:
            loss, _, m = H.batch_scores(ck.model, batch, {imp.names[i]: [h]})
            assert abs((margin - m) - float(imp.margin_drop[i, h])) < 1e-4, (imp.names[i], h)
    if "gqa" in raw:
        g = min(int(k) for k in raw["gqa"]["loss"])
        loss, acc = S.compute_gqa(ck, g, n=raw["gqa"]["spec"]["n"])
        assert abs(loss - raw["gqa"]["loss"][str(g)][0]) < 1e-5 and abs(acc - raw["gqa"]["loss"][str(g)][1]) < 1e-9
