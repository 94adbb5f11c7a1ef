"""One intervention API (issue 33): masks are hook points (``{attention}.mask``), and ``core.hooks.ablate``,
``.patch`` and ``.mask`` build hook dicts for ``model.hooks(...)``. Each is checked against the path it replaces,
exactly: the forward-pre-hook masking that core/probes/masking.py used before (kept below as the reference), the
model's own ``ablate=``, uncached greedy decoding with ``model(..., ablate=)`` at every step, and the batched
patching of core/probes/patch.py. On tiny models built here and on the bundled small translator."""
from __future__ import annotations

from contextlib import contextmanager

import pytest
import torch

from core import attention as attention_module
from core.hooks import ablate, all_heads, hook_names, mask, merge, patch
from core.inference.decoding import Incremental, forbid, greedy_batch
from core.io import registry
from core.io.budget import max_positions
from core.io.tokenizer import BOS, EOS
from core.masks import additive, combine
from core.probes import masking
from core.probes import patch as patching

pytestmark = pytest.mark.usefixtures("one_thread")

from test_probes_pages import KINDS, SRC, TGT, tiny  # the probe tests' tiny models (this folder is on sys.path)

TRANSLATOR = next(n for n in ("en-fr-tiny", "en-fr") if n in registry.bundled())


def run(model, src=SRC, tgt=TGT, **kw):
    """One batch-1 (or batched, for tensors) forward pass of any kind."""
    s = src if torch.is_tensor(src) else torch.tensor([src])
    t = tgt if torch.is_tensor(tgt) else torch.tensor([tgt])
    with torch.no_grad():
        return model(s, t, **kw) if model.cfg.kind == "encoder-decoder" else model(s, **kw)


def first_stack(model) -> str:
    return "decoder" if model.cfg.kind == "decoder-only" else "encoder"


def block_key(t: int, j: int) -> torch.Tensor:
    """Bool ``[t, t]``: every query may look at every key but ``j`` (query ``j`` itself keeps it)."""
    allowed = torch.ones(t, t, dtype=torch.bool)
    allowed[:, j] = False
    allowed[j, j] = True
    return allowed


# ------------------------------------------------------------------ the path masking.py took before: the reference
@contextmanager
def pre_hook_masks(model, masks=None, uncausal=()):
    """How core/probes/masking.py changed masks before masks were hook points: forward pre-hooks on the attention
    modules that add an extra ``[T, T]`` mask to the ``mask`` argument (rows of the current queries in cached
    decoding) or set ``is_causal=False``."""
    masks, uncausal = dict(masks or {}), set(uncausal)

    def make(name):
        def hook(module, args, kwargs):
            kw = dict(kwargs)
            x = args[0] if args else kw["x"]
            if name in masks:
                cache = kw.get("cache")
                past = cache["k"].shape[2] if cache and "k" in cache else 0
                t_k = past + x.shape[1]
                extra = torch.zeros(x.shape[1], t_k)
                part = masks[name][past:past + x.shape[1], :t_k]
                extra[:part.shape[0], :part.shape[1]] = part
                kw["mask"] = combine(kw.get("mask"), extra)
            if name in uncausal:
                kw["is_causal"] = False
            return args, kw
        return hook

    handles = [masking.attention_module(model, n).register_forward_pre_hook(make(n), with_kwargs=True)
               for n in set(masks) | uncausal]
    try:
        yield model
    finally:
        for h in handles:
            h.remove()


# ------------------------------------------------------------------ masks are hook points
def test_every_attention_has_a_mask_hook_point_and_names_are_checked():
    model = tiny()
    names = hook_names(model)
    for attn in model.attention_names():
        assert f"{attn}.mask" in names
        assert names.index(f"{attn}.v") < names.index(f"{attn}.mask") < names.index(f"{attn}.heads")
    with pytest.raises(ValueError, match="no hook point"):
        with model.hooks(mask("encoder.0.self_atn", torch.zeros(2, 2))):
            pass
    with pytest.raises(ValueError, match="self-attention only"):
        mask("decoder.0.cross_attn", torch.zeros(2, 2))


