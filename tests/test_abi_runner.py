"""The runner with a spec's own calling convention, without a GPU: CuPy's launch and the problem are stand-ins,
so what is checked is what the runner passes (argument order, leading dimensions, C's layout and tolerance), and
the real split-K launcher built by nvcc, called through ctypes, whose failed launches become one LaunchFailed."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from context import gpu_available

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.model.traffic import GemmShape

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


class _Buffer:
    """What the runner reads of a CuPy array: its device address."""

    def __init__(self, ptr):
        self.data = SimpleNamespace(ptr=ptr)


class _Problem:
    alpha, beta = 1.0, 0.0

    def __init__(self, shape):
        self.shape = shape

    def operand(self, which, layout, ld=None):
        return f"{which}:{layout}" + (f":{ld}" if ld is not None else "")


class _Function:
    def __init__(self):
        self.calls, self.max_dynamic_shared_size_bytes = [], 0

    def __call__(self, grid, block, args, shared_mem=0):
        self.calls.append((grid, block, args))


def _runner(shape, beta=0.0):
    from gemmprof.catalog.gpu_specs import get_gpu
    from gemmprof.measure.runner import Runner, RunOptions

    r = Runner(get_gpu("h100"), RunOptions(shape=shape, seed=1, beta=beta))
    r._device = {"compute_capability": "9.0", "sm_count": 132}
    r.problem = lambda dtype, c_dtype="fp32": _Problem(shape)
    return r


def _spec(rel):
    return bind(specmod.load_spec(EXAMPLES / rel))


def test_a_column_major_kernel_gets_its_arguments_in_its_order(monkeypatch):
    from gemmprof.measure import runner as runmod
    from gemmprof.measure.build import CompiledKernel
    from gemmprof.results.run import Resources

    func, seen = _Function(), {}
    monkeypatch.setattr(runmod, "compile_for_launch", lambda k, c: CompiledKernel(k, func, Resources(32, 0)))
    shape = GemmShape(300, 200, 100)
    r = _runner(shape)

    def fake_verify(row, prepared):
        prepared.launch_for(_Problem(shape), "C")()
        seen.update(tolerance=prepared.tolerance, c_store=prepared.c_store)
        return row, None  # verified, nothing to time

    r._verify = fake_verify
    row = r.run_kernel(_spec("colmajor_ld/sgemm_colmajor.yaml"))
    assert row.status == "ok", row.message
    grid, block, args = func.calls[0]
    assert grid == (19, 13, 1) and block == (16, 16, 1)
    assert [a if isinstance(a, str) else a.item() for a in args] == [300, 200, 100, 1.0, "A:col:304", 304, "B:col:104",
                                                                     104, 0.0, "C", 304]
    assert seen == {"tolerance": 1e-4, "c_store": ("col", 304)}  # the example's ld: M + 4, K + 4, M + 4


def test_a_half_c_kernel_without_beta_is_rejected_at_beta_not_zero_and_checked_at_its_tolerance(monkeypatch):
    from gemmprof.measure import runner as runmod
    from gemmprof.measure.build import CompiledKernel
    from gemmprof.results.run import Resources

    func, seen = _Function(), {}
    monkeypatch.setattr(runmod, "compile_for_launch", lambda k, c: CompiledKernel(k, func, Resources(32, 0)))
    kernel = _spec("hgemm_half_c/hgemm_half_c.yaml")
    row = _runner(GemmShape(64, 64, 64), beta=0.5).run_kernel(kernel)
    assert row.status == "rejected" and "run with --beta 0" in row.message and not func.calls
    r = _runner(GemmShape(64, 48, 32))
    r._verify = lambda row, prepared: (
        prepared.launch_for(_Problem(GemmShape(64, 48, 32)), "C")(), seen.update(tolerance=prepared.tolerance),
        (row, None))[-1]
    assert r.run_kernel(kernel).status == "ok"
    assert [a if isinstance(a, str) else a.item() for a in func.calls[0][2]] == ["A:row:32", "B:row:48", "C", 64, 48, 32]
    assert seen["tolerance"] == 1e-2


def test_the_runner_hands_a_launcher_to_prepare_and_times_what_it_returns(monkeypatch):
    from gemmprof.measure import launcher as launchmod
    from gemmprof.measure import runner as runmod

    calls = []
    monkeypatch.setattr(runmod, "device_arch", lambda: "sm_90")
    monkeypatch.setattr(launchmod, "prepare", lambda k, shape, arch, lds: (
        lambda problem, out: lambda: calls.append((arch, out)), None))
    monkeypatch.setattr(runmod, "compile_for_launch", lambda *a: pytest.fail("a launcher is not compiled as a cubin"))
    r = _runner(GemmShape(64, 64, 64))
    r._verify = lambda row, prepared: (prepared.launch_for(_Problem(GemmShape(64, 64, 64)), "C")(), (row, None))[-1]
    row = r.run_kernel(_spec("splitk_launcher/splitk.yaml"))
    assert row.status == "ok" and row.launch is None and calls == [("sm_90", "C")]


@pytest.mark.skipif(gpu_available(), reason="calls the launcher with stand-in pointers: only where no GPU can run it")
def test_the_real_launcher_is_built_loaded_and_its_failed_launches_are_one_error(nvcc, monkeypatch, tmp_path):
    from gemmprof.measure.launcher import LaunchFailed, prepare

    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path / "cache"))
    fake = SimpleNamespace(uint8="uint8", zeros=lambda n, dtype: _Buffer(0x5000),
                           cuda=SimpleNamespace(get_current_stream=lambda: SimpleNamespace(ptr=0)))
    monkeypatch.setitem(sys.modules, "cupy", fake)
    problem = SimpleNamespace(shape=GemmShape(64, 64, 64), alpha=1.0, beta=0.0,
                              operand=lambda which, layout, ld=None: _Buffer({"A": 0x1000, "B": 0x2000}[which]))
    launch_for, info = prepare(_spec("splitk_launcher/splitk.yaml"), problem.shape, "sm_90")
    assert info.symbol == "splitk_sgemm" and "-shared" in info.flags and len(info.cubin_sha256) == 64
    with pytest.raises(LaunchFailed, match=r"splitk_sgemm: CUDA error \d+ \(.+\) in a launch it made"):
        launch_for(problem, _Buffer(0x3000))()  # no GPU here: the launch fails, and the shim says why
