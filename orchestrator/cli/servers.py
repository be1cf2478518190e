"""``shasweep scheduler`` and ``shasweep worker``: the two long-running processes of a lab machine.

The scheduler is a Dask scheduler with the shasweep board preloaded (``/shasweep`` on its
dashboard). The worker is one plain Dask ``Worker`` (no Nanny, so the process that was pinned is
the process that runs the bench tasks; a supervisor such as Compose's ``restart`` brings it back):
one thread, resource ``GPU=1``, pinned to ``--cpus`` (every thread of the process; the bench
process inherits it) and to ``--gpu`` (``CUDA_VISIBLE_DEVICES``), with Dask's statistical profiler
off. It claims its host id first (one live worker per host id, ``worker.host_claim``), records its
host on start, logs it, and publishes it to the scheduler's board.

Both bind to 127.0.0.1 unless told otherwise, and stop cleanly on SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.cli.tls_options import add_tls_arguments, tls_files
from orchestrator.contract import host_id
from orchestrator.dispatch.cluster import (
    BENCH_RESOURCE,
    BENCH_SCHEDULER_CONFIG,
    BENCH_WORKER_CONFIG,
    DASHBOARD_PRELOAD,
    LOCALHOST,
    check_scheduler_address,
)
from orchestrator.dispatch.tls import TLSFiles
from orchestrator.errors import InvalidInputError
from orchestrator.worker.host_claim import HostClaim
from orchestrator.worker.hostinfo import collect_host, format_cpus, parse_cpus
from orchestrator.worker.worktrees import shasweep_home

if TYPE_CHECKING:
    from distributed.core import Server

DEFAULT_SCHEDULER_PORT = 8786
DEFAULT_DASHBOARD_ADDRESS = f"{LOCALHOST}:8787"
_GPU_LIST = re.compile(r"[A-Za-z0-9-]+(,[A-Za-z0-9-]+)*\Z")  # indices or GPU UUIDs
_RESOURCE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
CLOSE_TIMEOUT_S = 30.0  # closing a server (a worker tells its scheduler, if it has one)

logger = logging.getLogger("shasweep")


@dataclass(frozen=True)
class SchedulerConfig:
    host: str = LOCALHOST
    port: int = DEFAULT_SCHEDULER_PORT
    dashboard_address: str = DEFAULT_DASHBOARD_ADDRESS
    tls: TLSFiles | None = None
    history: HistoryConfig | None = None  # the results site it serves at /shasweep/history


@dataclass(frozen=True)
class HistoryConfig:
    """A results root and the directory its site is built into (``$SHASWEEP_HOME/site/<digest>``)."""

    results: Path
    site: Path

    def build_command(self) -> list[str]:
        """``shasweep site`` of this root into this directory, as a child process runs it."""
        return [sys.executable, "-m", "orchestrator.cli", "site", "--results", str(self.results),
                "--out", str(self.site)]


@dataclass(frozen=True)
class WorkerConfig:
    scheduler: str
    host: str = LOCALHOST
    port: int = 0
    name: str | None = None
    cpus: frozenset[int] | None = None  # None: keep the inherited affinity
    gpu: str | None = None  # CUDA_VISIBLE_DEVICES; None: leave it as inherited
    resource: str = BENCH_RESOURCE
    dashboard_address: str | None = None  # None: no worker dashboard
    tls: TLSFiles | None = None


def add_server_arguments(parser: argparse.ArgumentParser, default_port: int) -> None:
    """Binding and TLS options shared by both commands."""
    parser.add_argument("--host", default=LOCALHOST, help=f"address to bind (default {LOCALHOST})")
    parser.add_argument("--port", type=int, default=default_port, help=f"port (default {default_port})")
    add_tls_arguments(parser)


def add_scheduler_arguments(parser: argparse.ArgumentParser) -> None:
    add_server_arguments(parser, DEFAULT_SCHEDULER_PORT)
    parser.add_argument("--dashboard-address", default=DEFAULT_DASHBOARD_ADDRESS, metavar="HOST:PORT",
                        help=f"dashboard, with the /shasweep page (default {DEFAULT_DASHBOARD_ADDRESS})")
    parser.add_argument("--results", metavar="DIR",
                        help="serve the results site of this results root at /shasweep/history")


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scheduler", metavar="ADDR", help="the scheduler, tcp://HOST:PORT or tls://HOST:PORT")
    add_server_arguments(parser, 0)
    parser.add_argument("--name", help="worker name (default: its address)")
    parser.add_argument("--cpus", metavar="LIST", help="pin the worker and its bench to these CPUs, e.g. 0-7")
    parser.add_argument("--gpu", metavar="LIST", help="CUDA_VISIBLE_DEVICES of the bench, e.g. 0")
    parser.add_argument("--resource", default=BENCH_RESOURCE, metavar="NAME",
                        help=f"the resource this worker holds one of (default {BENCH_RESOURCE})")
    parser.add_argument("--dashboard-address", metavar="HOST:PORT", help="serve a worker dashboard here")


def scheduler_config(args: argparse.Namespace) -> SchedulerConfig:
    """Validated ``SchedulerConfig`` from parsed arguments; ``InvalidInputError`` names the option."""
    return SchedulerConfig(host=args.host, port=_port(args.port), dashboard_address=args.dashboard_address,
                           tls=tls_files(args), history=_history(args.results))


def _history(results: str | None) -> HistoryConfig | None:
    """Where the site of ``results`` (``--results``) is built; checked as ``shasweep site`` checks."""
    if results is None:
        return None
    import hashlib

    from orchestrator.session.recorded import locate_results
    from orchestrator.session.site import site_directory

    root = locate_results(results)
    if not root.is_dir():
        raise InvalidInputError(f"--results: no results root at {root}")
    digest = hashlib.sha256(str(root).encode()).hexdigest()[:16]
    return HistoryConfig(root, site_directory(root, shasweep_home() / "site" / digest, Path.cwd()))


def worker_config(args: argparse.Namespace) -> WorkerConfig:
    """Validated ``WorkerConfig`` from parsed arguments; ``InvalidInputError`` names the option."""
    tls = tls_files(args)
    scheduler = check_scheduler_address(args.scheduler, "scheduler address")
    if tls is not None and not scheduler.startswith("tls://"):
        raise InvalidInputError(f"with --tls-* options the scheduler address must be tls://, "
                                f"got {scheduler!r}")
    if args.gpu is not None and not _GPU_LIST.match(args.gpu):
        raise InvalidInputError(f"--gpu {args.gpu!r} is not a comma-separated list of GPU indices or UUIDs")
    if not _RESOURCE_NAME.match(args.resource):
        raise InvalidInputError(f"--resource {args.resource!r} is not a resource name like GPU")
    return WorkerConfig(scheduler=scheduler, host=args.host, port=_port(args.port), name=args.name,
                        cpus=_cpus(args.cpus), gpu=args.gpu, resource=args.resource,
                        dashboard_address=args.dashboard_address, tls=tls)


def pin_process(cpus: frozenset[int] | None, gpu: str | None) -> None:
    """Pin every thread of this process to ``cpus`` (threads and children started later inherit it)
    and set ``CUDA_VISIBLE_DEVICES`` to ``gpu``."""
    if cpus is not None:
        for tid in os.listdir("/proc/self/task"):
            os.sched_setaffinity(int(tid), cpus)
    if gpu is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = gpu


def cmd_scheduler(args: argparse.Namespace) -> int:
    """Run the scheduler until SIGINT/SIGTERM."""
    config = scheduler_config(args)
    _configure_logging()
    asyncio.run(serve_scheduler(config))
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    """Pin this process, claim its host id (``worker.host_claim``: refused when a live worker holds
    it), then run the bench worker until SIGINT/SIGTERM or its scheduler goes away."""
    config = worker_config(args)
    _configure_logging()
    pin_process(config.cpus, config.gpu)
    claim = HostClaim(host_id(), _describe_worker(None))
    try:
        asyncio.run(serve_worker(config, claim))
    finally:
        claim.release()
    return 0


def _describe_worker(address: str | None) -> str:
    """``tcp://... (pid 12, CPUs 0-3)``, before it has an address ``pid 12, CPUs 0-3``: how a refused
    worker's error names a worker."""
    me = f"pid {os.getpid()}, CPUs {format_cpus(os.sched_getaffinity(0))}"
    return f"{address} ({me})" if address else me


async def serve_scheduler(config: SchedulerConfig) -> None:
    import dask
    from distributed import Scheduler

    from orchestrator.dashboard import page_url
    from orchestrator.dashboard.history_route import HistorySite, serve_history

    dask.config.set(BENCH_SCHEDULER_CONFIG)
    scheduler = Scheduler(
        host=config.host, port=config.port, protocol="tls" if config.tls else "tcp",
        dashboard_address=config.dashboard_address, dashboard=True, preload=[DASHBOARD_PRELOAD],
        security=config.tls.security("scheduler") if config.tls else None,
    )

    def started(server: Server) -> None:
        dashboard_host = config.dashboard_address.rpartition(":")[0] or LOCALHOST
        board = page_url(f"http://{dashboard_host}:{scheduler.http_server.port}/status")
        history = ""
        if config.history is not None:
            serve_history(scheduler, HistorySite(config.history.site, config.history.build_command()))
            history = f" and results site {board}/history/ of {config.history.results}"
        _say(f"shasweep scheduler at {server.address}, live board {board}{history}")

    await _serve(scheduler, started, "starting")


async def serve_worker(config: WorkerConfig, claim: HostClaim) -> None:
    import dask
    from distributed import Worker

    from orchestrator.dashboard.plugin import HOST_TOPIC

    dask.config.set(BENCH_WORKER_CONFIG)
    host = collect_host().as_dict()
    logger.info("bench host: %s", json.dumps(host, sort_keys=True))
    worker = Worker(
        config.scheduler, nthreads=1, resources={config.resource: 1}, host=config.host, port=config.port,
        name=config.name, protocol="tls" if config.tls else "tcp",
        security=config.tls.security("worker") if config.tls else None,
        dashboard=config.dashboard_address is not None, dashboard_address=config.dashboard_address,
    )

    def started(server: Server) -> None:
        claim.note(_describe_worker(server.address))
        worker.log_event(HOST_TOPIC, {"worker": server.address, "host": host})
        _say(f"shasweep worker at {server.address} (scheduler {config.scheduler}), "
             f"resource {config.resource}=1, CPUs {format_cpus(os.sched_getaffinity(0))}, "
             f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', '(unset)')}")

    await _serve(worker, started, f"connecting to its scheduler at {config.scheduler}")


async def _serve(server: Server, on_started: Callable[[Server], None], starting_what: str) -> None:
    """Start ``server``, call ``on_started``, and run until a signal or the server closes itself. A
    signal ends the start too (``starting_what`` says what it was doing): a worker whose scheduler
    cannot be reached retries for good, and must still stop when told."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    stopping = asyncio.ensure_future(stop.wait())
    starting = asyncio.ensure_future(server.start())
    try:
        await asyncio.wait({stopping, starting}, return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():
            _say(f"shasweep: stopped by a signal while {starting_what}")
            return
        starting.result()  # a failure to start raises here
        on_started(server)
        finished = asyncio.ensure_future(server.finished())
        await asyncio.wait({stopping, finished}, return_when=asyncio.FIRST_COMPLETED)
        finished.cancel()
    finally:
        for task in (stopping, starting):
            task.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(server.close(), CLOSE_TIMEOUT_S)


def _cpus(text: str | None) -> frozenset[int] | None:
    if text is None:
        return None
    try:
        cpus = parse_cpus(text)
    except ValueError as exc:
        raise InvalidInputError(f"--cpus: {exc}") from None
    missing = cpus - os.sched_getaffinity(0)
    if missing:
        raise InvalidInputError(f"--cpus {text}: CPUs {format_cpus(missing)} are not available to this "
                                f"process (available: {format_cpus(os.sched_getaffinity(0))})")
    return frozenset(cpus)


def _port(port: int) -> int:
    if not 0 <= port <= 65535:
        raise InvalidInputError(f"--port {port} is not a port number (0-65535)")
    return port


def _configure_logging() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")


def _say(line: str) -> None:
    print(line, flush=True)
