"""GPU peak specs from profiles/*.yaml: loading, validation (file, key, problem) and lookup by name."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from gemmprof.catalog.paths import PROFILES_DIR
from gemmprof.catalog.spec_fields import check_keys
from gemmprof.catalog.yamlfile import parse_mapping
from gemmprof.errors import GpuSpecError

# every key of a GPU spec sheet (docs/gpu-spec-format.md), and of its fixed mappings; anything else is refused
GPU_SPEC_KEYS = ("name", "aliases", "cuda_names", "architecture", "compute_capability", "sm_count", "boost_clock_mhz",
                 "memory", "peak_tflops", "dram_bandwidth_gbs", "l2", "smem_bandwidth_gbs", "sm_limits", "measured",
                 "references")
SM_LIMIT_KEYS = (
    "registers", "max_registers_per_thread", "max_registers_per_block", "register_allocation_unit",
    "warp_allocation_granularity", "max_threads", "max_warps", "max_blocks", "max_threads_per_block",
    "shared_memory_kib", "shared_memory_per_block_kib", "shared_memory_per_block_optin_kib",
    "shared_memory_carveouts_kib", "reserved_shared_memory_per_block_kib", "shared_memory_allocation_unit",
)

GPU_SPEC_NESTED = {"memory": ("type", "size_gb"), "l2": ("size_mib", "bandwidth_gbs"), "sm_limits": SM_LIMIT_KEYS}


@dataclass(frozen=True)
class SmLimits:
    registers: int
    max_registers_per_thread: int
    max_registers_per_block: int
    register_allocation_unit: int
    warp_allocation_granularity: int
    max_threads: int
    max_warps: int
    max_blocks: int
    max_threads_per_block: int
    shared_memory_kib: float
    shared_memory_per_block_kib: float
    shared_memory_per_block_optin_kib: float
    shared_memory_carveouts_kib: tuple[float, ...]
    reserved_shared_memory_per_block_kib: float
    shared_memory_allocation_unit: int


@dataclass(frozen=True)
class GpuSpec:
    key: str  # file stem
    name: str
    aliases: tuple[str, ...]
    cuda_names: tuple[str, ...]
    architecture: str
    compute_capability: str
    sm_count: int
    boost_clock_mhz: float
    memory_size_gb: float | None
    peak_tflops: dict[str, float]
    dram_bandwidth_gbs: float
    l2_size_mib: float
    l2_bandwidth_gbs: float | None
    smem_bandwidth_gbs: float | None
    sm_limits: SmLimits
    measured: dict[str, float]
    sources: dict[str, str]  # dotted key -> reference key
    references: dict[str, str]
    path: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    # the SM clock each datasheet peak assumes (peak_tflops.KIND.clock_mhz); absent: the boost clock
    peak_clock_mhz: dict[str, float] = field(default_factory=dict)

    def peak_flops(self, kind: str) -> float:
        """Datasheet peak in FLOP/s for a kind (fp32, tf32_tensor, fp16_tensor_fp32_acc, ...)."""
        if kind not in self.peak_tflops:
            raise GpuSpecError(f"{self.path}: peak_tflops.{kind}: not given for {self.name}")
        return self.peak_tflops[kind] * 1e12

    def peak_clock(self, kind: str) -> float:
        """The SM clock (MHz) the datasheet's peak of `kind` is computed at."""
        return self.peak_clock_mhz.get(kind, self.boost_clock_mhz)

    def peak_flops_at(self, kind: str, clock_mhz: float) -> float:
        """The datasheet's peak scaled to an SM clock: a GEMM's rate is proportional to the clock it holds."""
        return self.peak_flops(kind) * clock_mhz / self.peak_clock(kind)

    @property
    def dram_bandwidth(self) -> float:
        """Datasheet DRAM bandwidth in bytes/s."""
        return self.dram_bandwidth_gbs * 1e9

    def citation(self, dotted_key: str) -> str:
        ref = self.sources.get(dotted_key)
        return self.references.get(ref, "") if ref else ""

    def matches(self, name: str) -> bool:
        n = name.strip().lower()
        return n in {self.key.lower(), self.name.lower(), *(a.lower() for a in self.aliases)}


