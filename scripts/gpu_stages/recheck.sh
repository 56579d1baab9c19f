# stage recheck: after the final batch's fixes, the checks' overhead against the code before them, the red team and honest rungs under the same checks, and sustained runs of zeros-filled inputs (a short call)
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there). Carry .old.
source scripts/gpu_stages/overhead.sh
RED_TEAM_OUT="$B/redteam" step recheck_redteam python3 -m pytest -q -m gpu tests/test_red_team.py
step recheck_fp32 "${GP[@]}" run --all --dtype fp32 --size 2048 --regime burst -o "$B/honest_fp32_2048.json"
step recheck_fp16 "${GP[@]}" run h1-h13 --dtype fp16 --size 4096 --regime burst -o "$B/honest_fp16_4096.json"
for d in fp16 bf16; do
  step "recheck_settled_${d}_zeros" "${GP[@]}" run h12 --dtype "$d" --size 8192 --regime sustained --fill zeros -o "$B/settled_${d}_zeros_8192.json"
done
step recheck_regime_4096 python3 scripts/regime_check.py --size 4096 --dtype fp16 -o "$B/regime_4096.json"
