"""Search strategies: which configuration to try next. None of them is an optimizer of our own.

A strategy proposes configurations (`ask`) and hears back their TFLOP/s (`tell`; 0 for anything that did not
time). The engine answers proposals that are already in the cache at once, so a resumed sweep replays them;
the budget counts every configuration a strategy gets an answer for, replayed or measured now.
"""

from __future__ import annotations

import random

from gemmprof.errors import GemmprofError, InputError
from gemmprof.tune.space import SearchSpace, config_key

STRATEGIES = ("exhaustive", "random", "optuna")


class Strategy:
    name = "base"

    def __init__(self, space: SearchSpace):
        self.space = space

    def warm_start(self, known: dict[str, float]) -> None:
        """Results already in the cache (key -> TFLOP/s), before the first ask."""

    def ask(self, n: int) -> list[dict[str, int]]:
        raise NotImplementedError

    def tell(self, params: dict[str, int], value: float) -> None:
        """`value` is TFLOP/s, 0.0 when the configuration did not time."""


class _Ordered(Strategy):
    """A fixed order over the valid configurations."""

    def __init__(self, space: SearchSpace, order: list[dict[str, int]]):
        super().__init__(space)
        self._order = order
        self._next = 0

    def ask(self, n):
        out = self._order[self._next:self._next + n]
        self._next += len(out)
        return out


class Exhaustive(_Ordered):
    name = "exhaustive"

    def __init__(self, space: SearchSpace, seed: int = 0):
        super().__init__(space, list(space.valid))


class RandomSample(_Ordered):
    name = "random"

    def __init__(self, space: SearchSpace, seed: int = 0):
        order = list(space.valid)
        random.Random(seed).shuffle(order)  # the same seed gives the same sample, so a resume replays it
        super().__init__(space, order)


class OptunaSearch(Strategy):
    """Optuna's TPE sampler over the candidates as categorical choices; pruned combinations are told 0 TFLOP/s
    without compiling, so the sampler learns to avoid them."""

    name = "optuna"

    def __init__(self, space: SearchSpace, seed: int = 0):
        super().__init__(space)
        optuna = _import_optuna()
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self._optuna = optuna
        self._dist = {k: optuna.distributions.CategoricalDistribution(list(v)) for k, v in space.axes.items()}
        sampler = optuna.samplers.TPESampler(seed=seed, constant_liar=True)
        self.study = optuna.create_study(direction="maximize", sampler=sampler)
        self._pending: dict[str, list] = {}  # key -> open trials (a configuration can be proposed twice)
        self._proposed: set[str] = set()
        self._values: dict[str, float] = {}
        self._rng = random.Random(seed)

    def warm_start(self, known):
        for p in self.space.valid:
            key = config_key(p)
            if key in known:
                self._proposed.add(key)
                self._values[key] = known[key]
                self.study.add_trial(self._optuna.trial.create_trial(
                    params={k: p[k] for k in self._dist}, distributions=self._dist, value=known[key]))

    def _full(self, trial_params):
        return {**self.space.fixed, **{k: int(v) for k, v in trial_params.items()}}

    def ask(self, n):
        out: list[dict[str, int]] = []
        attempts = 0
        while len(out) < n and len(self._proposed) < len(self.space.valid):
            attempts += 1
            if attempts > 50 * n + 200:  # the sampler keeps repeating itself: fill up with unseen ones
                rest = [p for p in self.space.valid if config_key(p) not in self._proposed]
                for p in self._rng.sample(rest, min(n - len(out), len(rest))):
                    self._proposed.add(config_key(p))
                    out.append(p)
                break
            trial = self.study.ask(self._dist)
            params = self._full(trial.params)
            key = config_key(params)
            if not self.space.contains(params):
                self.study.tell(trial, 0.0)
            elif key in self._values:
                self.study.tell(trial, self._values[key])
            elif key in self._proposed:
                self._pending.setdefault(key, []).append(trial)  # answered when the first one is told
            else:
                self._proposed.add(key)
                self._pending.setdefault(key, []).append(trial)
                out.append(params)
        return out

    def tell(self, params, value):
        self._values[config_key(params)] = float(value)
        for trial in self._pending.pop(config_key(params), []):
            self.study.tell(trial, float(value))


def _import_optuna():
    try:
        import optuna
    except ImportError:
        raise GemmprofError("--strategy optuna needs Optuna: pip install 'gemmprof[tune]' (or pip install optuna)"
                            ) from None
    return optuna


def make_strategy(name: str, space: SearchSpace, seed: int = 0) -> Strategy:
    classes = {"exhaustive": Exhaustive, "random": RandomSample, "optuna": OptunaSearch}
    if name not in classes:
        raise InputError(f"--strategy: unknown strategy {name!r} (choose from {', '.join(STRATEGIES)})")
    return classes[name](space, seed=seed)
