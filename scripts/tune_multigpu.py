"""Issue 18's record: `gemmprof tune` on several GPUs of one host, by worker processes and through Ray.

    python3 scripts/tune_multigpu.py --rung 10 --size 4096 --out benchmarks/DATE_h200x2_tune_multigpu

Runs, each a fresh `gemmprof tune` process with its own tune cache (rung's whole space, --rounds 0):
  cold_1     1 GPU, empty cubin cache (what a first sweep costs; with --skip cold, warm_1 is the cold one)
  warm_G     G = 1, 2, 4 ... up to the GPUs visible, cubins already built (the measurement's scaling)
  ray_G      all GPUs through Ray, one actor per GPU (a head started here with `ray start`, then --ray auto)
  kill       all GPUs; one GPU worker is killed with SIGKILL once some results are in
  ray_kill   the same through Ray (one actor's process killed)
  sigint     all GPUs; the parent gets SIGINT mid-sweep, then the same command resumes

Checks written to summary.json / summary.md: every configuration measured once per cache (one line per key),
the same configurations and statuses as the single-GPU sweep, the lines present before a kill still there
byte for byte after it, and the wall time against the number of GPUs. --stand-in runs the same flow with the
fake compiler and GPU (CUDA_VISIBLE_DEVICES=0,1 gives two stand-in GPUs) to check the script on a CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cache_lines(cache_dir: Path) -> list[str]:
    files = sorted(cache_dir.glob("*.jsonl"))
    if not files:
        return []
    return [ln for ln in files[0].read_text().splitlines()[1:] if ln.strip()]


def summarize_cache(cache_dir: Path) -> dict:
    lines = cache_lines(cache_dir)
    recs = [json.loads(ln) for ln in lines if '"kind":"retime"' not in ln]
    keys = [json.dumps(r["params"], sort_keys=True) for r in recs]
    per_key = Counter(keys)
    return {
        "lines": len(recs),
        "configs": len(per_key),
        "measured_more_than_once": sorted(k for k, c in per_key.items() if c > 1),
        "statuses": dict(Counter(r["status"] for r in recs)),
        "by_worker": dict(Counter(r.get("worker", "") for r in recs if r["status"] != "invalid")),
        "status_of": {json.dumps(r["params"], sort_keys=True): r["status"] for r in recs},
        "best_tflops": None,
    }


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            kids = []
        for k in kids:
            out.append(int(k))
            todo.append(int(k))
    return out


def gpu_pids() -> list[int]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    res = subprocess.run([smi, "--query-compute-apps=pid", "--format=csv,noheader"], capture_output=True, text=True,
                         check=False)
    return [int(x) for x in res.stdout.split() if x.strip().isdigit()]


def count_gpus() -> int:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 1
    res = subprocess.run([smi, "-L"], capture_output=True, text=True, check=False)
    return max(1, sum(ln.startswith("GPU ") for ln in res.stdout.splitlines()))


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def measuring_workers(tune_pid: int, ray: bool) -> list[int]:
    """The processes that hold a GPU for this sweep: nvidia-smi's compute apps where there is a GPU; with the
    stand-in, the first spawned children of the tune process (the GPU workers start before the compile pool),
    or Ray's actor processes."""
    on_gpu = gpu_pids()
    if on_gpu:
        mine = set(descendants(tune_pid))
        return [p for p in on_gpu if (p not in mine) == ray and p != tune_pid]
    if ray:
        return sorted(p for p in map(int, filter(str.isdigit, os.listdir("/proc")))
                      if "_GpuWorker" in cmdline(p) or "ray::_GpuWorker" in cmdline(p))
    return sorted(p for p in descendants(tune_pid) if "spawn_main" in cmdline(p))


class Bench:
    def __init__(self, args, out: Path):
        self.args, self.out = args, out
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), self.env.get("PYTHONPATH")) if p)
        self.env["GEMMPROF_CACHE"] = str(out / "gemmprof_cache")  # cubins: empty at first, then warm
        self.runs: dict[str, dict] = {}

    def cmd(self, name: str, extra: list[str]) -> list[str]:
        c = [sys.executable, "-m", "gemmprof", "tune", self.args.rung, "--size", str(self.args.size),
             "--strategy", "exhaustive", "--rounds", "0", "--cache-dir", str(self.out / name / "cache"),
             "-o", str(self.out / name / "result.json"), *extra]
        return c + (["--stand-in"] if self.args.stand_in else [])

    def start(self, name: str, extra: list[str]):
        (self.out / name).mkdir(parents=True, exist_ok=True)
        c = self.cmd(name, extra)
        log = open(self.out / name / "console.log", "w")
        print(f"[{name}] {' '.join(c[1:])}", flush=True)
        return c, subprocess.Popen(c, env=self.env, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT), time.perf_counter()

    def finish(self, name, c, proc, t0, **extra_fields) -> dict:
        rc = proc.wait()
        wall = time.perf_counter() - t0
        rec = {"command": " ".join(c[1:]), "rc": rc, "wall_s": round(wall, 2), **extra_fields,
               "cache": summarize_cache(self.out / name / "cache")}
        res = self.out / name / "result.json"
        if res.exists():
            timed = [c for c in json.loads(res.read_text())["configs"] if c.get("tflops")]
            if timed:
                best = max(timed, key=lambda c: c["tflops"])
                rec["cache"]["best_tflops"], rec["best_params"] = best["tflops"], best["params"]
        self.runs[name] = rec
        print(f"[{name}] rc={rc} wall={wall:.1f}s statuses={rec['cache']['statuses']} "
              f"by_worker={rec['cache']['by_worker']}", flush=True)
        return rec

    def sweep(self, name: str, extra: list[str]) -> dict:
        return self.finish(name, *self.start(name, extra))

    def wait_for_timed(self, name: str, proc, count: int, timeout: float = 300) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            if sum('"status":"timed"' in ln for ln in cache_lines(self.out / name / "cache")) >= count:
                return True
            time.sleep(0.2)
        return False

    def kill_one(self, name: str, extra: list[str], ray: bool) -> dict:
        c, proc, t0 = self.start(name, extra)
        got = self.wait_for_timed(name, proc, self.args.kill_after)
        before = cache_lines(self.out / name / "cache")
        victims = measuring_workers(proc.pid, ray) if got else []
        killed = killed_cmd = None
        if victims:
            killed = victims[-1]
            killed_cmd = cmdline(killed)[:200].strip()
            os.kill(killed, signal.SIGKILL)
        rec = self.finish(name, c, proc, t0, killed_pid=killed, killed_cmd=killed_cmd, lines_before_kill=len(before))
        after = set(cache_lines(self.out / name / "cache"))
        rec["lines_before_kill_kept"] = sum(ln in after for ln in before)
        return rec

    def sigint_resume(self, name: str, extra: list[str]) -> dict:
        c, proc, t0 = self.start(name, extra)
        self.wait_for_timed(name, proc, self.args.kill_after)
        proc.send_signal(signal.SIGINT)
        first = self.finish(name, c, proc, t0)
        before = cache_lines(self.out / name / "cache")
        shutil.copy(self.out / name / "console.log", self.out / name / "console_interrupted.log")
        again = self.finish(name, *self.start(name, extra))
        after = cache_lines(self.out / name / "cache")
        return {"interrupted": first, "resumed": again, "lines_at_interrupt": len(before),
                "lines_after_resume": len(after), "lines_before_kept": sum(ln in set(after) for ln in before),
                "resumed_measured_only_missing": after[:len(before)] == before
                and len(after) - len(before) == again["cache"]["configs"] - len(before)}


def ray_cli(env, *args) -> subprocess.CompletedProcess:
    code = "import sys; from ray.scripts.scripts import main; sys.argv[0] = 'ray'; main()"
    return subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=False)