@pytest.mark.parametrize("kind", KINDS)
def test_the_mask_hook_point_carries_the_mask_the_trace_keeps(kind):
    """Decoder self-attention: the causal mask; the rest: open (no padding here). Returning nothing changes nothing."""
    model = tiny(kind)
    seen = {}
    look = {f"{n}.mask": (lambda t, name: seen.__setitem__(name, t.clone())) for n in model.attention_names()}
    plain = run(model, trace=True)
    out = run(model, trace=True, hooks=look)
    torch.testing.assert_close(out.logits, plain.logits, rtol=0, atol=0)
    for attn in model.attention_names():
        m = seen[f"{attn}.mask"]
        t_q, t_k = plain.trace[f"{attn}.weights"].shape[-2:]
        assert m.shape == (1, 1, t_q, t_k)
        causal = attn.startswith("decoder.") and attn.endswith("self_attn")
        assert bool(torch.isinf(m).any()) == causal
        if causal:
            torch.testing.assert_close(m, plain.trace[f"{attn}.mask"].expand_as(m), rtol=0, atol=0)
        torch.testing.assert_close(out.trace[f"{attn}.mask"], m, rtol=0, atol=0)
        torch.testing.assert_close(out.trace[f"{attn}.weights"], plain.trace[f"{attn}.weights"], rtol=0, atol=0)


def test_without_a_mask_hook_no_mask_is_built(monkeypatch):
    """The fast path: a trace or hooks at other points build no ``[B, 1, Tq, Tk]`` mask."""
    model = tiny()

    def refuse(*a, **k):
        raise AssertionError("full_mask built without a mask hook")
    monkeypatch.setattr(attention_module, "full_mask", refuse)
    run(model)
    run(model, trace=True, ablate={"decoder.0.cross_attn": [1]})
    with model.hooks(ablate([("encoder.0.self_attn", 0)])):
        greedy_batch(model, torch.tensor([SRC]), max_new=3)
    with pytest.raises(AssertionError, match="full_mask"):
        run(model, hooks=mask("encoder.0.self_attn", lambda t, n: None))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("extra_cfg", [{}, {"pos_encoding": "alibi", "window": 3}, {"pos_encoding": "rope"}])
def test_a_mask_hook_blocking_one_key_equals_the_pre_hook_path(kind, extra_cfg):
    model = tiny(kind, **extra_cfg)
    name = f"{first_stack(model)}.0.self_attn"
    allowed = block_key(len(SRC), 1)
    with pre_hook_masks(model, {name: additive(allowed)}):
        before = run(model, trace=True)
    with model.hooks(mask(name, allowed)):
        now = run(model, trace=True)
    assert (before.logits - run(model).logits).abs().max() > 1e-4  # the block does something
    assert torch.equal(now.logits, before.logits)
    assert torch.equal(now.trace[f"{name}.weights"], before.trace[f"{name}.weights"])
    assert bool((now.trace[f"{name}.weights"][0][:, torch.arange(len(SRC)) != 1, 1] == 0).all())
    # masking.run_patched, the Masking page's path, is the same run
    assert torch.equal(masking.run_patched(model, SRC, TGT, masks={name: additive(allowed)}).logits, before.logits)


def test_a_mask_hook_on_a_padded_batch_equals_the_pre_hook_path():
    """Encoder self-attention with padding: the hook sees padding folded into a ``[B, 1, T, T]`` mask."""
    model = tiny()
    src = torch.tensor([SRC, SRC[:4] + [model.cfg.pad_id] * 2])
    tgt = torch.tensor([TGT, TGT])
    extra = {f"encoder.{i}.self_attn": additive(block_key(len(SRC), 2)) for i in range(2)}
    with pre_hook_masks(model, extra):
        before = run(model, src, tgt)
    seen = []
    fns = merge({"encoder.0.self_attn.mask": lambda t, _n: seen.append(t)}, *(mask(n, m) for n, m in extra.items()))
    with model.hooks(fns):
        now = run(model, src, tgt)
    assert torch.equal(now.logits, before.logits)
    assert seen[0].shape == (2, 1, len(SRC), len(SRC))  # what the model applies: padding in row 1 only
    assert bool(torch.isinf(seen[0][1, 0, :, 4:]).all()) and not bool(torch.isinf(seen[0][0]).any())


