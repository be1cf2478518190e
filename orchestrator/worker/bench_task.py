"""The task a bench worker runs for one ``PlannedRun``: lock the host, check out the SHA, run the
bench command, read its stream live, publish progress, and write the run's Parquet files.

Worker-side configuration (environment of the worker process):

* ``SHASWEEP_HOME``: worktrees, logs and the default host lock (default ``~/.cache/shasweep``)
* ``SHASWEEP_HOST_ID``: this bench host's id (default: the hostname), recorded as ``host_id``
* ``SHASWEEP_LOCK_DIR``: where the per-host-id lock lives (default ``$SHASWEEP_HOME/locks``); workers
  of one machine (native or in a container, with the directory bind-mounted) share it
* ``SHASWEEP_LOCK``: the host lock file itself, overriding both
* ``SHASWEEP_BENCH_CPUS``: CPUs the bench is pinned to, e.g. ``0-7`` (default: the worker's affinity)

A worker that dies mid-run takes its bench with it (parent-death signal), but not processes the bench
started; so the holder of the host lock notes its bench's process group next to the lock, and the
next holder first kills whatever is left of that group.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import psutil
from distributed import Event, get_worker
from filelock import FileLock

from orchestrator.contract import PROGRESS_TOPIC, RUN_KEY_VAR, PlannedRun, cancel_event_name
from orchestrator.errors import InvalidInputError, ProtocolError
from orchestrator.store.parquet import RunResult, write_run
from orchestrator.worker.hostinfo import PINNED_THREAD_VARS, collect_host, host_id, parse_cpus
from orchestrator.worker.proc import file_tail, kill_group, launch
from orchestrator.worker.stream import StreamState, follow_lines
from orchestrator.worker.worktrees import WorktreeError, WorktreePool, shasweep_home

STEP_PUBLISH_INTERVAL_S = 0.1
CANCEL_POLL_INTERVAL_S = 0.5

Publisher = Callable[[dict], None]
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def host_lock_path(host: str) -> Path:
    """The lock that keeps benches of host ``host`` apart: one file per host id (see the module docstring)."""
    override = os.environ.get("SHASWEEP_LOCK")
    if override:
        return Path(override)
    directory = Path(os.environ.get("SHASWEEP_LOCK_DIR") or shasweep_home() / "locks")
    return directory / f"{_SAFE_NAME.sub('_', host)}.lock"


def bench_cpus() -> set[int]:
    """CPUs the bench process gets: ``$SHASWEEP_BENCH_CPUS`` or this process's affinity."""
    text = os.environ.get("SHASWEEP_BENCH_CPUS")
    return parse_cpus(text) if text else os.sched_getaffinity(0)


def bench_host_record() -> dict:
    """The host record as the bench sees it (its CPUs); run first, it also warms this module up."""
    return collect_host(cpus=bench_cpus())


def execute_run(run: PlannedRun, *, lock_path: str | None = None) -> dict:
    """Run ``run`` to completion under the host lock; returns its outcome dict.

    Failures of the bench (exit code, protocol, SHA mismatch, timeout) are outcomes, not
    exceptions: they are written to Parquet like any run.
    """
    publish = _dask_publisher()
    cancelled = _dask_cancel_check(run.sweep_id)
    log_dir = shasweep_home() / "logs" / run.sweep_id / run.run_key
    log_dir.mkdir(parents=True, exist_ok=True)
    lock = Path(lock_path) if lock_path else host_lock_path(host_id())
    lock.parent.mkdir(parents=True, exist_ok=True)
    publish(_event(run, "waiting"))
    with FileLock(lock):
        marker = lock.with_name(f"{lock.name}.bench")
        kill_leftover_bench(marker)
        try:
            with WorktreePool().checkout(run.repo, run.sha) as tree:
                result = _run_bench(run, tree, log_dir, publish, cancelled, marker)
        except (WorktreeError, InvalidInputError) as exc:
            now = datetime.now(UTC)
            result = RunResult(status="failed", error=str(exc), started_at=now, ended_at=now,
                               exit_code=None, log_dir=str(log_dir), host=collect_host())
        files = write_run(run, result)
    outcome = {
        "run_key": run.run_key, "order": run.order, "side": run.side, "case": run.case,
        "sha": run.sha, "repeat": run.repeat, "host_id": result.host.get("id"), "status": result.status,
        "error": result.error,
        "throughput": result.throughput, "wall_s": result.wall_s, "exit_code": result.exit_code,
        "started_at": result.started_at.isoformat(), "ended_at": result.ended_at.isoformat(),
        "log_dir": str(log_dir), "runs_file": str(files.runs), "steps_file": str(files.steps),
    }
    publish(_event(run, "finished", status=result.status, error=result.error, throughput=result.throughput))
    return outcome


