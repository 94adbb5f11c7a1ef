"""The GPU benchmark's plain reference (bench/bench_gpu.py ``PlainLM``) computes what our decoder-only model
computes: with our weights copied in it gives the same logits, so a speed ratio between the two compares two
implementations of one function, not two models."""

import pytest
import torch

import bench_gpu

from core.model import Transformer


def _copy_ours_into_plain(ours: Transformer, plain: bench_gpu.PlainLM) -> None:
    sd = ours.state_dict()
    new = {"tokens.weight": sd["embed.tokens.weight"], "positions.weight": sd["embed.positions.weight"],
           "ln.weight": sd["decoder.norm.weight"], "lm_head.weight": sd["lm_head.weight"]}
    for i in range(len(plain.blocks)):
        o, p = f"decoder.layers.{i}.", f"blocks.{i}."
        new |= {p + "ln1.weight": sd[o + "attn_res.norm.weight"], p + "ln2.weight": sd[o + "ffn_res.norm.weight"],
                p + "qkv.weight": sd[o + "self_attn.qkv.weight"], p + "proj.weight": sd[o + "self_attn.out.weight"],
                p + "up.weight": sd[o + "ffn.w1.weight"], p + "down.weight": sd[o + "ffn.w2.weight"]}
    plain.load_state_dict(new, strict=True)


def test_plain_reference_is_our_model_written_plainly():
    cfg = bench_gpu.config("25M")
    cfg = type(cfg)(**{**cfg.__dict__, "vocab_size": 97, "d_model": 64, "n_heads": 4, "n_decoder_layers": 3,
                       "d_ff": 256, "max_len": 40})
    torch.manual_seed(0)
    ours, plain = Transformer(cfg).eval(), bench_gpu.PlainLM(cfg).eval()
    with torch.no_grad():  # away from the initial values, so a misplaced weight would show
        for t in ours.parameters():
            t.add_(0.1 * torch.randn_like(t))
    _copy_ours_into_plain(ours, plain)  # strict: the same tensors, none left over on either side
    assert sum(t.numel() for t in ours.parameters()) == sum(t.numel() for t in plain.parameters())
    assert ours.num_parameters() == cfg.estimated_parameters()
    ids = torch.randint(0, 97, (3, 40))
    with torch.no_grad():
        want, got = ours(ids).logits, plain(ids)
        assert torch.allclose(got, want, atol=1e-5), (got - want).abs().max()
        plain.blocks[1].ln2.weight.mul_(1.01)
        assert not torch.allclose(plain(ids), want, atol=1e-4)  # the comparison can tell a difference


def test_every_compile_scope_takes_the_same_step():
    """``bench_gpu.make_step`` compiles the forward, the forward and the loss, or the whole update
    (``--compile-scope``, the experiments for the 100 M step's non-matmul time): a faster scope must compute the same
    training step, or its tokens/s would compare two different computations. Here on CPU with the ``aot_eager``
    backend (the graphs dynamo captures and autograd traces; inductor's kernels are the GPU run's business).

    The weights are compared after one step, the losses over two (the second loss is the forward of the updated
    weights): the ``step`` scope's foreach AdamW and the others' fused one round the update's last bit differently on
    some CPUs (AVX2: 451 of 19,008 weights one float32 ulp apart after a step), and the second step's bf16 forward
    amplifies such a bit where a weight sits on a bf16 rounding boundary (there: 503 weights > 1e-6 apart after two
    steps, up to 9e-5), so comparing weights after two steps tested the CPU's rounding, not the scope."""
    import copy
    cfg = bench_gpu.config("25M")
    cfg = type(cfg)(**{**cfg.__dict__, "vocab_size": 61, "d_model": 32, "n_heads": 4, "n_decoder_layers": 2,
                       "d_ff": 64, "max_len": 16})
    torch.manual_seed(0)
    base = Transformer(cfg).train()
    ids = torch.randint(1, 61, (3, 17), generator=torch.Generator().manual_seed(1))
    x, y = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()

    def run(scope, targets=y):
        """The two steps' losses and the weights after the first."""
        model = copy.deepcopy(base)
        params = list(model.parameters())
        step = bench_gpu.make_step(lambda z: model(z).logits, params, x, targets, 61, scope=scope,
                                   backend="aot_eager")
        first = float(step().detach())
        after_one = torch.cat([p.detach().flatten() for p in params])
        return [first, float(step().detach())], after_one

    want_losses, want = run(None)
    start = torch.cat([p.detach().flatten() for p in base.parameters()])
    assert (want - start).abs().max() > 1e-4  # the step moved the weights
    assert want_losses[1] < want_losses[0] - 1e-3  # and the second loss read the moved weights
    for scope in bench_gpu.SCOPES:
        losses, got = run(scope)
        assert losses == pytest.approx(want_losses, abs=1e-5), scope
        assert (got - want).abs().max() < 1e-6, (scope, (got - want).abs().max())
    _, other = run("loss", targets=y.roll(1, dims=1))
    assert (other - want).abs().max() > 1e-5  # the comparison can tell another step
    with pytest.raises(ValueError, match="compile scope"):
        bench_gpu.make_step(base, list(base.parameters()), x, y, 61, scope="everything")
