"""The GPU recipe's run specs (scripts/gpu_recipe.py ``parse_run``) become the ``core.train`` flags they name: a
``+MODEL`` fine-tune overrides the from-scratch schedule (the trainer's last flag wins) and starts from that model."""

from core.train import parse_args
from scripts.gpu_recipe import DIMS, FINE_TUNE, OPTIM, parse_run, shape


def flags(spec: str) -> list[str]:
    name, task, share, dims, extra = parse_run(spec)
    return ["--out", f"/tmp/{name}", "--task", task, "--real-share", share, *shape(*dims), *OPTIM, *extra]


def test_a_fine_tune_spec_reads_its_release_and_starts_from_the_model_at_a_third_of_the_rate():
    name, task, share, dims, extra = parse_run("de-ft=en-de@2:0.4+en-de")
    assert (name, task, share, dims) == ("de-ft", "en-de", "0.4", DIMS)
    cfg = parse_args(flags("de-ft=en-de@2:0.4+en-de"))
    assert cfg.init_from == "en-de" and cfg.parallel_release == 2 and cfg.generated_release == 1
    assert cfg.lr == 3e-4 and cfg.warmup == 100  # FINE_TUNE after OPTIM's 1e-3 / 400
    assert FINE_TUNE[FINE_TUNE.index("--lr") + 1] == "0.0003"


def test_a_from_scratch_spec_keeps_the_recipe_schedule_and_its_own_shape():
    name, task, share, dims, extra = parse_run("fr-big=en-fr:0.6:384:4:1536")
    assert dims == (384, 4, 1536) and extra == []
    cfg = parse_args(flags("fr-big=en-fr:0.6:384:4:1536"))
    assert cfg.init_from is None and cfg.lr == 1e-3 and cfg.warmup == 400 and cfg.d_model == 384
