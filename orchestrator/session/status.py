"""``status`` and ``cancel`` of a sweep.

Status comes from the scheduler's live board (``scheduler``, or the address the sweep record holds
while the sweep runs) with the current step of the running run; without a reachable board it comes
from the sweep record and the run files under the results root. Cancel sets the sweep's cancel
``Event`` on its scheduler: the bench task kills the running bench's process group and records the
run ``cancelled``, and the dispatcher starts no queued run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orchestrator.dashboard.lanes import format_lane
from orchestrator.errors import ClusterError, InvalidInputError, RunFailedError, UnknownSweepError
from orchestrator.plan import lifecycle
from orchestrator.session.recorded import locate_results
from orchestrator.spec.record import SweepRecord
from orchestrator.store import records

if TYPE_CHECKING:
    from distributed import Client

CANCEL_WAIT_S = 30.0
LIVE = ("waiting", "running")


@dataclass(frozen=True)
class SweepStatus:
    """What is known of a sweep: the board's view on ``address`` (``live``), else its record and run
    files (``recorded``: the text); ``unreachable``: why the sweep's own scheduler could not be asked."""

    sweep_id: str
    address: str | None = None
    live: dict[str, Any] | None = None
    recorded: str | None = None
    unreachable: str | None = None

    @property
    def state(self) -> str | None:
        """The board's state of the sweep (running, stopped, finished), where the board has it."""
        return self.live["sweep"]["state"] if self.live is not None else None

    def lines(self) -> list[str]:
        """The status as ``shasweep status`` prints it."""
        note = [f"(the sweep's scheduler is not reachable: {self.unreachable})"] if self.unreachable else []
        shown = format_live(self.live, self.address or "") if self.live is not None else self.recorded
        return note + ([shown] if shown else [])


def sweep_status(sweep_id: str = "latest", results_root: str | Path = "results", *,
                 scheduler: str | None = None, cwd: Path | None = None) -> SweepStatus:
    """The sweep's status: live from ``scheduler`` (default: the one its record names while it runs),
    else from its record and run files. ``latest`` is the board's newest sweep when the results root
    has none and ``scheduler`` is given."""
    root = locate_results(results_root, cwd=cwd)
    sweep_id, record = _find_sweep(root, sweep_id, scheduler)
    address = scheduler or _live_scheduler(root, record)
    unreachable = None
    if address is not None:
        try:
            live = _board_view(address, sweep_id)
        except ClusterError as exc:
            if scheduler:  # asked for explicitly: a failure to reach it is the answer
                raise
            live, unreachable = None, str(exc)
        if live is not None:
            return SweepStatus(sweep_id, address, live=live)
    if record is None:
        raise _unknown(sweep_id, address, root)
    return SweepStatus(sweep_id, address, recorded=_format_recorded(root, record), unreachable=unreachable)


def cancel_sweep(sweep_id: str, results_root: str | Path = "results", *, scheduler: str | None = None,
                 wait_s: float = CANCEL_WAIT_S, cwd: Path | None = None,
                 say: Callable[[str], None] = print) -> SweepStatus | None:
    """Cancel a running sweep: its running bench is killed, its queued runs never start; ``say`` is
    told once the request is made. Returns the status once it stopped (or after ``wait_s``: then
    ``RunFailedError``, the status said first); None when it had stopped already (``say`` says so)."""
    from distributed import Event

    from orchestrator.contract import cancel_event_name
    from orchestrator.dispatch.cluster import connect

    if wait_s < 0:
        raise InvalidInputError(f"--wait-s {wait_s:g} is negative")
    root = locate_results(results_root, cwd=cwd)
    sweep_id, record = _find_sweep(root, sweep_id, scheduler)
    address = scheduler or _live_scheduler(root, record)
    if address is None:
        state = _recorded_state(root, record) if record else "?"
        raise InvalidInputError(f"sweep {sweep_id} is not running (its record: {state}), and no "
                                f"--scheduler was given to cancel it on")
    with connect(address) as conn:
        view = _snapshot_view(conn.client, sweep_id)
        if view is None and record is None:
            raise _unknown(sweep_id, address, root)
        if view is not None and view["sweep"]["state"] != "running":
            say(f"sweep {sweep_id} already {view['sweep']['state']}; nothing to cancel")
            return None
        token = record.client_token if record is not None else ""
        Event(cancel_event_name(sweep_id, token), client=conn.client).set()
        say(f"cancel requested for sweep {sweep_id} on {address}")
        if view is not None and wait_s > 0:
            view = _wait_until_stopped(conn.client, sweep_id, wait_s, root if record else None)
            if view is None and record is not None:  # the sweep's client may have ended its scheduler
                return SweepStatus(sweep_id, address,
                                   recorded=_format_recorded(root, records.read_record(root, sweep_id)))
    status = SweepStatus(sweep_id, address, live=view)
    if view is not None and wait_s > 0 and view["sweep"]["state"] == "running":
        say("\n".join(status.lines()))
        raise RunFailedError(f"sweep {sweep_id} is still running {wait_s:g} s after the cancel request "
                             f"(--wait-s); its bench worker may be stuck")
    return status


