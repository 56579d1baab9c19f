# stage explain_device: `explain h12 --measure` on this GPU: it should name this device (H200) and bound DRAM at its spec's rate (4.80 TB/s)
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there). About a minute: one nvcc build of h12, one
# verified launch of it under ncu (two sections), then explain; the JSON keeps the GPU's name and every bound.
step explain_device_h12 "${GP[@]}" explain h12 --measure --size "$SIZE" --verbose -o "$B/explain_device_h12_$SIZE.txt"
step explain_device_h12_json "${GP[@]}" explain h12 --measure --size "$SIZE" -o "$B/explain_device_h12_$SIZE.json"
step explain_device_check python3 -c "import json, sys; e = json.load(open(sys.argv[1]))['explanation']; d = [l['evidence'] for l in e['limiters'] if l['kind'] == 'dram']; print('gpu:', e['gpu']); print('dram:', d); sys.exit(0 if e['gpu'].startswith('H200') and d and 'at 4.80 TB/s' in d[0] else 1)" "$B/explain_device_h12_$SIZE.json"
