# stage uwg44: experiment: the Hopper rungs with their warpgroup index known warp-uniform (UNIFORM_WG=1: wgmma descriptors in uniform registers, no R2UR between wgmmas) beside the plan (the same rung as it is) and cuBLAS in turns
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
# UWG44_PART=small|large|all (default all); UWG44_DTYPE (default fp16).
mkdir -p "$B/uwg44"
DT=${UWG44_DTYPE:-fp16}
uwg_run() {  # uwg_run BUDGET RUNG SHAPE [PARAM ...]: RUNG with UNIFORM_WG=1 and the plan's own parameters there
  local budget=$1 rung=$2 shape=$3; shift 3
  local m n k p=()
  IFS=x read -r m n k <<<"$shape"
  for kv in "$@"; do p+=(--param "$kv"); done
  step "uwg44_${DT}_${rung}_$shape" "${GP[@]}" run plan "$rung" --param UNIFORM_WG=1 "${p[@]}" --dtype "$DT" \
    -m "$m" -n "$n" -k "$k" --interleave --budget "$budget" --max-reps 4000 -o "$B/uwg44/run_${DT}_${rung}_$shape.json"
}
if [ "${UWG44_PART:-all}" != large ]; then
  uwg_run 0.5 h8 1000x1000x1000 BN=80 STAGES=7 CLUSTER_M=2
  uwg_run 0.5 h8 1024x1024x1024
  uwg_run 0.5 h11 128x4096x4096
  uwg_run 0.5 h11 16x4096x4096
  uwg_run 0.5 h13 128x11008x4096
  uwg_run 0.5 h11 128x4096x14336
  uwg_run 0.5 h8 128x4096x14336 SKINNY_CONSUMERS=2
  uwg_run 0.5 h12 2048x2048x2048
fi
if [ "${UWG44_PART:-all}" != small ]; then
  uwg_run 1 h12 1024x11008x4096
  uwg_run 1 h12 1024x14336x4096
  uwg_run 2 h12 4096x4096x4096
fi
