# stage pytest
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
step pytest python3 -m pytest -q -m gpu tests
