#!/usr/bin/env python3
"""Derive the lexicon from installed Debian dictionaries (step one of two).

    python3 scripts/build_lexicon.py --out core/data/review/derived.json   # a new table for the hand review
    python3 scripts/apply_review.py                                        # step two: writes core/data/lexicon.json

core/data/lexicon.json is the *reviewed* lexicon (scripts/apply_review.py applies the decisions in
core/data/review/ to derived.json), so this script never writes it by default: --out is required.

Needs (apt): dict-freedict-eng-fra dict-freedict-fra-eng dict-freedict-eng-deu
dict-freedict-deu-eng hunspell hunspell-fr-classical hunspell-de-de wordnet-base.
Python standard library only; calls the `hunspell` binary in batch (a handful of
processes).  Deterministic: every choice is a sort with a total order.

Nouns: English candidates are WordNet nouns whose most frequent sense (index.noun
order) falls under one of the class roots below.  A French translation must appear
in eng-fra for the word *and* give the word back in fra-eng (or be found through
fra-eng and given back there); its gender and plural come from hunspell-fr's
morphology (`hunspell -m`).  A German translation must be tagged <masc>/<fem>/<neut>
in eng-deu and give the word back in deu-eng with the same gender; the plural must
be a deu-eng <pl> entry whose translation is the English plural.  Everything that
cannot be established is dropped and counted.
Adjectives and verbs are a hand-made English list with hand-chosen translations;
each translation is checked against the dictionaries (round trip) and every French
and German form against hunspell; failures are dropped and reported.
"""
import argparse
import collections
import gzip
import json
import os
import re
import subprocess

from core.data import frozen

DICTD = '/usr/share/dictd'
WN = '/usr/share/wordnet'
# hunspell's dictionaries are read from the frozen copies (assets/corpora/hunspell, scripts/freeze_hunspell.py), so a
# Debian point release cannot change a check; FreeDict and WordNet are read as installed (see tests/core/test_lexicon.py)
_HUN = frozen.files('hunspell')
HUN_FR = str(_HUN / 'fr')
HUN_DE = str(_HUN / 'de_DE')
APT = ('dict-freedict-eng-fra dict-freedict-fra-eng dict-freedict-eng-deu dict-freedict-deu-eng '
       'hunspell hunspell-fr-classical hunspell-de-de wordnet-base')

DROPS = collections.Counter()
WHY = {}


def drop(reason, word=None):
    DROPS[reason] += 1
    if word is not None:
        WHY[word] = reason
    return None


# ---------------------------------------------------------------- dictd files
_B64 = {c: i for i, c in enumerate('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/')}


def _b64(s):
    n = 0
    for c in s:
        n = n * 64 + _B64[c]
    return n


def load_dict(name):
    """headword (lower-case, as indexed) -> list of entry texts, in file order."""
    raw = gzip.open(os.path.join(DICTD, f'freedict-{name}.dict.dz')).read()
    idx = {}
    with open(os.path.join(DICTD, f'freedict-{name}.index'), encoding='utf-8') as f:
        for line in f:
            p = line.rstrip('\n').split('\t')
            if len(p) < 3 or p[0].startswith('00-database') or p[0].startswith('00database'):
                continue
            o, n = _b64(p[1]), _b64(p[2])
            idx.setdefault(p[0], []).append(raw[o:o + n].decode('utf-8'))
    return idx, raw


def headword(entry):
    first = entry.split('\n', 1)[0]
    return re.split(r' /| \(|\t| <', first, 1)[0].strip()