def format_live(view: dict[str, Any], address: str) -> str:
    """The board's view of one sweep: counts, the running run and its step, one line per run."""
    sweep = view["sweep"]
    counts = sweep["counts"]
    lines = [f"sweep {sweep['sweep_id']}: {sweep['state']} (live, scheduler {address})",
             "runs: " + _count_line(counts) + f" of {len(sweep['runs'])}"]
    if sweep["stop_reason"]:
        lines.append(f"stopped: {sweep['stop_reason']}")
    for run in sweep["runs"]:
        if run["status"] in LIVE:
            step = f"step {run['done']}/{run['total']}" if run["total"] else f"step {run['done']}"
            lines.append(f"current: #{run['order']} {run['side']} {run['case']} repeat {run['repeat']}, "
                         f"{run['status']}, {step}")
    lines += [format_lane(lane) for lane in sweep.get("lanes", [])]
    for addr, host in view["hosts"].items():
        lines.append(f"bench worker {addr}: host {host.get('id')} ({host.get('hostname')}), "
                     f"CPUs {host.get('affinity')}, "
                     f"GPU {host.get('gpu_name')}")
    lines.append(f"{'#':>4}  {'side':<12} {'case':<36} {'status':<10} {'steps':>9}  throughput")
    for run in sweep["runs"]:
        steps = f"{run['done']}/{run['total']}" if run["total"] else ""
        throughput = f"{run['throughput']:,.1f}" if run["throughput"] is not None else ""
        lines.append(f"{run['order']:>4}  {run['side']:<12} {run['case']:<36} {run['status']:<10} "
                     f"{steps:>9}  {throughput}")
    return "\n".join(lines)


def format_recorded(record: SweepRecord, statuses: dict[str, str | None], state: str) -> str:
    """A sweep as its record and run files tell it (no live step information); ``state``: its status
    (``lifecycle.current_status``)."""
    planned = record.planned_runs
    counts: dict[str, int] = {}
    if record.outcomes:
        for outcome in record.outcomes:
            counts[str(outcome.status)] = counts.get(str(outcome.status), 0) + 1
    else:
        for status in statuses.values():
            counts[status or "unreadable"] = counts.get(status or "unreadable", 0) + 1
        remaining = planned - sum(counts.values())
        if state == "running" and remaining > 0:
            counts.update({"running": 1, "queued": remaining - 1})
        elif state == lifecycle.CLIENT_GONE and remaining > 0:
            counts["not run"] = remaining
    lines = [f"sweep {record.sweep_id}: {state} (from the sweep record and run files; "
             "the current step needs a reachable scheduler)",
             "runs: " + _count_line(counts) + f" of {planned}"]
    if record.stopped_reason:
        lines.append(f"stopped: {record.stopped_reason}")
    return "\n".join(lines)


def _find_sweep(root: Path, wanted: str, scheduler: str | None) -> tuple[str, SweepRecord | None]:
    """(sweep id, its record or None). ``latest`` falls back to the board's newest sweep when the
    results root has none and a scheduler was given."""
    try:
        sweep_id = records.resolve_sweep_id(root, wanted)
    except UnknownSweepError:
        if scheduler is None:
            raise
        view = _board_view(scheduler, None)
        if view is None:
            raise
        return view["sweep"]["sweep_id"], None
    try:
        return sweep_id, records.read_record(root, sweep_id)
    except UnknownSweepError:
        if scheduler is None:
            raise
        return sweep_id, None


def _live_scheduler(root: Path, record: SweepRecord | None) -> str | None:
    """The scheduler a running sweep's record names, while its client still runs it."""
    if record is not None and record.status == "running" and records.client_alive(root, record.sweep_id):
        return record.scheduler
    return None


def _board_view(address: str, sweep_id: str | None) -> dict | None:
    """The board's snapshot holding ``sweep_id`` (None: the newest), or None if it has no such sweep."""
    from orchestrator.dispatch.cluster import connect

    with connect(address) as conn:
        return _snapshot_view(conn.client, sweep_id)


def _snapshot_view(client: Client, sweep_id: str | None) -> dict | None:
    from orchestrator.dashboard.plugin import board_snapshot

    try:
        view = client.run_on_scheduler(board_snapshot, sweep_id=sweep_id)
    except Exception as exc:  # noqa: BLE001 - a scheduler without shasweep cannot load the function
        raise ClusterError(f"the scheduler at {client.scheduler.address} has no shasweep board "
                           f"({type(exc).__name__}: {exc}); start it with `shasweep scheduler`") from None
    return view if view["installed"] and view["sweep"] is not None else None


def _wait_until_stopped(client: Client, sweep_id: str, wait_s: float, root: Path | None) -> dict | None:
    """The board's view once the sweep is no longer running, or the last one after ``wait_s``; None
    when the scheduler went away and the sweep's record under ``root`` says it stopped (an embedded
    cluster ends with the client that stopped the sweep)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            view = _snapshot_view(client, sweep_id)
        except ClusterError:
            if root is not None and _stopped_on_record(root, sweep_id, deadline):
                return None
            raise
        if view is None or view["sweep"]["state"] != "running" or time.monotonic() >= deadline:
            return view
        time.sleep(0.2)


def _stopped_on_record(root: Path, sweep_id: str, deadline: float) -> bool:
    """Whether the sweep's record stops saying "running" before ``deadline`` (monotonic)."""
    while _recorded_state(root, records.read_record(root, sweep_id)) == "running":
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def _recorded_state(root: Path, record: SweepRecord) -> str:
    return lifecycle.current_status(record, records.client_alive(root, record.sweep_id))


def _format_recorded(root: Path, record: SweepRecord) -> str:
    from orchestrator.store.query import run_statuses

    return format_recorded(record, run_statuses(root, record.sweep_id), _recorded_state(root, record))


def _unknown(sweep_id: str, address: str | None, root: Path) -> UnknownSweepError:
    return UnknownSweepError(f"sweep {sweep_id!r} is neither on the board of {address} nor under {root}")


def _count_line(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {status}" for status, n in counts.items() if n) or "none"
