#!/usr/bin/env bash
# The GPU benchmarks of issue 32 item 5 in one call on a lent machine, each scope side by side with the same
# machine's baseline: bench/bench_gpu.py at each compile scope (forward = the figures of record; loss; step), then
# bench/profile_gpu_step.py of the step scope; logs and the JSON lines to $OUT.
#
#   bash scripts/gpu_bench.sh [SIZES]     # default "100M" (the MFU target's size); "25M 100M" for both ratios
#
# About 90-120 s a scope at 100M on one H200 (compiles included; an estimate from stop 48's 120 s profile call of two
# sizes × two variants, not a measurement). Run it as its own call after the training call, not inside it.
set -u
DEST=${OUT:-/tmp/gpu-bench}; mkdir -p "$DEST"; export PYTHONPATH=.
SIZES=${1:-100M}
nvidia-smi > "$DEST/nvidia-smi.txt" 2>&1
for s in forward loss step; do
  # shellcheck disable=SC2086  # SIZES is a list of size names
  timeout "${PER_SCOPE_S:-170}" python3 bench/bench_gpu.py --sizes $SIZES --rounds 3 --compile-scope "$s" \
    > "$DEST/bench_gpu_$s.log" 2>&1
  echo "scope $s: rc $?, $(tail -c 300 "$DEST/bench_gpu_$s.log" | tr '\n' ' ')"
done
# shellcheck disable=SC2086
timeout "${PROFILE_S:-120}" python3 bench/profile_gpu_step.py --sizes $SIZES --compile-scope step \
  > "$DEST/profile_step.log" 2>&1
echo "profile: rc $?"; ls -l "$DEST"
