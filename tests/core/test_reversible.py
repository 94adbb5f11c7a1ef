"""Reversible residual blocks (RevNet / Reformer): the inverse gives the inputs back, the backward that rebuilds
activations by inversion gives ordinary autograd's gradients, and what it keeps for the backward does not grow with
depth — counted in bytes of saved tensors, not timed."""
import pytest
import torch

from core.io import registry
from core.variants import reversible as R

pytestmark = pytest.mark.usefixtures("one_thread")

SETTINGS = [dict(causal=False, pos_encoding="sinusoidal"), dict(causal=True, pos_encoding="rope")]


def stack_and_input(depth=4, dtype=torch.float32, seed=0, **settings):
    """A random 2-layer stack cycled to ``depth`` blocks (parameters shared between blocks 0, 2 and 1, 3) and a
    random ``[2, 7, 32]`` input."""
    stack = R.random_stack(depth, d_model=32, n_heads=4, n_layers=2, seed=seed, dtype=dtype, **settings)
    x = torch.randn(2, 7, 32, generator=torch.Generator().manual_seed(seed + 1), dtype=dtype)
    return stack, x


def gradients(stack, x, reversible):
    """d/d(input, every parameter) of a fixed random projection of both output streams."""
    gen = torch.Generator().manual_seed(7)
    r1, r2 = (torch.randn(x.shape, generator=gen, dtype=x.dtype) for _ in range(2))
    xi = x.clone().requires_grad_(True)
    params = list(stack.parameters())
    y1, y2 = stack(xi, reversible=reversible)
    assert (type(y1.grad_fn).__name__ == "_ReversibleBackward") == reversible
    return torch.autograd.grad((y1 * r1).sum() + (y2 * r2).sum(), (xi, *params), allow_unused=True)


def assert_same_gradients(stack, x, tol):
    """The reversible backward's gradients equal ordinary autograd's, input and every parameter one by one."""
    names = ["input"] + [n for n, _ in stack.named_parameters()]
    plain, rev = gradients(stack, x, False), gradients(stack, x, True)
    used = 0
    for name, a, b in zip(names, plain, rev):
        assert (a is None) == (b is None), name
        if a is not None:
            used += 1
            assert (a - b).abs().max() <= tol, (name, float((a - b).abs().max()))
    assert used > 10  # the attention, FFN and LayerNorm weights of both layers all received gradients


# ------------------------------------------------------------------ (a) the inverse
@pytest.mark.parametrize("settings", SETTINGS, ids=["bidirectional", "causal-rope"])
@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-10), (torch.float32, 1e-5)])
def test_the_inverse_gives_back_the_inputs(settings, dtype, tol):
    stack, x = stack_and_input(6, dtype, **settings)
    with torch.no_grad():
        y1, y2 = stack(x)
        assert (y1 - x).abs().max() > 0.1 and (y2 - x).abs().max() > 0.1  # the blocks really change x
        x1, x2 = stack.inverse(y1, y2)
        assert (x1 - x).abs().max() < tol and (x2 - x).abs().max() < tol
        # two different streams too, one block at a time
        a, b = x, torch.randn_like(x)
        block = stack.blocks[0]
        back = block.inverse(*block(a, b))
        assert (back[0] - a).abs().max() < tol and (back[1] - b).abs().max() < tol
    assert R.reconstruction_error(stack, x) < tol


# ------------------------------------------------------------------ (b) the gradients
@pytest.mark.parametrize("settings", SETTINGS, ids=["bidirectional", "causal-rope"])
@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 1e-5)])
def test_the_reversible_backward_gives_ordinary_autograds_gradients(settings, dtype, tol):
    stack, x = stack_and_input(4, dtype, **settings)
    assert_same_gradients(stack, x, tol)
    gap = R.gradient_gap(stack, x)
    assert gap["input"] <= tol and gap["parameters"] <= tol and gap["scale"] > 1
    assert all(p.grad is None for p in stack.parameters())  # autograd.grad: no .grad left on the weights


def test_training_through_the_reversible_stack_moves_the_weights_as_ordinary_training_does():
    """loss.backward() fills .grad the same way: two copies of one stack, one step of SGD each."""
    plain, x = stack_and_input(3, torch.float64)
    rev, _ = stack_and_input(3, torch.float64)
    for stack, reversible in ((plain, False), (rev, True)):
        y1, y2 = stack(x.clone().requires_grad_(True), reversible=reversible)
        ((y1 - 1) ** 2 + y2 ** 2).mean().backward()
        with torch.no_grad():
            for p in stack.parameters():
                p -= 0.1 * p.grad
    for a, b in zip(plain.parameters(), rev.parameters()):
        assert torch.allclose(a, b, atol=1e-12, rtol=0)


