#!/usr/bin/env bash
# Venv size and install time of the README's first command, before and after issue 20's install work, side by side:
#   bash bench/bench_install.sh
# "before" installs requirements.txt as it was at a74e4e1 (no lock, bertviz and the MiniLM package with all their
# dependencies); "after" runs the README's install exactly (requirements.txt + requirements.lock, then the --no-deps
# packages, then this checkout with `pip install --no-deps -e .`). Both in a fresh `python3 -m venv`, pip's cache off, torch 2.13.0 first (the CPU wheel where pip finds
# it, as on this project's machines). Prints seconds, MB on disk and packages for each, then checks every bundled
# model loads from the "after" venv. Needs the network (PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git show a74e4e1:requirements.txt > "$work/requirements-before.txt"

measure() {  # name, then the install command run inside the fresh venv
  local name=$1; shift
  local t0 t1
  t0=$(date +%s.%N)
  python3 -m venv "$work/$name"
  (. "$work/$name/bin/activate" && pip install -q torch==2.13.0 && eval "$*") 2>&1 | grep -v "^WARNING: Location" || true
  t1=$(date +%s.%N)
  echo "$name: $(echo "$t1 - $t0" | bc) s, $(du -sm "$work/$name" | cut -f1) MB, $("$work/$name/bin/pip" list 2>/dev/null | tail -n +3 | wc -l) packages"
}
measure before "pip install -q -r '$work/requirements-before.txt'"
measure after "pip install -q -r requirements.txt -c requirements.lock && pip install -q --no-deps -r requirements-nodeps.txt -c requirements.lock && pip install -q --no-deps -e ."
ATTENTION_LAB_DATA="$work/data" "$work/after/bin/python" -c "
from core.io import registry
names = registry.available()
for n in names: registry.load(n)
print('after: every model loads:', ', '.join(names))"
