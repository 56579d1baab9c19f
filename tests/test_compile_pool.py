"""Compiling ahead (run, profile, build): builds in parallel, each answered to its own kernel, a failure kept to
its kernel. Stand-in compilers that sleep or fail; no GPU and no nvcc needed."""

import threading
import time

import pytest

from gemmprof.catalog import spec as specmod
from gemmprof.catalog.binding import bind
from gemmprof.measure import build as buildmod
from gemmprof.measure import compile_pool
from gemmprof.measure.build import BuildResult
from gemmprof.measure.compile_pool import nvcc_build_all
from gemmprof.model.traffic import GemmShape


def _kernels(n):
    specs = [s for s in specmod.ladder() if s.dtype == "fp32"][:n]
    assert len(specs) == n
    return [bind(s) for s in specs]


class SleepyCompiler:
    """Sleeps `delays[name]` seconds and records how many builds ran at once; raises or fails where told."""

    def __init__(self, delays, raises=(), fails=()):
        self.delays, self.raises, self.fails = delays, set(raises), set(fails)
        self.running = self.most = 0
        self.finished: list[str] = []
        self.lock = threading.Lock()

    def __call__(self, kernel, arch):
        name = kernel.variant_name
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.delays.get(name, 0.0))
        with self.lock:
            self.running -= 1
            self.finished.append(name)
        if name in self.raises:
            raise OSError(f"nvcc of {name} crashed")
        return BuildResult(name, arch, name not in self.fails, None, f"log of {name}")


def test_builds_run_in_parallel_and_answer_their_own_kernel():
    kernels = _kernels(6)
    # later kernels finish first: results must still belong to the kernel asked for
    fake = SleepyCompiler({k.variant_name: 0.4 - 0.05 * i for i, k in enumerate(kernels)})
    t0 = time.perf_counter()
    with compile_pool.CompileAhead(kernels, "sm_90", build=fake, jobs=6) as ahead:
        results = ahead.wait_all()
    elapsed = time.perf_counter() - t0
    serial = sum(fake.delays.values())
    assert fake.most >= 3, "builds did not overlap"
    assert elapsed < serial / 2, (elapsed, serial)
    assert [r.name for r in results] == [k.variant_name for k in kernels]
    assert fake.finished != [k.variant_name for k in kernels]  # they really finished out of order
    assert all(r.arch == "sm_90" for r in results)


def test_the_first_kernel_is_ready_while_the_rest_still_compile():
    kernels = _kernels(4)
    fake = SleepyCompiler({k.variant_name: (0.02 if i == 0 else 1.5) for i, k in enumerate(kernels)})
    with compile_pool.CompileAhead(kernels, "sm_90", build=fake, jobs=2) as ahead:
        t0 = time.perf_counter()
        first = ahead.get(kernels[0])
        waited = time.perf_counter() - t0
        assert first.name == kernels[0].variant_name
        assert waited < 1.0, waited  # the GPU takes the first kernel without waiting for the slow ones
        assert fake.running >= 1  # the others are still being built


def test_one_failed_or_crashed_build_loses_nothing_else():
    kernels = _kernels(5)
    names = [k.variant_name for k in kernels]
    fake = SleepyCompiler({n: 0.01 for n in names}, raises=[names[1]], fails=[names[3]])
    with compile_pool.CompileAhead(kernels, "sm_90", build=fake, jobs=3) as ahead:
        got = [ahead.get(k) for k in kernels]
    assert got[1] is None  # crashed: the runner builds it again in line and reports the real error
    assert got[3].ok is False and got[3].log == f"log of {names[3]}"
    assert [g.ok for i, g in enumerate(got) if i not in (1, 3)] == [True, True, True]


def test_build_command_pool_keeps_order_and_isolates_a_crash():
    kernels = _kernels(5)
    names = [k.variant_name for k in kernels]
    fake = SleepyCompiler({n: 0.2 - 0.04 * i for i, n in enumerate(names)}, raises=[names[2]])
    seen = []
    results = nvcc_build_all(kernels, ["sm_80"], jobs=5, build=fake, progress=lambda d, t: seen.append((d, t)))
    assert [r.name for r in results] == names
    assert [r.ok for r in results] == [True, True, False, True, True]
    assert "crashed" in results[2].log
    assert seen[-1] == (5, 5) and len(seen) == 5