def compare(reference: dict, other: dict) -> dict:
    a, b = reference["cache"]["status_of"], other["cache"]["status_of"]
    return {"same_configs": set(a) == set(b), "same_statuses": a == b,
            "each_once": not other["cache"]["measured_more_than_once"], "complete": len(b) == len(a)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rung", default="10")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--out", required=True)
    ap.add_argument("--kill-after", type=int, default=8, help="timed results before the kill / SIGINT")
    ap.add_argument("--skip", default="", help="comma-separated runs to leave out (cold,warm,ray,kill,ray_kill,sigint)")
    ap.add_argument("--stand-in", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    skip = set(filter(None, args.skip.split(",")))
    b = Bench(args, out)
    ids = os.environ.get("CUDA_VISIBLE_DEVICES")
    ngpu = len(ids.split(",")) if ids else count_gpus()
    counts = [g for g in (1, 2, 4, 8) if g <= ngpu]
    if "cold" not in skip:
        b.sweep("cold_1", ["--gpus", "1"])
    if "warm" not in skip:
        for g in counts:
            b.sweep(f"warm_{g}", ["--gpus", str(g)])
    if "ray" not in skip or "ray_kill" not in skip:
        renv = dict(b.env, RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
        b.env = renv
        started = ray_cli(renv, "start", "--head", f"--num-gpus={ngpu}", "--num-cpus=4", "--include-dashboard=false",
                          "--disable-usage-stats")
        (out / "ray_start.log").write_text(started.stdout + started.stderr)
        try:
            if "ray" not in skip:
                b.sweep(f"ray_{ngpu}", ["--ray", "auto"])
            if "ray_kill" not in skip:
                b.runs["ray_kill"] = b.kill_one("ray_kill", ["--ray", "auto"], ray=True)
        finally:
            stopped = ray_cli(renv, "stop", "--force")
            (out / "ray_stop.log").write_text(stopped.stdout + stopped.stderr)
    if "kill" not in skip:
        b.runs["kill"] = b.kill_one("kill", ["--gpus", str(ngpu)], ray=False)
    if "sigint" not in skip:
        b.runs["sigint"] = b.sigint_resume("sigint", ["--gpus", str(ngpu)])

    ref = b.runs.get("warm_1") or b.runs.get("cold_1")
    checks = {}
    if ref:
        for name, rec in b.runs.items():
            if name == "sigint":
                checks[name] = compare(ref, rec["resumed"])
            elif rec is not ref:
                checks[name] = compare(ref, rec)
    scaling = {name: rec["wall_s"] for name, rec in b.runs.items() if name.startswith(("warm_", "ray_", "cold_"))
               and name != "ray_kill"}
    summary = {"rung": args.rung, "size": args.size, "gpus_visible": ngpu, "stand_in": args.stand_in,
               "runs": b.runs, "checks_against_single_gpu": checks, "wall_s": scaling}
    for rec in b.runs.values():  # the per-configuration statuses are in the caches themselves
        for r in (rec.get("interrupted"), rec.get("resumed"), rec):
            if r and "cache" in r:
                r["cache"].pop("status_of", None)
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    lines = [f"# tune {args.rung} --size {args.size} on {ngpu} GPU(s){' (stand-in)' if args.stand_in else ''}", "",
             "| run | wall s | statuses | by worker | same configs & statuses as 1 GPU | each once |",
             "| --- | --- | --- | --- | --- | --- |"]
    for name, rec in b.runs.items():
        r = rec["resumed"] if name == "sigint" else rec
        ck = checks.get(name, {})
        lines.append(f"| {name} | {r['wall_s']} | {r['cache']['statuses']} | {r['cache']['by_worker']} | "
                     f"{ck.get('same_statuses', '-')} | {ck.get('each_once', '-')} |")
    for name in ("kill", "ray_kill"):
        if name in b.runs:
            r = b.runs[name]
            lines.append(f"\n{name}: killed pid {r['killed_pid']} after {r['lines_before_kill']} lines; "
                         f"{r['lines_before_kill_kept']} of them unchanged afterwards; rc {r['rc']}")
    if "sigint" in b.runs:
        s = b.runs["sigint"]
        lines.append(f"\nsigint: {s['lines_at_interrupt']} lines at the interrupt (rc {s['interrupted']['rc']}), "
                     f"{s['lines_before_kept']} kept; resumed to {s['lines_after_resume']} lines, measuring only "
                     f"the missing ones: {s['resumed_measured_only_missing']}")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
