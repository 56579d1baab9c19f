# stage checks47: h7, h10 and h14 (the rungs the built-in sweep does not run) verified after their descriptors were made once: edge shapes, fp16/bf16/e4m3, burst regime, no cuBLAS
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/checks47"
check() {  # check NAME RUNG ARGS...: one verified run of a few timed calls
  local name=$1 rung=$2; shift 2
  step "checks47_$name" "${GP[@]}" run "$rung" "$@" --regime burst --budget 0.05 --max-reps 10 --no-cublas \
    -o "$B/checks47/$name.json"
}
check h7_fp16_1000x1030x520 h7 --dtype fp16 -m 1000 -n 1030 -k 520
check h7_bf16_4095x4097x1024 h7 --dtype bf16 -m 4095 -n 4097 -k 1024
check h10_fp16_1000x1030x520 h10 --dtype fp16 -m 1000 -n 1030 -k 520
check h10_bf16_4096x4096x4096 h10 --dtype bf16 --size 4096
check h10_fp16_4095x4097x1024_beta h10 --dtype fp16 -m 4095 -n 4097 -k 1024 --alpha 1.5 --beta -0.5
check h14_tensor_1000x1032x512 h14 --scales tensor -m 1000 -n 1032 -k 512
check h14_1x128_1000x1032x512 h14 --scales 1x128 -m 1000 -n 1032 -k 512
check h14_128x128_4096 h14 --scales 128x128 --size 4096
