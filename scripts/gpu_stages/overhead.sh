# stage overhead: the main job's wall time with this code's checks against the code before them (a copy of gemmprof, kernels and profiles at commit 2bf3aa9 the caller puts in .old/ and carries), on one machine, burst regime (the only one before), compile caches warm, in turns
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
if [ ! -d .old/gemmprof ]; then
  echo "overhead: no .old/ (git archive 2bf3aa9 gemmprof kernels profiles | tar -x -C .old, and carry .old)"
else
  MAIN="run --all --dtype fp32 --size 4096"
  step overhead_warm "${GP[@]}" $MAIN --regime burst -o "$B/overhead_warm.json"
  for i in 1 2; do  # python3 -m runs the gemmprof of the folder it starts in
    step "overhead_old_$i" bash -c "cd .old && t0=\$(date +%s%N) && PYTHONPATH=. python3 -m gemmprof $MAIN -o $B/overhead_old_$i.json >/dev/null && echo wall_ms \$(( (\$(date +%s%N) - t0) / 1000000 ))"
    step "overhead_new_$i" bash -c "t0=\$(date +%s%N) && python3 -m gemmprof $MAIN --regime burst -o $B/overhead_new_$i.json >/dev/null && echo wall_ms \$(( (\$(date +%s%N) - t0) / 1000000 ))"
  done

fi
