"""The large English corpus (core.data.english_large): its frozen copy, its size and splits, its sources' licences
and versions, that it holds prose and not code, and that the corpus ``english`` (the shipped lm's) is unchanged."""
import hashlib
import random
import re
import stat
from pathlib import Path

import pytest

from core.data import english, english_large, english_xl, frozen

MB = 1_000_000
# each frozen part of the large English prose: (corpus, its packages, the module that rebuilds it, its prose filter)
FROZEN = {"english-large": (english_large.CORPUS, english_large.PACKAGES, "core.data.english_large", english.is_prose),
          "english-more": (english_xl.PART, english_xl.PACKAGES, "core.data.english_xl", english_xl.is_prose)}


@pytest.mark.parametrize("name", FROZEN)
def test_the_frozen_copy_matches_its_manifest_and_fits_the_repository(name):
    meta = frozen.manifest(name)
    data = (frozen.ROOT / name / frozen.DATA).read_bytes()
    assert hashlib.sha256(data).hexdigest() == meta["data_sha256"] and len(data) == meta["data_bytes"]
    assert len(data) <= 20 * MB
    assert meta["rebuild"].startswith(f"python -m {FROZEN[name][2]}")
    docs = frozen.read(name)  # checks the digest again
    assert len(docs) == meta["documents"] and sum(len(d.paragraphs) for d in docs) == meta["paragraphs"]


def test_at_least_40_mb_of_prose_and_a_valid_and_test_split_of_1_mb_each():
    d = english_large.describe()
    chars = {s: d["splits"][s]["chars"] for s in english_large.SPLITS}
    assert sum(chars.values()) >= 40 * MB, chars
    assert chars["valid"] >= 1 * MB and chars["test"] >= 1 * MB, chars
    assert d["compressed_bytes"] == frozen.manifest(english_large.NAME)["data_bytes"]


@pytest.mark.parametrize("corpus", [english_large, english_xl], ids=["english-large", "english-xl"])
def test_no_paragraph_is_in_two_splits_or_twice_in_one(corpus):
    train, valid, test = (corpus.lines(s) for s in english_large.SPLITS)
    for split in (train, valid, test):
        assert len(set(split)) == len(split)
    train = set(train)
    assert not train & set(valid) and not train & set(test) and not set(valid) & set(test)
    with pytest.raises(ValueError, match="unknown split"):
        corpus.lines("dev")


@pytest.mark.parametrize("name", FROZEN)
def test_every_source_has_a_licence_and_every_package_a_version(name):
    corpus, packages, *_ = FROZEN[name]
    meta = frozen.manifest(name)
    assert set(meta["sources"]) == set(corpus.sources)
    assert {d.source for d in frozen.read(name)} == set(meta["sources"])
    for name, src in meta["sources"].items():
        assert src["licence"].strip() and src["description"].strip() and src["packages"], name
        for pkg in src["packages"]:
            assert re.match(r"^[\w.:~+-]+$", meta["packages"].get(pkg) or ""), (name, pkg, meta["packages"].get(pkg))
    assert set(meta["packages"]) == set(packages)


@pytest.mark.parametrize("name", FROZEN)
def test_the_paragraphs_are_prose_not_code(name):
    """Every paragraph is one line of running text: no shell prompt, interpreter session, preprocessor line or
    definition, no licence text; a sample reads as sentences (mostly letters, ending like a sentence)."""
    code = re.compile(r"^(\$ |>>> |#include|def |class \w+[:(]|import \w|from \w+ import |[{}])")
    everything = [p for s in english_large.SPLITS for p in FROZEN[name][0].lines(s)]
    assert not [p for p in everything if code.match(p) or "\n" in p or "\t" in p][:5]
    assert not [p for p in everything if english_large.LICENCE_TEXT.search(p)][:5]
    for p in random.Random(0).sample(everything, 5000):
        assert FROZEN[name][3](p), p


ENGLISH_SPLITS = {"train": "54265ee914827cab", "valid": "9ab84fb2cf9ec4e9", "test": "9762fd5306ac90bf"}  # its lm's card


def test_the_english_corpus_is_unchanged():
    """english-large reuses english's code: the corpus ``english`` (task ``lm``) still gives the text its lm was
    trained and measured on (the split digests that lm's card recorded, 3.4 M parameters, shipped until
    2026-11-27), and english's pages keep their split inside english-large."""
    assert english.fingerprint()["sha256"] == ENGLISH_SPLITS
    large = {s: set(english_large.lines(s)) for s in english_large.SPLITS}
    for split in ("valid", "test"):  # the lm's held-out pages are never training text of the large corpus either
        assert not set(english.lines(split)) & large["train"]


POD = """\
=head1 NAME

perlfake - a page

=head1 DESCRIPTION

This article is about I<source filters>, a feature that few people know about: see L<perlfunc/open> and
L<the manual|perlop> for the C<< $a <=> $b >> operator of the sort function, which returns E<gt> zero when the
first one is larger.

    my $x = 1;   # a verbatim block is code
    print $x;

=begin html

<p>This HTML paragraph is only for the HTML formatter and must be dropped.</p>

=end html

=item A list item title is a command, never read as a paragraph of text.

Short.
"""

