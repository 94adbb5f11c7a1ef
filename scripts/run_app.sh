#!/usr/bin/env bash
# Installs the runtime requirements and starts the app on its bundled models.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q torch==2.13.0 --extra-index-url https://download.pytorch.org/whl/cpu  # +cpu: no CUDA libraries
python -m pip install -q -r requirements.txt -c requirements.lock
python -m pip install -q --no-deps -r requirements-nodeps.txt -c requirements.lock
python -m pip install -q --no-deps -e .  # this checkout as the package core + app, and the attention-lab command
# python -m app.serve: streamlit run app/main.py, then every page visited once so the first visitor finds it warm
exec python -m app.serve "$@"