def split_top(s, sep=','):
    """Split on sep outside (), [], {}."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth = max(0, depth - 1)
        if ch == sep and depth == 0:
            out.append(''.join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append(''.join(cur))
    return [x.strip() for x in out if x.strip()]


def clean_item(s):
    s = re.sub(r'\[[^\]]*\]', ' ', s)
    s = re.sub(r'\([^)]*\)', ' ', s)
    if '<' in s:
        s = s[:s.index('<')]
    return ' '.join(s.split())


# FreeDict eng-fra / fra-eng: "head /ipa/ <tags>\n1. a, b\n2. c\n"
def small_senses(entry):
    lines = entry.strip('\n').split('\n')
    tag = re.search(r'<([^>]*)>', lines[0])
    senses = []
    for ln in lines[1:]:
        ln = re.sub(r'^\s*\d+\.\s*', '', ln).strip()
        if ln:
            senses.append([clean_item(x) for x in split_top(ln)])
    return (tag.group(1) if tag else ''), senses


# Ding eng-deu / deu-eng
def ding_parse(entry):
    lines = entry.split('\n')
    head = lines[0]
    tags = re.findall(r'<([^>]*)>', head)
    trans = lines[1] if len(lines) > 1 else ''
    see = []
    m = re.search(r'\n see: (.*)', entry)
    if m:
        see = re.findall(r'\{([^}]*)\}', m.group(1))
    examples = len(re.findall(r'\n\s+"', entry))
    return headword(entry), (tags[0] if tags else ''), trans, see, examples


# ---------------------------------------------------------------- hunspell
def hunspell_analyse(dic, words):
    """word -> list of analysis strings (empty list: unknown)."""
    words = sorted(set(words))
    if not words:
        return {}
    p = subprocess.run(['hunspell', '-d', dic, '-i', 'utf-8', '-m'], input='\n'.join(words) + '\n',
                       capture_output=True, text=True, encoding='utf-8', env=dict(os.environ, LC_ALL='C.UTF-8'))
    res = {w: [] for w in words}
    for ln in p.stdout.split('\n'):
        if not ln.strip():
            continue
        parts = ln.split(None, 1)
        if parts[0] in res and len(parts) > 1:
            res[parts[0]].append(parts[1])
    return res


def hunspell_unknown(dic, words):
    words = sorted(set(w for w in words if w))
    if not words:
        return set()
    p = subprocess.run(['hunspell', '-d', dic, '-i', 'utf-8', '-l'], input='\n'.join(words) + '\n',
                       capture_output=True, text=True, encoding='utf-8', env=dict(os.environ, LC_ALL='C.UTF-8'))
    return set(x.strip() for x in p.stdout.split('\n') if x.strip())


# ---------------------------------------------------------------- WordNet
class WordNet:
    def __init__(self):
        self.syn = {}  # offset -> (lexfile, [lemmas], [hypernym offsets])
        self.glosses = {}  # offset -> WordNet's definition and examples
        with open(os.path.join(WN, 'data.noun'), encoding='latin-1') as f:
            for ln in f:
                if ln.startswith('  '):
                    continue
                p = ln.split(' | ')[0].split()
                off, lexf = p[0], int(p[1])
                wc = int(p[3], 16)
                lemmas = [p[4 + 2 * i] for i in range(wc)]
                k = 4 + 2 * wc
                pc = int(p[k])
                hyp = []
                for i in range(pc):
                    sym, o, pos = p[k + 1 + 4 * i], p[k + 2 + 4 * i], p[k + 3 + 4 * i]
                    if sym == '@' and pos == 'n':
                        hyp.append(o)
                self.syn[off] = (lexf, lemmas, hyp)
                self.glosses[off] = ln.split(' | ', 1)[1].strip() if ' | ' in ln else ''
        self.index = {}
        with open(os.path.join(WN, 'index.noun'), encoding='latin-1') as f:
            for ln in f:
                if ln.startswith('  '):
                    continue
                p = ln.split()
                n = int(p[2])
                self.index[p[0]] = p[-n:]
        self.count = collections.Counter()   # (lemma, sense_no) -> tag count
        with open(os.path.join(WN, 'cntlist.rev'), encoding='latin-1') as f:
            for ln in f:
                key, sn, c = ln.split()
                lemma, rest = key.split('%', 1)
                if rest.startswith('1:'):
                    self.count[(lemma, int(sn))] += int(c)
        self.plural_exc = collections.defaultdict(list)
        with open(os.path.join(WN, 'noun.exc'), encoding='latin-1') as f:
            for ln in f:
                p = ln.split()
                if len(p) == 2:
                    self.plural_exc[p[1]].append(p[0])
        self._closure = {}

    def gloss(self, off):
        return self.glosses.get(off, '')

    def closure(self, off):
        if off in self._closure:
            return self._closure[off]
        seen, todo = set(), [off]
        while todo:
            o = todo.pop()
            if o in seen:
                continue
            seen.add(o)
            todo.extend(self.syn[o][2])
        self._closure[off] = seen
        return seen

    def sense(self, lemma, n=1):
        offs = self.index.get(lemma)
        return offs[n - 1] if offs and len(offs) >= n else None

    def total(self, lemma):
        return sum(self.count[(lemma, i + 1)] for i in range(len(self.index.get(lemma, []))))


# ---------------------------------------------------------------- nouns
CLASS_ROOTS = {
    'animal': ['animal.1'],
    'person': ['person.1'],
    'food': ['food.1', 'food.2'],
    'drink': ['beverage.1'],
    'plant': ['plant.2'],
    'vehicle': ['vehicle.1', 'public_transport.1'],
    'building': ['building.1'],
    'furniture': ['furniture.1'],
    'clothing': ['clothing.1', 'footwear.1', 'footwear.2'],
    'tool': ['tool.1'],
    'instrument': ['musical_instrument.1'],
    'container': ['container.1'],
    'vessel': ['vessel.3', 'drinking_vessel.1'],
    'object': ['device.1', 'implement.1', 'container.1', 'toy.1', 'clothing.1', 'footwear.1', 'footwear.2',
               'equipment.1', 'tableware.1', 'jewelry.1', 'musical_instrument.1', 'covering.2',
               'piece_of_cloth.1', 'decoration.1', 'fabric.1', 'cushion.3', 'rope.1', 'representation.2'],
    'place': ['thoroughfare.1', 'road.1', 'path.2', 'body_of_water.1', 'tract.1', 'shore.1',
              'natural_depression.1', 'bridge.1', 'square.3', 'forest.1'],
    'obstacle': ['barrier.1', 'natural_elevation.1', 'rock.1', 'tree.1', 'ladder.1', 'wall.1', 'wall.7'],
}
# an 'object' is portable: nothing under these
NOT_OBJECT = ['structure.1', 'building.1', 'vehicle.1', 'conveyance.3', 'machine.1', 'furniture.1',
              'system.1', 'facility.1', 'way.6', 'roof.1', 'floor.1', 'installation.2', 'commercial_art.1',
              'art.1', 'product.2', 'movie.1', 'sheet.8', 'flooring.1', 'paving.1']
GROUPS = {'animal': 'animal', 'person': 'person', 'food': 'org', 'drink': 'org', 'plant': 'org',
          'vehicle': 'vehicle', 'building': 'site', 'place': 'site', 'obstacle': 'site',
          'furniture': 'thing', 'clothing': 'thing', 'tool': 'thing', 'instrument': 'thing',
          'container': 'thing', 'vessel': 'thing', 'object': 'thing'}

# Words whose most frequent WordNet sense is not the everyday concrete one: the sense to use.
SENSE = {'book': 2, 'plate': 4, 'hammer': 2, 'square': 3, 'path': 2, 'plant': 2, 'glass': 2,
         'trophy': 2, 'fox': 1, 'bridge': 1, 'table': 2, 'bone': 1, 'window': 1, 'water': 6}
MASS = {'water'}
# Everyday words whose most frequent sense is another one, checked by hand: the translation (still subject to the
# round trip and the French-German pairing) is the same word for both senses.  word -> class of the sense to use
SENSE_CLASS = {'school': 'building', 'church': 'building', 'egg': 'food', 'brick': 'object', 'cage': 'container',
               'belt': 'clothing', 'barrel': 'container', 'radio': 'object', 'seat': 'furniture', 'drink': 'drink',
               'balloon': 'object', 'pillar': 'obstacle', 'hammock': 'object', 'peach': 'food', 'chestnut': 'food',
               'birch': 'plant', 'alpaca': 'animal', 'chinchilla': 'animal', 'mink': 'animal', 'laurel': 'plant',
               'lighter': 'object', 'gem': 'object', 'pill': 'object', 'portrait': 'object', 'drawing': 'object',
               'hotel': 'building', 'castle': 'building', 'tower': 'building', 'museum': 'building',
               'library': 'building', 'bank': 'building', 'shop': 'building', 'store': 'building'}

# Required words that FreeDict's small French dictionaries lack (no round trip possible): French chosen by hand,
# gender and plural still from hunspell-fr, German still from Ding with its round trip.
FR_HAND = {'trophy': 'trophée'}
# Class corrections after reading the lists (checked by hand).
CLASS_ADD = {
    'cup': ['vessel'], 'mug': ['vessel'], 'glass': ['vessel'], 'kettle': ['vessel'], 'teapot': ['vessel'],
    'pail': ['vessel'], 'pitcher': ['vessel'], 'carafe': ['vessel'], 'flask': ['vessel'],
    'trophy': ['object'], 'book': ['object'], 'ladder': ['object'], 'drawer': ['container'],
    'hedge': ['obstacle'], 'log': ['obstacle'], 'stone': ['obstacle', 'object'], 'fence': ['obstacle'],
    'garden': ['place'], 'stairs': ['obstacle'], 'bench': ['obstacle'], 'bone': ['object'], 'window': ['object'],
    'water': ['drink'],
}
CLASS_DEL = {'water': ['place']}
# read in the lists and dropped: vague, abstract-leaning or mistranslated through another sense
DENY = set('''decoration design display document modification note plan representation scenery set shield staple
stock streak trace invention invitation article commodity merchandise product glaze garnish binding spectacle mesh
needlework cornice linen diagram figure sunshade conciliator hombre varan wienerwurst sentry hanger shrew exhibitioner
wedge woodwind puppet roast rand fauna fille vitrine wardrobe founder assistant hope pivot authority acceptor
nonstarter attender escort type cipher'''.split())
# Preferred translations (must pass the same round-trip and gender checks as any other).
PREFER = {
    'car': ('voiture', 'Auto'), 'dog': ('chien', 'Hund'), 'cat': ('chat', 'Katze'), 'trophy': ('trophée', 'Pokal'),
    'suitcase': ('valise', 'Koffer'), 'coffee': ('café', 'Kaffee'), 'street': ('rue', 'Straße'),
    'animal': ('animal', 'Tier'), 'river': ('rivière', 'Fluss'), 'square': ('place', 'Platz'),
    'forest': ('forêt', 'Wald'), 'rock': ('rocher', 'Felsen'), 'ball': ('balle', 'Ball'), 'key': ('clé', 'Schlüssel'),
    'bicycle': ('vélo', 'Fahrrad'), 'hill': ('colline', 'Hügel'), 'phone': ('téléphone', 'Telefon'),
    'sausage': ('saucisse', 'Wurst'), 'person': ('personne', 'Person'), 'water': ('eau', 'Wasser'),
}

VOWELS = 'aeiouàâäéèêëîïôöùûüœæ'
H_ASPIRE = set('''hautbois huppe haut-parleur hors-bord
hache haie haillon haine hall halle halte hamac hameau hamburger hamster hanche handicap hangar
hanneton harde hareng haricot harpe hasard hâte hausse hauteur havre hérisson héron héros hêtre hibou hiérarchie
hippie hobby hockey homard honte hoquet hotte houe houx housse hublot huit hurlement hutte harnais hachoir harpon
havresac hennissement hernie hochet houille houlette huche hune hussard haddock hachis hachette hampe handball
harem harfang hargne harpie hase hérissé houblon houle huée hurleur haut hauts hall haltère hamburger hérault
hockey honte hors-d'œuvre hot-dog huguenot hyène hareng hérisson hippopotame'''.split()) - {'haltère', 'hippopotame'}
H_MUET = set('''historien héritière hortensia
habit habitant habitation habitude haleine haltère hameçon harmonie harmonica hélicoptère herbe
héritage héritier héroïne hippopotame hirondelle histoire hiver homme honneur hôpital horaire horizon horloge
horloger hormone horreur hostilité hôte hôtel hôtesse huile huître humain humeur humidité humour hydravion hyène
hygiène hymne hypothèse hôtelier héliport hélice hémisphère herbivore hérédité hermine hétérogénéité heure
hibiscus hippodrome hippocampe holocauste homicide homologue hôpitaux horlogerie hospice hospitalité hostie
hectare hélium hermite huissier humanité humidificateur hybride hydrogène hyperbole hypermarché'''.split())
Y_NO_ELIDE = {'yacht', 'yaourt', 'yoga', 'yak', 'yéti', 'yoyo', 'yen', 'yankee', 'yod', 'ouistiti', 'onze'}
DE_EN_PLURAL_OK = {'Bett', 'Hemd', 'Ohr', 'Staat', 'Strahl', 'Schmerz', 'See', 'Nerv', 'Insekt', 'Juwel', 'Vetter',
                   'Typ', 'Zeh', 'Sporn', 'Dorn', 'Mast', 'Fasan', 'Pfau', 'Lorbeer', 'Ende', 'Auge'}
WEAK_EXTRA = {'Mensch', 'Herr', 'Bär', 'Held', 'Fürst', 'Graf', 'Prinz', 'Narr', 'Nachbar', 'Bauer', 'Kamerad',
              'Bub', 'Christ', 'Hirt', 'Spatz', 'Fink', 'Ochse', 'Pfau', 'Oberst', 'Untertan', 'Zar', 'Rebell',
              'Tor', 'Bursche', 'Kunde', 'Mohr', 'Ahn', 'Vorfahr', 'Gesell', 'Satellit', 'Planet', 'Komet',
              'Automat', 'Diamant', 'Elefant', 'Leopard', 'Gepard', 'Falke', 'Rabe', 'Affe', 'Hase', 'Löwe'}
WEAK_SUFFIX = ('ant', 'ent', 'ist', 'oge', 'graf', 'graph', 'nom', 'soph', 'krat', 'at', 'et', 'it', 'ot', 'ad')
NOT_WEAK = {'Käse', 'Staat', 'Schmerz', 'See', 'Strahl', 'Dorn', 'Mast', 'Vetter', 'Nerv', 'Muskel', 'Professor',
            'Doktor', 'Motor', 'Pantoffel', 'Stachel', 'Zeh', 'Typ', 'Fleck', 'Sporn', 'Lorbeer', 'Bauer_cage',
            'Pastor', 'Direktor', 'Autor', 'Traktor', 'Reaktor', 'Monitor', 'Faktor', 'Tenor'}


def en_plural_attested(D, w, cands):
    """The first plural candidate that eng-deu lists with German <pl> items (regular forms first)."""
    for c in cands + [w]:
        if any(tag.startswith('pl') for (_, tag, *_r) in D.ed_items(c)):
            return c
    return cands[0]


def en_plural_candidates(w, wn):
    c = []
    if w.endswith('man') and w not in ('human', 'german', 'roman', 'talisman', 'shaman', 'caiman', 'ottoman', 'cayman'):
        c.append(w[:-3] + 'men')
    if re.search(r'(s|x|z|ch|sh)$', w):
        c.append(w + 'es')
    elif re.search(r'[^aeiou]y$', w):
        c.append(w[:-1] + 'ies')
    elif w.endswith('o'):
        c += [w + 's', w + 'es']
    else:
        c.append(w + 's')
    # WordNet's irregular plurals first (mice, wolves), except spelling variants that double a consonant (busses)
    exc = [x for x in wn.plural_exc.get(w, []) if not (x.startswith(w) and x[len(w):len(w) + 1] == w[-1])]
    return list(dict.fromkeys(exc + c))


def fr_plural_candidates(w):
    irregular = {'œil': ['yeux'], 'ciel': ['cieux', 'ciels'], 'aïeul': ['aïeux'], 'monsieur': ['messieurs'],
                 'madame': ['mesdames'], 'bonhomme': ['bonshommes']}
    if w in irregular:
        return irregular[w]
    if re.search(r'[sxz]$', w):
        return [w]
    c = []
    if w.endswith('al'):
        c.append(w[:-2] + 'aux')
    if w.endswith('ail'):
        c.append(w[:-3] + 'aux')
    if re.search(r'(eau|au|eu|ou)$', w):
        c.append(w + 'x')
    c.append(w + 's')
    return c


class Dicts:
    def __init__(self):
        self.ef, _ = load_dict('eng-fra')
        self.fe, _ = load_dict('fra-eng')
        self.fd, _ = load_dict('fra-deu')
        self.df, _ = load_dict('deu-fra')
        self.ed, raw_ed = load_dict('eng-deu')
        self.de, raw = load_dict('deu-eng')
        # frequency proxy for German words: occurrences in the dictionary's example sentences
        txt = raw.decode('utf-8')
        ex = '\n'.join(re.findall(r'\n\s+"([^"\n]*)"', txt))
        self.de_freq = collections.Counter(re.findall(r"[A-Za-zÄÖÜäöüß]+", ex))
        # example sentence pairs (English tokens, German tokens) from both directions: which German word
        # translates an English word in running text is the best everyday-usage signal the data has
        self.pairs = []
        for m in re.finditer(r'\n\s+"([^"\n]*)"\s+- ([^\n]*)', raw_ed.decode('utf-8')):
            self.pairs.append((m.group(1), m.group(2)))
        for m in re.finditer(r'\n\s+"([^"\n]*)"\s+- ([^\n]*)', txt):
            self.pairs.append((m.group(2), m.group(1)))
        self.en_lines = collections.defaultdict(set)
        self.de_lines = collections.defaultdict(set)
        for i, (e, g) in enumerate(self.pairs):
            for t in set(re.findall(r"[a-z]+", e.lower())):
                self.en_lines[t].add(i)
            for t in set(re.findall(r"[A-Za-zÄÖÜäöüß]+", g)):
                self.de_lines[t].add(i)
        # reverse fra-eng: english word -> [(french head, sense no, item no, tag)]
        self.fe_rev = collections.defaultdict(list)
        for key in sorted(self.fe):
            for ent in self.fe[key]:
                head = headword(ent)
                tag, senses = small_senses(ent)
                for si, items in enumerate(senses):
                    for ii, it in enumerate(items):
                        self.fe_rev[it].append((head, si, ii, tag))

    # ---- French
    def fe_gives(self, fr, en, pos='n'):
        """(sense index, item index) of `en` in fra-eng[fr] for entries tagged pos, or None."""
        best = None
        for ent in self.fe.get(fr.lower(), []):
            if headword(ent) != fr:
                continue
            tag, senses = small_senses(ent)
            if not re.match(pos, tag):
                continue
            for si, items in enumerate(senses):
                for ii, it in enumerate(items):
                    if it == en or (pos == 'v' and it == 'to ' + en):
                        cand = (si, ii)
                        best = cand if best is None else min(best, cand)
        return best

    def fe_gender(self, fr, en):
        gs = set()
        for ent in self.fe.get(fr.lower(), []):
            if headword(ent) != fr:
                continue
            tag, senses = small_senses(ent)
            if tag.startswith('n') and any(en in items for items in senses):
                gs |= {'m' if 'masc' in tag else 'f' if 'fem' in tag else '?'}
        return gs.pop() if len(gs) == 1 and gs != {'?'} else None

    def fr_de(self, fr, de):
        """French-German FreeDict/WikDict (either direction) pairs fr with de."""
        for ent in self.fd.get(fr.lower(), []):
            if headword(ent) == fr and de in re.findall(r"[\w-]+", ent.split('\n', 1)[1] if '\n' in ent else ''):
                return True
        for ent in self.df.get(de.lower(), []):
            if headword(ent) == de and fr in re.findall(r"[\w'-]+", ent.split('\n', 1)[1] if '\n' in ent else ''):
                return True
        return False

    def ef_items(self, en):
        out = []
        for ent in self.ef.get(en.lower(), []):
            if headword(ent) != en:
                continue
            _, senses = small_senses(ent)
            for si, items in enumerate(senses):
                for ii, it in enumerate(items):
                    out.append((it, si, ii))
        return out

    # ---- German
    def ed_items(self, en):
        """German items of eng-deu[en]: (word, tag, entry no, item no, register-marked)."""
        out = []
        for ei, ent in enumerate(self.ed.get(en.lower(), [])):
            if headword(ent) != en:
                continue
            trans = ent.split('\n')[1] if '\n' in ent else ''
            for ii, it in enumerate(split_top(trans)):
                m = re.match(r'^(?:\[[^\]]*\]\s*)*([^\s<\[]+) <([^>]*)>(.*)$', it.strip())
                if not m:
                    continue
                marked = bool(re.search(r'\[(ugs\.|coll\.|slang|pej\.|vulg\.|veraltet|obs\.|dialect\.|Ös\.|Schw\.|'
                                        r'Süddt\.|Norddt\.|Mittelwestdt\.|Ostdt\.|Westdt\.|regional|humor\.|'
                                        r'selten|rare|poet\.|geh\.|fig\.|Dt\.|Bayr\.)', it))
                out.append((m.group(1), m.group(2), ei, ii, marked))
        return out

    def de_entries(self, word):
        for ent in self.de.get(word.lower(), []):
            h, tag, trans, see, ex = ding_parse(ent)
            if h == word:
                yield tag, trans, see, ent

    def cooc(self, en, de):
        el = set()
        for f in (en, en + 's', en + 'es'):
            el |= self.en_lines.get(f, set())
        dl = set()
        for f in [de] + de_plural_rules(de):
            dl |= self.de_lines.get(f, set())
        return len(el & dl)

    @staticmethod
    def trans_has(trans, en):
        return any(clean_item(x) == en for x in split_top(trans))


GENDER_DE = {'masc': 'm', 'fem': 'f', 'neut': 'n'}
CONCRETE_LEXFILES = {5, 6, 13, 15, 17, 18, 20, 27, 14}


def resolve(wn, names):
    out = set()
    for n in names:
        lemma, s = n.rsplit('.', 1)
        o = wn.sense(lemma, int(s))
        if o is None:
            raise SystemExit(f'WordNet sense {n} not found')
        out.add(o)
    return out


def classes_of(wn, off, roots, not_object):
    cl = wn.closure(off)
    cs = {c for c, r in roots.items() if cl & r}
    if 'drink' in cs:
        cs.discard('food')
    if 'object' in cs and cl & not_object:
        cs.discard('object')
    if 'container' in cs and 'object' not in cs:
        cs.discard('container')
    if 'vessel' in cs and 'object' not in cs:
        cs.discard('vessel')
    return cs


def choose_french(D, keys, prefer, hfr, de, person=False):
    """keys: the English word, then its synonyms in the chosen WordNet synset.  -> (fr, gender) or reason."""
    cands = {}
    for ki, en in enumerate(keys):
        for rank, (it, si, ii) in enumerate(D.ef_items(en)):
            if re.fullmatch(r"[a-zàâäçéèêëîïôöùûüœæ'-]+", it):
                cands.setdefault(it, (ki, 0, 0, rank))
        for (head, si, ii, tag) in D.fe_rev.get(en, []):
            if tag.startswith('n') and re.fullmatch(r"[a-zàâäçéèêëîïôöùûüœæ-]+", head):
                cands.setdefault(head, (ki, 1, si, ii))
    if not cands:
        return 'fr: no FreeDict translation'
    good = []
    for f, pref in cands.items():
        rts = [(D.fe_gives(f, en, 'n'), ki, en) for ki, en in enumerate(keys)]
        rts = [(r, ki, en) for r, ki, en in rts if r is not None]
        if not rts:
            continue
        rt, ki, en = min(rts)
        g = fr_gender(hfr, f, D.fe_gender(f, en), person)
        if g is None:
            continue
        tri = D.fr_de(f, de) if de else False
        good.append(((0 if prefer == f else 1, 0 if tri else 1, ki, rt[0], rt[1]) + pref + (len(f), f), f, g, ki == 0))
    if prefer and prefer not in [x[1] for x in good]:
        return 'fr: preferred translation failed its checks'
    if not good:
        return 'fr: no translation passing round trip + hunspell gender + French-German pairing'
    good.sort()
    return [g[1:] for g in good]


def fr_gender(hfr, f, tag_gender=None, person=False):
    """Gender from hunspell-fr; where hunspell allows both (souris, vase), the fra-eng entry that gave the
    English word back decides, if it is tagged."""
    # any noun analysis of the form itself (plante is analysed as the feminine of 'plant')
    an = [a for a in hfr.get(f, []) if 'po:nom' in a.split()]
    an = [a for a in an if 'is:sg' in a.split() or 'is:inv' in a.split()]
    gs = set()
    for a in an:
        if 'is:mas' in a:
            gs.add('m')
        if 'is:fem' in a:
            gs.add('f')
        if 'is:epi' in a:
            gs.add('e')
    if tag_gender and tag_gender in gs and gs <= {'m', 'f'}:
        return tag_gender
    if tag_gender and gs == {'e'} and not person:    # livre: hunspell 'epi' (le livre / la livre)
        return tag_gender
    return gs.pop() if len(gs) == 1 and gs != {'e'} else None


DOMAIN_OK = {'animal': {'zool', 'ornith', 'ichth', 'entom', 'biol'}, 'plant': {'bot', 'agr', 'biol'},
             'food': {'cook', 'agr', 'bot'}, 'drink': {'cook'}, 'vehicle': {'auto', 'aviat', 'naut', 'railw', 'transp'},
             'instrument': {'mus'}, 'tool': {'techn'}, 'building': {'arch', 'constr'}, 'clothing': {'textil'}}
DOMAIN_SPECIAL = {'techn', 'mach', 'naut', 'geol', 'min', 'constr', 'mil', 'textil', 'mus', 'electr', 'comp', 'chem',
                  'med', 'phys', 'math', 'print', 'econ', 'fin', 'jur', 'adm', 'pol', 'sport', 'aviat', 'railw',
                  'statist', 'ling', 'biochem', 'pharm', 'photo', 'telco', 'envir', 'zool', 'bot', 'ornith', 'ichth',
                  'entom', 'anat', 'astron', 'astrol', 'relig', 'agr', 'auto', 'biol', 'geogr', 'hist', 'mining',
                  'metal', 'arch', 'art', 'cook'}


def specialised(entry, cls):
    """The deu-eng entry carries only subject-field tags that do not fit the noun's classes."""
    line = entry.split('\n')[1] if '\n' in entry else ''
    tags = {t.rstrip('.') for t in re.findall(r'\[([a-zA-Z]+\.?)\]', line)}
    tags &= DOMAIN_SPECIAL
    if not tags:
        return False
    ok = set().union(*[DOMAIN_OK.get(c, set()) for c in cls]) if cls else set()
    return not (tags & ok)


