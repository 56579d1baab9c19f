"""`gemmprof tune`: search a kernel's parameter space (spec `tune:`), pruned by its constraints, cached and resumable.

Stages: space (enumerate, prune) -> strategies (what next) -> engine (compile in parallel, measure, record,
re-time) -> result (typed; table/JSON/CSV) -> plot, keep (tuned defaults). Measurement runs in-process, in one
process per GPU (workers) or in Ray actors (ray_pool); `standin` fakes compiler and GPU for tests.
"""
