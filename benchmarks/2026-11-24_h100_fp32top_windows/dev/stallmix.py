"""Sampled warp stalls, in all and per SASS opcode, from `ncu --page source --csv --print-source sass`.

Usage: python3 stallmix.py SOURCE_CSV
The "(Not Issued)" columns are a subset of their reason (samples of cycles in which the scheduler issued nothing).
"""
import csv
import re
import sys
from collections import Counter, defaultdict

rows = list(csv.reader(open(sys.argv[1])))
header = rows[1]
col = {h: i for i, h in enumerate(header)}
stalls = [h for h in header if h.startswith("stall_")]
total = Counter()
by_op = defaultdict(Counter)
executed = Counter()
samples = 0
for row in rows[2:]:
    if len(row) != len(header):
        continue
    m = re.match(r"\s*(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", row[col["Source"]])
    op = m[1] if m else "?"
    samples += int(row[col["# Samples"]] or 0)
    executed[op] += int(row[col["Instructions Executed"]] or 0)
    for s in stalls:
        v = int(row[col[s]] or 0)
        total[s] += v
        by_op[op][s] += v
print(f"samples {samples}; warp instructions executed {sum(executed.values()):,}")
for s, v in total.most_common(12):
    if v:
        print(f"  {s:26s} {v:8d} {100 * v / samples:5.1f}%")
print("by opcode (samples where the warp's next instruction is this opcode):")
for op in sorted(by_op, key=lambda o: -sum(by_op[o].values()))[:14]:
    share = sum(by_op[op].values())
    top = ", ".join(f"{k[6:]} {100 * v / samples:.1f}" for k, v in by_op[op].most_common(4) if v)
    print(f"  {op:26s} {100 * share / samples:5.1f}%  executed {executed[op]:>13,}  [{top}]")