def choose_german(D, keys, prefer, cls, unk_de=frozenset()):
    cands = {}
    for ki, en in enumerate(keys):
        for (w, tag, ei, ii, marked) in D.ed_items(en):
            if tag not in GENDER_DE or not re.fullmatch(r'[A-ZÄÖÜ][a-zäöüß]+', w) or w in unk_de:
                continue
            cands.setdefault(w, []).append((GENDER_DE[tag], ki, ei, ii, marked))
    if not cands:
        return 'de: no Ding translation'
    good = []
    for w, occ in cands.items():
        gs_ed = {o[0] for o in occ}
        rt = []  # deu-eng entries of w translating one of the keys
        first = False   # one of them gives the word as its first translation
        via_lemma = False
        for tag, trans, see, ent in D.de_entries(w):
            t = [x.strip() for x in tag.split(',')]
            if t and t[0] in GENDER_DE and 'sg' in t and any(D.trans_has(trans, en) for en in keys):
                rt.append((GENDER_DE[t[0]], see, ent))
                via_lemma = via_lemma or D.trans_has(trans, keys[0])
                items = [clean_item(x) for x in split_top(trans)]
                first = first or (bool(items) and items[0] in keys)
        if not rt:
            continue
        gs = {g for g, _, _ in rt} | gs_ed
        if len(gs) != 1:
            continue
        marked = all(o[-1] for o in occ) or all(re.search(r'^\s*\[(veraltet|obs\.|slang|pej\.|vulg\.)', e.split('\n')[1])
                                               for _, _, e in rt)
        zoo = any(re.search(r'\[(zool|ornith|ichth|entom|orn)\.', e) for _, _, e in rt)
        bonus = 1 if (cls & {'animal'} and zoo) else 0
        see = [s for _, sl, _ in rt for s in sl]
        key = (0 if prefer == w else 1, 1 if marked else 0, 0 if first else 1,
               -sum(D.cooc(en, w) for en in keys) - 2 * len(rt), -bonus,
               min(o[1] for o in occ), -D.de_freq[w], w)
        good.append((key, w, gs.pop(), see, via_lemma))
    if prefer and prefer not in [g[1] for g in good]:
        return 'de: preferred translation failed its checks'
    if not good:
        return 'de: no translation passing round trip with one gender'
    good.sort()
    return [g[1:] for g in good]


def umlaut(w):
    m = re.search(r'(au|Au|a|o|u|A|O|U)([^aeiouäöü]*(?:e[lnr]?)?)$', w)
    if not m or m.group(1) == 'u' and w[m.start() - 1:m.start()] in ('a', 'e', 'A', 'E'):
        return None
    rep = {'au': 'äu', 'a': 'ä', 'o': 'ö', 'u': 'ü', 'Au': 'Äu', 'A': 'Ä', 'O': 'Ö', 'U': 'Ü'}[m.group(1)]
    return w[:m.start()] + rep + m.group(2)


def de_plural_rules(w):
    u = umlaut(w)
    c = [w, w + 'e', w + 'er', w + 'n', w + 'en', w + 's', w + 'nen']
    if u:
        c += [u, u + 'e', u + 'er']
    if w.endswith('um'):
        c.append(w[:-2] + 'en')
    if w.endswith('us'):
        c.append(w[:-2] + 'en')
    if w.endswith('s'):
        c.append(w + 'se')
    if w.endswith('a'):
        c.append(w[:-1] + 'en')
    if w.endswith('on'):
        c += [w[:-2] + 'en', w[:-2] + 'a']
    if w.endswith('mann'):
        c.append(w[:-4] + 'leute')
    return list(dict.fromkeys(c))


def german_plural(D, de, see, en_pls):
    """-> (de_pl, en_pl) or None.  A form linked from the singular (see:), listed as <pl> in eng-deu for the
    English plural, or built by the usual plural patterns, that deu-eng lists as <pl> translating the English
    plural (or that eng-deu lists as <pl> for it and is linked or pattern-built)."""
    rules = de_plural_rules(de)
    ed_pl = {}
    for k, ep in enumerate(en_pls):
        for (w, tag, ei, ii, marked) in D.ed_items(ep):
            if tag.startswith('pl'):
                ed_pl.setdefault(w, k)
    forms = [s for s in see if re.fullmatch(r'[A-ZÄÖÜ][a-zäöüß]+', s)]
    cands = []
    for p in dict.fromkeys(forms + rules + list(ed_pl)):
        if p not in rules:
            continue
        via_de = None
        for tag, trans, s2, ent in D.de_entries(p):
            if tag.startswith('pl'):
                for k, ep in enumerate(en_pls):
                    if D.trans_has(trans, ep):
                        via_de = k if via_de is None else min(via_de, k)
        back = any(tag.startswith('pl') and de in s2 for tag, trans, s2, ent in D.de_entries(p)) and p != de
        if via_de is None and p not in ed_pl and not (back and p in rules):
            continue
        k = via_de if via_de is not None else ed_pl.get(p, len(en_pls))
        dative = p.endswith('n') and p[:-1] in rules and p[:-1] != de and any(
            t.startswith('pl') for t, *_r in D.de_entries(p[:-1]))
        score = (1 if dative else 0, k, 0 if via_de is not None and p in ed_pl else 1, 0 if p in forms else 1,
                 -D.de_freq[p], p)
        cands.append((score, p, en_pls[min(k, len(en_pls) - 1)] if k < len(en_pls) else en_pls[-1]))
    if not cands:
        return None
    cands.sort()
    return cands[0][1], cands[0][2]


