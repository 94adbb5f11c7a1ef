"""The hand-written Winograd-style sets (tests/data/winograd*.tsv): they load, each pronoun cell is what the scorer
reads in its own reference, and the development sets share no sentence with the test set. Data checks only: no
model is run here (the cards' figures are re-measured in test_bundled.py)."""
from __future__ import annotations

from pathlib import Path

import pytest

from core.data import broad
from core.data.winograd import load

DATA = Path(__file__).resolve().parents[1] / "data"
SETS = sorted(DATA.glob("winograd*.tsv"))


def test_the_test_set_and_three_dev_sets_are_there():
    assert [p.name for p in SETS] == ["winograd.tsv", "winograd_dev.tsv", "winograd_dev2.tsv", "winograd_dev3.tsv"]


@pytest.mark.parametrize("path", SETS, ids=lambda p: p.name)
def test_each_pronoun_cell_is_what_the_scorer_reads_in_its_reference(path):
    """A model is scored by comparing ``pronoun_of(its translation)`` with the cell, so a cell that its own
    reference does not yield would mark the reference translation itself wrong."""
    rows = load(path)
    assert len(rows) >= 40
    for lang in broad.LANGS:
        wrong = [(r.en, r.reference(lang)) for r in rows
                 if broad.pronoun_of(r.reference(lang)[0], lang) != r.reference(lang)[1]]
        assert not wrong, wrong[:3]


def test_no_development_sentence_is_a_test_sentence():
    test = {r.en.lower() for r in load(DATA / "winograd.tsv")}
    for path in SETS[1:]:
        shared = [r.en for r in load(path) if r.en.lower() in test]
        assert not shared, (path.name, shared)


def test_load_refuses_a_wrong_header_and_a_short_row(tmp_path):
    bad_header = tmp_path / "h.tsv"
    bad_header.write_text("en\tfr\n", encoding="utf-8")
    with pytest.raises(ValueError, match="header"):
        load(bad_header)
    short = tmp_path / "s.tsv"
    short.write_text("en\tfr\tfr_pronoun\tde\tde_pronoun\n# a comment\nThe cat sat.\tLe chat.\til\n", encoding="utf-8")
    with pytest.raises(ValueError, match="s.tsv:3: expected 5"):
        load(short)
