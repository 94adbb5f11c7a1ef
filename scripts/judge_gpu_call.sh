#!/usr/bin/env bash
# The valid figures the decision rules read (docs/measurements/issue31-decision-rule.md, issue32-decision-rule.md),
# for every candidate a GPU call brought back and for the shipped models beside them, in one command on this machine.
#
#   cat OUT1/gpu.tar.* OUT2/gpu.tar.* | tar x -C RUNS && tar xzf RUNS/tr.tgz -C RUNS && tar xzf RUNS/lm.tgz -C RUNS
#   bash scripts/judge_gpu_call.sh RUNS            # → RUNS/valid/<label>.<what>.json(l), one file per figure
#   N=20 bash scripts/judge_gpu_call.sh RUNS       # a quick look (the rules read N=1000 human-translation pairs)
#
# Translators (task en-fr / en-de): human-translation valid chrF / BLEU of releases 1-4 (`core.evaluate --corpus
# real`), generated valid exact / pronouns, the hand-written dev sets (`scripts/eval_dev.py`); the shipped one of the
# same language by the same commands. Language models (task lm-large / lm-xl): bits per byte on english-large valid
# (the yardstick) and english-xl valid (`scripts/lm_bits.py`), the head report and in-context score
# (`scripts/gpu_lm_recipe.py --measure`), the page speed beside the shipped lm (`bench/bench_lm_speed.py`).
# Test splits are never read here. Two jobs at a time (this machine's two cores), one thread each. Tried on the
# stop-52 rehearsal's output (two smoke translators, a smoke lm, the shipped three; N=20): 25 min, the shipped lm's
# figures as on record (bits per byte 1.1080 on english-large valid; previous-token 0.795 / 0.712); its own figures:
# 1.2522 bits per byte on english-xl valid. The head report and the speed bench need a context of ≥ 202 tokens
# (a real candidate has 512; the smoke lm's 128 was refused with a plain error).
set -u
RUNS=${1:?usage: bash scripts/judge_gpu_call.sh RUNS_DIR}; N=${N:-1000}; OUTD="$RUNS/valid"
mkdir -p "$OUTD"; export PYTHONPATH=. OMP_NUM_THREADS=1
task_of() { python -c "import json,sys; print(json.load(open(sys.argv[1]))['meta'].get('task', ''))" "$1/config.json"; }

translator() {  # $1 model (folder or bundled name), $2 label
  local m=$1 l=$2 r
  for r in 1 2 3 4; do
    python -m core.evaluate --model "$m" --split valid --corpus real --n "$N" --parallel-release "$r" | tail -1 \
      > "$OUTD/$l.real$r.json"
  done
  python -m core.evaluate --model "$m" --split valid --corpus generated | tail -1 > "$OUTD/$l.generated.json"
  python scripts/eval_dev.py "$m" > "$OUTD/$l.dev.jsonl"
}

lm() {  # $1 folder, $2 label
  python scripts/lm_bits.py --threads 1 --corpus lm-large "$1" > "$OUTD/$2.bits-large.json"
  python scripts/lm_bits.py --threads 1 --corpus lm-xl "$1" > "$OUTD/$2.bits-xl.json"
  python scripts/gpu_lm_recipe.py --measure "$1" | tail -1 > "$OUTD/$2.measure.json"
}

jobs_=()
run() { "$@" & jobs_+=($!); if [ ${#jobs_[@]} -ge 2 ]; then wait "${jobs_[0]}"; jobs_=("${jobs_[@]:1}"); fi; }
langs=""; lms=()
for d in "$RUNS"/*/; do
  d=${d%/}; [ -f "$d/config.json" ] || continue
  t=$(task_of "$d"); name=$(basename "$d")
  case "$t" in
    en-fr|en-de) run translator "$d" "$name"; langs="$langs $t" ;;
    lm-large|lm-xl) run lm "$d" "$name"; lms+=("$d") ;;
    *) echo "skipped $d (task ${t:-unknown})" ;;
  esac
done
for t in $(echo "$langs" | tr ' ' '\n' | sort -u); do run translator "$t" "shipped-$t"; done
[ ${#lms[@]} -gt 0 ] && run lm assets/models/lm shipped-lm
wait
# alone, after the rest: the speed rule is measured without load
[ ${#lms[@]} -gt 0 ] && python bench/bench_lm_speed.py assets/models/lm "${lms[@]}" > "$OUTD/lm-speed.txt" 2>&1
ls -l "$OUTD"
