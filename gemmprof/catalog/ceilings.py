"""This GPU's measured ceilings, kept beside its GPU spec: what `gemmprof ceiling` measured, one JSON file per
device model in the data directory (catalog/paths.data_dir()/ceilings/DEVICE.json), read back as
results.ceilings.MeasuredCeiling. `measured(device_or_spec, key, regime)` is what the roofline, explain and the
report ask for: the real 100% line of a dtype (or of DRAM) on this device, in the regime their figures were taken.

{"kind": "gemmprof.ceilings", "version": 1, "device": "NVIDIA H200", "ceilings": [MeasuredCeiling.to_dict(), ...]}
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from gemmprof.errors import InputError
from gemmprof.results.ceilings import MeasuredCeiling
from gemmprof.results.files import load_json, write_atomic

STORE_KIND = "gemmprof.ceilings"
STORE_VERSION = 1
STORE_KEYS = ("kind", "version", "device", "ceilings")
# a GPU spec's peak kinds (and the dtypes run names) -> the key a ceiling is stored under
KEY_OF = {"fp32": "fp32", "tf32": "tf32", "fp16": "fp16", "bf16": "bf16", "dram": "dram",
          "tf32_tensor": "tf32", "fp16_tensor_fp32_acc": "fp16", "bf16_tensor_fp32_acc": "bf16",
          "dram_bandwidth": "dram"}
PEAK_KIND = {"fp32": "fp32", "tf32": "tf32_tensor", "fp16": "fp16_tensor_fp32_acc", "bf16": "bf16_tensor_fp32_acc"}


class CeilingStoreError(InputError):
    """A stored ceilings file is damaged (or not one); `kept_beside` names where `save` wrote instead."""

    kept_beside: Path | None = None


def store_dir(root=None) -> Path:
    from gemmprof.catalog.paths import data_dir

    return Path(root) if root is not None else data_dir() / "ceilings"


SLUG_MAX = 80  # characters of a device's file name before it is cut (file systems take 255 bytes)


def store_path(device: str, root=None) -> Path:
    """The device model's file: its CUDA name in lower case, runs of other characters as one '-'; a name longer than
    SLUG_MAX (a results file may name any device) is cut and ends with a hash of the whole name instead."""
    slug = re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-") or "device"
    if len(slug) > SLUG_MAX:
        slug = f"{slug[:SLUG_MAX - 13]}-{hashlib.sha256(device.encode()).hexdigest()[:12]}"
    return store_dir(root) / f"{slug}.json"


def _read(path: Path, device: str) -> list[MeasuredCeiling]:
    if not path.exists():
        return []
    move = "move it away or run `gemmprof ceiling` again"
    try:
        doc = load_json(path)
    except InputError as exc:
        raise CeilingStoreError(f"cannot read the stored ceilings: {exc}; {move}") from None
    if not isinstance(doc, dict) or doc.get("kind") != STORE_KIND:
        raise CeilingStoreError(f"{path}: not a gemmprof ceilings file; {move}")
    unknown = sorted(k for k in doc if k not in STORE_KEYS)
    if unknown:
        raise CeilingStoreError(f"{path}: unknown key {unknown[0]!r}; {move}")
    if doc.get("version") != STORE_VERSION:
        raise CeilingStoreError(f"{path}: version {doc.get('version')!r}, this gemmprof reads {STORE_VERSION}; {move}")
    if doc.get("device") != device:
        raise CeilingStoreError(f"{path}: holds the ceilings of {doc.get('device')!r}, not {device!r}; {move}")
    items = doc.get("ceilings")
    if not isinstance(items, list):
        raise CeilingStoreError(f"{path}: ceilings: expected a list; {move}")
    try:
        out = [MeasuredCeiling.from_dict(d, f"{path}: ceilings[{i}]") for i, d in enumerate(items)]
    except InputError as exc:
        raise CeilingStoreError(f"{exc}; {move}") from None
    seen = set()
    for c in out:
        if c.ident in seen:
            raise CeilingStoreError(f"{path}: {' '.join(c.ident)} is stored twice; {move}")
        seen.add(c.ident)
    return out


def load(device: str, root=None) -> list[MeasuredCeiling]:
    """Every ceiling stored for this device model ([] where none)."""
    return _read(store_path(device, root), device)


def save(ceilings: list[MeasuredCeiling], device: str, root=None) -> Path:
    """Store `ceilings` for `device`, replacing those of the same kind, key and regime and keeping the rest. Over a
    damaged file, the new ones are written beside it (NAME.new.json) and the error says so."""
    path = store_path(device, root)
    path.parent.mkdir(parents=True, exist_ok=True)  # gemmprof's own data directory
    try:
        kept = _read(path, device)
    except CeilingStoreError as exc:
        beside = path.with_name(f"{path.stem}.new{path.suffix}")
        write_atomic(beside, _text(ceilings, device))
        error = CeilingStoreError(f"{exc}; the new ceilings were written to {beside} (rename it to {path.name} to "
                                  "use them)")
        error.kept_beside = beside
        raise error from None
    new = {c.ident for c in ceilings}
    write_atomic(path, _text([c for c in kept if c.ident not in new] + list(ceilings), device))
    return path


def _text(ceilings: list[MeasuredCeiling], device: str) -> str:
    order = {"compute": 0, "memory": 1}
    ceilings = sorted(ceilings, key=lambda c: (order[c.kind], c.key, c.regime))
    doc = {"kind": STORE_KIND, "version": STORE_VERSION, "device": device, "ceilings": [c.to_dict() for c in ceilings]}
    return json.dumps(doc, indent=1) + "\n"


def devices_of(device_or_spec) -> list[str]:
    """The device names whose stores answer for a device name (itself) or a GPU spec (its CUDA names)."""
    if isinstance(device_or_spec, str):
        return [device_or_spec] if device_or_spec.strip() else []
    return list(getattr(device_or_spec, "cuda_names", ()) or ())


def stored(device_or_spec, root=None) -> list[MeasuredCeiling]:
    """Every ceiling stored for the device, or for the first of a GPU spec's CUDA names that has a store."""
    for device in devices_of(device_or_spec):
        found = load(device, root)
        if found:
            return found
    return []


def measured(device_or_spec, key: str, regime: str | None = "sustained", root=None) -> MeasuredCeiling | None:
    """This device's measured ceiling of `key` (a dtype: fp32, tf32, fp16, bf16; a GPU spec's peak kind; or dram)
    in `regime` (burst or sustained; None: sustained), or None where none is stored. A damaged store raises
    CeilingStoreError (one line)."""
    want = KEY_OF.get(key)
    if want is None:
        return None
    regime = regime or "sustained"
    return next((c for c in stored(device_or_spec, root) if (c.key, c.regime) == (want, regime)), None)


def datasheet(spec, ceiling: MeasuredCeiling) -> tuple[float | None, float | None]:
    """(the GPU spec's datasheet figure beside a measured ceiling, in its unit; the SM clock that figure assumes,
    None for bandwidth), (None, None) where the spec gives none."""
    if ceiling.kind == "memory":
        return spec.dram_bandwidth_gbs, None
    kind = PEAK_KIND[ceiling.key]
    if kind not in spec.peak_tflops:
        return None, None
    return spec.peak_tflops[kind], spec.peak_clock(kind)


def regime_of(timing_method: dict | None) -> str:
    """The timing regime a results file's figures were taken in: files from before regimes were named timed burst."""
    regime = (timing_method or {}).get("regime")
    return regime if regime in ("burst", "sustained") else "burst"
