"""Which bench hosts a sweep runs on: the ``hosts:`` key resolved against the connected workers.

Every bench worker reports its host id (``contract.host_id``: ``SHASWEEP_HOST_ID`` or the
hostname). A host is one bench worker: ``shasweep worker`` refuses to start on a host id a live
worker holds (``worker.host_claim``); where a host still has several (plain ``dask worker``
processes, a ``LocalCluster`` of several), a ``BenchHost`` is its first worker by address, so a
sweep's sides never split across workers pinned to different CPUs. A run is submitted to that
worker only (``workers=``, never elsewhere), so ``hosts: one`` keeps a whole sweep on the host and
worker chosen at start and a fleet keeps each round on one. Whether that worker is still there is
asked of the scheduler before a submit, unless its last task came back within ``ANSWERED_FRESH_S``.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from orchestrator.contract import host_id
from orchestrator.dispatch.cluster import BENCH_RESOURCE, WORKER_WAIT_S, bench_workers, require_bench_worker
from orchestrator.errors import ClusterError, InvalidInputError

if TYPE_CHECKING:
    from distributed import Client, Future

HostsSetting = str | list[str]  # "one", "all" or host ids (validated by orchestrator.spec.load)
ANSWERED_FRESH_S = 1.0  # a worker whose task came back this recently is taken to be there still


@dataclass
class BenchHost:
    """One bench host: its id and the address of the one bench worker its runs go to (re-resolved by
    host id when it is gone, e.g. after a supervisor or nanny restarted the worker at a new address)."""

    host_id: str
    workers: tuple[str, ...]  # one address (a host is one worker), as Dask's ``workers=`` takes it
    # when its last task came back finished (``time.monotonic``), and that task
    answered_at: float = field(default=-math.inf, compare=False, repr=False)
    last: Future | None = field(default=None, compare=False, repr=False)

    def submit(self, client: Client, func: Callable, *args: object, key: str, **kwargs: object) -> Future:
        """Submit ``func`` to this host's bench workers only, under a key no other client can share."""
        workers = (None if self._answered_lately() else self.live_workers(client, wait_s=WORKER_WAIT_S)
                   ) or self.workers
        self.last = client.submit(func, *args, key=f"{key}-{uuid.uuid4().hex[:12]}", pure=False,
                                  resources={BENCH_RESOURCE: 1}, workers=list(workers),
                                  allow_other_workers=False, **kwargs)
        self.last.add_done_callback(self._answered)
        return self.last

    def _answered(self, future: Future) -> None:
        if future.status == "finished":
            self.answered_at = time.monotonic()

    def _answered_lately(self) -> bool:
        """Its last task came back finished (not lost with its worker) within ``ANSWERED_FRESH_S``."""
        return (self.last is not None and self.last.status == "finished"
                and time.monotonic() - self.answered_at < ANSWERED_FRESH_S)

    def alive(self, client: Client) -> bool:
        """Whether a worker this host's runs were submitted to is still in the cluster (a run pinned to
        workers that left never starts, even when the host came back at a new address). A look the
        scheduler does not answer says nothing of the worker: alive until a look says otherwise."""
        try:
            return bool(set(self.workers) & set(bench_workers(client)))
        except ClusterError:
            return True

    def live_workers(self, client: Client, wait_s: float = 0.0) -> tuple[str, ...]:
        """This host's bench workers in the cluster now, looked up again by host id when the known ones
        left, waiting up to ``wait_s`` for one to (re)join."""
        deadline = time.monotonic() + wait_s
        while True:
            present = set(bench_workers(client))
            live = tuple(worker for worker in self.workers if worker in present)
            if not live and present:
                live = connected_hosts(client).get(self.host_id, ())[:1]
                self.workers = live or self.workers
            if live or time.monotonic() >= deadline:
                return live
            time.sleep(0.2)


def connected_hosts(client: Client) -> dict[str, tuple[str, ...]]:
    """Host id -> addresses of its bench workers, for every bench worker connected now."""
    addresses = bench_workers(client)
    if not addresses:
        return {}
    ids = client.run(host_id, workers=addresses, on_error="ignore")
    hosts: dict[str, list[str]] = {}
    for address, ident in sorted(ids.items()):
        hosts.setdefault(str(ident), []).append(address)
    return {ident: tuple(workers) for ident, workers in sorted(hosts.items())}


def choose_hosts(client: Client, setting: HostsSetting, wait_s: float = WORKER_WAIT_S) -> list[BenchHost]:
    """The hosts ``setting`` asks for, waiting up to ``wait_s`` for named hosts to join.

    ``one``: the first connected host (by id), kept for the whole sweep; ``all``: every connected
    host; a list: exactly those. An unknown host id, or ``all`` with no bench worker, raises
    ``InvalidInputError`` naming the connected hosts; ``one`` with no bench worker raises
    ``ClusterError`` (as before fleets existed).
    """
    if setting == "one":
        require_bench_worker(client)
        hosts = connected_hosts(client)
        if not hosts:
            raise ClusterError(f"the bench workers of {client.scheduler.address} left before the sweep began")
        first = min(hosts)
        return [BenchHost(first, hosts[first][:1])]
    wanted = None if setting == "all" else list(setting)
    deadline = time.monotonic() + wait_s
    while True:
        hosts = connected_hosts(client)
        ready = bool(hosts) if wanted is None else set(wanted) <= set(hosts)
        if ready or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    known = ", ".join(hosts) or "none"
    if wanted is None:
        if not hosts:
            raise InvalidInputError(f"no bench worker is connected to {client.scheduler.address} "
                                    f"(connected hosts: {known})", "hosts")
        return [BenchHost(ident, workers[:1]) for ident, workers in hosts.items()]
    unknown = [ident for ident in wanted if ident not in hosts]
    if unknown:
        raise InvalidInputError(f"host {', '.join(map(repr, unknown))} has no bench worker connected to "
                                f"{client.scheduler.address} (connected hosts: {known})", "hosts")
    return [BenchHost(ident, hosts[ident][:1]) for ident in wanted]
