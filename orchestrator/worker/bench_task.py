"""The task a bench worker runs for one ``PlannedRun``: lock the host, check out the SHA, run the
bench command, read its stream live, publish progress, and write the run's Parquet files.

Worker-side configuration (environment of the worker process):

* ``SHASWEEP_HOME``: worktrees and logs (default ``~/.cache/shasweep``)
* ``SHASWEEP_HOST_ID``: this bench host's id (default: the hostname), recorded as ``host_id``
* ``SHASWEEP_LOCK_DIR`` / ``SHASWEEP_LOCK``: the host lock's directory (default ``/tmp/shasweep-locks``,
  one ``<host id>.lock`` each) or file, see ``worker.machine_lock``
* ``SHASWEEP_BENCH_CPUS``: CPUs the bench is pinned to, e.g. ``0-7`` (default: the worker's affinity)

After every run its launch helper has killed every process the bench left under it
(``worker.proc``: the helper is the subreaper of the bench's tree). A worker that dies mid-run takes
its bench and that tree with it (the helper sees its pipe close); should the helper die too, the
processes left carry the run key in their environment, so the holder of the host lock notes its run
key next to the lock, and the next holder first kills every process still carrying that key
(``worker.cleanup``). A run that fails anywhere after dispatch (its logs, the lock, the worktree, the
stream, the results disk) still gets its runs row.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from orchestrator.capabilities import Capability
from orchestrator.contract import HostRecord, Outcome, PlannedRun, RunResult, StepRecord, host_id
from orchestrator.errors import InvalidInputError, RunCancelledError, SchedulerLostError
from orchestrator.store.parquet import remove_run
from orchestrator.worker import module_audit
from orchestrator.worker.bench_env import bench_env, worktree_dirs
from orchestrator.worker.bench_output import failure_detail, log_paths
from orchestrator.worker.cleanup import clear_note, kill_leftover_run, note_running
from orchestrator.worker.disturbance import MeasureWindow, cpu_settings
from orchestrator.worker.hostinfo import collect_host, parse_cpus
from orchestrator.worker.log_trim import logs_in_use, trim_sweep_logs
from orchestrator.worker.machine_lock import Holder, LockDirError, host_lock_path, machine_lock
from orchestrator.worker.prepare import PrepareError, ensure_prepared
from orchestrator.worker.proc import BenchProcess, launch, with_reported_rss
from orchestrator.worker.protocols import BenchReader, OnStep, make_reader
from orchestrator.worker.quiet import QuietWait, wait_for_quiet
from orchestrator.worker.run_audit import audit_result
from orchestrator.worker.run_guard import failed_result, store_result
from orchestrator.worker.safe_files import remove_non_regular
from orchestrator.worker.task_channel import (
    Publisher,
    dask_cancel_check,
    dask_publisher,
    event,
    published,
    worker_address,
)
from orchestrator.worker.worktrees import WorktreeError, WorktreePool, shasweep_home

STEP_PUBLISH_INTERVAL_S = 0.1
CANCEL_POLL_INTERVAL_S = 0.5

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def bench_cpus() -> set[int]:
    """CPUs the bench process gets: ``$SHASWEEP_BENCH_CPUS`` or this process's affinity."""
    text = os.environ.get("SHASWEEP_BENCH_CPUS")
    return parse_cpus(text) if text else os.sched_getaffinity(0)


def round_cpus(run: PlannedRun, suite: bool) -> set[int]:
    """The CPUs every process of ``run``'s lockstep round runs on, the same on every side and in every
    round: the last ``threads`` of ``bench_cpus``; ``threads`` 0: all of them for a bench, one for a
    suite (whose benchmarks are called from one thread). Two processes that take turns on one CPU
    meet the same CPU: on a VM each virtual CPU speeds and slows on its own, and sides left to
    the scheduler's choice of CPU measured ratios 2-3x as spread (docs/design.md, "The control
    channel (lockstep)")."""
    available = sorted(bench_cpus())
    threads = int(run.params.get("threads", 0)) or (1 if suite else len(available))
    return set(available[-threads:])


def bench_host_record() -> dict:
    """The host record as the bench sees it (its CPUs), as the sweep record keeps it; run first, it
    also warms this module up."""
    return collect_host(cpus=bench_cpus()).as_dict()


