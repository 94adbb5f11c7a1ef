"""A coreference-aware English→French and English→German parallel corpus.

Why this corpus exists
----------------------
English "it" has no grammatical gender, but French and German nouns do.  To
translate "it" a model has to find what "it" points back to::

    The animal didn't cross the street because it was too tired.
    L'animal n'a pas traversé la rue parce qu'il était trop fatigué.

    The animal didn't cross the street because it was too wide.
    L'animal n'a pas traversé la rue parce qu'elle était trop large.

Only the adjective changed, yet the French pronoun flips from *il* (l'animal,
masculine) to *elle* (la rue, feminine).  Those minimal pairs are what the
attention visualisations are meant to explain.

Grammar
-------
Every sentence comes from one of six frames (``Pair.frame``):

``because``     The dog didn't cross the street because it was too tired.
``although``    The dog crossed the street although it was very tired.
``when``        The dog never crossed the street when it was too tired.
``distractor``  The dog didn't cross the road next to the house because it
                was too tired.  (an extra place noun competes for "it")
``object``      The dog saw the cat next to the river and wanted to cross it.
                ("it" is an object; the verb selects a being or a place)
``simple``      I am happy. / The dog is tired. / The street is wide.

How "it" is resolved: in the adjective frames the adjective decides: an
adjective for living things ("tired") points to the animal, an adjective for
places ("wide") points to the place that is the verb's object (in the
``distractor`` frame, generation only uses place adjectives that do not fit
the extra place).  In the ``object`` frame the verb decides: chase / wake /
greet need an animal, cross / visit need a place.

Fixed translation choices: "although" → *même si* / *obwohl*, "when" →
*quand* / *wenn* (habitual past), "you" → *tu* / *du*, person sentences use
the French masculine for "I", "you", "we" and "they".

Splits
------
Each pair has a ``combo`` key ``(antecedent-or-subject noun, cue, frame)``
where the cue is the adjective (or, in the ``object`` frame, the verb).  Combos
are assigned to train / valid / test by a salted SHA-256 hash, so the split is
deterministic, identical for both languages, and no test combo ever occurs in
train or valid.  A small repair step moves combos into train where needed so
that every noun, every cue, every frame, and every noun-adjective pair that
occurs in more than one frame is still seen in training.

Tokenisation (:func:`words`)
----------------------------
Punctuation marks are separate tokens; French elisions are split after the
apostrophe (``qu'il`` → ``qu'`` + ``il``, ``L'animal`` → ``L'`` + ``animal``);
English contractions stay whole (``didn't`` is one token); hyphenated words
stay whole (``par-dessus``).
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

__all__ = [
    "LANGS",
    "SPLITS",
    "FRAMES",
    "Pair",
    "Noun",
    "Adjective",
    "BEINGS",
    "PLACES",
    "ADJECTIVES",
    "words",
    "translate",
    "generate",
    "probe_pairs",
    "pronoun_of",
    "english_sentences",
]

LANGS = ("fr", "de")
SPLITS = ("train", "valid", "test")
FRAMES = ("because", "although", "when", "distractor", "object", "simple")

# Share of combos held out for each evaluation split (the rest is train).
_TEST_SHARE = 0.15
_VALID_SHARE = 0.10
_SPLIT_SALT = "attention-lab/translation/v1"
# Seed for the few random choices made while enumerating the grammar
# (distractor places, second animals); fixed so the corpus never changes.
_GRAMMAR_SEED = 1729


# --------------------------------------------------------------------------
# Lexicon
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Noun:
    """A noun with its French and German translations and genders."""

    en: str
    kind: str  # "being" | "place"
    fr: str
    fr_gender: str  # "m" | "f"
    de: str
    de_gender: str  # "m" | "f" | "n"
    adjectives: tuple[str, ...] = ()  # places only: adjectives that fit


@dataclass(frozen=True)
class Adjective:
    """An adjective with its French forms and its German form."""

    en: str
    kind: str  # "being" (living things) | "place"
    fr_m: str
    fr_f: str
    de: str
    fr_mp: str = ""  # masculine plural, needed for "we" / "they" sentences


def _nouns(kind: str, rows: list[tuple]) -> dict[str, Noun]:
    """Build an English-keyed noun table from compact rows."""
    return {row[0]: Noun(row[0], kind, *row[1:]) for row in rows}


BEINGS: dict[str, Noun] = _nouns("being", [
    # English   French        fr   German          de
    ("animal", "animal", "m", "Tier", "n"),
    ("dog", "chien", "m", "Hund", "m"),
    ("cat", "chat", "m", "Katze", "f"),
    ("horse", "cheval", "m", "Pferd", "n"),
    ("bird", "oiseau", "m", "Vogel", "m"),
    ("cow", "vache", "f", "Kuh", "f"),
    ("goat", "chèvre", "f", "Ziege", "f"),
    ("mouse", "souris", "f", "Maus", "f"),
    ("sheep", "mouton", "m", "Schaf", "n"),
    ("fox", "renard", "m", "Fuchs", "m"),
    ("duck", "canard", "m", "Ente", "f"),
    ("hen", "poule", "f", "Henne", "f"),
    ("frog", "grenouille", "f", "Frosch", "m"),
    ("turtle", "tortue", "f", "Schildkröte", "f"),
    ("bee", "abeille", "f", "Biene", "f"),
    ("wolf", "loup", "m", "Wolf", "m"),
    ("pig", "cochon", "m", "Schwein", "n"),
    ("rabbit", "lapin", "m", "Kaninchen", "n"),
])

PLACES: dict[str, Noun] = _nouns("place", [
    # English  French     fr   German        de   adjectives that fit
    ("street", "rue", "f", "Straße", "f",
     ("wide", "long", "narrow", "steep", "crowded", "dark", "muddy", "empty")),
    ("road", "route", "f", "Landstraße", "f",
     ("wide", "long", "narrow", "steep", "crowded", "dark", "muddy", "empty")),
    ("river", "rivière", "f", "Fluss", "m",
     ("wide", "long", "deep", "narrow", "dark", "muddy")),
    ("bridge", "pont", "m", "Brücke", "f",
     ("long", "narrow", "high", "steep", "crowded", "dark")),
    ("field", "champ", "m", "Feld", "n",
     ("wide", "long", "crowded", "muddy", "dark", "empty")),
    ("square", "place", "f", "Platz", "m",
     ("wide", "crowded", "dark", "empty", "muddy")),
    ("park", "parc", "m", "Park", "m",
     ("wide", "crowded", "dark", "empty", "muddy")),
    ("forest", "forêt", "f", "Wald", "m",
     ("wide", "deep", "dark", "muddy")),
    ("wall", "mur", "m", "Mauer", "f",
     ("high", "long", "steep")),
    ("garden", "jardin", "m", "Garten", "m",
     ("wide", "long", "crowded", "dark", "muddy", "empty")),
    ("lake", "lac", "m", "See", "m",
     ("wide", "long", "deep", "dark", "muddy")),
    ("path", "chemin", "m", "Pfad", "m",
     ("long", "narrow", "steep", "muddy", "dark", "crowded")),
    ("fence", "clôture", "f", "Zaun", "m",
     ("high", "long")),
    ("hill", "colline", "f", "Hügel", "m",
     ("high", "steep", "muddy")),
    ("house", "maison", "f", "Haus", "n",
     ("high", "narrow", "crowded", "dark", "empty")),
    ("box", "boîte", "f", "Kiste", "f",
     ("deep", "narrow", "high", "dark", "empty", "wide")),
    ("gate", "portail", "m", "Tor", "n",
     ("high", "narrow", "wide")),
])

_ADJECTIVE_LIST = [
    # adjectives for living things (used in the coreference frames)
    Adjective("tired", "being", "fatigué", "fatiguée", "müde", "fatigués"),
    Adjective("scared", "being", "effrayé", "effrayée", "ängstlich", "effrayés"),
    Adjective("hungry", "being", "affamé", "affamée", "hungrig", "affamés"),
    Adjective("slow", "being", "lent", "lente", "langsam", "lents"),
    Adjective("weak", "being", "faible", "faible", "schwach", "faibles"),
    Adjective("sick", "being", "malade", "malade", "krank", "malades"),
    Adjective("lazy", "being", "paresseux", "paresseuse", "faul", "paresseux"),
    Adjective("angry", "being", "en colère", "en colère", "wütend", "en colère"),
    # extra adjectives for living things, used in simple sentences only
    Adjective("happy", "being", "heureux", "heureuse", "froh", "heureux"),
    Adjective("sad", "being", "triste", "triste", "traurig", "tristes"),
    Adjective("calm", "being", "calme", "calme", "ruhig", "calmes"),
    Adjective("ready", "being", "prêt", "prête", "bereit", "prêts"),
    Adjective("busy", "being", "occupé", "occupée", "beschäftigt", "occupés"),
    # adjectives for places and things
    Adjective("wide", "place", "large", "large", "breit"),
    Adjective("long", "place", "long", "longue", "lang"),
    Adjective("deep", "place", "profond", "profonde", "tief"),
    Adjective("narrow", "place", "étroit", "étroite", "schmal"),
    Adjective("high", "place", "haut", "haute", "hoch"),
    Adjective("steep", "place", "raide", "raide", "steil"),
    Adjective("crowded", "place", "bondé", "bondée", "überfüllt"),
    Adjective("muddy", "place", "boueux", "boueuse", "schlammig"),
    Adjective("dark", "place", "sombre", "sombre", "dunkel"),
    Adjective("empty", "place", "vide", "vide", "leer"),
]
ADJECTIVES: dict[str, Adjective] = {a.en: a for a in _ADJECTIVE_LIST}

# Adjectives that describe animals in the coreference frames.
COREF_BEING_ADJECTIVES = ("tired", "scared", "hungry", "slow", "weak", "sick",
                          "lazy", "angry")


@dataclass(frozen=True)
class Verb:
    """A motion verb of the adjective frames, in the forms each frame needs."""

    en: str  # base form, e.g. "jump over"
    en_past: str  # e.g. "jumped over"
    fr_aux: str  # passé composé auxiliary, 3rd singular: "a" | "est"
    fr_pp: str  # past participle (masculine)
    fr_prep: str  # "" | "dans" | "par-dessus"
    fr_impf: str  # imparfait, 3rd singular
    de_aux: str  # Perfekt auxiliary: "hat" | "ist"
    de_prep: str  # "" | "über" | "auf" (all with the accusative)
    de_pp: str  # Partizip II
    de_pret: str  # Präteritum, 3rd singular
    places: tuple[str, ...]  # objects used when generating


VERBS: dict[str, Verb] = {v.en: v for v in (
    Verb("cross", "crossed", "a", "traversé", "", "traversait",
         "hat", "", "überquert", "überquerte",
         ("street", "road", "river", "bridge", "field", "square", "park", "path")),
    Verb("enter", "entered", "est", "entré", "dans", "entrait",
         "hat", "", "betreten", "betrat",
         ("park", "forest", "garden", "house", "field")),
    Verb("jump over", "jumped over", "a", "sauté", "par-dessus", "sautait",
         "ist", "über", "gesprungen", "sprang",
         ("wall", "fence", "box", "gate", "river")),
    Verb("leave", "left", "a", "quitté", "", "quittait",
         "hat", "", "verlassen", "verließ",
         ("house", "garden", "park", "forest", "field", "square", "box", "road",
          "path")),
    Verb("climb", "climbed", "a", "escaladé", "", "escaladait",
         "ist", "auf", "geklettert", "kletterte",
         ("hill", "wall", "fence", "gate")),
)}


@dataclass(frozen=True)
class ObjectVerb:
    """A verb of the ``object`` frame ("... and wanted to VERB it")."""

    en: str
    kind: str  # the kind of noun it selects: "being" | "place"
    fr: str  # infinitive (consonant-initial, so the clitic never elides)
    de: str  # infinitive
    places: tuple[str, ...] = ()  # place objects used when generating


OBJECT_VERBS: dict[str, ObjectVerb] = {v.en: v for v in (
    ObjectVerb("chase", "being", "chasser", "jagen"),
    ObjectVerb("wake", "being", "réveiller", "wecken"),
    ObjectVerb("greet", "being", "saluer", "begrüßen"),
    ObjectVerb("cross", "place", "traverser", "überqueren", VERBS["cross"].places),
    ObjectVerb("visit", "place", "visiter", "besuchen",
               ("park", "forest", "garden", "lake", "house", "hill", "field",
                "square")),
)}


@dataclass(frozen=True)
class Person:
    """A personal-pronoun subject with its copula, for simple sentences."""

    en: str  # "I am"
    fr: str  # "Je suis"
    fr_form: str  # adjective form: "m" | "f" | "mp"
    de: str  # "Ich bin"


PERSONS: dict[str, Person] = {
    "i": Person("I am", "Je suis", "m", "Ich bin"),
    "you": Person("You are", "Tu es", "m", "Du bist"),
    "he": Person("He is", "Il est", "m", "Er ist"),
    "she": Person("She is", "Elle est", "f", "Sie ist"),
    "we": Person("We are", "Nous sommes", "mp", "Wir sind"),
    "they": Person("They are", "Ils sont", "mp", "Sie sind"),
}


# --------------------------------------------------------------------------
# Pairs and sentence specifications
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """One English sentence with its translation and coreference labels."""

    src: str  # English sentence
    tgt: str  # translation
    lang: str  # "fr" | "de"
    frame: str  # one of FRAMES
    pronoun_index: int | None  # index of "it" in words(src)
    antecedent: str | None  # English noun that "it" refers to
    candidates: tuple[str, ...]  # every noun of the sentence, in order
    tgt_pronoun: str | None  # il/elle/le/la (fr) or er/sie/es/ihn (de)
    combo: tuple  # (antecedent-or-subject, cue, frame): the split key


@dataclass(frozen=True)
class _Spec:
    """Language-neutral description of one sentence of the grammar."""

    frame: str
    subject: str  # being, place or person key
    adj: str = ""
    verb: str = ""  # Verb key, or ObjectVerb key in the object frame
    place: str = ""  # the verb's object (adjective frames) / location (object)
    near: str = ""  # the distractor place ("distractor" frame)
    other: str = ""  # the second animal ("object" frame)


def _antecedent(spec: _Spec) -> str | None:
    """Return the English noun that "it" refers to, or None without "it"."""
    if spec.frame == "simple":
        return None
    if spec.frame == "object":
        return spec.other if OBJECT_VERBS[spec.verb].kind == "being" else spec.place
    return spec.subject if ADJECTIVES[spec.adj].kind == "being" else spec.place


def _candidates(spec: _Spec) -> tuple[str, ...]:
    """Return every noun of the sentence, in English word order."""
    if spec.frame == "simple":
        return () if spec.subject in PERSONS else (spec.subject,)
    if spec.frame == "object":
        return (spec.subject, spec.other, spec.place)
    if spec.near:
        return (spec.subject, spec.place, spec.near)
    return (spec.subject, spec.place)


def _combo(spec: _Spec) -> tuple[str, str, str]:
    """Return the split key (antecedent-or-subject, cue, frame) of a spec."""
    noun = _antecedent(spec) or spec.subject
    cue = spec.verb if spec.frame == "object" else spec.adj
    return (noun, cue, spec.frame)


def _noun(key: str) -> Noun:
    """Look up a being or a place by its English name."""
    return BEINGS[key] if key in BEINGS else PLACES[key]


# --------------------------------------------------------------------------
# Tokenisation
# --------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"[^\W\d_]+(?:['-][^\W\d_]+)*|\d+|[^\w\s]")
# Elided French words that end in an apostrophe (l', qu', n', s', ...).
_ELIDED = {"l", "d", "j", "m", "n", "s", "t", "c", "qu", "jusqu", "lorsqu",
           "puisqu"}


def words(text: str) -> list[str]:
    """Split text into word and punctuation tokens.

    Punctuation marks are separate tokens.  A French elision is split after
    its apostrophe ("qu'il" -> "qu'", "il"; "L'animal" -> "L'", "animal"),
    whereas English contractions stay whole ("didn't" -> "didn't") and
    hyphenated words stay whole ("par-dessus").  Typographic apostrophes
    are normalised to "'".
    """
    tokens: list[str] = []
    for token in _TOKEN_RE.findall(text.replace("\u2019", "'")):
        while "'" in token:
            head, rest = token.split("'", 1)
            if head.lower() not in _ELIDED:
                break
            tokens.append(head + "'")
            token = rest
        tokens.append(token)
    return tokens


# --------------------------------------------------------------------------
# Rendering: English
# --------------------------------------------------------------------------


def _render_en(spec: _Spec) -> str:
    """Render a spec as an English sentence."""
    if spec.frame == "simple":
        if spec.subject in PERSONS:
            return f"{PERSONS[spec.subject].en} {spec.adj}."
        return f"The {spec.subject} is {spec.adj}."
    if spec.frame == "object":
        return (f"The {spec.subject} saw the {spec.other} next to the "
                f"{spec.place} and wanted to {spec.verb} it.")
    verb = VERBS[spec.verb]
    near = f" next to the {spec.near}" if spec.near else ""
    if spec.frame in ("because", "distractor"):
        return (f"The {spec.subject} didn't {verb.en} the {spec.place}{near} "
                f"because it was too {spec.adj}.")
    if spec.frame == "although":
        return (f"The {spec.subject} {verb.en_past} the {spec.place} "
                f"although it was very {spec.adj}.")
    return (f"The {spec.subject} never {verb.en_past} the {spec.place} "
            f"when it was too {spec.adj}.")


# --------------------------------------------------------------------------
# Rendering: French
# --------------------------------------------------------------------------

_FR_VOWELS = set("aeiouyàâäéèêëîïôöûüœ")


def _cap(text: str) -> str:
    """Upper-case the first character of a sentence."""
    return text[:1].upper() + text[1:]


def _fr_join(word: str, following: str) -> str:
    """Join a French clitic/article to the next word, eliding if needed.

    ``le``/``la``/``ne``/``que`` lose their vowel before a vowel ("l'animal",
    "n'entrait", "qu'elle"); ``si`` only elides before ``il``/``ils``.
    """
    if word == "si":
        return "s'" + following if following in ("il", "ils") else "si " + following
    if following[:1].lower() in _FR_VOWELS:
        return word[:-1] + "'" + following
    return f"{word} {following}"


def _fr_np(noun: Noun) -> str:
    """French definite noun phrase: "le chien", "la rue", "l'animal"."""
    return _fr_join("le" if noun.fr_gender == "m" else "la", noun.fr)


def _fr_de_np(noun: Noun) -> str:
    """French "de" + definite noun phrase: "du parc", "de la rue", "de l'..."."""
    if noun.fr[:1].lower() in _FR_VOWELS:
        return "de l'" + noun.fr
    return ("du " if noun.fr_gender == "m" else "de la ") + noun.fr


def _fr_adj(adj: Adjective, form: str) -> str:
    """French adjective agreeing with "m", "f" or "mp" (masculine plural)."""
    return {"m": adj.fr_m, "f": adj.fr_f, "mp": adj.fr_mp or adj.fr_m}[form]


def _fr_vp(verb: Verb, mood: str, subject_gender: str, target: str) -> str:
    """French verb phrase for mood "neg" (n'a pas ...), "pos" or "never"."""
    if verb.fr_prep:
        target = f"{verb.fr_prep} {target}"
    participle = verb.fr_pp
    if verb.fr_aux == "est" and subject_gender == "f":
        participle += "e"  # être agrees with the subject: "entrée"
    if mood == "neg":
        return f"n'{verb.fr_aux} pas {participle} {target}"
    if mood == "pos":
        return f"{verb.fr_aux} {participle} {target}"
    return f"{_fr_join('ne', verb.fr_impf)} jamais {target}"


def _render_fr(spec: _Spec) -> str:
    """Render a spec as a French sentence."""
    if spec.frame == "simple":
        adj = ADJECTIVES[spec.adj]
        if spec.subject in PERSONS:
            person = PERSONS[spec.subject]
            return f"{person.fr} {_fr_adj(adj, person.fr_form)}."
        noun = _noun(spec.subject)
        return f"{_cap(_fr_np(noun))} est {_fr_adj(adj, noun.fr_gender)}."

    subject = BEINGS[spec.subject]
    if spec.frame == "object":
        referent = _noun(_antecedent(spec))
        clitic = _fr_join("le" if referent.fr_gender == "m" else "la",
                          OBJECT_VERBS[spec.verb].fr)
        return (f"{_cap(_fr_np(subject))} a vu {_fr_np(BEINGS[spec.other])} "
                f"à côté {_fr_de_np(PLACES[spec.place])} et a voulu {clitic}.")

    referent = _noun(_antecedent(spec))
    pronoun = "il" if referent.fr_gender == "m" else "elle"
    adjective = _fr_adj(ADJECTIVES[spec.adj], referent.fr_gender)
    target = _fr_np(PLACES[spec.place])
    if spec.near:
        target += f" à côté {_fr_de_np(PLACES[spec.near])}"
    if spec.frame in ("because", "distractor"):
        mood, clause, degree = "neg", "parce " + _fr_join("que", pronoun), "trop"
    elif spec.frame == "although":
        mood, clause, degree = "pos", "même " + _fr_join("si", pronoun), "très"
    else:
        mood, clause, degree = "never", "quand " + pronoun, "trop"
    verb_phrase = _fr_vp(VERBS[spec.verb], mood, subject.fr_gender, target)
    return (f"{_cap(_fr_np(subject))} {verb_phrase} {clause} était "
            f"{degree} {adjective}.")


# --------------------------------------------------------------------------
# Rendering: German
# --------------------------------------------------------------------------

_DE_ARTICLES = {
    "nom": {"m": "der", "f": "die", "n": "das"},
    "acc": {"m": "den", "f": "die", "n": "das"},
    "dat": {"m": "dem", "f": "der", "n": "dem"},
}
_DE_SUBJECT_PRONOUNS = {"m": "er", "f": "sie", "n": "es"}
_DE_OBJECT_PRONOUNS = {"m": "ihn", "f": "sie", "n": "es"}


def _de_np(noun: Noun, case: str) -> str:
    """German definite noun phrase in the given case: "den Hund"."""
    return f"{_DE_ARTICLES[case][noun.de_gender]} {noun.de}"


def _de_vp(verb: Verb, mood: str, target: str) -> str:
    """German main-clause verb phrase for mood "neg", "pos" or "never"."""
    if verb.de_prep:
        target = f"{verb.de_prep} {target}"
        if mood == "neg":
            return f"{verb.de_aux} nicht {target} {verb.de_pp}"
        if mood == "pos":
            return f"{verb.de_aux} {target} {verb.de_pp}"
        return f"{verb.de_pret} nie {target}"
    if mood == "neg":
        return f"{verb.de_aux} {target} nicht {verb.de_pp}"
    if mood == "pos":
        return f"{verb.de_aux} {target} {verb.de_pp}"
    return f"{verb.de_pret} {target} nie"


def _render_de(spec: _Spec) -> str:
    """Render a spec as a German sentence."""
    if spec.frame == "simple":
        adj = ADJECTIVES[spec.adj]
        if spec.subject in PERSONS:
            return f"{PERSONS[spec.subject].de} {adj.de}."
        return f"{_cap(_de_np(_noun(spec.subject), 'nom'))} ist {adj.de}."

    subject = _cap(_de_np(BEINGS[spec.subject], "nom"))
    referent = _noun(_antecedent(spec))
    if spec.frame == "object":
        pronoun = _DE_OBJECT_PRONOUNS[referent.de_gender]
        return (f"{subject} hat {_de_np(BEINGS[spec.other], 'acc')} neben "
                f"{_de_np(PLACES[spec.place], 'dat')} gesehen und wollte "
                f"{pronoun} {OBJECT_VERBS[spec.verb].de}.")

    pronoun = _DE_SUBJECT_PRONOUNS[referent.de_gender]
    target = _de_np(PLACES[spec.place], "acc")
    if spec.near:
        target += f" neben {_de_np(PLACES[spec.near], 'dat')}"
    if spec.frame in ("because", "distractor"):
        mood, conjunction, degree = "neg", "weil", "zu"
    elif spec.frame == "although":
        mood, conjunction, degree = "pos", "obwohl", "sehr"
    else:
        mood, conjunction, degree = "never", "wenn", "zu"
    verb_phrase = _de_vp(VERBS[spec.verb], mood, target)
    return (f"{subject} {verb_phrase}, {conjunction} {pronoun} {degree} "
            f"{ADJECTIVES[spec.adj].de} war.")


_RENDERERS = {"fr": _render_fr, "de": _render_de}


def _target_pronoun(spec: _Spec, lang: str) -> str | None:
    """Return the bare target-language pronoun that stands for "it"."""
    antecedent = _antecedent(spec)
    if antecedent is None:
        return None
    noun = _noun(antecedent)
    if lang == "fr":
        if spec.frame == "object":
            return "le" if noun.fr_gender == "m" else "la"
        return "il" if noun.fr_gender == "m" else "elle"
    table = _DE_OBJECT_PRONOUNS if spec.frame == "object" else _DE_SUBJECT_PRONOUNS
    return table[noun.de_gender]


def _make_pair(spec: _Spec, lang: str) -> Pair:
    """Build the Pair (sentence, translation and labels) for a spec."""
    src = _render_en(spec)
    src_words = words(src)
    return Pair(
        src=src,
        tgt=_RENDERERS[lang](spec),
        lang=lang,
        frame=spec.frame,
        pronoun_index=src_words.index("it") if "it" in src_words else None,
        antecedent=_antecedent(spec),
        candidates=_candidates(spec),
        tgt_pronoun=_target_pronoun(spec, lang),
        combo=_combo(spec),
    )


# --------------------------------------------------------------------------
# Parsing English (translate)
# --------------------------------------------------------------------------


def _alternation(options) -> str:
    """Regex alternation of literal options, longest first."""
    return "|".join(re.escape(o) for o in sorted(options, key=len, reverse=True))


def _build_patterns() -> list[tuple[str, re.Pattern]]:
    """Compile one regular expression per frame of the grammar."""
    being = _alternation(BEINGS)
    place = _alternation(PLACES)
    noun = _alternation(list(BEINGS) + list(PLACES))
    adjective = _alternation(ADJECTIVES)
    animate_adjective = _alternation(a for a in ADJECTIVES
                                     if ADJECTIVES[a].kind == "being")
    verb = _alternation(VERBS)
    verb_past = _alternation(v.en_past for v in VERBS.values())
    object_verb = _alternation(OBJECT_VERBS)
    person = _alternation(p.en.lower() for p in PERSONS.values())
    templates = [
        ("because", rf"the (?P<subject>{being}) didn't (?P<verb>{verb}) the "
                    rf"(?P<place>{place})(?: next to the (?P<near>{place}))? "
                    rf"because it was too (?P<adj>{adjective})"),
        ("although", rf"the (?P<subject>{being}) (?P<verb_past>{verb_past}) the "
                     rf"(?P<place>{place}) although it was very (?P<adj>{adjective})"),
        ("when", rf"the (?P<subject>{being}) never (?P<verb_past>{verb_past}) the "
                 rf"(?P<place>{place}) when it was too (?P<adj>{adjective})"),
        ("object", rf"the (?P<subject>{being}) saw the (?P<other>{being}) next to "
                   rf"the (?P<place>{place}) and wanted to (?P<verb>{object_verb}) it"),
        ("simple", rf"the (?P<subject>{noun}) is (?P<adj>{adjective})"),
        ("simple", rf"(?P<person>{person}) (?P<adj>{animate_adjective})"),
    ]
    return [(frame, re.compile(pattern + "$")) for frame, pattern in templates]


_PATTERNS = _build_patterns()
_PAST_TO_VERB = {v.en_past: v.en for v in VERBS.values()}
_PERSON_BY_EN = {p.en.lower(): key for key, p in PERSONS.items()}
_GRAMMAR_WORDS = set(
    "the didn't cross enter jump over leave climb crossed entered jumped left "
    "climbed never next to because although when it was too very saw and "
    "wanted chase wake greet visit is am are i you he she we they".split())


def _normalise(sentence: str) -> str:
    """Lower-case, tidy whitespace, drop one final period, expand "did not"."""
    text = re.sub(r"\s+", " ", sentence.replace("\u2019", "'")).strip()
    if text.endswith("."):
        text = text[:-1].rstrip()
    return re.sub(r"\bdid not\b", "didn't", text.lower())


def _parse(sentence: str) -> _Spec:
    """Parse an English sentence of the grammar into a spec (or ValueError)."""
    if not isinstance(sentence, str):
        raise ValueError(f"expected an English sentence (str), got {type(sentence).__name__}")
    text = _normalise(sentence)
    for frame, pattern in _PATTERNS:
        match = pattern.match(text)
        if not match:
            continue
        groups = {k: v for k, v in match.groupdict().items() if v}
        if "person" in groups:
            return _Spec("simple", _PERSON_BY_EN[groups["person"]], adj=groups["adj"])
        if "verb_past" in groups:
            groups["verb"] = _PAST_TO_VERB[groups.pop("verb_past")]
        if frame == "because" and "near" in groups:
            frame = "distractor"
        return _Spec(frame, **groups)

    known = _GRAMMAR_WORDS | set(BEINGS) | set(PLACES) | set(ADJECTIVES)
    unknown = sorted({w for w in words(text) if w.isalpha() and w not in known}
                     | {w for w in re.findall(r"\w+'\w+", text) if w not in known})
    hint = f" Unknown words: {', '.join(unknown)}." if unknown else ""
    raise ValueError(
        f"Sentence is outside the Attention Lab grammar: {sentence!r}.{hint} "
        "Supported shapes are e.g. \"The animal didn't cross the street because "
        "it was too tired.\", \"The dog crossed the road although it was very "
        "hungry.\", \"The cat never entered the house when it was too dark.\", "
        "\"The dog saw the cat next to the river and wanted to cross it.\", "
        "\"The dog is tired.\" and \"I am happy.\"")


def _check_lang(lang: str) -> None:
    """Raise ValueError unless lang is one of LANGS."""
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}; expected one of {LANGS}")


