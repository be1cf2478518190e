"""What the results site knows of each sweep and bisect besides its runs: the record's sides, gates'
metrics and waiver log (``SweepInfo``, kept between builds as JSON) and a bisect record's case,
status and steps (``BisectInfo``, read from a file anyone could have written: every field checked)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orchestrator.analysis.waivers import active_waivers, waiver_log
from orchestrator.spec.record import SweepRecord, Waiver


@dataclass(frozen=True)
class SweepInfo:
    """A sweep as its record tells it: when, its status, baseline, each side's ref and SHA, the
    metrics its gates read and its waiver log (the YAML's waivers first)."""

    sweep_id: str
    created: str | None = None
    status: str | None = None
    baseline: str | None = None
    refs: dict[str, str] = field(default_factory=dict)  # side -> ref
    shas: dict[str, str] = field(default_factory=dict)  # side -> SHA
    gate_metrics: tuple[str, ...] = ()
    listed_metrics: tuple[str, ...] = ()  # the sweep's ``metrics`` key, when it has one
    waivers: tuple[Waiver, ...] = ()

    @classmethod
    def of_record(cls, record: SweepRecord) -> SweepInfo:
        spec = record.spec
        return cls(record.sweep_id, record.created or None, record.status, spec.baseline,
                   {label: side.ref or "" for label, side in record.sides.items()},
                   {label: side.sha or "" for label, side in record.sides.items()},
                   tuple(dict.fromkeys(g.metric for g in spec.gates)), tuple(spec.metrics or ()),
                   tuple(waiver_log(record)))

    @property
    def active_waivers(self) -> list[Waiver]:
        return active_waivers(list(self.waivers))

    def waives_case(self, case: str) -> bool:
        """Whether an active waiver of this sweep names ``case``."""
        return any(w.case == case for w in self.active_waivers)

    def to_json(self) -> dict[str, Any]:
        return {"sweep_id": self.sweep_id, "created": self.created, "status": self.status,
                "baseline": self.baseline, "refs": dict(self.refs), "shas": dict(self.shas),
                "gate_metrics": list(self.gate_metrics), "listed_metrics": list(self.listed_metrics),
                "waivers": [w.to_dict() for w in self.waivers]}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> SweepInfo:
        """What ``to_json`` wrote (the site's own state file)."""
        waivers = tuple(w for w in map(Waiver.from_entry, raw.get("waivers") or []) if w is not None)
        return cls(str(raw["sweep_id"]), raw.get("created"), raw.get("status"), raw.get("baseline"),
                      dict(raw.get("refs") or {}), dict(raw.get("shas") or {}),
                   tuple(raw.get("gate_metrics") or ()), tuple(raw.get("listed_metrics") or ()), waivers)


@dataclass(frozen=True)
class BisectInfo:
    """A recorded bisect: its case, status, first bad commit and the sweeps of its steps."""

    bisect_id: str
    case: str | None
    status: str
    first_bad: str | None
    good: str | None
    bad: str | None
    steps: tuple[str, ...]  # the step sweeps' ids, in the order taken

    def to_json(self) -> dict[str, Any]:
        return {"bisect_id": self.bisect_id, "case": self.case, "status": self.status,
                "first_bad": self.first_bad, "good": self.good, "bad": self.bad, "steps": list(self.steps)}

    @classmethod
    def of_document(cls, bisect_id: str, raw: object) -> BisectInfo | None:
        """The bisect ``raw`` (its record, parsed JSON) describes; None when it is not one."""
        if not isinstance(raw, Mapping):
            return None
        spec = raw.get("spec") if isinstance(raw.get("spec"), Mapping) else {}
        cases = spec.get("cases") if isinstance(spec.get("cases"), list) else []
        steps = raw.get("steps") if isinstance(raw.get("steps"), list) else []
        sweeps = tuple(s["sweep_id"] for s in steps
                       if isinstance(s, Mapping) and isinstance(s.get("sweep_id"), str))
        return cls(bisect_id, _text(cases[0]) if len(cases) == 1 else None, _text(raw.get("status")) or "-",
                   _text(raw.get("first_bad")), _text(raw.get("good")), _text(raw.get("bad")), sweeps)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
