"""The real-English corpus (core.data.english), the byte-level BPE and the n-gram baselines of the lm card."""
import hashlib
import math
from pathlib import Path

import pytest
import torch

from core.data import english, frozen
from core.training.tasks import ngram_perplexities
from core.io.tokenizer import UNK, Tokenizer

RST = """\
.. _tut-intro:

*************
Control Flow
*************

Perhaps the most well-known statement type is the :keyword:`if` statement.  For
example::

   >>> x = int(input("Please enter an integer: "))
   >>> if x < 0:
   ...     print('Negative changed to zero')

.. function:: len(s)

   Return the length (the number of items) of an object, as :func:`~os.path.getsize` does for files.

   .. code-block:: python

      This sentence is inside a code block and must never be read as prose.

.. note::
   See `the tutorial <https://example.org>`_ for ``many`` more *examples* of this kind of thing.

* A list item that is long enough to count as a paragraph of prose here.

Short line.
"""


def test_rst_keeps_prose_drops_code_directives_and_markup():
    assert english.rst_paragraphs(RST) == [
        "Perhaps the most well-known statement type is the if statement. For example:",
        "Return the length (the number of items) of an object, as getsize does for files.",
        "See the tutorial for many more examples of this kind of thing.",
        "A list item that is long enough to count as a paragraph of prose here.",
    ]


def test_html_keeps_paragraph_text_without_tags_or_code():
    page = ('<p id="title"><a href="x">Product Site</a></p><div><p>The <code class="filename">sources.list</code> '
            'file lists the repositories &amp; mirrors that APT reads.</p><pre>deb http://x y z</pre>'
            '<p>ok</p><p>Each entry has a type, an address, a distribution and its components in order.</p></div>')
    assert english.html_paragraphs(page) == [
        "The sources.list file lists the repositories & mirrors that APT reads.",
        "Each entry has a type, an address, a distribution and its components in order.",
    ]


def test_split_is_by_document_and_stable():
    assert english.split_of("python-docs/library/os.rst.txt") == english.split_of("python-docs/library/os.rst.txt")
    shares = [english.split_of(f"doc{i}") for i in range(4000)]
    assert 0.03 < shares.count("valid") / 4000 < 0.07 and 0.03 < shares.count("test") / 4000 < 0.07


def test_the_frozen_corpus_is_real_prose_of_at_least_5_mb():
    d = english.describe()
    total = sum(s["chars"] for s in d["splits"].values())
    assert total >= 5_000_000, d
    train, valid, test = (set(english.lines(s)) for s in english.SPLITS)
    assert not (train & valid) and not (train & test) and not (valid & test)
    assert any("Python" in x for x in train) and any("Debian" in x for x in train)
    with pytest.raises(ValueError, match="unknown split"):
        english.lines("dev")


def test_the_frozen_corpus_needs_no_package_and_matches_its_manifest(monkeypatch):
    """Everything reads assets/corpora/english: with the packages gone the corpus is still there, its data file is
    the one its manifest names, and each split's fingerprint is the digest of that split's lines."""
    monkeypatch.setattr(english, "PYTHON_DOCS", Path("/nonexistent/python-docs"))
    monkeypatch.setattr(english, "HANDBOOK", Path("/nonexistent/handbook"))
    meta = frozen.manifest("english")
    data = (frozen.ROOT / "english" / frozen.DATA).read_bytes()
    assert hashlib.sha256(data).hexdigest() == meta["data_sha256"] and len(data) == meta["data_bytes"]
    assert meta["packages"]["python3.11-doc"] and meta["packages"]["debian-handbook"]
    assert {"python-docs", "debian-handbook"} == set(meta["sources"])
    fp = english.fingerprint()
    assert fp["packages"] == meta["packages"]
    for split in english.SPLITS:
        text = "\n".join(english.lines(split)).encode()
        assert fp["sha256"][split] == hashlib.sha256(text).hexdigest()[:16]
    assert len(set(fp["sha256"].values())) == 3
    with pytest.raises(FileNotFoundError, match="apt-get install python3.11-doc debian-handbook"):
        english.extract()