def pair_for(sentence: str, lang: str) -> Pair:
    """The full Pair (translation, antecedent, candidates, pronoun) of one in-grammar English sentence.

    Raises ValueError for sentences outside the generator's grammar."""
    _check_lang(lang)
    return _make_pair(_parse(sentence), lang)


def translate(sentence: str, lang: str) -> str:
    """Translate one English sentence of the grammar into ``lang``.

    Matching ignores case, extra whitespace and a missing final period, and
    accepts "did not" for "didn't".  Any lexicon noun/adjective/verb
    combination of a known frame is accepted (generation is stricter about
    which combinations are natural).  Raises ValueError, naming the unknown
    words where possible, for sentences outside the grammar.
    """
    _check_lang(lang)
    return _RENDERERS[lang](_parse(sentence))


# --------------------------------------------------------------------------
# Corpus enumeration and splits
# --------------------------------------------------------------------------


def _enumerate_specs() -> list[_Spec]:
    """List every sentence of the generated corpus, in a fixed order.

    The adjective frames use only natural verb-place and place-adjective
    combinations.  The ``distractor`` and ``object`` frames would be very
    large in full, so a seeded generator picks one distractor place per
    sentence and a few companions per (animal, verb, target).
    """
    rng = random.Random(_GRAMMAR_SEED)
    specs: list[_Spec] = []
    place_names = list(PLACES)
    being_names = list(BEINGS)

    for being in being_names:
        for verb in VERBS.values():
            for place in verb.places:
                for adj in COREF_BEING_ADJECTIVES + PLACES[place].adjectives:
                    for frame in ("because", "although", "when"):
                        specs.append(_Spec(frame, being, adj, verb.en, place))
                    # The extra place must not fit a place adjective, so that
                    # only the verb's object can be "it".
                    nears = [q for q in place_names if q != place and (
                        ADJECTIVES[adj].kind == "being"
                        or adj not in PLACES[q].adjectives)]
                    if nears:
                        specs.append(_Spec("distractor", being, adj, verb.en,
                                           place, near=rng.choice(nears)))

    for being in being_names:
        others = [b for b in being_names if b != being]
        for verb in OBJECT_VERBS.values():
            if verb.kind == "being":
                for other in others:
                    specs.append(_Spec("object", being, verb=verb.en,
                                       place=rng.choice(place_names), other=other))
            else:
                for place in verb.places:
                    for other in rng.sample(others, 3):
                        specs.append(_Spec("object", being, verb=verb.en,
                                           place=place, other=other))

    animate = [a for a in ADJECTIVES if ADJECTIVES[a].kind == "being"]
    for person in PERSONS:
        specs.extend(_Spec("simple", person, adj) for adj in animate)
    for being in being_names:
        specs.extend(_Spec("simple", being, adj) for adj in animate)
    for place in place_names:
        specs.extend(_Spec("simple", place, adj) for adj in PLACES[place].adjectives)
    return specs


