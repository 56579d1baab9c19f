# stage octets44: h8 in 4 x 2 clusters of 128 x 72 tiles (cuBLAS's decomposition at 1000^3) beside the plan and cuBLAS in turns at 1000^3 (fp16 twice, bf16), two shapes plan rule 3 runs that it was not made on, 1024^3 (4 x 1); its GPU tests; ncu at 1000^3
# sourced by scripts/gpu_batch.sh (step, GP, B come from there). Set DEADLINE to skip what would not fit the call.
mkdir -p "$B/octets44"
OCTET=(--param BN=72 --param CLUSTER_M=4 --param STAGES=7)
for run in fp16:1000x1000x1000 bf16:1000x1000x1000 fp16:1000x960x1496 fp16:1000x1000x2000 fp16:1024x1024x1024 \
           fp16:1000x1000x1000b; do
  dtype=${run%%:*}; shape=${run#*:}; IFS=x read -r m n k <<<"${shape%b}"
  step "octets44_run_${dtype}_$shape" "${GP[@]}" run plan h8 "${OCTET[@]}" --dtype "$dtype" -m "$m" -n "$n" -k "$k" \
    --interleave --budget 0.5 -o "$B/octets44/run_${dtype}_$shape.json"
done
step octets44_pytest python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_hopper_split_k.py -k clusters_of_eight
step octets44_ncu_1000 "${GP[@]}" profile h8 "${OCTET[@]}" --dtype fp16 --size 1000 --save "$B/octets44/profile_1000.json"
