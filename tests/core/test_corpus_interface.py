"""Issue 33 item 2: both generated corpora take what core.data.Corpus promises, by the same parameter names, so a
caller of ``corpus_for(task)`` never needs to know which grammar it holds; the human translations take what
core.data.ParallelText promises, and every caller outside core/data reaches them through ``parallel_for(task)``."""
import ast
import inspect
from pathlib import Path

import pytest

from core.data import Corpus, ParallelText, broad, corpus_for, parallel, parallel_for, translation

ROOT = Path(__file__).resolve().parents[2]

SEED = "The animal didn't cross the street because it was too tired."
PROMISED = {name: inspect.signature(getattr(Corpus, name)) for name in
            ("generate", "pair_for", "translate", "pronoun_of", "probe_pairs")}


@pytest.mark.parametrize("task, module", [("en-fr", broad), ("en-de", broad), ("en-fr-tiny", translation),
                                          ("en-de-tiny", translation)])
def test_corpus_for_gives_a_module_with_every_function_of_the_protocol(task, module):
    corpus = corpus_for(task)
    assert corpus is module and isinstance(corpus, Corpus)
    for name, promised in PROMISED.items():
        have = inspect.signature(getattr(corpus, name))
        for param in list(promised.parameters.values())[1:]:  # past self
            assert param.name in have.parameters, f"{module.__name__}.{name} lacks {param.name}"
            if param.default is not inspect.Parameter.empty:  # optional in the protocol: optional here too
                assert have.parameters[param.name].default is not inspect.Parameter.empty, (module.__name__, name)
        required = [p.name for p in have.parameters.values() if p.default is inspect.Parameter.empty]
        assert set(required) <= set(promised.parameters), f"{module.__name__}.{name} requires {required}"


@pytest.mark.parametrize("module", [broad, translation])
def test_the_protocol_calls_give_one_consistent_pair(module):
    """The seed sentence through pair_for, translate and pronoun_of agrees, in both grammars and both languages
    (generate and probe_pairs build whole splits: their own tests read them)."""
    for lang, pronoun in (("fr", "il"), ("de", "es")):
        pair = module.pair_for(SEED, lang)
        assert pair.tgt == module.translate(SEED, lang)
        assert module.pronoun_of(pair.tgt, lang) == pair.tgt_pronoun == pronoun, pair


def test_parallel_for_gives_exactly_the_human_translations_of_a_broad_task():
    """parallel_for is a door, not a copy: the same pairs, description and digests as core.data.parallel's own."""
    promised = {name: inspect.signature(getattr(ParallelText, name)) for name in ("pairs", "describe", "fingerprint")}
    for task, lang in (("en-fr", "fr"), ("en-de", "de")):
        text = parallel_for(task)
        assert isinstance(text, ParallelText) and text.lang == lang
        for name, sig in promised.items():
            have = inspect.signature(getattr(text, name))
            assert list(sig.parameters)[1:] == list(have.parameters)[:len(sig.parameters) - 1], (name, have)
        for split in parallel.SPLITS:
            assert text.pairs(split) == parallel.pairs(lang, split), (task, split)
        assert text.fingerprint() == parallel.fingerprint(lang) and text.describe() == parallel.describe(lang)
        assert text.describe()["filter_order"] == [name for name, _ in parallel.FILTERS] + ["duplicates"]


@pytest.mark.parametrize("task, why", [("en-fr-tiny", "never read human translations"),
                                       ("en-de-tiny", "never read human translations"),
                                       ("lm", "has no human translations"), ("xx-fr", "has no human translations")])
def test_a_task_without_human_translations_is_refused(task, why):
    with pytest.raises(ValueError, match=why):
        parallel_for(task)


def test_prose_for_gives_each_lm_task_its_frozen_prose_and_refuses_the_rest():
    from core.data import english, english_large, prose_for
    from core.training.tasks import LMTask
    assert prose_for("lm") is english and prose_for("lm-large") is english_large
    for task in ("lm-tiny", "en-fr", "mlm"):
        with pytest.raises(ValueError, match="reads no frozen English prose"):
            prose_for(task)
    # the task reads through it, and tokenizes its 46 MB of training text only when asked
    from core.io import registry
    task = LMTask(tokenizer=registry.load("lm").tokenizer, name="lm-large")
    assert task.corpus() is english_large and "train_stream" not in vars(task) and "valid_stream" not in vars(task)
    assert len(task.test_stream()) > 100_000 and "train_stream" not in vars(task)


def parallel_imports(source: str, module: str) -> list[str]:
    """Every import of :mod:`core.data.parallel` (absolute, relative or as a name of core.data) in ``source``, the
    file being the dotted ``module``."""
    package = module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name == "core.data.parallel"]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            if mod == "core.data.parallel":
                found.append(f"from {mod} import ...")
            elif mod == "core.data":
                found += [f"from core.data import {a.name}" for a in node.names if a.name == "parallel"]
    return found


@pytest.mark.parametrize("source, module, expected", [
    ("from core.data import parallel", "scripts.x", ["from core.data import parallel"]),
    ("from ..data import corpus_for, parallel", "core.training.tasks", ["from core.data import parallel"]),
    ("def f():\n    from .data.parallel import pairs", "core.evaluate", ["from core.data.parallel import ..."]),
    ("import core.data.parallel", "bench.x", ["core.data.parallel"]),
    ("from core.data import parallel_for", "scripts.x", []),
    ("from . import parallel", "core.probes.x", []),  # core.probes.parallel: not the corpus
])
def test_the_import_check_finds_every_spelling(source, module, expected):
    assert parallel_imports(source, module) == expected


def test_nothing_outside_core_data_imports_the_parallel_corpus():
    """Every caller asks parallel_for(task); only core/data (and the corpus's own tests) import the module."""
    bad = []
    for top in ("core", "app", "pages", "scripts", "bench"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT)
            if rel.parts[:2] == ("core", "data"):
                continue
            bad += [f"{rel}: {imp}" for imp in parallel_imports(path.read_text(encoding="utf-8"),
                                                                ".".join(rel.with_suffix("").parts))]
    assert not bad, bad


def test_releases_are_those_the_corpora_define_and_the_trainer_accepts_exactly_them():
    from core.data import broad, parallel, releases
    from core.training.trainer import INT_FLAGS
    assert releases() == tuple(sorted(parallel.RELEASES)) and releases("generated") == tuple(broad.GENERATED_RELEASES)
    assert INT_FLAGS["parallel_release"] == (releases()[0], releases()[-1])
    assert INT_FLAGS["generated_release"] == (releases("generated")[0], releases("generated")[-1])
    with pytest.raises(ValueError, match="unknown kind of text"):
        releases("lexicon")