def _combo_hash(combo: tuple) -> float:
    """Deterministic pseudo-random number in [0, 1) for a combo."""
    digest = hashlib.sha256(("|".join((_SPLIT_SALT,) + tuple(combo))).encode())
    return int.from_bytes(digest.digest()[:8], "big") / 2.0 ** 64


def _assign_splits(combos: list[tuple]) -> dict[tuple, str]:
    """Map each combo to "train", "valid" or "test".

    Starts from the hash, then promotes combos to train so that every noun,
    cue and frame, every (noun, frame) and (cue, frame) pair, and every
    (noun, cue) pair that occurs in more than one frame keeps at least one
    training combo.  Promotion only ever removes combos from valid/test.
    """
    assignment = {}
    for combo in combos:
        h = _combo_hash(combo)
        assignment[combo] = ("test" if h < _TEST_SHARE
                             else "valid" if h < _TEST_SHARE + _VALID_SHARE
                             else "train")

    key_functions = [
        lambda c: (0, c[0]), lambda c: (1, c[1]), lambda c: (2, c[2]),
        lambda c: (3, c[0], c[2]), lambda c: (4, c[1], c[2]),
        lambda c: (5, c[0], c[1]),
    ]
    for key_fn in key_functions:
        groups: dict[tuple, list[tuple]] = defaultdict(list)
        for combo in combos:
            groups[key_fn(combo)].append(combo)
        for key, members in groups.items():
            if key[0] == 5 and len(members) < 2:
                continue  # a single-frame noun-cue pair is free to be held out
            if not any(assignment[c] == "train" for c in members):
                # promote the member whose hash is closest to the train range
                assignment[max(members, key=_combo_hash)] = "train"
    return assignment


