# stage plan: the planning entry (plan) beside the rung its rules passed over and cuBLAS, in turns, at the sweep's shapes (fp16) and five in bf16; its rule 4 past K = 1024; h12 alone where rule 6 prefers h6
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
# Each shape is one `gemmprof run plan RIVAL --interleave`: plan (the rung its rules choose, named in its note),
# RIVAL and cuBLAS timed in turns. At every sweep shape the plan's rung is the record's best, so RIVAL is the
# runner-up its rules passed over there (h13 where rule 2 takes h8, h8 where rule 1 takes h11, h6 where rule 5
# takes h12, h12 where rule 4 takes h9): plan / RIVAL > 1 says the rule still holds on this GPU. About 4-8 s a
# shape once built (0.3 s of launches a variant); 20 runs, 2-3 device minutes with the builds.
# Options: PLAN_BUDGET (seconds of launches per variant, default 0.3), PLAN_MAX_REPS (2000), REGIME (passed as
# --regime where `run` has it), PLAN_ONLY (a regular expression: only the runs whose name, DTYPE_MxNxK_RIVAL, it
# matches).
mkdir -p "$B/plan"
plan_vs() {  # plan_vs DTYPE SHAPE RIVAL [more run options]: SHAPE is N or MxNxK
  local dtype=$1 shape=$2 rival=$3 m n k
  shift 3
  IFS=x read -r m n k <<<"$shape"
  n=${n:-$m} k=${k:-$m}
  [[ "${dtype}_${m}x${n}x${k}_${rival}" =~ ${PLAN_ONLY:-.} ]] || return 0
  step "plan_${dtype}_${m}x${n}x${k}_${rival}" "${GP[@]}" run plan "$rival" "$@" --dtype "$dtype" -m "$m" -n "$n" -k "$k" --interleave --budget "${PLAN_BUDGET:-0.3}" --max-reps "${PLAN_MAX_REPS:-2000}" ${REGIME:+--regime "$REGIME"} -o "$B/plan/${dtype}_${m}x${n}x${k}_${rival}.json"
}
# the sweep's shapes (SWEEP_SHAPES of gpu_batch.sh), each with the rival its rule passed over
for pair in 1024:h13 4096:h6 8192:h6 16x4096x4096:h8 128x4096x4096:h8 1024x11008x4096:h6 4096x4096x14336:h6 \
            16384x4096x4096:h6 4096x4096x16384:h6 4096x4096x1024:h6 4095x4097x1024:h12 1000:h13; do
  plan_vs fp16 "${pair%%:*}" "${pair##*:}"
done
for pair in 1024:h13 4096:h6 128x4096x4096:h8 1024x11008x4096:h6 4095x4097x1024:h12; do
  plan_vs bf16 "${pair%%:*}" "${pair##*:}"
done
# rule 4 (h9 for rows of C off 16 bytes) was measured at K = 1024 only; at K = 4096 the rules give h12
plan_vs fp16 4095x4097x4096 h9
# rule 6 (h6 where h12 would pair 256-wide tiles with an odd count of 128-row tiles, or K past 16384): h12 alone
# (CLUSTER_M=1, the parameter such a rule could set instead) beside the plan's h6
plan_vs fp16 6000x10240x8192 h12 --param CLUSTER_M=1
plan_vs fp16 2048x8192x28672 h12 --param CLUSTER_M=1
