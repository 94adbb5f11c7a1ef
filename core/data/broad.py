"""The broad English→French / English→German corpus: real dictionary words in 30+ sentence frames.

Where the words come from
-------------------------
``core/data/lexicon.json`` (rebuilt by ``scripts/build_lexicon.py``; sources and licences in
``core/data/LEXICON.md``): nouns with French and German translations, genders and plurals taken
from the FreeDict dictionaries, checked against hunspell and WordNet; adjectives with their French
agreement forms and German declension stems; verbs with the tenses the frames use; names; numbers.

What a sentence is
------------------
A :class:`Frame` is an English template with typed slots (``{A}`` a noun of some classes,
``{adj}``, ``{verb}``…) plus a French and a German renderer. In the **coreference frames** the
English pronoun ("it", "they") could grammatically refer to either of two nouns; the *cue* word
(an adjective, or in the object frames a verb) decides which, by meaning: in
"The trophy doesn't fit in the suitcase because it is too big", only the thing that goes *in* can
be too big for it, and with "too small" only the container. Every coreference frame lists the cues
that point to each role, and the generator keeps only cues that the other noun's role cannot
take, so the answer never follows from word order (both readings of each frame occur; tests check).
A person is never "it": where the cue points at a person (who can carry, lift, push, catch), the English says "he" or
"she" by the noun's sex, and a person noun with no sex is not drawn for that reading. Probe pairs keep only twins
whose English pronoun is the same, so a pair still differs in its cue alone.

Splits
------
Every sentence has a ``combo`` key (antecedent-or-subject noun, cue, frame); a salted hash sends
combos to train (75 %), valid (10 %) or test (15 %). In addition, 6 % of the nouns that can fill a
coreference role are **held-out nouns**: they never appear in a coreference frame of the training
split (they do appear in the other frames, so the model knows the words), and the ``heldout`` split
holds coreference sentences built on them. :func:`probe_pairs` draws minimal pairs from ``test``.

Which sentences of a split are drawn depends on the release (:data:`GENERATED_RELEASES`; a model's meta says which
it read, absent meaning 1): release 1 draws a frame by weight and then its slots from one random stream per split, so
a new or reweighted frame changes every later sentence of every frame; release 2 gives each frame its own stream and
as many sentences as its own weight asks for, so a new or reweighted frame leaves the others' sentences untouched
(``tests/core/test_generated_release.py``). A sentence's split (the hash above) is the same in both.

Translation choices (fixed): narrative past is the French *passé composé* / *imparfait* and the
German *Präteritum*; "you" is not used; first person sentences use the French masculine.
"""
from __future__ import annotations

import collections
import hashlib
import json
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .translation import words

__all__ = ["LANGS", "SPLITS", "FRAMES", "Pair", "lexicon", "words", "generate", "probe_pairs", "pronoun_of",
           "translate", "pair_for", "english_sentences", "heldout_nouns", "frame_names"]

LANGS = ("fr", "de")
SPLITS = ("train", "valid", "test", "heldout")
LEXICON_PATH = Path(__file__).with_name("lexicon.json")
_SALT = "attention-lab/broad/v1"
_TEST_SHARE, _VALID_SHARE, _HELDOUT_NOUN_SHARE = 0.15, 0.10, 0.06
_PLAIN_SHARE, _MY_SHARE = 0.25, 0.2  # of coreference sentences: "because it was tired" (no "too"); "my pocket"
TRAIN_SIZE = 300_000  # sentences sampled for the training split
EVAL_SIZE = 6_000  # sentences sampled for valid / test / heldout
# How a split's sentences are drawn from the frames. Release 1 (what the shipped translators read): one weighted draw
# over every frame from one seed per split, so adding, removing or reweighting any frame changes every sentence after
# the first draw it touches. Release 2: each frame from its own seed, as many sentences as its own weight asks for
# (_PER_WEIGHT), interleaved by position — adding or reweighting one frame leaves every other frame's sentences, and
# their order, as they were. A model records its release in meta (``generated_release``; absent: 1).
GENERATED_RELEASES = (1, 2)
LATEST_GENERATED = 2
_PER_WEIGHT = {"train": 3_400, "valid": 68, "test": 68, "heldout": 125}  # release 2: sentences per unit of weight


# --------------------------------------------------------------------------------------------
# Lexicon
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Noun:
    """A lexicon noun: English singular and plural; French and German forms with gender and plural (``de_weak``:
    a weak masculine, *den Löwen*); its semantic classes, a person's sex, and its place in the builder's order."""
    en: str
    en_pl: str
    fr: str
    fr_g: str
    fr_pl: str
    fr_elide: bool
    de: str
    de_g: str
    de_pl: str
    de_weak: bool
    classes: tuple[str, ...]
    sex: str | None = None
    rank: int = 0


@dataclass(frozen=True)
class Adj:
    """A lexicon adjective: English; French masculine / feminine, singular / plural and masculine before a vowel
    (``fr_pre``: placed before the noun); German base form and declension stem; the noun classes it describes."""
    en: str
    fr_ms: str
    fr_fs: str
    fr_mp: str
    fr_fp: str
    fr_ms_vowel: str
    fr_pre: bool
    de: str
    de_stem: str
    applies: tuple[str, ...]


@dataclass(frozen=True)
class Verb:
    """A lexicon verb: English forms; French (infinitive, present and future by person, participle, auxiliary,
    object preposition) and German ones (also past, separable prefix, object case); subject and object classes."""
    en: str
    en_3sg: str
    en_past: str
    en_pp: str
    fr_inf: str
    fr_pres: dict
    fr_fut: dict
    fr_pp: str
    fr_aux: str
    fr_prep: str
    de_inf: str
    de_pres: dict
    de_past: dict
    de_pp: str
    de_aux: str
    de_sep: str
    de_case: str
    de_prep: str
    subj: tuple[str, ...]
    obj: tuple[str, ...]


@dataclass(frozen=True)
class Lexicon:
    """The loaded ``lexicon.json``: nouns, adjectives and verbs by English word, names with their sex, numbers
    as ``(en, fr, de)`` words, and ``by_class``: the nouns of each semantic class."""
    nouns: dict[str, Noun]
    adjectives: dict[str, Adj]
    verbs: dict[str, Verb]
    names: dict[str, str]  # name -> sex
    numbers: dict[int, tuple[str, str, str]]
    by_class: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _load(path: Path) -> Lexicon:
    raw = json.loads(path.read_text(encoding="utf-8"))
    nouns = {}
    for n in raw["nouns"]:
        n = dict(n, classes=tuple(n["classes"]))
        nouns[n["en"]] = Noun(**{k: n[k] for k in Noun.__dataclass_fields__ if k in n})
    adjectives = {a["en"]: Adj(**{k: (tuple(v) if k == "applies" else v) for k, v in a.items()
                                   if k in Adj.__dataclass_fields__}) for a in raw["adjectives"]}
    verbs = {}
    for v in raw["verbs"]:
        v = dict(v, subj=tuple(v["subj"]), obj=tuple(v["obj"]))
        verbs[v["en"]] = Verb(**{k: v[k] for k in Verb.__dataclass_fields__})
    names = {x["name"]: x["sex"] for x in raw.get("names", [])}
    numbers = {x["n"]: (x["en"], x["fr"], x["de"]) for x in raw.get("numbers", [])}
    by_class: dict[str, list[str]] = {}
    for key, noun in nouns.items():
        for c in noun.classes:
            by_class.setdefault(c, []).append(key)
    return Lexicon(nouns, adjectives, verbs, names, numbers, {c: tuple(v) for c, v in by_class.items()})


@lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The lexicon in ``core/data/lexicon.json`` (loaded once)."""
    return _load(LEXICON_PATH)


# --------------------------------------------------------------------------------------------
# English, French and German noun phrases
# --------------------------------------------------------------------------------------------

_VOWELS = set("aeiouyàâäéèêëîïôöûüœæAEIOUYÀÂÉÈÊÎÔÛŒ")
_EN_AN_EXCEPT = ("uni", "use", "usu", "uten", "eu", "one")


def _en_a(word: str) -> str:
    w = word.lower()
    an = (w[:1] in "aeiou" and not w.startswith(_EN_AN_EXCEPT)) or w.startswith(("hour", "honest", "heir"))
    return ("an " if an else "a ") + word


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _fr_starts_vowel(word: str, noun: Noun | None = None) -> bool:
    if noun is not None and word in (noun.fr, noun.fr_pl):
        return noun.fr_elide
    return word[:1] in _VOWELS or (word[:1] == "h" and word[:2] not in ("ha", "hé", "hi", "ho", "hu", "hê"))


def _fr_adj(adj: Adj, gender: str, plural: bool, before_vowel: bool = False) -> str:
    if plural:
        return adj.fr_mp if gender == "m" else adj.fr_fp
    if gender == "f":
        return adj.fr_fs
    return adj.fr_ms_vowel if before_vowel else adj.fr_ms


_FR_DET = {  # determiner -> (masc sg, fem sg, plural, elided sg)
    "def": ("le", "la", "les", "l'"),
    "indef": ("un", "une", "des", "un"),
    "my": ("mon", "ma", "mes", "mon"),
}


def fr_np(noun: Noun, det: str = "def", plural: bool = False, adj: Adj | None = None, prep: str = "") -> str:
    """A French noun phrase: determiner (+ contraction with à/de), agreeing adjective before or after."""
    g = noun.fr_g
    head = noun.fr_pl if plural else noun.fr
    pre = post = ""
    if adj is not None:
        if adj.fr_pre:
            pre = _fr_adj(adj, g, plural, before_vowel=_fr_starts_vowel(head, noun))
        else:
            post = _fr_adj(adj, g, plural)
    first = pre or head
    vowel = _fr_starts_vowel(first, noun if not pre else None)
    ms, fs, pl, el = _FR_DET[det]
    if plural:
        d = pl
        if det == "indef" and pre:
            d = "de"  # de grands chiens
    elif vowel and det != "indef":
        d = el if det == "def" else (ms if det == "my" else el)
    else:
        d = ms if g == "m" else fs
    words_ = [w for w in (pre, head, post) if w]
    np = (d if d.endswith("'") else d + " ") + " ".join(words_)
    if prep in ("de", "à"):
        np = _fr_contract(prep, np)
    elif prep:
        np = prep + " " + np
    return np


def _fr_contract(prep: str, np: str) -> str:
    if prep == "de":
        for a, b in (("le ", "du "), ("les ", "des "), ("des ", "de ")):
            if np.startswith(a):
                return b + np[len(a):]
        return ("d'" + np) if np[:1] in _VOWELS else "de " + np
    for a, b in (("le ", "au "), ("les ", "aux ")):
        if np.startswith(a):
            return b + np[len(a):]
    return "à " + np


_DE_ART = {
    "def": {"nom": ("der", "die", "das", "die"), "acc": ("den", "die", "das", "die"),
            "dat": ("dem", "der", "dem", "den")},
    "indef": {"nom": ("ein", "eine", "ein", ""), "acc": ("einen", "eine", "ein", ""),
              "dat": ("einem", "einer", "einem", "")},
    "my": {"nom": ("mein", "meine", "mein", "meine"), "acc": ("meinen", "meine", "mein", "meine"),
           "dat": ("meinem", "meiner", "meinem", "meinen")},
}
_GI = {"m": 0, "f": 1, "n": 2}
# adjective endings: weak (after der/die/das), mixed (after ein/mein), strong (no article)
_DE_END = {
    "def": {"nom": ("e", "e", "e", "en"), "acc": ("en", "e", "e", "en"), "dat": ("en", "en", "en", "en")},
    "indef": {"nom": ("er", "e", "es", "e"), "acc": ("en", "e", "es", "e"), "dat": ("en", "en", "en", "en")},
    "my": {"nom": ("er", "e", "es", "en"), "acc": ("en", "e", "es", "en"), "dat": ("en", "en", "en", "en")},
}


def de_noun_form(noun: Noun, case: str, plural: bool) -> str:
    """The German noun in ``case`` (``"nom"``, ``"acc"``, ``"dat"``): a dative plural adds -n, a weak noun
    takes -(e)n in the accusative and dative singular."""
    if plural:
        pl = noun.de_pl
        return pl + "n" if case == "dat" and not pl.endswith(("n", "s")) else pl
    if noun.de_weak and case in ("acc", "dat"):  # the plural's form: den Löwen, den Bären, den Nachbarn, den Zaren
        return "Herrn" if noun.de == "Herr" else noun.de_pl  # (not "Zarn", which an ending rule gave); Herren is plural
    return noun.de


def de_np(noun: Noun, case: str = "nom", det: str = "def", plural: bool = False, adj: Adj | None = None,
          prep: str = "") -> str:
    """A German noun phrase in ``case``: article, declined adjective, noun (weak nouns and dative plural)."""
    i = 3 if plural else _GI[noun.de_g]
    art = _DE_ART[det][case][i]
    parts = [art] if art else []
    if adj is not None:
        parts.append(adj.de_stem + _DE_END[det][case][i])
    parts.append(de_noun_form(noun, case, plural))
    np = " ".join(parts)
    if prep:
        contracted = {("in", "dem"): "im", ("an", "dem"): "am", ("von", "dem"): "vom", ("zu", "dem"): "zum",
                      ("zu", "der"): "zur", ("in", "das"): "ins"}
        key = (prep, art)
        if key in contracted and adj is None:
            return contracted[key] + np[len(art):]
        return prep + " " + np
    return np


# German distinguishes eating by animals (fressen) from eating by people (essen).
_DE_ANIMAL_EAT = dict(de_inf="fressen", de_pres={"1sg": "fresse", "3sg": "frisst", "3pl": "fressen"},
                      de_past={"1sg": "fraß", "3sg": "fraß", "3pl": "fraßen"}, de_pp="gefressen")


def de_verb(v: "Verb", animal_subject: bool) -> "Verb":
    """The German forms a subject takes: an animal *frisst*, a person *isst*."""
    if animal_subject and v.de_inf == "essen":
        from dataclasses import replace
        return replace(v, **_DE_ANIMAL_EAT)
    return v


def de_verb_final(v: "Verb", person: str) -> str:
    """A past verb at the end of a German subordinate clause: the separable prefix rejoins it (aufhob), except a
    verb-like prefix (fallen ließ)."""
    if not v.de_sep:
        return v.de_past[person]
    return v.de_sep + (" " if v.de_sep.endswith("en") else "") + v.de_past[person]


FR_SUBJ = {("m", False): "il", ("f", False): "elle", ("m", True): "ils", ("f", True): "elles"}
FR_OBJ = {"m": "le", "f": "la"}
DE_SUBJ = {"m": "er", "f": "sie", "n": "es"}
DE_ACC = {"m": "ihn", "f": "sie", "n": "es"}


def _fr_pron(noun: Noun, plural: bool) -> str:
    return FR_SUBJ[(noun.fr_g, plural)]


def _de_pron(noun: Noun, plural: bool) -> str:
    return "sie" if plural else DE_SUBJ[noun.de_g]


def _fr_fix(text: str) -> str:
    """French elisions of function words before a vowel (que il → qu'il, ne a → n'a, si il → s'il)."""
    text = re.sub(r"\b([Qq]u|[Nn]|[Jj])e ([aeiouyéèêàâîô])", r"\1'\2", text)
    text = re.sub(r"\bsi (ils?)\b", r"s'\1", text)
    text = text.replace(" ?", " ?").replace("  ", " ")
    return text


# --------------------------------------------------------------------------------------------
# Frames
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Spec:
    """One sentence: a frame name and its slot fillers (English keys into the lexicon)."""
    frame: str
    slots: tuple[tuple[str, str], ...]

    def __getitem__(self, key):
        return dict(self.slots)[key]

    def get(self, key, default=None):
        return dict(self.slots).get(key, default)


@dataclass(frozen=True)
class Frame:
    """A sentence frame: the English template, the noun classes each slot accepts, French and German renderers
    and, in a coreference frame, the cue words that point the pronoun at each role."""
    name: str
    en: str  # English template; {A} {B} {C}: nouns, {Apl}…: plurals, {aA}: "a"/"an" + noun, {adj}, {verb…}, {name}, {num}
    roles: dict  # slot -> noun classes it accepts
    fr: object  # Spec, Lexicon -> str
    de: object
    cues: dict | None = None  # coreference frames: role slot -> adjectives (or verbs) that make "it" that role
    cue_kind: str = "adj"  # "adj" | "verb"
    plural: bool = False  # the pronoun is "they"
    obj_pronoun: bool = False  # the pronoun is an object ("it" after the verb)
    verb_need: str = ""  # svo frames: "" | "transitive" | "direct"; "pick": a direct verb fitting the roles' nouns
    cue_fits: bool = False  # the cue must describe its role's noun (an adjective whose classes include the noun's)
    weight: float = 1.0
    poss: tuple = ()  # slots whose "the" may be "my" ("doesn't fit in my pocket"): spec slot "my" names the one
    only: dict | None = None  # slot -> the nouns it takes, narrower than its classes (the tools that cut)
    langs: tuple = LANGS  # the languages whose corpus samples this frame (its weight is 0 in the others)


def _det(spec, slot: str) -> str:
    """The determiner of ``slot``'s noun phrase: "my" where the spec makes that noun possessed, else "def"."""
    return "my" if spec.get("my") == slot else "def"


_GRADED = "too {cue}"  # a template's graded cue, which a spec may write without "too"


def _the_noun(slot: str) -> re.Pattern:
    """``the {slot}`` (or ``{slotpl}``) in a template: where a possessed noun's "the" becomes "my"."""
    return re.compile(rf"[Tt]he (\{{{slot}(?:pl)?\}})")


def _too(spec) -> bool:
    """Whether the cue is graded ("because it was too tired"); spec slot ``deg="plain"``: "because it was tired"."""
    return spec.get("deg") != "plain"


_PERSON_IT = re.compile(r"\b(because|although|until) it\b")  # where a template's "it" may stand for a person
_NO_TOO = frozenset({"huge", "enormous"})  # cues English never grades with "too"


def _person_referent(frame: Frame, spec, lex) -> "Noun | None":
    """The noun "it" stands for in a singular coreference sentence (``spec``: a Spec or its slots), when that noun is
    a person."""
    role = None if frame.plural else _pron_role(frame, spec)
    noun = lex.nouns[spec[role]] if role else None
    return noun if noun is not None and "person" in noun.classes else None


def _en_pronoun(frame: Frame, spec, lex) -> str:
    """The English pronoun of a coreference sentence: "they", "he" / "she" for a person (a person is never
    "it"), else "it"."""
    if frame.plural:
        return "they"
    person = _person_referent(frame, spec, lex)
    return {"m": "he", "f": "she"}.get(person.sex if person else None, "it")


def _n(spec, lex, slot):
    return lex.nouns[spec[slot]]


def _fnp(spec, lex, slot, **kw):
    """French noun phrase of ``slot`` with the spec's determiner (le / mon)."""
    return fr_np(_n(spec, lex, slot), _det(spec, slot), **kw)


def _dnp(spec, lex, slot, case, **kw):
    """German noun phrase of ``slot`` in ``case`` with the spec's determiner (der / mein)."""
    return de_np(_n(spec, lex, slot), case, _det(spec, slot), **kw)


def _a(spec, lex, slot="adj"):
    return lex.adjectives[spec[slot]]


def _pron_role(frame: Frame, spec: Spec) -> str | None:
    if not frame.cues:
        return None
    cue = spec["cue"]
    for role, cues in frame.cues.items():
        if cue in cues:
            return role
    return None


# ---- French / German renderers of the coreference frames -----------------------------------

def _because(fr_main, de_main, fr_conj="parce que", de_conj="weil", fr_deg="trop", de_deg="zu",
             fr_be="était", de_be="war"):
    """Renderers for 'MAIN because it was too ADJ' frames."""
    def fr(spec, lex, frame):
        role = _pron_role(frame, spec)
        noun = _n(spec, lex, role)
        adj = _fr_adj(_a(spec, lex, "cue"), noun.fr_g, frame.plural)
        be = {"était": "étaient", "est": "sont", "soit": "soient"}[fr_be] if frame.plural else fr_be
        deg = f"{fr_deg} " if fr_deg and _too(spec) else ""
        return _fr_fix(f"{fr_main(spec, lex)} {fr_conj} {_fr_pron(noun, frame.plural)} {be} {deg}{adj}.")

    def de(spec, lex, frame):
        role = _pron_role(frame, spec)
        noun = _n(spec, lex, role)
        be = {"war": "waren", "ist": "sind"}[de_be] if frame.plural else de_be
        deg = f"{de_deg} " if de_deg and _too(spec) else ""
        return f"{de_main(spec, lex)}, {de_conj} {_de_pron(noun, frame.plural)} {deg}{_a(spec, lex, 'cue').de} {be}."
    return fr, de


def _fr_subj(spec, lex, slot="A", plural=False):
    return _cap(_fnp(spec, lex, slot, plural=plural))


def _de_subj(spec, lex, slot="A", plural=False):
    return _cap(_dnp(spec, lex, slot, "nom", plural=plural))


def _cue_sets(a: str, b: str) -> dict:
    return {"A": tuple(a.split()), "B": tuple(b.split())}


ANIMAL_WEAK = "tired weak sick old small young slow lazy injured"
PLURAL_WEAK = "tired weak sick old young lazy injured"  # the plural frames' subjects
SUBJECTS = ("animal", "person")  # who can carry, lift, catch
FRAMES_LIST: list[Frame] = []


def _frame(name, en, roles, fr_de, **kw):
    fr, de = fr_de
    FRAMES_LIST.append(Frame(name, en, roles, fr, de, **kw))


_frame("cross", "The {A} didn't cross the {B} because it was too {cue}.", {"A": ("animal",), "B": ("place",)},
       _because(lambda s, x: f"{_fr_subj(s, x)} n'a pas traversé {_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x)} überquerte {_dnp(s, x, 'B', 'acc')} nicht"),
       cues=_cue_sets("tired scared hungry slow weak sick lazy", "wide long crowded dark muddy steep dangerous"
                      " noisy slippery narrow deep"), poss=("A",), weight=3)
_frame("cross_although", "The {A} crossed the {B} although it was very {cue}.", {"A": ("animal",), "B": ("place",)},
       _because(lambda s, x: f"{_fr_subj(s, x)} a traversé {_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x)} überquerte {_dnp(s, x, 'B', 'acc')}",
                fr_conj="même si", de_conj="obwohl", fr_deg="très", de_deg="sehr"),
       cues=_cue_sets("tired scared hungry slow weak sick old", "wide long crowded dark muddy steep dangerous"
                      " noisy slippery"))
_frame("cross_near", "The {A} didn't cross the {B} next to the {C} because it was too {cue}.",
       {"A": ("animal",), "B": ("place",), "C": ("building",)},
       _because(lambda s, x: f"{_fr_subj(s, x)} n'a pas traversé {_fnp(s, x, 'B')} à côté "
                             f"{_fnp(s, x, 'C', prep='de')}",
                lambda s, x: f"{_de_subj(s, x)} überquerte {_dnp(s, x, 'B', 'acc')} neben "
                             f"{_dnp(s, x, 'C', 'dat')} nicht"),
       cues=_cue_sets("tired scared hungry slow weak sick", "wide muddy slippery"))
_frame("fit", "The {A} doesn't fit in the {B} because it is too {cue}.", {"A": ("object",), "B": ("container",)},
       _because(lambda s, x: f"{_fr_subj(s, x)} ne rentre pas dans {_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x)} passt nicht in {_dnp(s, x, 'B', 'acc')}",
                fr_be="est", de_be="ist"),
       cues=_cue_sets("big large wide long thick huge enormous", "small tiny narrow short"), poss=("A", "B"), weight=3)
_frame("fit_past", "The {A} didn't fit into the {B} because it was too {cue}.", {"A": ("object",), "B": ("container",)},
       _because(lambda s, x: f"{_fr_subj(s, x)} ne rentrait pas dans {_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x)} passte nicht in {_dnp(s, x, 'B', 'acc')}"),
       cues=_cue_sets("big large wide long thick huge enormous", "small tiny narrow short"), poss=("A", "B"), weight=2)
_frame("carry", "The {A} couldn't carry the {B} because it was too {cue}.", {"A": SUBJECTS, "B": ("object",)},
       _because(lambda s, x: f"{_fr_subj(s, x)} n'a pas pu porter {_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x)} konnte {_dnp(s, x, 'B', 'acc')} nicht tragen"),
       cues=_cue_sets(ANIMAL_WEAK, "heavy big large"), poss=("A", "B"), weight=2)
_frame("lift", "The {A} couldn't lift the {B} because it was too {cue}.", {"A": SUBJECTS, "B": ("object", "furniture")},
       _because(lambda s, x: f"{_fr_subj(s, x)} n'a pas pu soulever {_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x)} konnte {_dnp(s, x, 'B', 'acc')} nicht heben"),
       cues=_cue_sets(ANIMAL_WEAK, "heavy big large"), poss=("A", "B"), weight=2)
_frame("push", "The {A} couldn't push the {B} because it was too {cue}.",
       {"A": SUBJECTS, "B": ("object", "furniture", "vehicle")},
       _because(lambda s, x: f"{_fr_subj(s, x)} n'a pas pu pousser {_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x)} konnte {_dnp(s, x, 'B', 'acc')} nicht schieben"),
       cues=_cue_sets(ANIMAL_WEAK, "heavy big large"), poss=("A", "B"))
_frame("they_push", "The {Apl} couldn't push the {Bpl} because they were too {cue}.",
       {"A": SUBJECTS, "B": ("object", "furniture", "vehicle")},
       _because(lambda s, x: f"{_fr_subj(s, x, plural=True)} n'ont pas pu pousser {_fnp(s, x, 'B', plural=True)}",
                lambda s, x: f"{_de_subj(s, x, plural=True)} konnten {_dnp(s, x, 'B', 'acc', plural=True)} nicht "
                             "schieben"),
       cues=_cue_sets(PLURAL_WEAK, "heavy big large"), plural=True)
_frame("climb", "The {A} couldn't climb the {B} because it was too {cue}.", {"A": ("animal",), "B": ("obstacle",)},
       _because(lambda s, x: f"{_fr_subj(s, x)} n'a pas pu escalader {_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x)} konnte nicht auf {_dnp(s, x, 'B', 'acc')} klettern"),
       cues=_cue_sets(ANIMAL_WEAK + " fat", "high steep slippery tall"), poss=("A",), weight=2)
_frame("jump", "The {A} couldn't jump over the {B} because it was too {cue}.", {"A": ("animal",), "B": ("obstacle",)},
       _because(lambda s, x: f"{_fr_subj(s, x)} n'a pas pu sauter par-dessus {_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x)} konnte nicht über {_dnp(s, x, 'B', 'acc')} springen"),
       cues=_cue_sets(ANIMAL_WEAK + " fat", "high tall wide"), poss=("A",), weight=2)
_frame("jump_onto", "The {A} couldn't jump onto the {B} because it was too {cue}.",
       {"A": ("animal",), "B": ("furniture",)},
       _because(lambda s, x: f"{_fr_subj(s, x)} n'a pas pu sauter sur {_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x)} konnte nicht auf {_dnp(s, x, 'B', 'acc')} springen"),
       cues=_cue_sets(ANIMAL_WEAK + " fat", "high tall"), poss=("A", "B"))
_frame("break", "The {A} broke the {B} because it was too {cue}.", {"A": ("tool",), "B": ("object",)},
       _because(lambda s, x: f"{_fr_subj(s, x)} a cassé {_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x)} zerbrach {_dnp(s, x, 'B', 'acc')}"),
       cues=_cue_sets("hard heavy", "fragile thin old"), poss=("B",), weight=2)
_frame("break_neg", "The {A} didn't break the {B} because it was too {cue}.", {"A": ("tool",), "B": ("object",)},
       _because(lambda s, x: f"{_fr_subj(s, x)} n'a pas cassé {_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x)} zerbrach {_dnp(s, x, 'B', 'acc')} nicht"),
       cues=_cue_sets("light small", "hard thick"), cue_fits=True, poss=("B",))
_frame("pour", "I poured the {L} from the {A} into the {B} until it was {cue}.", {"A": ("vessel",), "B": ("vessel",)},
       _because(lambda s, x: f"J'ai versé {_fnp(s, x, 'L')} {_fnp(s, x, 'A', prep='de')} dans "
                             f"{_fnp(s, x, 'B')}",
                lambda s, x: f"Ich goss {_dnp(s, x, 'L', 'acc')} aus {_dnp(s, x, 'A', 'dat')} in "
                             f"{_dnp(s, x, 'B', 'acc')}",
                fr_conj="jusqu'à ce que", de_conj="bis", fr_deg="", de_deg="", fr_be="soit"),
       cues=_cue_sets("empty", "full"), weight=2)
_frame("pour_person", "The {P} poured the {L} from the {A} into the {B} until it was {cue}.",
       {"P": ("person",), "A": ("vessel",), "B": ("vessel",)},
       _because(lambda s, x: f"{_fr_subj(s, x, 'P')} a versé {_fnp(s, x, 'L')} {_fnp(s, x, 'A', prep='de')} dans "
                             f"{_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x, 'P')} goss {_dnp(s, x, 'L', 'acc')} aus {_dnp(s, x, 'A', 'dat')} in "
                             f"{_dnp(s, x, 'B', 'acc')}",
                fr_conj="jusqu'à ce que", de_conj="bis", fr_deg="", de_deg="", fr_be="soit"),
       cues=_cue_sets("empty", "full"), poss=("P",))
_frame("they_cross", "The {Apl} didn't cross the {Bpl} because they were too {cue}.",
       {"A": ("animal",), "B": ("place",)},
       _because(lambda s, x: f"{_fr_subj(s, x, plural=True)} n'ont pas traversé {_fnp(s, x, 'B', plural=True)}",
                lambda s, x: f"{_de_subj(s, x, plural=True)} überquerten {_dnp(s, x, 'B', 'acc', plural=True)} "
                             "nicht"),
       cues=_cue_sets("tired scared hungry slow weak sick old", "wide long crowded dark muddy steep dangerous deep"),
       plural=True, weight=2)
_frame("they_fit", "The {Apl} don't fit in the {Bpl} because they are too {cue}.", {"A": ("object",), "B": ("container",)},
       _because(lambda s, x: f"{_fr_subj(s, x, plural=True)} ne rentrent pas dans {_fnp(s, x, 'B', plural=True)}",
                lambda s, x: f"{_de_subj(s, x, plural=True)} passen nicht in {_dnp(s, x, 'B', 'acc', plural=True)}",
                fr_be="est", de_be="ist"),
       cues=_cue_sets("big large long huge", "small tiny"), plural=True, poss=("B",))
_frame("they_lift", "The {Apl} couldn't lift the {Bpl} because they were too {cue}.",
       {"A": SUBJECTS, "B": ("object", "furniture")},
       _because(lambda s, x: f"{_fr_subj(s, x, plural=True)} n'ont pas pu soulever {_fnp(s, x, 'B', plural=True)}",
                lambda s, x: f"{_de_subj(s, x, plural=True)} konnten {_dnp(s, x, 'B', 'acc', plural=True)} nicht heben"),
       cues=_cue_sets(PLURAL_WEAK, "heavy big large"), plural=True)
_frame("they_climb", "The {Apl} couldn't climb the {Bpl} because they were too {cue}.",
       {"A": SUBJECTS, "B": ("obstacle",)},
       _because(lambda s, x: f"{_fr_subj(s, x, plural=True)} n'ont pas pu escalader {_fnp(s, x, 'B', plural=True)}",
                lambda s, x: f"{_de_subj(s, x, plural=True)} konnten nicht auf {_dnp(s, x, 'B', 'acc', plural=True)} "
                             "klettern"),
       cues=_cue_sets(PLURAL_WEAK, "high steep slippery tall"), plural=True)
_frame("vehicle_cross", "The {A} couldn't cross the {B} because it was too {cue}.", {"A": ("vehicle",), "B": ("place",)},
       _because(lambda s, x: f"{_fr_subj(s, x)} n'a pas pu traverser {_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x)} konnte {_dnp(s, x, 'B', 'acc')} nicht überqueren"),
       cues=_cue_sets("heavy big large long", "narrow steep muddy icy deep"), cue_fits=True, poss=("A",))
CUTTERS = ("knife", "axe", "saw", "cleaver", "hatchet", "machete", "penknife", "pocketknife", "razor", "scalpel",
           "sickle", "chainsaw")
_frame("cut", "The {A} couldn't cut the {B} because it was too {cue}.", {"A": ("tool",), "B": ("object", "food")},
       _because(lambda s, x: f"{_fr_subj(s, x)} n'a pas pu couper {_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x)} konnte {_dnp(s, x, 'B', 'acc')} nicht schneiden"),
       cues=_cue_sets("small short", "thick hard big large"), cue_fits=True, poss=("A", "B"), only={"A": CUTTERS})
_frame("catch", "The {A} couldn't catch the {B} because it was too {cue}.", {"A": SUBJECTS, "B": ("animal",)},
       _because(lambda s, x: f"{_fr_subj(s, x)} n'a pas pu attraper {_fnp(s, x, 'B')}",
                lambda s, x: f"{_de_subj(s, x)} konnte {_dnp(s, x, 'B', 'acc')} nicht fangen"),
       cues=_cue_sets("slow tired old lazy weak sick fat injured", "fast clever"), poss=("A",), weight=2)


def _two_sentences():
    def fr(spec, lex, frame):
        role = _pron_role(frame, spec)
        noun = _n(spec, lex, role)
        adj = _fr_adj(_a(spec, lex, "cue"), noun.fr_g, False)
        return (f"{_fr_subj(spec, lex)} a vu {fr_np(_n(spec, lex, 'B'))}. "
                f"{_cap(_fr_pron(noun, False))} était {adj}.")

    def de(spec, lex, frame):
        role = _pron_role(frame, spec)
        noun = _n(spec, lex, role)
        return (f"{_de_subj(spec, lex)} sah {de_np(_n(spec, lex, 'B'), 'acc')}. "
                f"{_cap(_de_pron(noun, False))} war {_a(spec, lex, 'cue').de}.")
    return fr, de


_frame("two_sentences", "The {A} saw the {B}. It was {cue}.", {"A": ("animal",), "B": ("container", "vessel")},
       _two_sentences(), cues=_cue_sets("hungry tired thirsty scared sick", "empty full"), weight=2)


def _object_frame():
    """'The A sees the B near the C and VERBs it': the verb decides whether 'it' is B or C."""
    def verb_of(spec, lex):
        return lex.verbs[spec["cue"]]

    def fr(spec, lex, frame):
        role = _pron_role(frame, spec)
        v = verb_of(spec, lex)
        pron = FR_OBJ[_n(spec, lex, role).fr_g]
        return (f"{_fr_subj(spec, lex)} voit {fr_np(_n(spec, lex, 'B'))} à côté {fr_np(_n(spec, lex, 'C'), prep='de')} "
                f"et {pron} {v.fr_pres['3sg']}.")

    def de(spec, lex, frame):
        role = _pron_role(frame, spec)
        v = de_verb(verb_of(spec, lex), True)
        pron = DE_ACC[_n(spec, lex, role).de_g]
        sep = f" {v.de_sep}" if v.de_sep else ""
        return (f"{_de_subj(spec, lex)} sieht {de_np(_n(spec, lex, 'B'), 'acc')} neben "
                f"{de_np(_n(spec, lex, 'C'), 'dat')} und {v.de_pres['3sg']} {pron}{sep}.")
    return fr, de


_frame("object", "The {A} sees the {B} next to the {C} and {cue3sg} it.", {"A": ("animal",), "B": ("food",), "C": ("place",)},
       _object_frame(), cues={"B": ("eat", "smell", "bite"), "C": ("cross",)}, cue_kind="verb", obj_pronoun=True, weight=2)


def _bought():
    def fr(spec, lex, frame):
        p = _n(spec, lex, "P")
        b = _n(spec, lex, "B")
        adj = _fr_adj(_a(spec, lex, "cue"), b.fr_g, False)
        new = lex.adjectives["new"]
        return _fr_fix(f"{_cap(fr_np(p, 'my'))} a acheté {fr_np(b, 'indef', adj=new)} parce que "
                       f"{_fr_pron(b, False)} était {adj}.")

    def de(spec, lex, frame):
        p = _n(spec, lex, "P")
        b = _n(spec, lex, "B")
        new = lex.adjectives["new"]
        return (f"{_cap(de_np(p, 'nom', 'my'))} kaufte {de_np(b, 'acc', 'indef', adj=new)}, weil "
                f"{_de_pron(b, False)} {_a(spec, lex, 'cue').de} war.")
    return fr, de


_frame("bought", "My {P} bought a new {B} because it was {cue}.", {"P": ("person",), "B": ("object", "vehicle")},
       _bought(), cues={"B": ("cheap", "beautiful", "small", "light", "red", "blue")}, weight=2)


def _person_reason():
    def fr(spec, lex, frame):
        sex = lex.names[spec["name"]]
        v = lex.verbs[spec["verb"]]
        adj = _fr_adj(_a(spec, lex), sex, False)
        return _fr_fix(f"{spec['name']} est {adj} parce que {FR_SUBJ[(sex, False)]} a {v.fr_pp} "
                       f"{_fr_vp_obj(v, _n(spec, lex, 'B'))}.")

    def de(spec, lex, frame):
        sex = lex.names[spec["name"]]
        v = lex.verbs[spec["verb"]]
        return (f"{spec['name']} ist {_a(spec, lex).de}, weil {DE_SUBJ[sex]} "
                f"{_de_obj(v, _n(spec, lex, 'B'))} {v.de_pp} {'hat' if v.de_aux == 'haben' else 'ist'}.")
    return fr, de


def _fr_vp_obj(v: Verb, noun: Noun, det="def", plural=False) -> str:
    return fr_np(noun, det, plural, prep=v.fr_prep)


def _de_obj(v: Verb, noun: Noun, det="def", plural=False) -> str:
    case = "acc" if v.de_prep else (v.de_case or "acc")
    return de_np(noun, case, det, plural, prep=v.de_prep)


_frame("person_reason", "{name} is {adj} because {he} {verbpast} the {B}.", {"B": ("object", "food", "animal")},
       _person_reason(), weight=1)


# ---- frames without a back-reference -------------------------------------------------------

def _copula(fr_verb, de_verb, de_tail=""):
    def fr(spec, lex, frame):
        noun = _n(spec, lex, "A")
        plural = frame.plural
        return _fr_fix(f"{_cap(fr_np(noun, spec.get('det', 'def'), plural))} {fr_verb[plural]} "
                       f"{_fr_adj(_a(spec, lex), noun.fr_g, plural)}.")

    def de(spec, lex, frame):
        noun = _n(spec, lex, "A")
        plural = frame.plural
        tail = f" {de_tail}" if de_tail else ""
        return f"{_cap(de_np(noun, 'nom', spec.get('det', 'def'), plural))} {de_verb[plural]} {_a(spec, lex).de}{tail}."
    return fr, de


_ANY = ("animal", "person", "object", "place", "food", "vehicle", "building", "furniture", "container", "plant",
        "obstacle")
_frame("is", "The {A} is {adj}.", {"A": _ANY}, _copula(("est", "sont"), ("ist", "sind")), weight=2)
_frame("was", "The {A} was {adj}.", {"A": _ANY}, _copula(("était", "étaient"), ("war", "waren")))
_frame("is_not", "The {A} is not {adj}.", {"A": _ANY}, _copula(("n'est pas", "ne sont pas"), ("ist nicht", "sind nicht")))
_frame("will_be", "The {A} will be {adj}.", {"A": _ANY}, _copula(("sera", "seront"), ("wird", "werden"), "sein"))
_frame("are", "The {Apl} are {adj}.", {"A": _ANY}, _copula(("est", "sont"), ("ist", "sind")), plural=True)
_frame("my_is", "My {A} is {adj}.", {"A": ("animal", "object", "vehicle", "food", "furniture", "container")},
       (lambda s, x, f: _fr_fix(f"{_cap(fr_np(_n(s, x, 'A'), 'my'))} est {_fr_adj(_a(s, x), _n(s, x, 'A').fr_g, False)}."),
        lambda s, x, f: f"{_cap(de_np(_n(s, x, 'A'), 'nom', 'my'))} ist {_a(s, x).de}."))
_frame("i_am", "I am {adj}.", {}, (lambda s, x, f: _fr_fix(f"Je suis {_fr_adj(_a(s, x), 'm', False)}."),
                                    lambda s, x, f: f"Ich bin {_a(s, x).de}."), weight=2)
_frame("i_was", "I was {adj}.", {}, (lambda s, x, f: _fr_fix(f"J'étais {_fr_adj(_a(s, x), 'm', False)}."),
                                     lambda s, x, f: f"Ich war {_a(s, x).de}."))
_frame("question_is", "Is the {A} {adj}?", {"A": _ANY},
       (lambda s, x, f: _fr_fix(f"Est-ce que {fr_np(_n(s, x, 'A'))} est {_fr_adj(_a(s, x), _n(s, x, 'A').fr_g, False)} ?"),
        lambda s, x, f: f"Ist {de_np(_n(s, x, 'A'))} {_a(s, x).de}?"))
_frame("question_where", "Where is the {A}?", {"A": ("animal", "object", "vehicle", "food", "container", "building")},
       (lambda s, x, f: f"Où est {fr_np(_n(s, x, 'A'))} ?", lambda s, x, f: f"Wo ist {de_np(_n(s, x, 'A'))}?"))

_PLACE_PREPS = {  # English -> (French (takes "de"?), German, German case)
    "on": ("sur", "auf"), "under": ("sous", "unter"), "next to": ("à côté de", "neben"),
    "behind": ("derrière", "hinter"), "in front of": ("devant", "vor"),
}


def _location():
    def fr(spec, lex, frame):
        prep = _PLACE_PREPS[spec["prep"]][0]
        b = _n(spec, lex, "B")
        tail = f"à côté {fr_np(b, prep='de')}" if prep == "à côté de" else f"{prep} {fr_np(b)}"
        return f"{_fr_subj(spec, lex)} est {tail}."

    def de(spec, lex, frame):
        prep = _PLACE_PREPS[spec["prep"]][1]
        return f"{_de_subj(spec, lex)} ist {de_np(_n(spec, lex, 'B'), 'dat', prep=prep)}."
    return fr, de


_frame("location", "The {A} is {prep} the {B}.", {"A": ("animal", "object", "food"), "B": ("furniture", "container",
                                                                                            "vehicle", "building")},
       _location(), weight=2)


def _there_is():
    def fr(spec, lex, frame):
        return f"Il y a {fr_np(_n(spec, lex, 'A'), 'indef')} dans {fr_np(_n(spec, lex, 'B'))}."

    def de(spec, lex, frame):
        return f"{_cap(de_np(_n(spec, lex, 'B'), 'dat', prep='in'))} ist {de_np(_n(spec, lex, 'A'), 'nom', 'indef')}."
    return fr, de


_frame("there_is", "There is {aA} in the {B}.", {"A": ("animal", "object", "food"), "B": ("container", "building",
                                                                                           "vehicle")},
       _there_is(), weight=2)


def _count(verb_fr, verb_de):
    def fr(spec, lex, frame):
        n = lex.numbers[int(spec["num"])][1]
        return _fr_fix(f"{verb_fr} {n} {_n(spec, lex, 'A').fr_pl}.")

    def de(spec, lex, frame):
        n = lex.numbers[int(spec["num"])][2]
        return f"{verb_de} {n} {_n(spec, lex, 'A').de_pl}."
    return fr, de


_frame("have_num", "I have {num} {Apl}.", {"A": ("animal", "object", "food", "vehicle", "container")},
       _count("J'ai", "Ich habe"))
_frame("see_num", "I see {num} {Apl}.", {"A": ("animal", "object", "food", "vehicle", "building")},
       _count("Je vois", "Ich sehe"))


def _mass(noun: Noun) -> bool:
    """A drink, or a noun without a plural in any of the three languages (barley, rice): liked in the singular."""
    return "drink" in noun.classes or (noun.en_pl, noun.fr_pl, noun.de_pl) == (noun.en, noun.fr, noun.de)


def _like():
    def fr(spec, lex, frame):
        a = _n(spec, lex, "A")
        return f"J'aime {fr_np(a, plural=not _mass(a))}."

    def de(spec, lex, frame):
        a = _n(spec, lex, "A")
        return f"Ich mag {a.de if _mass(a) else a.de_pl}."
    return fr, de


_frame("like", "I like {Aplmass}.", {"A": ("animal", "food", "drink", "plant", "vehicle")}, _like(), weight=2)


def _saw_adj():
    def fr(spec, lex, frame):
        return f"J'ai vu {fr_np(_n(spec, lex, 'A'), 'indef', adj=_a(spec, lex))}."

    def de(spec, lex, frame):
        return f"Ich sah {de_np(_n(spec, lex, 'A'), 'acc', 'indef', adj=_a(spec, lex))}."
    return fr, de


_frame("saw_adj", "I saw {a_adj} {A}.", {"A": ("animal", "object", "vehicle", "building", "food", "plant")},
       _saw_adj(), weight=2)


def _relative_subject():
    def fr(spec, lex, frame):
        a = _n(spec, lex, "A")
        v = lex.verbs[spec["verb"]]
        return _fr_fix(f"{_fr_subj(spec, lex)} qui a {v.fr_pp} {_fr_vp_obj(v, _n(spec, lex, 'B'))} était "
                       f"{_fr_adj(_a(spec, lex), a.fr_g, False)}.")

    def de(spec, lex, frame):
        a = _n(spec, lex, "A")
        v = de_verb(lex.verbs[spec["verb"]], True)
        rel = _DE_ART["def"]["nom"][_GI[a.de_g]]
        verb = de_verb_final(v, "3sg")
        return f"{_de_subj(spec, lex)}, {rel} {_de_obj(v, _n(spec, lex, 'B'))} {verb}, war {_a(spec, lex).de}."
    return fr, de


_frame("relative_subject", "The {A} that {verbpast} the {B} was {adj}.", {"A": ("animal",)}, _relative_subject(),
       verb_need="transitive", weight=2)


def _relative_object():
    def fr(spec, lex, frame):
        b = _n(spec, lex, "B")
        v = lex.verbs[spec["verb"]]
        pp = v.fr_pp + ("e" if b.fr_g == "f" and not v.fr_pp.endswith("e") else "")
        return _fr_fix(f"{_cap(fr_np(b))} que j'ai {pp} était {_fr_adj(_a(spec, lex), b.fr_g, False)}.")

    def de(spec, lex, frame):
        b = _n(spec, lex, "B")
        v = lex.verbs[spec["verb"]]
        rel = _DE_ART["def"]["acc"][_GI[b.de_g]]
        verb = de_verb_final(v, "1sg")
        return f"{_cap(de_np(b, 'nom'))}, {rel} ich {verb}, war {_a(spec, lex).de}."
    return fr, de


_frame("relative_object", "The {B} that I {verbpast} was {adj}.", {}, _relative_object(), verb_need="direct", weight=2)


def _svo_clauses(tense: str, plural: bool = False):
    """'The A VERBed the B' in one tense (past, present, negated past, future, question, name subject, I) as
    French and German clause renderers ``(spec, lex) -> str``, capitalised, without the final mark. ``plural``:
    both nouns in the plural ("The customers didn't buy the apples"); either noun may be the speaker's ("my")."""
    p3 = "3pl" if plural else "3sg"

    def subj_fr(spec, lex):
        if spec.get("name"):
            return spec["name"]
        if tense == "i_past":
            return "je"
        return _fnp(spec, lex, "A", plural=plural)

    def fr(spec, lex):
        v = lex.verbs[spec["verb"]]
        obj = _fr_vp_obj(v, _n(spec, lex, "B"), _det(spec, "B"), plural)
        s = subj_fr(spec, lex)
        aux = "ai" if tense == "i_past" else "ont" if plural else "a"
        if tense in ("past", "name", "i_past"):
            out = f"{s} {aux} {v.fr_pp} {obj}"
        elif tense == "present":
            out = f"{s} {v.fr_pres[p3]} {obj}"
        elif tense == "neg":
            out = f"{s} ne {aux} pas {v.fr_pp} {obj}"
        elif tense == "future":
            out = f"{s} {v.fr_fut[p3]} {obj}"
        else:  # question
            out = f"Est-ce que {s} {aux} {v.fr_pp} {obj}"
        return _cap(out)

    def de(spec, lex):
        v = de_verb(lex.verbs[spec["verb"]], bool(spec.get("A")) and "animal" in _n(spec, lex, "A").classes)
        obj = _de_obj(v, _n(spec, lex, "B"), _det(spec, "B"), plural)
        if spec.get("name"):
            s = spec["name"]
        elif tense == "i_past":
            s = "ich"
        else:
            s = _dnp(spec, lex, "A", "nom", plural=plural)
        sep = f" {v.de_sep}" if v.de_sep else ""
        person = "1sg" if tense == "i_past" else p3
        if tense in ("past", "name", "i_past"):
            out = f"{s} {v.de_past[person]} {obj}{sep}"
        elif tense == "present":
            out = f"{s} {v.de_pres[person]} {obj}{sep}"
        elif tense == "neg":
            out = (f"{s} {v.de_past[person]} nicht {obj}{sep}" if v.de_prep
                   else f"{s} {v.de_past[person]} {obj} nicht{sep}")
        elif tense == "future":
            out = f"{s} {'werden' if plural else 'wird'} {obj} {v.de_inf}"
        else:
            out = f"{v.de_past[person]} {s} {obj}{sep}"
        return _cap(out)
    return fr, de


def _svo(tense: str):
    """'The A VERBed the B.' as a whole sentence (a question ends in ? / « ? »)."""
    fr, de = _svo_clauses(tense)
    fr_mark, de_mark = (" ?", "?") if tense == "question" else (".", ".")
    return (lambda spec, lex, frame: _fr_fix(fr(spec, lex) + fr_mark),
            lambda spec, lex, frame: de(spec, lex) + de_mark)


_SUBJ = ("animal", "person")
_frame("svo_past", "The {A} {verbpast} the {B}.", {"A": _SUBJ}, _svo("past"), verb_need="transitive", weight=3)
_frame("svo_present", "The {A} {verb3sg} the {B}.", {"A": _SUBJ}, _svo("present"), verb_need="transitive", weight=2)
_frame("svo_neg", "The {A} didn't {verb} the {B}.", {"A": _SUBJ}, _svo("neg"), verb_need="transitive", weight=2)
_frame("svo_future", "The {A} will {verb} the {B}.", {"A": _SUBJ}, _svo("future"), verb_need="transitive", weight=2)
_frame("svo_question", "Did the {A} {verb} the {B}?", {"A": _SUBJ}, _svo("question"), verb_need="transitive")
_frame("name_past", "{name} {verbpast} the {B}.", {}, _svo("name"), verb_need="transitive", weight=2)
_frame("i_past", "I {verbpast} the {B}.", {}, _svo("i_past"), verb_need="transitive", weight=2)


_BECAUSE_CUES = _cue_sets("tired sick lazy weak scared sleepy poor injured",
                          "hot cold hard expensive fragile rotten salty sour bitter stale sharp dusty complicated thick"
                          " smooth broken")
_frame("svo_because", "The {A} didn't {verb} the {B} because it was too {cue}.",
       {"A": SUBJECTS, "B": ("object", "food", "drink", "container", "vessel", "clothing", "tool", "furniture",
                                "instrument")},
       _because(*_svo_clauses("neg")), cues=_BECAUSE_CUES, verb_need="pick", cue_fits=True, poss=("A", "B"), weight=3)
_frame("they_because", "The {Apl} didn't {verb} the {Bpl} because they were too {cue}.",
       {"A": SUBJECTS, "B": ("object", "food", "clothing", "tool", "furniture", "instrument", "container", "vessel")},
       _because(*_svo_clauses("neg", plural=True)), cues=_BECAUSE_CUES, verb_need="pick", cue_fits=True, plural=True,
       weight=2)


# One plural noun and "they": nothing to decide, but the French pronoun is the noun's plural gender (ils / elles),
# which a noun otherwise shows mostly in the two-noun "they" frames. French only: German plural "sie" is the same for
# every gender, so these sentences would teach en-de nothing its corpus lacks. Kept last in FRAMES_LIST, so the frames
# before them draw exactly the same specs in a language they are off for.
_BUYABLE = ("object", "food", "clothing", "tool", "furniture", "instrument", "container", "vessel", "vehicle", "plant")
_frame("they_bought", "I bought the {Bpl} because they were {cue}.", {"B": _BUYABLE},
       _because(lambda s, x: f"J'ai acheté {_fnp(s, x, 'B', plural=True)}",
                lambda s, x: f"Ich kaufte {_dnp(s, x, 'B', 'acc', plural=True)}", fr_deg="", de_deg=""),
       cues={"B": ("cheap", "beautiful", "small", "light", "red", "blue", "new", "useful", "fresh")}, cue_fits=True,
       plural=True, langs=("fr",))
_frame("they_not_bought", "I didn't buy the {Bpl} because they were too {cue}.", {"B": _BUYABLE},
       _because(lambda s, x: f"Je n'ai pas acheté {_fnp(s, x, 'B', plural=True)}",
                lambda s, x: f"Ich kaufte {_dnp(s, x, 'B', 'acc', plural=True)} nicht"),
       cues={"B": ("expensive", "heavy", "big", "small", "old", "rotten", "stale", "salty", "sour")}, cue_fits=True,
       plural=True, langs=("fr",))

FRAMES: dict[str, Frame] = {f.name: f for f in FRAMES_LIST}
COREF_FRAMES = tuple(f.name for f in FRAMES_LIST if f.cues and len(f.cues) == 2)


def frame_names(lang: str | None = None) -> tuple[str, ...]:
    """The names of every sentence frame (or of those ``lang``'s corpus samples), in definition order."""
    return tuple(name for name, f in FRAMES.items() if lang is None or lang in f.langs)


# --------------------------------------------------------------------------------------------
# English rendering
# --------------------------------------------------------------------------------------------

def _verb_forms(v: Verb) -> dict:
    # a phrasal English verb ("pick up") splits around nothing here: the object follows the whole verb
    return {"verb": v.en, "verb3sg": v.en_3sg, "verbpast": v.en_past}


def render_en(spec: Spec, lex: Lexicon | None = None) -> str:
    """The English sentence of ``spec``: its frame's template filled from the lexicon, first letter capitalised."""
    lex = lex or lexicon()
    frame = FRAMES[spec.frame]
    d = dict(spec.slots)
    en = frame.en
    if d.get("deg") == "plain":
        en = en.replace(_GRADED, "{cue}")
    if d.get("my"):
        en = _the_noun(d["my"]).sub(r"my \1", en)
    if frame.cues and (pron := _en_pronoun(frame, spec, lex)) in ("he", "she"):
        en = _PERSON_IT.sub(rf"\1 {pron}", en, count=1)
    values = {}
    for slot in ("A", "B", "C", "P", "L"):
        if slot in d:
            noun = lex.nouns[d[slot]]
            values[slot] = noun.en
            values[slot + "pl"] = noun.en_pl
            values["a" + slot] = _en_a(noun.en)
            values[slot + "plmass"] = noun.en if _mass(noun) else noun.en_pl
    if "cue" in d:
        if frame.cue_kind == "verb":
            v = lex.verbs[d["cue"]]
            values.update(cue=v.en, cue3sg=v.en_3sg)
        else:
            values["cue"] = d["cue"]
    if "adj" in d:
        values["adj"] = d["adj"]
        values["a_adj"] = _en_a(d["adj"])
    if "verb" in d:
        values.update(_verb_forms(lex.verbs[d["verb"]]))
    if "name" in d:
        values["name"] = d["name"]
        values["he"] = "he" if lex.names[d["name"]] == "m" else "she"
    if "num" in d:
        values["num"] = lex.numbers[int(d["num"])][0]
    if "prep" in d:
        values["prep"] = d["prep"]
    return _cap(en.format(**values))


# --------------------------------------------------------------------------------------------
# Sampling specs
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pair:
    """One English sentence with its translation and coreference labels (same fields as the tiny corpus)."""
    src: str
    tgt: str
    lang: str
    frame: str
    pronoun_index: int | None
    antecedent: str | None
    candidates: tuple[str, ...]
    tgt_pronoun: str | None
    combo: tuple
    spec: Spec | None = None


def _h(*parts) -> float:
    digest = hashlib.sha256("|".join((_SALT,) + tuple(str(p) for p in parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0 ** 64


@lru_cache(maxsize=1)
def heldout_nouns() -> frozenset[str]:
    """Nouns kept out of every coreference frame of the training split (6 % of those that fill a role)."""
    lex = lexicon()
    role_classes = {c for f in FRAMES_LIST if f.cues for cs in f.roles.values() for c in cs}
    pinned = {"animal", "street", "trophy", "suitcase", "car", "dog", "cat", "ball", "box", "bag", "cup", "bottle"}
    return frozenset(n for n, noun in lex.nouns.items()
                     if set(noun.classes) & role_classes and n not in pinned and _h("heldout-noun", n) < _HELDOUT_NOUN_SHARE)


def _pool(lex: Lexicon, classes) -> tuple[str, ...]:
    out: list[str] = []
    for c in classes:
        out += lex.by_class.get(c, ())
    return tuple(dict.fromkeys(out))


@lru_cache(maxsize=None)
def _pools(frame_name: str) -> dict:
    lex = lexicon()
    frame = FRAMES[frame_name]
    pools = {slot: _pool(lex, classes) for slot, classes in frame.roles.items()}
    for slot, nouns in (frame.only or {}).items():
        pools[slot] = tuple(n for n in pools[slot] if n in nouns)
    if frame.verb_need:
        verbs = [v for v in lex.verbs.values() if v.fr_aux == "avoir" and v.fr_pp and v.de_past.get("3sg")]
        if frame.verb_need in ("direct", "pick"):
            verbs = [v for v in verbs if not v.fr_prep and not v.de_prep and v.de_case == "acc"]
        if frame.name.startswith("relative_subject"):
            verbs = [v for v in verbs if "animal" in v.subj]
        pools["verb"] = tuple(v.en for v in verbs)
    if frame.cues:
        if frame.cue_kind == "adj":
            pools["cue"] = {role: tuple(c for c in cues if c in lex.adjectives) for role, cues in frame.cues.items()}
        else:
            pools["cue"] = {role: tuple(c for c in cues if c in lex.verbs) for role, cues in frame.cues.items()}
    return pools


def _adj_for(lex: Lexicon, noun: Noun, rng: random.Random) -> str:
    fitting = _adjs_by_class(tuple(noun.classes))
    return rng.choice(fitting)


@lru_cache(maxsize=None)
def _adjs_by_class(classes: tuple[str, ...]) -> tuple[str, ...]:
    lex = lexicon()
    return tuple(a for a, adj in lex.adjectives.items() if set(adj.applies) & set(classes)) or tuple(lex.adjectives)


def _sample_spec(frame: Frame, rng: random.Random, lex: Lexicon, coref_pool=None) -> Spec | None:
    pools = _pools(frame.name)
    slots: dict[str, str] = {}
    for slot in frame.roles:
        pool = pools[slot]
        if coref_pool is not None and frame.cues:
            pool = coref_pool(slot, pool)
        if not pool:
            return None
        slots[slot] = rng.choice(pool)
    if len({v for k, v in slots.items() if k in "ABC"}) < len([k for k in slots if k in "ABC"]):
        return None  # two roles filled by the same noun
    if frame.cues:
        role = rng.choice(sorted(pools["cue"]))
        options = pools["cue"][role]
        if frame.cue_fits:
            fits = set(lex.nouns[slots[role]].classes)
            options = tuple(c for c in options if set(lex.adjectives[c].applies) & fits)
        if not options:
            return None
        slots["cue"] = rng.choice(options)
    if frame.verb_need == "pick":
        b, a = lex.nouns[slots["B"]], lex.nouns[slots["A"]]
        verbs = [v for v in pools["verb"] if set(lex.verbs[v].obj) & set(b.classes) and set(lex.verbs[v].subj) & set(a.classes)]
        if not verbs:
            return None
        slots["verb"] = rng.choice(verbs)
    elif frame.verb_need:
        verb = lex.verbs[rng.choice(pools["verb"])]
        slots["verb"] = verb.en
        subj_classes = set(verb.subj)
        if "A" in frame.roles and not subj_classes & set(lex.nouns[slots["A"]].classes):
            return None
        objs = _pool(lex, verb.obj)
        if not objs:
            return None
        slots["B"] = rng.choice(objs)
    if "{adj}" in frame.en or "{a_adj}" in frame.en:
        target = slots.get("A") or slots.get("B")
        if target:
            slots["adj"] = _adj_for(lex, lex.nouns[target], rng)
        else:  # "I am {adj}.": the speaker is a person
            slots["adj"] = rng.choice(_adjs_by_class(("person",)))
    if "{L}" in frame.en:  # the liquid poured
        slots["L"] = rng.choice([n for n in _pool(lex, ("drink",)) if _mass(lex.nouns[n])])
    if "{name}" in frame.en:
        slots["name"] = rng.choice(sorted(lex.names))
        if frame.name == "person_reason":
            verbs = [v for v in lex.verbs.values() if v.fr_aux == "avoir" and not v.fr_prep and not v.de_prep
                     and v.de_case == "acc" and set(v.obj) & set(lex.nouns[slots["B"]].classes)]
            if not verbs:
                return None
            slots["verb"] = rng.choice(verbs).en
            slots["adj"] = rng.choice([a for a in ("happy", "sad", "angry", "tired", "proud") if a in lex.adjectives])
    if "{num}" in frame.en:
        slots["num"] = str(rng.choice([n for n in lex.numbers if 2 <= n <= 20]))
    if "{prep}" in frame.en:
        slots["prep"] = rng.choice(sorted(_PLACE_PREPS))
    if frame.name == "bought" and not lex.nouns[slots["P"]].sex:
        return None
    if frame.plural and any(_mass(lex.nouns[slots[r]]) for r in frame.roles):
        return None  # "they" needs countable nouns
    person = _person_referent(frame, slots, lex) if frame.cues else None
    if person is not None and not person.sex:
        return None  # "he" or "she"? (a person is never "it")
    if _GRADED in frame.en and (slots.get("cue") in _NO_TOO or rng.random() < _PLAIN_SHARE):
        slots["deg"] = "plain"
    if frame.poss and rng.random() < _MY_SHARE:
        slots["my"] = rng.choice(frame.poss)
    return Spec(frame.name, tuple(sorted(slots.items())))


def _antecedent(spec: Spec) -> str | None:
    frame = FRAMES[spec.frame]
    role = _pron_role(frame, spec)
    return spec[role] if role else None


def _combo(spec: Spec) -> tuple:
    noun = _antecedent(spec) or spec.get("A") or spec.get("B") or spec.get("name")
    cue = spec.get("cue") or spec.get("adj") or spec.get("verb") or ""
    return (noun, cue, spec.frame)


def _split_of(spec: Spec) -> str:
    frame = FRAMES[spec.frame]
    if frame.cues and any(spec.get(s) in heldout_nouns() for s in frame.roles):
        return "heldout"
    h = _h(*_combo(spec))
    return "test" if h < _TEST_SHARE else "valid" if h < _TEST_SHARE + _VALID_SHARE else "train"


_FRAME_SEEDS = {"train": 11, "valid": 12, "test": 13, "heldout": 14}


def _check_release(release: int) -> None:
    if release not in GENERATED_RELEASES:
        raise ValueError(f"unknown release {release!r} of the generated corpus; expected one of {GENERATED_RELEASES}")


def _specs(split: str, size: int | None, lang: str, release: int = 1) -> tuple[Spec, ...]:
    """The distinct specs of ``split`` in ``lang``'s corpus, deterministic: release 1, ``size`` of them sampled from
    all frames at once by weight; release 2, every frame's own (:func:`_per_frame_specs`), the first ``size`` of them
    (``None``: all)."""
    _check_release(release)
    if release == 2:
        return _per_frame_specs(split, size, lang)
    return _joint_specs(split, size if size is not None else TRAIN_SIZE if split == "train" else EVAL_SIZE, lang)


def _quotas(split: str, lang: str) -> dict[str, int]:
    """Release 2: how many sentences each of ``lang``'s frames gives ``split`` — its weight times the split's fixed
    :data:`_PER_WEIGHT`, never a share of the others' total."""
    return {f.name: max(1, round(f.weight * _PER_WEIGHT[split])) for f in FRAMES_LIST
            if lang in f.langs and f.weight > 0 and (split != "heldout" or f.cues)}


def _draw_distinct(split: str, count: int, rng: random.Random, pick) -> tuple[Spec, ...]:
    """Up to ``count`` distinct specs of ``split``: each draw's frame from ``pick(rng)``, then (held-out split) the
    role that takes a held-out noun, then the slots, all from ``rng``; at most 60 draws per spec asked for."""
    lex = lexicon()
    held = heldout_nouns() if split == "heldout" else None
    out: dict[Spec, None] = {}
    tries = 0
    while len(out) < count and tries < count * 60:
        tries += 1
        frame = pick(rng)
        pool_filter = None
        if held is not None:
            slot_of = rng.choice(sorted(frame.roles))

            def pool_filter(slot, pool, _slot=slot_of):
                return tuple(n for n in pool if n in held) if slot == _slot else pool
        spec = _sample_spec(frame, rng, lex, pool_filter)
        if spec is None or spec in out or _split_of(spec) != split:
            continue
        out[spec] = None
    return tuple(out)


@lru_cache(maxsize=512)
def _frame_specs(split: str, name: str, count: int) -> tuple[Spec, ...]:
    """Release 2: up to ``count`` distinct specs of frame ``name`` in ``split``, from the frame's own seed; a smaller
    ``count`` gives a prefix of a larger one's."""
    frame = FRAMES[name]
    return _draw_distinct(split, count, random.Random(f"{_SALT}/release-2/{split}/{name}"), lambda rng: frame)


@lru_cache(maxsize=16)
def _per_frame_specs(split: str, size: int | None, lang: str) -> tuple[Spec, ...]:
    """Release 2's split: frame f's j-th sentence sits at (j + ½) / quota_f of the way through it, so every frame is
    spread evenly and the first ``size`` positions are known before anything is sampled (a prefix costs a fraction
    of the whole: the start of every frame's own stream, in the whole split's order); a frame that runs out of
    distinct sentences leaves its later positions empty."""
    quotas = _quotas(split, lang)
    slots = sorted(((j + 0.5) / q, name, j) for name, q in quotas.items() for j in range(q))
    if size is not None:
        slots = slots[:size]
    need = collections.Counter(name for _, name, _ in slots)
    streams = {name: _frame_specs(split, name, need[name]) for name in need}
    return tuple(streams[name][j] for _, name, j in slots if j < len(streams[name]))


@lru_cache(maxsize=16)
def _joint_specs(split: str, size: int, lang: str) -> tuple[Spec, ...]:
    """Release 1: ``size`` distinct specs of ``split`` in ``lang``'s corpus, each draw's frame chosen by weight from
    one stream per split."""
    frames = [f for f in FRAMES_LIST if f.cues] if split == "heldout" else FRAMES_LIST
    weights = [f.weight if lang in f.langs else 0.0 for f in frames]
    return _draw_distinct(split, size, random.Random(_FRAME_SEEDS[split]), lambda rng: rng.choices(frames, weights)[0])


def _target_pronoun(spec: Spec, lang: str, lex: Lexicon) -> str | None:
    frame = FRAMES[spec.frame]
    role = _pron_role(frame, spec)
    if role is None:
        return None
    noun = lex.nouns[spec[role]]
    if frame.obj_pronoun:
        return FR_OBJ[noun.fr_g] if lang == "fr" else DE_ACC[noun.de_g]
    return _fr_pron(noun, frame.plural) if lang == "fr" else _de_pron(noun, frame.plural)


CONTRACTIONS = {"didn't": "did not", "doesn't": "does not", "couldn't": "could not", "don't": "do not"}
_EXPANDED_SHARE = 0.25  # of sentences with a contraction, written out in full ("could not") in the source


def _written_out(src: str) -> str:
    """``src`` with its contractions spelled out, for a fixed quarter of the sentences that have one, so a model
    reads both spellings (the translation is the same)."""
    if "'t " not in src or _h("written-out", src) >= _EXPANDED_SHARE:
        return src
    for short, long in CONTRACTIONS.items():
        src = src.replace(short, long).replace(short.capitalize(), long.capitalize())
    return src


def make_pair(spec: Spec, lang: str, contracted: bool = False) -> Pair:
    """The :class:`Pair` of ``spec`` in ``lang`` (``"fr"`` / ``"de"``): English source, translation, pronoun
    index, antecedent, candidate nouns and the target pronoun. ``contracted``: keep the template's contractions
    (the probe pairs, whose two sentences must differ in the cue alone) instead of the corpus's spelling."""
    lex = lexicon()
    frame = FRAMES[spec.frame]
    src = render_en(spec, lex) if contracted else _written_out(render_en(spec, lex))
    tgt = (frame.fr if lang == "fr" else frame.de)(spec, lex, frame)
    src_words = [w.lower() for w in words(src)]
    pron = _en_pronoun(frame, spec, lex) if frame.cues else "it"
    candidates = tuple(lex.nouns[spec[s]].en for s in ("A", "B", "C", "P") if spec.get(s))
    return Pair(src, tgt, lang, spec.frame, src_words.index(pron) if frame.cues and pron in src_words else None,
                _antecedent(spec), candidates, _target_pronoun(spec, lang, lex), _combo(spec), spec)


def _check_lang(lang):
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}; expected one of {LANGS}")


@lru_cache(maxsize=16)
def _pairs(lang: str, split: str, release: int = 1) -> tuple[Pair, ...]:
    return tuple(make_pair(s, lang) for s in _specs(split, None, lang, release))


def generate(lang: str, split: str, n: int | None = None, seed: int = 0, first: int | None = None,
             release: int = 1) -> list[Pair]:
    """Pairs of ``split`` (train / valid / test / heldout) in ``lang``: all (shuffled by ``seed``) or a sample of ``n``.
    ``first``: only the split's first ``first`` sentences in sampling order — a prefix of the whole split (release 2:
    up to ``first``, the start of every frame's own stream), built in a fraction of its time (the split's 300,000
    training sentences take about a minute per language). ``release``: how the frames are drawn
    (:data:`GENERATED_RELEASES`; 1, the shipped translators' corpus, by default)."""
    _check_lang(lang)
    _check_release(release)
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    size = TRAIN_SIZE if split == "train" else EVAL_SIZE
    pairs = list(_pairs(lang, split, release) if first is None or (release == 1 and first >= size)
                 else (make_pair(s, lang) for s in _specs(split, first, lang, release)))
    rng = random.Random(seed)
    if n is None or n >= len(pairs):
        rng.shuffle(pairs)
        return pairs
    return rng.sample(pairs, n)


class Drawn:
    """The broad corpus as a given release draws it (:data:`GENERATED_RELEASES`): a :class:`core.data.Corpus` whose
    ``generate``, ``probe_pairs`` and ``english_sentences`` read that release; everything else (the grammar, the
    lexicon, ``pair_for``, ``pronoun_of``...) is this module's own, which does not depend on how splits are drawn."""

    def __init__(self, release: int):
        _check_release(release)
        self.release = release

    def __repr__(self) -> str:
        return f"core.data.broad release {self.release}"

    def generate(self, lang: str, split: str, n: int | None = None, seed: int = 0,
                 first: int | None = None) -> list[Pair]:
        """:func:`generate` of this release."""
        return generate(lang, split, n, seed, first, self.release)

    def probe_pairs(self, lang: str = "fr", n: int = 120) -> list[tuple[Pair, Pair]]:
        """:func:`probe_pairs` of this release."""
        return probe_pairs(lang, n, self.release)

    def english_sentences(self, split: str = "train", lang: str | None = None) -> tuple[str, ...]:
        """:func:`english_sentences` of this release."""
        return english_sentences(split, lang, self.release)

    def __getattr__(self, name: str):  # only for names the instance lacks: the module's own
        try:
            return globals()[name]
        except KeyError:
            raise AttributeError(f"core.data.broad has no {name!r}") from None


def english_sentences(split: str = "train", lang: str | None = None, release: int = 1) -> tuple[str, ...]:
    """The English side of every sentence of ``split`` in ``lang``'s corpus (the specs :func:`generate` translates,
    in spec order); without ``lang``, of every language's, each sentence once."""
    specs = dict.fromkeys(s for one in ((lang,) if lang else LANGS) for s in _specs(split, None, one, release))
    return tuple(render_en(s) for s in specs)


# --------------------------------------------------------------------------------------------
# Probes, pronouns, parsing
# --------------------------------------------------------------------------------------------

SEED_PAIR = (("cross", (("A", "animal"), ("B", "street"), ("cue", "tired"))),
             ("cross", (("A", "animal"), ("B", "street"), ("cue", "wide"))))


@lru_cache(maxsize=4)
def probe_pairs(lang: str = "fr", n: int = 120, release: int = 1) -> list[tuple[Pair, Pair]]:
    """Minimal pairs from the test split (of ``release``): the same sentence with the cue flipped from one role to the
    other, where the right pronouns in ``lang`` differ (German plural *sie* never does). The seed pair
    ("The animal didn't cross the street because it was too tired / wide.") comes first."""
    _check_lang(lang)
    lex = lexicon()
    out = [tuple(make_pair(Spec(f, tuple(sorted(s))), lang, contracted=True) for f, s in SEED_PAIR)]
    seen = {out[0][0].spec}
    for spec in _specs("test", None, lang, release):
        if spec in seen:
            continue
        twin = _twin(spec, lang, lex)
        if twin is None or _split_of(twin) != "test":
            continue
        seen.add(spec)
        out.append((make_pair(spec, lang, contracted=True), make_pair(twin, lang, contracted=True)))
        if len(out) >= n:
            break
    return out


def _twin(spec: Spec, lang: str, lex) -> Spec | None:
    """``spec`` with its cue word flipped to the other noun's role — the other half of a minimal pair — or None
    when the frame has no cue, no cue fits, or the pair would not differ in ``lang``'s pronoun (German plural *sie*)
    or would differ in the English one ("he" against "it")."""
    frame = FRAMES[spec.frame]
    if spec.frame not in COREF_FRAMES:
        return None
    role = _pron_role(frame, spec)
    other = next(r for r in frame.cues if r != role)
    cues = [c for c in _pools(spec.frame)["cue"][other]
            if not frame.cue_fits or set(lex.adjectives[c].applies) & set(lex.nouns[spec[other]].classes)]
    if not cues:
        return None
    cue = cues[int(_h("probe", spec) * len(cues))]
    twin = Spec(spec.frame, tuple(sorted(dict(spec.slots, cue=cue).items())))
    if (_target_pronoun(spec, lang, lex) == _target_pronoun(twin, lang, lex)
            or _en_pronoun(frame, spec, lex) != _en_pronoun(frame, twin, lex)):
        return None
    return twin


def minimal_pair(sentence: str, lang: str) -> tuple[Pair, Pair] | None:
    """``sentence`` (any in-grammar coreference sentence, typed by a user) and its minimal twin — the same sentence
    with the cue word flipped so that "it" names the other noun — or None when the grammar does not parse it or
    it has no such twin."""
    _check_lang(lang)
    try:
        spec = parse(sentence)
    except (ValueError, KeyError):
        return None
    twin = _twin(spec, lang, lexicon())
    return None if twin is None else (make_pair(spec, lang, contracted=True), make_pair(twin, lang, contracted=True))


def cue_decides(sentence: str) -> bool | None:
    """Whether the cue word of a coreference sentence of the grammar settles which noun "it" names by word meaning
    alone: the adjective describes the kind of the noun "it" stands for and not the other noun's kind, by the
    lexicon's classes ("too tired": an animal, not a street), so no knowledge of the world beyond the words is needed
    ("The spider couldn't catch the swordfish because it was too lazy" names either animal). None: not a
    coreference sentence of the grammar, or its cue is a verb."""
    try:
        spec = parse(sentence)
    except (ValueError, KeyError):
        return None
    frame = FRAMES[spec.frame]
    role = _pron_role(frame, spec) if frame.cues and frame.cue_kind == "adj" else None
    if role is None:
        return None
    lex = lexicon()
    fits = set(lex.adjectives[spec["cue"]].applies)
    other = next(r for r in frame.cues if r != role)
    return bool(fits & set(lex.nouns[spec[role]].classes)) and not fits & set(lex.nouns[spec[other]].classes)


ANIMAL_MOVES_PATH = Path(__file__).with_name("animal_moves.json")
# frames and verbs that move the subject over the ground, and verbs that handle a thing with hands
_LOCOMOTION_FRAMES = ("cross", "cross_although", "cross_near", "they_cross", "climb", "they_climb", "jump", "jump_onto")
_LOCOMOTION_VERBS = ("cross", "climb", "jump over")
_HANDLING_VERBS = ("steal", "take", "hide", "lose", "receive", "pick up", "bring", "carry", "drop", "push", "pull",
                   "drag", "roll", "shake", "tear", "break", "destroy", "touch", "lick", "look for", "find")
_ANIMAL_THINGS = ("food", "drink", "plant", "animal")  # what an animal handles in a sentence that reads sensibly


@lru_cache(maxsize=1)
def animal_moves() -> dict[str, str]:
    """How each animal noun of the lexicon moves: walks, flies, swims or crawls (``core/data/animal_moves.json``,
    from WordNet's classes with overrides read by hand; ``scripts/animal_moves.py`` rebuilds it)."""
    return json.loads(ANIMAL_MOVES_PATH.read_text(encoding="utf-8"))["moves"]


def reads_sensibly(sentence: str) -> bool | None:
    """Whether a sentence of the grammar reads as something that could happen, beyond each word fitting its slot's
    class: an animal that crosses, climbs or jumps over something walks ("The carp didn't cross the craters", "The
    oyster couldn't jump over the boulder": False), and an animal handles only food, drink, plants or animals ("The
    worm didn't steal the balaclava": False; "The mare didn't steal the basil": True). A coarse filter, not
    understanding: sizes and places are not checked ("The gerbils didn't cross the volcanoes" passes; the pair list
    asks :func:`pair_reads_sensibly` first). None: not a sentence of the grammar."""
    try:
        spec = parse(sentence)
    except (ValueError, KeyError):
        return None
    lex = lexicon()
    subject = spec.get("A")
    if subject is None or "animal" not in lex.nouns[subject].classes:
        return True
    verb = spec.get("verb") or (spec.get("cue") if FRAMES[spec.frame].cue_kind == "verb" else None)
    if spec.frame in _LOCOMOTION_FRAMES or verb in _LOCOMOTION_VERBS:
        return animal_moves().get(subject) == "walks"
    if verb in _HANDLING_VERBS and spec.get("B") is not None:
        return bool(set(lex.nouns[spec["B"]].classes) & set(_ANIMAL_THINGS))
    return True


PAIR_SENSE_PATH = Path(__file__).parent / "review" / "pair_sense.jsonl"


@lru_cache(maxsize=1)
def _pair_verdicts() -> dict[tuple[str, str], bool]:
    verdicts = {}
    for line in PAIR_SENSE_PATH.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            verdicts[(row["a"], row["b"])] = bool(row["sensible"])
    return verdicts


def pair_reads_sensibly(a: str, b: str) -> bool | None:
    """A reader's verdict on the minimal pair ``a`` / ``b`` (either order): True when both sentences describe something
    ordinary and each one's pronoun plainly names the noun its cue word describes ("The chicken couldn't climb the
    hill because it was too young / steep"), False otherwise ("The gerbils didn't cross the volcanoes…"). None: no
    one has read the pair. The verdicts are ``core/data/review/pair_sense.jsonl`` (every pair of the shipped
    translators' probe sets; ``python scripts/review_pairs.py MODEL`` lists the pairs a new probe set adds)."""
    verdicts = _pair_verdicts()
    return verdicts.get((a, b), verdicts.get((b, a)))


_FR_PRONOUNS = {"il", "elle", "ils", "elles"}
_DE_PRONOUNS = {"er", "sie", "es", "ihn"}


def pronoun_of(translation: str, lang: str) -> str | None:
    """The pronoun that refers back in a translation: French il/elle/ils/elles (not sentence-initial, not
    "il y a"), or a le/la clitic right after "et"; German er/sie/es/ihn, not the first word."""
    _check_lang(lang)
    toks = [t.lower() for t in words(translation)]
    for i, t in enumerate(toks[1:], start=1):
        if lang == "de":
            if t in _DE_PRONOUNS:
                return t
        elif t in _FR_PRONOUNS and not (i + 1 < len(toks) and toks[i + 1] == "y"):
            return t
        elif t in ("le", "la") and toks[i - 1] == "et":
            return t
    return None


def _regex_for(frame: Frame, lex: Lexicon) -> re.Pattern:
    """An English regex of one frame (slots as named groups over the lexicon's words)."""
    def alt(options):
        return "(?:" + "|".join(re.escape(o) for o in sorted(set(options), key=len, reverse=True)) + ")"
    nouns = alt(lex.nouns)
    plurals = alt(n.en_pl for n in lex.nouns.values())
    adjs = alt(lex.adjectives)
    groups = {
        "A": f"(?P<A>{nouns})", "B": f"(?P<B>{nouns})", "C": f"(?P<C>{nouns})", "P": f"(?P<P>{nouns})", "L": f"(?P<L>{nouns})",
        "Apl": f"(?P<Apl>{plurals})", "Bpl": f"(?P<Bpl>{plurals})", "Aplmass": f"(?P<Aplmass>{plurals}|{nouns})",
        "aA": f"an? (?P<A>{nouns})", "adj": f"(?P<adj>{adjs})", "a_adj": f"an? (?P<adj>{adjs})",
        "cue": f"(?P<cue>{adjs}|{alt(lex.verbs)})", "cue3sg": f"(?P<cue3sg>{alt(v.en_3sg for v in lex.verbs.values())})",
        "verb": f"(?P<verb>{alt(lex.verbs)})", "verb3sg": f"(?P<verb3sg>{alt(v.en_3sg for v in lex.verbs.values())})",
        "verbpast": f"(?P<verbpast>{alt(v.en_past for v in lex.verbs.values())})",
        "name": f"(?P<name>{alt(lex.names)})", "he": "(?:he|she)", "num": f"(?P<num>{alt(x[0] for x in lex.numbers.values())})",
        "prep": f"(?P<prep>{alt(_PLACE_PREPS)})",
    }
    for slot in frame.poss:
        groups[f"my{slot}"] = f"(?P<my{slot}>the|my) "
    groups["too"] = "(?P<too>too )?"
    groups["it"] = "(?:it|he|she)"
    parts = re.split(r"(\{\w+\})", _pattern_template(frame))
    pattern = "".join(groups[p[1:-1]] if p.startswith("{") else re.escape(p.lower()) for p in parts)
    return re.compile(pattern)


def _pattern_template(frame: Frame) -> str:
    """The frame's English template as its parser reads it: "too" optional before the cue, "the" or "my" before
    each possessable noun (``{too}``, ``{myA}`` stand for those choices)."""
    en = frame.en.replace(_GRADED, "{too}{cue}")
    if frame.cues and not frame.plural:
        en = _PERSON_IT.sub(r"\1 {it}", en)
    for slot in frame.poss:
        en = _the_noun(slot).sub(rf"{{my{slot}}}\1", en)
    return en


@lru_cache(maxsize=None)
def _parser(i: int) -> re.Pattern:
    """Frame ``i``'s pattern, compiled on first use: each alternates hundreds of words, and compiling all 40 took
    1.2 s, the largest part of the Coreference page's first visit."""
    return _regex_for(FRAMES_LIST[i], lexicon())


@lru_cache(maxsize=None)
def _literals(i: int) -> tuple[str, ...]:
    """The fixed words of frame ``i`` as its pattern spells them: a sentence without all of them cannot match it."""
    return tuple(p.lower() for p in re.split(r"\{\w+\}", _pattern_template(FRAMES_LIST[i])) if p)


def _parsers(text: str):
    """(frame, pattern) of every frame whose fixed words all occur in ``text``, in FRAMES_LIST order."""
    for i, frame in enumerate(FRAMES_LIST):
        if all(lit in text for lit in _literals(i)):
            yield frame, _parser(i)


def _normalise(sentence: str) -> str:
    text = re.sub(r"\s+", " ", sentence.replace("\u2019", "'")).strip()
    for short, long in CONTRACTIONS.items():
        text = re.sub(rf"\b{long}\b", short, text)
    return text[:1].lower() + text[1:] if not any(text.startswith(n) for n in lexicon().names) else text


def parse(sentence: str) -> Spec:
    """The spec of an English sentence of the grammar (ValueError when it is outside every frame)."""
    if not isinstance(sentence, str):
        raise ValueError(f"expected an English sentence (str), got {type(sentence).__name__}")
    lex = lexicon()
    text = _normalise(sentence)
    low = text if text[:1].isupper() else text.lower()
    by_pl = {n.en_pl: k for k, n in lex.nouns.items()}
    by_past = {v.en_past: k for k, v in lex.verbs.items()}
    by_3sg = {v.en_3sg: k for k, v in lex.verbs.items()}
    by_num = {x[0]: str(n) for n, x in lex.numbers.items()}
    for frame, rx in _parsers(low):
        m = rx.fullmatch(low)
        if not m:
            continue
        g = {k: v for k, v in m.groupdict().items() if v}
        slots = {}
        if _GRADED in frame.en and "too" not in g:
            slots["deg"] = "plain"
        mine = [k[2:] for k, v in g.items() if k.startswith("my") and v == "my"]
        if len(mine) > 1:
            continue  # one possessed noun per sentence
        if mine:
            slots["my"] = mine[0]
        for k, v in g.items():
            if k == "too" or k.startswith("my"):
                continue
            elif k in ("Apl", "Bpl"):
                slots[k[0]] = by_pl[v]
            elif k == "Aplmass":
                slots["A"] = by_pl.get(v, v)
            elif k == "verbpast":
                slots["verb"] = by_past[v]
            elif k == "verb3sg":
                slots["verb"] = by_3sg[v]
            elif k == "cue3sg":
                slots["cue"] = by_3sg[v]
            elif k == "num":
                slots["num"] = by_num[v]
            else:
                slots[k] = v
        spec = Spec(frame.name, tuple(sorted(slots.items())))
        if frame.cues and _pron_role(frame, spec) is None:
            continue
        try:
            make_pair(spec, "fr")
        except (KeyError, IndexError):
            continue
        return spec
    known = set(lex.nouns) | {n.en_pl for n in lex.nouns.values()} | set(lex.adjectives) | set(lex.verbs)
    unknown = [w for w in words(text.lower()) if w.isalpha() and w not in known]
    hint = f" Words outside the lexicon: {', '.join(unknown[:8])}." if unknown else ""
    raise ValueError(f"Sentence is outside the generated grammar's frames: {sentence!r}.{hint}")


def pair_for(sentence: str, lang: str) -> Pair:
    """The Pair (reference translation, antecedent, pronoun) of one in-grammar English sentence."""
    _check_lang(lang)
    return make_pair(parse(sentence), lang, contracted=True)


def translate(sentence: str, lang: str) -> str:
    """The reference translation of one in-grammar English sentence (ValueError outside the grammar)."""
    return pair_for(sentence, lang).tgt
