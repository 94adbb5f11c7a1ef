"""One hook mechanism (core.hooks): every traced tensor is a hook point; the Trace, ablation and patching
go through it. Identity hooks change nothing, replacing every head of every layer with another run's
reproduces that run, hooks are per thread and checked by name."""
from __future__ import annotations

import threading

import pytest
import torch

from core import ModelConfig, Transformer
from reference_decoding import greedy_uncached
from core.hooks import Hooks, all_heads, as_ablation, hook_names

KINDS = ("encoder-decoder", "decoder-only", "encoder-only")


def tiny(kind="encoder-decoder", **kw) -> Transformer:
    torch.manual_seed(0)
    cfg = ModelConfig(kind=kind, vocab_size=23, d_model=16, n_heads=4, n_encoder_layers=2, n_decoder_layers=2,
                      d_ff=32, max_len=32, dropout=0.0, **kw)
    return Transformer(cfg).eval()


def ids(t, seed):
    return torch.randint(1, 23, (1, t), generator=torch.Generator().manual_seed(seed))


def run(model, src, tgt, **kw):
    if model.cfg.kind == "encoder-decoder":
        return model(src, tgt, **kw)
    return model(src, **kw)


@pytest.mark.parametrize("kind", KINDS)
def test_every_traced_tensor_is_a_hook_point_and_reads_what_the_trace_keeps(kind):
    model = tiny(kind)
    src, tgt = ids(6, 1), ids(5, 2)
    seen = {}
    hooks = {n: (lambda t, name: seen.__setitem__(name, t.clone())) for n in hook_names(model)}
    with torch.no_grad():
        out = run(model, src, tgt, trace=True, hooks=hooks)
    assert set(seen) == set(hook_names(model))
    for name, t in seen.items():
        torch.testing.assert_close(out.trace[name], t, rtol=0, atol=0, msg=name)
    # and the trace holds nothing under a name that is not a hook point but the attention maps and bias
    extra = {n for n in out.trace.keys() if n not in set(hook_names(model))}
    assert {n.rsplit(".", 1)[1] for n in extra} <= {"scores", "weights", "mask", "bias"}


@pytest.mark.parametrize("kind", KINDS)
def test_patching_a_head_with_its_own_activation_changes_nothing(kind):
    model = tiny(kind, pos_encoding="rope")
    assert not any(n.endswith("positions") for n in hook_names(model))
    src, tgt = ids(7, 3), ids(6, 4)
    with torch.no_grad():
        base = run(model, src, tgt, trace=True)
        for name in model.attention_names():
            own = base.trace[f"{name}.heads"]

            def put_back(t, _n, own=own):
                out = t.clone()
                out[:, 2] = own[:, 2]
                return out
            patched = run(model, src, tgt, hooks={f"{name}.heads": put_back})
            torch.testing.assert_close(patched.logits, base.logits, rtol=0, atol=1e-6, msg=name)


def test_patching_every_head_of_every_layer_from_b_reproduces_b():
    """Decoder prefixes equal (as in a minimal pair up to the pronoun), sources differ in one token:
    with every head's output taken from B, A's run is B's run at every position."""
    model = tiny()
    src_a = ids(7, 5)
    src_b = src_a.clone()
    src_b[0, 3] = (src_a[0, 3] % 22) + 1
    tgt = ids(6, 6)
    with torch.no_grad():
        a = model(src_a, tgt, trace=True)
        b = model(src_b, tgt, trace=True)
        assert (a.logits - b.logits).abs().max() > 1e-3
        hooks = {f"{n}.heads": (lambda t, _n, src=b.trace[f"{n}.heads"]: src.clone()) for n in model.attention_names()}
        patched = model(src_a, tgt, hooks=hooks)
    torch.testing.assert_close(patched.logits, b.logits, rtol=0, atol=1e-5)