# ------------------------------------------------------------------ (c) the memory
def test_the_counter_counts_saved_activations_once_and_leaves_weights_out():
    w = torch.randn(8, 8, requires_grad=True)
    x = torch.randn(4, 8, requires_grad=True)
    with R.SavedActivations([w]) as counted:
        h = x @ w  # saves x (for w's gradient) and w (left out)
        y = torch.exp(h)  # saves its output
        z = torch.exp(h)  # h itself is not saved by exp; a second output
    assert counted.bytes == x.nbytes + y.nbytes + z.nbytes
    del y, z
    with R.SavedActivations() as counted:
        x.sin() * x.cos()  # sin and cos both save x: one storage
    assert counted.bytes == x.nbytes + 2 * x.nbytes  # x once, plus the two factors the product saves


@pytest.mark.parametrize("settings", SETTINGS, ids=["bidirectional", "causal-rope"])
def test_ordinary_autograd_keeps_every_blocks_activations_and_the_reversible_stack_only_its_output(settings):
    stack, x = stack_and_input(4, **settings)
    ordinary = [R.saved_bytes(R.prefix(stack, d), x, reversible=False) for d in (1, 2, 3, 4)]
    reversible = [R.saved_bytes(R.prefix(stack, d), x, reversible=True) for d in (1, 2, 3, 4)]
    assert ordinary == [d * ordinary[0] for d in (1, 2, 3, 4)]  # exactly linear in depth
    assert reversible == [2 * x.nbytes] * 4  # y1 and y2, whatever the depth
    assert ordinary[0] > 5 * reversible[0]
    # in the backward it holds one block's activations at a time: as much as one ordinary block
    assert R.rebuild_bytes(stack, x) == ordinary[0]
    report = R.measure(stack, x)
    assert (report.depths, report.ordinary, report.reversible) == ([1, 2, 3, 4], ordinary, reversible)
    assert report.rebuild == [ordinary[0]] * 4 and max(report.error) < 1e-5


# ------------------------------------------------------------------ (d) a wrong inverse is caught
class SubtractedInTheWrongOrder(R.ReversibleBlock):
    """Undoes F before G: x1 = y1 − F(y2), then x2 = y2 − G(x1). Right only if F and G were zero."""

    def inverse(self, y1, y2):
        x1 = y1 - self.f(y2)
        return x1, y2 - self.g(x1)


class SignFlipped(R.ReversibleBlock):
    """x1 = F(x2) − y1: the last subtraction the wrong way round."""

    def inverse(self, y1, y2):
        x2 = y2 - self.g(y1)
        return self.f(x2) - y1, x2


@pytest.mark.parametrize("broken", [SubtractedInTheWrongOrder, SignFlipped])
@pytest.mark.parametrize("dtype,tol", [(torch.float64, 1e-12), (torch.float32, 1e-5)])
def test_a_wrong_inverse_makes_the_gradient_check_fail(broken, dtype, tol):
    stack, x = stack_and_input(3, dtype)
    assert_same_gradients(stack, x, tol)  # the right inverse passes ...
    wrong = R.ReversibleStack([broken(b.f, b.g) for b in stack.blocks], stack.frozen)
    with pytest.raises(AssertionError):
        assert_same_gradients(wrong, x, tol)  # ... the same blocks with a wrong one do not
    assert R.reconstruction_error(wrong, x) > 1e-2
    assert R.gradient_gap(wrong, x)["input"] > 1e-3


# ------------------------------------------------------------------ a shipped model's layers
def test_blocks_from_the_shipped_lm_are_causal_invert_and_give_its_gradients():
    ck = registry.load("lm")
    model = ck.model
    x = torch.randn(1, 9, model.cfg.d_model, generator=torch.Generator().manual_seed(0))
    stack = R.stack_from_model(model, "decoder", 2)
    assert stack.blocks[0].f.attn is model.decoder.layers[0].self_attn  # the model's own weights, not copies
    assert stack.blocks[1].g.ffn is model.decoder.layers[1].ffn
    with torch.no_grad():
        later = x.clone()
        later[:, -1] += 1.0
        a, b = stack(x), stack(later)
        assert torch.equal(a[0][:, :-1], b[0][:, :-1]) and torch.equal(a[1][:, :-1], b[1][:, :-1])  # causal F
        assert not torch.equal(a[0][:, -1], b[0][:, -1])
    report = R.model_report(model, x, "decoder", depths=(1, 2, 4))
    assert report.source == "model" and report.layers == len(model.decoder.layers)
    assert report.ordinary == [report.ordinary[0] * d for d in (1, 2, 4)]
    assert report.reversible == [2 * x.nbytes] * 3
    assert max(report.error) < 1e-5 * report.output_scale and report.output_scale > report.scale
    assert report.gradients["input"] <= 1e-5 * report.gradients["scale"]
    assert report.gradients["parameters"] <= 1e-5 * report.gradients["scale"]
    assert all(p.grad is None for p in model.parameters())


def test_a_model_that_is_not_ours_gets_a_fresh_stack_of_its_width():
    x = torch.randn(1, 5, 24)
    report = R.model_report(object(), x, "encoder", depths=(1, 2))
    assert report.source == "random" and report.shape == (1, 5, 24)
    assert report.ordinary[1] == 2 * report.ordinary[0] and report.reversible == [2 * x.nbytes] * 2
    with pytest.raises(TypeError):
        R.stack_from_model(object(), "encoder", 2)
