"""The red team (tests/red_team/README.md) on the GPU: every cheating GEMM is reported FAIL with a reason a user
understands, each in a `gemmprof run` of its own (a cheat that patches CuPy must not reach the next). With
RED_TEAM_OUT set, each run's results file is kept there (scripts/gpu_stages/redteam.sh makes the record).
On the CPU: every cheat parses, and the table of the README names every file."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEAM = ROOT / "tests" / "red_team"

# (how gemmprof is pointed at it, what the FAIL message must say: one of these)
CHEATS = {
    "side_stream": (["--callable", "tests/red_team/side_stream.py:gemm"],
                    ("work outlived its timing events")),
    "thread_later": (["--callable", "tests/red_team/thread_later.py:gemm"],
                     ("work outlived its timing events", "never written",
                      "right on its verified call but wrong")),
    "pointer_cache": (["--callable", "tests/red_team/pointer_cache.py:gemm"], ("right on its verified call but wrong",)),
    "fingerprint_cache": (["--callable", "tests/red_team/fingerprint_cache.py:gemm"],
                          ("right on its verified call but wrong",)),
    "timer_patch": (["--callable", "tests/red_team/timer_patch.py:gemm"], ("replaced cupy.cuda.get_elapsed_time",)),
    "persist_l2": (["--callable", "tests/red_team/persist_l2.py:gemm"],
                   ("persisting-L2 carve-out", "persisting access policy window")),
    "counter_skip": (["--spec", "tests/red_team/counter_skip.yaml"], ("right on its verified call but wrong",)),
    "side_stream_launcher": (["--spec", "tests/red_team/side_stream_launcher.yaml"],
                             ("work outlived its timing events")),
}


def test_every_cheat_is_in_the_readme_and_every_file_is_a_cheat():
    readme = (TEAM / "README.md").read_text()
    named = set(re.findall(r"\| `([\w.]+?)(?:\.py:gemm|\.yaml)` \|", readme))
    assert named == set(CHEATS)
    files = {p.stem for p in TEAM.iterdir() if p.suffix in (".py", ".yaml")}
    assert files == set(CHEATS)


@pytest.mark.parametrize("name", sorted(p.stem for p in TEAM.glob("*.py")))
def test_every_python_cheat_compiles(name):
    compile((TEAM / f"{name}.py").read_text(), name, "exec")


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(CHEATS))
def test_each_cheat_is_caught_with_its_reason(name, tmp_path):
    args, reasons = CHEATS[name]
    keep = Path(os.environ.get("RED_TEAM_OUT") or tmp_path)
    keep.mkdir(parents=True, exist_ok=True)
    out = keep / f"{name}.json"
    cmd = [sys.executable, "-m", "gemmprof", "run", *args, "--size", os.environ.get("RED_TEAM_SIZE", "2048"),
           "--regime", "burst", "--budget", "0.3", "--no-cublas", "-o", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    doc = json.loads(out.read_text())
    rows = [v for v in doc["variants"] if v["kind"] != "baseline"]
    assert rows, proc.stderr[-2000:]
    row = rows[0]
    assert row["status"] == "FAIL", (name, row["status"], row["message"])
    assert any(r in row["message"] for r in reasons), (name, row["message"])
    assert row["achieved_tflops"] is None  # a caught cheat has no figure