@lru_cache(maxsize=1)
def _specs_by_split() -> dict[str, tuple[_Spec, ...]]:
    """Enumerate the corpus once and partition it into the three splits."""
    specs = _enumerate_specs()
    combos = list(dict.fromkeys(_combo(s) for s in specs))
    assignment = _assign_splits(combos)
    by_split: dict[str, list[_Spec]] = {split: [] for split in SPLITS}
    for spec in specs:
        by_split[assignment[_combo(spec)]].append(spec)
    return {split: tuple(items) for split, items in by_split.items()}


@lru_cache(maxsize=None)
def _pairs(lang: str, split: str) -> tuple[Pair, ...]:
    """All pairs of one split in one language, in canonical order."""
    return tuple(_make_pair(spec, lang) for spec in _specs_by_split()[split])


def generate(lang: str, split: str, n: int | None = None, seed: int = 0) -> list[Pair]:
    """Return pairs of ``split`` ("train", "valid" or "test") in ``lang``.

    With ``n=None`` the whole split is returned, shuffled by ``seed``.  With
    ``n`` the result is a seeded sample of ``n`` distinct pairs; if ``n``
    exceeds the split size, ``train`` is topped up by sampling with
    replacement while ``valid``/``test`` are capped at their full size.
    Which sentences belong to a split never depends on ``seed``.
    """
    _check_lang(lang)
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    if n is not None and n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    pairs = list(_pairs(lang, split))
    rng = random.Random(seed)
    if n is None or n >= len(pairs):
        rng.shuffle(pairs)
        if n is not None and n > len(pairs) and split == "train":
            pairs += rng.choices(pairs, k=n - len(pairs))
        return pairs
    return rng.sample(pairs, n)


