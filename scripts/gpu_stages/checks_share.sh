# stage checks_share: what the checks cost inside the main job itself: the README's main job four times (the first fills the build and CuPy caches), each run's checks' cost against its own time (elapsed_s), and the costliest rows' checks.cost_s
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
for i in 0 1 2 3; do
  step "checks_share_$i" python3 scripts/phase_clock.py -- run --all --dtype fp32 --size 4096 --regime burst -o "$B/checks_share_$i.json"
  step "checks_share_${i}_cost" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); c=sum((v.get('checks') or {}).get('cost_s', 0) for v in d['variants']); print('checks', round(c, 3), 's of', d.get('elapsed_s'), 's'); print(sorted(((v['checks'] or {}).get('cost_s', 0), v['name']) for v in d['variants'] if v.get('checks'))[-5:])" "$B/checks_share_$i.json"
done
