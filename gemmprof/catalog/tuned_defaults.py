"""Tuned defaults: `gemmprof tune --keep` writes the winner for this device; run, profile and roofline read it.

One JSON file, `tuned_defaults.json` in the cache directory:
{"kind": "gemmprof.tuned-defaults", "version": 1,
 "devices": {DEVICE NAME: {KERNEL NAME: {"params": {...}, "shape": "MxNxK", "dtype", "tflops", "source_hash",
                                         "strategy", "cache_file", "kept"}}}}
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from gemmprof.errors import InputError
from gemmprof.results.fields import Fields
from gemmprof.results.files import check_schema, load_json, write_atomic

DEFAULTS_FILE = "tuned_defaults.json"
DEFAULTS_KIND = "gemmprof.tuned-defaults"


@dataclass(frozen=True)
class TunedDefaults:
    device: str
    kernel: str
    params: dict[str, int]
    shape: str
    dtype: str
    tflops: float | None
    source_hash: str
    strategy: str = ""
    cache_file: str = ""
    kept: str = ""

    def is_current(self, source_hash: str) -> bool:
        """False when the kernel's source changed since the sweep: the kept parameters may no longer be best."""
        return self.source_hash == source_hash

    def describe(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"tuned defaults for {self.device} ({self.shape}, kept {self.kept}): {shown}"


def defaults_path(cache_dir) -> Path:
    return Path(cache_dir) / DEFAULTS_FILE


class DefaultsFileError(InputError):
    """tuned_defaults.json is damaged; `kept_beside` names where keep_winner wrote the winner instead."""

    kept_beside: Path | None = None


def _read(path: Path) -> dict:
    if not path.exists():
        return {"kind": DEFAULTS_KIND, "version": 1, "devices": {}}
    try:
        doc = load_json(path)
    except InputError as exc:
        raise DefaultsFileError(f"cannot read the tuned defaults: {exc}; move the file away") from None
    devices = doc.get("devices") if isinstance(doc, dict) else None
    if not isinstance(doc, dict) or doc.get("kind") != DEFAULTS_KIND or not isinstance(devices, dict) or not all(
            isinstance(d, dict) and all(isinstance(e, dict) for e in d.values()) for d in devices.values()):
        raise DefaultsFileError(f"{path}: not a gemmprof tuned-defaults file (or a damaged one); move the file away")
    try:
        check_schema(doc, str(path), 1, key="version")
    except InputError as exc:
        raise DefaultsFileError(f"{exc}; or move the file away") from None
    return doc


def keep_winner(cache_dir, result, source_hash: str) -> TunedDefaults:
    """Record `result`'s winner as this device's tuned defaults for its kernel (replacing an older entry)."""
    params = result.winner_params
    if params is None:
        raise InputError("--keep: no configuration was timed, nothing to keep")
    tflops = result.verdict.winner.tflops if result.verdict and result.verdict.contenders else result.best.tflops
    shape = f"{result.shape['M']}x{result.shape['N']}x{result.shape['K']}"
    entry = TunedDefaults(result.device, result.kernel, params, shape, result.dtype, tflops, source_hash,
                          result.strategy, result.cache_file,
                          _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    path = defaults_path(cache_dir)
    record = {k: v for k, v in asdict(entry).items() if k not in ("device", "kernel")}
    try:
        doc = _read(path)
    except DefaultsFileError as exc:  # the sweep's winner is still worth keeping: write it beside the damaged file
        beside = path.with_name(f"{path.stem}.new{path.suffix}")
        fresh = {"kind": DEFAULTS_KIND, "version": 1, "devices": {result.device: {result.kernel: record}}}
        write_atomic(beside, json.dumps(fresh, indent=1, sort_keys=True) + "\n")
        error = DefaultsFileError(f"{exc}; this winner was written to {beside} (rename it to {path.name} to use it)")
        error.kept_beside = beside
        raise error from None
    doc["devices"].setdefault(result.device, {})[result.kernel] = record
    write_atomic(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return entry


def load_tuned_defaults(cache_dir, device: str, kernel: str) -> TunedDefaults | None:
    """The kept winner for `kernel` on `device`, or None. Callers should check `is_current(source_hash(spec))`
    and say when they use (or skip) tuned defaults."""
    doc = _read(defaults_path(cache_dir))
    entry = doc.get("devices", {}).get(device, {}).get(kernel)
    if entry is None:
        return None
    f = Fields(entry, f"{defaults_path(cache_dir)}: devices.{device}.{kernel}")
    return TunedDefaults(device=device, kernel=kernel, params=f.ints("params"), shape=f.name("shape"),
                         dtype=f.name("dtype"), tflops=f.num("tflops"), source_hash=f.name("source_hash"),
                         strategy=f.str("strategy", "") or "", cache_file=f.str("cache_file", "") or "",
                         kept=f.str("kept", "") or "")
