# stage sweep_model: gemmprof sweep of the Triton example over Llama-3-8B's layer GEMMs (bf16; 16, 128, 1024 and 4096 tokens: 20 shapes), against cuBLAS and torch.matmul: summary, headline, plot
# sourced by scripts/gpu_batch.sh (step, GP, B, SIZE come from there)
# About 3 minutes on one H200: 20 shapes, each one child `gemmprof run` (~4 s to start with torch and Triton, the
# Triton build per new shape class, verification, 3 rows of at most SWEEP_BUDGET s of timing each).
# SWEEP_MODEL_FROM=DIR (carried): the finished runs of an earlier call, copied in first; the sweep resumes after them
if [ -n "${SWEEP_MODEL_FROM:-}" ]; then mkdir -p "$B/sweep_model_bf16" && cp "$SWEEP_MODEL_FROM"/run_*.json "$SWEEP_MODEL_FROM"/run_*.log "$B/sweep_model_bf16/"; fi
step sweep_model "${GP[@]}" sweep --callable examples/triton_matmul/triton_matmul.py:matmul --model examples/models/llama3_8b.json --dtype bf16 --tokens "${SWEEP_TOKENS:-16,128,1024,4096}" --budget "${SWEEP_BUDGET:-0.2}" --out-dir "$B/sweep_model_bf16"
# the same runs, summarised again against torch.matmul's row: a second summary beside the first
step sweep_model_torch "${GP[@]}" sweep --callable examples/triton_matmul/triton_matmul.py:matmul --model examples/models/llama3_8b.json --dtype bf16 --tokens "${SWEEP_TOKENS:-16,128,1024,4096}" --baseline torch.matmul --out-dir "$B/sweep_model_bf16" --summarize-only