def test_package_version_reads_dpkg_status(tmp_path):
    status = tmp_path / "status"
    status.write_text("Package: a\nStatus: install ok installed\nVersion: 1.0-2\n\n"
                      "Package: b\nStatus: deinstall ok config-files\nVersion: 3\n")
    assert frozen.package_version("a", status) == "1.0-2"
    assert frozen.package_version("b", status) is None  # removed: its config files only
    assert frozen.package_version("c", status) is None
    assert frozen.package_version("a", tmp_path / "missing") is None


def _fake_packages(root: Path, sentence: str) -> dict:
    """A miniature python3.11-doc and debian-handbook: three rst pages and one handbook chapter."""
    docs, book = root / "py", root / "book"
    (docs / "library").mkdir(parents=True)
    book.mkdir()
    for i in range(3):
        (docs / "library" / f"m{i}.rst.txt").write_text(f"Module {i}\n========\n\n{sentence} Page {i} of three.\n")
    (book / "apt.html").write_text("<p>The sources.list file lists every repository that APT reads, one a line.</p>")
    return {"python_docs": docs, "handbook": book}


def test_rebuild_reports_a_changed_document_and_its_split(tmp_path):
    """The rebuild command compares a new extraction with the frozen copy and writes only when told to."""
    paths = _fake_packages(tmp_path, "This paragraph is long enough to count as running prose here.")
    first = english.rebuild(write=True, root=tmp_path / "corpora", **paths)
    assert len(first["added"]) == 4 and first["written"]
    then = english.fingerprint(tmp_path / "corpora")
    page = paths["python_docs"] / "library" / "m1.rst.txt"
    page.write_text(page.read_text().replace("long enough", "easily long enough"))
    report = english.rebuild(root=tmp_path / "corpora", **paths)
    split = english.split_of("python-docs/library/m1.rst.txt")
    assert report["changed"] == [f"{split}: python-docs/library/m1.rst.txt"] and report["splits_changed"] == [split]
    assert report["added"] == report["removed"] == [] and "written" not in report
    assert english.fingerprint(tmp_path / "corpora") == then  # nothing written without write=True


def test_a_changed_training_document_names_its_split_and_the_remeasure_command(tmp_path):
    """The drift path of the lm card test: a copy of the frozen corpus with one training document changed is
    reported as the train split having moved, with the command that re-measures the card; the unchanged copy
    matches the card."""
    card = english.fingerprint()  # what a card of an lm of this corpus records (scripts/bundle.py)
    docs = frozen.read("english")
    manifest = frozen.manifest("english")
    kwargs = dict(sources=manifest["sources"], packages=list(manifest["packages"]), rebuild=manifest["rebuild"])
    frozen.write("english", docs, root=tmp_path / "same", **kwargs)
    assert english.card_mismatch("lm", card, tmp_path / "same") is None
    i = next(i for i, d in enumerate(docs) if english.split_of(d.key) == "train" and d.paragraphs)
    changed = frozen.Document(docs[i].source, docs[i].path, (docs[i].paragraphs[0] + " Changed.",) + docs[i].paragraphs[1:])
    frozen.write("english", docs[:i] + [changed] + docs[i + 1:], root=tmp_path / "moved", **kwargs)
    msg = english.card_mismatch("lm", card, tmp_path / "moved")
    assert "train split changed" in msg and "valid" not in msg and "test" not in msg.split("split")[0]
    assert "python scripts/bundle.py assets/models/lm" in msg


def test_a_damaged_frozen_file_is_refused_plainly(tmp_path):
    docs = frozen.read("english")[:3]
    frozen.write("x", docs, sources={}, packages=[], rebuild="python -m core.data.english", root=tmp_path)
    assert frozen.read("x", tmp_path) == docs
    (tmp_path / "x" / frozen.DATA).write_bytes(b"not xz")
    with pytest.raises(frozen.FrozenCorpusError, match="does not match its manifest"):
        frozen.read("x", tmp_path)
    with pytest.raises(frozen.FrozenCorpusError, match="no frozen corpus 'y'"):
        frozen.read("y", tmp_path)


