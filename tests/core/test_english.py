"""The real-English corpus (core.data.english), the byte-level BPE and the n-gram baselines of the lm card."""
import math

import pytest
import torch

from core.data import english
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


def test_the_installed_corpus_is_real_prose_of_at_least_5_mb():
    d = english.describe()
    total = sum(s["chars"] for s in d["splits"].values())
    assert total >= 5_000_000, d
    train, valid, test = (set(english.lines(s)) for s in english.SPLITS)
    assert not (train & valid) and not (train & test) and not (valid & test)
    assert any("Python" in x for x in train) and any("Debian" in x for x in train)
    with pytest.raises(ValueError, match="unknown split"):
        english.lines("dev")


def test_package_versions_agree_with_dpkg_query_and_the_fingerprint_follows_the_text():
    """The card's corpus fingerprint (see test_bundled) names what it was measured on: package versions as dpkg itself
    reports them, and one digest per split that is the digest of that split's lines."""
    import hashlib
    import subprocess
    for pkg in english.PACKAGES.split():
        want = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True).stdout
        assert english.package_version(pkg) == want != ""
    assert english.package_version("no-such-package-attention-lab") is None
    fp = english.fingerprint()
    assert fp["packages"] == {p: english.package_version(p) for p in english.PACKAGES.split()}
    for split in english.SPLITS:
        text = "\n".join(english.lines(split)).encode()
        assert fp["sha256"][split] == hashlib.sha256(text).hexdigest()[:16]
    assert len(set(fp["sha256"].values())) == 3


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
