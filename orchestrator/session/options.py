"""How a session dispatches sweeps: the options every verb that runs one shares."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from orchestrator.dispatch.tls import TLSFiles, client_security

if TYPE_CHECKING:
    from distributed import Security

    from orchestrator.store.reuse import Reuse


@dataclass(frozen=True)
class RunOptions:
    """Where and how a sweep's runs are dispatched."""

    scheduler: str | None = None  # tcp:// or tls://HOST:PORT of a Dask scheduler; None: an embedded cluster
    progress: bool = True  # progress bars (the dashboard URL and one line per finished run remain)
    tls: TLSFiles | None = None  # this client's certificate, for a tls:// scheduler (and only for one)
    reuse: Reuse | None = None  # may stand in an earlier run's results for a run (``store.reuse``)
    # where only the bench knows its metrics, stop at its first ok run if it lacks a gate's metric
    # (``dispatch.first_run``); a bisect's steps after the preflight read a lacking one as NO DATA
    check_first_run: bool = True
    # work for a thread of its own while the cluster starts (the CLI imports its report's modules
    # there, when the client mostly waits); it has finished before the first run is dispatched, so it
    # never competes with a bench for the CPUs
    while_connecting: Callable[[], None] | None = None
    # time.monotonic() by which the sweep should be done: no adaptive round starts that the last
    # round's duration says would end later, and a round still running at it is stopped, the sweep
    # ending with the rounds before it (``dispatch.adaptive.cut_short``; ``shasweep ci --budget``);
    # None: no limit
    deadline: float | None = None

    def security(self) -> Security | None:
        """The client's Dask ``Security``; ``InvalidInputError`` when ``tls`` and ``scheduler`` disagree."""
        return client_security(self.tls, self.scheduler)
