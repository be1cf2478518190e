"""The one line a command that judges gates ends with: ``PASS 6 / FAIL 1 / INCONCLUSIVE 0 — exit 1``.

Shared by ``run``, ``report`` and ``bisect`` (and written into ``reports/<id>.verdicts.json`` as
counted here). A verdict is anything with a ``verdict`` (a ``Verdict``) and, optionally, a ``waived``
flag (default False): a waived FAIL is counted apart, never as a FAIL. ``NO DATA`` and ``WAIVED``
join the line when there is one.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from orchestrator.analysis.verdicts import Verdict

VERDICTS: tuple[str, ...] = tuple(Verdict)
ALWAYS_SHOWN: tuple[str, ...] = (Verdict.PASS, Verdict.FAIL, Verdict.INCONCLUSIVE)
WAIVED = "WAIVED"


class Judged(Protocol):
    verdict: str


def is_waived(verdict: Judged) -> bool:
    return bool(getattr(verdict, "waived", False))


def verdict_counts(verdicts: Iterable[Judged]) -> dict[str, int]:
    """``{"PASS": n, "FAIL": n, "INCONCLUSIVE": n, "NO DATA": n, "WAIVED": n}``; a waived verdict counts
    only as WAIVED."""
    counts = dict.fromkeys((*VERDICTS, WAIVED), 0)
    for verdict in verdicts:
        key = WAIVED if is_waived(verdict) else verdict.verdict
        counts[key] = counts.get(key, 0) + 1
    return counts


def verdict_line(verdicts: Iterable[Judged], exit_code: int, note: str | None = None) -> str:
    """``PASS 6 / FAIL 1 / INCONCLUSIVE 0 — exit 1``; ``NO DATA n`` and ``WAIVED n`` join when there is
    one, ``note`` (e.g. why exit 3) follows the exit code in parentheses."""
    line = f"{counts_text(verdicts)} — exit {exit_code}"
    return f"{line} ({note})" if note else line


def counts_text(verdicts: Iterable[Judged]) -> str:
    """``PASS 6 / FAIL 1 / INCONCLUSIVE 0``, ``/ NO DATA n`` and ``/ WAIVED n`` when there is one."""
    counts = verdict_counts(verdicts)
    shown = [*ALWAYS_SHOWN,
             *(name for name in (*VERDICTS, WAIVED) if name not in ALWAYS_SHOWN and counts[name])]
    return " / ".join(f"{name} {counts[name]}" for name in shown)
