"""Draw the README's roofline from the H100 records at 4096, and check a drawn picture against them.

    python3 scripts/readme_roofline.py                  # draws docs/roofline_h100_4096.png
    python3 scripts/readme_roofline.py --check          # the picture's variants are the records' (CI runs this)

The picture merges three runs (a later file's row wins): the ladder record (its tensor-core rungs h1-h3 and cuBLAS
HGEMM), the shape sweep's run of h4-h13 at 4096, and the main job (`gemmprof run --all --dtype fp32 --size 4096`,
rungs 1-16 and cuBLAS SGEMM and TF32), with Nsight Compute's DRAM and L2 intensities from the access record's
profile of the fp32 rungs 1-14. The PNG keeps the list of variants it drew (a text chunk, `gemmprof-variants`),
so `--check` needs no pixels: it compares that list with the verified rows of the records.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# byte-for-byte copies of the records' files (tests/fixtures/records/PROVENANCE.md names each one's place in its
# record under benchmarks/): records may be trimmed, the picture's inputs stay
R = ROOT / "tests" / "fixtures" / "records"
RUNS = (R / "2026-11-23_h100_ladder" / "ladder_4096.json.gz",
        R / "2026-11-25_h100_sweep_confirmed" / "run_4096x4096x4096.json.gz",
        R / "2026-11-25_h100_startup" / "main_warm.json.gz")
PROFILE = R / "2026-11-23_h100_access" / "profile_fp32_4096.json.gz"
PICTURE = ROOT / "docs" / "roofline_h100_4096.png"
KEY = "gemmprof-variants"


def records_variants(runs=RUNS) -> list[str]:
    """What the picture must show: every verified, timed row of the runs, by dtype and name, once."""
    sys.path.insert(0, str(ROOT))
    from gemmprof.results.run import load_run

    seen = {}
    for path in runs:
        for v in load_run(path).variants:
            if v.passed and v.timing and v.achieved_flops:
                seen[f"{v.dtype} {v.name}"] = True
    return sorted(seen)


def draw(out: Path, runs=RUNS, profile=PROFILE, dpi: int = 150) -> list[str]:
    """The roofline of `runs` (+ `profile`) into `out`, its variants kept in the PNG; returns them."""
    sys.path.insert(0, str(ROOT))
    from gemmprof.catalog.gpu_specs import get_gpu
    from gemmprof.model import roofline_sources as sources
    from gemmprof.render.roofline_plot import figure
    from gemmprof.results.files import write_with
    from gemmprof.results.profile import ProfileResults
    from gemmprof.results.run import load_run

    loaded = [(str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else str(p), load_run(p)) for p in runs]
    prof = sources.ProfileInput(ProfileResults.load(profile), str(profile)) if profile else None
    data = sources.from_results(loaded, prof, sources.RooflineChoice(), get_gpu, None)
    drawn = sorted({f"{r.dtype} {r.name}" for r in data.rungs})
    fig = figure(data, dpi)
    meta = {KEY: json.dumps(drawn), "Software": "gemmprof scripts/readme_roofline.py"}
    write_with(out, lambda fh: fig.savefig(fh, format="png", dpi=dpi, bbox_inches="tight", pad_inches=0.15,
                                           metadata=meta))
    return drawn


def picture_variants(path: Path) -> list[str]:
    from PIL import Image

    with Image.open(path) as image:
        text = image.text.get(KEY) if hasattr(image, "text") else None
    if text is None:
        raise SystemExit(f"{path}: no {KEY} chunk: draw it with scripts/readme_roofline.py")
    return json.loads(text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="usage examples: see the top of scripts/readme_roofline.py")
    parser.add_argument("-o", "--output", type=Path, default=PICTURE, help=f"the PNG (default {PICTURE.name})")
    parser.add_argument("--check", action="store_true",
                        help="draw nothing: say whether the picture's variants are the records' (exit 1 if not)")
    args = parser.parse_args(argv)
    missing = [str(p) for p in (*RUNS, PROFILE) if not p.is_file()]
    if missing:
        print(f"readme_roofline: missing records: {', '.join(missing)}", file=sys.stderr)
        return 2
    want = records_variants()
    if args.check:
        got = picture_variants(args.output)
        if got != want:
            print(f"{args.output}: drawn {len(got)} variants, the records hold {len(want)}; only drawn: "
                  f"{sorted(set(got) - set(want))}; only in the records: {sorted(set(want) - set(got))}. "
                  "Draw it again: python3 scripts/readme_roofline.py", file=sys.stderr)
            return 1
        print(f"{args.output}: its {len(got)} variants are the records'")
        return 0
    drawn = draw(args.output)
    print(f"{args.output}: {len(drawn)} variants drawn from {len(RUNS)} runs and {PROFILE.name}")
    return 0 if drawn == want else 1


if __name__ == "__main__":
    sys.exit(main())