def execute_run(run: PlannedRun, *, lock_path: str | None = None) -> Outcome:
    """Run ``run`` to completion under the host lock and store it; returns its outcome.

    Failures of the bench (exit code, protocol, SHA mismatch, timeout) are outcomes, not
    exceptions: they are written to Parquet like any run. So is any error on the worker's side. Once
    it is stored, the sweep's logs are trimmed to their cap (``log_trim.trim_sweep_logs``).
    """
    publish = dask_publisher()
    log_dir = run_log_dir(run)
    result = measure_run(run, log_dir, lock_path=lock_path, publish=publish,
                         cancelled=dask_cancel_check(run))
    try:
        return _stored(run, result, log_dir, publish)
    finally:
        trim_sweep_logs(log_dir.parent)


def _stored(run: PlannedRun, result: RunResult, log_dir: Path, publish: Publisher) -> Outcome:
    """Store ``result`` of ``run`` (a suite's cases each as a run), publish it finished; its outcome."""
    if result.cases is not None:
        outcome = store_suite(run, result)
        publish(event(run, "finished", status=outcome.status, error=outcome.error, throughput=None,
                       wall_s=result.wall_s))
        return outcome
    result, files = store_result(run, audit_result(run, result))
    outcome = run.outcome(
        host_id=result.host.id, status=result.status, error=result.error,
        throughput=result.throughput, wall_s=result.wall_s, exit_code=result.exit_code,
        started_at=result.started_at.isoformat(), ended_at=result.ended_at.isoformat(),
        log_dir=str(log_dir), runs_file=str(files.runs), steps_file=str(files.steps),
        reported=tuple(result.reported) if result.status == "ok" else (), lock_wait_s=result.lock_wait_s,
    )
    publish(event(run, "finished", status=result.status, error=result.error, throughput=result.throughput,
                   wall_s=result.wall_s, outcome=published(outcome)))
    return outcome


def run_log_dir(run: PlannedRun) -> Path:
    """Where a run's bench logs go: ``$SHASWEEP_HOME/logs/<sweep>/<run_key>/``."""
    return shasweep_home() / "logs" / run.sweep_id / run.run_key


def measure_run(run: PlannedRun, log_dir: Path, *, lock_path: str | None = None,
                publish: Publisher = lambda msg: None, cancelled: Callable[[], bool] = lambda: False
                ) -> RunResult:
    """Lock the host, check out the SHA, run the bench and read it: the run's result, neither audited
    nor stored yet (``execute_run`` does both; ``shasweep try`` audits and only shows it). Whatever
    fails on the worker's side is a failed result, never an exception."""
    publish(event(run, "waiting"))
    try:
        lock = Path(lock_path) if lock_path else host_lock_path(host_id())
        return _locked_run(run, log_dir, lock, publish, cancelled)
    except RunCancelledError as exc:
        return replace(failed_result(str(exc), log_dir), status="cancelled")
    except LockDirError as exc:  # the host's set-up, not the bench: exit 2 where the run was tried
        return replace(failed_result(str(exc), log_dir), bad_input=str(exc))
    except (WorktreeError, InvalidInputError, PrepareError, SchedulerLostError) as exc:
        return failed_result(str(exc), log_dir)
    except Exception as exc:  # noqa: BLE001 - whatever broke, the run gets its row
        return failed_result(f"the bench worker failed: {type(exc).__name__}: {exc}", log_dir)


def lock_waiter(runs: list[PlannedRun], publish: Publisher) -> Callable[[Holder | None], None]:
    """What a run (or a lockstep round's runs) publishes when it finds the host lock taken: who holds
    it (``waiting for host H: held by sweep X (pid P) for 23 s`` on the client)."""
    def waiting(holder: Holder | None) -> None:
        held = holder.describe() if holder else "held by a process that left no note"
        for run in runs:
            publish(event(run, "waiting", holder=held))
    return waiting


