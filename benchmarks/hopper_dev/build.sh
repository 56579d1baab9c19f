#!/bin/bash
# compile every variant for fp16 and bf16 into cubins/ (run here or on the GPU machine)
set -e
cd "$(dirname "$0")"
mkdir -p cubins
python3 - <<'PY' > cubins/build_cmds.txt
from variants import VARIANTS
for name, src, entry, defs, *_ in VARIANTS:
    d = " ".join(f"-D{k}={v}" for k, v in defs.items())
    for dt, flag in (("fp16", "-DELEM_BF16=0"), ("bf16", "-DELEM_BF16=1")):
        print(f"nvcc -gencode=arch=compute_90a,code=sm_90a -O3 -cubin -Xptxas -v {d} {flag} -o cubins/{name}_{dt}.cubin {src}")
PY
while read -r cmd; do echo "== $cmd"; $cmd 2>&1 | grep -E 'error|warning|registers|spill' ; done < cubins/build_cmds.txt
