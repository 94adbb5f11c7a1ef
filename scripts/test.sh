#!/usr/bin/env bash
# Installs everything the tests need on a fresh Debian machine, then runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
python -m pip install -q torch==2.13.0
python -m pip install -q -r requirements.txt -r requirements-test.txt
export CI=${CI:-true}
python -m pytest -q
