#!/usr/bin/env bash
# Installs the runtime requirements and starts the app on its bundled models.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q torch==2.13.0
python -m pip install -q -r requirements.txt
exec python -m streamlit run app/main.py "$@"
