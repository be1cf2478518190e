"""The sweep record ``<results>/sweeps/<id>.json`` as a typed object, ``SweepRecord``.

``SweepRecord.from_json`` reads a record written by any shasweep so far (its ``format_version``,
``spec.results_format``; none before versions existed) and applies every compatibility default once
(``spec_from_json``, ``_compatible``); one of a newer version is refused. ``to_json`` writes today's
format, its version first.
Readers take the typed record and never restate a default. The file (paths, locks, atomic writes)
is ``store.records``' job; how a record changes as a sweep moves on is ``plan.lifecycle``'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from orchestrator.errors import InvalidInputError
from orchestrator.spec.deprecated import DEPRECATED_KEYS
from orchestrator.spec.results_format import FORMAT_VERSION, RECORD_KEY, checked_version
from orchestrator.spec.schema import REPORT_METRICS, Spending, SweepSpec

if TYPE_CHECKING:
    from pydantic import TypeAdapter

WAIVE, REVOKE = "waive", "revoke"  # the actions of a waiver log entry
# keys a record holds only once what they tell happened (an adaptive sweep, a waiver, a resume) or
# that records written before them lack (``sequence``)
ONLY_WHEN_SET: tuple[str, ...] = ("sequence", "adaptive", "waivers", "resumed")


@dataclass(frozen=True)
class SideRecord:
    """One side as it ran: its ref, the SHA it resolved to and its settings after overrides."""

    ref: str | None = None
    sha: str | None = None
    variant: str | None = None
    params: dict[str, Any] | None = None
    env: dict[str, str] | None = None

    def planned(self) -> dict[str, Any]:
        """What the per-run audit checks a run of this side against (the keys the record holds)."""
        values = {"sha": self.sha, "variant": self.variant, "params": self.params, "env": self.env}
        return {key: value for key, value in values.items() if value is not None}


@dataclass(frozen=True)
class RunOutcome:
    """One run as the dispatcher ended it."""

    run_key: str
    order: int | None = None
    side: str | None = None
    case: str | None = None
    repeat: int | None = None
    host_id: str | None = None  # records before fleets have none
    status: str | None = None
    error: str | None = None

    @classmethod
    def of(cls, outcome: Mapping[str, Any]) -> RunOutcome:
        """The recorded part of a dispatcher's outcome dict."""
        return cls(**{name: outcome.get(name) for name in OUTCOME_KEYS})


OUTCOME_KEYS: tuple[str, ...] = tuple(RunOutcome.__dataclass_fields__)


BUDGET_SPENT = "budget_s spent"  # why an adaptive sweep added no further round: its runs' time
OUT_OF_TIME = "the time budget would not hold another round"  # its deadline (``shasweep ci --budget``)


@dataclass(frozen=True)
class AdaptiveSummary:
    """An adaptive sweep's planned range, the rounds it ran and why it stopped adding rounds; also of any
    sweep whose deadline stopped a round (``cut``)."""

    repeats: int
    max_repeats: int
    rounds: int  # the rounds the sweep counts: 0 .. rounds - 1
    ended: str | None = None
    cut: int | None = None  # the round its deadline stopped (= rounds): it and any later are not counted

    @property
    def budget_ended(self) -> bool:
        """Whether its time budget ended the sweep (``budget_s``, a deadline): its last look closes
        the boundary (``analysis.sequential.Looks.closing``)."""
        return self.cut is not None or self.ended in (BUDGET_SPENT, OUT_OF_TIME)


@dataclass(frozen=True)
class Waiver:
    """One entry of a sweep's waiver log: a waiver or a revocation (``analysis.waivers``)."""

    action: str  # waive | revoke
    case: str
    side: str | None  # None: every non-baseline side
    gate: int | None  # None: every gate
    reason: str
    by: str
    time: str  # ISO 8601, UTC

    @property
    def target(self) -> tuple[str, str | None, int | None]:
        return self.case, self.side, self.gate

    def covers(self, case: str, side: str, gate: int) -> bool:
        """Whether this entry names the verdict of ``gate`` for ``case`` on ``side``."""
        return case == self.case and self.side in (None, side) and self.gate in (None, gate)

    def describe(self) -> str:
        """``gate 0, case sac/x/y, side mba`` (``every gate`` / ``every side`` when not narrowed)."""
        gate = "every gate" if self.gate is None else f"gate {self.gate}"
        side = "every side" if self.side is None else f"side {self.side}"
        return f"{gate}, case {self.case}, {side}"

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "case": self.case, "side": self.side, "gate": self.gate,
                "reason": self.reason, "by": self.by, "time": self.time}

    @classmethod
    def from_entry(cls, raw: object) -> Waiver | None:
        """The entry ``raw`` read from disk; None when it is not a waiver or revocation of a case."""
        if not isinstance(raw, Mapping) or raw.get("action") not in (WAIVE, REVOKE):
            return None
        gate, side = raw.get("gate"), raw.get("side")
        if not isinstance(raw.get("case"), str) or (
                gate is not None and (isinstance(gate, bool) or not isinstance(gate, int))):
            return None
        return cls(action=raw["action"], case=raw["case"], side=side if isinstance(side, str) else None,
                   gate=gate, reason=str(raw.get("reason") or ""), by=str(raw.get("by") or "-"),
                   time=str(raw.get("time") or "-"))


