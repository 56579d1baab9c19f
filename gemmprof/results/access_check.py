"""The access model's prediction beside ncu for one profiled launch (gemmprof.model.access_explain.compare), typed.

Quantities, as ncu defines them: smem_{ld,st}_wavefronts_per_request and smem_{ld,st}_conflicts_per_request
(l1tex__data_pipe_lsu_wavefronts / l1tex__data_bank_conflicts ..._mem_shared_op_ld/st over
smsp__inst_executed_op_shared_ld/st) and gmem_sectors (l1tex__t_bytes / 32). `check` is "ok" (within 10%),
"explained" (outside, with the rung's note saying why) or "DIFFERS".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gemmprof.errors import InputError
from gemmprof.results import cells

CHECKS = ("ok", "explained", "DIFFERS")


@dataclass(frozen=True)
class AccessComparison:
    quantity: str
    predicted: float
    ncu: float
    check: str  # one of CHECKS
    why: str | None = None  # the rung's note, when explained

    def to_dict(self) -> dict:
        return {"quantity": self.quantity, "predicted": self.predicted, "ncu": self.ncu, "check": self.check,
                "why": self.why}

    @classmethod
    def from_dict(cls, d, where: str = "comparison") -> AccessComparison:
        if not isinstance(d, dict):
            raise InputError(f"{where}: expected a mapping")
        try:
            predicted, ncu = cells.real(d.get("predicted")), cells.real(d.get("ncu"))
        except cells.CellError:
            raise InputError(f"{where}: predicted and ncu must be finite numbers") from None
        check = d.get("check")
        if check not in CHECKS or not isinstance(d.get("quantity"), str):
            raise InputError(f"{where}: expected a quantity and a check of {', '.join(CHECKS)}")
        why = d.get("why")
        return cls(d["quantity"], predicted, ncu, check, str(why) if why is not None else None)


@dataclass
class AccessCheck:
    """Every quantity both the model and ncu have for one launch (the model at the launch's shape and parameters)."""

    comparisons: list[AccessComparison] = field(default_factory=list)

    def get(self, quantity: str) -> AccessComparison | None:
        return next((c for c in self.comparisons if c.quantity == quantity), None)

    @property
    def check(self) -> str | None:
        """DIFFERS if any quantity does, else explained if any is, else ok; None when nothing was compared."""
        if not self.comparisons:
            return None
        return next(c for c in reversed(CHECKS) if any(x.check == c for x in self.comparisons))

    def to_dict(self) -> dict:
        return {"check": self.check, "comparisons": [c.to_dict() for c in self.comparisons]}

    @classmethod
    def from_dict(cls, d, where: str = "accesses") -> AccessCheck | None:
        if d is None:
            return None
        if not isinstance(d, dict) or not isinstance(d.get("comparisons", []), list):
            raise InputError(f"{where}: expected {{comparisons: [...]}}")
        return cls([AccessComparison.from_dict(c, f"{where}.comparisons[{i}]")
                    for i, c in enumerate(d.get("comparisons", []))])
