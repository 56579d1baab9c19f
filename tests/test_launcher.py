"""Host launchers without a GPU: a tiny host-only shared library built by the C compiler in the test stands in for
an nvcc-built one, so ctypes loading, argument packing, return codes, the CUDA-error shim, a missing symbol and a
library that does not load are exercised for real."""

import ctypes
import os
import shutil
import subprocess

import pytest

from gemmprof.catalog import abi
from gemmprof.measure.launcher import Launcher, LauncherError, LaunchFailed, exported, missing_entry
from gemmprof.model.traffic import GemmShape

# records what it was called with; returns `rc`; the shim reports `err` as the CUDA runtime's last error
SOURCE = r"""
static double seen[16]; static void* ptrs[4]; static int rc = 0, err = 0;
int set_result(int r, int e) { rc = r; err = e; return 0; }
double seen_value(int i) { return seen[i]; }
void* seen_pointer(int i) { return ptrs[i]; }
int my_gemm(const void* A, int lda, const void* B, int ldb, void* C, int ldc, int M, int N, int K, float alpha,
            float beta, int splits, float scale, void* workspace, void* stream) {
    double v[] = {lda, ldb, ldc, M, N, K, alpha, beta, splits, scale};
    for (int i = 0; i < 10; ++i) seen[i] = v[i];
    ptrs[0] = (void*)A; ptrs[1] = (void*)B; ptrs[2] = C; ptrs[3] = workspace; seen[10] = (double)(long)stream;
    return rc;
}
int gemmprof_last_error(void) { int e = err; err = 0; return e; }
const char* gemmprof_error_string(int code) { return code == 700 ? "an illegal memory access" : "other"; }
"""
ARGS = ["A", "lda", "B", "ldb", "C", "ldc", "M", "N", "K", "alpha", "beta", 4, "0.5f", "workspace", "stream"]


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:  # CI's machines have gcc: there a missing compiler fails instead of skipping
        if os.environ.get("CI"):
            pytest.fail("a C compiler (cc or gcc) is required in CI to build the stand-in launcher library")
        pytest.skip("no C compiler")
    folder = tmp_path_factory.mktemp("lib")
    (folder / "stand_in.c").write_text(SOURCE)
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(folder / "libstandin.so"), str(folder / "stand_in.c")],
                   check=True)
    return folder / "libstandin.so"


def _call(library):
    a = abi.parse_abi("k.yaml", {"args": ARGS, "workspace": "M"}, launcher=True)
    layout = {"A": "col", "B": "row", "C": "col"}
    types, values = abi.ctypes_call(a, GemmShape(5, 7, 3), layout, 2.0, 0.25,
                                    {"A": 0x1000, "B": 0x2000, "C": 0x3000, "workspace": 0x4000, "stream": 0x50})
    Launcher(library, "my_gemm").call(types, values)


def test_the_call_passes_every_argument_in_the_order_args_gives(library):
    _call(library)
    lib = ctypes.CDLL(str(library))
    lib.seen_value.restype, lib.seen_pointer.restype = ctypes.c_double, ctypes.c_void_p
    assert [lib.seen_value(i) for i in range(11)] == [5, 7, 5, 5, 7, 3, 2.0, 0.25, 4, 0.5, 0x50]
    assert [lib.seen_pointer(i) for i in range(4)] == [0x1000, 0x2000, 0x3000, 0x4000]


def test_a_non_zero_return_or_a_cuda_error_fails_the_call(library):
    lib = ctypes.CDLL(str(library))
    lib.set_result(3, 0)
    with pytest.raises(LaunchFailed, match="my_gemm returned 3"):
        _call(library)
    lib.set_result(0, 700)
    with pytest.raises(LaunchFailed, match=r"CUDA error 700 \(an illegal memory access\)"):
        _call(library)
    lib.set_result(0, 0)
    _call(library)  # the shim cleared the error: the next call passes


def test_a_missing_symbol_names_what_the_library_exports(library):
    assert {"my_gemm", "set_result"} <= set(exported(library))
    assert missing_entry(library, "my_gemm") is None
    assert "did you mean my_gemm?" in missing_entry(library, "my_gem", SOURCE)
    with pytest.raises(LauncherError, match="no function 'my_gem'"):
        Launcher(library, "my_gem")


def test_a_library_that_does_not_load_is_one_error(tmp_path):
    bad = tmp_path / "libbroken.so"
    bad.write_bytes(b"\x7fELF not really")
    with pytest.raises(LauncherError, match="cannot load the launcher's library .*libbroken.so"):
        Launcher(bad, "my_gemm")


def test_profile_says_when_one_variant_launched_several_kernels():
    from types import SimpleNamespace

    from gemmprof.commands.profile import _multi_kernel_notes

    def launch(variant, kernel, in_range=True):
        return SimpleNamespace(variant=variant, kernel_name=kernel, nvtx_range="r" if in_range else None)

    findings = [launch("splitk_launcher", "splitk_partial(int, int, int, int, const float *, const float *, float *)"),
                launch("splitk_launcher", "splitk_reduce(int, int, int, float, const float *, float, float *)"),
                launch("naive", "sgemm_naive"), launch("naive", "sgemm_naive"), launch("x", "a", in_range=False),
                launch("x", "b", in_range=False)]
    notes = _multi_kernel_notes(findings)
    assert len(notes) == 1 and notes[0].startswith("splitk_launcher: 2 kernels under one variant "
                                                   "(splitk_partial, splitk_reduce)")


def test_compare_nsys_says_when_one_variant_launched_several_kernels():
    from types import SimpleNamespace

    from gemmprof.adapters.nsys.compare import several_kernels

    def row(variant, kernel):
        return SimpleNamespace(variant=variant, stats=SimpleNamespace(name=kernel))

    rows = [row("splitk_launcher", "splitk_partial(int, int, int, int, const float *, const float *, float *)"),
            row("splitk_launcher", "splitk_reduce(int, int, int, float, const float *, float, float *)"),
            row("naive", "sgemm_naive(int)"), row(None, "a(int)"), row(None, "b(int)")]
    notes = several_kernels("r.sqlite", rows)
    assert notes == ["r.sqlite: splitk_launcher: 2 kernels per call (splitk_partial, splitk_reduce), a row each; "
                     "each row's TFLOP/s is the whole GEMM's FLOPs over that kernel's time"]