def store_suite(run: PlannedRun, result: RunResult, **fields: object) -> Outcome:
    """Store each case of a suite run as a run of its own (and drop the suite run's own row a failed
    attempt left); the suite run's outcome (with ``fields``): ok when every case is, else the first
    case's failure."""
    stored = [store_result(case_run, audit_result(case_run, case_result))[0]
              for case_run, case_result in result.cases or []]
    remove_run(run)
    failed = next((r for r in stored if r.status != "ok"), None)
    return run.outcome(
        host_id=result.host.id, status=failed.status if failed else "ok",
        error=failed.error if failed else None, wall_s=result.wall_s, exit_code=result.exit_code,
        started_at=result.started_at.isoformat(), ended_at=result.ended_at.isoformat(),
        log_dir=result.log_dir, cases=len(stored), **fields)


def _locked_run(run: PlannedRun, log_dir: Path, lock: Path, publish: Publisher,
                cancelled: Callable[[], bool]) -> RunResult:
    asked = time.monotonic()
    with (logs_in_use(log_dir),  # gc leaves the logs alone
          machine_lock(lock, run.sweep_id, run.run_key, on_wait=lock_waiter([run], publish),
                       cancelled=cancelled) as marker):
        waited_s = time.monotonic() - asked
        kill_leftover_run(marker)
        remove_non_regular(log_dir)  # what an earlier bench of this run key left where we write
        quiet = wait_quiet([run], publish, cancelled)
        with WorktreePool().checkout(run.repo, run.sha, checked_for=run.sweep_id,
                                     submodules=run.submodules) as tree:
            result = _run_bench(run, tree, log_dir, publish, cancelled, marker)
    return with_waits(result, waited_s, quiet)


def with_waits(result: RunResult, waited_s: float, quiet: QuietWait | None) -> RunResult:
    """``result`` with how long it waited for the host lock (on each of a suite's case rows too) and
    for a quiet host."""
    cases = [(case, replace(done, lock_wait_s=waited_s)) for case, done in result.cases or []]
    return replace(result, lock_wait_s=waited_s, quiet=quiet,
                   cases=cases if result.cases is not None else None)


def wait_quiet(runs: list[PlannedRun], publish: Publisher, cancelled: Callable[[], bool]) -> QuietWait | None:
    """Before ``runs`` (one run, or a lockstep round), holding the host lock: wait for a quiet host when
    the sweep has ``quiet:`` (``worker.quiet``), and tell the board how the wait ended."""
    if runs[0].quiet is None:
        return None
    wait = wait_for_quiet(runs[0].quiet, stopped=cancelled)
    for run in runs:
        publish(event(run, "quiet", **wait.columns()))
    return wait


def render_argv(template: tuple[str, ...] | list[str], values: dict[str, object]) -> list[str]:
    """Fill ``{name}`` placeholders; an unknown one raises InvalidInputError naming it."""
    try:
        return [arg.format_map(values) for arg in template]
    except KeyError as exc:
        raise InvalidInputError(f"bench command uses unknown placeholder {{{exc.args[0]}}}; "
                                f"known: {', '.join(sorted(values))}") from None


def placeholder_values(run: PlannedRun, tree: Path, reader: BenchReader, threads: int) -> dict[str, object]:
    """What the command's placeholders stand for in this run (docs/sweep-yaml.md, "The command and its
    placeholders")."""
    values: dict[str, object] = {
        **run.params, "threads": threads, "python": run.python or sys.executable,
        "stream": str(reader.stream_path), "result": str(reader.result_path), "worktree": str(tree),
        "sweep_dir": run.sweep_dir or run.repo,
        "case": run.case, "variant": run.variant}
    values |= {name: part for name in ("algo", "task", "sim") if (part := getattr(run, name)) is not None}
    return values


