"""The human-translation corpus (core.data.parallel): alignment, sentence cutting, filters, splits by document, and
the frozen copy everything reads; the one evaluator (core.evaluate) on it."""
import json
import subprocess
import sys

import pytest

from core.data import frozen, parallel


def test_libreoffice_pages_pair_by_element_id(tmp_path):
    base = tmp_path / "usr/share/libreoffice/help"
    page = "text/shared/guide/x.html"
    for lang, texts in (("en-US", ("Opening a document", "Do one of <b>the</b> following:", "Only English")),
                        ("fr", ("Ouverture d'un document", "Faites l'une des actions suivantes :", None))):
        (base / lang / page).parent.mkdir(parents=True)
        body = "".join(f'<p id="{i}" class="paragraph">{t}</p>' for i, t in
                       zip(("hd_id1", "par_id2", "par_id3"), texts) if t)
        (base / lang / page).write_text(f'<div id="DisplayArea">{body}<p id="search-bar">Search</p></div>')
    docs = parallel.libreoffice_documents(tmp_path, "fr")
    assert docs == [frozen.Document("libreoffice-help", page, (
        "Opening a document\tOuverture d'un document",
        "Do one of the following:\tFaites l'une des actions suivantes :"))]


def test_tuxpaint_stamp_gives_its_english_and_translated_line(tmp_path):
    stamp = tmp_path / "usr/share/tuxpaint/stamps/animals/frog.txt"
    stamp.parent.mkdir(parents=True)
    stamp.write_text("A frog.\nde.utf8=Ein Frosch.\nfr.utf8=Une grenouille.\n")
    assert parallel.tuxpaint_documents(tmp_path, "fr")[0].paragraphs == ("A frog.\tUne grenouille.",)
    assert parallel.tuxpaint_documents(tmp_path, "de")[0].paragraphs == ("A frog.\tEin Frosch.",)


def test_paragraphs_are_cut_into_sentences_only_when_both_sides_agree():
    assert parallel.sentence_pairs("It rains. We stay home!", "Il pleut. Nous restons à la maison !") == [
        ("It rains.", "Il pleut."), ("We stay home!", "Nous restons à la maison !")]
    whole = ("Choose Edit. Then Paste.", "Choisissez Édition puis Coller.")
    assert parallel.sentence_pairs(*whole) == [whole]


@pytest.mark.parametrize("en, tr, why", [
    ("Save the file.", "Save the file.", "untranslated"),
    ("Delete %s files?", "Supprimer %s fichiers ?", "markup or placeholder"),
    ("Press <b>Enter</b>", "Appuyez sur Entrée", "markup or placeholder"),
    ("Kill $unit_name now", "Tuez $unit_name", "markup or placeholder"),
    ("word " * 41, "mot " * 41, "length"),
    ("The quick brown fox jumps over the dog.", "Le renard.", "length ratio"),
    ("The cat sleeps on the warm windowsill.", "Le chat dort sur le rebord chaud de la fenêtre.", None),
])
def test_filters_name_what_they_drop(en, tr, why):
    failed = next((name for name, bad in parallel.FILTERS if bad(en, tr)), None)
    assert failed == why


def test_splits_are_by_document_and_share_no_sentence():
    assert parallel.split_of("wesnoth/wesnoth-tsg") == "valid" and parallel.split_of("wesnoth/wesnoth-dw") == "test"
    assert parallel.split_of("wesnoth/wesnoth-httt") == "train"
    assert parallel.split_of("libreoffice-help/a.html") == parallel.split_of("libreoffice-help/a.html")
    for lang in parallel.LANGS:
        keys = {s: {parallel.normalise(a) for a, _ in parallel.pairs(lang, s)} for s in parallel.SPLITS}
        assert not keys["train"] & keys["valid"] and not keys["train"] & keys["test"]
        assert not keys["valid"] & keys["test"]
        assert len(parallel.pairs(lang, "train")) > 45_000 and len(parallel.pairs(lang, "valid")) > 2_000


def test_frozen_corpus_records_sources_licences_and_filter_counts():
    for lang in parallel.LANGS:
        d = parallel.describe(lang)
        assert all(v["licence"] for v in d["sources"].values())
        assert d["packages"]["libreoffice-help-en-us"] and d["packages"]["wesnoth-1.16-data"]
        for source, row in d["filters"].items():
            counts = [row["sentence pairs"]] + [row[name] for name, _ in parallel.FILTERS] + [row["duplicates"]]
            assert counts == sorted(counts, reverse=True) and counts[-1] > 0, (source, row)
        n = sum(v["pairs"] for v in d["splits"].values())
        assert n == sum(row["duplicates"] for row in d["filters"].values())
    assert "ding" in parallel.describe("de")["filters"] and "ding" not in parallel.describe("fr")["filters"]
    with pytest.raises(ValueError, match="unknown split"):
        parallel.pairs("fr", "dev")