def test_ablate_is_a_hook_and_hooks_compose_after_it():
    model = tiny()
    src, tgt = ids(6, 7), ids(5, 8)
    name = "decoder.1.cross_attn"
    with torch.no_grad():
        off = model(src, tgt, ablate={name: [1]}, trace=True)
        by_hook = model(src, tgt, hooks={f"{name}.heads": lambda t, _n: t * torch.tensor([1., 0, 1, 1])[:, None, None]})
        torch.testing.assert_close(by_hook.logits, off.logits, rtol=0, atol=0)
        assert (off.trace[f"{name}.heads"][:, 1] == 0).all()
        seen = []
        model(src, tgt, ablate={name: [1]}, hooks={f"{name}.heads": lambda t, _n: seen.append(t.clone())})
        assert (seen[0][:, 1] == 0).all()  # the explicit hook sees the ablated heads


def test_context_manager_reaches_cached_decoding_and_only_this_thread():
    model = tiny()
    src = ids(6, 9)
    calls = []
    from core.inference.decoding import greedy_batch
    with torch.no_grad():
        plain = greedy_batch(model, src, max_new=4)
        with model.hooks({"decoder.0.cross_attn.heads": lambda t, _n: calls.append(threading.get_ident()) or t * 0}):
            zeroed = greedy_batch(model, src, max_new=4)
            other = []
            th = threading.Thread(target=lambda: other.append(greedy_batch(model, src, max_new=4)))
            th.start()
            th.join()
        after = greedy_batch(model, src, max_new=4)
    assert calls and set(calls) == {threading.get_ident()}  # the other thread's run called nothing
    assert other[0] == plain and after == plain
    # the cached decoder under the context manager = a full forward per token with the same hook
    zero = {"decoder.0.cross_attn.heads": lambda t, _n: t * 0}
    assert zeroed[0] == greedy_uncached(model, src[0].tolist(), len(zeroed[0]), hooks=zero)
    assert plain[0] == greedy_uncached(model, src[0].tolist(), len(plain[0]))


def test_unknown_hook_names_and_bad_shapes_are_refused():
    model = tiny()
    src, tgt = ids(4, 10), ids(4, 11)
    with pytest.raises(ValueError, match="no hook point"):
        model(src, tgt, hooks={"decoder.0.cross_attn.head": lambda t, n: None})
    with pytest.raises(ValueError, match="no hook point"):
        with model.hooks({"encoder.7.resid_post": lambda t, n: None}):
            pass
    with pytest.raises(ValueError, match="returned shape"):
        model(src, tgt, hooks={"encoder.0.resid_post": lambda t, n: t[:, :1]})


def test_residual_hook_changes_the_rest_of_the_run():
    model = tiny()
    src, tgt = ids(6, 12), ids(5, 13)
    with torch.no_grad():
        base = model(src, tgt)
        out = model(src, tgt, hooks={"decoder.1.resid_post": lambda t, _n: t * 0})
    # post-LN model, no final norm: zero stream -> logits are the output bias (none here: the tied head has no bias)
    assert torch.allclose(out.logits, torch.zeros_like(out.logits)) and not torch.allclose(base.logits, out.logits)


def test_no_hooks_no_trace_calls_nothing():
    assert not Hooks().live and not Hooks.of(None).live


def test_one_head_type_and_the_ablation_dict_every_pass_takes():
    """Issue 33: heads are ``(attention name, head)`` everywhere; ``as_ablation`` is the one place they become the
    ``ablate=`` dict (it was built in four places), and that dict switches exactly those heads off."""
    model = tiny()
    heads = all_heads(model)
    assert len(heads) == len(model.attention_names()) * model.cfg.n_heads and len(set(heads)) == len(heads)
    assert as_ablation([("decoder.0.cross_attn", 1), ("encoder.0.self_attn", 0), ("decoder.0.cross_attn", 0)]) == {
        "decoder.0.cross_attn": [1, 0], "encoder.0.self_attn": [0]}
    src, tgt = torch.tensor([[5, 6, 7, 3]]), torch.tensor([[2, 8, 9]])
    off = as_ablation([("decoder.0.cross_attn", 1)])
    seen = {}
    model(src, tgt, ablate=off, hooks={"decoder.0.cross_attn.heads": lambda t, name: seen.setdefault("h", t.clone())})
    assert float(seen["h"][:, 1].abs().max()) == 0 and float(seen["h"][:, 0].abs().max()) > 0
