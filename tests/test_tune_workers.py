"""Several GPUs: one worker process per visible GPU (stand-in measurement), and Ray actors when Ray is installed."""

import os

import pytest
from tune_helpers import FLOPS, SHAPE, sweep, toy_spec

from gemmprof.errors import GemmprofError, InputError
from gemmprof.tune.measure import visible_gpus
from gemmprof.tune.space import config_key, enumerate_space
from gemmprof.tune.standin import StandInFactory
from gemmprof.tune.workers import ProcessMeasurer


def test_visible_gpus_honours_cuda_visible_devices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,5,7")
    assert visible_gpus("all") == ["2", "5", "7"] and visible_gpus(2) == ["2", "5"] and visible_gpus(1) == ["2"]
    with pytest.raises(InputError, match=r"--gpus 4: only 3 GPU\(s\) visible"):
        visible_gpus(4)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert visible_gpus(1) == [None]  # one GPU: nothing changes


def test_one_worker_per_gpu_measures_each_configuration_once(tmp_path):
    spec = toy_spec(tmp_path / "s")
    m = ProcessMeasurer(StandInFactory(flops=FLOPS, delay_s=0.01), ["0", "1", "2"])
    try:
        m.start()
        r = sweep(spec, tmp_path / "c", measurer=m, top=3)
    finally:
        m.close()
    n = len(enumerate_space(spec, SHAPE).valid)
    assert len(r.configs) == n == r.measured_now
    assert {c.info["device_index"] for c in r.configs} == {0, 1, 2}  # each worker got its device index
    assert {c.worker for c in r.configs} == {"gpu0", "gpu1", "gpu2"}
    assert len({c.info["pid"] for c in r.configs}) == 3 and os.getpid() not in {c.info["pid"] for c in r.configs}
    lines = open(r.cache_file).read().splitlines()
    keys = [ln for ln in lines[1:] if '"status":"timed"' in ln]
    assert len(keys) == n  # the parent wrote each result once


def test_workers_on_different_device_models_are_refused():
    m = ProcessMeasurer(StandInFactory(device_names=("NVIDIA H100", "NVIDIA A100")), ["0", "1"])
    with pytest.raises(GemmprofError, match=r"the GPUs differ \(gpu0: NVIDIA H100, gpu1: NVIDIA A100\)"):
        m.start()


def test_a_killed_worker_loses_no_finished_result(tmp_path):
    spec = toy_spec(tmp_path / "s")
    space = enumerate_space(spec, SHAPE)
    victim = config_key(space.valid[len(space.valid) // 2])
    factory = StandInFactory(flops=FLOPS, delay_s=0.01, die_once_dir=str(tmp_path), die_keys=frozenset({victim}))
    m = ProcessMeasurer(factory, ["0", "1"])
    try:
        m.start()
        r = sweep(spec, tmp_path / "c", measurer=m, retime_rounds=0)
        deaths = m.deaths
    finally:
        m.close()
    assert deaths == 1 and any(p.name.startswith("died-") for p in tmp_path.iterdir())
    assert len(r.configs) == len(space.valid) and r.status_counts() == {"timed": len(space.valid)}
    assert len({c.info["pid"] for c in r.configs}) == 3  # the replacement process measured too
    lines = open(r.cache_file).read().splitlines()
    assert sum('"status":"timed"' in ln for ln in lines) == len(space.valid)


def test_ray_actors_one_per_gpu(tmp_path, ray):
    from gemmprof.tune.ray_pool import RayMeasurer

    spec = toy_spec(tmp_path / "s")
    # Ray 2.x dropped local_mode: "local" starts a private one-node instance with two stand-in GPUs
    m = RayMeasurer(StandInFactory(flops=FLOPS), "local", gpus=2, local_gpus=2)
    try:
        m.start()
        r = sweep(spec, tmp_path / "c", measurer=m, budget_configs=12, top=3)
    finally:
        m.close()
    assert len(r.configs) == 12 == r.measured_now and {c.worker for c in r.configs} == {"ray0", "ray1"}
    assert r.verdict is not None and r.device == "Stand-in GPU"


def test_a_dead_ray_actor_is_replaced_and_loses_nothing(tmp_path, ray):
    from gemmprof.tune.ray_pool import RayMeasurer

    spec = toy_spec(tmp_path / "s")
    space = enumerate_space(spec, SHAPE)
    victim = config_key(space.valid[3])
    factory = StandInFactory(flops=FLOPS, delay_s=0.01, die_once_dir=str(tmp_path), die_keys=frozenset({victim}))
    m = RayMeasurer(factory, "local", gpus=2, local_gpus=2)
    try:
        m.start()
        r = sweep(spec, tmp_path / "c", measurer=m, retime_rounds=0)
    finally:
        m.close()
    assert any(p.name.startswith("died-") for p in tmp_path.iterdir())  # an actor did die
    assert len(r.configs) == len(space.valid) and r.status_counts() == {"timed": len(space.valid)}
    lines = open(r.cache_file).read().splitlines()
    assert sum('"status":"timed"' in ln for ln in lines) == len(space.valid)


def test_no_ray_cluster_is_one_clear_line(tmp_path, monkeypatch, ray):
    from click.testing import CliRunner
    from clitools import invoke

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))  # no session of another test's cluster to find
    res = invoke(CliRunner(), ["tune", "10", "--size", "256", "--stand-in", "--ray", "auto",
                                   "--cache-dir", str(tmp_path / "c")])
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "--ray auto: cannot start or reach Ray:" in res.output
