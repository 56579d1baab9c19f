#!/usr/bin/env bash
# One device call, many GPU checks: run from the repo root on the GPU machine.
#   bash scripts/gpu_batch.sh STAGE [STAGE ...]
# Stages: env hopper hopperfin fp32top fp32topprof ladder odd beta fp16 tune ncu nsys pytest compilers report rawprof paths interleave splitk sweep startup every_py explain every_cuda splitk16 hopper7 hopper8 specialize hopperodd hopper9 sweep16 hopper10 hopper11 hopper12 small12 small12b final12 pair8 nsys12 tma8 cluster13 public12 fit12. Logs and results go to $OUT/batch/ and are tarred into
# $OUT/batch.tar.gz (the device tool brings back at most 8 files); a short summary is printed last.
set -u
if [ $# -eq 0 ]; then  # no stage: print the usage above and stop
  sed -n '2,/^set -u/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 2
fi
OUT=${OUT:-/tmp/gemmprof-out}
B="$OUT/batch"
mkdir -p "$B"
export PATH="/usr/local/cuda/bin:$PATH"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
GP=(python3 -m gemmprof)
SIZE=${SIZE:-4096}
summary=()

step() {  # step NAME CMD...: run, log, remember the exit code
  local name=$1; shift
  local t0=$SECONDS
  echo "=== $name: $*" | tee -a "$B/commands.txt"
  timeout "${STEP_TIMEOUT:-0}" "$@" >"$B/$name.log" 2>&1  # STEP_TIMEOUT=SECONDS: a step that hangs loses only itself
  local rc=$?
  summary+=("$name rc=$rc $((SECONDS - t0))s")
  tail -n 40 "$B/$name.log"
  return 0
}

SWEEP_SHAPES="1024 4096 8192 16x4096x4096 128x4096x4096 1024x11008x4096 4096x4096x14336 16384x4096x4096 4096x4096x16384 4096x4096x1024 4095x4097x1024 1000x1000x1000"
sweep_fp16() {  # the Hopper rungs over SWEEP_SHAPES; each shape's contenders confirmed beside cuBLAS in turns, up to
                # SWEEP_MAX_REPS launches each (200 are 2 ms at 1024^3)
  mkdir -p "$B/sweep_fp16"
  step sweep_fp16 python3 scripts/shape_sweep.py h4-h13 --dtype fp16 --shapes "$SWEEP_SHAPES" --budget "${SWEEP_BUDGET:-0.3}" --confirm --max-reps "${SWEEP_MAX_REPS:-2000}" --out-dir "$B/sweep_fp16"
}

for stage in "$@"; do
  case $stage in
    env)
      step env bash -c 'nvidia-smi; nvcc --version; python3 -c "import cupy, numpy, click, rich, matplotlib, yaml; print(cupy.__version__, numpy.__version__)"; ncu --version; which nsys || true' ;;
    hopper)  # issue 13: the Hopper rungs, fp16 and bf16, beside cuBLAS in the same run; ncu on h5 and h6
      step hopper_tests python3 -m pytest -q -m gpu tests/test_hopper_rungs.py
      for d in fp16 bf16; do
        for s in 4096 8192; do
          step "hopper_${d}_$s" "${GP[@]}" run h3-h6 --dtype "$d" --size "$s" -o "$B/hopper_${d}_$s.json"
        done
      done
      for d in fp16 bf16; do  # M and N of any size (TMA zero-fills, stores predicated), K a multiple of 8
        step "hopper_odd_$d" "${GP[@]}" run h4-h6 --dtype "$d" -m 4095 -n 4097 -k 1024 --budget 0.3 -o "$B/hopper_odd_$d.json"
      done
      step hopper_ncu "${GP[@]}" profile h5 h6 --cublas --size 8192 --save "$B/profile_hopper_8192.json" --save-csv "$B/ncu_hopper_8192.csv" ;;
    hopperfin)  # issue 13's rest: ncu on h4-h6 (fp16, and bf16 with its tensor counters and the tensor pipe), nsys, roofline
      step hopperfin_tests python3 -m pytest -q -m gpu tests/test_hopper_rungs.py
      for d in fp16 bf16; do
        step "hopperfin_ncu_$d" "${GP[@]}" profile h4 h5 h6 --cublas --size 8192 --dtype "$d" --save "$B/profile_hopper_${d}_8192.json" --save-csv "$B/ncu_hopper_${d}_8192.csv"
        step "hopperfin_roofline_$d" "${GP[@]}" roofline --profile-results "$B/profile_hopper_${d}_8192.json" --table "$B/roofline_hopper_${d}_8192.csv" -o "$B/roofline_hopper_${d}_8192.png"
      done
      if [ -f .gpu/nsys-env.sh ]; then
        step hopperfin_nsys bash -c "source .gpu/nsys-env.sh; for d in fp16 bf16; do ${GP[*]} compare-nsys h4-h6 --size 8192 --dtype \$d --save-report $B/compare_nsys_hopper_\${d}_8192 || exit; done"
      fi ;;
    fp32top)  # issue 14's evidence: the top fp32 rungs at 2048, 4096, 8192 and odd shapes, and ncu's view of them
      step fp32top_tests python3 -m pytest -q -m gpu tests/test_gpu.py -k "top_fp32"
      for s in 2048 4096 8192; do
        step "fp32_$s" "${GP[@]}" run 9-15 --size "$s" --budget 0.5 -o "$B/fp32_$s.json"
      done
      step fp32_odd "${GP[@]}" run --all --dtype fp32 -m 4095 -n 4097 -k 1023 --budget 0.5 -o "$B/fp32_odd.json"
      step fp32_odd2 "${GP[@]}" run 13-15 -m 8191 -n 8193 -k 2047 --budget 0.5 -o "$B/fp32_odd2.json" ;;
    fp32topprof)  # ncu on the top fp32 rungs beside cuBLAS, at 4096 and at the odd shape
      step profile_top "${GP[@]}" profile 13 14 15 --cublas --size 4096 --save "$B/profile_top_4096.json" --save-csv "$B/ncu_top_4096.csv"
      step profile_odd "${GP[@]}" profile 13 14 15 --cublas -m 4095 -n 4097 -k 1023 --save "$B/profile_odd.json" --save-csv "$B/ncu_odd.csv" ;;
    ladder)
      step ladder "${GP[@]}" run --all --size "$SIZE" -o "$B/ladder_$SIZE.json" ;;
    odd)
      step odd "${GP[@]}" run --all -m 4095 -n 4097 -k 1023 --budget 0.3 -o "$B/odd_4095x4097x1023.json" ;;
    beta)
      step beta "${GP[@]}" run --all --size 1024 --alpha 1.5 --beta -0.75 --budget 0.2 -o "$B/beta_1024.json" ;;
    fp16)
      step fp16_8192 "${GP[@]}" run --all --dtype fp16 --size 8192 -o "$B/fp16_8192.json" ;;
    tune)  # issue 15: a quick sweep, rung 10's space pipelined vs serial from cold caches, then --keep for 9-12
      step tune_smoke "${GP[@]}" tune 10 --size 1024 --budget-configs 4 --rounds 1 --cache-dir "$B/tune_cache"
      step tune_speedup python3 scripts/tune_speedup.py --rung 10 --size 4096 -o "$B/tune_speedup_10.json"
      for r in 9 10 11 12; do
        step "tune_$r" "${GP[@]}" tune "$r" --size 4096 --strategy random --budget-configs "${TUNE_CONFIGS:-24}" --keep --cache-dir "$B/tune_cache" -o "$B/tune_$r.json"
      done ;;
    ncu)
      step ncu_metrics bash -c "ncu --query-metrics --chip gh100 | grep -E 'ops_path_tensor|pipe_tensor_op_hmma|lts__t_bytes |l1tex__t_bytes |wavefronts_mem_shared_op|inst_executed_op_shared|fadd_pred_on|fmul_pred_on|device__attribute_display_name'"
      step ncu "${GP[@]}" profile ${PROFILE_VARIANTS:-1-8 10} --size "$SIZE" --save "$B/profile_$SIZE.json" --save-csv "$B/ncu_$SIZE.csv"
      step ncu_h3 "${GP[@]}" profile h3 --cublas --size 8192 --save "$B/profile_h3_8192.json" --save-csv "$B/ncu_h3_8192.csv" ;;
    nsys)
      step nsys bash -c "source .gpu/nsys-env.sh; ${GP[*]} compare-nsys ${NSYS_VARIANTS:-1 3 5 10} --size $SIZE --save-report $B/compare_nsys_$SIZE; ${GP[*]} compare-nsys $B/compare_nsys_$SIZE.sqlite --format json -o $B/nsys_$SIZE.json" ;;
    rawprof)  # raw ncu and nsys output of gemmprof's own runs, kept as parser fixtures
      M="--metrics regex:smsp__average_warp_latency_issue_stalled_.*\.ratio,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,l1tex__t_bytes.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum,smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,sm__inst_executed_pipe_tensor.sum,smsp__inst_executed_pipe_tensor_op_hmma.sum,gpu__time_duration.sum"
      inc=()
      for v in naive gmem_coalescing smem_caching blocktiling_1d blocktiling_2d vectorized warptiling mma_ldmatrix_swizzle; do inc+=(--nvtx-include "gemmprof $v ${SIZE}x${SIZE}x${SIZE}/"); done
      step ncu_raw ncu --clock-control none --csv --page raw --print-units base --nvtx "${inc[@]}" $M "${GP[@]}" run 1-6 10 h3 --size "$SIZE" --launch-once --no-cublas
      cp "$B/ncu_raw.log" "$B/ncu_raw_gemmprof_$SIZE.csv"
      step ncu_details ncu --clock-control none --csv --page details --nvtx "${inc[@]}" --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis "${GP[@]}" run 3 10 --size 2048 --launch-once --no-cublas
      if [ -f .gpu/nsys-env.sh ]; then
        step nsys_raw bash -c "source .gpu/nsys-env.sh; nsys profile -t cuda,nvtx -s none --cpuctxsw=none --stats=true --export=sqlite --force-overwrite=true -o $B/gemmprof_nsys ${GP[*]} run 1 3 5 10 --size $SIZE --budget 0.2"
      fi ;;
    paths)  # the live paths not covered above: .ncu-rep import, .nsys-rep export, live roofline, fp16 under nsys
      step ncu_rep ncu --clock-control none -o "$B/rep" --nvtx --nvtx-include "gemmprof smem_caching 1024x1024x1024/" "${GP[@]}" run 3 --size 1024 --launch-once --no-cublas
      step profile_rep "${GP[@]}" profile --from "$B/rep.ncu-rep" --save "$B/profile_rep.json"
      step profile_cublas "${GP[@]}" profile h3 --cublas --size 4096 --save "$B/profile_h3_4096.json"
      step roofline_live "${GP[@]}" roofline 3 10 h3 --size 2048 -o "$B/roofline_live.png"
      step nsys_fp16 bash -c "source .gpu/nsys-env.sh; ${GP[*]} compare-nsys h2 h3 --size 4096 --save-report $B/fp16; ${GP[*]} compare-nsys $B/fp16.nsys-rep --format json -o $B/nsys_fp16.json" ;;
    compilers)  # every rung built by nvcc and by NVRTC, and gemmprof's nvcc median against a plain events loop
      step compilers python3 scripts/compiler_check.py --size "$SIZE" --no-flush -o "$B/compiler_check_$SIZE.json"
      step two_compilers "${GP[@]}" run 5 10 12 13 h3 --size "$SIZE" --compiler nvcc,nvrtc -o "$B/two_compilers_$SIZE.json" ;;
    report)  # the results-sharing commands on the ladder just measured (clocks, HTML report, diff with last week's)
      step show "${GP[@]}" show "$B/ladder_$SIZE.json"
      step report "${GP[@]}" report "$B/ladder_$SIZE.json" --profile-results benchmarks/2026-11-22_h100_profile/profile_4096.json.gz -o "$B/report_$SIZE.html"
      step diff "${GP[@]}" diff benchmarks/2026-11-22_h100_run/ladder_4096.json.gz "$B/ladder_$SIZE.json" --force ;;
    pytest)
      step pytest python3 -m pytest -q -m gpu tests ;;
    interleave)  # issue 28: `run --interleave` against one-after-another on close variants; h4-h6 built from hopper.cuh
      step interleave_tests python3 -m pytest -q -m gpu tests/test_interleave.py tests/test_hopper_rungs.py
      for i in 1 2; do
        step "sequential_$i" "${GP[@]}" run 13 14 15 --size "$SIZE" --budget 2 -o "$B/sequential_${SIZE}_$i.json"
        step "interleaved_$i" "${GP[@]}" run 13 14 15 --size "$SIZE" --budget 2 --interleave -o "$B/interleaved_${SIZE}_$i.json"
      done
      for d in fp16 bf16; do
        step "hopper_header_$d" "${GP[@]}" run h4-h6 --dtype "$d" --size "$SIZE" --interleave -o "$B/hopper_header_${d}_$SIZE.json"
      done ;;
    splitk)  # issue 26: rung 16 (split-K) beside 13-15 and cuBLAS SGEMM; the run's note says TILES and SPLIT_K
      step splitk_tests python3 -m pytest -q -m gpu tests/test_gpu.py -k "top_fp32 or rung16"
      for s in 1000 2048 4096 8192; do
        step "splitk_$s" "${GP[@]}" run 13-16 --size "$s" --budget 0.5 -o "$B/splitk_$s.json"
      done
      step splitk_odd "${GP[@]}" run 13-16 -m 4095 -n 4097 -k 1023 --budget 0.5 -o "$B/splitk_odd.json"
      step splitk_beta "${GP[@]}" run 15 16 --size 1000 --beta 1 --budget 0.5 -o "$B/splitk_1000_beta1.json"
      step splitk_tune "${GP[@]}" tune 16 --size 1000 --strategy random --budget-configs "${TUNE_CONFIGS:-24}" --cache-dir "$B/tune_cache" -o "$B/splitk_tune_1000.json" ;;
    sweep)  # issue 26's shape sweep, modest list: per rung and shape % of cuBLAS, geometric mean and minimum; 4096x4096x1024 is the aligned neighbour of 4095x4097x1024
      mkdir -p "$B/sweep_fp32"
      step sweep_fp32 python3 scripts/shape_sweep.py 13-16 --dtype fp32 --shapes "$SWEEP_SHAPES" --budget "${SWEEP_BUDGET:-0.1}" --out-dir "$B/sweep_fp32"
      sweep_fp16 ;;
    sweep16)  # the sweep's fp16 half alone (the Hopper rungs h4-h13 against cuBLAS with fp16 inputs and fp32 C)
      sweep_fp16 ;;
    startup)  # issue 30: --help wall time and import profile; the main job cold (empty caches) then warm, one call
      step startup python3 scripts/startup_times.py --size "$SIZE" --logs "$B/startup" -o "$B/startup.json"
      cat "$B/startup.json" ;;
    every_py)  # issue 25: Python callables (the Triton and torch.matmul examples) beside cuBLAS and torch.matmul
      # the Triton example writes fp32 C; the torch example writes the inputs' half type (--c-dtype), so each has its runs
      TRI=examples/triton_matmul/triton_matmul.py:matmul TOR=examples/torch_matmul/torch_matmul.py:matmul
      step every_py_env python3 -c "import cupy, torch, triton; a = cupy.arange(6, dtype=cupy.float32); t = torch.from_dlpack(a); h = torch.from_dlpack(cupy.zeros(4, dtype=cupy.uint16).view(cupy.int16)).view(torch.bfloat16); print('cupy', cupy.__version__, 'torch', torch.__version__, 'triton', triton.__version__, 'dlpack shares', t.data_ptr() == a.data.ptr, 'bf16 view', h.dtype)"
      step every_py_tests python3 -m pytest -q tests/test_callables.py tests/test_callable_c_dtype.py
      step every_py_cupy "${GP[@]}" run --callable "$TRI" --size 4096 --dtype fp16 -o "$B/every_py_cupy_4096.json"
      step every_py_cupy_tor "${GP[@]}" run --callable "$TOR" --size 4096 --dtype fp16 --c-dtype fp16 -o "$B/every_py_cupy_tor_4096.json"
      step every_py_torch "${GP[@]}" run --callable "$TRI" --size 4096 --dtype fp16 --arrays torch -o "$B/every_py_torch_4096.json"
      step every_py_torch_tor "${GP[@]}" run --callable "$TOR" --size 4096 --dtype fp16 --c-dtype fp16 --arrays torch -o "$B/every_py_torch_tor_4096.json"
      step every_py_bf16 "${GP[@]}" run --callable "$TRI" --size 4096 --dtype bf16 -o "$B/every_py_bf16_4096.json"
      step every_py_bf16_tor "${GP[@]}" run --callable "$TOR" --size 4096 --dtype bf16 --c-dtype bf16 -o "$B/every_py_bf16_tor_4096.json"
      step every_py_odd "${GP[@]}" run --callable "$TRI" -m 4095 -n 4097 -k 1023 --dtype fp16 --alpha 1.5 --beta -0.75 --budget 0.3 -o "$B/every_py_odd.json"
      step every_py_odd_tor "${GP[@]}" run --callable "$TOR" -m 4095 -n 4097 -k 1023 --dtype fp16 --c-dtype fp16 --alpha 1.5 --beta -0.75 --budget 0.3 -o "$B/every_py_odd_tor.json"
      step every_py_1000_tor "${GP[@]}" run --callable "$TOR" -m 1000 -n 1030 -k 520 --dtype fp16 --c-dtype fp16 --budget 0.3 -o "$B/every_py_1000_tor.json"
      step every_py_fp32 "${GP[@]}" run 15 --callable "$TRI" --callable "$TOR" --size 2048 --budget 0.3 -o "$B/every_py_fp32_2048.json"
      step every_py_profile "${GP[@]}" profile --callable "$TRI" --cublas --size 4096 --dtype fp16 --save "$B/every_py_profile_4096.json" --save-csv "$B/every_py_ncu_4096.csv"
      step every_py_profile_tor "${GP[@]}" profile --callable "$TOR" --cublas --size 4096 --dtype fp16 --c-dtype fp16 --save "$B/every_py_profile_tor_4096.json" --save-csv "$B/every_py_ncu_tor_4096.csv"
      step every_py_report "${GP[@]}" report "$B/every_py_cupy_4096.json" --profile-results "$B/every_py_profile_4096.json" -o "$B/every_py_report_4096.html"
      step every_py_report_tor "${GP[@]}" report "$B/every_py_cupy_tor_4096.json" --profile-results "$B/every_py_profile_tor_4096.json" -o "$B/every_py_report_tor_4096.html"
      # both sides as do_bench times: its 25 ms of warm-up as calls, then 100 ms of calls, gemmprof without early stop
      step every_py_do_bench python3 scripts/callable_vs_do_bench.py --size 4096 --dtype fp16 --rounds 9 -o "$B/every_py_do_bench_4096.json"
      step every_py_do_bench_tor python3 scripts/callable_vs_do_bench.py --callable "$TOR" --size 4096 --dtype fp16 --c-dtype fp16 --rounds 9 -o "$B/every_py_do_bench_tor_4096.json"
      if [ -f .gpu/nsys-env.sh ]; then
        step every_py_nsys bash -c "source .gpu/nsys-env.sh; ${GP[*]} compare-nsys --callable $TRI --size 4096 --dtype fp16 --save-report $B/every_py_nsys_4096"
        step every_py_nsys_tor bash -c "source .gpu/nsys-env.sh; ${GP[*]} compare-nsys --callable $TOR --size 4096 --dtype fp16 --c-dtype fp16 --save-report $B/every_py_nsys_tor_4096"
      fi ;;
    explain)  # issue 27: fresh inputs for explain's ladder check (both ladders timed and profiled), then the check
      FP32_RUNGS=(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
      step explain_run_fp32 "${GP[@]}" run "${FP32_RUNGS[@]}" --size "$SIZE" -o "$B/explain_run_fp32_$SIZE.json"
      step explain_run_fp16 "${GP[@]}" run h1-h6 --dtype fp16 --size "$SIZE" -o "$B/explain_run_fp16_$SIZE.json"
      # explain reads ncu's metrics (gemmprof asks for them by name) and these two sections: stalls, occupancy
      step explain_prof_fp32 "${GP[@]}" profile "${FP32_RUNGS[@]}" --size "$SIZE" --section WarpStateStats --section Occupancy --save "$B/explain_profile_fp32_$SIZE.json" --save-csv "$B/explain_ncu_fp32_$SIZE.csv"
      step explain_prof_fp16 "${GP[@]}" profile h1-h6 --dtype fp16 --size "$SIZE" --section WarpStateStats --section Occupancy --save "$B/explain_profile_fp16_$SIZE.json" --save-csv "$B/explain_ncu_fp16_$SIZE.csv"
      for l in fp32 fp16; do
        for ext in json csv txt; do
          step "explain_ladder_${l}_$ext" "${GP[@]}" explain --ladder "$l" --results "$B/explain_run_${l}_$SIZE.json" --profile "$B/explain_profile_${l}_$SIZE.json" -o "$B/ladder_check_${l}_$SIZE.$ext"
        done
      done
      step explain_tops "${GP[@]}" explain 15 --results "$B/explain_run_fp32_$SIZE.json" --profile "$B/explain_profile_fp32_$SIZE.json" -o "$B/explain_15_$SIZE.txt"
      step explain_h6 "${GP[@]}" explain h6 --results "$B/explain_run_fp16_$SIZE.json" --profile "$B/explain_profile_fp16_$SIZE.json" -o "$B/explain_h6_$SIZE.txt" ;;
    every_cuda)  # issue 25: each CUDA example run beside cuBLAS (same input and output types), profiled, built, reported
      ex=(colmajor_ld/sgemm_colmajor hgemm_half_c/hgemm_half_c splitk_launcher/splitk multifile_include/sgemm_tiled)
      specs=(); for e in "${ex[@]}"; do specs+=(--spec "examples/$e.yaml"); done
      step every_cuda_tests python3 -m pytest -q tests/test_examples.py tests/test_abi.py tests/test_launcher.py
      step every_cuda_build "${GP[@]}" build "${specs[@]}" --format csv -o "$B/every_cuda_build.csv"
      step every_cuda_run "${GP[@]}" run "${specs[@]}" --size "$SIZE" -o "$B/every_cuda_$SIZE.json"
      step every_cuda_run_odd "${GP[@]}" run "${specs[@]}" -m 4095 -n 4097 -k 1023 --budget 0.3 -o "$B/every_cuda_odd.json"
      step every_cuda_csv "${GP[@]}" show "$B/every_cuda_$SIZE.json" --format csv -o "$B/every_cuda_$SIZE.csv"
      for e in "${ex[@]}"; do
        n=$(basename "$e")
        step "every_cuda_profile_$n" "${GP[@]}" profile --spec "examples/$e.yaml" --size "$SIZE" --cublas --save-csv "$B/every_cuda_ncu_$n.csv" --save "$B/every_cuda_profile_$n.json" --format csv -o "$B/every_cuda_profile_$n.csv"
      done
      step every_cuda_report "${GP[@]}" report "$B/every_cuda_$SIZE.json" --profile-results "$B/every_cuda_profile_splitk.json" -o "$B/every_cuda_report_$SIZE.html"
      if [ -f .gpu/nsys-env.sh ]; then
        step every_cuda_nsys bash -c "source .gpu/nsys-env.sh; nsys profile -t cuda,nvtx -s none --cpuctxsw=none --export=sqlite --force-overwrite=true -o $B/every_cuda_nsys ${GP[*]} run ${specs[*]} --size $SIZE --budget 0.2; ${GP[*]} compare-nsys $B/every_cuda_nsys.sqlite --format json -o $B/every_cuda_nsys.json"
      fi ;;
    splitk16)  # issue 26b: rung 16 at its tuned small-problem defaults (128 x 128, 128 threads) beside rung 15 and cuBLAS
      step splitk16_tests python3 -m pytest -q -m gpu tests/test_gpu.py -k "top_fp32 or rung16"
      for s in 1000 2048 4096 8192; do
        step "splitk16_$s" "${GP[@]}" run 15 16 --size "$s" --budget 0.5 -o "$B/splitk16_$s.json"
      done
      step splitk16_odd "${GP[@]}" run 15 16 -m 4095 -n 4097 -k 1023 --budget 0.5 -o "$B/splitk16_odd.json"
      step splitk16_m128 "${GP[@]}" run 15 16 -m 128 -n 4096 -k 4096 --budget 0.5 -o "$B/splitk16_128x4096x4096.json"
      # the earlier defaults (rung 15's tile), for the same-session comparison at 1000^3
      step splitk16_r15params "${GP[@]}" run 16 --param BM=128 --param BN=256 --param THREADS=256 --size 1000 --budget 0.5 -o "$B/splitk16_1000_rung15_params.json" ;;
    hopper7)  # issue 26: h7 (2-CTA clusters, TMA multicast) verified, beside h6 and cuBLAS, its variants, ncu
      T7=${STEP_TIMEOUT:-300}  # a cluster left waiting on its peer hangs: it costs one step, not the whole call
      STEP_TIMEOUT=$T7 step h7_smoke "${GP[@]}" run h7 --size 1024 --no-cublas --budget 0.05 -o "$B/h7_smoke.json"
      if ! python3 -c "import gemmprof, sys; sys.exit(not all(v.passed for v in gemmprof.load(sys.argv[1]).variants))" "$B/h7_smoke.json" 2>/dev/null; then
        echo "h7 failed its smoke run at 1024: the rest of hopper7 is skipped (see h7_smoke.log)"
      else
        STEP_TIMEOUT=$T7 step h7_tests python3 -m pytest -q -m gpu tests/test_hopper_clusters.py
        for d in fp16 bf16; do
          for s in 4096 8192; do
            STEP_TIMEOUT=$T7 step "h7_${d}_$s" "${GP[@]}" run h6 h7 --dtype "$d" --size "$s" --interleave -o "$B/h7_${d}_$s.json"
          done
        done
        # at 4096 fp16: no cluster (h6's kernel), A shared instead of B, the dev attempt's fenced releases, 3 stages,
        # a narrower tile order
        STEP_TIMEOUT=$T7 step h7_cm1 "${GP[@]}" run h7 --param CLUSTER_M=1 --size 4096 --budget 0.5 -o "$B/h7_var_cluster1_4096.json"
        STEP_TIMEOUT=$T7 step h7_cn2 "${GP[@]}" run h7 --param CLUSTER_M=1 --param CLUSTER_N=2 --size 4096 --budget 0.5 -o "$B/h7_var_shareA_4096.json"
        STEP_TIMEOUT=$T7 step h7_fenced "${GP[@]}" run h7 --param RELEASE_CLUSTER=1 --size 4096 --budget 0.5 -o "$B/h7_var_fenced_4096.json"
        STEP_TIMEOUT=$T7 step h7_st3 "${GP[@]}" run h7 --param STAGES=3 --size 4096 --budget 0.5 -o "$B/h7_var_stages3_4096.json"
        STEP_TIMEOUT=$T7 step h7_g8 "${GP[@]}" run h7 --param GROUP_M=8 --size 4096 --budget 0.5 -o "$B/h7_var_group8_4096.json"
        STEP_TIMEOUT=$T7 step h7_profile "${GP[@]}" profile h6 h7 --cublas --size 4096 --save "$B/h7_profile_4096.json" --save-csv "$B/h7_ncu_4096.csv"
      fi ;;
    hopper8)  # issue 26: h8 (split-K on the Hopper rungs) beside h6 and cuBLAS at small, skinny and odd shapes; the note says TILES and SPLIT_K
      step hopper8_tests python3 -m pytest -q -m gpu tests/test_hopper_split_k.py
      for s in 1024x1024x1024 1000x1000x1000 16x4096x4096 128x4096x4096 1024x11008x4096 4095x4097x1024 4096x4096x4096; do
        IFS=x read -r m n k <<< "$s"
        step "hopper8_$s" "${GP[@]}" run h6 h8 --dtype fp16 -m "$m" -n "$n" -k "$k" --budget 0.5 -o "$B/h8_$s.json"
      done
      # h8 given h6's tile and ring: unsplit it must launch and run as h6 (no regression at 4096)
      step hopper8_h6params "${GP[@]}" run h8 --param CONSUMERS=2 --param BN=256 --param STAGES=4 --dtype fp16 --size 4096 --budget 0.5 -o "$B/h8_h6params_4096.json"
      # other tiles and splits at the small shapes, beside the defaults' rows above
      step hopper8_bn64_m16 "${GP[@]}" run h8 --param BN=64 --dtype fp16 -m 16 -n 4096 -k 4096 --budget 0.5 -o "$B/h8_bn64_16x4096x4096.json"
      step hopper8_c2_m128 "${GP[@]}" run h8 --param CONSUMERS=2 --param STAGES=6 --dtype fp16 -m 128 -n 4096 -k 4096 --budget 0.5 -o "$B/h8_c2_128x4096x4096.json"
      step hopper8_c2_1024 "${GP[@]}" run h8 --param CONSUMERS=2 --param STAGES=6 --dtype fp16 --size 1024 --budget 0.5 -o "$B/h8_c2_1024.json"
      step hopper8_bn64_m128 "${GP[@]}" run h8 --param BN=64 --dtype fp16 -m 128 -n 4096 -k 4096 --budget 0.5 -o "$B/h8_bn64_128x4096x4096.json"
      step hopper8_bn64_1024 "${GP[@]}" run h8 --param BN=64 --dtype fp16 --size 1024 --budget 0.5 -o "$B/h8_bn64_1024.json"
      step hopper8_tune_m16 "${GP[@]}" tune h8 -m 16 -n 4096 -k 4096 --strategy random --budget-configs "${TUNE_CONFIGS:-12}" --cache-dir "$B/tune_cache" -o "$B/h8_tune_16x4096x4096.json"
      step hopper8_ncu "${GP[@]}" profile h8 --cublas -m 128 -n 4096 -k 4096 --save "$B/h8_profile.json" --save-csv "$B/h8_ncu.csv" ;;
    specialize)  # issue 30: rungs 14-16 built for the run's shape (spec `specialize`): verified at the shapes of each path, then timed against their general builds
      step specialize_tests python3 -m pytest -q tests/test_specialize.py
      step specialize_gpu_tests python3 -m pytest -q -m gpu tests/test_gpu.py -k "rung14 or top_fp32 or odd_shape"
      step specialize_perf python3 scripts/specialize_perf.py -o "$B/specialize_perf.json"
      step specialize_build "${GP[@]}" build 14 15 16 --size "$SIZE" --format csv -o "$B/specialize_build_$SIZE.csv" ;;
    hopperodd)  # issue 26.3: h6-h8's staged epilogue for rows of C off the 32-byte grid (N % 8 != 0): verified, then 4096 x N x 1024 beside N = 4096 and cuBLAS, and the aligned path at 4096 and 8192
      step hopperodd_tests python3 -m pytest -q -m gpu tests/test_hopper_rungs.py tests/test_hopper_split_k.py tests/test_hopper_clusters.py
      for s in 4096x4096 4096x4097 4096x4098 4096x4100 4095x4097; do
        IFS=x read -r m n <<< "$s"
        step "hopperodd_${s}x1024" "${GP[@]}" run h6 h7 h8 --dtype fp16 -m "$m" -n "$n" -k 1024 --budget 0.3 -o "$B/odd_${s}x1024.json"
      done
      for s in 4096 8192; do  # the aligned path (store_acc): no regression against earlier records of h6
        step "hopperodd_h6_$s" "${GP[@]}" run h6 --dtype fp16 --size "$s" --budget 0.5 -o "$B/odd_h6_$s.json"
      done ;;
    hopper9)  # issue 26: h9 (ping-pong consumers in 2 x 1 clusters, each one's epilogue under the other's main loop) verified, beside h6 and cuBLAS at large, K = 1024 and odd shapes; its cluster shapes and rings; ncu
      step hopper9_tests python3 -m pytest -q -m gpu tests/test_hopper_pingpong.py tests/test_hopper_rungs.py
      for d in fp16 bf16; do
        for s in 4096 8192; do
          step "h9_${d}_$s" "${GP[@]}" run h6 h9 --dtype "$d" --size "$s" --interleave -o "$B/h9_${d}_$s.json"
        done
      done
      for s in 4096x4096x1024 4095x4097x1024 1024x11008x4096 4096x4096x16384; do
        IFS=x read -r m n k <<< "$s"
        step "h9_$s" "${GP[@]}" run h6 h9 --dtype fp16 -m "$m" -n "$n" -k "$k" --budget 0.3 -o "$B/h9_$s.json"
      done
      # at 4096: the cluster's shape (2 x 1 default; 1 x 1 is the ping-pong alone), the ring's depth
      for v in "CLUSTER_M=1 CLUSTER_N=1" "CLUSTER_M=1 CLUSTER_N=2" "CLUSTER_N=2" "STAGES=5"; do
        args=(); for p in $v; do args+=(--param "$p"); done
        step "h9_var_${v// /_}" "${GP[@]}" run h9 "${args[@]}" --size 4096 --budget 0.3 -o "$B/h9_var_${v// /_}_4096.json"
      done
      step h9_profile "${GP[@]}" profile h6 h9 --cublas --size 4096 --save "$B/h9_profile_4096.json" --save-csv "$B/h9_ncu_4096.csv" ;;
    fit12)  # issue 26: h12's tile width fitted to the SM count: its GPU tests; the default (fitted, alone), fitted in pairs, and 256 in pairs (h12 before), each beside cuBLAS in turns at LLM-like shapes; ncu at 1024x11008x4096
      step fit12_tests python3 -m pytest -q -m gpu tests/test_hopper_tma_store.py
      for s in 1024x11008x4096 2048x11008x4096 1280x5120x4096 2048x5120x5120 3072x3072x3072 4096x13824x5120 512x4096x4096; do
        IFS=x read -r m n k <<< "$s"
        for v in fit pairs 256; do
          case $v in fit) args=() ;; pairs) args=(--param CLUSTER_M=2) ;; 256) args=(--param BN=256 --param CLUSTER_M=2) ;; esac
          step "h12_${s}_$v" "${GP[@]}" run h12 --dtype fp16 -m "$m" -n "$n" -k "$k" "${args[@]}" --budget 0.5 --interleave --max-reps 2000 -o "$B/${s}_$v.json"
        done
      done
      for s in 1024x11008x4096 3072x3072x3072; do
        IFS=x read -r m n k <<< "$s"
        step "h12_bf16_${s}_fit" "${GP[@]}" run h12 --dtype bf16 -m "$m" -n "$n" -k "$k" --budget 0.5 --interleave --max-reps 2000 -o "$B/bf16_${s}_fit.json"
        step "h12_bf16_${s}_256" "${GP[@]}" run h12 --dtype bf16 -m "$m" -n "$n" -k "$k" --param BN=256 --param CLUSTER_M=2 --budget 0.5 --interleave --max-reps 2000 -o "$B/bf16_${s}_256.json"
      done
      step fit12_profile "${GP[@]}" profile h12 --dtype fp16 -m 1024 -n 11008 -k 4096 --cublas --save "$B/profile_1024x11008x4096.json" ;;
    hopper10)  # issue 26: h10 (h6 with a stream-K tail where its rule cuts it) verified, beside h6 and cuBLAS; every tail cut (the rule off) at shapes it leaves whole; ncu of a cut tail; interleaved at 8192
      step hopper10_tests python3 -m pytest -q -m gpu tests/test_hopper_stream_k.py
      for s in 8192x8192x8192 16384x4096x4096 1280x5120x4096 1280x5120x2048 1024x11008x4096 4096x4096x4096 4096x4096x1024 4095x4097x1024; do
        IFS=x read -r m n k <<< "$s"
        step "h10_$s" "${GP[@]}" run h6 h10 --dtype fp16 -m "$m" -n "$n" -k "$k" --budget 0.3 -o "$B/h10_$s.json"
      done
      for s in 1024x11008x4096 4096x4096x4096 4096x4096x14336; do  # the tail cut where the rule does not cut it
        IFS=x read -r m n k <<< "$s"
        step "h10_cut_$s" "${GP[@]}" run h10 --param SK_TAIL_MAX_PCT=100 --param SK_MIN_ITERS=1 -m "$m" -n "$n" -k "$k" --budget 0.3 -o "$B/h10_cut_$s.json"
      done
      step h10_profile_cut "${GP[@]}" profile h6 h10 --param SK_TAIL_MAX_PCT=100 -m 4096 -n 4096 -k 14336 --save "$B/h10_profile_cut_14336.json" --save-csv "$B/h10_ncu_cut_14336.csv"
      for d in fp16 bf16; do
        step "h10_${d}_8192" "${GP[@]}" run h6 h10 --dtype "$d" --size 8192 --interleave -o "$B/h10_${d}_8192.json"
      done ;;
    hopper11)  # issue 26: h11 (skinny problems transposed, M on the wgmma's N side) verified, beside h8 and cuBLAS at M = 1-128; ncu at 16x4096x4096
      step hopper11_tests python3 -m pytest -q -m gpu tests/test_hopper_skinny.py
      for s in 16x4096x4096 1x4096x4096 32x4096x4096 64x4096x4096 128x4096x4096 16x14336x4096 16x4096x14336; do
        IFS=x read -r m n k <<< "$s"
        step "h11_$s" "${GP[@]}" run h8 h11 --dtype fp16 -m "$m" -n "$n" -k "$k" --budget 0.3 -o "$B/h11_$s.json"
      done
      step h11_profile "${GP[@]}" profile h8 h11 --cublas -m 16 -n 4096 -k 4096 --save "$B/h11_profile_16x4096x4096.json" --save-csv "$B/h11_ncu_16x4096x4096.csv" ;;
    hopper12)  # issue 26: h12 (h7 with a TMA-store epilogue, on a balanced grid) verified, beside h6, h7 and cuBLAS at 4096 and 8192 (interleaved), its two choices apart, other shapes; ncu at 4096
      step hopper12_tests python3 -m pytest -q -m gpu tests/test_hopper_tma_store.py
      for d in fp16 bf16; do
        for s in 4096 8192; do
          step "h12_${d}_$s" "${GP[@]}" run h6 h7 h12 --dtype "$d" --size "$s" --interleave -o "$B/h12_${d}_$s.json"
        done
      done
      for v in BALANCED=0 CLUSTER_M=1 "STAGES=3 EPI_BUFS=4"; do  # h7's grid; no cluster (h6's loads); 3 stages, 4 buffers
        args=(); for p in $v; do args+=(--param "$p"); done
        step "h12_var_${v// /_}" "${GP[@]}" run h12 "${args[@]}" --dtype fp16 --size 4096 --budget 0.5 -o "$B/h12_var_${v// /_}_4096.json"
      done
      for s in 4096x4096x1024 4095x4097x1024 1024x11008x4096 4096x4096x16384; do
        IFS=x read -r m n k <<< "$s"
        step "h12_$s" "${GP[@]}" run h7 h12 --dtype fp16 -m "$m" -n "$n" -k "$k" --budget 0.3 -o "$B/h12_$s.json"
      done
      step h12_profile "${GP[@]}" profile h7 h12 --cublas --size 4096 --save "$B/h12_profile_4096.json" --save-csv "$B/h12_ncu_4096.csv" ;;
    small12)  # issue 26: the small squares (1000^3, 1024^3): h6-h8 and h12 timed, h8 with each L2 request width of its tensor maps (rows of 2,000 bytes straddle 128-byte lines), ncu of them and cuBLAS
      step small12_tests python3 -m pytest -q -m gpu tests/test_hopper_rungs.py tests/test_hopper_clusters.py tests/test_hopper_tma_store.py tests/test_hopper_split_k.py
      for s in 1024 1000; do
        step "small12_$s" "${GP[@]}" run h6 h7 h8 h12 --dtype fp16 --size "$s" --budget 0.5 -o "$B/small12_$s.json"
        for p in 128 0; do
          step "small12_h8_l2p${p}_$s" "${GP[@]}" run h8 --param "L2_PROMOTION=$p" --dtype fp16 --size "$s" --budget 0.5 -o "$B/small12_h8_l2p${p}_$s.json"
        done
        step "small12_profile_$s" "${GP[@]}" profile h6 h7 h8 h12 --cublas --size "$s" --save "$B/small12_profile_$s.json" --save-csv "$B/small12_ncu_$s.csv"
        step "small12_profile_l2p128_$s" "${GP[@]}" profile h8 --param L2_PROMOTION=128 --size "$s" --save "$B/small12_profile_l2p128_$s.json" --save-csv "$B/small12_ncu_l2p128_$s.csv"
      done ;;
    small12b)  # issue 26: tiles, rings and L2 request widths of h8 and h9 at 1000^3 and 1024^3 (each line one run beside cuBLAS)
      for s in 1000 1024; do
        for v in "L2_PROMOTION=128" "L2_PROMOTION=128 BN=128" "L2_PROMOTION=128 CONSUMERS=1 BN=128" "L2_PROMOTION=128 STAGES=6" "L2_PROMOTION=128 CONSUMERS=1"; do
          args=(); for p in $v; do args+=(--param "$p"); done
          step "small12b_h8_${v// /_}_$s" "${GP[@]}" run h8 "${args[@]}" --dtype fp16 --size "$s" --budget 0.5 -o "$B/small12b_h8_${v// /_}_$s.json"
        done
        for v in "L2_PROMOTION=128" "L2_PROMOTION=128 BM=64" "L2_PROMOTION=128 CLUSTER_M=1 CLUSTER_N=2" "L2_PROMOTION=128 BM=64 CLUSTER_M=1 CLUSTER_N=2"; do
          args=(); for p in $v; do args+=(--param "$p"); done
          step "small12b_h9_${v// /_}_$s" "${GP[@]}" run h9 "${args[@]}" --dtype fp16 --size "$s" --budget 0.5 -o "$B/small12b_h9_${v// /_}_$s.json"
        done
      done ;;
    final12)  # issue 26: the GPU tests of the Hopper rungs not run by hopper12 and small12 (every Hopper rung now launches through cuLaunchKernelEx)
      step final12_tests python3 -m pytest -q -m gpu tests/test_hopper_pingpong.py tests/test_hopper_stream_k.py tests/test_hopper_skinny.py ;;
    pair8)  # issue 26: h8 in clusters of two sharing A (CLUSTER_N=2) verified, beside h8 alone and cuBLAS at the small and skinny unsplit shapes; ncu at 1000^3 and 1024^3
      step pair8_tests python3 -m pytest -q -m gpu tests/test_hopper_split_k.py
      for s in 1000x1000x1000 1024x1024x1024 128x4096x4096 1000x900x520 2048x2048x2048 4096x4096x1024; do
        IFS=x read -r m n k <<< "$s"
        for cn in 1 2; do
          step "pair8_cn${cn}_$s" "${GP[@]}" run h8 --param "CLUSTER_N=$cn" --dtype fp16 -m "$m" -n "$n" -k "$k" --budget 0.5 -o "$B/pair8_cn${cn}_$s.json"
        done
      done
      for s in 1000 1024; do
        step "pair8_profile_$s" "${GP[@]}" profile h8 --param CLUSTER_N=2 --cublas --size "$s" --save "$B/pair8_profile_$s.json" --save-csv "$B/pair8_ncu_$s.csv"
      done ;;
    nsys12)  # issue 26: the small squares under nsys (kernel durations on the GPU's own clock) beside gemmprof's events: where h8's extra microsecond against cuBLAS goes
      if [ -f .gpu/nsys-env.sh ]; then
        for s in 1024 1000; do
          step "nsys12_$s" bash -c "source .gpu/nsys-env.sh; ${GP[*]} compare-nsys h8 h12 --dtype fp16 --size $s --save-report $B/nsys12_$s && ${GP[*]} compare-nsys $B/nsys12_$s.sqlite --format json -o $B/nsys12_$s.json"
        done
      else
        echo "nsys12: .gpu/nsys-env.sh missing (bash ../shared/device/stage.sh, carry .gpu)"
      fi ;;
    tma8)  # issue 26: h8 writing C by h12's TMA stores in its unsplit launches, verified (all of h8's GPU tests), beside cuBLAS at the small and skinny shapes; ncu at 1024^3
      step tma8_tests python3 -m pytest -q -m gpu tests/test_hopper_split_k.py
      for s in 1024x1024x1024 1000x1000x1000 128x4096x4096 16x4096x4096 1000x900x520 4096x4096x1024; do
        IFS=x read -r m n k <<< "$s"
        step "tma8_$s" "${GP[@]}" run h8 --dtype fp16 -m "$m" -n "$n" -k "$k" --budget 0.5 -o "$B/tma8_$s.json"
      done
      step tma8_profile_1024 "${GP[@]}" profile h8 --cublas --size 1024 --save "$B/tma8_profile_1024.json" --save-csv "$B/tma8_ncu_1024.csv" ;;
    cluster13)  # issue 26: h13 (split-K across a cluster, reduced in distributed shared memory) verified, beside h8 and cuBLAS (interleaved) at the small and skinny shapes, its tiles and limits apart; ncu at 1000^3 and 1024^3
      step cluster13_tests python3 -m pytest -q -m gpu tests/test_hopper_cluster_split_k.py
      for s in 1000x1000x1000 1024x1024x1024 128x4096x4096 16x4096x4096 1000x900x520 2048x2048x2048 4096x4096x1024; do
        IFS=x read -r m n k <<< "$s"
        step "c13_$s" "${GP[@]}" run h8 h13 --dtype fp16 -m "$m" -n "$n" -k "$k" --budget 0.5 --interleave -o "$B/c13_$s.json"
      done
      for s in 1000 1024; do
        for v in "BN=256 STAGES=4" "BN=64" "KS_MAX=1" "L2_PROMOTION=256" "STAGES=4"; do
          args=(); for p in $v; do args+=(--param "$p"); done
          step "c13_var_${v// /_}_$s" "${GP[@]}" run h13 "${args[@]}" --dtype fp16 --size "$s" --budget 0.5 -o "$B/c13_var_${v// /_}_$s.json"
        done
        step "c13_profile_$s" "${GP[@]}" profile h8 h13 --cublas --size "$s" --save "$B/c13_profile_$s.json" --save-csv "$B/c13_ncu_$s.csv"
      done ;;
    public12)  # issue 26: the best public hand-written Hopper kernel (fast.cu's kernel 12, examples/public_fastcu12) verified and timed beside h12 and cuBLAS (bf16 and fp32 C), interleaved, at 4096 and 8192
      step public12_tests python3 -m pytest -q -m gpu tests/test_examples.py -k public
      for s in 4096 8192; do
        step "public12_$s" "${GP[@]}" run h12 --dtype bf16 --spec examples/public_fastcu12/fastcu12.yaml --size "$s" --interleave -o "$B/public12_$s.json"
      done ;;
    *)
      echo "unknown stage $stage" ;;
  esac
done

tar -C "$OUT" -czf "$OUT/batch.tar.gz" batch && rm -rf "$B"
echo "=== summary"
printf '%s\n' "${summary[@]}"
