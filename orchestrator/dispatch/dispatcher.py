"""Strictly serial dispatch of a planned sweep to its bench host, or its rounds to a fleet of hosts.

With ``hosts: one`` runs are submitted one at a time in plan order, each only after the previous one
finished, to the bench workers of one host chosen at start (``dispatch.host_choice``); with several hosts
each round runs whole on one host, different rounds at once on different hosts (``dispatch.fleet``).
A lockstep round (``dispatch.units``) is one task either way. On the worker an OS file lock per host
id also keeps bench runs of different sweeps (other clients) from overlapping on one host.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from distributed import Client, Event, Future, wait

from orchestrator.contract import PROGRESS_TOPIC, Outcome, PlannedRun, cancel_event_name, scheduler_lost
from orchestrator.dashboard import page_url
from orchestrator.dashboard.plugin import board_installed
from orchestrator.dispatch.cluster import connect
from orchestrator.dispatch.fleet import (
    FleetResult,
    LostResult,
    RoundHooks,
    run_rounds,
    split_rounds,
)
from orchestrator.dispatch.host_choice import BenchHost, HostsSetting, choose_hosts
from orchestrator.dispatch.progress import SweepProgress
from orchestrator.dispatch.units import Unit, unit_at
from orchestrator.errors import ClusterError, InvalidInputError, interruption
from orchestrator.spec.record import RunOutcome, SweepRecord
from orchestrator.worker.bench_task import bench_host_record, execute_run
from orchestrator.worker.round_task import execute_round

if TYPE_CHECKING:  # pandas and Arrow: only where a run is reused
    from orchestrator.store.reuse import Reuse

WORKER_CHECK_INTERVAL_S = 5.0
CANCEL_POLL_INTERVAL_S = 0.5  # the dispatcher's looks at the cancel event between runs, at most
CANCEL_GRACE_S = 30.0
RESULT_FETCH_TIMEOUT_S = 30.0  # a finished task's small outcome dict; far longer than a fetch takes
CANCELLED_REASON = "cancelled with `shasweep cancel`"
DEADLINE_REASON = "the time budget ran out"  # ``deadline``: the running runs were cancelled

OnConnect = Callable[[str, str | None], None]  # (scheduler address, dashboard URL)
MoreRuns = Callable[[], list[PlannedRun]]  # the next runs to dispatch once the list is done; [] ends
CheckOutcome = Callable[[Outcome], str | None]  # a reason to stop the sweep after this outcome, or None


@dataclass
class SweepOutcome:
    """What ``dispatch_runs`` did: one outcome per planned run, in plan order."""

    runs: list[Outcome]
    host: dict
    stopped_early: bool = False
    stop_reason: str | None = None
    dashboard_url: str | None = None
    wall_s: float = 0.0  # the whole call, cluster start included
    dispatch_s: float = 0.0  # first submit to last outcome
    workers: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)  # host ids the sweep ran on
    requeued: list[str] = field(default_factory=list)  # rounds redone after their host's worker died

    def finished_record(self, record: SweepRecord) -> SweepRecord:
        """``record`` updated with this outcome: host, per-run status, whether it stopped early."""
        return replace(
            record, status="stopped" if self.stopped_early else "finished", stopped_reason=self.stop_reason,
            host=self.host, dashboard_url=self.dashboard_url, wall_s=self.wall_s,
            ended=datetime.now(UTC).isoformat(timespec="seconds"),
            outcomes=tuple(RunOutcome.of(run.to_json()) for run in self.runs), planned_runs=len(self.runs),
            hosts=tuple(self.hosts), requeued_rounds=tuple(self.requeued))


def dispatch_runs(
    runs: list[PlannedRun],
    *,
    scheduler: str | None,
    continue_on_error: bool,
    show_progress: bool = True,
    lock_path: str | None = None,
    on_connect: OnConnect | None = None,
    more: MoreRuns | None = None,
    security: object | None = None,
    hosts: HostsSetting = "one",
    reuse: Reuse | None = None,
    check: CheckOutcome | None = None,
    deadline: float | None = None,
) -> SweepOutcome:
    """Execute ``runs`` on the bench hosts of ``scheduler``: one host runs them one at a time in list
    order (``_serial_loop``), several run whole rounds at once, one per host (``_fleet_loop``).

    ``scheduler=None`` starts an embedded cluster. A run that is not ``ok`` stops the sweep unless
    ``continue_on_error``; Ctrl-C or ``shasweep cancel`` (the sweep's cancel event) cancels the
    running bench and stops. Runs never started are reported with status ``cancelled`` and an error
    saying why. ``on_connect`` learns the scheduler's address and the dashboard URL (the live
    ``/shasweep`` board when the scheduler has it) before the first run; the plan and the end of
    the sweep are published on ``PROGRESS_TOPIC`` for that board. ``more`` (an adaptive sweep's next
    round, ``dispatch.adaptive``) is asked for further runs whenever the list is done, until it
    returns none or the sweep stops. ``hosts`` is the sweep's ``hosts:`` key (``dispatch.host_choice``).
    ``security``: the client's Dask ``Security`` for a ``tls://`` scheduler. ``reuse`` (one host only;
    ``store.reuse``) may stand in an earlier run's results for a run, which then is not dispatched.
    ``check`` sees every outcome and may stop the sweep before its next run (``first_run``).
    At ``deadline`` (``time.monotonic()``; None: none) the sweep stops as a cancel stops it (the
    running runs come back ``cancelled``), with the stop reason ``DEADLINE_REASON``.
    """
    _check_plan(runs)
    started = time.monotonic()
    with (connect(scheduler, security=security) as conn,
          SweepProgress(runs, enabled=show_progress) as progress):
        client = conn.client
        address = client.scheduler.address
        dashboard_url = _board_url(client, conn.dashboard_url)
        progress.say(f"dashboard: {dashboard_url}")
        if on_connect is not None:
            on_connect(address, dashboard_url)
        chosen = choose_hosts(client, hosts)
        cancel = Event(cancel_event_name(runs[0].sweep_id, runs[0].token), client=client)
        cancel.clear()
        sweep = _Dispatch(client, list(runs), chosen, cancel, progress, lock_path, continue_on_error, more,
                          check, deadline)
        host = chosen[0].submit(client, bench_host_record, key="shasweep-host").result()
        client.subscribe_topic(PROGRESS_TOPIC, sweep.on_event)
        client.log_event(PROGRESS_TOPIC, _planned_message(sweep.runs))
        dispatch_started = time.monotonic()
        try:
            ended = _fleet_loop(sweep) if len(chosen) > 1 else _serial_loop(sweep, reuse)
        except Exception:
            if client.status == "running":
                raise
            ended = _scheduler_lost(sweep, address)  # whatever Dask raised once it was gone
        finally:
            if client.status == "running":
                client.unsubscribe_topic(PROGRESS_TOPIC)
        dispatch_s = time.monotonic() - dispatch_started
        outcomes = _every_outcome(sweep.runs, ended)
        if client.status == "running":
            client.log_event(PROGRESS_TOPIC, {**_ended_message(runs[0].sweep_id, outcomes, ended.stop_reason),
                                              "token": runs[0].token})
        return SweepOutcome(runs=outcomes, host=host, stopped_early=ended.stop_reason is not None,
                            stop_reason=ended.stop_reason, dashboard_url=dashboard_url,
                            wall_s=time.monotonic() - started, dispatch_s=dispatch_s,
                            workers=[worker for bench_host in chosen for worker in bench_host.workers],
                            hosts=[bench_host.host_id for bench_host in chosen], requeued=ended.requeued)


@dataclass
class _Dispatch:
    """One sweep being dispatched: what the serial and the fleet loop share."""

    client: Client
    runs: list[PlannedRun]  # the plan so far; ``more``'s runs are appended
    hosts: list[BenchHost]
    cancel: Event
    progress: SweepProgress
    lock_path: str | None
    continue_on_error: bool
    more: MoreRuns | None
    check: CheckOutcome | None = None
    deadline: float | None = None  # time.monotonic() at which the sweep stops, its running runs cancelled
    _next_cancel_look: float = 0.0
    announced: dict[str, Outcome] = field(default_factory=dict)  # run key -> the outcome its task published
    current: Unit = field(default_factory=list)  # the unit (a run, a lockstep round) the serial loop waits on
    finished: list[Outcome] = field(default_factory=list)  # the serial loop's outcomes so far

    def stop_after(self, outcome: Outcome) -> str | None:
        """Why the sweep stops after ``outcome`` (``_stop_after``, or ``check``'s reason), if it does."""
        return _stop_after(outcome, self.continue_on_error) or (self.check(outcome) if self.check else None)

    def on_event(self, event: tuple[float, dict]) -> None:
        """``PROGRESS_TOPIC`` handler: the progress bars, and the outcome a finished task published
        (``_settled`` takes it instead of fetching the task's result)."""
        _, msg = event
        if (isinstance(msg, dict) and msg.get("event") == "finished" and isinstance(msg.get("outcome"), str)
                and msg.get("sweep_id") == self.runs[0].sweep_id and msg.get("token") == self.runs[0].token):
            with contextlib.suppress(ValueError, TypeError):  # not one: the task's result is fetched instead
                if isinstance(values := json.loads(msg["outcome"]), dict):
                    self.announced[str(msg.get("run_key"))] = Outcome.from_json(values)
        self.progress.handle_event(event)

    def cancel_requested(self) -> bool:
        """Whether the sweep's cancel event is set, asked of the scheduler at most every
        ``CANCEL_POLL_INTERVAL_S`` (a run it cancels comes back ``cancelled`` whenever it is asked)."""
        if time.monotonic() < self._next_cancel_look:
            return False
        self._next_cancel_look = time.monotonic() + CANCEL_POLL_INTERVAL_S
        return self.cancel.is_set()

    def stop_requested(self) -> str | None:
        """Why the sweep stops now, if it does: its deadline passed (the cancel event is set, so the
        running runs stop too) or it was cancelled (``cancel_requested``)."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.cancel.set()
            return DEADLINE_REASON
        return CANCELLED_REASON if self.cancel_requested() else None

    def submit(self, host: BenchHost, unit: Unit) -> Future:
        """One task on ``host``: a run (its outcome) or a lockstep round (the list of its outcomes)."""
        for run in unit:
            self.announced.pop(run.run_key, None)  # an earlier attempt's, never this one's
        if unit[0].lockstep:
            return host.submit(self.client, execute_round, unit, lock_path=self.lock_path,
                               key=task_key(unit[0]).replace("shasweep-", "shasweep-round-", 1))
        return host.submit(self.client, execute_run, unit[0], lock_path=self.lock_path, key=task_key(unit[0]))

    def extend(self) -> bool:
        """Append ``more()``'s runs (to the progress and the board too); whether there were any. A run
        already in ``runs`` may come again (a re-run replaces its files and its outcome)."""
        extra = [replace(run, token=self.runs[0].token) for run in self.more()] if self.more else []
        if not extra:
            return False
        _check_plan(extra)
        if extra[0].sweep_id != self.runs[0].sweep_id:
            raise InvalidInputError(f"more runs of sweep {extra[0].sweep_id}, not of {self.runs[0].sweep_id}")
        self.runs += extra
        self.progress.add_runs(len(extra))
        self.client.log_event(PROGRESS_TOPIC, _planned_message(self.runs))
        return True


@dataclass
class _Ended:
    """How a loop ended: the outcomes of the runs it finished, and why it stopped early, if it did."""

    outcomes: list[Outcome]
    stop_reason: str | None = None
    requeued: list[str] = field(default_factory=list)  # fleet rounds redone after their host died


def _serial_loop(sweep: _Dispatch, reuse: Reuse | None) -> _Ended:
    """One host: every unit (a run, a lockstep round) in plan order, each submitted when the previous
    one ended."""
    target, outcomes = sweep.hosts[0], sweep.finished
    while len(outcomes) < len(sweep.runs) or sweep.extend():
        unit = sweep.current = unit_at(sweep.runs, len(outcomes))
        if (reason := sweep.stop_requested()) is not None:
            return _Ended(outcomes, reason)
        stop_reason, future = None, None
        reused = reuse(unit[0], target.host_id) if reuse is not None and not unit[0].lockstep else None
        got = [reused] if reused is not None else None
        if got is None:
            future = sweep.submit(target, unit)
            try:
                got = _await_unit(sweep, future, unit, target)
            except (KeyboardInterrupt, _DeadlinePassed) as exc:  # Ctrl-C, SIGTERM, SIGHUP; the deadline
                sweep.cancel.set()
                got = _await_cancelled(future, unit)
                stop_reason = DEADLINE_REASON if isinstance(exc, _DeadlinePassed) else interruption(exc)
        for run, outcome in zip(unit, got, strict=True):
            outcomes.append(outcome)
            sweep.progress.run_finished(outcome)
            if future is None or future.status != "finished":  # a finished task published its own
                sweep.client.log_event(PROGRESS_TOPIC, _finished_message(run, outcome))
        if stop_reason is None and (any(o.status == "cancelled" for o in got) or sweep.cancel_requested()):
            stop_reason = CANCELLED_REASON
        reasons = (sweep.stop_after(outcome) for outcome in got)
        stop_reason = stop_reason or next(filter(None, reasons), None)
        if stop_reason is not None:
            return _Ended(outcomes, stop_reason)
    return _Ended(outcomes)


def _scheduler_lost(sweep: _Dispatch, address: str) -> _Ended:
    """How a loop ended whose scheduler went away: said in one line; the unit it waited for failed."""
    reason = scheduler_lost(address, sweep.current[0].run_key if sweep.current else None)
    print(f"shasweep: {reason}", file=sys.stderr, flush=True)
    finished = {outcome.run_key for outcome in sweep.finished}
    lost = [_failed(run, reason) for run in sweep.current if run.run_key not in finished]
    return _Ended([*sweep.finished, *lost], reason)


def _stop_after(outcome: Outcome, continue_on_error: bool) -> str | None:
    """Why the sweep stops after ``outcome``: a run not ok (unless ``continue_on_error``), or always, a
    lockstep round whose bench at some SHA has no control channel (``lockstep.fallback: stop``)."""
    if outcome.status == "ok" or (continue_on_error and not outcome.no_control):
        return None
    where = f" on host {outcome.host_id}" if outcome.host_id else ""
    return (f"run #{outcome.order} ({outcome.side} {outcome.case} repeat {outcome.repeat}) "
            f"{outcome.status}{where}: {outcome.error}")


def _fleet_loop(sweep: _Dispatch) -> _Ended:
    """Several hosts: the plan's rounds (``dispatch.fleet``), then ``more``'s, each whole on the next
    free host."""
    fleet = _run_rounds(sweep, sweep.runs)
    while fleet.stop_reason is None:
        planned = len(sweep.runs)
        if not sweep.extend():
            break
        fleet = fleet.merged(_run_rounds(sweep, sweep.runs[planned:]))
    outcomes = [fleet.outcomes[r.run_key] for r in sweep.runs if r.run_key in fleet.outcomes]
    return _Ended(outcomes, fleet.stop_reason, fleet.requeued)


def _run_rounds(sweep: _Dispatch, runs: list[PlannedRun]) -> FleetResult:
    """The rounds of ``runs`` on the sweep's hosts, with this dispatcher's outcomes and stops."""

    def requeued(round_runs, host_id: str, why: str) -> None:
        print(f"host {host_id}: {why}; its round goes whole to the next free host", file=sys.stderr,
              flush=True)
        keys = [run.run_key for run in round_runs]
        sweep.client.log_event(PROGRESS_TOPIC, {"sweep_id": runs[0].sweep_id, "event": "requeued",
                                                "host_id": host_id, "run_keys": keys, "token": runs[0].token})

    hooks = RoundHooks(
        execute=sweep.submit, settle=lambda future, unit: _settled(future, unit, sweep.announced),
        on_outcome=sweep.progress.run_finished, stop_after=sweep.stop_after,
        stop_requested=sweep.stop_requested, cancel=sweep.cancel.set, on_requeued=requeued)
    return run_rounds(sweep.client, split_rounds(runs), sweep.hosts, hooks)


def _every_outcome(runs: list[PlannedRun], ended: _Ended) -> list[Outcome]:
    """One outcome per run in plan order: a re-run's last, a stand-in for a run never started."""
    finished = {outcome.run_key for outcome in ended.outcomes}
    outcomes = ended.outcomes + [_not_run(run, ended.stop_reason or "") for run in runs
                                 if run.run_key not in finished]
    outcomes = list({outcome.run_key: outcome for outcome in outcomes}.values())
    return sorted(outcomes, key=lambda outcome: outcome.order)


def task_key(run: PlannedRun) -> str:
    """The bench task's Dask key prefix: it names side, case and repeat, so the Dask dashboard tells
    runs apart (``shasweep-new-sac.go2_joystick_flat.mujoco-r2-<run_key>``)."""
    return f"shasweep-{run.side}-{run.case.replace('/', '.')}-r{run.repeat}-{run.run_key}"


def _check_plan(runs: list[PlannedRun]) -> None:
    if not runs:
        raise InvalidInputError("the sweep plan has no runs")
    sweeps = {run.sweep_id for run in runs}
    if len(sweeps) != 1:
        raise InvalidInputError(f"runs of one sweep expected, got sweep ids {sorted(sweeps)}")
    keys = [run.run_key for run in runs]
    if len(set(keys)) != len(keys):
        duplicated = sorted({key for key in keys if keys.count(key) > 1})
        raise InvalidInputError(f"duplicate run_key in the plan: {', '.join(duplicated)}")


def _board_url(client: Client, dashboard_link: str | None) -> str | None:
    """The live ``/shasweep`` board's URL if the scheduler has the board, else Dask's dashboard link."""
    try:
        installed = client.run_on_scheduler(board_installed)
    except Exception:  # noqa: BLE001 - a scheduler without shasweep installed cannot even load the check
        installed = False
    return page_url(dashboard_link) if installed else dashboard_link


def _planned_message(runs: list[PlannedRun]) -> dict:
    """The plan, for the board's queue."""
    return {"sweep_id": runs[0].sweep_id, "event": "planned", "token": runs[0].token,
            "runs": [{"run_key": r.run_key, "order": r.order, "side": r.side, "case": r.case,
                      "repeat": r.repeat} for r in runs]}


def _finished_message(run: PlannedRun, outcome: Outcome) -> dict:
    """The run's outcome as the client got it, for the board: it arrives even when the worker died
    before publishing its own (the board keeps whichever final status came first)."""
    return {"sweep_id": run.sweep_id, "run_key": run.run_key, "order": run.order, "side": run.side,
            "case": run.case, "event": "finished",
            **{k: getattr(outcome, k) for k in ("status", "error", "throughput", "wall_s", "ran_in")}}


def _ended_message(sweep_id: str, outcomes: list[Outcome], stop_reason: str | None) -> dict:
    """Every run's final status (also of runs never started) and why the sweep stopped, if it did."""
    return {"sweep_id": sweep_id, "event": "ended", "stop_reason": stop_reason,
            "outcomes": [{k: getattr(o, k) for k in ("run_key", "order", "side", "case", "status", "error",
                                                     "throughput", "wall_s", "host_id")} for o in outcomes]}


class _DeadlinePassed(Exception):
    """The sweep's deadline passed while it waited for a unit."""


def _await_unit(sweep: _Dispatch, future: Future, unit: Unit, host: BenchHost) -> list[Outcome]:
    """The unit's outcomes; a task error or a vanished bench worker becomes ``failed`` outcomes;
    ``_DeadlinePassed`` when the sweep's deadline comes first."""
    client = sweep.client
    while True:
        left = WORKER_CHECK_INTERVAL_S if sweep.deadline is None else sweep.deadline - time.monotonic()
        if left <= 0:
            raise _DeadlinePassed
        try:
            wait(future, timeout=min(left, WORKER_CHECK_INTERVAL_S))
            break
        except TimeoutError:
            if not host.alive(client):
                future.cancel()
                error = ClusterError(f"the bench worker of host {host.host_id} left the cluster during run "
                                     f"{unit[0].run_key}")
                return [_failed(run, str(error)) for run in unit]
    try:
        return _settled(future, unit, sweep.announced)
    except LostResult as exc:
        return [_failed(run, str(exc)) for run in unit]


def _settled(future: Future, unit: Unit, announced: dict[str, Outcome]) -> list[Outcome]:
    """The outcomes of a done bench future, one per run of the unit: those its task published
    (``announced``), else fetched; a task error becomes ``failed`` outcomes. ``LostResult`` when the
    outcome is gone with its worker (a restricted task is never recomputed elsewhere, so waiting for it
    would hang)."""
    if future.status == "finished":
        if all(run.run_key in announced for run in unit):
            return [announced.pop(run.run_key) for run in unit]
        try:
            found = future.result(timeout=RESULT_FETCH_TIMEOUT_S)
        except TimeoutError:
            raise LostResult(f"the outcome of run {unit[0].run_key} was lost with its bench worker "
                             f"(not fetched within {RESULT_FETCH_TIMEOUT_S:g} s)") from None
        return found if isinstance(found, list) else [found]
    if future.status == "error":
        exc = future.exception()
        return [_failed(run, f"the bench task raised {type(exc).__name__}: {exc}") for run in unit]
    return [_failed(run, f"the bench task ended as {future.status!r}") for run in unit]


def _await_cancelled(future: Future, unit: Unit) -> list[Outcome]:
    """After setting the cancel event: the unit's own (cancelled) outcomes, or stand-ins."""
    try:
        found = future.result(timeout=CANCEL_GRACE_S)
        return found if isinstance(found, list) else [found]
    except Exception as exc:  # noqa: BLE001 - any failure here still means the run was cancelled
        future.cancel()
        return [run.outcome(status="cancelled", error=f"cancelled; the bench task did not confirm: {exc}")
                for run in unit]


def _failed(run: PlannedRun, error: str) -> Outcome:
    return run.outcome(status="failed", error=error)


def _not_run(run: PlannedRun, reason: str) -> Outcome:
    return run.outcome(status="cancelled", error=f"not run: the sweep stopped ({reason})")
