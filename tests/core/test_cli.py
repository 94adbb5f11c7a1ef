"""Issue 33: one command-line layer (core.io.cli). Every ``python -m core.…`` command refuses a bad flag the same way —
one ``error:`` line on stderr naming ``--help``, exit 2, nothing on stdout — and a boolean config field can be
turned off as well as on."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from core.io import cli

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ["core.train", "core.find_heads", "core.evaluate", "core.inspect", "core.probes.patch_board",
            "core.probes.patch", "core.variants.xl", "core.training.stability", "core.variants.recurrence",
            "core.variants.vision"]


@pytest.mark.parametrize("module", COMMANDS)
def test_a_bad_flag_is_one_error_line_and_exit_2(module):
    out = subprocess.run([sys.executable, "-m", module, "--no-such-flag"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2, (module, out.returncode, out.stderr[-2000:])
    assert out.stdout == "" and len(lines) == 1, (module, out.stdout, lines)
    assert lines[0].startswith("error: ") and lines[0].endswith(f"(see python -m {module} --help)"), lines


def test_a_refused_request_after_parsing_is_the_same_line_not_json_on_stdout():
    """core.probes.patch printed {"error": …} on stdout with exit 2; it now refuses like the others."""
    out = subprocess.run([sys.executable, "-m", "core.probes.patch", "--model", "no-such-model", "--a", "x", "--b", "y"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == "", (out.returncode, out.stdout)
    assert out.stderr.startswith("error: ") and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_a_bool_field_that_defaults_to_true_can_be_turned_off():
    """add_fields made every bool a store_true switch, so a field defaulting to True could never be set False."""
    import dataclasses

    @dataclasses.dataclass
    class Run:
        use_memory: bool = True
        quiet: bool = False

    p = cli.add_fields(cli.Parser(prog="t"), Run)
    assert vars(p.parse_args([])) == {"use_memory": True, "quiet": False}
    assert vars(p.parse_args(["--no-use-memory", "--quiet"])) == {"use_memory": False, "quiet": True}


def test_the_quoted_command_gives_the_same_config_back():
    """Cards and results quote a run's flags (cli.as_flags); parsed again they give the same config — booleans
    included (``--x True`` was quoted before, which argparse refuses)."""
    from core.training.trainer import TrainConfig
    cfg = TrainConfig(task="induction", attention_only=True, steps=7, kv_heads=2, lr=0.5, quiet=True)
    p = cli.add_fields(cli.Parser(prog="t"), TrainConfig, skip=("history",))
    flags = cli.as_flags(dataclasses.replace(cfg, history=None)).split()
    assert TrainConfig(**vars(p.parse_args(flags))) == dataclasses.replace(cfg, history=[])


def test_unscaled_embeddings_reach_the_model_and_the_quoted_command():
    """``--unscaled-embeddings`` (GPT's convention: no √d_model on token embeddings, std 0.02) is what the model is
    built with and what the card's command line repeats; without it the paper's scaling stays."""
    import torch
    from core.model import Transformer
    from core.train import parse_args
    from core.training.trainer import command_line, model_config
    for flags, scaled in (([], True), (["--unscaled-embeddings"], False)):
        cfg = parse_args(["--task", "lm-tiny", "--d-model", "64", "--heads", "2", "--d-ff", "64", *flags])
        mcfg = model_config(cfg, kind="decoder-only", vocab_size=300)
        assert mcfg.scale_embeddings is scaled
        torch.manual_seed(0)
        embed = Transformer(mcfg).embed
        assert embed.scale == (8.0 if scaled else 1.0)
        assert abs(float(embed.tokens.weight.std()) - (64 ** -0.5 if scaled else 0.02)) < 0.005
        assert ("--unscaled-embeddings" in command_line(cfg)) is not scaled
