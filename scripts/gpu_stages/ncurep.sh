# stage ncurep: a small real Nsight Compute report (ncu -o; gemmprof profile's sections and metrics on rung 3 and h3 at 1024^3) and the CSV pages ncu --import makes of it, then the .ncu-rep reader's tests on them (tests/test_ncu_rep.py) through the ncu_report module
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
# Bring back h200_small.ncu-rep, h200_small_details.csv and h200_small_raw.csv as tests/fixtures/ncu/ fixtures.
# ncu_report: the ncu-report wheel where carried (.whl/ncu_report-*.whl, the one `pip install ncu-report` gets, as
# the reader is written against), else Nsight Compute's own copy in extras/python (an older version of the module).
NCU_WHEEL=$(ls .whl/ncu_report-*.whl 2>/dev/null | tail -n 1)
if [ -n "$NCU_WHEEL" ] && python3 -m pip install -q --no-deps --target /tmp/gemmprof-ncu-report "$NCU_WHEEL"; then
  NCU_PY=/tmp/gemmprof-ncu-report
else
  NCU_PY=$(ls -d /opt/nvidia/nsight-compute/*/extras/python 2>/dev/null | tail -n 1)
fi
echo "ncurep: ncu_report from ${NCU_PY:-nowhere}" | tee -a "$B/commands.txt"
NCU_METRICS=$(python3 -c "from gemmprof.adapters.ncu.run import metric_list; print(','.join(metric_list()))")
step ncurep_make ncu --clock-control none --target-processes all -f -o "$B/h200_small" --nvtx \
  --nvtx-include "gemmprof smem_caching 1024x1024x1024/" --nvtx-include "gemmprof mma_ldmatrix_swizzle 1024x1024x1024/" \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
  --metrics "$NCU_METRICS" python3 -m gemmprof run 3 h3 --size 1024 --launch-once --no-cublas
for page in details raw; do
  step "ncurep_$page" bash -c 'ncu --import "$0" --csv --page "$1" --print-units base > "$2"' \
    "$B/h200_small.ncu-rep" "$page" "$B/h200_small_$page.csv"
done
step ncurep_tests env GEMMPROF_NCU_REP_FIXTURES="$B" PYTHONPATH="$PYTHONPATH${NCU_PY:+:$NCU_PY}" \
  python3 -m pytest -q -rs tests/test_ncu_rep.py
step ncurep_profile env PYTHONPATH="$PYTHONPATH${NCU_PY:+:$NCU_PY}" \
  "${GP[@]}" profile --from "$B/h200_small.ncu-rep" --save "$B/ncurep_profile.json"
ls -la "$B"/h200_small* >> "$B/commands.txt"