WML = '''\
[message]
    speaker=Konrad
    message= _ "Where am I? This forest is dark, and I can hear the orcs moving among the trees.

Let us go north."
[/message]
    name= _ "Konrad"
    message= _ "Welcome back, $unit.name, you have done well in the battle of the river today."
    story= _ "<i>The elves</i> had held the forest for ""generations"" before the orcs came from the north."
'''


def test_pod_and_wml_readers_keep_prose_only():
    assert english_large.pod_paragraphs(POD) == [
        "This article is about source filters, a feature that few people know about: see open and the manual for the "
        "$a <=> $b operator of the sort function, which returns > zero when the first one is larger."]
    assert english_large.wml_paragraphs(WML) == [
        "Where am I? This forest is dark, and I can hear the orcs moving among the trees.",
        'The elves had held the forest for "generations" before the orcs came from the north.']


def test_licence_text_is_dropped():
    assert english_large.clean([
        "Permission is granted to copy, distribute and modify this document under the terms given here.",
        "You may charge a fee for the physical act of transferring a copy under this License today.",
        "The kernel documentation describes how each source file should state the licence it is under.",
    ]) == ["The kernel documentation describes how each source file should state the licence it is under."]


def _fake_root(root: Path) -> Path:
    """A miniature unpacked tree: two Handbook pages (one a licence page), a POD page and a ``bible`` program."""
    book = root / "usr/share/doc/debian-handbook/html/en-US"
    book.mkdir(parents=True)
    (book / "apt.html").write_text('<div class="para">The sources.list file lists every repository that APT '
                                   'reads, one a line.</div><p>A paragraph tag is not what the Handbook uses.</p>')
    (book / "license.html").write_text('<div class="para">Everything in this page is the text of a licence and '
                                       'never counts as prose.</div>')
    pod = root / "usr/share/perl/5.36.0/pod"
    pod.mkdir(parents=True)
    (pod / "perlfake.pod").write_text(POD)
    program = root / "usr/bin/bible"
    program.parent.mkdir(parents=True)
    verses = ["Ge1:1 In the beginning God created the heaven and the earth, and all that is in them.",
              "Ge1:2 And the earth was without form, and void; and darkness was upon the face of the deep.",
              "Ex2:1 And there went a man of the house of Levi, and took to wife a daughter of Levi."]
    program.write_text("#!/bin/sh\ncat <<'EOF'\n" + "\n".join(verses) + "\nEOF\n")
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    (root / "usr/lib").mkdir(parents=True)
    (root / "usr/lib/bible.data").write_bytes(b"")
    return root


def test_sources_are_read_from_an_unpacked_tree(tmp_path):
    root = _fake_root(tmp_path / "root")
    handbook = english_large.source_documents("debian-handbook", root)
    assert [(d.key, d.paragraphs) for d in handbook] == [
        ("debian-handbook/apt.html", ("The sources.list file lists every repository that APT reads, one a line.",))]
    assert [d.key for d in english_large.source_documents("perl-doc", root)] == ["perl-doc/5.36.0/pod/perlfake.pod"]
    bible = english_large.bible_documents(root)
    assert [d.path for d in bible] == ["Ge 1", "Ex 2"]
    assert bible[0].paragraphs == ("In the beginning God created the heaven and the earth, and all that is in them. "
                                   "And the earth was without form, and void; and darkness was upon the face of the "
                                   "deep.",)
    with pytest.raises(FileNotFoundError, match="apt-get download linux-doc-6.1"):
        english_large.source_documents("linux-doc", root)
    assert english_large.versions(root) == {p: None for p in english_large.PACKAGES}  # no .deb files, not "/"