@pytest.mark.parametrize("window", [None, 2])
def test_a_mask_hook_follows_cached_decoding_like_the_pre_hook_path(window):
    model = tiny("decoder-only", window=window)
    ids = torch.tensor([SRC])
    extra = {f"decoder.{i}.self_attn": additive(block_key(len(SRC), 2)) for i in range(2)}

    def cached():
        inc = Incremental(model)
        return torch.stack([inc.feed(ids[:, i:i + 1])[0] for i in range(len(SRC))])
    with pre_hook_masks(model, extra):
        before = cached()
    with model.hooks(merge(*(mask(n, m) for n, m in extra.items()))):
        now = cached()
        full = model(ids).logits[0]
    assert torch.equal(now, before)
    torch.testing.assert_close(now, full, atol=1e-5, rtol=1e-5)
    assert (full - model(ids).logits[0]).abs().max() > 1e-4


@pytest.mark.parametrize("kind", ["encoder-decoder", "decoder-only"])
@pytest.mark.parametrize("window", [None, 2])
def test_uncausal_through_the_mask_hook_equals_the_pre_hook_path(kind, window):
    """masking.patched(uncausal=) (the cheat demo) drops the causal mask and keeps the window; with an extra
    mask on the same attention too."""
    model = tiny(kind, window=window)
    names = [n for n in model.attention_names() if n.startswith("decoder.") and n.endswith("self_attn")]
    t = len(SRC) if kind == "decoder-only" else len(TGT)
    extra = {names[0]: additive(block_key(t, 0))}
    with pre_hook_masks(model, uncausal=names):
        before = run(model)
    with pre_hook_masks(model, extra, uncausal=names):
        before_both = run(model)
    with masking.patched(model, uncausal=names):
        now = run(model)
    with masking.patched(model, masks=extra, uncausal=names + ["encoder.0.self_attn"] * (kind != "decoder-only")):
        now_both = run(model)
    assert (before.logits - run(model).logits).abs().max() > 1e-4
    assert torch.equal(now.logits, before.logits)
    assert torch.equal(now_both.logits, before_both.logits)


def test_a_cross_attention_mask_hides_a_source_token_like_padding_does():
    model = tiny()
    src, tgt = torch.tensor([SRC]), torch.tensor([TGT])
    hide = torch.zeros(len(SRC), dtype=torch.bool)
    hide[2] = True
    with torch.no_grad():
        memory, _ = model.encode(src)
        as_padding = model.project(model.decode(tgt, memory, hide[None]))
        cross = [n for n in model.attention_names() if "cross" in n]
        with model.hooks(mask(cross, additive(~hide)[None, None, None])):
            hooked = model(src, tgt).logits
    torch.testing.assert_close(hooked, as_padding, rtol=0, atol=1e-6)
    assert (hooked - model(src, tgt).logits).abs().max() > 1e-4


def test_a_mask_function_replaces_the_mask():
    """A function gets the mask and returns the one applied: all keys open makes the decoder non-causal."""
    model = tiny("decoder-only")
    with model.hooks(mask([f"decoder.{i}.self_attn" for i in range(2)], lambda m, _n: torch.zeros_like(m))):
        open_ = run(model, trace=True)
    with pre_hook_masks(model, uncausal=[f"decoder.{i}.self_attn" for i in range(2)]):
        before = run(model)
    assert torch.equal(open_.logits, before.logits)
    assert float(open_.trace["decoder.0.self_attn.weights"][0].triu(1).sum()) > 0


