"""Sectors, lines and bank conflicts of the accesses a spec describes (gemmprof.catalog.accesses), per warp request and per launch.

Global memory: a warp request touches the 32-byte sectors and 128-byte lines that hold the bytes its active lanes
access (CUDA C++ Programming Guide, "Device Memory Accesses" and the compute capability 6.x+ "Global Memory"
sections: accesses are served in 32-byte sectors); coalescing efficiency = distinct bytes / sector bytes.

Shared memory: 32 banks of 4 bytes; word w sits in bank w % 32 (Programming Guide, compute capability 5.x+
"Shared Memory"). Lanes reading the same word are served at once (broadcast), so a phase needs as many wavefronts
as the largest number of *distinct* words any one bank holds. A request is split into phases: all 32 lanes for
accesses of 4 bytes or less; half-warps (16 lanes) for 8- and 16-byte accesses; 8 lanes for ldmatrix (one 8x8
matrix, set with `phase: 8`). Ideal wavefronts of a phase = ceil(distinct bytes / 128); conflicts = wavefronts -
ideal, as ncu's l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld/st counts them.

16-byte loads (LDS.128) follow a rule NVIDIA does not document, fitted to the H100 ncu records (rungs 3, 5, 7, 8
and two warptiling configurations, benchmarks/2026-11-22_h100_profile and tests/fixtures/ncu): per half-warp, one
address read by every lane costs 1 wavefront; otherwise a word is broadcast only within a quarter-warp (8 lanes),
so a bank needs as many wavefronts as it has distinct (word, quarter) pairs, and the ideal count is at least the
number of quarters reading one word. Whole-warp broadcast: 2 (rung 3); lanes 4r..4r+3 reading float4 r: 2;
lane L reading float4 L % 4: 4 with no conflict (warptiling's Bs); lane L reading float4 L: 4 (the ideal).
The often-quoted quarter-warp rule predicts 4, 4, 4 and 4 for these; ncu counts 2, 2, 4 and 4.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

from gemmprof.catalog import expr
from gemmprof.catalog.accesses import Access, AccessBlock, lane_env
from gemmprof.errors import SpecError

SECTOR = 32
LINE = 128
BANKS = 32
BANK_BYTES = 4


@dataclass(frozen=True)
class GlobalRequest:
    sectors: int
    lines: int
    useful_bytes: int  # distinct bytes the active lanes access

    @property
    def efficiency(self) -> float:
        return self.useful_bytes / (self.sectors * SECTOR) if self.sectors else 1.0


@dataclass(frozen=True)
class SharedRequest:
    wavefronts: int
    ideal: int

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal

    @property
    def degree(self) -> float:
        """n-way: wavefronts over ideal wavefronts (0 for a request no lane takes part in)."""
        return self.wavefronts / self.ideal if self.ideal else 0.0


def global_request(addresses: list[int], width: int) -> GlobalRequest:
    """One warp request: byte addresses of the active lanes, each accessing `width` bytes."""
    useful, end = 0, None
    for lo in sorted(set(addresses)):  # the union of [a, a + width), interval by interval
        hi = lo + width
        useful += hi - max(lo, end) if end is not None and lo < end else width
        end = hi if end is None else max(end, hi)
    units = {(u, a // u + i) for a in set(addresses) for u in (SECTOR, LINE)
             for i in range((a + width - 1) // u - a // u + 1)}
    return GlobalRequest(sectors=sum(1 for u, _ in units if u == SECTOR), lines=sum(1 for u, _ in units if u == LINE),
                         useful_bytes=useful)


def phase_lanes(width: int, phase: int | None = None) -> int:
    if phase:
        return phase
    return 32 if width <= BANK_BYTES else 16


def _words(a: int, width: int) -> range:
    return range(a // BANK_BYTES, (a + width - 1) // BANK_BYTES + 1)


def _phase(lanes: list[tuple[int, int]], width: int, quarters: bool, banks: int = BANKS) -> tuple[int, int]:
    """(wavefronts, ideal) of one phase; `lanes` holds (lane, byte address) of its active lanes."""
    words = {w for _, a in lanes for w in _words(a, width)}
    ideal = -(-len(words) * BANK_BYTES // LINE)
    if quarters and len({a for _, a in lanes}) > 1:
        pairs = {(w, lane // 8) for lane, a in lanes for w in _words(a, width)}
        readers: dict[int, int] = {}
        for w, _ in pairs:
            readers[w] = readers.get(w, 0) + 1
        ideal = max(ideal, max(readers.values()))
    else:
        pairs = {(w, 0) for w in words}
    per_bank: dict[int, int] = {}
    for w, _ in pairs:
        per_bank[w % banks] = per_bank.get(w % banks, 0) + 1
    return max(per_bank.values()), ideal


def shared_request(addresses: list[int | None], width: int, phase: int | None = None,
                   op: str = "load", banks: int = BANKS) -> SharedRequest:
    """One warp request: byte address per lane (None for an inactive lane), each accessing `width` bytes.

    A request no lane takes part in (a predicated-off instruction) costs no wavefront."""
    lanes = phase_lanes(width, phase)
    quarters = width == 16 and op == "load" and phase is None
    wavefronts = ideal = 0
    for start in range(0, len(addresses), lanes):
        active = [(lane, a) for lane, a in enumerate(addresses[start:start + lanes], start) if a is not None]
        if active:
            w, i = _phase(active, width, quarters, banks)
            wavefronts, ideal = wavefronts + w, ideal + i
    if not any(a is not None for a in addresses):
        return SharedRequest(0, 0)
    return SharedRequest(max(wavefronts, 1), max(ideal, 1))


@dataclass(frozen=True)
class AccessResult:
    """One access of one rung at one shape: averages per warp request, totals per launch."""

    access: Access
    requests_per_launch: int
    sectors_per_request: float  # global only (0 for shared)
    lines_per_request: float
    efficiency: float  # global: useful bytes / sector bytes
    wavefronts_per_request: float  # shared only (0 for global)
    ideal_per_request: float
    sectors: int  # per launch
    wavefronts: int
    ideal_wavefronts: int

    @property
    def conflicts_per_request(self) -> float:
        return self.wavefronts_per_request - self.ideal_per_request

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal_wavefronts

    @property
    def degree(self) -> float:
        return self.wavefronts_per_request / self.ideal_per_request if self.ideal_per_request else 0.0


def _loop_values(loops, env):
    axes = []
    for var, rng in loops:
        if isinstance(rng, tuple):
            axes.append([(var, int(expr.evaluate(v, env))) for v in rng])
        else:
            axes.append([(var, v) for v in range(int(expr.evaluate(rng, env)))])
    return [dict(combo) for combo in itertools.product(*axes)]


def _relative(addresses: list[int | None]) -> tuple[int | None, ...]:
    on = [a for a in addresses if a is not None]
    base = min(on) // LINE * LINE if on else 0
    return tuple(a - base if a is not None else None for a in addresses)


@functools.lru_cache(maxsize=65536)
def _global_cached(addresses: tuple[int, ...], width: int) -> GlobalRequest:
    return global_request(list(addresses), width)


@functools.lru_cache(maxsize=65536)
def _shared_cached(addresses: tuple[int | None, ...], width, phase, op, banks) -> SharedRequest:
    return shared_request(list(addresses), width, phase, op, banks)


def _warp_addresses(acc: Access, env: dict, block, warp: int, threads: int, inners: list[dict]):
    """Byte address per lane (None: inactive) of one warp, one list per inner-loop value: numpy over lanes and
    loop values where the expressions allow it (expr.evaluate_array), lane by lane otherwise."""
    import numpy as np

    lanes = [lane_env(block, warp, lane) for lane in range(32)]
    active = np.array([warp * 32 + lane < threads for lane in range(32)])
    shape = (len(inners), 32)
    arrays = {**env, **{k: np.array([le[k] for le in lanes])[None, :] for k in lanes[0]},
              **{k: np.array([c[k] for c in inners])[:, None] for k in (inners[0] if inners else {})}}
    try:
        index = np.broadcast_to(expr.evaluate_array(acc.index, arrays), shape)
        on = active[None, :] & (np.broadcast_to(expr.evaluate_array(acc.when, arrays), shape).astype(bool)
                                if acc.when is not None else True)
        if not np.issubdtype(index.dtype, np.integer):
            raise expr.NotVectorizable(acc.index)
        return [[int(a) * acc.elem if o else None for a, o in zip(row, ons, strict=True)]
                for row, ons in zip(index.tolist(), np.broadcast_to(on, shape).tolist(), strict=True)]
    except expr.NotVectorizable:
        pass
    out = []
    for inner in inners:
        addresses = []
        for lane, le in enumerate(lanes):
            le = {**env, **le, **inner}
            on = active[lane] and (acc.when is None or expr.evaluate(acc.when, le))
            addresses.append(int(expr.evaluate(acc.index, le)) * acc.elem if on else None)
        out.append(addresses)
    return out


def analyse_access(acc: Access, env: dict, block: tuple[int, int, int], blocks: int, trips: int,
                   banks: int = BANKS) -> AccessResult:
    """Evaluate `acc` for every warp of block (0, 0, 0), every inner-loop value, at the main loop's first trip."""
    threads = block[0] * block[1] * block[2]
    warps = -(-threads // 32)
    count = int(expr.evaluate(acc.count, env))
    reqs = sectors = lines = useful = wavefronts = ideal = 0
    inners = _loop_values(acc.loops, env)
    for warp in range(warps):
        for addresses in _warp_addresses(acc, env, block, warp, threads, inners):
            if not acc.predicated and all(a is None for a in addresses):
                continue  # a warp-uniform branch: the warp does not issue the instruction
            reqs += 1
            key = _relative(addresses)  # shifting every address by whole 128-byte lines changes nothing
            if acc.space == "global":
                g = _global_cached(tuple(a for a in key if a is not None), acc.bytes)
                sectors, lines, useful = sectors + g.sectors, lines + g.lines, useful + g.useful_bytes
            else:
                s = _shared_cached(key, acc.bytes, acc.phase, acc.op, banks)
                wavefronts, ideal = wavefronts + s.wavefronts, ideal + s.ideal
    if reqs == 0:
        raise SpecError(f"access {acc.name!r}: no requests (an inner loop with no values, or no lane ever on?)")
    scale = blocks * count * (trips if acc.per == "iteration" else 1)
    return AccessResult(
        access=acc, requests_per_launch=reqs * scale, sectors_per_request=sectors / reqs,
        lines_per_request=lines / reqs, efficiency=useful / (sectors * SECTOR) if sectors else 1.0,
        wavefronts_per_request=wavefronts / reqs, ideal_per_request=ideal / reqs, sectors=sectors * scale,
        wavefronts=wavefronts * scale, ideal_wavefronts=ideal * scale)


@dataclass(frozen=True)
class LaunchAccesses:
    """Every described access of one launch, with the totals ncu reports."""

    results: tuple[AccessResult, ...]

    def _sum(self, space, op, field, ldmatrix=True):
        return sum(getattr(r, field) for r in self.results
                   if r.access.space == space and (op is None or r.access.op == op)
                   and (ldmatrix or not r.access.ldmatrix))

    def requests(self, space: str, op: str | None = None, ldmatrix: bool = True) -> int:
        """Warp requests; ldmatrix=False leaves LDSM out, as ncu's smsp__inst_executed_op_shared_ld does."""
        return self._sum(space, op, "requests_per_launch", ldmatrix)

    def sectors(self, op: str | None = None) -> int:
        return self._sum("global", op, "sectors")

    def wavefronts(self, op: str | None = None) -> int:
        return self._sum("shared", op, "wavefronts")

    def conflicts(self, op: str | None = None) -> int:
        return self.wavefronts(op) - self._sum("shared", op, "ideal_wavefronts")

    def per_request(self, what: str, op: str) -> float | None:
        """'wavefronts', 'conflicts' (shared) or 'sectors' (global) per request of loads or stores."""
        space = "global" if what == "sectors" else "shared"
        n = self.requests(space, op)
        return getattr(self, what)(op) / n if n else None

    @property
    def sector_bytes(self) -> tuple[int, int]:
        """Bytes of the sectors global loads and stores touch: traffic at L1 with every sector counted."""
        return self.sectors("load") * SECTOR, self.sectors("store") * SECTOR


def analyse(block_desc: AccessBlock, env: dict, grid: tuple[int, int, int],
            block: tuple[int, int, int], banks: int = BANKS) -> LaunchAccesses:
    """`env`: parameters, derived names and M, N, K. The main-loop variable takes its first value."""
    env = dict(env)
    trips = int(expr.evaluate(block_desc.trips, env))
    env[block_desc.loop_var] = int(expr.evaluate(block_desc.loop_start, env))
    blocks = grid[0] * grid[1] * grid[2]
    return LaunchAccesses(tuple(analyse_access(a, env, block, blocks, trips, banks) for a in block_desc.accesses))
