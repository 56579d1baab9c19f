# stage overhead: the main job's wall time with this code's checks against the code before them (a copy of gemmprof, kernels and profiles at commit 0105fce the caller puts in .old/ and carries), on one machine, burst regime (the only one before), both build caches filled first, in turns
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there); OVERHEAD_PAIRS (default 2) old/new pairs
if [ ! -d .old/gemmprof ]; then
  echo "overhead: no .old/ (mkdir .old && git archive 0105fce gemmprof kernels profiles | tar -x -C .old, and carry .old)"
else
  MAIN="run --all --dtype fp32 --size 4096"
  step overhead_warm "${GP[@]}" $MAIN --regime burst -o "$B/overhead_warm.json"
  step overhead_old_warm bash -c "cd .old && PYTHONPATH=. python3 -m gemmprof $MAIN -o $B/overhead_old_warm.json >/dev/null"
  for i in $(seq 1 "${OVERHEAD_PAIRS:-2}"); do  # each run's wall time split into start-up, main and exit
    step "overhead_old_$i" python3 scripts/phase_clock.py --cwd .old -- $MAIN -o "$B/overhead_old_$i.json"
    step "overhead_new_$i" python3 scripts/phase_clock.py -- $MAIN --regime burst -o "$B/overhead_new_$i.json"
  done
fi
