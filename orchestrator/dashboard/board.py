"""What the live ``/shasweep`` page and ``shasweep status`` show, built from progress messages.

``SweepBoard`` is fed the messages published on ``contract.PROGRESS_TOPIC`` (by the bench
worker: waiting, quiet, started, step, block, finished; by the dispatcher: planned, ended) and the
bench workers' host records (and, from the dispatcher, ``requeued`` when a fleet redoes a round whose
host died). It keeps the last ``MAX_SWEEPS`` sweeps and, per sweep, the per-step phase
timings of the run that is running (or ran last) and the blocks of the lockstep round that is
running (or ran last): which side ran when. ``snapshot`` returns plain dicts.
"""

from __future__ import annotations

import statistics
import time
from collections import OrderedDict, deque
from dataclasses import asdict, dataclass, field

from orchestrator.contract import STATUSES as FINAL_STATUSES
from orchestrator.dashboard.lanes import host_lanes

MAX_SWEEPS = 20
MAX_STEPS = 5000  # phase samples kept for the current run's chart
MAX_BLOCKS = 2000  # blocks kept of the current lockstep round
CHART_PHASES: tuple[str, ...] = ("physics_ms", "update_state_ms", "reset_done_ms", "d2h_ms")
LIVE_STATUSES: tuple[str, ...] = ("waiting", "running")


@dataclass
class RunView:
    """One run as the board shows it; ``status`` is queued, waiting, running or a final status."""

    run_key: str
    order: int
    side: str
    case: str
    repeat: int | None = None
    status: str = "queued"
    throughput: float | None = None
    error: str | None = None
    done: int = 0  # steps read so far
    total: int | None = None  # warm-up + measured steps
    wall_s: float | None = None  # how long the finished run took
    host_id: str | None = None  # the bench host running or having run it
    started: float | None = None  # board time (epoch s) the bench started / the run finished
    ended: float | None = None
    ran_in: str | None = None  # a lockstep sweep's run: lockstep, or interleaved where its case fell back
    quiet_wait_s: float | None = None  # how long its round waited for a quiet host
    quiet_met: bool | None = None  # whether the host went quiet within the wait


@dataclass
class SweepView:
    """One sweep: its runs by key, the state of the sweep, and the current run's phase samples."""

    sweep_id: str
    state: str = "running"  # running | finished | stopped
    stop_reason: str | None = None
    runs: dict[str, RunView] = field(default_factory=dict)
    current: str | None = None  # run_key whose phases are charted
    steps: deque = field(default_factory=lambda: deque(maxlen=MAX_STEPS))  # (step, warmup, phases)
    blocks: deque = field(default_factory=lambda: deque(maxlen=MAX_BLOCKS))  # the current round's blocks
    round: tuple | None = None  # (case, repeat) of the lockstep round whose blocks are kept
    updated: float = field(default_factory=time.time)
    version: int = 0  # bumped on every change, so a page redraws only when needed
    token: str | None = None  # the sweep's client token: the first message's; others are ignored