def test_only_kernels_run_builds_with_nvcc_are_built_ahead(monkeypatch):
    monkeypatch.setattr(buildmod.nvccmod, "find_nvcc", lambda: "/usr/local/cuda/bin/nvcc")
    by_name = {s.name: s for s in specmod.ladder()}
    plain, odd_only, hopper = (bind(by_name[n]) for n in ("naive", "warptiling", "persistent"))
    pairs = [(plain, None), (plain, "nvrtc"), (odd_only, None), (hopper, None)]
    fake = SleepyCompiler({})
    shape = GemmShape(4095, 4097, 1023)  # warptiling's constraints reject it: never compiled
    with compile_pool.for_run(pairs, shape, None, arch="sm_80", build=fake) as ahead:
        ahead.wait_all()
        assert [k.variant_name for k in ahead.kernels] == ["naive"]  # persistent builds only for sm_90a
    with compile_pool.for_run(pairs, GemmShape(4096, 4096, 4096), None, arch="sm_90", build=fake) as ahead:
        assert [k.variant_name for k in ahead.kernels] == ["naive", "warptiling", "persistent"]
        assert compile_pool.announce(ahead).startswith("compiling 3 kernels with nvcc on ")
    with compile_pool.for_run(pairs, shape, "nvrtc", arch="sm_90", build=fake) as ahead:
        assert len(ahead) == 0


def test_the_launch_uses_the_build_made_ahead(monkeypatch):
    """The runner's hook: compile_for_launch hands the pool's build to the loader instead of building again."""
    monkeypatch.setattr(buildmod.nvccmod, "find_nvcc", lambda: "/usr/local/cuda/bin/nvcc")
    kernel = _kernels(1)[0]
    made = BuildResult(kernel.variant_name, "sm_90", True, None, "")
    loaded = []

    def fake_load(k, built=None):
        loaded.append(built)
        return buildmod.CompiledKernel(k, None, None, buildmod.BuildInfo("nvcc", "13.0", (), "sm_90"))

    class Ahead:
        def get(self, k):
            return made if k is kernel else None

    monkeypatch.setattr(buildmod, "nvcc_load", fake_load)
    buildmod.compile_for_launch(kernel, None, Ahead())
    buildmod.compile_for_launch(kernel, None, None)
    assert loaded == [made, None]


@pytest.mark.parametrize("cores, jobs", [(1, 1), (2, 1), (4, 2), (16, 14), (64, 16)])
def test_default_jobs_leaves_two_cores(monkeypatch, cores, jobs):
    from gemmprof.measure import pools

    monkeypatch.setattr(pools.os, "cpu_count", lambda: cores)
    assert pools.default_jobs() == jobs


def test_real_builds_run_in_spawned_processes(nvcc, tmp_path, monkeypatch):
    """nvcc_build itself, in the process pool: each result belongs to its kernel, and the cubins are in the cache
    the launching process reads (GEMMPROF_CACHE reaches the workers)."""
    monkeypatch.setenv("GEMMPROF_CACHE", str(tmp_path / "cache"))
    kernels = _kernels(3)
    with compile_pool.CompileAhead(kernels, "sm_80", jobs=2) as ahead:
        assert type(ahead._pool).__name__ == "ProcessPoolExecutor"
        results = ahead.wait_all()
    assert [r.name for r in results] == [k.variant_name for k in kernels]
    assert all(r.ok and r.resources.registers > 0 for r in results), [r.log[-500:] for r in results]
    assert all(str(r.cubin).startswith(str(tmp_path / "cache")) for r in results)
    again = buildmod.nvcc_build(kernels[0], "sm_80")  # the launching process finds the pool's cubin
    assert again.cubin == results[0].cubin


class _AheadRunner:
    """A stand-in Runner for the run command: takes each kernel's build from the pool the command started."""

    clock_status = "stand-in: no clocks"
    got: list = []

    def __init__(self, profile, options, **_):
        self.seed, self.ahead = 1, None

    def clock_reader(self):
        return None

    def close(self):
        pass

    def run_kernel(self, kernel, compiler=None):
        from gemmprof.results.run import Measurement, VariantResult

        built = self.ahead.get(kernel)
        type(self).got.append((kernel.variant_name, built.name if built else None, time.perf_counter()))
        s = kernel.spec
        return VariantResult(id=s.id, name=s.name, title=s.title, dtype=s.dtype, status="ok",
                             timing=Measurement((1.0, 1.1, 1.2)))


def test_run_starts_every_build_first_and_measures_each_as_it_is_ready(monkeypatch, capsys):
    import gemmprof.commands.run as run_cmd
    import gemmprof.measure.runner as runner
    from gemmprof.cli import main

    kernels = _kernels(4)
    fake = SleepyCompiler({k.variant_name: 0.3 for k in kernels})
    real_for_run = compile_pool.for_run
    monkeypatch.setattr(buildmod.nvccmod, "find_nvcc", lambda: "/usr/local/cuda/bin/nvcc")
    monkeypatch.setattr(compile_pool, "for_run", lambda pairs, shape, compiler: real_for_run(
        pairs, shape, compiler, arch="sm_90", build=fake, jobs=4))
    monkeypatch.setattr(run_cmd, "require_cupy", lambda: None)
    monkeypatch.setattr(runner, "Runner", _AheadRunner)
    monkeypatch.setattr(runner, "device_info", lambda: {"name": "stand-in"})
    _AheadRunner.got = []
    t0 = time.perf_counter()
    main(["run", *[k.spec.id for k in kernels], "--no-cublas", "--size", "256", "--spec-defaults"])
    err = capsys.readouterr().err
    assert "compiling 4 kernels with nvcc on 4 workers..." in err
    names = [k.variant_name for k in kernels]
    assert [(a, b) for a, b, _ in _AheadRunner.got] == [(n, n) for n in names]  # each its own build, in order
    assert _AheadRunner.got[-1][2] - t0 < 0.3 * 4 * 0.75  # built side by side, not one after another
    assert fake.most >= 2


