# stage sweep16: the sweep's fp16 half alone (the Hopper rungs h4-h13 against cuBLAS with fp16 inputs and fp32 C)
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
sweep_fp16
