"""Print the access model against every ncu record tests/test_access.py checks, and the predictions for rungs not
profiled yet. Run from the repository root: PYTHONPATH=. python benchmarks/2026-11-22_h100_profile/access_compare.py"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from test_access import _ncu_launches  # noqa: E402

from gemmprof.catalog import spec as S  # noqa: E402
from gemmprof.model.access_explain import analyse_kernel, bound_like, compare, predicted_quantities  # noqa: E402
from gemmprof.model.traffic import GemmShape  # noqa: E402

specs = {n: s for s in S.ladder() for n in (s.name, *s.aliases)}
profiled = set()
for fname, name, shape, launch in _ncu_launches():
    spec = specs.get(name)
    if spec is None or spec.accesses is None:
        continue
    profiled.add(spec.name)
    metrics = {n: m.number for (_, n), m in launch.metrics.items() if m.number is not None}
    for c in compare(analyse_kernel(bound_like(spec, launch.kernel_name, S.bind), shape), metrics, spec.accesses.notes):
        print(f"{fname[:30]:30s} {shape.M:5d} {spec.id:3s} {spec.name:28s} {c.quantity:31s} "
              f"model {c.predicted:15.3f} ncu {c.ncu:15.3f} {c.check}")
print("\nnot profiled yet (predicted at 4096, on ncu's definitions):")
for s in S.ladder():
    if s.name not in profiled:
        q = predicted_quantities(analyse_kernel(S.bind(s), GemmShape(4096, 4096, 4096)))
        print(f"{s.id:3s} {s.name:28s} " + "  ".join(f"{k} {v:.4g}" for k, v in q.items()))