def german_weak(de, g, de_pl, cls):
    if g != 'm' or de in NOT_WEAK:
        return False
    if de in WEAK_EXTRA:
        return True
    if de_pl not in (de + 'n', de + 'en'):
        return False
    if de.endswith('e'):
        return True          # Löwe, Junge, Affe, Name (den Namen)
    if de.endswith(WEAK_SUFFIX) and cls & {'person', 'animal'}:
        return True
    return False


def fr_elides(f):
    c = f[0]
    if f in Y_NO_ELIDE:
        return False
    if c in VOWELS:
        return True
    if c == 'y':
        return None
    if c == 'h':
        if f in H_ASPIRE:
            return False
        if f in H_MUET:
            return True
        return None
    return False


FEMALE_ROOTS = ['female.2', 'woman.1', 'female_parent.1', 'female_sibling.1', 'female_aristocrat.1']
MALE_ROOTS = ['male.2', 'man.1', 'male_parent.1', 'male_sibling.1', 'male_aristocrat.1']


def build_nouns(wn, D, french_missing=None):
    french_missing = [] if french_missing is None else french_missing
    roots = {c: resolve(wn, r) for c, r in CLASS_ROOTS.items()}
    not_object = resolve(wn, NOT_OBJECT)
    female, male = resolve(wn, FEMALE_ROOTS), resolve(wn, MALE_ROOTS)
    lemmas = set(wn.index)
    cand = []
    for lemma in sorted(lemmas):
        if not re.fullmatch(r'[a-z]+', lemma) or len(lemma) < 2:
            continue
        if lemma in DENY:
            drop('en: denied after reading (vague or mistranslated)', lemma)
            continue
        offs = wn.index[lemma]
        if lemma in SENSE:
            chosen = SENSE[lemma] - 1
        elif lemma in SENSE_CLASS:
            chosen = next((i for i, o in enumerate(offs[:10])
                           if SENSE_CLASS[lemma] in classes_of(wn, o, roots, not_object)), None)
            if chosen is None:
                continue
        else:
            chosen = None
            for i, o in enumerate(offs[:4]):
                if lemma not in [x.lower() for x in wn.syn[o][1] if x == x.lower()]:
                    continue        # a proper name (Walter Piston) or a capitalised sense
                if classes_of(wn, o, roots, not_object):
                    chosen = i
                    break
            if chosen is None:
                continue
        o = offs[chosen]
        cs = classes_of(wn, o, roots, not_object)
        cs |= set(CLASS_ADD.get(lemma, []))
        cs -= set(CLASS_DEL.get(lemma, []))
        if not cs:
            continue
        if lemma not in SENSE and lemma not in PREFER and lemma not in SENSE_CLASS:
            # an earlier sense, or a frequent later one, in a different class group: the translation may
            # belong to that other sense
            grp = {GROUPS[c] for c in cs}
            amb = False
            for i, o2 in enumerate(offs[:6]):
                if i == chosen or lemma not in [x for x in wn.syn[o2][1]]:
                    continue
                c2 = classes_of(wn, o2, roots, not_object)
                # living things (animal, person, food/plant) share their word across these senses (fox, salmon)
                if c2 and not ({GROUPS[c] for c in c2} & grp) and \
                        not ({GROUPS[c] for c in c2} | grp) <= {'org', 'animal', 'person'}:
                    c_other, c_mine = wn.count[(lemma, i + 1)], wn.count[(lemma, chosen + 1)]
                    if c_other > 0 and (i < chosen or c_other * 3 >= c_mine):
                        amb = True
                    if c_other == 0 and c_mine == 0:     # no frequency evidence either way
                        amb = True
            if amb:
                drop('en: senses in different classes (translation could be for the other one)', lemma)
                continue
            # a more frequent sense without a class: concrete (body part, substance, other artifact), or abstract
            # and clearly more frequent than the chosen one -> the translation could be for it
            c_mine = wn.count[(lemma, chosen + 1)]
            if any(wn.count[(lemma, i + 1)] > 0 and (wn.syn[offs[i]][0] in (5, 6, 8, 13, 15, 17, 18, 20, 27) or
                                                     wn.count[(lemma, i + 1)] > c_mine)
                   for i in range(chosen)):
                drop('en: a more frequent sense has no class (translation could be for it)', lemma)
                continue
        # fruit rather than fruit tree: a plant sense gives way to a food sense among the first four
        if 'plant' in cs and 'food' not in cs:
            for o2 in offs[:4]:
                c2 = classes_of(wn, o2, roots, not_object)
                if 'food' in c2:
                    o, cs = o2, c2 | set(CLASS_ADD.get(lemma, []))
                    break
        cl = wn.closure(o)
        sex = 'f' if cl & female else 'm' if cl & male else None
        # synonyms whose own most frequent sense is this synset (phone -> telephone; not cat for 'hombre')
        syn = [x.lower() for x in wn.syn[o][1] if re.fullmatch(r'[a-z]+', x.lower()) and x.lower() != lemma
               and wn.index.get(x.lower(), [None])[0] == o]
        cand.append((lemma, o, cs, sex, [lemma] + syn))

    # French morphology for all candidate French words, in one hunspell call
    fr_words = set()
    for lemma, _o, _c, _s, keys in cand:
        for it, _, _ in [x for k in keys for x in D.ef_items(k)]:
            fr_words.add(it)
        for k in keys:
            for ent in D.fe_rev.get(k, []):
                fr_words.add(ent[0])
    fr_words |= set(FR_HAND.values())
    fr_words = {w for w in fr_words if w and ' ' not in w}
    fr_words |= {p for w in list(fr_words) for p in fr_plural_candidates(w)}
    hfr = hunspell_analyse(HUN_FR, fr_words)

    de_words = set()
    for lemma, _o, _c, _s, keys in cand:
        for (w, tag, *_r) in [x for k in keys for x in D.ed_items(k)]:
            de_words.add(w)
            de_words.update(de_plural_rules(w))
    unk_de = hunspell_unknown(HUN_DE, de_words)
    nouns = []
    for lemma, off, cs, sex, keys in cand:
        pf, pd = PREFER.get(lemma, (None, None))
        des = choose_german(D, keys, pd, cs, unk_de)
        if isinstance(des, str):
            drop(des, lemma)
            continue
        if lemma in FR_HAND:
            f = FR_HAND[lemma]
            frs = [(f, fr_gender(hfr, f), False)] if fr_gender(hfr, f) else 'fr: hand-chosen word without a hunspell gender'
        else:
            frs = choose_french(D, keys, pf, hfr, None, 'person' in cs)
        if isinstance(frs, str):
            drop(frs, lemma)
            missing_french(D, wn, unk_de, lemma, off, cs, sex, keys, des, frs, french_missing)
            continue
        # the French and the German word must be paired by the French-German dictionary too (three dictionaries
        # agree on the sense); hand-pinned words are exempt
        pairs = []
        for gi, (d, dg, see, de_lemma) in enumerate(des):
            for fi, (f, fg, fr_lemma) in enumerate(frs):
                pinned = (pf is not None and f == pf) or (pd is not None and d == pd) or lemma in FR_HAND
                if (pinned or D.fr_de(f, d)) and (de_lemma or fr_lemma):
                    pairs.append(((0 if pinned else 1, gi + fi, gi, fi), (d, dg, see), (f, fg)))
        if not pairs:
            why = 'fr/de: no French-German pair attested in the French-German dictionary'
            drop(why, lemma)
            missing_french(D, wn, unk_de, lemma, off, cs, sex, keys, des, why, french_missing)
            continue
        pairs.sort(key=lambda x: x[0])
        (d, dg, see), (f, fg) = pairs[0][1], pairs[0][2]
        fpl = fr_plurals(hfr, f)
        if not fpl:
            drop('fr: plural not confirmed by hunspell', lemma)
            continue
        el = fr_elides(f)
        if el is None:
            drop('fr: h/y-initial word with unknown aspiration', lemma)
            continue
        de_forms = german_forms(D, wn, unk_de, lemma, off, cs, keys, d, dg, see)
        if isinstance(de_forms, str):
            drop(de_forms, lemma)
            continue
        dpl, epl = de_forms
        if dpl == d and epl == lemma:      # a mass noun keeps the singular in all three languages
            fpl = [f]
        nouns.append({'en': lemma, 'en_pl': epl, 'fr': f, 'fr_g': fg, 'fr_pl': fpl[0], 'fr_elide': el,
                      'de': d, 'de_g': dg, 'de_pl': dpl, 'de_weak': german_weak(d, dg, dpl, cs),
                      'classes': sorted(cs), 'sex': person_sex(sex, cs, fg, dg),
                      '_wn': wn.total(lemma), '_df': D.de_freq[d]})
    return nouns


def fr_plurals(hfr, f):
    """The plural forms of the French noun ``f`` that hunspell-fr's morphology confirms."""
    return [p for p in fr_plural_candidates(f)
            if any(' st:' + f + ' ' in ' ' + a + ' ' and 'po:nom' in a and ('is:pl' in a or 'is:inv' in a)
                   for a in hfr.get(p, []))]


def person_sex(sex, cs, fg, dg):
    """A person noun's sex is kept only where both translations have the matching gender."""
    return sex if 'person' in cs and sex in (fg, None) and (sex is None or dg == sex) else None


def german_forms(D, wn, unk_de, lemma, off, cs, keys, d, dg, see):
    """(German plural, English plural) of a chosen German noun, or the reason it is dropped."""
    en_pls = en_plural_candidates(lemma, wn)
    syn_pls = [p for k in keys[1:] for p in en_plural_candidates(k, wn)]
    en_pls = [en_plural_attested(D, lemma, en_pls)] + en_pls
    en_pls = list(dict.fromkeys(en_pls))
    pl = german_plural(D, d, see, en_pls + syn_pls)
    if pl is not None and pl[1] not in en_pls:
        pl = (pl[0], en_plural_attested(D, lemma, en_pls))
    if pl is None:
        if cs & {'food', 'drink'} or wn.syn[off][0] in (13, 27) or lemma in MASS:
            pl = (d, lemma)
        else:
            return 'de: plural not found in deu-eng'
    dpl, epl = pl
    if d in unk_de or dpl in unk_de:
        return 'de: singular or plural unknown to hunspell-de'
    # Ding sometimes lists a dative plural (Sonnenschirmen): a masculine/neuter -en plural where the -e plural
    # exists too is doubtful
    if dg in 'mn' and dpl in (d + 'en', d + 'n') and not re.search(r'(e|el|er)$', d) and (d + 'e') not in unk_de \
            and not german_weak(d, dg, dpl, cs) and d not in DE_EN_PLURAL_OK:
        return 'de: masculine/neuter plural in -en doubtful (dative form?)'
    return dpl, epl


def missing_french(D, wn, unk_de, lemma, off, cs, sex, keys, des, why, out):
    """Record a noun that passed every English and German check but has no dictionary-attested French: a
    candidate for a reviewer to give its French (``--candidates``; scripts/apply_review.py checks what they write)."""
    d, dg, see, _ = des[0]
    de_forms = german_forms(D, wn, unk_de, lemma, off, cs, keys, d, dg, see)
    if isinstance(de_forms, str):
        return
    dpl, epl = de_forms
    hints = list(dict.fromkeys([it for k in keys for it, _, _ in D.ef_items(k)] +
                               [head for k in keys for head, *_ in D.fe_rev.get(k, [])]))
    out.append({'en': lemma, 'en_pl': epl, 'de': d, 'de_g': dg, 'de_pl': dpl,
                'de_weak': german_weak(d, dg, dpl, cs), 'classes': sorted(cs), 'sex': sex if 'person' in cs else None,
                'why': why, 'freedict_fr': hints[:6], 'gloss': wn.gloss(off), '_wn': wn.total(lemma),
                '_df': D.de_freq[d]})


