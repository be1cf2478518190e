"""The looks of an adaptive sweep and the error rate each one may spend (docs/design.md, "Statistics").

An adaptive sweep (``max_repeats > repeats``) looks at its gates after round ``repeats`` and after
every further round up to ``max_repeats``; a gate's verdict is the first look whose interval decides.
Looking again and again at a 95 % interval would claim far more than 5 % wrong verdicts, so each look
reads its interval at the nominal level its sweep's boundary gives it (``spending: pocock``,
``obrien-fleming`` or ``even``; ``analysis.spending`` computes them): together the looks' intervals
miss the true ratio, the only way to a wrong PASS or FAIL, in at most ``alpha = 1 - confidence`` of
sweeps, wherever the sweep stops. A sweep its time budget ended before ``max_repeats`` closes its
boundary at its last look, which spends what the looks before it left (``Looks.closing``). A fixed
sweep (``max_repeats == repeats``) has one look at ``confidence``.

``rounds_to_decide`` is the boundary's answer to "how many rounds would decide this?": the first look
whose interval clears a given distance with 80 % power. ``plan`` and the report's "rounds needed"
both ask it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from orchestrator.spec.schema import Spending, SweepSpec

if TYPE_CHECKING:
    import numpy as np

    from orchestrator.spec.record import SweepRecord

POWER = 0.8  # of the minimum detectable change and of the rounds to decide
MAX_ROUNDS = 10_000  # rounds_to_decide looks no further


@dataclass(frozen=True)
class Looks:
    """Planned looks at ``first``, ``first + 1``, ..., ``last`` rounds, sharing the error rate by
    ``spending``; ``closing``: the rounds after which the sweep's time budget ended it, before
    ``last`` (its look spends what the looks before it left: ``analysis.spending``), else None."""

    first: int
    last: int
    spending: Spending = Spending.pocock
    closing: int | None = None

    def __post_init__(self) -> None:
        if self.closing is not None and not self.first <= self.closing < self.last:
            object.__setattr__(self, "closing", None)  # no look to close, or the planned last one

    @classmethod
    def of_spec(cls, spec: SweepSpec) -> Looks:
        """The looks of a sweep: after round ``repeats``, then each round up to ``max_rounds``."""
        return cls(spec.repeats, spec.max_rounds, spec.spending)

    @classmethod
    def of_record(cls, record: SweepRecord) -> Looks:
        """The looks a finished sweep had: those of its spec, closed at its last round where its time
        budget ended it (``AdaptiveSummary.budget_ended``)."""
        adaptive = record.adaptive
        closing = adaptive.rounds if adaptive is not None and adaptive.budget_ended else None
        return cls(record.spec.repeats, record.spec.max_rounds, record.spec.spending, closing)

    @property
    def adaptive(self) -> bool:
        return self.last > self.first

    @property
    def final(self) -> int:
        """The rounds of the last look."""
        return self.closing or self.last

    def planned(self) -> Looks:
        """These looks as planned, not closed: what further rounds would read."""
        return Looks(self.first, self.last, self.spending)

    def level_at(self, rounds: int, alpha: float) -> float:
        """The two-sided error rate of the interval read at the look after ``rounds`` rounds (a cell
        with fewer rounds than the first look: the first look's; more than the last: the last's)."""
        if not self.adaptive:
            return alpha
        from orchestrator.analysis.spending import look_levels  # numpy and scipy: only when judged

        levels = look_levels(self.first, self.last, alpha, self.spending, self.closing)
        return levels[min(max(rounds, self.first), self.final) - self.first]

    def confidence_at(self, rounds: int, confidence: float) -> float:
        """The two-sided confidence of the interval read at the look after ``rounds`` rounds."""
        return confidence if not self.adaptive else 1 - self.level_at(rounds, 1 - confidence)

    def schedule(self, available: int) -> list[int]:
        """The looks a cell with ``available`` rounds of data had (at least one: all its data)."""
        looks = list(range(self.first, min(self.final, available) + 1)) if self.adaptive else []
        return looks or [max(available, 1)]


def rounds_to_decide(sd: float, distance: float, looks: Looks, alpha: float, paired: bool,
                     start: int = 2) -> int | None:
    """The fewest rounds (from ``start``) whose look, at the level ``looks`` gives it, clears a log
    ``distance`` from a bound with 80 % power when one round's log ratio has s.d. ``sd``:
    ``(t(1 - level/2) + t(0.8)) * sd / sqrt(n) <= distance``, ``n - 1`` degrees of freedom paired,
    ``2 (n - 1)`` not. Beyond the last look, the last look's level. None when not even
    ``MAX_ROUNDS`` rounds would, or the distance is 0. An adaptive sweep decides at a look, so not
    before its first."""
    import numpy as np

    if not distance > 0 or not sd >= 0:
        return None
    n, quantiles, roots = _reach_factors(looks, alpha, paired)
    skip = max(start - int(n[0]), 0)
    reach = quantiles[skip:] * sd / roots[skip:]
    enough = np.nonzero(reach <= distance)[0]
    return int(n[skip + enough[0]]) if enough.size else None


@lru_cache(maxsize=64)
def _reach_factors(looks: Looks, alpha: float, paired: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n, ``t(1 - level/2) + t(0.8)``, ``sqrt(n)``) of every round count ``rounds_to_decide`` may
    answer, from the first it may: they depend on the boundary alone, so a report of 10,000 cells
    computes the 20,000 t quantiles once, not per cell."""
    import numpy as np

    from orchestrator.analysis.distributions import t_quantile

    n = np.arange(max(2, looks.first if looks.adaptive else 2), MAX_ROUNDS + 1)
    levels = np.array([looks.level_at(int(k), alpha) for k in n[:max(looks.last - n[0] + 1, 1)]])
    levels = np.concatenate([levels, np.full(n.size - levels.size, levels[-1])])
    df = n - 1 if paired else 2 * (n - 1)
    return n, t_quantile(1 - levels / 2, df) + t_quantile(POWER, df), np.sqrt(n)
