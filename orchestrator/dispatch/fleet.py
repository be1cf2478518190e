"""Rounds across a fleet of bench hosts: parallel across hosts, strictly serial within each.

A round is every cell of the sweep once, in the sweep's order (``split_rounds``). ``run_rounds``
pulls rounds lazily from an iterator, so a caller (an adaptive loop) can add rounds while others
run: whenever a host is free it takes the next round (a re-queued one first) and runs it whole,
one unit after the other (a run, or a lockstep round of one case: ``dispatch.units``), on that
host's workers only. A host never runs two runs of the sweep at
once; the host lock on the worker keeps other sweeps out.

A host whose worker dies mid-round (``KilledWorker``, or its workers left the cluster) loses the
round: the runs it finished are superseded (their files moved out of ``results/runs``, see
``store.parquet.supersede_run``) and the round goes back to the queue whole, for the next free
host, at most ``MAX_ROUND_ATTEMPTS`` times. So the results never hold a round mixed from two hosts.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from distributed import KilledWorker, wait

from orchestrator.contract import Outcome, PlannedRun
from orchestrator.dispatch.host_choice import BenchHost
from orchestrator.dispatch.units import Unit, unit_at
from orchestrator.errors import interruption
from orchestrator.store.parquet import supersede_run

if TYPE_CHECKING:
    from distributed import Client, Future

MAX_ROUND_ATTEMPTS = 3  # a round that killed this many hosts' workers is given up
HOST_CHECK_INTERVAL_S = 2.0
CANCEL_GRACE_S = 30.0

Round = Sequence[PlannedRun]


@dataclass
class RoundHooks:
    """What ``run_rounds`` needs from its caller.

    ``execute`` submits one unit (``dispatch.units``) to one host; ``settle`` turns a done future (not a
    dead worker) into the outcomes of the unit's runs; ``on_outcome`` sees every outcome as it
    arrives; ``stop_after`` gives a reason to stop the sweep after an outcome (or None); ``stop_requested``
    a reason to stop it now (a cancel, its deadline: the running rounds come back cancelled), or None;
    ``cancel`` cancels it (on Ctrl-C); ``on_requeued`` learns a round's runs went back to the queue.
    """

    execute: Callable[[BenchHost, Unit], Future]
    settle: Callable[[Future, Unit], list[Outcome]]
    on_outcome: Callable[[Outcome], None] = lambda outcome: None
    stop_after: Callable[[Outcome], str | None] = lambda outcome: None
    stop_requested: Callable[[], str | None] = lambda: None
    cancel: Callable[[], None] = lambda: None
    on_requeued: Callable[[Round, str, str], None] = lambda runs, host, reason: None  # runs, host id, why


class LostResult(Exception):
    """A finished bench task whose outcome could not be fetched: its worker died holding it."""


@dataclass
class FleetResult:
    """What ``run_rounds`` did: the outcome of every run it finished (superseded ones left out)."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)  # run_key -> outcome, in finishing order
    stop_reason: str | None = None
    requeued: list[str] = field(default_factory=list)  # one line per round that went back to the queue
    rounds_by_host: dict[str, int] = field(default_factory=dict)  # host id -> rounds completed there

    def merged(self, later: FleetResult) -> FleetResult:
        """This result followed by ``later``'s (more rounds of the same sweep): a run's last outcome wins."""
        hosts = dict(self.rounds_by_host)
        for host, rounds in later.rounds_by_host.items():
            hosts[host] = hosts.get(host, 0) + rounds
        return FleetResult(outcomes={**self.outcomes, **later.outcomes}, stop_reason=later.stop_reason,
                           requeued=[*self.requeued, *later.requeued], rounds_by_host=hosts)


@dataclass
class _Job:
    runs: Round
    attempts: int = 0


@dataclass
class _Lane:
    """One host running one round, unit by unit."""

    host: BenchHost
    job: _Job
    done: list[dict] = field(default_factory=list)

    @property
    def next_unit(self) -> Unit | None:
        return unit_at(self.job.runs, len(self.done)) if len(self.done) < len(self.job.runs) else None


def split_rounds(runs: Iterable[PlannedRun]) -> list[list[PlannedRun]]:
    """The plan's rounds (runs of one repeat), each in plan order, in the order of their first run."""
    rounds: dict[int, list[PlannedRun]] = {}
    for run in sorted(runs, key=lambda r: r.order):
        rounds.setdefault(run.repeat, []).append(run)
    return list(rounds.values())


def run_rounds(client: Client, rounds: Iterator[Round] | Iterable[Round], hosts: list[BenchHost],
               hooks: RoundHooks) -> FleetResult:
    """Run ``rounds`` on ``hosts``: each round whole on one host, different rounds at once on different
    hosts, until the rounds run out, the sweep stops (``hooks``), or no host is left."""
    return _Fleet(client, iter(rounds), hosts, hooks).run()


