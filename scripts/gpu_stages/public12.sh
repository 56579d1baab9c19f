# stage public12: fast.cu's kernel 12 (examples/public_fastcu12) from a fresh fetch, verified and timed beside h12 and cuBLAS (bf16 and fp32 C), interleaved, at 4096 and 8192
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
# The GPU machine has no network: fetch the header beforehand into an ignored folder and carry it,
#   python3 scripts/fetch_public_kernel.py --from CLONE_OF_FASTCU --dest .fetched   (or without --from, online)
# FETCHED=DIR names another folder. Its hash is checked again here (the script keeps a checked file, offline).
FETCHED=${FETCHED:-$PWD/.fetched}
step public12_fetch python3 scripts/fetch_public_kernel.py --dest "$FETCHED"
step public12_tests env GEMMPROF_CACHE="$FETCHED" python3 -m pytest -q -rs -m gpu tests/test_examples.py -k public
for s in 4096 8192; do
  step "public12_$s" env GEMMPROF_CACHE="$FETCHED" "${GP[@]}" run h12 --dtype bf16 --spec examples/public_fastcu12/fastcu12.yaml --size "$s" --interleave -o "$B/public12_$s.json"
done