# ---------------------------------------------------------------- adjectives
# applies codes: a animal, p person, o portable objects (object/container/vessel/tool/clothing/instrument),
# f food/drink, l place, b building, v vehicle, t plant, u furniture, s obstacle
APPLY = {'a': ['animal'], 'p': ['person'], 'o': ['object', 'container', 'vessel', 'tool', 'clothing', 'instrument'],
         'f': ['food', 'drink'], 'l': ['place'], 'b': ['building'], 'v': ['vehicle'], 't': ['plant'],
         'u': ['furniture'], 's': ['obstacle']}
# english  french(ms)  german  applies
ADJ_TABLE = '''
tired fatigué müde ap
hungry affamé hungrig ap
scared effrayé verängstigt ap
slow lent langsam apv
weak faible schwach ap
sick malade krank ap
strong fort stark ap
old vieux alt apobvusl
young jeune jung apt
small petit klein apobvusltf
big grand groß apobvuslt
large grand groß apobvuslt
tiny minuscule winzig aotf
heavy lourd schwer apoufsv
light léger leicht ouv
fragile fragile zerbrechlich o
hard dur hart ouf
soft mou weich ouf
wide large breit lousv
narrow étroit schmal lousv
long long lang lousv
short court kurz lopsv
deep profond tief lo
high haut hoch bsu
tall grand groß pbst
steep raide steil ls
crowded bondé überfüllt lbv
empty vide leer olbv
full plein voll olbv
dark sombre dunkel olbuv
muddy boueux schlammig l
cheap bon_marché billig ovfu
expensive cher teuer ovfub
new nouveau neu ovbu
beautiful beau schön aplobtvu
ugly laid hässlich aplobvu
clean propre sauber aplobvu
dirty sale schmutzig aplobvu
hot chaud heiß of
cold froid kalt ofl
wet mouillé nass aplo
dry sec trocken aplof
fast rapide schnell apv
noisy bruyant laut aplv
quiet calme ruhig aplv
sharp tranchant scharf o
round rond rund ouf
red rouge rot obvuft
blue bleu blau obvu
green vert grün obvuft
yellow jaune gelb obvuft
white blanc weiß aobvuf
black noir schwarz aobvu
brown brun braun aobvuf
happy heureux glücklich ap
sad triste traurig ap
angry fâché wütend ap
rich riche reich p
poor pauvre arm p
busy occupé beschäftigt p
slippery glissant rutschig ls
dangerous dangereux gefährlich aplov
thirsty assoiffé durstig ap
lazy paresseux faul ap
brave courageux mutig ap
fresh frais frisch f
delicious délicieux köstlich f
sweet sucré süß f
salty salé salzig f
pretty joli hübsch aplobtu
nice gentil nett ap
kind gentil freundlich p
friendly aimable freundlich ap
clever intelligent klug ap
smart intelligent klug ap
stupid stupide dumm ap
funny drôle lustig ap
polite poli höflich p
rude impoli unhöflich p
shy timide schüchtern ap
proud fier stolz ap
calm calme ruhig ap
nervous nerveux nervös ap
curious curieux neugierig ap
honest honnête ehrlich p
famous célèbre berühmt pb
strange étrange seltsam apo
wild sauvage wild at
tame apprivoisé zahm a
healthy sain gesund apt
fat gros dick ap
thin mince dünn apo
slim mince schlank p
hairy poilu haarig a
cute mignon niedlich a
loud bruyant laut apv
silent silencieux still aplv
gentle doux sanft ap
cruel cruel grausam ap
sleepy somnolent schläfrig ap
lonely seul einsam ap
sick malade krank ap
ill malade krank ap
blind aveugle blind ap
deaf sourd taub ap
wise sage weise p
dumb bête dumm ap
hot chaud heiß of
warm chaud warm ofl
cool frais kühl ofl
bright clair hell lobu
pale pâle blass ap
heavy lourd schwer o
thick épais dick ou
flat plat flach olu
straight droit gerade ol
smooth lisse glatt ou
rough rugueux rau ol
solid solide fest ou
hollow creux hohl os
sturdy robuste stabil ouv
broken cassé kaputt ouv
useful utile nützlich o
useless inutile nutzlos o
precious précieux kostbar o
valuable précieux wertvoll o
rare rare selten aot
common commun gewöhnlich at
modern moderne modern obvu
ancient ancien alt ob
antique ancien antik ou
simple simple einfach ou
complicated compliqué kompliziert o
strange bizarre seltsam o
small petit klein o
huge énorme riesig aobls
enormous énorme riesig aobls
giant géant riesig a
short court kurz o
low bas niedrig bsu
open ouvert offen ob
closed fermé geschlossen ob
locked verrouillé verschlossen ob
safe sûr sicher lbv
secure sûr sicher lb
quiet tranquille ruhig l
peaceful paisible friedlich l
busy animé belebt l
empty désert leer l
lonely isolé einsam lb
dusty poussiéreux staubig olbu
icy glacé eisig l
frozen gelé zugefroren l
snowy enneigé verschneit l
sunny ensoleillé sonnig l
windy venteux windig l
rainy pluvieux regnerisch l
wooden en_bois hölzern o
golden doré golden o
silver argenté silbern o
shiny brillant glänzend ov
soft doux weich o
sticky collant klebrig of
damp humide feucht lo
humid humide feucht l
raw cru roh f
ripe mûr reif ft
sour acide sauer f
bitter amer bitter f
spicy épicé scharf f
tasty savoureux lecker f
cooked cuit gekocht f
stale rassis altbacken f
rotten pourri faul f
hot brûlant heiß o
boiling bouillant kochend f
purple violet violett obuf
grey gris grau aobvu
gray gris grau aobvu
dark foncé dunkel ou
colourful coloré bunt ob
colorful coloré bunt ob
striped rayé gestreift oa
spotted tacheté gefleckt a
tidy rangé ordentlich lbu
messy désordonné unordentlich lbu
comfortable confortable bequem uvob
uncomfortable inconfortable unbequem uv
cosy douillet gemütlich bu
spacious spacieux geräumig bv
tiny minuscule winzig ab
famous célèbre berühmt b
old ancien alt b
local local örtlich bp
public public öffentlich lb
private privé privat lbv
royal royal königlich b
foreign étranger ausländisch p
strict sévère streng p
generous généreux großzügig p
greedy avide gierig ap
jealous jaloux eifersüchtig ap
patient patient geduldig p
impatient impatient ungeduldig p
careful prudent vorsichtig p
careless négligent nachlässig p
clumsy maladroit ungeschickt ap
skilful habile geschickt p
loyal fidèle treu ap
faithful fidèle treu a
fierce féroce wild a
harmless inoffensif harmlos a
poisonous venimeux giftig at
aggressive agressif aggressiv ap
playful joueur verspielt a
hungry affamé hungrig a
wounded blessé verwundet ap
injured blessé verletzt ap
dead mort tot apt
alive vivant lebendig apt
awake éveillé wach ap
asleep endormi schlafend ap
ready prêt bereit p
sure sûr sicher p
excited excité aufgeregt ap
bored ennuyé gelangweilt p
surprised surpris überrascht p
worried inquiet besorgt p
afraid apeuré ängstlich ap
upset contrarié verärgert p
cheerful joyeux fröhlich p
serious sérieux ernst p
famous connu bekannt p
unknown inconnu unbekannt pl
beautiful joli schön l
natural naturel natürlich lo
artificial artificiel künstlich lo
electric électrique elektrisch ov
automatic automatique automatisch ov
manual manuel manuell o
digital numérique digital o
metallic métallique metallisch o
transparent transparent durchsichtig o
visible visible sichtbar obs
invisible invisible unsichtbar o
heavy pesant schwer o
portable portable tragbar o
light clair hell ob
red rouge rot a
white blanc weiß t
tall haut hoch ts
green vert grün l
sacred sacré heilig b
holy saint heilig b
empty vide leer u
solid massif massiv ub
elegant élégant elegant pob
fashionable élégant modisch o
modest modeste bescheiden pb
luxurious luxueux luxuriös bvu
cheap bon_marché billig b
free gratuit kostenlos o
fair juste gerecht p
unfair injuste ungerecht p
equal égal gleich o
different différent verschieden aop
similar semblable ähnlich aop
typical typique typisch aob
normal normal normal aop
special spécial besonders aop
perfect parfait perfekt aop
excellent excellent ausgezeichnet of
terrible terrible schrecklich of
horrible horrible schrecklich of
awful affreux furchtbar of
wonderful merveilleux wunderbar olb
magnificent magnifique großartig lb
ordinary ordinaire gewöhnlich aop
important important wichtig po
unusual inhabituel ungewöhnlich aop
interesting intéressant interessant pob
boring ennuyeux langweilig pob
difficult difficile schwierig p
easy facile leicht p
independent indépendant unabhängig p
obedient obéissant gehorsam a
stubborn têtu stur ap
'''

# required by the consumer, translations checked by hand (the small FreeDict French lacks them); hunspell
# checks still apply
ADJ_HAND_CHECKED = {'scared', 'crowded', 'angry', 'busy'}
FR_PRE = {'grand', 'petit', 'beau', 'bon', 'mauvais', 'nouveau', 'vieux', 'jeune', 'joli', 'gros', 'long', 'haut',
          'court', 'vrai', 'faux', 'meilleur', 'large'} - {'large'}
FR_IRREG_ADJ = {  # ms: (fs, mp, fp, ms before a vowel)
    'beau': ('belle', 'beaux', 'belles', 'bel'), 'nouveau': ('nouvelle', 'nouveaux', 'nouvelles', 'nouvel'),
    'vieux': ('vieille', 'vieux', 'vieilles', 'vieil'), 'fou': ('folle', 'fous', 'folles', 'fol'),
    'mou': ('molle', 'mous', 'molles', 'mol'),
}


def fr_fem_candidates(w):
    c = []
    if w.endswith('e'):
        c.append(w)
    for a, b in (('eux', 'euse'), ('oux', 'ouce'), ('aux', 'ausse'), ('oux', 'ousse'), ('if', 'ive'), ('er', 'ère'),
                 ('on', 'onne'), ('en', 'enne'), ('el', 'elle'), ('et', 'ète'), ('et', 'ette'), ('anc', 'anche'),
                 ('ec', 'èche'), ('ais', 'aîche'), ('ic', 'ique'), ('g', 'gue'), ('eur', 'euse'), ('eur', 'rice'),
                 ('il', 'ille'), ('os', 'osse'), ('as', 'asse'), ('ais', 'aisse'), ('ul', 'ulle'), ('x', 'se'),
                 ('eil', 'eille'), ('ot', 'otte'), ('gu', 'guë'), ('in', 'ine')):
        if w.endswith(a):
            c.append(w[:-len(a)] + b)
    c.append(w + 'e')
    return list(dict.fromkeys(c))


def fr_pl(w, fem=False):
    if re.search(r'[sx]$', w):
        return [w]
    c = []
    if not fem and w.endswith('al'):
        c.append(w[:-2] + 'aux')
    if w.endswith('eau'):
        c.append(w + 'x')
    c.append(w + 's')
    return c


def de_adj_stem(w):
    if w == 'hoch':
        return 'hoh'
    if w.endswith('e'):
        return w[:-1]
    if re.search(r'[^e]el$', w) or w.endswith('eel'):
        return w[:-2] + 'l'
    if re.search(r'(eu|au)er$', w):
        return w[:-2] + 'r'
    return w


def analyses_ok(an, lemma, need):
    """An adjective analysis of the lemma (or a past participle used as adjective: st is then the verb)."""
    lemmas = lemma if isinstance(lemma, set) else {lemma}
    for a in an:
        toks = a.split()
        if any('st:' + x in toks for x in lemmas) and 'po:adj' in toks and all(any(t in toks for t in alt) for alt in need):
            return True
    return False