def render_argv(template: tuple[str, ...] | list[str], values: dict[str, object]) -> list[str]:
    """Fill ``{name}`` placeholders; an unknown one raises InvalidInputError naming it."""
    try:
        return [arg.format_map(values) for arg in template]
    except KeyError as exc:
        raise InvalidInputError(f"bench command uses unknown placeholder {{{exc.args[0]}}}; "
                                f"known: {', '.join(sorted(values))}") from None


def bench_env(run: PlannedRun, tree: Path, threads: int) -> dict[str, str]:
    """The bench's environment: ours, the worktree first on PYTHONPATH, thread variables, the sweep's env."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH", "")) if p)
    env.update({name: str(threads) for name in PINNED_THREAD_VARS})
    env.update({str(k): str(v) for k, v in run.env.items()})
    env[RUN_KEY_VAR] = run.run_key
    return env


def kill_leftover_bench(marker: Path) -> None:
    """SIGKILL what is left of the bench noted in ``marker`` (``PGID RUN_KEY``): the processes of that
    group that carry its run key, so a reused group id never hits a stranger. Then forget it."""
    try:
        pgid, run_key = marker.read_text().split()
    except (FileNotFoundError, ValueError):
        return
    for process in psutil.process_iter():
        try:
            if os.getpgid(process.pid) == int(pgid) and process.environ().get(RUN_KEY_VAR) == run_key:
                process.kill()
        except (psutil.Error, OSError):
            continue
    marker.unlink(missing_ok=True)


def _run_bench(run: PlannedRun, tree: Path, log_dir: Path, publish: Publisher,
               cancelled: Callable[[], bool], marker: Path) -> RunResult:
    cpus = bench_cpus()
    threads = int(run.params.get("threads", 0)) or len(cpus)
    stream_path = log_dir / "stream.jsonl"
    stream_path.unlink(missing_ok=True)
    values = {**run.params, "threads": threads, "python": sys.executable, "stream": str(stream_path),
              "algo": run.algo, "task": run.task, "sim": run.sim, "variant": run.variant}
    argv = render_argv(run.argv_template, values)
    env = bench_env(run, tree, threads)
    host = collect_host(env=env, cpus=cpus)
    (log_dir / "argv.txt").write_text("\n".join(argv) + "\n")
    started_at = datetime.now(UTC)
    proc = launch(argv, cwd=tree, env=env, stdout_path=log_dir / "stdout.log",
                  stderr_path=log_dir / "stderr.log", cpus=cpus)
    marker.write_text(f"{proc.pid} {run.run_key}\n")  # the bench leads its own process group
    publish(_event(run, "started", total=_total_steps(run.params)))
    stop = _StopWatch(proc, deadline=time.monotonic() + run.timeout_s, cancelled=cancelled)
    try:
        state, protocol_error = _follow_stream(run, stream_path, stop, publish)
    finally:
        still_running = proc.poll() is None
        kill_group(proc)
        marker.unlink(missing_ok=True)
    ended_at = datetime.now(UTC)
    status, error = _verdict(state, proc.returncode, still_running, stop, protocol_error, log_dir, run)
    return RunResult(status=status, error=error, started_at=started_at, ended_at=ended_at,
                     exit_code=proc.returncode, log_dir=str(log_dir), host=host,
                     header=state.header, summary=state.summary, steps=state.steps)


def _follow_stream(run: PlannedRun, stream_path: Path, stop: _StopWatch,
                   publish: Publisher) -> tuple[StreamState, str | None]:
    """Read the stream until ``stop`` says so; (records read, protocol error or None)."""
    state = StreamState()
    total = _total_steps(run.params)
    next_publish = 0.0
    try:
        for line in follow_lines(stream_path, stop.should_stop):
            record = state.feed(line)
            kind = record.get("kind") if record else None
            if kind == "header":
                _check_sha(state.header, run.sha)
            elif kind == "step" and (now := time.monotonic()) >= next_publish:
                next_publish = now + STEP_PUBLISH_INTERVAL_S
                step = state.steps[-1]
                publish(_event(run, "step", step=step.step, warmup=step.warmup, done=len(state.steps),
                               total=total, phases=step.phases))
    except ProtocolError as exc:
        return state, str(exc)
    return state, None


class _StopWatch:
    """Decides when to stop following the stream: the bench exited, timed out, or was cancelled."""

    def __init__(self, proc: subprocess.Popen, deadline: float, cancelled: Callable[[], bool]) -> None:
        self.proc, self.deadline, self.cancelled = proc, deadline, cancelled
        self.timed_out = self.was_cancelled = False
        self._next_cancel_check = 0.0

    def should_stop(self) -> bool:
        if self.proc.poll() is not None:
            return True
        now = time.monotonic()
        if now >= self.deadline:
            self.timed_out = True
            return True
        if now >= self._next_cancel_check:
            self._next_cancel_check = now + CANCEL_POLL_INTERVAL_S
            self.was_cancelled = self.cancelled()
        return self.was_cancelled


def _verdict(state: StreamState, exit_code: int, killed: bool, stop: _StopWatch,
             protocol_error: str | None, log_dir: Path, run: PlannedRun) -> tuple[str, str | None]:
    """(status, error) of a finished bench process."""
    if protocol_error is not None:
        return "failed", protocol_error
    if killed and stop.timed_out:
        return "timeout", f"no exit after timeout_s={run.timeout_s:g}; killed its process group"
    if killed and stop.was_cancelled:
        return "cancelled", "sweep cancelled while the bench was running; killed its process group"
    stderr = f"stderr tail:\n{file_tail(log_dir / 'stderr.log')}"
    if exit_code < 0:
        return "failed", f"bench was killed by signal {-exit_code} ({_signal_name(-exit_code)}); {stderr}"
    if exit_code != 0:
        return "failed", f"bench exited with code {exit_code}: {state.error_message() or stderr}"
    if state.error is not None:
        return "failed", f"bench reported an error: {state.error_message()}"
    if state.header is None or state.summary is None:
        missing = "header" if state.header is None else "summary"
        return "failed", f"bench exited 0 without a {missing} record (stream: {log_dir / 'stream.jsonl'})"
    return "ok", None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown signal"


def _check_sha(header: dict | None, sha: str) -> None:
    audit = (header or {}).get("audit") or {}
    loaded = audit.get("git_sha")
    if loaded != sha:
        raise ProtocolError(f"the bench imported code at SHA {loaded} from {audit.get('module_file')}, "
                            f"not the requested SHA {sha}")


def _total_steps(params: dict) -> int | None:
    try:
        return int(params["warmup"]) + int(params["measure"])
    except (KeyError, TypeError, ValueError):
        return None


def _event(run: PlannedRun, event: str, **fields: object) -> dict:
    return {"sweep_id": run.sweep_id, "run_key": run.run_key, "order": run.order,
            "side": run.side, "case": run.case, "host_id": host_id(), "event": event, **fields}


def _dask_publisher() -> Publisher:
    """Publish to ``PROGRESS_TOPIC`` via the current Dask worker; a no-op outside one."""
    try:
        worker = get_worker()
    except ValueError:
        return lambda msg: None
    return lambda msg: worker.log_event(PROGRESS_TOPIC, msg)


def _dask_cancel_check(sweep_id: str) -> Callable[[], bool]:
    """Whether the sweep's cancel Event is set; always False outside a Dask worker."""
    try:
        get_worker()
    except ValueError:
        return lambda: False
    event = Event(cancel_event_name(sweep_id))
    return event.is_set
