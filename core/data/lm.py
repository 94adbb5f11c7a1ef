"""English language-modelling corpus built from the translation lexicon.

:func:`generate_corpus` writes simple English sentences and short 2-4
sentence stories about the same animals, places and adjectives as
:mod:`core.data.translation`, one sentence or story per line, e.g.::

    The dog was hungry. It walked to the field. The field was wide and empty.

:func:`load_text` is the safe way to read a user's own text file instead.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Callable

from core.data.translation import (
    ADJECTIVES,
    BEINGS,
    COREF_BEING_ADJECTIVES,
    OBJECT_VERBS,
    PLACES,
    VERBS,
    english_sentences,
)

__all__ = ["generate_corpus", "load_text"]

_BEINGS = tuple(BEINGS)
_PLACES = tuple(PLACES)
_ANIMATE_ADJECTIVES = tuple(a for a in ADJECTIVES if ADJECTIVES[a].kind == "being")
# Places one can rest "in" (as opposed to on a wall or a bridge).
_REST_PLACES = ("park", "forest", "garden", "field", "house", "box", "square")
# Places an animal can plausibly live next to and visit every day.
_ROUTINE_PLACES = tuple(p for p in _PLACES if p != "box")
# Probability that a line is a single sentence rather than a story.
_SINGLE_SHARE = 0.35


def _an(noun: str) -> str:
    """Indefinite article plus noun: "a dog", "an animal"."""
    return ("an " if noun[0] in "aeiou" else "a ") + noun


def _cap(text: str) -> str:
    """Upper-case the first character."""
    return text[:1].upper() + text[1:]


def _past_verbs_for(place: str) -> list[str]:
    """Past-tense verbs that fit ``place`` as their object ("crossed")."""
    verbs = [v.en_past for v in VERBS.values() if place in v.places]
    if place in OBJECT_VERBS["visit"].places:
        verbs.append("visited")
    return verbs or ["walked along"]


def _two_adjectives(rng: random.Random, place: str) -> tuple[str, ...]:
    """One or two distinct adjectives that fit ``place``."""
    options = PLACES[place].adjectives
    return tuple(rng.sample(options, 2 if len(options) > 1 else 1))


def _story_walk(rng: random.Random) -> list[str]:
    """An animal feels something and walks to a place that is described."""
    being, place = rng.choice(_BEINGS), rng.choice(_PLACES)
    described = " and ".join(_two_adjectives(rng, place))
    return [f"The {being} was {rng.choice(_ANIMATE_ADJECTIVES)}.",
            f"It walked to the {place}.",
            f"The {place} was {described}."]


def _story_routine(rng: random.Random) -> list[str]:
    """A daily habit that is broken one day."""
    being, place = rng.choice(_BEINGS), rng.choice(_ROUTINE_PLACES)
    verb = rng.choice(_past_verbs_for(place))
    adjective = rng.choice(PLACES[place].adjectives)
    return [f"The {being} lived next to the {place}.",
            f"Every morning it {verb} the {place}.",
            f"One day the {place} was too {adjective}, so the {being} stayed at home."]


def _story_meeting(rng: random.Random) -> list[str]:
    """Two animals meet somewhere and are contrasted."""
    first, second = rng.sample(_BEINGS, 2)
    place, rest = rng.choice(_PLACES), rng.choice(_REST_PLACES)
    mood_a, mood_b = rng.sample(_ANIMATE_ADJECTIVES, 2)
    story = [f"{_cap(_an(first))} and {_an(second)} met next to the {place}.",
             f"The {first} was {mood_a}, but the {second} was {mood_b}."]
    if rng.random() < 0.5:
        story.append(f"Later they rested in the {rest}.")
    return story


def _story_chase(rng: random.Random) -> list[str]:
    """One animal chases another across a place."""
    hunter, prey = rng.sample(_BEINGS, 2)
    place = rng.choice(VERBS["cross"].places)
    story = [f"The {hunter} saw {_an(prey)} in the {place}.",
             f"It chased the {prey} across the {place}."]
    if rng.random() < 0.7:
        story.append(f"Soon the {hunter} was too {rng.choice(COREF_BEING_ADJECTIVES)}, "
                     "so it lay down.")
    if rng.random() < 0.4:
        story.append(f"The {prey} was {rng.choice(_ANIMATE_ADJECTIVES)}.")
    return story


def _story_place_first(rng: random.Random) -> list[str]:
    """A place is described, then an animal arrives there."""
    place, being = rng.choice(_REST_PLACES), rng.choice(_BEINGS)
    return [f"The {place} was {rng.choice(PLACES[place].adjectives)}.",
            f"{_cap(_an(being))} came to the {place}.",
            f"It was {rng.choice(_ANIMATE_ADJECTIVES)}, so it stayed there."]


def _story_refusal(rng: random.Random, refusals: tuple[str, ...]) -> list[str]:
    """A "didn't ... because it was too ..." sentence and its consequence."""
    sentence = rng.choice(refusals)
    being = sentence.split()[1]
    follow_up = rng.choice([f"Instead, the {being} went home.",
                            f"The {being} waited until the next day.",
                            f"So the {being} rested for a while."])
    return [sentence, follow_up]


def _refusals(sources: tuple[str, ...]) -> tuple[str, ...]:
    """The "didn't ... because" sentences among the translation sources."""
    return tuple(s for s in sources if " didn't " in s)


def _single_sentence(rng: random.Random, sources: tuple[str, ...]) -> list[str]:
    """One English sentence from the translation grammar."""
    return [rng.choice(sources)]


_STORIES: tuple[Callable[[random.Random], list[str]], ...] = (
    _story_walk, _story_routine, _story_meeting, _story_chase, _story_place_first,
)


def generate_corpus(n_sentences: int, seed: int = 0) -> str:
    """Return ``n_sentences`` English sentences, one sentence or story per line.

    Lines are either single sentences from the translation grammar or short
    2-4 sentence stories; the total number of sentences is exactly
    ``n_sentences`` (the last story is cut short if needed).  The result is
    deterministic for a given ``seed`` and has no trailing newline.
    """
    if isinstance(n_sentences, bool) or not isinstance(n_sentences, int):
        raise ValueError(f"n_sentences must be an int, got {n_sentences!r}")
    if n_sentences < 0:
        raise ValueError(f"n_sentences must be non-negative, got {n_sentences}")
    rng = random.Random(seed)
    sources = english_sentences()
    refusals = _refusals(sources)
    lines: list[str] = []
    remaining = n_sentences
    while remaining > 0:
        roll = rng.random()
        if roll < _SINGLE_SHARE:
            item = _single_sentence(rng, sources)
        elif roll < _SINGLE_SHARE + 0.1:
            item = _story_refusal(rng, refusals)
        else:
            item = rng.choice(_STORIES)(rng)
        item = item[:remaining]
        lines.append(" ".join(item))
        remaining -= len(item)
    return "\n".join(lines)


def load_text(path: str | os.PathLike, max_bytes: int = 5_000_000) -> str:
    """Read a user's UTF-8 text file for language modelling.

    Returns the text with a leading byte-order mark removed and line endings
    normalised to "\\n".  Raises ValueError with a readable message if the
    file is missing or not a regular file, larger than ``max_bytes``, looks
    binary (contains NUL bytes), is not valid UTF-8, or holds only
    whitespace.
    """
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"{file} is not a readable file")
    size = file.stat().st_size
    if size > max_bytes:
        raise ValueError(f"{file.name} is {size:,} bytes; the limit is {max_bytes:,} bytes")
    data = file.read_bytes()
    if len(data) > max_bytes:  # the file grew after stat()
        raise ValueError(f"{file.name} is larger than the limit of {max_bytes:,} bytes")
    if b"\x00" in data:
        raise ValueError(f"{file.name} looks like a binary file (it contains NUL bytes)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"{file.name} is not valid UTF-8 text (bad byte at "
                         f"position {err.start})") from None
    if not text.strip():
        raise ValueError(f"{file.name} is empty (or contains only whitespace)")
    return text.replace("\r\n", "\n").replace("\r", "\n")
