#!/bin/bash
# assemble the self-contained rung sources from the shared pieces
set -e
cd "$(dirname "$0")"
{ cat h4_head.inc; echo; cat common_head.inc; echo; python3 gen_wgmma.py 64 128 256; cat common_store.inc; cat h4_body.inc; } > h4_wgmma_tma.cu
for r in h5 h6 h7; do
  [ -f ${r}_body.inc ] || continue
  { cat ${r}_head.inc; echo; cat common_head.inc; cat ${r}_extra.inc 2>/dev/null || true; echo; python3 gen_wgmma.py 128 256; cat common_store.inc; cat ${r}_body.inc; } > $(cat ${r}_name).cu
done