@dataclass
class BenchSetup:
    """One run made ready to start: its rendered argv and environment, its worktree prepared, the
    import audit installed, the host record taken; ``start`` launches one process of it."""

    run: PlannedRun
    tree: Path
    log_dir: Path
    argv: list[str]
    env: dict[str, str]
    cpus: set[int]
    pythonpath: list[str]
    host: HostRecord
    audited: tuple[str, ...]
    side_file: Path | None
    values: dict[str, object]  # what the placeholders stood for
    procs: list[BenchProcess] = field(default_factory=list)

    def start(self, argv: list[str] | None = None, logs: str = "", env: dict[str, str] | None = None
              ) -> BenchProcess:
        """Launch one process of the run (``argv``: another command than the run's own; ``logs``: a
        name for its own log files, ``stdout-<logs>.log``; ``env``: another environment)."""
        suffix = f"-{logs}" if logs else ""
        proc = launch(argv or self.argv, cwd=self.tree, env=env or self.env,
                      stdout_path=self.log_dir / f"stdout{suffix}.log",
                      stderr_path=self.log_dir / f"stderr{suffix}.log", cpus=self.cpus)
        self.procs.append(proc)
        return proc

    def audit_modules(self) -> dict | None:
        """What the import audit recorded (None without one)."""
        return module_audit.read_modules(self.side_file, self.audited) if self.side_file else None


def set_up(run: PlannedRun, tree: Path, log_dir: Path, reader: BenchReader,
           extra: dict[str, object] | None = None, cancelled: Callable[[], bool] = lambda: False,
           cpus: set[int] | None = None) -> BenchSetup:
    """Render ``run``'s command (``extra``: more placeholders, e.g. lockstep's ``{control}``) and get
    everything but the process ready (see ``BenchSetup``); ``prepare`` stops when ``cancelled()``.
    ``cpus``: the CPUs its processes run on (None: ``bench_cpus``)."""
    cpus = bench_cpus() if cpus is None else cpus
    threads = int(run.params.get("threads", 0)) or len(cpus)
    values = placeholder_values(run, tree, reader, threads) | (extra or {})
    argv = render_argv(run.argv_template, values)
    env = bench_env(run, tree, threads)
    pythonpath = worktree_dirs(tree, run.pythonpath)
    ensure_prepared([render_argv(a, values) for a in run.prepare], tree, env, run.timeout_s, cancelled)
    audited = module_audit.modules_to_audit(run, pythonpath)
    side_file = module_audit.install(log_dir, audited, env) if audited else None
    host = replace(collect_host(env=env, cpus=cpus, python=run.python), **cpu_settings(cpus),
                   worker=worker_address())
    (log_dir / "argv.txt").write_text("\n".join(argv) + "\n")
    return BenchSetup(run, tree, log_dir, argv, env, cpus, pythonpath, host, tuple(audited), side_file,
                      values)


def _run_bench(run: PlannedRun, tree: Path, log_dir: Path, publish: Publisher,
               cancelled: Callable[[], bool], marker: Path) -> RunResult:
    reader = make_reader(run, log_dir)
    setup = set_up(run, tree, log_dir, reader, cancelled=cancelled)
    window = MeasureWindow()
    reader.on_record = window.observe
    started_at, began = datetime.now(UTC), time.monotonic()
    note_running(marker, run.run_key)
    procs = setup.procs
    start = setup.start

    publish(event(run, "started", total=reader.total_steps))
    stop = _StopWatch(deadline=time.monotonic() + run.timeout_s, cancelled=cancelled)
    try:
        protocol_error = reader.execute(start, stop, _step_publisher(run, publish, reader.total_steps))
    except BaseException:
        reader.steps.discard()  # the run gets a failed row without steps, and no spool is left behind
        raise
    finally:
        still_running = bool(procs) and procs[-1].poll() is None
        for proc in procs:
            proc.kill_group()  # and its helper, everything under it
        clear_note(marker)
    window.finish()
    ended_at, elapsed_s = datetime.now(UTC), time.monotonic() - began
    exit_code = procs[-1].returncode if procs else None
    status, error = _verdict(reader, exit_code, still_running, stop, protocol_error, log_dir, run, tree)
    host = replace(setup.host, **window.columns(reader.steps))
    # a live stream keeps what it said even when the run failed; the other protocols keep no number of
    # a failed run
    kept = status == "ok" or reader.has(Capability.LIVE_STREAM)
    if not kept:
        reader.steps.discard()
    result = RunResult(status=status, error=error, started_at=started_at, ended_at=ended_at,
                       elapsed_s=elapsed_s, exit_code=exit_code, log_dir=str(log_dir), host=host,
                       header=reader.header, summary=reader.summary if kept else None, steps=reader.steps,
                       usage=with_reported_rss(procs[-1], reader.reported_peak_rss_mib()) if procs else None,
                       pythonpath=setup.pythonpath, worktree=str(tree.resolve()),
                       audit_modules=setup.audit_modules(), bad_input=reader.bad_input)
    result = reader.with_cases(result) if run.suite_cases and status == "ok" else result
    if run.instrument is None:
        return result
    from orchestrator.worker.instrumented_run import with_instructions  # it builds on this module

    return with_instructions(run, setup, reader, result, cancelled)