def test_builds_the_cache_holds_start_no_process_and_are_read_when_asked(monkeypatch):
    from gemmprof.measure import nvcc as nvccmod

    kernels = _kernels(4)
    cached = {id(kernels[1]), id(kernels[3])}
    built = []
    monkeypatch.setattr(nvccmod, "is_cached", lambda k, arch, nvcc=None: id(k) in cached)
    monkeypatch.setattr(compile_pool, "nvcc_build", lambda k, arch: built.append(k.spec.name) or f"read {k.spec.name}")
    submitted = []

    class Pool:
        def __init__(self, jobs):
            self.jobs = jobs

        def submit(self, fn, k, arch):
            submitted.append(k.spec.name)
            from concurrent.futures import Future

            f = Future()
            f.set_result(f"compiled {k.spec.name}")
            return f

        def shutdown(self, **_):
            pass

    monkeypatch.setattr(compile_pool, "process_pool", Pool)
    ahead = compile_pool.CompileAhead(kernels, "sm_90")
    assert submitted == [kernels[0].spec.name, kernels[2].spec.name]  # the misses alone
    assert ahead.jobs == min(compile_pool.default_jobs(), 2)
    assert built == []  # cache hits are read when asked for, in the asking thread
    assert ahead.get(kernels[3]) == f"read {kernels[3].spec.name}" and built == [kernels[3].spec.name]
    assert ahead.get(kernels[0]) == f"compiled {kernels[0].spec.name}"


def test_all_cached_means_no_pool(monkeypatch):
    from gemmprof.measure import nvcc as nvccmod

    monkeypatch.setattr(nvccmod, "is_cached", lambda k, arch, nvcc=None: True)
    monkeypatch.setattr(compile_pool, "process_pool", lambda jobs: pytest.fail("a pool for cached builds"))
    monkeypatch.setattr(compile_pool, "nvcc_build", lambda k, arch: k.spec.name)
    kernels = _kernels(3)
    with compile_pool.CompileAhead(kernels, "sm_90") as ahead:
        assert [ahead.get(k) for k in kernels] == [k.spec.name for k in kernels]


def test_the_first_kernel_is_built_first_then_the_largest_sources():
    specs = {s.id: s for s in specmod.ladder()}
    kernels = [bind(specs[i]) for i in ("1", "2", "15", "5", "16", "13")]
    order = [k.spec.id for k in compile_pool.longest_first(kernels)]
    assert order[0] == "1"  # measured first: built first
    assert order[1] == "16"  # rung 16 includes rung 15's file: the largest source
    assert order.index("15") < order.index("5") and order.index("13") < order.index("2")


def test_the_progress_line_counts_builds_and_cache_reads_apart(monkeypatch):
    from gemmprof.measure import nvcc as nvccmod

    kernels = _kernels(3)
    monkeypatch.setattr(compile_pool, "nvcc_build", lambda k, arch: k.spec.name)
    monkeypatch.setattr(compile_pool, "process_pool", lambda jobs: compile_pool.thread_pool(jobs))
    monkeypatch.setattr(nvccmod, "is_cached", lambda k, arch, nvcc=None: True)
    with compile_pool.CompileAhead(kernels, "sm_90") as ahead:
        assert compile_pool.announce(ahead) == "3 kernels built by nvcc before: read from the cache"
    monkeypatch.setattr(nvccmod, "is_cached", lambda k, arch, nvcc=None: k is kernels[0])
    with compile_pool.CompileAhead(kernels, "sm_90", jobs=2) as ahead:
        assert compile_pool.announce(ahead) == "compiling 2 kernels with nvcc on 2 workers (1 more from the cache)..."


def test_wait_all_reads_cached_builds_instead_of_waiting_for_them(monkeypatch):
    """profile waits for every build before ncu starts: a build read from the cache must not keep it waiting."""
    import threading

    from gemmprof.measure import nvcc as nvccmod

    kernels = _kernels(3)
    monkeypatch.setattr(nvccmod, "is_cached", lambda k, arch, nvcc=None: k is not kernels[1])
    monkeypatch.setattr(compile_pool, "nvcc_build", lambda k, arch: k.spec.name)
    monkeypatch.setattr(compile_pool, "process_pool", lambda jobs: compile_pool.thread_pool(jobs))
    seen = []
    with compile_pool.CompileAhead(kernels, "sm_90") as ahead:
        worker = threading.Thread(target=lambda: seen.append(ahead.wait_all()))
        worker.start()
        worker.join(10)
        assert not worker.is_alive(), "wait_all hung on a cached build"
    assert seen == [[k.spec.name for k in kernels]]