class _Loader:
    """Walks a GPU spec document, turning {value, source} figures into numbers and recording sources."""

    def __init__(self, path: Path, doc: dict):
        self.path, self.doc = path, doc
        self.sources: dict[str, str] = {}
        refs = doc.get("references")
        if not isinstance(refs, dict) or not refs:
            self.fail("references", "missing: every figure must cite a reference")
        self.references = {str(k): str(v) for k, v in refs.items()}

    def fail(self, key: str, problem: str):
        raise GpuSpecError(f"{self.path}: {key}: {problem}")

    def known(self, key: str, node, keys) -> None:
        """Refuse a key the format does not have (`l2: {size_mb: ...}`, a typo of a newer sheet), naming it."""
        if isinstance(node, dict):
            check_keys(self.path, key, node, keys, GpuSpecError)

    def node(self, key: str, required=True):
        cur: Any = self.doc
        for part in key.split("."):
            if not isinstance(cur, dict) or part not in cur:
                if required:
                    self.fail(key, "missing")
                return None
            cur = cur[part]
        return cur

    def figure(self, key: str, required=True, kind=float, positive=True):
        node = self.node(key, required)
        if node is None:
            if required:  # present but null (`fp32:` with nothing after it)
                self.fail(key, "expected a mapping {value: ..., source: REFERENCE}, got nothing")
            return None
        if not isinstance(node, dict) or "value" not in node or "source" not in node:
            self.fail(key, "expected a mapping {value: ..., source: REFERENCE}")
        self.known(key, node, ("value", "source", "clock_mhz") if key.startswith("peak_tflops.") else
                   ("value", "source"))
        src = str(node["source"])
        if src not in self.references:
            self.fail(f"{key}.source", f"{src!r} is not defined under references")
        self.sources[key] = src
        value = node["value"]
        if kind is list:
            if not isinstance(value, list) or not value:
                self.fail(f"{key}.value", "expected a non-empty list of numbers")
            for v in value:
                self._number(f"{key}.value", v, float, positive=False)
            return tuple(float(v) for v in value)
        return self._number(f"{key}.value", value, kind, positive)

    def _number(self, key, value, kind, positive):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(key, f"expected a number, got {value!r}")
        if not (abs(value) < 1e30 and math.isfinite(value)):  # .nan, .inf and 400-digit values are typos
            self.fail(key, f"expected a finite number of sane size, got {str(value)[:40]}")
        if kind is int and (not float(value).is_integer()):
            self.fail(key, f"expected a whole number, got {value!r}")
        if positive and value <= 0:
            self.fail(key, f"must be positive, got {value!r}")
        if value < 0:
            self.fail(key, f"must not be negative, got {value!r}")
        return kind(value)

    def text(self, key: str, required=True) -> str:
        node = self.node(key, required)
        if node is None:
            return ""
        if not isinstance(node, (str, int, float)):
            self.fail(key, "expected text")
        return str(node)

    def strings(self, key: str) -> tuple[str, ...]:
        node = self.node(key, required=False)
        if node is None:
            return ()
        if not isinstance(node, list) or not all(isinstance(x, str) for x in node):
            self.fail(key, "expected a list of strings")
        return tuple(node)


def parse_gpu_spec(path: Path, text: str) -> GpuSpec:
    doc = parse_mapping(path, text, GpuSpecError)
    ld = _Loader(path, doc)
    ld.known("", doc, GPU_SPEC_KEYS)
    for key, keys in GPU_SPEC_NESTED.items():
        ld.known(key, doc.get(key), keys)
    peaks_node = ld.node("peak_tflops")
    if not isinstance(peaks_node, dict) or "fp32" not in peaks_node:
        ld.fail("peak_tflops.fp32", "missing")
    peaks = {k: ld.figure(f"peak_tflops.{k}") for k in peaks_node}
    peak_clocks = {}
    for k, node in peaks_node.items():
        if isinstance(node, dict) and "clock_mhz" in node:
            peak_clocks[k] = ld._number(f"peak_tflops.{k}.clock_mhz", node["clock_mhz"], float, True)
    limits = {}
    for k in SM_LIMIT_KEYS:
        if k == "shared_memory_carveouts_kib":
            limits[k] = ld.figure(f"sm_limits.{k}", kind=list)
        elif k.endswith("_kib"):
            limits[k] = ld.figure(f"sm_limits.{k}", positive=k != "reserved_shared_memory_per_block_kib")
        else:
            limits[k] = ld.figure(f"sm_limits.{k}", kind=int)
    measured_node = ld.node("measured", required=False)
    measured_node = {} if measured_node is None else measured_node
    if not isinstance(measured_node, dict):
        ld.fail("measured", "expected a mapping")
    measured = {k: ld.figure(f"measured.{k}") for k in measured_node}  # `fp32_tflops: 51` without its source: refused
    cc = ld.text("compute_capability")
    return GpuSpec(
        key=path.stem, name=ld.text("name"), aliases=ld.strings("aliases"), cuda_names=ld.strings("cuda_names"),
        architecture=ld.text("architecture", required=False), compute_capability=cc,
        sm_count=ld.figure("sm_count", kind=int), boost_clock_mhz=ld.figure("boost_clock_mhz"),
        memory_size_gb=ld.figure("memory.size_gb", required=False),
        peak_tflops=peaks, dram_bandwidth_gbs=ld.figure("dram_bandwidth_gbs"),
        l2_size_mib=ld.figure("l2.size_mib"), l2_bandwidth_gbs=ld.figure("l2.bandwidth_gbs", required=False),
        smem_bandwidth_gbs=ld.figure("smem_bandwidth_gbs", required=False),
        sm_limits=SmLimits(**limits), measured=measured, sources=ld.sources, references=ld.references,
        path=str(path), peak_clock_mhz=peak_clocks,
    )


def load_gpu_file(path) -> GpuSpec:
    from gemmprof.errors import InputError
    from gemmprof.results.files import read_text

    path = Path(path)
    try:
        text = read_text(path, "GPU spec .yaml", limit=4 << 20, strict=True)
    except InputError as exc:
        raise GpuSpecError(f"--gpu-file: {exc}") from None
    return parse_gpu_spec(path, text)


@lru_cache(maxsize=1)
def all_gpus() -> tuple[GpuSpec, ...]:
    if not PROFILES_DIR.is_dir():
        raise GpuSpecError(f"no profiles directory at {PROFILES_DIR} (set GEMMPROF_HOME to the gemmprof checkout)")
    return tuple(load_gpu_file(p) for p in sorted(PROFILES_DIR.glob("*.yaml")))


def get_gpu(name: str) -> GpuSpec:
    for gpu in all_gpus():
        if gpu.matches(name):
            return gpu
    known = ", ".join(p.key for p in all_gpus())
    raise GpuSpecError(f"--gpu: unknown GPU {name!r} (known: {known}; or pass --gpu-file FILE.yaml)")


def gpu_for_device_name(device_name: str) -> GpuSpec | None:
    for gpu in all_gpus():
        if device_name in gpu.cuda_names:
            return gpu
    return None
