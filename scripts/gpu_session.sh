#!/usr/bin/env bash
# One GPU call that trains the shipped models side by side (stop 41): the translators' recipe (issue 31) and the
# language model's recipe (issue 32) at once on one GPU, everything then packed in parts of 16,700,000 bytes.
#
#   bash scripts/gpu_session.sh BUDGET_SECONDS [--smoke]   # train, pack, copy parts 0-3 to $OUT
#   TRANSLATORS=1 bash scripts/gpu_session.sh ...          # the translators' recipe too (stop 41 ran both; the
#                                                          # language models alone are next: issue32-gpu.md)
#   bash scripts/gpu_session.sh --rest 4                   # a second call on the still-warm machine: parts 4 on
#   LM_ARGS="--runs ..." TR_ARGS="..." bash scripts/gpu_session.sh ...   # other arguments for either recipe
#
# A lent machine returns at most 64 MiB a call (measured: a 5th part of 16.7 MB was left out as "total"), so what
# does not fit comes back in a second call made at once (the machine is given back after ~30 s idle).
# Back here: cat DIR1/gpu.tar.* DIR2/gpu.tar.* | tar x -C RUNS; then tar xzf RUNS/tr.tgz and RUNS/lm.tgz there.
set -u
W=/tmp/gpu-session; PARTS="$W/parts"; DEST=${OUT:-$W/out}; mkdir -p "$DEST"
if [ "${1:-}" = "--rest" ]; then
  for f in "$PARTS"/gpu.tar.*; do [ "${f##*.}" -ge "${2:-4}" ] && cp "$f" "$DEST/"; done
  ls -l "$DEST"; exit 0
fi
BUDGET=${1:-560}; SMOKE=${2:-}
rm -rf "$W" /tmp/gpu-runs /tmp/gpu-lm-runs; mkdir -p "$W/tr" "$W/lm" "$PARTS" "$DEST"  # the trainer refuses a folder a run left
export PYTHONPATH=.
: > "$W/tr.out"  # present in the archive even when the translators do not run
if [ -n "$SMOKE" ]; then  # the orchestration on the CPU; TR_ARGS / LM_ARGS still choose the data (a rehearsal)
  TR=(--smoke); LM=(--smoke)
  [ -n "${LM_ARGS:-}" ] && read -r -a X <<< "$LM_ARGS" && LM+=("${X[@]}")
  [ -n "${TR_ARGS:-}" ] && read -r -a X <<< "$TR_ARGS" && TR+=("${X[@]}")
else
  # stop 48: the shipped en-de fine-tuned on release 2 of the human translations at two mixing weights (stop 41 ran
  # en-fr-d384=en-fr:0.6:384:4:1536 en-de-d384=en-de:0.4:384:4:1536); the call must carry assets/models/en-de
  TR=(--build-s 60 --post-s 70 --fill 0.5 --runs en-de-ft40=en-de@2:0.4+en-de en-de-ft60=en-de@2:0.6+en-de)
  # the two rotary, unscaled-embedding shapes (stop 41 ran lm-gpu-384=384:6:6:1536 lm-gpu-256=256:4:4:1024)
  LM=(--runs lm-gpu-384ur=384:6:6:1536:ur lm-gpu-384x4ur=384:4:6:1536:ur)
  nvidia-smi > "$W/nvidia-smi.txt" 2>&1
  # a plan other than the arrays above, without editing them (stop 52's plan for the next call, both recipes from
  # scratch side by side: TRANSLATORS=1 TR_ARGS="--runs en-fr-r4=en-fr@4:0.6 en-de-r4=en-de@4:0.4"
  # LM_ARGS="--task lm-xl --runs lm-gpu-384x4ur=384:4:6:1536:ur --batch 128 --fill 0.9"; issue32-gpu.md "Stop 52")
  [ -n "${LM_ARGS:-}" ] && read -r -a LM <<< "$LM_ARGS"
  [ -n "${TR_ARGS:-}" ] && read -r -a TR <<< "$TR_ARGS"
fi
[ "${TRANSLATORS:-}" = 1 ] && python3 scripts/gpu_recipe.py --out "$W/tr" --work /tmp/gpu-runs --budget "$BUDGET" ${TR[@]+"${TR[@]}"} > "$W/tr.out" 2>&1 &
python3 scripts/gpu_lm_recipe.py --out "$W/lm" --work /tmp/gpu-lm-runs --budget "$BUDGET" ${LM[@]+"${LM[@]}"} > "$W/lm.out" 2>&1 &
wait
for r in tr lm; do cat "$W/$r"/runs.tgz.* > "$W/$r.tgz" 2>/dev/null; rm -f "$W/$r"/runs.tgz.*; done
tar cf - -C "$W" tr lm tr.tgz lm.tgz tr.out lm.out $( [ -z "$SMOKE" ] && echo nvidia-smi.txt ) \
  | split -b 16700000 -d -a 1 - "$PARTS/gpu.tar."
for f in "$PARTS"/gpu.tar.*; do [ "${f##*.}" -lt 4 ] && cp "$f" "$DEST/"; done
ls -l "$PARTS"; tail -n 5 "$W/tr.out" "$W/lm.out"