def test_one_evaluator_counts_plural_pronouns_and_reads_the_models_own_corpus():
    """core.evaluate scored every model with the small grammar: en-fr's ils / elles dropped out and en-fr-tiny was
    refused. Now the broad corpus's pronoun_of reads elles, and the tiny model is scored on its own grammar."""
    from core.evaluate import evaluate
    from core.io import registry
    ck = registry.load("en-fr")
    src = "The customers didn't buy the apples because they were rotten."
    ref = "Les clients n'ont pas acheté les pommes parce qu'elles étaient pourries."
    _, m = evaluate(ck, [(src, ref)])
    assert set(m["by_pronoun"]) == {"elles"} and m["n_pronoun"] == 1 and 0 <= m["chrf"] <= 100
    r = subprocess.run([sys.executable, "-m", "core.evaluate", "--model", "en-fr-tiny", "--split", "valid", "--n", "20"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    m = json.loads(r.stdout.splitlines()[-1])
    assert m["n"] == 20 and m["exact_match"] > 0.8 and set(m["by_pronoun"]) <= {"il", "elle", "le", "la"}
    r = subprocess.run([sys.executable, "-m", "core.evaluate", "--model", "en-fr-tiny", "--split", "valid",
                        "--corpus", "real"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "never read human translations" in r.stderr


# ---- release 2: four more sources, frozen apart; release 1 (what the shipped translators read) unchanged ----------

def _write_mo(path, messages: dict[str, str]) -> None:
    """A gettext catalog (GNU .mo, little-endian, no hash table) holding ``messages``."""
    import struct
    keys = sorted(messages)
    ids, strs = (b"".join(x.encode() + b"\0" for x in seq) for seq in (keys, [messages[k] for k in keys]))
    n, start = len(keys), 28 + 16 * len(keys)
    table, offset = [], start
    for k in keys:
        table += [len(k.encode()), offset]
        offset += len(k.encode()) + 1
    trans, offset = [], start + len(ids)
    for k in keys:
        trans += [len(messages[k].encode()), offset]
        offset += len(messages[k].encode()) + 1
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<7I", 0x950412DE, 0, n, 28, 28 + 8 * n, 0, 0) + struct.pack(f"<{4 * n}I", *table, *trans)
                     + ids + strs)


def test_gettext_sources_drop_message_contexts_and_keep_each_catalog_or_message_apart(tmp_path):
    wl = tmp_path / "usr/share/games/widelands/data/locale/fr/LC_MESSAGES"
    _write_mo(wl / "scenario_emp04.wmf.mo", {"": "Content-Type: text/plain; charset=UTF-8\n",
                                              "Red Fox": "Renard roux", "hint\x04The ships are ready.":
                                              "Les navires sont prêts."})
    docs = parallel.widelands_documents(tmp_path, "fr")
    assert docs == [frozen.Document("widelands", "scenario_emp04.wmf", (
        "Red Fox\tRenard roux", "The ships are ready.\tLes navires sont prêts."))]
    fc = tmp_path / "usr/share/locale/fr/LC_MESSAGES"
    _write_mo(fc / "freeciv-nations.mo", {"": "Content-Type: text/plain; charset=UTF-8\n",
                                          "The Aztecs built a city.": "Les Aztèques bâtirent une ville.",
                                          "Rome was a city.": "Rome était une ville."})
    docs = parallel.freeciv_documents(tmp_path, "fr")
    assert sorted(d.paragraphs[0] for d in docs) == ["Rome was a city.\tRome était une ville.",
                                                     "The Aztecs built a city.\tLes Aztèques bâtirent une ville."]
    assert len({d.key for d in docs}) == 2  # independent texts: each its own document, so its own split


def test_structural_sources_pair_elements_in_order_and_skip_pages_whose_structure_differs(tmp_path):
    help_ = tmp_path / "usr/share/help"
    page = '<page><info><desc>{}</desc><credit><name>X</name></credit></info><title>{}</title><p>{}</p>{}</page>'
    for lang, texts in (("C", ("Why add accounts?", "Accounts", "Add your <gui>email</gui> account.", "")),
                        ("fr", ("Pourquoi ajouter des comptes ?", "Comptes", "Ajoutez votre compte <gui>courriel</gui>.",
                                ""))):
        (help_ / lang / "gnome-help").mkdir(parents=True)
        (help_ / lang / "gnome-help" / "accounts.page").write_text(page.format(*texts))
        extra = "<p>One more.</p>" if lang == "C" else ""
        (help_ / lang / "gnome-help" / "other.page").write_text(page.format("a", "b", "c", extra))
    docs = parallel.gnome_help_documents(tmp_path, "fr")
    assert docs == [frozen.Document("gnome-help", "gnome-help/accounts.page", (
        "Why add accounts?\tPourquoi ajouter des comptes ?", "Accounts\tComptes",
        "Add your email account.\tAjoutez votre compte courriel."))]
    ref = tmp_path / "usr/share/debian-reference"
    ref.mkdir(parents=True)
    (ref / "ch01.en.html").write_text("<div><p>This is <a href='#'>Debian</a>.</p><p>Enjoy.</p></div>")
    (ref / "ch01.fr.html").write_text("<div><p>Ceci est <a href='#'>Debian</a>.</p><p>Profitez-en.</p></div>")
    assert parallel.debian_reference_documents(tmp_path, "fr") == [frozen.Document(
        "debian-reference", "ch01", ("This is Debian.\tCeci est Debian.", "Enjoy.\tProfitez-en."))]


@pytest.mark.parametrize("release, added_sources, part, growth", [
    (2, parallel.EXTRA_SOURCES, "parallel-extra", 1.25), (3, parallel.GAME_SOURCES, "parallel-games", 1.10),
    (4, parallel.STORY_SOURCES, "parallel-stories", 1.05)])
def test_each_release_adds_its_sources_and_keeps_the_one_before_and_the_split_rules(release, added_sources, part,
                                                                                      growth):
    from core.data import parallel_for, parallel_of
    for lang in parallel.LANGS:
        before, after = parallel.describe(lang, release - 1), parallel.describe(lang, release)
        added = set(after["sources"]) - set(before["sources"])
        no_catalog = {"naev"} if lang == "fr" else set()  # Naev 0.8 has a German catalog, no French one
        assert added == set(added_sources) and added - no_catalog <= set(after["filters"])
        assert all(after["sources"][s]["licence"] for s in added)
        assert all(after["packages"][p] for p in after["packages"])  # every package's version recorded
        assert after["corpora"] == before["corpora"] + [f"{part}-{lang}"]
        assert after["splits"]["train"]["en_words"] > growth * before["splits"]["train"]["en_words"]
        # a document's split does not depend on the release: the release before's held-out sentences stay held out
        # (one may move from valid to test, with a new test document's translation, when that document holds it
        # too: test is deduplicated first)
        held = {r: {parallel.normalise(a) for s in ("valid", "test") for a, _ in parallel.pairs(lang, s, release=r)}
                for r in (release - 1, release)}
        assert held[release - 1] <= held[release]
        keys = {s: {parallel.normalise(a) for a, _ in parallel.pairs(lang, s, release=release)} for s in parallel.SPLITS}
        assert not keys["train"] & (keys["valid"] | keys["test"]) and not keys["valid"] & keys["test"]
        assert parallel.fingerprint(lang, release - 1) != parallel.fingerprint(lang, release)
    assert parallel_of({"task": "en-de"}).fingerprint() == parallel.fingerprint("de", 1)
    assert parallel_of({"task": "en-de", "parallel_release": release}).fingerprint() == parallel.fingerprint("de",
                                                                                                           release)
    missing = max(parallel.RELEASES) + 1
    with pytest.raises(ValueError, match=f"no release {missing}"):
        parallel_for("en-fr", missing)


def test_po_catalogs_keep_translated_singular_messages_with_their_first_file(tmp_path):
    po = tmp_path / "usr/share/games/pingus/data/po/fr.po"
    po.parent.mkdir(parents=True)
    po.write_text('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
                  '#: data/levels/snow.pingus:3 data/levels/ice.pingus:7\nmsgid "Snow falls."\nmsgstr "La neige "\n'
                  '"tombe."\n\n'
                  '#: data/levels/snow.pingus:9\n#, fuzzy\nmsgid "A guess."\nmsgstr "Une supposition."\n\n'
                  '#: data/levels/ice.pingus:2\nmsgctxt "menu"\nmsgid "Say \\"hi\\"."\nmsgstr "Dis \\"salut\\"."\n'
                  '#: data/levels/ice.pingus:4\nmsgid "Untranslated."\nmsgstr ""\n\n'
                  '#: data/levels/ice.pingus:5\nmsgid "One pingu"\nmsgid_plural "%d pingus"\nmsgstr[0] "Un pingu"\n'
                  'msgstr[1] "%d pingus"\n#~ msgid "Old."\n#~ msgstr "Vieux."\n')
    assert parallel._po(po) == [("Snow falls.", "La neige tombe.", "data/levels/snow.pingus"),
                                ('Say "hi".', 'Dis "salut".', "data/levels/ice.pingus"),
                                ("One pingu", "Un pingu", "data/levels/ice.pingus")]
    docs = parallel.games_documents(tmp_path, "fr")
    assert docs == [frozen.Document("pingus", "po/data/levels/snow.pingus", ("Snow falls.\tLa neige tombe.",)),
                    frozen.Document("pingus", "po/data/levels/ice.pingus", ('Say "hi".\tDis "salut".',
                                                                             "One pingu\tUn pingu"))]
    _write_mo(tmp_path / "usr/share/locale/fr/LC_MESSAGES/cataclysm-dda.mo", {"You feel cold.": "Vous avez froid.",
                                                                               "A knife.": "Un couteau."})
    games = [d for d in parallel.games_documents(tmp_path, "fr") if d.source == "cataclysm-dda"]
    assert sorted(d.paragraphs for d in games) == [("A knife.\tUn couteau.",), ("You feel cold.\tVous avez froid.",)]
    assert len({d.key for d in games}) == 2  # a .mo keeps no file names: each message its own document


def test_lua_tables_and_globbed_catalogs_are_read_and_a_message_in_two_mo_catalogs_is_one_document(tmp_path):
    lua = tmp_path / "usr/share/games/hedgewars/Data/Locale/fr.lua"
    lua.parent.mkdir(parents=True)
    lua.write_text('locale = {\n--      ["Not yet."] = "",\n'
                   '["Save the \\"princess\\"!"] = "Sauvez la \\"princesse\\" !", -- Rescue, Other_mission\n'
                   '["Good luck."]="Bonne chance.",\n["Empty."] = "", -- Rescue\n}\n')
    assert parallel._lua(lua) == [('Save the "princess"!', 'Sauvez la "princesse" !', "Rescue"),
                                  ("Good luck.", "Bonne chance.", "")]
    for world in ("world1", "world2"):
        po = tmp_path / f"usr/share/games/supertux2/levels/{world}/fr.po"
        po.parent.mkdir(parents=True)
        po.write_text(f'#: levels/{world}/intro.stl:1\nmsgid "Tux runs."\nmsgstr "Tux court."\n')
    for name in ("freedroidrpg-dialogs", "freedroidrpg-data"):  # "Hello." in both catalogs: one document
        _write_mo(tmp_path / f"usr/share/locale/fr/LC_MESSAGES/{name}.mo", {"Hello.": "Bonjour.", name: name + " fr"})
    docs = parallel.stories_documents(tmp_path, "fr")
    assert {(d.source, d.path) for d in docs if d.source != "freedroidrpg"} == {
        ("hedgewars", "Locale/Rescue"), ("hedgewars", "Locale/fr.lua"),
        ("supertux", "world1/levels/world1/intro.stl"), ("supertux", "world2/levels/world2/intro.stl")}
    droid = sorted(d.paragraphs[0] for d in docs if d.source == "freedroidrpg")
    assert droid == ["Hello.\tBonjour.", "freedroidrpg-data\tfreedroidrpg-data fr",
                     "freedroidrpg-dialogs\tfreedroidrpg-dialogs fr"]
    assert not parallel.stories_documents(tmp_path, "de")  # no German catalog here: nothing, no error


def test_the_evaluator_reads_the_release_a_model_read_or_the_one_asked_for():
    from core.evaluate import corpus_pairs
    one, two = ({"task": "en-fr"}, {"task": "en-fr", "parallel_release": 2})
    assert corpus_pairs(one, "valid", "real", None) == parallel.pairs("fr", "valid", release=1)
    assert corpus_pairs(two, "valid", "real", None) == parallel.pairs("fr", "valid", release=2)
    assert corpus_pairs(two, "valid", "real", None, release=1) == parallel.pairs("fr", "valid", release=1)
    missing = str(max(parallel.RELEASES) + 1)
    r = subprocess.run([sys.executable, "-m", "core.evaluate", "--model", "en-fr", "--split", "valid", "--corpus", "real",
                        "--parallel-release", missing], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and f"no release {missing}" in r.stderr, r.stderr