# ------------------------------------------------------------------ ablate
@pytest.mark.parametrize("kind", KINDS)
def test_ablate_equals_the_models_ablate_argument(kind):
    model = tiny(kind)
    names = model.attention_names()
    heads = [(names[0], 1), (names[0], 3), (names[-1], 0)]
    off = {names[0]: [1, 3], names[-1]: [0]}
    theirs = run(model, ablate=off, trace=True)
    assert (theirs.logits - run(model).logits).abs().max() > 1e-5
    assert torch.equal(run(model, hooks=ablate(heads)).logits, theirs.logits)
    assert torch.equal(run(model, hooks=ablate(off)).logits, theirs.logits)
    with model.hooks(ablate(heads)):
        mine = run(model, trace=True)
    assert torch.equal(mine.logits, theirs.logits)
    for name in names:
        assert torch.equal(mine.trace[f"{name}.heads"], theirs.trace[f"{name}.heads"])
    assert run(model, hooks=ablate([])).logits.equal(run(model).logits)


def test_ablate_refuses_heads_and_attentions_the_model_lacks():
    model = tiny()
    with pytest.raises(ValueError, match="head 4 does not exist"):
        run(model, hooks=ablate([("encoder.0.self_attn", 4)]))
    with pytest.raises(ValueError, match="no hook point"):
        run(model, hooks=ablate([("encoder.5.self_attn", 0)]))


def reference_greedy(model, src_ids, off, max_new):
    """Greedy decoding without a cache or hooks context: the whole prefix through ``model(..., ablate=off)`` at
    every step (what translate_ablated must return)."""
    src, ids = torch.tensor([src_ids]), [BOS]
    with torch.no_grad():
        for _ in range(max_new):
            nxt = int(forbid(model(src, torch.tensor([ids]), ablate=off or None).logits[0, -1].float()).argmax())
            if nxt == EOS or len(ids) >= max_positions(model):
                break
            ids.append(nxt)
    return ids[1:]


def test_greedy_under_ablate_hooks_is_translate_ablated_on_a_tiny_model():
    model = tiny(max_len=12)
    off = {n: [0, 2] for n in model.attention_names()}
    expected = reference_greedy(model, SRC, off, max_positions(model) - 1)
    assert expected != reference_greedy(model, SRC, {}, max_positions(model) - 1)
    assert masking.translate_ablated(model, SRC, off) == expected
    with model.hooks(ablate(off)):
        assert greedy_batch(model, torch.tensor([SRC]), max_new=max_positions(model) - 1)[0] == expected
    assert greedy_batch(model, torch.tensor([SRC]), max_new=max_positions(model) - 1, ablate=off)[0] == expected


# ------------------------------------------------------------------ patch
@pytest.mark.parametrize("kind", KINDS)
def test_patch_writes_another_runs_values(kind):
    model = tiny(kind)
    other = [s % 22 + 1 for s in SRC]
    base, source = run(model, trace=True), run(model, other, trace=True)
    heads = all_heads(model)
    # patching from its own run changes nothing; the last layer's stream from the other run gives its logits
    assert torch.equal(run(model, hooks=patch(base.trace, heads=heads)).logits, base.logits)
    last = f"{'decoder' if model.decoder is not None else 'encoder'}.1.resid_post"
    torch.testing.assert_close(run(model, hooks=patch(source.trace, points=[last])).logits, source.logits,
                               rtol=0, atol=1e-6)
    # at some positions only: those positions are the other run's, the rest this run's
    part = run(model, hooks=patch(source.trace, points=[last], positions=[1, 3])).logits[0]
    t = part.shape[0]
    keep = [i for i in range(t) if i not in (1, 3)]
    torch.testing.assert_close(part[[1, 3]], source.logits[0, [1, 3]], rtol=0, atol=1e-6)
    torch.testing.assert_close(part[keep], base.logits[0, keep], rtol=0, atol=1e-6)
    # one head by hand: the hook point sees that head from the other run
    name = model.attention_names()[0]
    seen = {}
    run(model, hooks=merge(patch(source.trace, heads=[(name, 2)]),
                           {f"{name}.heads": lambda t_, _n: seen.setdefault("h", t_.clone())}))
    assert torch.equal(seen["h"][:, 2], source.trace[f"{name}.heads"][:, 2])
    assert torch.equal(seen["h"][:, :2], base.trace[f"{name}.heads"][:, :2])


