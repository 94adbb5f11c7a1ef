"""Finish a trained checkpoint for shipping: drop the resume state, measure held-out metrics, write them
into config.json (``meta.heldout``) and the model card.

    python scripts/bundle.py assets/models/en-fr
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core import checkpoint  # noqa: E402
from core.tasks import heldout_metrics  # noqa: E402
from core.train import STATE_JSON, STATE_WEIGHTS  # noqa: E402


def main(folder: str) -> None:
    path = Path(folder)
    ck = checkpoint.load(path)
    t0 = time.perf_counter()
    metrics = heldout_metrics(ck)
    secs = time.perf_counter() - t0
    for name in (STATE_WEIGHTS, STATE_JSON):
        (path / name).unlink(missing_ok=True)
    config = json.loads((path / "config.json").read_text())
    config["meta"]["heldout"] = metrics
    tmp = path / "config.json.tmp"
    tmp.write_text(json.dumps(config, indent=2))
    tmp.replace(path / "config.json")
    card = (path / "card.md").read_text().split("\n## Held-out evaluation")[0].rstrip("\n")
    card += ("\n\n## Held-out evaluation\n\nMeasured with `python scripts/bundle.py " + folder + f"` ({secs:.0f} s); "
             "tests/core/test_bundled.py re-measures it on every CI run.\n\n```json\n"
             + json.dumps(metrics, indent=2) + "\n```\n")
    (path / "card.md").write_text(card)
    print(json.dumps({"model": path.name, **metrics}))


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        main(arg)
