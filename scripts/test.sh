#!/usr/bin/env bash
# Installs everything the tests need on a fresh Debian machine, then runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian packages the tests drive: Chromium (browser tests), hunspell with the French and German dictionaries
# (every generated French / German word is checked against them), and the two documentation packages the bundled
# lm's English corpus is read from (core/data/english.py); nginx for the load test's two replicas behind a proxy;
# the dictionaries the lexicon's hand entries are checked against (scripts/apply_review.py)
if ! command -v chromium >/dev/null 2>&1 || ! command -v hunspell >/dev/null 2>&1 \
   || [ ! -f /usr/share/hunspell/fr.dic ] || [ ! -f /usr/share/hunspell/de_DE.dic ] \
   || [ ! -d /usr/share/doc/python3.11/html/_sources ] || [ ! -d /usr/share/doc/debian-handbook/html/en-US ] \
   || [ ! -x /usr/sbin/nginx ] || [ ! -f /usr/share/dictd/freedict-eng-deu.index ] || [ ! -f /usr/share/wordnet/data.noun ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium hunspell hunspell-fr-classical \
    hunspell-de-de python3.11-doc debian-handbook nginx dict-freedict-eng-fra dict-freedict-fra-eng \
    dict-freedict-eng-deu dict-freedict-deu-eng dict-freedict-fra-deu dict-freedict-deu-fra wordnet-base >/dev/null
fi
python -m pip install -q torch==2.13.0
python -m pip install -q -r requirements.txt -r requirements-test.txt -c requirements.lock
python -m pip install -q --no-deps -r requirements-nodeps.txt -c requirements.lock
export CI=${CI:-true}
# two workers, a whole test file each (module fixtures built once): most of the suite is one Python thread
# waiting on Streamlit, Chromium or a small model, so the second core roughly halves the wall time
python -m pytest -q -n 2 --dist loadfile