def test_the_rebuild_command_refuses_a_missing_tree_plainly(tmp_path, capsys):
    assert english_large.main(["--root", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert out.startswith("error: ") and "apt-get download python3.11-doc" in out


# --- release 2 (english-xl): english-large unchanged, and the part frozen apart ---

def test_release_2_is_english_large_then_the_added_part_and_leaves_english_large_alone():
    """The lm trained on english-large keeps its text: release 2 reads english-large's splits first, unchanged,
    then the added part's; no added paragraph is one of english-large's (any split), so none of its held-out text
    becomes training text; and the release is worth its name: ≥ 1.5 × english-large's words."""
    large = {s: english_large.lines(s) for s in english_large.SPLITS}
    every_large = {p for ls in large.values() for p in ls}
    for split in english_large.SPLITS:
        part = english_xl.PART.lines(split)
        assert english_xl.lines(split) == large[split] + part
        assert not every_large & set(part), split
    words = {name: sum(english_large.describe()["splits"][s]["words"] if name == "large" else
                       english_xl.describe()["splits"][s]["words"] for s in english_large.SPLITS)
             for name in ("large", "xl")}
    assert words["xl"] >= 1.5 * words["large"], words
    d = english_xl.describe()
    assert d["frozen"] == ["english-large", "english-more"] and set(d["sources"]) == set(english_xl.SOURCES)
    assert d["compressed_bytes"] == sum(frozen.manifest(n)["data_bytes"] for n in FROZEN)
    assert set(d["packages"]) == set(english_large.PACKAGES) | set(english_xl.PACKAGES)


def test_the_fingerprint_of_a_release_moves_with_either_part(tmp_path):
    """A card of an lm-xl model names the text it was measured on: the fingerprint of a ProseUnion changes when
    either frozen part is rebuilt differently (two miniature parts, so nothing large is compressed again)."""
    par = "The {} paragraph of the {} document is a sentence of plain English prose, as the filter wants."
    def freeze(name, docs):
        frozen.write(name, [frozen.Document("src", f"doc-{d}.html", tuple(par.format(i, d) for i in range(3)))
                            for d in docs], sources={"src": {"description": "d", "licence": "l", "packages": ["p"]}},
                     packages={"p": "1"}, rebuild="none", root=tmp_path)
    parts = tuple(english.ProseCorpus(n, {"src": {}}, "none", None, None) for n in ("part-a", "part-b"))
    union = english.ProseUnion("both", parts)
    freeze("part-a", range(40))
    freeze("part-b", range(40, 80))
    for split in english.SPLITS:
        assert union.lines(split, tmp_path) == parts[0].lines(split, tmp_path) + parts[1].lines(split, tmp_path)
    then = union.fingerprint(tmp_path)
    assert union.card_mismatch("lm", then, tmp_path) is None
    freeze("part-b", range(41, 80))  # one document of the second part gone: its split's digest moves
    english._split_lines.cache_clear()  # as ProseCorpus.rebuild does after writing
    assert "Re-measure" in union.card_mismatch("lm", then, tmp_path)
    assert union.describe(tmp_path)["frozen"] == ["part-a", "part-b"]


ENDLESS_SKY = '''\
mission "First Contact"
	description "Deliver the medical supplies to the colony on Tarazed before the fever spreads any further."
	on offer
		conversation
			`The spaceport is quiet tonight, and the merchant you were told to meet is waiting by the fuel depot.`
			choice
				`	"Who are you?"`
				`	(Walk away without saying a single word to him.)`
			`	"You took your time," he says, handing you a sealed crate that smells of engine oil.`
'''


def test_the_endless_sky_reader_keeps_conversation_and_descriptions_in_file_order():
    assert english_xl.endless_sky_paragraphs(ENDLESS_SKY) == [
        "Deliver the medical supplies to the colony on Tarazed before the fever spreads any further.",
        "The spaceport is quiet tonight, and the merchant you were told to meet is waiting by the fuel depot.",
        "(Walk away without saying a single word to him.)",
        '"You took your time," he says, handing you a sealed crate that smells of engine oil.']


def test_a_catalog_is_read_in_documents_of_consecutive_messages(tmp_path, monkeypatch):
    """A .mo keeps no file names: its English messages, sorted and once each across languages, go in documents of
    CATALOG_DOCUMENT messages; untranslated .po entries and non-prose messages are left out."""
    messages = [f"Message number {i:03d} tells the player that the door to the north is locked again."
                for i in range(7)]
    for lang in ("fr", "de"):
        folder = tmp_path / f"usr/share/locale/{lang}/LC_MESSAGES"
        folder.mkdir(parents=True)
        body = "".join(f'msgid "{m}"\nmsgstr "{lang}: {m}"\n\n' for m in messages[:5 if lang == "fr" else 7])
        body += 'msgid "Untranslated: this sentence has no French or German text at all yet."\nmsgstr ""\n\n'
        body += 'msgid "Quit"\nmsgstr "Q"\n'
        (folder / "freedroidrpg-dialogs.po").write_text(body)
    monkeypatch.setitem(english_xl.CATALOGS, "freedroidrpg",
                        ("usr/share/locale/{lang}/LC_MESSAGES/freedroidrpg*.po", ("fr", "de")))
    monkeypatch.setattr(english_xl, "CATALOG_DOCUMENT", 3)
    docs = english_xl.source_documents("freedroidrpg", tmp_path)
    assert [(d.path, len(d.paragraphs)) for d in docs] == [("messages-00000", 3), ("messages-00001", 3),
                                                           ("messages-00002", 1)]
    assert [p for d in docs for p in d.paragraphs] == messages
    with pytest.raises(FileNotFoundError, match="apt-get download naev-data"):
        english_xl.source_documents("naev", tmp_path)


def test_lm_xl_reads_release_2():
    from core.data import prose_for
    from core.training.tasks import LMTask
    assert prose_for("lm-xl") is english_xl
    from core.io import registry
    task = LMTask(tokenizer=registry.load("lm").tokenizer, name="lm-xl")
    assert task.corpus() is english_xl and "train_stream" not in vars(task)


def test_the_release_2_rebuild_refuses_a_missing_tree_plainly(tmp_path, capsys):
    assert english_xl.main(["--root", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert out.startswith("error: ") and "apt-get download endless-sky-data" in out