class _Fleet:
    def __init__(self, client: Client, rounds: Iterator[Round], hosts: list[BenchHost],
                 hooks: RoundHooks) -> None:
        self.client, self.rounds, self.hooks = client, rounds, hooks
        self.free: deque[BenchHost] = deque(hosts)
        self.requeue: deque[_Job] = deque()
        self.active: dict[Future, _Lane] = {}
        self.exhausted = False
        self.next_check = time.monotonic() + HOST_CHECK_INTERVAL_S
        self.result = FleetResult()

    def run(self) -> FleetResult:
        try:
            while self._fill() or self.active:
                if self.result.stop_reason is None:
                    self.result.stop_reason = self.hooks.stop_requested()
                try:
                    done = wait(list(self.active), timeout=HOST_CHECK_INTERVAL_S,
                                return_when="FIRST_COMPLETED").done
                except TimeoutError:
                    done = set()
                for future in done:
                    self._finished(future, self.active.pop(future))
                if time.monotonic() >= self.next_check:
                    self.next_check = time.monotonic() + HOST_CHECK_INTERVAL_S
                    self._check_hosts()
        except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP
            self.hooks.cancel()
            self.result.stop_reason = interruption(exc)
            self._drain()
        if self.result.stop_reason is None and (self.requeue or not self.exhausted):
            self.result.stop_reason = "every bench host of the sweep left the cluster"
        return self.result

    def _fill(self) -> bool:
        """Give every free host a round; whether any host is running one."""
        while self.free and self.result.stop_reason is None:
            job = self._next_job()
            if job is None:
                break
            self._submit(_Lane(self.free.popleft(), job))
        return bool(self.active)

    def _next_job(self) -> _Job | None:
        if self.requeue:
            return self.requeue.popleft()
        if self.exhausted:
            return None
        runs = next(self.rounds, None)
        if runs is None:
            self.exhausted = True
            return None
        return _Job(list(runs))

    def _submit(self, lane: _Lane) -> None:
        unit = lane.next_unit
        assert unit is not None
        self.active[self.hooks.execute(lane.host, unit)] = lane

    def _finished(self, future: Future, lane: _Lane) -> None:
        unit = lane.next_unit
        assert unit is not None
        run = unit[0]
        if future.status == "error" and isinstance(future.exception(), KilledWorker):
            self._host_died(lane, f"its bench worker died during run #{run.order} ({run.run_key})")
            return
        try:
            outcomes = self.hooks.settle(future, unit)
        except LostResult:
            self._host_died(lane, f"its bench worker died before run #{run.order}'s outcome was fetched")
            return
        for outcome in outcomes:
            lane.done.append(outcome)
            self.result.outcomes[outcome.run_key] = outcome
            self.hooks.on_outcome(outcome)
            if self.result.stop_reason is None:
                self.result.stop_reason = self.hooks.stop_after(outcome)
        if lane.next_unit is not None and self.result.stop_reason is None:
            self._submit(lane)
            return
        if lane.next_unit is None:
            counts = self.result.rounds_by_host
            counts[lane.host.host_id] = counts.get(lane.host.host_id, 0) + 1
        self.free.append(lane.host)

    def _check_hosts(self) -> None:
        """Lanes whose host has no bench worker left: their round goes back to the queue."""
        for future, lane in list(self.active.items()):
            if not lane.host.alive(self.client):
                del self.active[future]
                future.cancel()
                self._host_died(lane, "its bench workers left the cluster")

    def _host_died(self, lane: _Lane, why: str) -> None:
        """Supersede the lane's finished runs, re-queue its round whole, keep the host if it still has
        a bench worker (another worker of the same host id)."""
        for outcome in lane.done:
            self.result.outcomes.pop(outcome.run_key, None)
        for run in lane.job.runs:  # also the run whose files were written but whose outcome died with it
            supersede_run(run.results_root, run.sweep_id, run.run_key, lane.host.host_id)
        first = lane.job.runs[0]
        line = f"round of repeat {first.repeat} on host {lane.host.host_id}: {why}"
        lane.job.attempts += 1
        if lane.job.attempts < MAX_ROUND_ATTEMPTS:
            self.requeue.appendleft(lane.job)
            self.hooks.on_requeued(lane.job.runs, lane.host.host_id, why)
            line += "; re-queued whole"
        else:
            line += f"; given up after {MAX_ROUND_ATTEMPTS} hosts died running it"
            self.result.stop_reason = self.result.stop_reason or line
        self.result.requeued.append(line)
        if lane.host.alive(self.client):
            self.free.append(lane.host)

    def _drain(self) -> None:
        """After Ctrl-C: the running runs' own (cancelled) outcomes, within a grace period."""
        deadline = time.monotonic() + CANCEL_GRACE_S
        for future, lane in list(self.active.items()):
            try:
                wait(future, timeout=max(deadline - time.monotonic(), 0.1))
            except TimeoutError:
                future.cancel()
                continue
            if not (future.status == "error" and isinstance(future.exception(), KilledWorker)):
                for outcome in self.hooks.settle(future, lane.next_unit):
                    self.result.outcomes[outcome.run_key] = outcome
                    self.hooks.on_outcome(outcome)
        self.active.clear()
