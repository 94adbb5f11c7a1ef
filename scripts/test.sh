#!/usr/bin/env bash
# Installs everything the tests need on a fresh Debian machine, then runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian packages the tests drive: Chromium (browser tests), the hunspell binary (every generated French / German word
# is checked against the dictionaries frozen in assets/corpora/hunspell), nginx for the load test's two replicas
# behind a proxy, and the FreeDict / WordNet dictionaries the lexicon's review reads (scripts/apply_review.py; a
# Debian release of one of them is reported by tests/core/test_lexicon.py, not failed on). The lm's English text and
# the hunspell dictionaries are frozen in the repository: no test reads python3.11-doc, debian-handbook or
# hunspell-fr / -de, so a point release of those cannot change a result (scripts/freeze_dictionaries.py,
# python -m core.data.english rebuild them and report what moved).
if ! command -v chromium >/dev/null 2>&1 || ! command -v hunspell >/dev/null 2>&1 \
   || [ ! -x /usr/sbin/nginx ] || [ ! -f /usr/share/dictd/freedict-eng-deu.index ] || [ ! -f /usr/share/wordnet/data.noun ] \
   || [ ! -f /usr/share/dictd/freedict-deu-fra.index ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium hunspell nginx \
    dict-freedict-eng-fra dict-freedict-fra-eng dict-freedict-eng-deu dict-freedict-deu-eng dict-freedict-fra-deu \
    dict-freedict-deu-fra wordnet-base >/dev/null
fi
python -m pip install -q torch==2.13.0
python -m pip install -q -r requirements.txt -r requirements-test.txt -c requirements.lock
python -m pip install -q --no-deps -r requirements-nodeps.txt -c requirements.lock
# this checkout itself, editable, as the README's first command installs it (pyproject.toml): core and app import from
# any folder (streamlit run app/main.py, python scripts/….py and bench/….py rely on it) and `attention-lab` exists
python -m pip install -q --no-deps -e .
export CI=${CI:-true}
# two workers, a whole test file each (module fixtures built once): most of the suite is one Python thread
# waiting on Streamlit, Chromium or a small model, so the second core roughly halves the wall time; files go out
# longest first (tests/conftest.py), not xdist's default of most tests first
python -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder
