"""The Dask cluster a sweep runs on: an embedded one-worker ``LocalCluster`` or a remote scheduler.

Bench runs go only to workers holding ``BENCH_RESOURCE``; ``require_bench_worker`` fails with a
clear message instead of letting a submitted run wait forever for one.
"""

from __future__ import annotations

import logging
import re
import signal
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from orchestrator.dispatch import cluster_credentials
from orchestrator.errors import ClusterError, InvalidInputError

if TYPE_CHECKING:  # Dask is imported only when connecting, so the CLI starts fast
    from distributed import Client, LocalCluster

BENCH_RESOURCE = "GPU"
DEFAULT_DASHBOARD_PORT = 8787
LOCALHOST = "127.0.0.1"
DASHBOARD_PRELOAD = "orchestrator.dashboard"  # the /shasweep page and its scheduler plugin
WORKER_WAIT_S = 10.0  # how long a sweep waits for a bench worker to join before failing
CONNECT_TIMEOUT_S = 10.0
CLIENT_LOGGER = "distributed.client"  # logs its own reconnection attempts, with tracebacks
_ADDRESS = re.compile(r"[a-z]+://[^\s:/]+:\d+\Z")
_CLIENT_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # the client handles them, not its cluster
# A run that kills its worker is not retried: it is reported failed.
BENCH_SCHEDULER_CONFIG: dict[str, object] = {"distributed.scheduler.allowed-failures": 0}
# No statistical profiler sampling the bench worker's threads while it measures.
BENCH_WORKER_CONFIG: dict[str, object] = {"distributed.worker.profile.enabled": False}


@dataclass
class ClusterConnection:
    """A connected client and where its dashboard is."""

    client: Client
    dashboard_url: str | None


def free_port(start: int, host: str = LOCALHOST, tries: int = 100) -> int:
    """The first port from ``start`` on that ``host`` can bind."""
    for port in range(start, start + tries):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    raise ClusterError(f"no free port for the dashboard in {start}..{start + tries - 1} on {host}")


@contextmanager
def connect(scheduler: str | None, *, dashboard_port: int = DEFAULT_DASHBOARD_PORT,
            security: object | None = None) -> Iterator[ClusterConnection]:
    """Connect to ``scheduler`` (``tcp://`` or, with ``security``, ``tls://HOST:PORT``; an embedded
    cluster of this user's needs no ``security``: ``cluster_credentials``), or start the embedded
    bench cluster."""
    from distributed import Client

    if scheduler is None:
        from orchestrator.worker.quick_exit import QuickExit

        with _embedded_cluster(dashboard_port) as cluster, Client(cluster) as client:
            client.register_plugin(QuickExit())  # its worker process exits when the cluster closes
            yield ClusterConnection(client=client, dashboard_url=cluster.dashboard_link)
        return
    check_scheduler_address(scheduler, "--scheduler")
    security = security or cluster_credentials.security_for(scheduler)
    try:
        client = Client(scheduler, timeout=CONNECT_TIMEOUT_S, security=security)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"cannot reach the Dask scheduler at {scheduler}: {exc}") from None
    with _quiet(CLIENT_LOGGER), client:  # a lost scheduler is said in one line, not a Dask traceback
        yield ClusterConnection(client=client, dashboard_url=client.dashboard_link)


@contextmanager
def _quiet(logger_name: str) -> Iterator[None]:
    """Only critical records of ``logger_name`` inside the block."""
    logger = logging.getLogger(logger_name)
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def check_scheduler_address(address: str, option: str) -> str:
    """``address`` if it looks like ``tcp://HOST:PORT`` with a port one can connect to (1-65535); else
    ``InvalidInputError`` naming ``option``."""
    if not _ADDRESS.match(address):
        raise InvalidInputError(f"{option} {address!r} is not an address like tcp://HOST:PORT")
    port = int(address.rpartition(":")[2])
    if not 1 <= port <= 65535:
        raise InvalidInputError(f"{option} {address!r}: port {port} is not a port number (1-65535)")
    return address


@contextmanager
def _embedded_cluster(dashboard_port: int) -> Iterator[LocalCluster]:
    """One worker process, one thread, resource GPU=1, everything on 127.0.0.1, the shasweep board
    on the dashboard, the settings of ``shasweep scheduler`` and ``shasweep worker``; TLS with
    credentials only this user can read (``cluster_credentials``). The dashboard's pages are built
    when a browser first asks for one (``dashboard.serving``), not at start.
    """
    import dask
    from distributed import LocalCluster

    port = free_port(dashboard_port)
    security = cluster_credentials.new_security()
    with dask.config.set({**BENCH_SCHEDULER_CONFIG, **BENCH_WORKER_CONFIG}):
        with _children_ignore_sigint():
            cluster = LocalCluster(
                n_workers=1, threads_per_worker=1, processes=True, resources={BENCH_RESOURCE: 1},
                host=LOCALHOST, scheduler_port=0, dashboard_address=f"{LOCALHOST}:{port}",
                scheduler_kwargs={"preload": [DASHBOARD_PRELOAD], "dashboard": False},
                silence_logs=logging.ERROR, security=security,
            )
        with cluster:
            credentials = cluster_credentials.write_credentials(security, cluster.scheduler_address)
            try:
                yield cluster
            finally:
                credentials.unlink(missing_ok=True)


@contextmanager
def _children_ignore_sigint() -> Iterator[None]:
    """Processes started inside inherit an ignored SIGINT, SIGTERM and SIGHUP. Ctrl-C in a terminal
    signals the whole foreground process group, and so does the terminal's SIGHUP when it closes: the
    embedded worker process must leave them to the client, which cancels the running bench and records
    the sweep as interrupted (the bench has its own session anyway). The worker still ends with the
    client: it closes the cluster, or the worker notices its parent died."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in _CLIENT_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def cluster_workers(client: Client) -> dict[str, dict]:
    """Address -> identity of every worker the scheduler has now, asked of it directly;
    ``ClusterError`` when it does not answer. (Not ``Client.scheduler_info``: that returns the client's
    shared copy, which the client's own update replaces every 2 s with one that lists no worker, so a
    look there could find none while the worker runs: a loaded host's "bench worker left the
    cluster".)"""
    try:
        identity = client.sync(client.scheduler.identity, n_workers=-1)
    except OSError as exc:
        raise ClusterError(f"the scheduler at {client.scheduler.address} did not list its workers: "
                           f"{exc}") from None
    workers = identity.get("workers") if isinstance(identity, dict) else None
    return dict(workers) if isinstance(workers, dict) else {}


def bench_workers(client: Client, resource: str = BENCH_RESOURCE) -> list[str]:
    """Addresses of the workers that hold ``resource``."""
    workers = cluster_workers(client)
    return sorted(addr for addr, info in workers.items() if info.get("resources", {}).get(resource, 0) >= 1)


def require_bench_worker(client: Client, resource: str = BENCH_RESOURCE) -> list[str]:
    """The bench workers, waiting up to ``WORKER_WAIT_S`` for one to join; ``ClusterError`` if none does."""
    deadline = time.monotonic() + WORKER_WAIT_S
    while True:
        found = bench_workers(client, resource)
        if found or time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    if not found:
        workers = cluster_workers(client)
        seen = ", ".join(f"{addr} resources={info.get('resources', {})}" for addr, info in workers.items())
        raise ClusterError(f"no worker of the scheduler at {client.scheduler.address} holds resource "
                           f"{resource}=1 (workers: {seen or 'none'}); start one with "
                           f"`dask worker ADDRESS --nthreads 1 --resources {resource}=1`")
    return found
