"""Fetch fast.cu's kernel 12 (the header examples/public_fastcu12 launches) at its pinned commit, hash-checked.

    python3 scripts/fetch_public_kernel.py                # download it from GitHub
    python3 scripts/fetch_public_kernel.py --from CLONE   # read it from your clone of pranjalssh/fast.cu
    python3 scripts/fetch_public_kernel.py --dest DIR     # put it under DIR instead of gemmprof's cache

The file is `examples/matmul/matmul_12.cuh` of https://github.com/pranjalssh/fast.cu at commit COMMIT below, and
must be git blob BLOB (what `git hash-object` prints for it): anything else is refused and nothing is written.
It lands in CACHE/public/fastcu/COMMIT/, where CACHE is --dest, else $GEMMPROF_CACHE, else ~/.cache/gemmprof:
the folder the example's spec names as `${GEMMPROF_CACHE}/public/fastcu/COMMIT` in include_dirs (so with
--dest DIR, run gemmprof with GEMMPROF_CACHE=DIR). The folder is printed last. The file is fast.cu's, under its
own licence (MIT); gemmprof's tree holds only the launcher and spec around it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

REPO = "pranjalssh/fast.cu"
COMMIT = "38eb642e0c081231d6f695978be63604bd7c689b"
PATH = "examples/matmul/matmul_12.cuh"
BLOB = "c7766a7b989d153b5cf8d269444fd97b1286ce16"
URL = f"https://raw.githubusercontent.com/{REPO}/{COMMIT}/{PATH}"
NAME = PATH.rsplit("/", 1)[-1]


class FetchError(Exception):
    """One line for the user: what failed and where."""


def git_blob(data: bytes) -> str:
    """The git blob hash of `data` (sha1 of "blob LEN\\0" + data): what `git hash-object` prints."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def cache_root() -> Path:
    """gemmprof's cache folder: $GEMMPROF_CACHE, else ~/.cache/gemmprof (gemmprof.catalog.paths.cache_root)."""
    return Path(os.environ.get("GEMMPROF_CACHE") or Path.home() / ".cache" / "gemmprof")


def folder(root: Path) -> Path:
    return root / "public" / "fastcu" / COMMIT


def download(url: str = URL, timeout: float = 60) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 (a fixed https URL)
            return response.read(4 << 20)
    except (urllib.error.URLError, OSError) as exc:
        raise FetchError(f"cannot download {url}: {getattr(exc, 'reason', exc)} (no network? clone {REPO} "
                         "elsewhere and pass --from CLONE)") from None


def from_clone(clone: Path) -> tuple[bytes, str]:
    """The pinned commit's file from a clone (any checkout, bare or not), else the file in its work tree."""
    if not clone.is_dir():
        raise FetchError(f"--from: {clone} is not a folder")
    try:
        done = subprocess.run(["git", "-C", str(clone), "show", f"{COMMIT}:{PATH}"], capture_output=True,
                              timeout=60)
        if done.returncode == 0:
            return done.stdout, f"{clone} (git show {COMMIT[:7]}:{PATH})"
    except (OSError, subprocess.TimeoutExpired):
        pass  # no git: the work tree's file, checked by its hash like any other
    for candidate in (clone / PATH, clone / NAME):
        if candidate.is_file():
            return candidate.read_bytes(), str(candidate)
    raise FetchError(f"--from: {clone} has neither commit {COMMIT[:7]} (git) nor {PATH}")


def fetch(dest_root: Path, clone: Path | None = None, get=download) -> Path:
    """Put the checked header in folder(dest_root) and return that folder. A file already there with the right
    hash is kept as it is (nothing is downloaded)."""
    where = folder(dest_root)
    target = where / NAME
    if target.is_file() and git_blob(target.read_bytes()) == BLOB:
        return where
    data, source = from_clone(clone) if clone is not None else (get(), URL)
    got = git_blob(data)
    if got != BLOB:
        raise FetchError(f"{source}: git blob {got}, expected {BLOB} ({REPO} {COMMIT[:7]}:{PATH}); "
                         "refused, nothing written")
    try:
        where.mkdir(parents=True, exist_ok=True)
        part = target.with_name(NAME + ".part")
        part.write_bytes(data)
        os.replace(part, target)
    except OSError as exc:
        raise FetchError(f"cannot write {target}: {exc.strerror or exc}") from None
    return where


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--from", dest="clone", type=Path, metavar="CLONE",
                        help=f"a clone of {REPO} (its commit {COMMIT[:7]} is read with git show; without git, "
                             f"its {PATH})")
    parser.add_argument("--dest", type=Path, metavar="DIR",
                        help="the cache root to write under (default: $GEMMPROF_CACHE, else ~/.cache/gemmprof)")
    args = parser.parse_args(argv)
    try:
        where = fetch(args.dest if args.dest is not None else cache_root(), args.clone)
    except FetchError as exc:
        print(f"fetch_public_kernel: {exc}", file=sys.stderr)
        return 1
    if args.dest is not None:
        print(f"run gemmprof with GEMMPROF_CACHE={args.dest.resolve()} to use it", file=sys.stderr)
    print(where.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
