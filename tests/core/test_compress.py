"""Magnitude pruning of the weights (core.probes.compress): the masks against torch.nn.utils.prune's global L1
pruning, the exact count and ordering on weights with ties, and the shipped sparsity curve re-measured."""
import pytest
import torch
from torch.nn.utils import prune as torch_prune

from core.config import ModelConfig
from core.inference.runner import run
from core.io import registry
from core.model import Transformer
from core.probes import compress as C
from core.probes import heads as H
from core.probes import summaries

pytestmark = pytest.mark.usefixtures("one_thread")
KINDS = ("encoder-decoder", "decoder-only", "encoder-only")


def tiny(kind="encoder-decoder") -> Transformer:
    torch.manual_seed(0)
    cfg = ModelConfig(kind=kind, vocab_size=23, d_model=16, n_heads=4, n_encoder_layers=2, n_decoder_layers=2,
                      d_ff=32, max_len=32, dropout=0.0)
    return Transformer(cfg).eval()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("sparsity", [0.1, 0.37, 0.9])
def test_masks_equal_torch_global_l1_pruning_of_the_same_matrices(kind, sparsity):
    model = tiny(kind)
    ours = C.magnitude_masks(model, sparsity)
    modules = [m for _, m in model.named_modules() if isinstance(m, torch.nn.Linear)
               and any(m.weight is w for _, w in C.prunable(model))]
    assert len(modules) == len(ours)
    torch_prune.global_unstructured([(m, "weight") for m in modules], pruning_method=torch_prune.L1Unstructured,
                                    amount=sparsity)
    theirs = [m.weight_mask.bool() for m in modules]
    assert all(torch.equal(a, b) for a, b in zip(ours.values(), theirs))


def test_only_layer_matrices_are_pruned_and_the_model_is_left_as_it_was():
    model = tiny()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    out = C.pruned(model, 0.5)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())
    names = {n for n, _ in C.prunable(model)}
    assert names and all(".layers." in n and n.endswith(".weight") for n in names)
    for k, v in out.state_dict().items():
        if k not in names:  # embeddings, output layer, norms, biases: untouched
            assert torch.equal(v, before[k]), k
    zeros = sum(int((w == 0).sum()) for _, w in C.prunable(out))
    assert zeros == round(0.5 * sum(w.numel() for _, w in C.prunable(model)))


def test_shipped_float16_weights_with_ties_lose_exactly_their_share_smallest_first():
    """The shipped weights are float16: many equal magnitudes. The count is still exact and no kept weight is
    smaller than a pruned one."""
    model = registry.load("en-fr").model
    flat = torch.cat([w.detach().abs().flatten() for _, w in C.prunable(model)])
    assert flat.unique().numel() < flat.numel() // 10  # ties are common
    keep = torch.cat([m.flatten() for m in C.magnitude_masks(model, 0.3).values()])
    assert int((~keep).sum()) == round(0.3 * flat.numel())
    assert flat[~keep].max() <= flat[keep].min()


def test_share_table_weighted_by_size_is_the_sparsity():
    model = tiny("encoder-decoder")
    rows, cols, table = C.share_table(model, 0.4)
    assert rows == ["encoder 0", "encoder 1", "decoder 0", "decoder 1"]
    assert "cross_attn.qkv" in cols and torch.isnan(table[0, cols.index("cross_attn.qkv")])
    sizes = {n: w.numel() for n, w in C.prunable(model)}
    shares = C.share_pruned(model, 0.4)
    total = sum(sizes[n] * shares[n] for n in sizes)
    assert total == pytest.approx(round(0.4 * sum(sizes.values())), abs=1e-3)


def test_unpruned_reading_is_the_models_own_translation_and_heavy_pruning_changes_it():
    ck = registry.load("en-fr")
    text = "The students are reading in the library."
    assert C.read_with(ck, C.pruned(ck.model, 0.0), text) == run(ck, text).output
    assert C.read_with(ck, C.pruned(ck.model, 0.9), text) != run(ck, text).output


def test_mlm_reading_fills_the_typed_masks_and_asks_for_one():
    ck = registry.load("mlm")
    filled = C.read_with(ck, ck.model, "The dog [MASK] the ball.")
    assert filled.startswith("The dog ") and filled.endswith(" the ball.") and "MASK" not in filled
    with pytest.raises(ValueError, match="MASK"):
        C.read_with(ck, ck.model, "The dog saw the ball.")


@pytest.mark.parametrize("name", ["en-fr", "lm", "mlm"])
def test_shipped_sparsity_curve_is_remeasured_from_the_weights(name):
    """summaries.json's curve is what these weights give now: one level recomputed (the curve's 60 %, where
    pruning has begun to cost) and the unpruned point against the head-importance batch's own loss."""
    ck = registry.load(name)
    shipped = summaries.weights_summary(ck, name)
    assert shipped is not None, f"python scripts/precompute.py --model {name} --parts weights"
    assert [p.sparsity for p in shipped] == list(C.LEVELS)
    again = C.sparsity_curve(ck, levels=(0.0, 0.6))
    for mine, theirs in zip(again, (shipped[0], shipped[6])):
        assert mine.loss == pytest.approx(theirs.loss, abs=1e-4)
        assert mine.acc == pytest.approx(theirs.acc, abs=1e-6)
        assert mine.metrics == pytest.approx(theirs.metrics)
    batch, _ = H.eval_batch(ck, n=summaries.EVAL_N)
    assert shipped[0].loss == pytest.approx(H.batch_loss(ck.model, batch)[0], abs=1e-4)
    assert shipped[-1].loss > shipped[0].loss  # 90 % of the weights gone costs something


def test_the_live_curve_hands_over_what_it_has_after_each_level():
    """QA finding: a Stop click on the Heads page's progress bar showed nothing, because the curve reported progress
    without its points so far."""
    seen = []
    C.sparsity_curve(registry.load("lm-tiny"), levels=(0.0, 0.5, 0.9), n=4,
                     progress=lambda k, n, partial: seen.append((k, n, [p.sparsity for p in partial])))
    assert seen == [(1, 3, [0.0]), (2, 3, [0.0, 0.5]), (3, 3, [0.0, 0.5, 0.9])]


def test_a_known_cut_gives_the_same_shares_as_sorting_again():
    model = registry.load("en-fr").model
    cut = C.cuts(model, [0.5])[0]
    rows, cols, with_cut = C.share_table(model, 0.5, cut)
    assert torch.equal(with_cut.nan_to_num(-1), C.share_table(model, 0.5)[2].nan_to_num(-1))
