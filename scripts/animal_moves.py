"""How each animal noun of the lexicon moves — walks, flies, swims or crawls — for the sense filter of the Coreference
page's generated pairs (:func:`core.data.broad.reads_sensibly`: "The carp didn't cross the craters", "The oyster
couldn't jump over the boulder" read as nonsense although every word fits its slot's class).

    PYTHONPATH=. python scripts/animal_moves.py          # writes core/data/animal_moves.json

From WordNet 3.0 (Debian's wordnet-base, read as installed): the first sense of the noun in WordNet's animal file
whose hypernyms reach mammal, reptile or amphibian (walks), bird (flies), fish (swims) or invertebrate (crawls); then
:data:`OVERRIDES`, each read and decided by hand (WordNet's first animal sense is another animal, the noun is a
young or generic animal WordNet files elsewhere, or the animal moves otherwise than its class). The result is
committed; tests/core/test_broad.py checks that every animal noun of the lexicon has an entry.
"""
from __future__ import annotations

from pathlib import Path

from core.data import broad
from core.io import jsonio
from scripts.build_lexicon import WordNet, resolve

OUT = Path(broad.__file__).with_name("animal_moves.json")
CLASSES = {"walks": ["mammal.1", "reptile.1", "amphibian.3"], "flies": ["bird.1"], "swims": ["fish.1"],
           "crawls": ["invertebrate.1"]}
ANIMAL_FILE = 5  # WordNet's lexicographer file noun.animal
OVERRIDES = {
    # WordNet's first animal sense is another animal
    "dolphin": "swims",  # sense 1 is the dolphinfish; the mammal swims too
    "peacock": "walks",  # sense 1 is a butterfly; the bird walks more than it flies
    # young or generic animals, filed under "young mammal" or "animal", not under a class
    "animal": "walks", "beast": "walks", "creature": "walks", "calf": "walks", "foal": "walks", "kitten": "walks",
    "lamb": "walks", "piglet": "walks", "pup": "walks", "beaver": "walks",
    "seal": "swims", "tadpole": "swims", "langoustine": "swims",
    "caterpillar": "crawls", "larva": "crawls", "maggot": "crawls",
    "sparrowhawk": "flies",
    # mammals that do not walk across a street
    "bat": "flies", "whale": "swims", "otter": "swims", "walrus": "swims", "porpoise": "swims",
    # invertebrates that fly
    "bee": "flies", "butterfly": "flies", "dragonfly": "flies", "firefly": "flies", "fly": "flies", "gnat": "flies",
    "hornet": "flies", "horsefly": "flies", "mayfly": "flies", "mosquito": "flies", "moth": "flies", "wasp": "flies",
    "ladybird": "flies", "ladybug": "flies", "locust": "flies",
    # birds that walk (the chicken that crossed the road)
    "chicken": "walks", "chick": "walks", "hen": "walks", "rooster": "walks", "cock": "walks", "turkey": "walks",
    "duck": "walks", "duckling": "walks", "goose": "walks", "ostrich": "walks", "penguin": "walks",
    "pheasant": "walks", "quail": "walks", "emu": "walks",
}


def moves(wn: WordNet, roots: dict, noun: str) -> str | None:
    """How ``noun`` moves, from its first noun.animal sense reaching one of :data:`CLASSES` (None: none does)."""
    for off in wn.index.get(noun, [])[:8]:
        if wn.syn[off][0] != ANIMAL_FILE:
            continue
        hit = [how for how, r in roots.items() if wn.closure(off) & r]
        if hit:
            return hit[0]
    return None


def main() -> None:
    wn = WordNet()
    roots = {how: resolve(wn, names) for how, names in CLASSES.items()}
    animals = sorted(en for en, n in broad.lexicon().nouns.items() if "animal" in n.classes)
    table = {en: OVERRIDES.get(en) or moves(wn, roots, en) for en in animals}
    missing = [en for en, how in table.items() if how is None]
    if missing:
        raise SystemExit(f"no way of moving for {', '.join(missing)}: add them to OVERRIDES")
    OUT.write_text(jsonio.dumps({
        "source": "WordNet 3.0 (wordnet-base): hypernyms of the noun's first animal sense; overrides read by hand",
        "licence": "WordNet 3.0 licence (Princeton University)", "command": "PYTHONPATH=. python scripts/animal_moves.py",
        "moves": table}, indent=1, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")
    print(f"{OUT}: {len(table)} animals", {h: sum(v == h for v in table.values()) for h in CLASSES})


if __name__ == "__main__":
    main()
