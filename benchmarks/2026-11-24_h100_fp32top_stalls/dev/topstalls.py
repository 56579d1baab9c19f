"""The instructions holding the most stall samples (issuing excluded) in an ncu source-page CSV, each with the
two instructions before it: python3 topstalls.py SOURCE_CSV [COUNT]"""
import csv
import sys

rows = list(csv.reader(open(sys.argv[1])))
header = rows[1]
col = {h: i for i, h in enumerate(header)}
body = [r for r in rows[2:] if len(r) == len(header)]
total = sum(int(r[col["# Samples"]] or 0) for r in body)
stalls = [h for h in header if h.startswith("stall_") and "Not Issued" not in h
          and h not in ("stall_selected", "stall_not_selected")]


def stalled(row):
    return sum(int(row[col[s]] or 0) for s in stalls)


print(f"{total} samples; the instructions holding the most stall samples (selected/not_selected excluded):")
for i in sorted(range(len(body)), key=lambda i: -stalled(body[i]))[: int(sys.argv[2]) if len(sys.argv) > 2 else 12]:
    top = sorted(((int(body[i][col[s]] or 0), s[6:]) for s in stalls), reverse=True)[:2]
    print(f"\n#{i} {100 * stalled(body[i]) / total:4.1f}% of samples: " + ", ".join(f"{s} {v}" for v, s in top if v))
    for j in range(max(0, i - 2), i + 1):
        print(f"   {j:5d} {body[j][col['Source']].strip()[:70]}")
