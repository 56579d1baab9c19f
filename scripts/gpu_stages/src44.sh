# stage src44: experiment: where the plan's consumers and cuBLAS's wait, per SASS instruction, at 1000 x 1000 x 2000 fp16 (ncu's SourceCounters; the report's source page as CSV)
# sourced by scripts/gpu_batch.sh (step, GP, B come from there)
step src44_make ncu --clock-control none --target-processes all -f -o "$B/src44" --nvtx \
  --nvtx-include "gemmprof plan 1000x1000x2000/" --nvtx-include "gemmprof cublas_hgemm 1000x1000x2000/" \
  --section SourceCounters --section WarpStateStats --section SpeedOfLight \
  python3 -m gemmprof run plan --dtype fp16 -m 1000 -n 1000 -k 2000 --launch-once
step src44_page bash -c 'ncu --import "$0" --csv --page source --print-source sass > "$1" ||
  ncu --import "$0" --csv --page source > "$1"' "$B/src44.ncu-rep" "$B/src44_source.csv"
step src44_details bash -c 'ncu --import "$0" --csv --page details --print-units base > "$1"' \
  "$B/src44.ncu-rep" "$B/src44_details.csv"