class SweepBoard:
    """Progress of the recent sweeps, fed message by message (not thread-safe: one event loop)."""

    def __init__(self) -> None:
        self.sweeps: OrderedDict[str, SweepView] = OrderedDict()
        self.hosts: dict[str, dict] = {}  # bench worker address -> host record

    def record_host(self, msg: dict) -> None:
        """Keep the host record a bench worker published when it started."""
        if isinstance(msg, dict) and isinstance(msg.get("host"), dict):
            self.hosts[str(msg.get("worker"))] = msg["host"]

    def feed(self, msg: dict) -> None:
        """Apply one progress message; messages without a sweep id or event, or whose token is not the
        one the sweep's first message carried, are ignored."""
        if not isinstance(msg, dict) or not msg.get("sweep_id") or not msg.get("event"):
            return
        sweep = self._sweep(str(msg["sweep_id"]))
        token = str(msg.get("token") or "")
        if sweep.token is None:
            sweep.token = token
        elif token != sweep.token:  # not from the sweep's own client or bench task: forged
            return
        event = msg["event"]
        if event == "planned":
            for run in msg.get("runs", []):
                sweep.runs.setdefault(run["run_key"], _run_view(run))
        elif event == "ended":
            self._ended(sweep, msg)
        elif event == "requeued":
            for key in msg.get("run_keys", []):
                if key in sweep.runs:
                    old = sweep.runs[key]
                    sweep.runs[key] = RunView(old.run_key, old.order, old.side, old.case, old.repeat)
        elif msg.get("run_key"):
            self._run_event(sweep, event, msg)
        sweep.updated = time.time()
        sweep.version += 1

    def sweep_ids(self) -> list[str]:
        """Known sweeps, most recently updated first."""
        return [s.sweep_id for s in sorted(self.sweeps.values(), key=lambda s: s.updated, reverse=True)]

    def snapshot(self, sweep_id: str | None = None) -> dict | None:
        """Plain-dict state of ``sweep_id`` (default: the most recently updated sweep); None if unknown."""
        if sweep_id is None:
            ids = self.sweep_ids()
            sweep_id = ids[0] if ids else None
        sweep = self.sweeps.get(sweep_id) if sweep_id else None
        if sweep is None:
            return None
        runs = sorted(sweep.runs.values(), key=lambda r: r.order)
        counts = {status: 0 for status in ("queued", *LIVE_STATUSES, *FINAL_STATUSES)}
        for run in runs:
            counts[run.status] = counts.get(run.status, 0) + 1
        steps = list(sweep.steps)
        phases = {"step": [s for s, _, _ in steps], "warmup": [w for _, w, _ in steps]}
        phases.update({name: [float(p.get(name, 0.0)) for _, _, p in steps] for name in CHART_PHASES})
        return {"sweep_id": sweep.sweep_id, "state": sweep.state, "stop_reason": sweep.stop_reason,
                "runs": [asdict(run) for run in runs], "counts": counts, "current": sweep.current,
                "phases": phases, "updated": sweep.updated, "version": sweep.version,
                "lanes": host_lanes([asdict(run) for run in runs], time.time()),
                "blocks": list(sweep.blocks), "round": list(sweep.round) if sweep.round else None}

    def _sweep(self, sweep_id: str) -> SweepView:
        sweep = self.sweeps.get(sweep_id)
        if sweep is None:
            sweep = self.sweeps[sweep_id] = SweepView(sweep_id)
            while len(self.sweeps) > MAX_SWEEPS:
                self.sweeps.popitem(last=False)
        return sweep

    def _run_event(self, sweep: SweepView, event: str, msg: dict) -> None:
        run = sweep.runs.setdefault(msg["run_key"], _run_view(msg))
        if run.status in FINAL_STATUSES:  # a late message of a run that already ended
            return
        run.host_id = msg.get("host_id") or run.host_id
        if event == "waiting":
            run.status = "waiting"
        elif event == "started":
            run.status, run.total, run.started = "running", msg.get("total"), time.time()
            if sweep.current != run.run_key:
                sweep.current = run.run_key
                sweep.steps.clear()
        elif event == "step":
            run.status, run.done, run.total = "running", int(msg.get("done", run.done)), msg.get("total")
            if sweep.current == run.run_key:
                sweep.steps.append((int(msg.get("step", run.done)), bool(msg.get("warmup")),
                                    dict(msg.get("phases") or {})))
        elif event == "block":
            self._block(sweep, run, msg)
        elif event == "quiet":
            run.quiet_wait_s, run.quiet_met = msg.get("quiet_wait_s"), msg.get("quiet_met")
        elif event == "finished":
            run.status = msg.get("status") or "failed"
            run.error, run.throughput, run.wall_s = msg.get("error"), msg.get("throughput"), msg.get("wall_s")
            run.ended, run.ran_in = time.time(), msg.get("ran_in")
            if run.status == "ok" and run.total:  # ok means every step ran; step messages are sampled
                run.done = run.total

    @staticmethod
    def _block(sweep: SweepView, run: RunView, msg: dict) -> None:
        """A block of a lockstep round ended: keep it (a new round's first block clears the last
        round's) and count its measured steps."""
        round_key = (run.case, run.repeat)
        if sweep.round != round_key:
            sweep.round = round_key
            sweep.blocks.clear()
        kept = {key: msg.get(key) for key in ("block", "cycle", "steps", "started", "ended", "wall_s")}
        kept |= {"side": run.side, "run_key": run.run_key, "warmup": bool(msg.get("warmup"))}
        sweep.blocks.append(kept)
        if not msg.get("warmup") and isinstance(msg.get("steps"), int):
            run.status, run.done = "running", run.done + msg["steps"]

    def _ended(self, sweep: SweepView, msg: dict) -> None:
        """The dispatcher's last word: final statuses (also of runs never started), why it stopped."""
        for outcome in msg.get("outcomes", []):
            run = sweep.runs.setdefault(outcome["run_key"], _run_view(outcome))
            run.status = outcome.get("status") or run.status
            run.error = outcome.get("error", run.error)
            run.throughput = outcome.get("throughput", run.throughput)
            run.wall_s = outcome.get("wall_s", run.wall_s)
        sweep.stop_reason = msg.get("stop_reason")
        sweep.state = "stopped" if sweep.stop_reason else "finished"


def eta_seconds(walls: list[float], runs_left: int) -> float | None:
    """Seconds until a sweep ends, from a run's end: the mean wall time of its finished runs times the
    runs left (None: no run finished yet). The client's sweep bar and the board both use it."""
    return statistics.fmean(walls) * max(runs_left, 0) if walls else None


def _run_view(msg: dict) -> RunView:
    return RunView(run_key=msg["run_key"], order=int(msg.get("order", -1)), side=str(msg.get("side")),
                   case=str(msg.get("case")), repeat=msg.get("repeat"))
