# stage hopper_tests: every Hopper rung's GPU tests (tests/test_hopper_*.py -m gpu), one step per file so that a file cut off by DEADLINE or STEP_TIMEOUT loses only itself; HOPPER_TESTS="FILE ..." picks files (default: all)
# sourced by scripts/gpu_batch.sh (step, GP, B come from there)
for f in ${HOPPER_TESTS:-tests/test_hopper_*.py}; do
  name=$(basename "$f" .py)
  step "$name" python3 -m pytest -q -rs -m gpu --durations=5 -p no:cacheprovider "$f"
done