@lru_cache(maxsize=1)
def english_sentences() -> tuple[str, ...]:
    """Every English sentence of the generated corpus (all splits)."""
    return tuple(_render_en(spec) for spec in _enumerate_specs())


# --------------------------------------------------------------------------
# Probing and evaluation helpers
# --------------------------------------------------------------------------


def _gender(noun: Noun, lang: str) -> str:
    """Grammatical gender of a noun in ``lang``."""
    return noun.fr_gender if lang == "fr" else noun.de_gender


def probe_pairs(lang: str = "fr") -> list[tuple[Pair, Pair]]:
    """Minimal pairs whose adjective flips the referent of "it".

    The first pair is always "The animal didn't cross the street because it
    was too tired / wide.".  The others (two per animal, deterministic) use
    the because / when / although frames, differ in the adjective only, and
    pair an animal and a place of different gender in ``lang``, so the
    expected pronouns differ too.
    """
    _check_lang(lang)
    seed_specs = (_Spec("because", "animal", "tired", "cross", "street"),
                  _Spec("because", "animal", "wide", "cross", "street"))
    result = [tuple(_make_pair(s, lang) for s in seed_specs)]
    seen = {("because", "animal", "cross", "street")}
    rng = random.Random(_GRAMMAR_SEED)
    frames = ("because", "when", "although")
    for being_name, being in BEINGS.items():
        options = [(verb, place) for verb in VERBS.values() for place in verb.places
                   if _gender(PLACES[place], lang) != _gender(being, lang)]
        for verb, place in rng.sample(options, 2):
            frame = frames[len(result) % len(frames)]
            key = (frame, being_name, verb.en, place)
            if key in seen:
                continue
            seen.add(key)
            being_adj = rng.choice(COREF_BEING_ADJECTIVES)
            place_adj = rng.choice(PLACES[place].adjectives)
            result.append(tuple(_make_pair(_Spec(frame, being_name, adj, verb.en, place), lang)
                                for adj in (being_adj, place_adj)))
    return result


_FR_PRONOUNS = {"il", "elle"}
_FR_CLITICS = {"le", "la"}
_DE_PRONOUNS = {"er", "sie", "es", "ihn"}


def pronoun_of(translation: str, lang: str) -> str | None:
    """Find the pronoun that refers back to an antecedent in a translation.

    French: the first "il"/"elle" that is not the first word, or a "le"/"la"
    clitic right after "voulu" ("a voulu la traverser").  German: the first
    "er"/"sie"/"es"/"ihn" that is not the first word.  Sentence-initial
    pronouns ("Il est heureux.") are ordinary subjects, not back-references,
    so they are ignored.  Returns the lower-cased pronoun or None.
    """
    _check_lang(lang)
    tokens = [t.lower() for t in words(translation)]
    for i, token in enumerate(tokens[1:], start=1):
        if lang == "de":
            if token in _DE_PRONOUNS:
                return token
        elif token in _FR_PRONOUNS:
            return token
        elif token in _FR_CLITICS and tokens[i - 1] == "voulu":
            return token
    return None