def test_byte_level_bpe_never_needs_unk_and_round_trips():
    tok = Tokenizer.train(["The cat sat on the mat because it was tired."] * 20, "bytebpe", 300)
    for text in ("The cat sat.", "naïve café — 😀 Ωmega", "zebra 42!"):
        ids = tok.encode(text)
        assert UNK not in ids
        assert tok.decode(ids) == text
    assert tok.display(tok.encode("The cat"))[:2] == ["The", "cat"]
    assert tok.unknown_words("😀 zebra") == []


def test_ngram_baselines_match_hand_computed_values():
    v = 8
    train = torch.tensor([5, 6, 5, 6, 5, 7])
    test = torch.tensor([5, 6, 5, 7])
    out = ngram_perplexities(train, test, test, v)
    uni = torch.bincount(train, minlength=v).double() + 1
    p = uni / uni.sum()
    assert out["unigram_perplexity"] == pytest.approx(math.exp(-sum(math.log(p[t]) for t in (6, 5, 7)) / 3))
    lam = out["bigram_lambda"]
    # bigram counts: 5→6 twice, 6→5 twice, 5→7 once; c(5)=3, c(6)=2
    probs = [lam * 2 / 3 + (1 - lam) * p[6], lam * 2 / 2 + (1 - lam) * p[5], lam * 1 / 3 + (1 - lam) * p[7]]
    assert out["bigram_perplexity"] == pytest.approx(math.exp(-sum(math.log(x) for x in probs) / 3))
    assert out["bigram_perplexity"] < out["unigram_perplexity"]


def test_bits_per_byte_counts_every_byte_of_the_text_once():
    """Bits per byte (how the lms of different tokenizers are compared): the bytes of a stream of whole lines are
    the lines' UTF-8 bytes plus one line break each, whatever the tokenizer cut; and the figure is the summed
    cross-entropy in bits over the bytes the predicted tokens stand for, computed here without the task."""
    from core.config import ModelConfig
    from core.model import Transformer
    from core.training.tasks import LMTask
    lines = ["The café serves crème brûlée on Sundays.", "Naïve models read every byte — even these.",
             "A third line, with numbers 12345 and symbols %$#."] * 20
    tok = Tokenizer.train(lines, "bytebpe", 300)
    task = LMTask(text="\n".join(lines), tokenizer=tok, seq_len=16)
    sizes = task.token_bytes()
    whole = task._stream(lines)
    assert int(sizes[whole].sum()) == sum(len(ln.encode()) + 1 for ln in lines)
    torch.manual_seed(0)
    model = Transformer(ModelConfig(kind="decoder-only", vocab_size=tok.vocab_size, d_model=16, n_heads=2,
                                    n_decoder_layers=1, d_ff=32, max_len=16, dropout=0.0))
    # Windows cut characters apart, so the check counts its bytes by decoding the ASCII lines only.
    ascii_lines = ["A third line, with numbers 12345 and symbols %$#.", "Models read every byte, even these."] * 20
    whole = task._stream(ascii_lines)
    got = task.evaluate(model, n=None, stream=whole, batch=3)
    nats, n_bytes = 0.0, 0
    with torch.no_grad():
        for s in range(0, len(whole) - 17, 16):
            x, y = whole[s:s + 16], whole[s + 1:s + 17]
            nats += float(torch.nn.functional.cross_entropy(model(x[None]).logits[0], y, reduction="sum"))
            n_bytes += len(tok.hf.decode(y.tolist()).encode())
    assert got["bits_per_byte"] == pytest.approx(nats / math.log(2) / n_bytes, rel=1e-5)
    assert "bits_per_byte" not in LMTask(text="\n".join(lines), seq_len=16).evaluate(model, n=2)  # not byte-level
