#!/usr/bin/env bash
# One device call, many GPU checks: run from the repo root on the GPU machine.
#   bash scripts/gpu_batch.sh STAGE [STAGE ...]
# Each stage is a file in scripts/gpu_stages/, NAME.sh (its first line says what it runs); `bash scripts/gpu_batch.sh`
# alone lists them. Logs and results go to $OUT/batch/ and are tarred into $OUT/batch.tar.gz (the device tool brings
# back at most 8 files); a short summary is printed last. Stages of earlier records live in git history: each record
# names the commit whose script made it.
set -u
STAGES="$(dirname "$0")/gpu_stages"
if [ $# -eq 0 ]; then
  sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  for f in "$STAGES"/*.sh; do head -n 1 "$f" | sed 's/^# stage /  /'; done
  exit 2
fi
for stage in "$@"; do  # every stage named must exist before anything runs
  [ -f "$STAGES/$stage.sh" ] || { echo "gpu_batch: no stage $stage (scripts/gpu_stages/$stage.sh)"; exit 2; }
done
OUT=${OUT:-/tmp/gemmprof-out}
B="$OUT/batch"
mkdir -p "$B"
export PATH="/usr/local/cuda/bin:$PATH"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
GP=(python3 -m gemmprof)
SIZE=${SIZE:-4096}
summary=()

step() {  # step NAME CMD...: run, log, remember the exit code; past DEADLINE (seconds into the batch) a step is skipped
  local name=$1; shift
  if [ -n "${DEADLINE:-}" ] && [ "$SECONDS" -ge "$DEADLINE" ]; then
    summary+=("$name skipped: past DEADLINE=$DEADLINE s"); echo "=== $name: skipped (past DEADLINE)"; return 0
  fi
  local t0=$SECONDS
  echo "=== $name: $*" | tee -a "$B/commands.txt"
  timeout "${STEP_TIMEOUT:-0}" "$@" >"$B/$name.log" 2>&1  # STEP_TIMEOUT=SECONDS: a step that hangs loses only itself
  local rc=$?
  summary+=("$name rc=$rc $((SECONDS - t0))s")
  tail -n 40 "$B/$name.log"
  return 0
}

SWEEP_SHAPES="1024 4096 8192 16x4096x4096 128x4096x4096 1024x11008x4096 4096x4096x14336 16384x4096x4096 4096x4096x16384 4096x4096x1024 4095x4097x1024 1000x1000x1000"
sweep_fp16() {  # the Hopper rungs over SWEEP_SHAPES; each shape's contenders confirmed beside cuBLAS in turns, up to
                # SWEEP_MAX_REPS launches each (200 are 2 ms at 1024^3)
  mkdir -p "$B/sweep_fp16"
  step sweep_fp16 python3 scripts/shape_sweep.py h4-h13 --dtype fp16 --shapes "$SWEEP_SHAPES" --budget "${SWEEP_BUDGET:-0.3}" --confirm --max-reps "${SWEEP_MAX_REPS:-2000}" --out-dir "$B/sweep_fp16"
}

for stage in "$@"; do
  # shellcheck source=/dev/null
  source "$STAGES/$stage.sh"
done

tar -C "$OUT" -czf "$OUT/batch.tar.gz" batch && rm -rf "$B"
echo "=== summary"
printf '%s\n' "${summary[@]}"
