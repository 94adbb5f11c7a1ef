"""Counting and nesting (core.variants.hierarchy): the two languages' labels against hand examples and an independent
rule, the data, the parser's messages, the shipped models reproducing their recorded accuracy and the command line
(the page's section: tests/app/test_hierarchy_section.py)."""
from __future__ import annotations

import functools
import itertools
import operator
import random
from pathlib import Path

import pytest

from core.io import jsonio
from core.variants import hierarchy

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "assets" / "hierarchy"
shipped = pytest.mark.skipif(not (SHIPPED / hierarchy.RESULTS).exists(), reason="no models in assets/hierarchy")
pytestmark = pytest.mark.usefixtures("one_thread")


def balanced_by_erasing(text: str) -> bool:
    """An independent rule: erase "()" until none is left; balanced exactly when nothing remains."""
    while "()" in text:
        text = text.replace("()", "")
    return text == ""


def test_the_labels_are_right_on_hand_examples_and_on_every_short_string():
    assert [hierarchy.is_even(b) for b in ("", "0", "1", "11", "1011", "0110100110010110")] == \
        [True, True, False, True, False, True]
    assert hierarchy.depths("(()())") == [1, 2, 1, 2, 1, 0]
    assert hierarchy.depths("())(") == [1, 0, -1, 0]
    assert hierarchy.depths("(()(()))") == [1, 2, 1, 2, 3, 2, 1, 0]
    assert [hierarchy.is_balanced(s) for s in ("", "()", "(()())", "(()(()))", ")(", "(()", "())(", "())(()")] == \
        [True, True, True, True, False, False, False, False]
    for n in range(11):  # every bit string and bracket string up to 10 characters
        for chars in itertools.product("01", repeat=n):
            bits = "".join(chars)
            assert hierarchy.is_even(bits) == (functools.reduce(operator.xor, map(int, bits), 0) == 0)
            brackets = bits.replace("0", "(").replace("1", ")")
            assert hierarchy.is_balanced(brackets) == balanced_by_erasing(brackets), brackets
            assert hierarchy.label("brackets", brackets) == balanced_by_erasing(brackets)


def test_balanced_strings_are_drawn_uniformly_and_negatives_never_balance():
    catalan = [1, 1, 2, 5, 14, 42, 132]
    assert [hierarchy.balanced_paths(2 * k, 0) for k in range(7)] == catalan
    rng = random.Random(0)
    seen = [hierarchy.random_balanced(6, rng) for _ in range(2500)]
    counts = {s: seen.count(s) for s in set(seen)}
    assert len(counts) == 5 and all(balanced_by_erasing(s) for s in counts)
    assert all(400 <= c <= 600 for c in counts.values()), counts  # 500 each expected
    for n in range(1, 25):
        assert not any(balanced_by_erasing(hierarchy.random_unbalanced(n, rng)) for _ in range(20))
    strings = hierarchy.eval_strings("brackets", 40, 300, 7)
    assert strings == hierarchy.eval_strings("brackets", 40, 300, 7) and {len(s) for s in strings} == {40}
    assert 120 <= sum(map(balanced_by_erasing, strings)) <= 180  # balanced or not with equal odds
    # the hard negatives are there: as many ( as ) and still unbalanced
    assert sum(s.count("(") == 20 and not balanced_by_erasing(s) for s in strings) > 20


def test_the_parser_says_what_is_wrong():
    assert hierarchy.parse(" (() ())\n", "brackets") == "(()())"
    assert hierarchy.parse("1 0 1", "parity") == "101"
    with pytest.raises(ValueError, match=r"Only \( and \) can be read here \(brackets\); found “a”, “b”, first at "
                                         r"character 2\."):
        hierarchy.parse("(a)b", "brackets")
    with pytest.raises(ValueError, match="Only 0 and 1 can be read here .bits.; found “2”, first at character 3"):
        hierarchy.parse("012", "parity")
    with pytest.raises(ValueError, match="Type a string of bits"):
        hierarchy.parse("   ", "parity")
    with pytest.raises(ValueError, match="101 characters: the models were measured on strings of at most 100"):
        hierarchy.parse("1" * 101, "parity")


def test_a_tiny_run_saves_what_load_reads_back(tmp_path):
    cfg = hierarchy.HierarchyConfig(train_len=4, eval_len=6, eval_n=8, steps=3, d_model=8, heads=2, layers=1, d_ff=8,
                                    lstm_emb=4, lstm_hidden=6, half=False)
    result = hierarchy.run(cfg, str(tmp_path), log=lambda line: None)
    models, saved = hierarchy.load(tmp_path)
    assert saved["lengths"] == [2, 4, 6] and saved["command"].startswith("python -m core.variants.hierarchy --out ")
    for task in hierarchy.TASKS:
        for kind in hierarchy.KINDS:
            again = hierarchy.curves(models[task][kind], cfg)
            assert again == saved["curves"][task][kind] == result["curves"][task][kind]
    assert hierarchy.check_answers(models, cfg.eval_len) == saved["check"] == result["check"]  # float32: exact
    assert hierarchy.main(["--out", str(tmp_path), "--train-len", "1"]) == 2  # refused before training
    with pytest.raises(SystemExit) as e:
        hierarchy.main(["--no-such-flag"])
    assert e.value.code == 2


@shipped
def test_the_shipped_models_reproduce_their_recorded_accuracy():
    models, results = hierarchy.load(SHIPPED)
    cfg = hierarchy.config_of(results["config"])
    lengths = results["lengths"]
    for n in (cfg.train_len, lengths[-1]):  # one length seen in training, the longest
        i = lengths.index(n)
        for task in hierarchy.TASKS:
            strings = hierarchy.eval_strings(task, n, cfg.eval_n, cfg.eval_seed)
            for kind, model in models[task].items():
                got = hierarchy.scores(model, strings)
                recorded = results["curves"][task][kind]
                assert got["accuracy"] == pytest.approx(recorded["accuracy"][i], abs=1e-9), (task, kind, n)
                if task == "brackets":
                    assert got["depth"] == pytest.approx(recorded["depth"][i], abs=1e-9), (task, kind, n)
    check = hierarchy.check_answers(models, cfg.eval_len)
    for task in hierarchy.TASKS:
        for kind in hierarchy.KINDS:
            assert check[task][kind]["accuracy"] == results["check"][task][kind]["accuracy"]
            assert check[task][kind]["p_true"] == pytest.approx(results["check"][task][kind]["p_true"], abs=1e-4)
    sizes = [m["params"] for m in results["models"].values()]
    assert max(sizes) <= 1.1 * min(sizes)  # about the same number of parameters
    assert sum(p.stat().st_size for p in SHIPPED.iterdir()) <= 2 * 2 ** 20
    assert jsonio.loads((SHIPPED / hierarchy.RESULTS).read_text(encoding="utf-8")) == results
