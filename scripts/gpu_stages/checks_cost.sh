# stage checks_cost: where the main job's time goes, with this code's checks and at 0105fce (.old, carried): each run once to fill the build and CuPy caches, then once under cProfile, the top functions by cumulative and by own time printed
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
MAIN_ARGS=(run --all --dtype fp32 --size 4096)
TOP=(python3 -c "import pstats,sys; s=pstats.Stats(sys.argv[1]); s.sort_stats('cumulative').print_stats(45); s.sort_stats('tottime').print_stats(25)")
step checks_cost_new_warm "${GP[@]}" "${MAIN_ARGS[@]}" --regime burst -o "$B/checks_cost_new_warm.json"
step checks_cost_new python3 -m cProfile -o "$B/checks_cost_new.prof" -m gemmprof "${MAIN_ARGS[@]}" --regime burst -o "$B/checks_cost_new.json"
step checks_cost_new_top "${TOP[@]}" "$B/checks_cost_new.prof"
if [ -d .old/gemmprof ]; then
  step checks_cost_old_warm bash -c "cd .old && PYTHONPATH=. python3 -m gemmprof ${MAIN_ARGS[*]} -o $B/checks_cost_old_warm.json"
  step checks_cost_old bash -c "cd .old && PYTHONPATH=. python3 -m cProfile -o $B/checks_cost_old.prof -m gemmprof ${MAIN_ARGS[*]} -o $B/checks_cost_old.json"
  step checks_cost_old_top "${TOP[@]}" "$B/checks_cost_old.prof"
fi