def build_adjectives(D):
    rows, seen = [], {}
    for ln in ADJ_TABLE.strip().split('\n'):
        en, fr, de, ap = ln.split()
        fr = fr.replace('_', ' ')
        classes = sorted({c for k in ap for c in APPLY[k]})
        if en in seen:
            prev = seen[en]
            if (prev[1], prev[2]) == (fr, de):
                prev[3] = sorted(set(prev[3]) | set(classes))
            else:
                drop('adj: duplicate English adjective with another translation')
            continue
        seen[en] = [en, fr, de, classes]
        rows.append(seen[en])
    words = set()
    for en, fr, de, _ in rows:
        if ' ' not in fr:
            words |= {fr} | set(fr_fem_candidates(fr)) | set(fr_pl(fr)) | {p for f in fr_fem_candidates(fr) for p in fr_pl(f, True)}
            words |= set(FR_IRREG_ADJ.get(fr, ()))
    hfr = hunspell_analyse(HUN_FR, words)
    de_forms = {}
    for en, fr, de, _ in rows:
        st = de_adj_stem(de)
        de_forms[en] = [de] + [st + e for e in ('e', 'en', 'er', 'es', 'em')]
    unk_de = hunspell_unknown(HUN_DE, [f for v in de_forms.values() for f in v])
    out = []
    for en, fr, de, classes in rows:
        fr_ = fr
        if ' ' in fr:   # invariable multiword (bon marché, en bois)
            forms = (fr, fr, fr, fr, fr)
            if hunspell_unknown(HUN_FR, fr.split()):
                drop('adj: French form unknown to hunspell')
                continue
        elif fr in FR_IRREG_ADJ:
            fs, mp, fp, mv = FR_IRREG_ADJ[fr]
            forms = (fr, fs, mp, fp, mv)
        else:
            fr = {fr} | {t[3:] for a in hfr.get(fr, []) if 'po:ppas' in a.split() for t in a.split() if t.startswith('st:')}
            fr, lem = sorted(fr, key=lambda x: (x != fr_, x))[0] if False else fr_, fr
            if not analyses_ok(hfr.get(fr, []), lem, [('is:mas', 'is:epi'), ('is:sg', 'is:inv')]):
                drop('adj: French lemma not an adjective in hunspell-fr')
                continue
            fs = [f for f in fr_fem_candidates(fr) if analyses_ok(hfr.get(f, []), lem, [('is:fem', 'is:epi'), ('is:sg', 'is:inv')])]
            mp = [f for f in fr_pl(fr) if analyses_ok(hfr.get(f, []), lem, [('is:mas', 'is:epi'), ('is:pl', 'is:inv')])]
            if not fs or not mp:
                drop('adj: French feminine/plural not confirmed by hunspell')
                continue
            fp = [f for f in fr_pl(fs[0], True) if analyses_ok(hfr.get(f, []), lem, [('is:fem', 'is:epi'), ('is:pl', 'is:inv')])]
            if not fp:
                drop('adj: French feminine/plural not confirmed by hunspell')
                continue
            forms = (fr, fs[0], mp[0], fp[0], fr)
        if any(f in unk_de for f in de_forms[en]):
            drop('adj: German form unknown to hunspell-de')
            continue
        # triangulation: at least two of the three pairs en-fr, en-de, fr-de must be attested in a dictionary
        en_fr = D.fe_gives(fr, en, 'adj') is not None or any(it == fr for it, _, _ in D.ef_items(en))
        en_de = any(t.startswith('adj') and D.trans_has(tr, en) for t, tr, _, _ in D.de_entries(de)) or \
            any(w == de and tag.startswith('adj') for w, tag, *_ in D.ed_items(en))
        fr_de = D.fr_de(fr, de)
        if en_fr + en_de + fr_de < 2 and en not in ADJ_HAND_CHECKED:
            drop('adj: fewer than two of en-fr, en-de, fr-de attested in the dictionaries')
            WHY['adj:' + en] = (en_fr, en_de, fr_de)
            continue
        out.append({'en': en, 'fr_ms': forms[0], 'fr_fs': forms[1], 'fr_mp': forms[2], 'fr_fp': forms[3],
                    'fr_ms_vowel': forms[4], 'fr_pre': fr in FR_PRE, 'de': de, 'de_stem': de_adj_stem(de),
                    'applies': classes})
    return out


# ---------------------------------------------------------------- verbs
# class codes for subjects / objects
VCLS = {'a': ['animal'], 'p': ['person'], 'o': ['object'], 'c': ['container'], 'w': ['vessel'], 'f': ['food'],
        'd': ['drink'], 'l': ['place'], 'b': ['building'], 'v': ['vehicle'], 't': ['plant'], 'u': ['furniture'],
        's': ['obstacle'], 'k': ['clothing'], 'i': ['instrument'], 'x': ['tool']}
