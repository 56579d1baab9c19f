# stage honest: the red team (each cheat caught, with its reason) and honest variants in the same checks (no false alarms): the fp32 ladder at 2048, the Hopper rungs at 4096, three user examples, the Triton example; burst
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
R=(--regime burst)
RED_TEAM_OUT="$B/redteam" step honest_redteam python3 -m pytest -q -m gpu tests/test_red_team.py
step honest_fp32 "${GP[@]}" run --all --dtype fp32 --size 2048 "${R[@]}" -o "$B/honest_fp32_2048.json"
step honest_fp16 "${GP[@]}" run h1-h13 --dtype fp16 --size 4096 "${R[@]}" -o "$B/honest_fp16_4096.json"
step honest_examples "${GP[@]}" run --spec examples/colmajor_ld/sgemm_colmajor.yaml --spec examples/splitk_launcher/splitk.yaml --spec examples/multifile_include/sgemm_tiled.yaml --size 2048 "${R[@]}" -o "$B/honest_examples_2048.json"
step honest_py "${GP[@]}" run --callable examples/triton_matmul/triton_matmul.py:matmul --dtype fp16 --size 4096 "${R[@]}" -o "$B/honest_py_4096.json"
