# stage sweep: shape sweep, modest list: per rung and shape % of cuBLAS, geometric mean and minimum; 4096x4096x1024 is the aligned neighbour of 4095x4097x1024
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
mkdir -p "$B/sweep_fp32"
step sweep_fp32 python3 scripts/shape_sweep.py 13-16 --dtype fp32 --shapes "$SWEEP_SHAPES" --budget "${SWEEP_BUDGET:-0.1}" --out-dir "$B/sweep_fp32"
sweep_fp16