# ------------------------------------------------------------------ on the bundled translator
@pytest.fixture(scope="module")
def ck():
    return registry.load(TRANSLATOR)


@pytest.fixture(scope="module")
def pair(ck):
    return patching.probe_set(ck)[0]


@pytest.fixture(scope="module")
def sentence(ck, pair):
    return masking.source_ids(ck.tokenizer, ck.model, pair[0].src)


def test_bundled_mask_hook_equals_the_pre_hook_path(ck, pair, sentence):
    model = ck.model
    t = len(sentence)
    tgt = [BOS] + ck.tokenizer.encode(pair[0].tgt)
    for name in ("encoder.0.self_attn", f"decoder.{len(model.decoder.layers) - 1}.self_attn"):
        allowed = block_key(t if name.startswith("encoder") else len(tgt), 1)
        with pre_hook_masks(model, {name: additive(allowed)}):
            before = run(model, sentence, tgt)
        now = run(model, sentence, tgt, hooks=mask(name, allowed))
        assert (before.logits - run(model, sentence, tgt).logits).abs().max() > 1e-4
        assert torch.equal(now.logits, before.logits), name


def test_bundled_ablate_and_greedy_decoding_under_it(ck, pair, sentence):
    """The last cross-attention's heads off: "la rue … fatigué" becomes "la forêt … effrayé" (en-fr-tiny)."""
    model = ck.model
    tgt = [BOS] + ck.tokenizer.encode(pair[0].tgt)
    last = f"decoder.{len(model.decoder.layers) - 1}.cross_attn"
    off = {last: list(range(model.cfg.n_heads))}
    assert torch.equal(run(model, sentence, tgt, hooks=ablate(off)).logits,
                       run(model, sentence, tgt, ablate=off).logits)
    expected = reference_greedy(model, sentence, off, max_positions(model) - 1)
    assert expected != reference_greedy(model, sentence, {}, max_positions(model) - 1)
    with model.hooks(ablate(off)):
        mine = greedy_batch(model, torch.tensor([sentence]), max_new=max_positions(model) - 1)[0]
    assert mine == expected
    assert masking.translate_ablated(model, sentence, off) == expected


def test_bundled_patch_equals_core_probes_patch(ck, pair):
    """One head, and one stream position, from B into A: the LD patch.patched_ld computes (batched, aligned) is
    the LD of one plain run under ``hooks.patch``."""
    model = ck.model
    clean = patching.clean(ck, *pair)
    s = clean.setup
    q = len(s.dec_a) - 1

    def ld(hooks):
        logits = run(model, s.src_a, s.dec_a, hooks=hooks).logits
        return float(logits[0, q, s.tok_a] - logits[0, q, s.tok_b])
    moved = []
    for name in (model.attention_names()[0], model.attention_names()[-1]):
        head = (name, 1)
        theirs = float(patching.patched_ld(model, s, True, clean.b, heads=patching._selection(model, [[head]]))[0])
        align = s.enc_align if name.startswith("encoder.") else s.dec_align
        mine = ld(patch(clean.b, heads=[head], positions=dict(zip(*align))))
        assert mine == pytest.approx(theirs, abs=1e-5), name
        moved.append(abs(mine - clean.ld_a))
    assert max(moved) > 1e-4
    point = "decoder.0.resid_post"
    theirs = float(patching.patched_ld(model, s, True, clean.b, stream=[(point, q, len(s.dec_b) - 1)])[0])
    mine = ld(patch(clean.b, points=[point], positions={q: len(s.dec_b) - 1}))
    assert mine == pytest.approx(theirs, abs=1e-5)
    assert abs(mine - clean.ld_a) > 1e-4
