"""What a bench task (one run, ``worker.bench_task``; one lockstep round, ``worker.round_task``) says
to the scheduler and asks of it: progress events on ``contract.PROGRESS_TOPIC`` and the sweep's
cancel ``Event``. Outside a Dask worker (``shasweep try``, tests) publishing does nothing and the
sweep is never cancelled.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from distributed import Event, get_client, get_worker

from orchestrator.contract import (
    PROGRESS_TOPIC,
    Outcome,
    PlannedRun,
    cancel_event_name,
    host_id,
    scheduler_lost,
)
from orchestrator.errors import SchedulerLostError

Publisher = Callable[[dict], None]


def event(run: PlannedRun, name: str, **fields: object) -> dict:
    """A progress message of ``run`` (``waiting``, ``started``, ``step``, ``block``, ``quiet``,
    ``finished``), as the client's progress bars and the live board read it."""
    return {"sweep_id": run.sweep_id, "run_key": run.run_key, "order": run.order,
            "side": run.side, "case": run.case, "host_id": host_id(), "event": name, "token": run.token,
            **fields}


def published(outcome: Outcome) -> str:
    """``outcome`` as a ``finished`` event carries it, for the dispatcher to take instead of fetching the
    task's result: JSON text, so it arrives with the types it was sent with (Dask's event messages
    turn lists into tuples)."""
    return json.dumps(outcome.to_json())


def dask_publisher() -> Publisher:
    """Publish to ``PROGRESS_TOPIC`` via the current Dask worker; a no-op outside one, and once the
    worker is closing (progress is best effort; the run's row is the record)."""
    try:
        worker = get_worker()
    except ValueError:
        return lambda msg: None

    def publish(msg: dict) -> None:
        try:
            worker.log_event(PROGRESS_TOPIC, msg)
        except RuntimeError:  # the worker's event loop is closed
            pass
    return publish


def dask_cancel_check(run: PlannedRun) -> Callable[[], bool]:
    """Whether the sweep's cancel Event is set; always False outside a Dask worker.
    ``SchedulerLostError`` when the scheduler cannot be asked any more."""
    try:
        worker = get_worker()
    except ValueError:
        return lambda: False
    address = worker.scheduler.address
    # the client resolved in the task's thread: the first ask may come from a watcher thread
    cancel = Event(cancel_event_name(run.sweep_id, run.token), client=get_client())

    def is_set() -> bool:
        try:
            return cancel.is_set()
        except Exception as exc:  # noqa: BLE001 - whatever Dask raises once its scheduler is gone
            raise SchedulerLostError(scheduler_lost(address, run.run_key)) from exc
    return is_set


def worker_address() -> str | None:
    """The address of the Dask worker running this task; None outside one."""
    try:
        return get_worker().address
    except ValueError:
        return None
