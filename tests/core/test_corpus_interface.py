"""Issue 33 item 2: both generated corpora take what core.data.Corpus promises, by the same parameter names, so a
caller of ``corpus_for(task)`` never needs to know which grammar it holds."""
import inspect

import pytest

from core.data import Corpus, broad, corpus_for, translation

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
