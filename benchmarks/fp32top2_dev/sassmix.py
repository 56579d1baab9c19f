"""Static SASS instruction mix per kernel from `cuobjdump -sass` output: python3 sassmix.py SASS_TXT [FILTER]."""
import re
import sys
from collections import Counter

text = open(sys.argv[1]).read()
flt = sys.argv[2] if len(sys.argv) > 2 else ""
INSN = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_.]*)")
for block in re.split(r"\n\s*Function : ", text)[1:]:
    name = block.split("\n", 1)[0].strip()
    if flt not in name:
        continue
    ops = Counter(m[1] for m in INSN.finditer(block))
    total = sum(ops.values())
    print(f"== {name}: {total} instructions")
    for op, n in ops.most_common(200):
        print(f"  {op:24s} {n:6d} {100 * n / total:5.1f}%")