# en | en irregular past,pp | fr_inf[+prep] | de_inf | de options (sep= prep= case= aux=) | subj | obj
VERB_TABLE = '''
see|saw,seen|voir|sehen||ap|aopcwfdlbvtuskix
cross|-|traverser|überqueren||ap|l
carry|-|porter|tragen||ap|ocwfdkix
lift|-|soulever|heben||p|ocwukix
climb|-|escalader|klettern|prep=auf case=acc aux=sein|ap|s
jump over|jumped over,jumped over|sauter+par-dessus|springen|prep=über case=acc aux=sein|ap|s
break|broke,broken|casser|zerbrechen||ap|owi
pour|-|verser|gießen||p|d
buy|bought,bought|acheter|kaufen||p|ocwfdvkixtu
sell|sold,sold|vendre|verkaufen||p|ocwfdvkixtub
find|found,found|trouver|finden||ap|aopcwfkix
lose|lost,lost|perdre|verlieren||ap|ocwkix
eat|ate,eaten|manger|essen||ap|f
drink|drank,drunk|boire|trinken||ap|d
take|took,taken|prendre|nehmen||ap|ocwfdkix
pick up|picked up,picked up|ramasser|aufheben|sep=auf|ap|ocwkix
open|-|ouvrir|öffnen||p|cb
close|-|fermer|schließen||p|cb
wash|-|laver|waschen||p|aowvk
clean|-|nettoyer|putzen||p|owvub
paint|-|peindre|streichen||p|oubs
build|built,built|construire|bauen||p|bu
drive|drove,driven|conduire|fahren||p|v
push|-|pousser|schieben||ap|ocvu
pull|-|tirer|ziehen||ap|ocvu
throw|threw,thrown|lancer|werfen||p|o
catch|caught,caught|attraper|fangen||ap|ao
hold|held,held|tenir|halten||p|aocwfdkix
bring|brought,brought|apporter|bringen||ap|ocwfdkix
want|-|vouloir|wollen||ap|aocwfdvkixbu
need|-|avoir+besoin de|brauchen||ap|ocwfdvkix
like|-|aimer|mögen||ap|aopfdvkbu
hate|-|détester|hassen||ap|aopfd
follow|-|suivre|folgen|case=dat aux=sein|ap|apv
chase|-|poursuivre|jagen||ap|ap
watch|-|regarder|beobachten||ap|apv
hear|heard,heard|entendre|hören||ap|api
smell|-|sentir|riechen||ap|fdt
touch|-|toucher|berühren||ap|aopcwkixu
hide|hid,hidden|cacher|verstecken||ap|aocwfkix
fill|-|remplir|füllen||p|cw
empty|-|vider|leeren||p|cw
cut|cut,cut|couper|schneiden||p|f
cook|-|cuisiner|kochen||p|f
read|read,read|lire|lesen||p|o
write|wrote,written|écrire|schreiben||p|o
draw|drew,drawn|dessiner|zeichnen||p|aopbtlv
use|-|utiliser|benutzen||p|ocwxiv
move|-|déplacer|bewegen||p|ocwux
drop|-|lâcher|fallen lassen|sep=fallen|ap|ocwfkix
bite|bit,bitten|mordre|beißen||a|ap
feed|fed,fed|nourrir|füttern||p|a
help|-|aider|helfen|case=dat|ap|ap
visit|-|visiter|besuchen||p|lb
leave|left,left|quitter|verlassen||ap|lbv
forget|forgot,forgotten|oublier|vergessen||p|ocwkix
repair|-|réparer|reparieren||p|ocvux
count|-|compter|zählen||p|aopcwfv
choose|chose,chosen|choisir|wählen||p|aocwfdvkix
steal|stole,stolen|voler|stehlen||ap|ocwfdvkix
borrow|-|emprunter|ausleihen|sep=aus|p|ovkix
give|gave,given|donner|geben||p|ocwfdkix
show|showed,shown|montrer|zeigen||p|aocwfkixbv
keep|kept,kept|garder|behalten||p|aocwkix
send|sent,sent|envoyer|schicken||p|oc
order|-|commander|bestellen||p|fdo
pay for|paid for,paid for|payer|bezahlen||p|ocwfdvkix
wear|wore,worn|porter|tragen||p|k
try|-|essayer|probieren||p|fd
love|-|aimer|lieben||ap|ap
call|-|appeler|rufen||ap|ap
meet|met,met|rencontrer|treffen||ap|ap
know|knew,known|connaître|kennen||ap|apl
recognize|-|reconnaître|erkennen||ap|ap
greet|-|saluer|begrüßen||p|p
thank|-|remercier|danken|case=dat|p|p
kiss|-|embrasser|küssen||p|ap
wake|woke,woken|réveiller|wecken||ap|ap
stroke|-|caresser|streicheln||p|a
scare|-|effrayer|erschrecken||ap|ap
attack|-|attaquer|angreifen|sep=an|ap|ap
kill|-|tuer|töten||ap|a
save|-|sauver|retten||ap|ap
protect|-|protéger|schützen||ap|ap
look for|looked for,looked for|chercher|suchen||ap|aocwfkix
wait for|waited for,waited for|attendre|warten|prep=auf case=acc|ap|apv
listen to|listened to,listened to|écouter|zuhören|sep=zu case=dat|ap|p
look at|looked at,looked at|regarder|ansehen|sep=an|ap|aopcwfkixbvtlu
bake|-|cuire|backen||p|f
peel|-|éplucher|schälen||p|f
taste|-|goûter|probieren||p|fd
wrap|wrapped,wrapped|emballer|einpacken|sep=ein|p|oc
load|-|charger|beladen||p|v
park|-|garer|parken||p|v
stop|stopped,stopped|arrêter|anhalten|sep=an|p|v
start|-|démarrer|starten||p|v
rent|-|louer|mieten||p|vbl
own|-|posséder|besitzen||p|aocvbk
receive|-|recevoir|bekommen||ap|oc
return|-|rendre|zurückgeben|sep=zurück|p|ocwkix
replace|-|remplacer|ersetzen||p|ocwuxi
destroy|-|détruire|zerstören||ap|obvu
hit|hit,hit|frapper|schlagen||ap|aps
shake|shook,shaken|secouer|schütteln||ap|ocw
drag|dragged,dragged|traîner|schleppen||ap|ocu
roll|-|rouler|rollen||ap|o
turn|-|tourner|drehen||p|ou
fold|-|plier|falten||p|k
tear|tore,torn|déchirer|zerreißen||ap|ok
burn|-|brûler|verbrennen||p|ot
sweep|swept,swept|balayer|fegen||p|lb
iron|-|repasser|bügeln||p|k
water|-|arroser|gießen||p|t
plant|-|planter|pflanzen||p|t
pick|-|cueillir|pflücken||p|tf
explore|-|explorer|erkunden||ap|lb
enter|-|entrer+dans|betreten||ap|b
reach|-|atteindre|erreichen||apv|lbs
avoid|-|éviter|vermeiden||apv|aps
notice|-|remarquer|bemerken||ap|aopcwvbs
admire|-|admirer|bewundern||p|aopbltv
photograph|-|photographier|fotografieren||p|aopbltv
describe|-|décrire|beschreiben||p|aopbltv
measure|-|mesurer|messen||p|ocusl
weigh|-|peser|wiegen||p|aocf
check|-|vérifier|prüfen||p|ocvx
prepare|-|préparer|zubereiten|sep=zu|p|f
serve|-|servir|servieren||p|fd
swallow|-|avaler|schlucken||ap|fd
lick|-|lécher|lecken||ap|of
hunt|-|chasser|jagen||ap|a
tow|-|remorquer|abschleppen|sep=ab|pv|v
deliver|-|livrer|liefern||p|ocfu
collect|-|collectionner|sammeln||p|o
guard|-|surveiller|bewachen||ap|bocv
dry|-|sécher|trocknen||p|ok
warm|-|chauffer|wärmen||p|fd
cool|-|refroidir|kühlen||p|fd
invite|-|inviter|einladen|sep=ein|p|p
marry|-|épouser|heiraten||p|p
'''
FR_IRREG = {  # inf: (1sg, 3sg, 3pl, future stem, pp)
    'voir': ('vois', 'voit', 'voient', 'verr', 'vu'), 'prendre': ('prends', 'prend', 'prennent', 'prendr', 'pris'),
    'boire': ('bois', 'boit', 'boivent', 'boir', 'bu'), 'ouvrir': ('ouvre', 'ouvre', 'ouvrent', 'ouvrir', 'ouvert'),
    'tenir': ('tiens', 'tient', 'tiennent', 'tiendr', 'tenu'), 'vouloir': ('veux', 'veut', 'veulent', 'voudr', 'voulu'),
    'suivre': ('suis', 'suit', 'suivent', 'suivr', 'suivi'),
    'poursuivre': ('poursuis', 'poursuit', 'poursuivent', 'poursuivr', 'poursuivi'),
    'sentir': ('sens', 'sent', 'sentent', 'sentir', 'senti'), 'peindre': ('peins', 'peint', 'peignent', 'peindr', 'peint'),
    'construire': ('construis', 'construit', 'construisent', 'construir', 'construit'),
    'conduire': ('conduis', 'conduit', 'conduisent', 'conduir', 'conduit'),
    'détruire': ('détruis', 'détruit', 'détruisent', 'détruir', 'détruit'),
    'lire': ('lis', 'lit', 'lisent', 'lir', 'lu'), 'écrire': ('écris', 'écrit', 'écrivent', 'écrir', 'écrit'),
    'décrire': ('décris', 'décrit', 'décrivent', 'décrir', 'décrit'),
    'connaître': ('connais', 'connaît', 'connaissent', 'connaîtr', 'connu'),
    'reconnaître': ('reconnais', 'reconnaît', 'reconnaissent', 'reconnaîtr', 'reconnu'),
    'recevoir': ('reçois', 'reçoit', 'reçoivent', 'recevr', 'reçu'),
    'atteindre': ('atteins', 'atteint', 'atteignent', 'atteindr', 'atteint'),
    'cuire': ('cuis', 'cuit', 'cuisent', 'cuir', 'cuit'), 'cueillir': ('cueille', 'cueille', 'cueillent', 'cueiller', 'cueilli'),
    'servir': ('sers', 'sert', 'servent', 'servir', 'servi'), 'avoir': ('ai', 'a', 'ont', 'aur', 'eu'),
    'acheter': ('achète', 'achète', 'achètent', 'achèter', 'acheté'),
    'soulever': ('soulève', 'soulève', 'soulèvent', 'soulèver', 'soulevé'),
    'peser': ('pèse', 'pèse', 'pèsent', 'pèser', 'pesé'), 'appeler': ('appelle', 'appelle', 'appellent', 'appeller', 'appelé'),
    'nettoyer': ('nettoie', 'nettoie', 'nettoient', 'nettoier', 'nettoyé'),
    'essayer': ('essaie', 'essaie', 'essaient', 'essaier', 'essayé'), 'payer': ('paie', 'paie', 'paient', 'paier', 'payé'),
    'balayer': ('balaie', 'balaie', 'balaient', 'balaier', 'balayé'),
    'envoyer': ('envoie', 'envoie', 'envoient', 'enverr', 'envoyé'),
    'protéger': ('protège', 'protège', 'protègent', 'protéger', 'protégé'),
    'lécher': ('lèche', 'lèche', 'lèchent', 'lécher', 'léché'),
    'sécher': ('sèche', 'sèche', 'sèchent', 'sécher', 'séché'),
    'posséder': ('possède', 'possède', 'possèdent', 'posséder', 'possédé'),
    'compléter': ('complète', 'complète', 'complètent', 'compléter', 'complété'),
}
FR_AUX_ETRE = {'entrer'}
# German strong / mixed / irregular verbs (base without separable prefix): 3sg, past 3sg, pp (without prefix)
DE_STRONG = {
    'sehen': ('sieht', 'sah', 'gesehen'), 'tragen': ('trägt', 'trug', 'getragen'), 'heben': ('hebt', 'hob', 'gehoben'),
    'springen': ('springt', 'sprang', 'gesprungen'), 'zerbrechen': ('zerbricht', 'zerbrach', 'zerbrochen'),
    'gießen': ('gießt', 'goss', 'gegossen'), 'finden': ('findet', 'fand', 'gefunden'),
    'verlieren': ('verliert', 'verlor', 'verloren'), 'essen': ('isst', 'aß', 'gegessen'),
    'trinken': ('trinkt', 'trank', 'getrunken'), 'nehmen': ('nimmt', 'nahm', 'genommen'),
    'schließen': ('schließt', 'schloss', 'geschlossen'), 'waschen': ('wäscht', 'wusch', 'gewaschen'),
    'streichen': ('streicht', 'strich', 'gestrichen'), 'fahren': ('fährt', 'fuhr', 'gefahren'),
    'schieben': ('schiebt', 'schob', 'geschoben'), 'ziehen': ('zieht', 'zog', 'gezogen'),
    'werfen': ('wirft', 'warf', 'geworfen'), 'fangen': ('fängt', 'fing', 'gefangen'), 'halten': ('hält', 'hielt', 'gehalten'),
    'bringen': ('bringt', 'brachte', 'gebracht'), 'riechen': ('riecht', 'roch', 'gerochen'),
    'schneiden': ('schneidet', 'schnitt', 'geschnitten'), 'lesen': ('liest', 'las', 'gelesen'),
    'schreiben': ('schreibt', 'schrieb', 'geschrieben'), 'lassen': ('lässt', 'ließ', 'lassen'),
    'beißen': ('beißt', 'biss', 'gebissen'), 'helfen': ('hilft', 'half', 'geholfen'),
    'verlassen': ('verlässt', 'verließ', 'verlassen'), 'vergessen': ('vergisst', 'vergaß', 'vergessen'),
    'stehlen': ('stiehlt', 'stahl', 'gestohlen'), 'leihen': ('leiht', 'lieh', 'geliehen'), 'geben': ('gibt', 'gab', 'gegeben'),
    'behalten': ('behält', 'behielt', 'behalten'), 'rufen': ('ruft', 'rief', 'gerufen'), 'treffen': ('trifft', 'traf', 'getroffen'),
    'kennen': ('kennt', 'kannte', 'gekannt'), 'erkennen': ('erkennt', 'erkannte', 'erkannt'),
    'greifen': ('greift', 'griff', 'gegriffen'), 'sehen_': ('sieht', 'sah', 'gesehen'), 'backen': ('backt', 'backte', 'gebacken'),
    'beladen': ('belädt', 'belud', 'beladen'), 'halten_': ('hält', 'hielt', 'gehalten'),
    'besitzen': ('besitzt', 'besaß', 'besessen'), 'bekommen': ('bekommt', 'bekam', 'bekommen'),
    'schlagen': ('schlägt', 'schlug', 'geschlagen'), 'zerreißen': ('zerreißt', 'zerriss', 'zerrissen'),
    'verbrennen': ('verbrennt', 'verbrannte', 'verbrannt'), 'betreten': ('betritt', 'betrat', 'betreten'),
    'vermeiden': ('vermeidet', 'vermied', 'vermieden'), 'beschreiben': ('beschreibt', 'beschrieb', 'beschrieben'),
    'messen': ('misst', 'maß', 'gemessen'), 'wiegen': ('wiegt', 'wog', 'gewogen'), 'laden': ('lädt', 'lud', 'geladen'),
    'wollen': ('will', 'wollte', 'gewollt'), 'mögen': ('mag', 'mochte', 'gemocht'),
}
DE_1SG = {'wollen': 'will', 'mögen': 'mag', 'streicheln': 'streichle', 'bügeln': 'bügle', 'sammeln': 'sammle',
          'schütteln': 'schüttle'}
DE_INSEP = ('be', 'ver', 'er', 'zer', 'ent', 'emp', 'ge', 'miss', 'über')
EN_DOUBLE = {'drop', 'stop', 'grab', 'rob', 'pet', 'wrap', 'hug', 'shop', 'chop', 'tap', 'plan', 'drag', 'hop'}


def en_forms(en, irr):
    head, _, rest = en.partition(' ')
    tail = (' ' + rest) if rest else ''
    if re.search(r'(s|x|z|ch|sh|o)$', head):
        s3 = head + 'es'
    elif re.search(r'[^aeiou]y$', head):
        s3 = head[:-1] + 'ies'
    else:
        s3 = head + 's'
    if irr != '-':
        past, pp = irr.split(',')
        return s3 + tail, past, pp
    if head.endswith('e'):
        past = head + 'd'
    elif re.search(r'[^aeiou]y$', head):
        past = head[:-1] + 'ied'
    elif head in EN_DOUBLE:
        past = head + head[-1] + 'ed'
    else:
        past = head + 'ed'
    return s3 + tail, past + tail, past + tail


def fr_forms(inf):
    if inf in FR_IRREG:
        s1, s3, p3, fut, pp = FR_IRREG[inf]
    elif inf.endswith('er'):
        st = inf[:-2]
        s1, s3, p3, fut, pp = st + 'e', st + 'e', st + 'ent', inf, st + 'é'
    elif inf.endswith('ir'):
        st = inf[:-2]
        s1, s3, p3, fut, pp = st + 'is', st + 'it', st + 'issent', inf, st + 'i'
    elif inf.endswith('dre') or inf.endswith('pre'):
        st = inf[:-2]
        s1, s3, p3, fut, pp = st + 's', st if inf.endswith('dre') else st + 't', st + 'ent', inf[:-1], st + 'u'
    else:
        return None
    return {'1sg': s1, '3sg': s3, '3pl': p3}, {'1sg': fut + 'ai', '3sg': fut + 'a', '3pl': fut + 'ont'}, pp


def de_forms(inf, sep):
    base = inf[len(sep):].strip() if sep else inf
    if sep and ' ' in inf:
        base = inf.split(' ', 1)[1]
    stem = base[:-2] if base.endswith('en') else base[:-1]
    if base in DE_STRONG:
        s3, past, pp = DE_STRONG[base]
        past3pl = past + ('n' if past.endswith('e') else 'en')
    else:
        ins = stem.endswith(('t', 'd')) or re.search(r'([^aeiouäöülrh]|ch)[mn]$', stem)
        s3 = stem + ('et' if ins else 't')
        past = stem + ('ete' if ins else 'te')
        past3pl = past + 'n'
        core = stem + ('et' if ins else 't')
        if base.endswith('ieren') or base.startswith(DE_INSEP):
            pp = core
        else:
            pp = 'ge' + core
    s1 = DE_1SG.get(base, stem + 'e')
    p3 = base if base not in ('sein', 'tun') else None
    if sep:
        pp = pp if ' ' in inf else sep + pp
        if ' ' in inf:      # fallen lassen: Ersatzinfinitiv "hat ... fallen lassen"
            pp = inf
    return {'1sg': s1, '3sg': s3, '3pl': p3}, {'1sg': past, '3sg': past, '3pl': past3pl}, pp


