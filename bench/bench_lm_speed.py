"""What a language-model page costs per request on this machine: next-token top-k and the traced forward on a
200-token prompt, median of 20 after 2 warm-up rounds, the models alternated in one run (issue 32's 100 ms bound).

    python bench/bench_lm_speed.py assets/models/lm /path/to/candidate [...]
"""
import statistics
import sys
import time

import torch

from core.io import checkpoint


def main(folders: list[str]) -> None:
    torch.set_num_threads(2)
    models = {f: checkpoint.load(f, "cpu").model.eval() for f in folders}
    gen = torch.Generator().manual_seed(0)
    ids = {f: torch.randint(5, m.cfg.vocab_size, (1, 200), generator=gen) for f, m in models.items()}
    times = {(f, k): [] for f in models for k in ("top-k", "traced")}
    for r in range(22):
        for f, m in models.items():
            for k in ("top-k", "traced"):
                t = time.perf_counter()
                with torch.inference_mode():
                    m(ids[f], trace=k == "traced").logits[0, -1].softmax(-1).topk(10)
                if r >= 2:
                    times[(f, k)].append(time.perf_counter() - t)
    for f, m in models.items():
        print(f"{f}: {m.num_parameters():,} parameters; next-token top-k "
              f"{1000 * statistics.median(times[(f, 'top-k')]):.1f} ms, traced forward "
              f"{1000 * statistics.median(times[(f, 'traced')]):.1f} ms")


if __name__ == "__main__":
    main(sys.argv[1:])
