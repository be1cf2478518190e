"""What a planned sweep can detect: per gate and case, the minimum detectable change (MDE) its
rounds give with the run noise of earlier sweeps of that case on this host (``noise_history``), and
a warning where the MDE is larger than the distance between the gate's bound and 1.0, i.e. where an
unchanged side will most likely stay INCONCLUSIVE. ``shasweep plan`` prints these lines.

The MDE is the verdicts' own (``verdicts.minimum_detectable``): the standard error of the log ratio
of ``n`` rounds is ``sqrt(2) sigma / sqrt(n)`` with ``sigma`` the per-run log-scale noise, at the
confidence of the sweep's last look (``sequential``; for a ``within`` gate, of its PASS), with
``n - 1`` degrees of freedom when runs pair by round and ``2 (n - 1)`` when not. The rounds a
warning suggests are the sweep's boundary's (``sequential.rounds_to_decide``), as the report's
"rounds to decide" are. Light to import: a results root without runs reads nothing.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.analysis.sequential import MAX_ROUNDS, Looks, rounds_to_decide
from orchestrator.capabilities import DISCOVER, Capability, case_matches, describe
from orchestrator.spec.schema import GateSpec, SweepSpec

if TYPE_CHECKING:
    from orchestrator.analysis.noise_history import Noise


def round_sd(cv: float) -> float:
    """The s.d. of one round's log ratio when each run has a CV of ``cv`` (two runs' noise, paired or
    not)."""
    return math.sqrt(2 * math.log1p(cv ** 2))


def planned_mde(cv: float, rounds: int, confidence: float, paired: bool) -> float:
    """The relative change ``rounds`` rounds detect with 80 % power at a run CV of ``cv``; infinite
    below 2 rounds (no interval)."""
    from orchestrator.analysis.verdicts import minimum_detectable

    if rounds < 2:
        return math.inf
    df = rounds - 1 if paired else 2 * (rounds - 1)
    return minimum_detectable(round_sd(cv) / math.sqrt(rounds), df, confidence)


def gate_lines(results_root: Path, spec: SweepSpec, hostname: str) -> list[str]:
    """``plan``'s lines: per gate, the MDE of each case with earlier runs on ``hostname``, a warning
    where it exceeds the bound's distance from 1.0, and the cases without history. A suite's cases
    are the benchmarks its earlier runs found that the gate's ``case`` (or the sweep's ``cases``)
    selects; a name or glob that selects none has its own line."""
    has_runs = (Path(results_root) / "runs").is_dir()  # no results yet: nothing to read, nothing to import
    looks = Looks.of_spec(spec)
    suite = describe(spec.protocol.value).has(Capability.MANY_CASES)
    lines = []
    for index, gate in enumerate(spec.gates):
        cases = [gate.case] if gate.case else list(spec.cases)
        noise = {}
        if has_runs:
            from orchestrator.analysis.noise_history import earlier_noise  # reads Parquet

            noise = earlier_noise(results_root, cases, gate.metric, hostname,
                                  suite_protocol=spec.protocol.value if suite else None)
        label = f"gate {index} ({gate.metric} {gate.describe()})"
        shown: set[str] = set()
        for case in cases:
            found = sorted(n for n in noise if case_matches(n, case)) if suite else [case] * (case in noise)
            if not found:
                what = "every benchmark (cases: discover)" if suite and case == DISCOVER else case
                lines.append(f"{label} {what}: no earlier ok runs on {hostname} to estimate its noise from; "
                             "the report gives the minimum detectable change after the run")
            for name in (n for n in found if n not in shown):
                shown.add(name)
                lines += _case_lines(label, name, noise[name], gate, spec, looks, hostname)
    return lines


def _case_lines(label: str, case: str, noise: Noise, gate: GateSpec, spec: SweepSpec, looks: Looks,
                hostname: str) -> list[str]:
    """The MDE of an unchanged side's PASS at the last look, and a warning per bound it cannot clear
    with the rounds the boundary would need (``sequential.rounds_to_decide``)."""
    from orchestrator.analysis.verdicts import PAIRED_ORDERS, claim_alphas, claim_confidences

    paired = spec.order.value in PAIRED_ORDERS
    mde = planned_mde(noise.cv, looks.last, claim_confidences(gate, looks, looks.last)[0], paired)
    rounds = f"up to {looks.last}" if looks.adaptive else str(looks.last)
    lines = [f"{label} {case}: run CV {100 * noise.cv:.1f}% on {hostname} ({noise.sweeps} earlier sweeps): "
             f"{rounds} rounds detect a change of {_percent(mde)} (MDE, 80% power)"]
    for _, bound in gate.bounds:
        distance = abs(math.log(bound))
        if math.log1p(mde) <= distance:
            continue
        needed = rounds_to_decide(round_sd(noise.cv), distance, looks, claim_alphas(gate)[0], paired)
        advice = (f"~{needed} rounds would clear it (repeats or max_repeats)" if needed
                  else "no number of rounds clears a bound of 1.0" if bound == 1
                  else f"not even {MAX_ROUNDS} rounds would clear it")
        lines.append(f"warning: {label} {case}: the MDE {_percent(mde)} is larger than the bound {bound:g}'s "
                     f"distance from 1.0 ({100 * abs(1 - bound):.1f}%): at {rounds} rounds an unchanged side "
                     f"will likely be INCONCLUSIVE; {advice}")
    return lines


def _percent(value: float) -> str:
    return "any change (no interval below 2 rounds)" if math.isinf(value) else f"{100 * value:.1f}%"