def build_verbs(D):
    rows = []
    for ln in VERB_TABLE.strip().split('\n'):
        en, irr, fr, de, opts, subj, obj = ln.split('|')
        fr_inf, _, fr_prep = fr.partition('+')
        o = dict(x.split('=') for x in opts.split()) if opts else {}
        rows.append((en, irr, fr_inf, fr_prep, de, o, subj, obj))
    out, fr_all, de_all = [], [], []
    built = []
    for en, irr, fr_inf, fr_prep, de, o, subj, obj in rows:
        s3, past, pp = en_forms(en, irr)
        ff = fr_forms(fr_inf)
        if ff is None:
            drop('verb: no French conjugation pattern')
            continue
        sep = o.get('sep', '')
        df = de_forms(de, sep)
        built.append((en, s3, past, pp, fr_inf, fr_prep, ff, de, sep, o, df, subj, obj))
        fr_all += [fr_inf, ff[2]] + list(ff[0].values()) + list(ff[1].values()) + fr_prep.split()
        de_all += de.split() + df[2].split() + list(df[0].values()) + list(df[1].values()) + ([sep] if sep else [])
    hfr = hunspell_analyse(HUN_FR, fr_all)
    unk_de = hunspell_unknown(HUN_DE, de_all)
    for en, s3, past, pp, fr_inf, fr_prep, ff, de, sep, o, df, subj, obj in built:
        # French: every form must be analysed by hunspell-fr as the right person/tense of this verb
        need = [(ff[0]['1sg'], ('po:ipre', 'po:1sg')), (ff[0]['3sg'], ('po:ipre', 'po:3sg')),
                (ff[0]['3pl'], ('po:ipre', 'po:3pl')), (ff[1]['1sg'], ('po:ifut', 'po:1sg')),
                (ff[1]['3sg'], ('po:ifut', 'po:3sg')), (ff[1]['3pl'], ('po:ifut', 'po:3pl')), (ff[2], ('po:ppas',)),
                (fr_inf, ('po:infi',))]
        bad = [w for w, tags in need
               if not any(('st:' + fr_inf) in a.split() and all(t in a.replace('!', '').split() for t in tags)
                          for a in hfr.get(w, []))]
        if bad or hunspell_unknown(HUN_FR, fr_prep.split()):
            drop('verb: French form not confirmed by hunspell-fr')
            WHY['verb:' + en] = ('fr', bad)
            continue
        forms_de = [w for w in de.split() + df[2].split() + list(df[0].values()) + list(df[1].values()) if w]
        badde = [w for w in forms_de if w in unk_de]
        if badde:
            drop('verb: German form unknown to hunspell-de')
            WHY['verb:' + en] = ('de', badde)
            continue
        head = en.split(' ')[0]
        en_fr = D.fe_gives(fr_inf, head, 'v') is not None or any(it in (fr_inf, fr_inf + ' ' + fr_prep) for it, _, _ in D.ef_items(head)) \
            or any(it in (fr_inf, fr_inf + ' ' + fr_prep) for it, _, _ in D.ef_items(en))
        de_key = de.split()[-1] if ' ' in de else de
        en_de = any(t.startswith('v') and (D.trans_has(tr, head) or D.trans_has(tr, en) or
                                           any(re.match(re.escape(head) + r'\b', clean_item(x)) for x in split_top(tr)))
                    for pre in ('', 'etw. ', 'jdn. ', 'jdn./etw. ', 'etw./jdn. ', 'jdm. ', 'jdm./etw. ', 'auf etw. ',
                                'über etw. ', 'auf jdn./etw. ', 'jdm./einer Sache ')
                    for t, tr, _, _ in D.de_entries(pre + de_key))
        for ent in D.ed.get(head, []) + D.ed.get(en, []):
            lines = ent.split('\n')
            if headword(ent) in (head, en) and '<v' in ent and len(lines) > 1 and \
                    re.search(r'(^|[\s,.)])' + re.escape(de_key) + r'($|[\s,<])', lines[1]):
                en_de = True
        fr_de = D.fr_de(fr_inf, de)
        if en_fr + en_de + fr_de < 2 and en not in VERB_HAND_CHECKED:
            drop('verb: fewer than two of en-fr, en-de, fr-de attested in the dictionaries')
            WHY['verb:' + en] = ('link', en_fr, en_de, fr_de)
            continue
        out.append({'en': en, 'en_3sg': s3, 'en_past': past, 'en_pp': pp,
                    'fr_inf': fr_inf, 'fr_pres': ff[0], 'fr_fut': ff[1], 'fr_pp': ff[2],
                    'fr_aux': 'être' if fr_inf in FR_AUX_ETRE else 'avoir', 'fr_prep': fr_prep,
                    'de_inf': de, 'de_pres': df[0], 'de_past': df[1], 'de_pp': df[2], 'de_aux': o.get('aux', 'haben'),
                    'de_sep': sep, 'de_case': o.get('case', 'acc'), 'de_prep': o.get('prep', ''),
                    'subj': sorted({c for k in subj for c in VCLS[k]}), 'obj': sorted({c for k in obj for c in VCLS[k]})})
    return out


# required by the consumer; the dictionaries attest only one of the three pairs (checked by hand)
VERB_HAND_CHECKED = {'drive', 'chase', 'drop'}


# ---------------------------------------------------------------- names, numbers
NAMES_F = 'Anna Maria Julia Laura Lisa Sarah Emma Eva Linda Sophie Nina Clara Mia Olivia Nora Amanda Diana Sandra Paula Marie Alice Hannah'
NAMES_M = 'Paul Thomas David Peter Daniel Martin Simon Robert Kevin Tom Max Felix Hugo Adam Ben Tim Oliver Samuel Jonas Noah Lucas Bruno Marco'
NUMBERS = [(1, 'one', 'un', 'eins'), (2, 'two', 'deux', 'zwei'), (3, 'three', 'trois', 'drei'), (4, 'four', 'quatre', 'vier'),
           (5, 'five', 'cinq', 'fünf'), (6, 'six', 'six', 'sechs'), (7, 'seven', 'sept', 'sieben'), (8, 'eight', 'huit', 'acht'),
           (9, 'nine', 'neuf', 'neun'), (10, 'ten', 'dix', 'zehn'), (11, 'eleven', 'onze', 'elf'), (12, 'twelve', 'douze', 'zwölf'),
           (13, 'thirteen', 'treize', 'dreizehn'), (14, 'fourteen', 'quatorze', 'vierzehn'), (15, 'fifteen', 'quinze', 'fünfzehn'),
           (16, 'sixteen', 'seize', 'sechzehn'), (17, 'seventeen', 'dix-sept', 'siebzehn'), (18, 'eighteen', 'dix-huit', 'achtzehn'),
           (19, 'nineteen', 'dix-neuf', 'neunzehn'), (20, 'twenty', 'vingt', 'zwanzig'), (30, 'thirty', 'trente', 'dreißig'),
           (40, 'forty', 'quarante', 'vierzig'), (50, 'fifty', 'cinquante', 'fünfzig'), (60, 'sixty', 'soixante', 'sechzig'),
           (70, 'seventy', 'soixante-dix', 'siebzig'), (80, 'eighty', 'quatre-vingts', 'achtzig'),
           (90, 'ninety', 'quatre-vingt-dix', 'neunzig'), (100, 'one hundred', 'cent', 'hundert')]


# ---------------------------------------------------------------- output
def check_apt():
    missing = [p for p in (DICTD + '/freedict-eng-fra.index', DICTD + '/freedict-fra-eng.index',
                           DICTD + '/freedict-eng-deu.index', DICTD + '/freedict-deu-eng.index',
                           DICTD + '/freedict-fra-deu.index', DICTD + '/freedict-deu-fra.index',
                           HUN_FR + '.dic', HUN_DE + '.dic', WN + '/data.noun') if not os.path.exists(p)]
    try:
        subprocess.run(['hunspell', '-v'], capture_output=True)
    except FileNotFoundError:
        missing.append('hunspell binary')
    if missing:
        raise SystemExit('missing: %s\ninstall: apt-get install %s' % (', '.join(missing), APT))


def dump(lex):
    out = ['{"source": %s,' % json.dumps(lex['source'], ensure_ascii=False, allow_nan=False),
           ' "licence": %s,' % json.dumps(lex['licence'], ensure_ascii=False, allow_nan=False)]
    keys = [k for k in lex if k not in ('source', 'licence')]
    for i, k in enumerate(keys):
        out.append(' "%s": [' % k)
        rows = [json.dumps(r, ensure_ascii=False, allow_nan=False) for r in lex[k]]
        out.append(',\n'.join('  ' + r for r in rows))
        out.append(' ]' + (',' if i < len(keys) - 1 else '}'))
    return '\n'.join(out) + '\n'


SOURCE = ('Derived by scripts/build_lexicon.py from Debian packages: FreeDict eng-fra 0.1.6 / fra-eng 0.4.1, '
          'Ding/FreeDict eng-deu / deu-eng 1.9-fd1, FreeDict+WikDict fra-deu / deu-fra 2022.11.18 (cross-check only), '
          'hunspell-fr-classical (Dicollecte/Grammalecte), hunspell-de-de (igerman98), WordNet 3.0 (wordnet-base). '
          'See core/data/LEXICON.md.')
LICENCE = ('Derived data; contains translations from FreeDict eng-fra/fra-eng (GPL-2.0-or-later) and Ding eng-deu/deu-eng '
           '(GPL-3.0 / AGPL-3.0), so the lexicon is distributed under GPL-3.0-or-later; also uses hunspell-fr (MPL-2.0), '
           'hunspell-de-de (GPL-2.0-or-later), WordNet 3.0 (WordNet licence, attribution: WordNet 3.0 Copyright 2006 by '
           'Princeton University), FreeDict+WikDict fra-deu/deu-fra (CC-BY-SA-3.0) as a cross-check.')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--out', required=True,
                    help='where to write the derived table (core/data/lexicon.json is the reviewed one, '
                         'written by scripts/apply_review.py)')
    ap.add_argument('--candidates', help='also write the nouns that pass every English and German check but have '
                    'no dictionary-attested French, for a reviewer to complete (core/data/review/candidates.json)')
    args = ap.parse_args()
    check_apt()
    wn = WordNet()
    D = Dicts()
    missing = []
    nouns = build_nouns(wn, D, missing)
    if args.candidates:
        missing.sort(key=lambda n: (-n['_wn'], -n['_df'], n['en']))
        with open(args.candidates, 'w', encoding='utf-8') as f:
            f.write(dump({'source': SOURCE, 'licence': LICENCE, 'candidates': [
                {k: v for k, v in n.items() if not k.startswith('_')} | {'rank': r}
                for r, n in enumerate(missing, 1)]}))
        print(f'candidates without French: {len(missing)} -> {args.candidates}')
    order = sorted(nouns, key=lambda n: (-n['_wn'], -n['_df'], n['en']))
    for r, n in enumerate(order, 1):
        n['rank'] = r
    keys = ['en', 'en_pl', 'fr', 'fr_g', 'fr_pl', 'fr_elide', 'de', 'de_g', 'de_pl', 'de_weak', 'classes', 'sex', 'rank']
    nouns = [{k: n[k] for k in keys} for n in sorted(nouns, key=lambda n: n['en'])]
    adjs = sorted(build_adjectives(D), key=lambda a: a['en'])
    verbs = sorted(build_verbs(D), key=lambda v: v['en'])
    names = [{'name': n, 'sex': 'f'} for n in NAMES_F.split()] + [{'name': n, 'sex': 'm'} for n in NAMES_M.split()]
    numbers = [{'n': n, 'en': e, 'fr': f, 'de': d} for n, e, f, d in NUMBERS]
    lex = {'source': SOURCE, 'licence': LICENCE, 'nouns': nouns, 'adjectives': adjs, 'verbs': verbs,
           'names': sorted(names, key=lambda x: x['name']), 'numbers': numbers}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, 'w', encoding='utf-8') as f:
        f.write(dump(lex))
    per = collections.Counter(c for n in nouns for c in n['classes'])
    print(f'wrote {args.out}')
    print(f'nouns: {len(nouns)}  (' + ', '.join(f'{c} {per[c]}' for c in sorted(per)) +
          f'; persons with sex {sum(1 for n in nouns if n["sex"])})')
    print(f'adjectives: {len(adjs)}')
    print(f'verbs: {len(verbs)}')
    print(f'names: {len(names)}')
    print(f'numbers: {len(numbers)}')
    print('dropped candidates:')
    for reason, c in sorted(DROPS.items(), key=lambda x: (-x[1], x[0])):
        print(f'  {c:6d}  {reason}')


if __name__ == '__main__':
    main()
