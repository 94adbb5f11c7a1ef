"""The verbatim-overlap index (core.inference.verbatim): its longest matches equal a brute-force search, a passage
copied from real training documents is found with its exact span and document, text the model never read matches
no more than a token or two, and the index of lm-tiny is its training stream token for token."""
import numpy as np
import pytest

from core.data import english
from core.inference import verbatim
from core.inference.verbatim import TrainingIndex
from core.io import registry
from core.io.tokenizer import UNK, Tokenizer


def brute(stream, query, i):
    """(length, first position, occurrences) of the longest run of ``query`` from ``i`` found in ``stream``, by
    trying every length and every position."""
    best = (0, -1, 0)
    s, q = np.asarray(stream, dtype=np.int64), np.asarray(query, dtype=np.int64)
    for length in range(1, min(len(q) - i, len(s)) + 1):
        windows = np.lib.stride_tricks.sliding_window_view(s, length)
        hits = np.flatnonzero((windows == q[i:i + length]).all(axis=1))
        if not len(hits):
            break
        best = (length, int(hits[0]), len(hits))
    return best


@pytest.mark.parametrize("seed", range(0, 96, 8))
def test_the_longest_match_from_every_start_equals_a_brute_force_search(seed):
    """Eight streams per case (vocabularies of 2 to 7 so that long repeats happen; ids outside the vocabulary in
    the query; binary-search blocks of 1 to 5 positions), and the n-gram shares that follow from the matches."""
    for s in range(seed, seed + 8):
        rng = np.random.default_rng(s)
        vocab = int(rng.integers(2, 8))
        stream = rng.integers(0, vocab, int(rng.integers(0, 70))).astype(np.uint16)
        query = rng.integers(0, vocab + 1, int(rng.integers(0, 16)))
        if len(stream) > 12:  # a copied piece, so that some runs are long
            a = int(rng.integers(0, len(stream) - 6))
            query = np.concatenate([query[:3], stream[a:a + int(rng.integers(2, 14))], query[3:]])
        index = TrainingIndex(stream, np.array([0]), np.array([0]), ["doc"], vocab, block=int(rng.integers(1, 6)))
        ms = index.matches(query)
        assert [(m.length, m.position, m.count) for m in ms] == [brute(stream, query, i) for i in range(len(query))]
        grams = {n: {tuple(stream[p:p + n]) for p in range(len(stream) - n + 1)} for n in (1, 2, 3, 5)}
        for n, (found, total) in verbatim.ngram_shares(ms, ns=(1, 2, 3, 5)).items():
            windows = [tuple(query[i:i + n]) for i in range(len(query) - n + 1)]
            assert (found, total) == (sum(w in grams[n] for w in windows), len(windows))


def test_a_vocabulary_of_sixteen_bit_ids_packs_four_tokens_in_one_key():
    rng = np.random.default_rng(0)
    stream = rng.integers(65000, 65535, 300).astype(np.uint16)
    index = TrainingIndex(stream, np.array([0]), np.array([0]), ["doc"], 65535)
    query = np.concatenate([[7], stream[100:131], [65534]])
    assert index.longest_at(query, 1) == verbatim.Match(1, 31, 100, 1)
    assert [m.length for m in index.matches(query)[1:33]] == [brute(stream, query, i)[0] for i in range(1, 33)]
    with pytest.raises(ValueError, match="64-bit key"):
        TrainingIndex(stream.astype(np.int32), np.array([0]), np.array([0]), ["doc"], 70000)


@pytest.fixture(scope="module")
def english_documents():
    """The training documents of the frozen English corpus (the small one: 0.5 s to read)."""
    return verbatim.train_documents(english.CORPUS)


def test_the_documents_give_the_corpus_training_lines_in_order(english_documents):
    assert [p for _, ps in english_documents for p in ps] == english.lines("train")
    assert all(english.split_of(name) == "train" for name, _ in english_documents)


def test_a_passage_copied_from_a_training_document_is_found_with_its_span_and_document(english_documents, tmp_path):
    tok = Tokenizer.load(registry.BUNDLED / "lm" / "tokenizer.json")  # the shipped lm's byte-level BPE
    documents = english_documents[100:120]
    index = verbatim.from_documents(tok, documents)
    name, paragraphs = documents[7]
    j = next(k for k, p in enumerate(paragraphs) if len(tok.encode(p)) > 60)
    ids = tok.encode(paragraphs[j])
    copied = ids[20:45]
    query = [UNK, UNK] + copied + [UNK]  # [UNK] never occurs in a byte-level stream: the run cannot go on
    best = verbatim.longest(index.matches(query))
    assert (best.start, best.length, best.count) == (2, 25, 1)
    place = index.locate(best.position)
    assert (place.document, place.number, place.offset) == (name, j + 1, 20)
    assert list(index.paragraph(place.paragraph)) == ids
    p = verbatim.passage(index, tok, best, context=10_000)
    assert (p["before"] + p["span"] + p["after"]).strip() == tok.decode(ids)
    assert p["span"].strip() == tok.decode(copied) and not (p["cut_before"] or p["cut_after"])
    index.save(tmp_path / "ix")  # mapped back from the files it gives the same answers
    again = TrainingIndex.open(tmp_path / "ix")
    assert again.matches(query) == index.matches(query) and again.docs == index.docs


@pytest.fixture(scope="module")
def tiny():
    ck = registry.load("lm-tiny", allow_path=False)
    return ck, verbatim.training_index(ck)


def test_the_lm_tiny_index_is_its_training_stream(tiny):
    from core.training.tasks import make_task
    ck, index = tiny
    stream = make_task("lm-tiny", tokenizer=ck.tokenizer).train_stream.numpy()
    assert np.array_equal(np.asarray(index.tokens), stream)
    assert list(index.starts) == list(np.flatnonzero(stream == 2))


@pytest.mark.parametrize("text", ["Quantum chromodynamics describes the strong interaction between quarks and gluons.",
                                  "Seventeen purple giraffes negotiated a ceasefire with the moon over breakfast."])
def test_text_absent_from_training_matches_no_run_of_four_tokens(tiny, text):
    ck, index = tiny
    q = ck.tokenizer.encode(text)
    s = verbatim.summary(index, q)
    assert s["longest"].length < 4
    assert [m.length for m in index.matches(q)] == [brute(index.tokens, q, i)[0] for i in range(len(q))]
    assert all(found == 0 and total == len(q) - n + 1 for n, (found, total) in s["shares"].items())