@dataclass(frozen=True, kw_only=True)
class SweepRecord:
    """What ``<results>/sweeps/<id>.json`` holds; fields in the file's key order. Treat it (and its
    spec) as read-only: a new state is ``dataclasses.replace`` of the old."""

    sweep_id: str
    created: str = ""  # ISO 8601, UTC: for people (a clock step moves it)
    # the creation number in its results root (``store.records.next_sequence``): what orders records
    # by creation, ``latest`` included; None in records written before it
    sequence: int | None = None
    status: str = "running"  # running, finished, stopped, aborted
    repo: str = ""
    results_root: str = ""
    planned_runs: int  # the runs the sweep called for, adaptive rounds included
    spec: SweepSpec  # the validated spec
    sides: dict[str, SideRecord]
    host: dict[str, Any] | None = None  # the bench host's record (``contract.HostRecord``)
    sweep_dir: str | None = None  # the sweep YAML's directory ({sweep_dir} on resume)
    client_token: str = ""  # in the cancel event's name; records before it have none
    digest: str | None = None  # of what a resume would run (``plan.integrity``)
    scheduler: str | None = None
    dashboard_url: str | None = None
    adaptive: AdaptiveSummary | None = None
    stopped_reason: str | None = None
    wall_s: float | None = None
    ended: str | None = None
    outcomes: tuple[RunOutcome, ...] = ()
    hosts: tuple[str, ...] = ()  # the host ids it ran on
    requeued_rounds: tuple[str, ...] = ()
    waivers: tuple[Waiver, ...] = ()  # the append-only log (``store.records.append_entry``)
    resumed: tuple[str, ...] = ()  # when ``--resume`` dispatched it again

    def side(self, label: str) -> SideRecord:
        """The recorded side ``label`` (every field None when the record has no such side)."""
        return self.sides.get(label) or SideRecord()

    @classmethod
    def from_json(cls, raw: object, where: str = "the sweep record") -> SweepRecord:
        """The record of a parsed JSON file (``where``: its path); ``InvalidInputError`` names the first
        key of an unexpected shape, ``NewerFormatError`` the file of a newer format version."""
        return _parsed(_record_adapter(), _compatible(raw, where), "")

    def to_json(self) -> dict[str, Any]:
        """The record as today's shasweep writes it (plain JSON values, its format version first, the
        file's key order)."""
        written = _record_adapter().dump_python(self, mode="json")
        if written.get("adaptive") and written["adaptive"]["cut"] is None:  # written only once it happened
            del written["adaptive"]["cut"]
        return {RECORD_KEY: FORMAT_VERSION,
                **{key: value for key, value in written.items() if value or key not in ONLY_WHEN_SET}}


def spec_from_json(raw: object) -> SweepSpec:
    """A recorded spec (of a sweep or a bisect record), typed, with every default of a key older
    records lack (``metrics`` before it existed: ``REPORT_METRICS``; ``spending``: ``even``, the
    boundary their adaptive looks were decided by); deprecated keys are dropped."""
    return _parsed(_spec_adapter(), _compatible_spec(raw), "spec.")


def spec_to_json(spec: SweepSpec) -> dict[str, Any]:
    """The plain JSON form of a spec, as records hold it (enums as their values)."""
    return _spec_adapter().dump_python(spec, mode="json")


def _compatible(raw: object, where: str) -> dict[str, Any]:
    """``raw`` of a version this shasweep reads, with the defaults of keys older records lack and
    malformed log entries skipped."""
    if not isinstance(raw, Mapping):
        raise InvalidInputError(f"a sweep record is a JSON object, got {type(raw).__name__}")
    record = dict(raw)
    checked_version(record.pop(RECORD_KEY, None), where)  # every version so far reads as below
    record["spec"] = _compatible_spec(record.get("spec"))
    outcomes = record.get("outcomes")
    record["outcomes"] = [o for o in outcomes if isinstance(o, Mapping) and isinstance(o.get("run_key"), str)
                          ] if isinstance(outcomes, list) else []
    entries = record.get("waivers")
    record["waivers"] = [w for w in map(Waiver.from_entry, entries if isinstance(entries, list) else [])
                         if w is not None]
    if not isinstance(record.get("adaptive"), Mapping):  # a sweep that was not adaptive
        record["adaptive"] = None
    for key in ("created", "client_token"):
        if record.get(key) is None:
            record[key] = ""
    for key in ("hosts", "requeued_rounds", "resumed"):
        if record.get(key) is None:
            record[key] = []
    return record


def _compatible_spec(raw: object) -> object:
    if not isinstance(raw, Mapping):
        return raw  # the adapter says what is wrong
    spec = {key: value for key, value in raw.items() if key not in DEPRECATED_KEYS}
    spec.setdefault("metrics", list(REPORT_METRICS))  # a spec recorded before the key reported these
    spec.setdefault("spending", Spending.even.value)  # ... and its adaptive looks were decided so
    return spec


def _parsed(adapter: TypeAdapter, value: object, prefix: str) -> Any:
    from pydantic import ValidationError

    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        error = exc.errors()[0]
        key = prefix + ".".join(str(part) for part in error["loc"])
        raise InvalidInputError(_problem(error), key.rstrip(".") or None) from None


def _problem(error: Mapping[str, Any]) -> str:
    """One validation error of a recorded value, in words."""
    if error["type"] == "missing":
        return "missing"
    if error["type"] in ("dict_type", "dataclass_type", "dataclass_exact_type"):
        return f"must be a mapping, got {error.get('input')!r:.80}"
    return f"{error['msg']} (got {error.get('input')!r:.80})"


@cache
def _record_adapter() -> TypeAdapter:
    from pydantic import TypeAdapter  # built on first use: plain commands start without it

    return TypeAdapter(SweepRecord)


@cache
def _spec_adapter() -> TypeAdapter:
    from pydantic import TypeAdapter

    return TypeAdapter(SweepSpec)
