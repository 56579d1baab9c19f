# stage env
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
step env bash -c 'nvidia-smi; nvcc --version; python3 -c "import cupy, numpy, click, rich, matplotlib, yaml; print(cupy.__version__, numpy.__version__)"; ncu --version; which nsys || true'