def _step_publisher(run: PlannedRun, publish: Publisher, total: int | None) -> OnStep:
    """Publish a step at most every ``STEP_PUBLISH_INTERVAL_S``."""
    next_publish = 0.0

    def on_step(step: StepRecord, done: int) -> None:
        nonlocal next_publish
        if (now := time.monotonic()) >= next_publish:
            next_publish = now + STEP_PUBLISH_INTERVAL_S
            publish(event(run, "step", step=step.step, warmup=step.warmup, done=done, total=total,
                           phases=step.phases))
    return on_step


class _StopWatch:
    """Decides when to stop waiting for the bench: it exited, timed out, was cancelled, or the
    scheduler that could cancel it is gone (``lost``: why)."""

    def __init__(self, deadline: float, cancelled: Callable[[], bool]) -> None:
        self.deadline, self.cancelled = deadline, cancelled
        self.timed_out = self.was_cancelled = False
        self.lost: str | None = None
        # not asked at once: a run was dispatched after the client's own look at the cancel event, so a
        # bench shorter than this costs no round trip to the scheduler
        self._next_cancel_check = time.monotonic() + CANCEL_POLL_INTERVAL_S

    def should_stop(self, proc: BenchProcess) -> bool:
        return proc.poll() is not None or self.expired()

    def expired(self) -> bool:
        """Past the deadline, or the sweep was cancelled (checked at most every CANCEL_POLL_INTERVAL_S)."""
        now = time.monotonic()
        if now >= self.deadline:
            self.timed_out = True
            return True
        if now >= self._next_cancel_check and self.lost is None:
            self._next_cancel_check = now + CANCEL_POLL_INTERVAL_S
            try:
                self.was_cancelled = self.cancelled()
            except SchedulerLostError as exc:
                self.lost = str(exc)
        return self.was_cancelled or self.lost is not None


def _verdict(reader: BenchReader, exit_code: int | None, killed: bool, stop: _StopWatch,
             protocol_error: str | None, log_dir: Path, run: PlannedRun, tree: Path
             ) -> tuple[str, str | None]:
    """(status, error) of a finished bench run; every error names the log files, and a failure of the
    bench quotes the end of its output (``worker.bench_output``)."""
    def detail(headline: str, quote_last: bool = True) -> str:
        return failure_detail(headline, log_dir, tree, run.pythonpath, quote_last=quote_last)

    if protocol_error is not None:
        return "failed", detail(protocol_error, quote_last=False)
    if stop.lost is not None:
        return "failed", detail(f"{stop.lost}; killed the bench's process group", quote_last=False)
    unfinished = killed or exit_code is None or exit_code < 0 or reader.abandoned
    if unfinished and stop.timed_out:
        what = ("no exit" if killed or not reader.abandoned
                else "its output not read to its end (written faster than it could be read)")
        return "timeout", detail(f"{what} after timeout_s={run.timeout_s:g}; killed its process group",
                                 quote_last=False)
    if unfinished and stop.was_cancelled:
        return "cancelled", (f"sweep cancelled while the bench was running; killed its process group "
                             f"({log_paths(log_dir)})")
    if exit_code is None:
        return "failed", detail("the bench command never started")
    if exit_code < 0:
        return "failed", detail(f"bench was killed by signal {-exit_code} ({_signal_name(-exit_code)})")
    if exit_code != 0:
        reported = reader.bench_error()
        if reported:
            return "failed", detail(f"bench exited with code {exit_code}: {reported}", quote_last=False)
        return "failed", detail(f"bench exited with code {exit_code}")
    problem = reader.complete()
    return ("failed", detail(problem, quote_last=False)) if problem else ("ok", None)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown signal"
