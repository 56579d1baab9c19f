# stage startup: --help wall time and import profile; the main job cold (empty caches) then warm, one call
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
step startup python3 scripts/startup_times.py --size "$SIZE" --logs "$B/startup" -o "$B/startup.json"
cat "$B/startup.json"
