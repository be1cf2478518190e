"""The looks of an adaptive sweep and the error rate each one may spend (docs/design.md, "Statistics").

An adaptive sweep (``max_repeats > repeats``) looks at its gates after round ``repeats`` and after
every further round up to ``max_repeats``; a gate's verdict is the first look whose interval lies
entirely on one side of its bounds. Looking again and again at a 95 % interval would claim far more
than 5 % wrong verdicts, so the gate's error rate ``alpha = 1 - confidence`` is spent over the
planned looks in proportion to the rounds each adds: the first look, at ``n = repeats`` rounds, may
spend ``alpha * repeats / max_repeats``, every later one ``alpha / max_repeats``. The spent amounts
add up to ``alpha``, so by the union bound the chance that *any* look's interval misses the true
ratio (the only way to a wrong PASS or FAIL) is at most ``alpha``, however the looks correlate and
wherever the sweep stops. A fixed sweep (``max_repeats == repeats``) has one look at ``confidence``.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.spec.schema import SweepSpec


@dataclass(frozen=True)
class Looks:
    """Planned looks at ``first``, ``first + 1``, ..., ``last`` rounds."""

    first: int
    last: int

    @classmethod
    def of_spec(cls, spec: SweepSpec) -> Looks:
        """The looks of a sweep: after round ``repeats``, then each round up to ``max_rounds``."""
        return cls(spec.repeats, spec.max_rounds)

    @property
    def adaptive(self) -> bool:
        return self.last > self.first

    def confidence_at(self, rounds: int, confidence: float) -> float:
        """The two-sided confidence of the interval read at the look after ``rounds`` rounds."""
        if not self.adaptive:
            return confidence
        share = min(rounds, self.first) / self.last if rounds <= self.first else 1 / self.last
        return 1 - (1 - confidence) * share

    def schedule(self, available: int) -> list[int]:
        """The looks a cell with ``available`` rounds of data had (at least one: all its data)."""
        looks = list(range(self.first, min(self.last, available) + 1)) if self.adaptive else []
        return looks or [max(available, 1)]
