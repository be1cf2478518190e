"""One lockstep round on a bench host: every side's bench process resident, the host given to one at
a time, block by block (docs/design.md, "Run protocol", control channel).

``LockstepRound`` starts the processes one after another: each gets a control FIFO, and the next
starts only when the previous one is parked (its header read and its warm-up block ended, after
which it blocks reading its FIFO). ``block`` hands the host to one process for one block of steps
and waits for that block's end record, so at any instant exactly one bench process runs, start-up
included. ``finish`` ends the processes one at a time (``end``, then their summaries and exits).
``run_blocks`` plays a whole ``BlockPlan``: measured blocks in ``turn_order`` (A B B A ... for two
sides), each preceded by its own warm-up steps. Any failure (a process that exits, answers wrongly
or not within ``timeout_s``, a cancel) raises ``RoundFailed`` naming the side, its SHA and what was
awaited; the caller kills every process of the round (``kill``).

Nothing a bench does can hold the worker past ``timeout_s`` or a cancel: a command is written to the
FIFO without blocking, whole and in order whatever its length (``worker.control_channel``; a bench
that filled its own FIFO and stopped reading it is awaited like any answer), the streams are read a
chunk at a time between the checks, and a parked process that writes to its stream or uses CPU while
another side measures fails the round (``worker.parked``).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from orchestrator.errors import ProtocolError
from orchestrator.worker.control_channel import CommandTooLarge, ControlChannel
from orchestrator.worker.parked import ParkedTime, cpu_ticks, parked_writes
from orchestrator.worker.proc import BenchProcess
from orchestrator.worker.protocols.v1 import check_sha
from orchestrator.worker.protocols.v1_records import StreamState, valid_time
from orchestrator.worker.stream import READ_CHUNK_BYTES, LineTail

CONTROL_VERSION = 1  # the header's "control" value this worker speaks
# How often a waiting round looks at the streams (each look reads a few bytes and polls the processes):
# every POLL_S near an answer's expected time (the block's own last duration), every IDLE_POLL_S
# before, so the worker itself barely runs while a bench measures; the cancel event at most every
# STOP_CHECK_S (it asks the scheduler).
POLL_S = 0.002
IDLE_POLL_S = 0.05
EXPECTED_SHARE = 0.8
STOP_CHECK_S = 0.5
BLOCK_KEYS: tuple[str, ...] = ("block", "steps", "wall_s", "warmup", "started", "ended")  # kept per block


class RoundFailed(Exception):
    """A lockstep round cannot go on; ``side`` is the side at fault (None: not one side's); ``status``
    is what that side's run is: failed, timeout (it did not answer in time) or cancelled;
    ``bad_input``: the sweep's input is at fault (the session ends the sweep with exit 2)."""

    bad_input = False

    def __init__(self, message: str, side: str | None = None, status: str = "failed") -> None:
        super().__init__(message)
        self.side = side
        self.status = status


class NoControlChannel(RoundFailed):
    """A side's bench did not declare the control channel in its header (an older SHA)."""

    bad_input = True


@dataclass(frozen=True)
class BlockPlan:
    """How a round's steps are cut: ``blocks`` measured blocks of ``block_steps`` steps per side, each
    preceded by ``block_warmup`` warm-up steps in the same turn; ``warmup`` steps per process before
    the next process starts."""

    block_steps: int
    blocks: int
    block_warmup: int = 1
    warmup: int = 0


def turn_order(sides: int, blocks: int, first: int = 0) -> list[int]:
    """The side index of every measured block: ``blocks`` cycles in which every side runs once, the
    cycles taken in turn from a Williams square (A B, B A for two sides: A B B A A B B A ...; for an
    odd number of sides the square and its mirror), so that over a whole square every side holds
    every position once and follows every other side equally often. ``first`` (e.g. the round's
    index) rotates who starts."""
    row = [0]
    for i in range(1, sides):  # 0, 1, n-1, 2, n-2, ...
        row.append((i + 1) // 2 if i % 2 else sides - i // 2)
    square = [[(s + shift) % sides for s in row] for shift in range(sides)]
    if sides % 2:
        square += [cycle[::-1] for cycle in square]
    return [(s + first) % sides for cycle in range(blocks) for s in square[cycle % len(square)]]


@dataclass
class Contestant:
    """One side's process in the round: how to start it and what it said."""

    side: str
    sha: str
    start: Callable[[], BenchProcess]  # launches the rendered command (its control FIFO: ``control_path``)
    stream_path: Path
    control_path: Path
    proc: BenchProcess | None = None
    channel: ControlChannel | None = None
    records: StreamState = field(default_factory=StreamState)
    reads: type[StreamState] = StreamState  # what its stream is read as (a suite's: SuiteStreamState)
    cycles: dict[int, int] = field(default_factory=dict)  # measured block number -> its cycle
    ended: bool = False  # told to end and exited: no longer expected alive
    # (steps, warmup, the command's other fields) -> the last such block's wall_s
    durations: dict[tuple[int, bool, tuple], float] = field(default_factory=dict)
    parked: ParkedTime = field(default_factory=ParkedTime)
    parked_at: int | None = None  # its stream's size when it last parked; None: not parked
    _tail: LineTail | None = None
    _next_block: int = 0
    _read_all: bool = False  # the last read reached the end of the stream of a process that had exited

    def name(self) -> str:
        return f"side {self.side!r} (SHA {self.sha[:12]})"

    def running_tree(self) -> int | None:
        """The pid of its launch helper (the root of its process tree) while its process runs, else None."""
        if self.proc is None or self.ended or self.proc.returncode is not None:
            return None
        return self.proc.helper_pid

    def written_while_parked(self) -> int:
        """Bytes appended to its stream since it parked (0 when it is not parked)."""
        if self.parked_at is None or self._tail is None:
            return 0
        return self._tail.size() - self.parked_at

    def block_summaries(self) -> list[dict]:
        """Every block as the runs table keeps it (``analysis.block_pairs``): its record, its ``cycle``
        (None for warm-up blocks), its ``throughput`` (in the summary's units) and its phase means."""
        summary = self.records.summary or {}
        measured = sum(b["steps"] for b in self.records.blocks if not b.get("warmup"))
        window, throughput = summary.get("measure_wall_s"), summary.get("throughput")
        reported = measured and valid_time(window) and valid_time(throughput)
        per_step = throughput * window / measured if reported else None  # items a step: the bench's own unit
        found = []
        for record in self.records.blocks:
            number, steps, wall = record["block"], record["steps"], record["wall_s"]
            sums = self.records.block_phase_sums.get(number, {})
            kept = {key: record.get(key) for key in BLOCK_KEYS}
            found.append(kept | {
                "cycle": self.cycles.get(number),
                "throughput": _finite(per_step * steps / wall) if per_step and steps and wall > 0 else None,
                "phases": {name: _finite(total / steps) for name, total in sums.items()} if steps else {}})
        return found


class LockstepRound:
    """The processes of one round; see the module docstring."""

    def __init__(self, contestants: list[Contestant], timeout_s: float,
                 stopped: Callable[[], bool] = lambda: False,
                 on_block: Callable[[Contestant, dict], None] = lambda contestant, record: None) -> None:
        self.contestants = contestants
        self.timeout_s = timeout_s
        self.stopped = stopped
        self.on_block = on_block  # each block record as it arrives (progress)
        self._running: Contestant | None = None  # the one given the host last

    def open(self, warmup: int) -> None:
        """Start every process in turn; each runs ``warmup`` steps and is parked before the next starts."""
        for contestant in self.contestants:
            self.start(contestant)
            self.block(contestant, warmup, warmup=True)

    def start(self, contestant: Contestant, start: Callable[[], BenchProcess] | None = None) -> None:
        """Start ``contestant``'s process (with ``start``, e.g. a command without the control option,
        instead of its own) and read its header: NoControlChannel when the header does not declare
        the control channel (the process then runs as a plain run)."""
        if contestant.channel is None:
            contestant.channel = ControlChannel(contestant.control_path)
        contestant.stream_path.unlink(missing_ok=True)
        contestant.records = contestant.reads()
        contestant._tail = LineTail(contestant.stream_path)
        self._hand_to(contestant)
        contestant.proc = (start or contestant.start)()
        contestant.parked, contestant.parked_at = ParkedTime(), None
        self._await(contestant, lambda c: c.records.header is not None, "its header")
        self._check_header(contestant)

    def block(self, contestant: Contestant, steps: int, *, warmup: bool, cycle: int | None = None) -> dict:
        """Give the host to ``contestant`` for ``steps`` steps (a measured block of ``cycle``); returns
        its block record."""
        return self.blocks(contestant, [(steps, warmup, cycle)])[0]

    def turn(self, contestant: Contestant, plan: BlockPlan, cycle: int, extra: dict | None = None) -> dict:
        """``contestant``'s measured block of ``cycle`` after its warm-up steps; both commands are sent
        at once, so the process never parks between them. Returns the measured block's record."""
        warm = [(plan.block_warmup, True, None)] if plan.block_warmup else []
        return self.blocks(contestant, [*warm, (plan.block_steps, False, cycle)], extra)[-1]

    def blocks(self, contestant: Contestant, commands: list[tuple[int, bool, int | None]],
               extra: dict | None = None) -> list[dict]:
        """Send ``contestant`` the blocks ``(steps, warmup, cycle)`` in one go (each command with the
        fields of ``extra`` too: a suite's case and calls) and await them all; their records, checked
        against the commands."""
        self._hand_to(contestant)
        numbers = []
        for steps, warmup, cycle in commands:
            number = contestant._next_block
            contestant._next_block += 1
            if cycle is not None:
                contestant.cycles[number] = cycle
            self._send(contestant, f"block {number}", cmd="run", steps=steps, block=number, warmup=warmup,
                       **(extra or {}))
            numbers.append(number)
        work = tuple(sorted((extra or {}).items()))  # what a block of steps does: its duration's key
        expected = sum(contestant.durations.get((steps, warmup, work), 0.0) for steps, warmup, _ in commands)
        last, total = numbers[-1], sum(steps for steps, _, _ in commands)
        which = f"block {last}" if len(numbers) == 1 else f"blocks {numbers[0]}-{last}"
        of_case = f" of case {extra['case']!r}" if extra and "case" in extra else ""
        self._await(contestant, lambda c: len(c.records.blocks) > last,
                    f"the end of {which} ({total} steps){of_case}", expected)
        records = []
        for number, (steps, warmup, _) in zip(numbers, commands, strict=True):
            record = contestant.records.blocks[number]
            if (record.get("block"), record.get("steps"), record.get("warmup")) != (number, steps, warmup):
                raise RoundFailed(f"{contestant.name()} answered block {number} ({steps} steps, warmup "
                                  f"{warmup}) with {json.dumps(record)[:200]}", contestant.side)
            contestant.durations[(steps, warmup, work)] = float(record.get("wall_s") or 0.0)
            self.on_block(contestant, record)
            records.append(record)
        assert contestant._tail is not None
        contestant.parked_at = contestant._tail.offset  # it blocks on its FIFO now: its stream stays as is
        return records

    def play(self, plan: BlockPlan, first: int = 0) -> None:
        """Every measured turn of ``plan`` in ``turn_order`` (``first`` rotates who starts)."""
        sides = len(self.contestants)
        for slot, index in enumerate(turn_order(sides, plan.blocks, first)):
            self.turn(self.contestants[index], plan, cycle=slot // sides)

    def finish(self) -> None:
        """End every process in turn: its summary written and its exit awaited before the next ends."""
        for contestant in self.contestants:
            self.end(contestant)

    def end(self, contestant: Contestant) -> None:
        """Tell ``contestant`` to end; await its summary and its exit (0)."""
        self._hand_to(contestant)
        self._send(contestant, "the end", cmd="end")
        self.await_exit(contestant)

    def await_exit(self, contestant: Contestant) -> None:
        """Await ``contestant``'s exit (after ``end``, or a plain run ending by itself): RoundFailed
        unless it exited 0 with a summary and no error."""
        assert contestant.proc is not None and contestant.channel is not None
        self._await(contestant, lambda c: c.proc.poll() is not None and c._read_all, "its summary and exit",
                    exiting=True)
        contestant.ended = True
        contestant.channel.close()
        problem = self._exit_problem(contestant)
        if problem:
            raise RoundFailed(f"{contestant.name()} {problem}", contestant.side)

    def kill(self) -> None:
        """Kill every process of the round (their whole process groups) and remove the FIFOs."""
        for contestant in self.contestants:
            if contestant.proc is not None:
                contestant.proc.kill_group()
            if contestant.channel is not None:
                contestant.channel.close()
            if contestant._tail is not None:
                contestant._tail.close()

    def command(self, contestant: Contestant, what: str, **command: object) -> None:
        """Give ``contestant`` the host and send it ``command`` (``what``: for messages); its answer is
        the caller's to await (``wait_for``), after which it is parked again (``mark_parked``)."""
        self._hand_to(contestant)
        self._send(contestant, what, **command)

    def wait_for(self, contestant: Contestant, done: Callable[[Contestant], bool], what: str,
                 expected_s: float = 0.0) -> None:
        """Read the streams until ``done(contestant)`` (``what``: the answer awaited, for messages);
        RoundFailed as every wait of the round (an exit, the timeout, a cancel, a parked side working)."""
        self._await(contestant, done, what, expected_s)

    def mark_parked(self, contestant: Contestant) -> None:
        """``contestant`` answered and blocks on its FIFO again: from now its stream stays as it is."""
        assert contestant._tail is not None
        contestant.parked_at = contestant._tail.offset

    # ------------------------------------------------------------------ waiting
    def _await(self, contestant: Contestant, done: Callable[[Contestant], bool], what: str,
               expected_s: float = 0.0, exiting: bool = False) -> None:
        """Read the streams until ``done(contestant)`` (expected after about ``expected_s``); RoundFailed
        when a process exits (other than an ``exiting`` contestant) or a parked one works, the timeout
        passes or the round is stopped. A stream is read a chunk at a time, each followed by the checks."""
        started = time.monotonic()
        deadline, next_stop_check = started + self.timeout_s, started
        while True:
            drained = self._drain(contestant)
            if done(contestant):
                return
            if (early := contestant.records.ended_early(contestant.name())) is not None:
                raise RoundFailed(f"{early} (while the round awaited {what})", contestant.side)
            self._check_others(contestant, what, exiting, deadline)
            if time.monotonic() >= deadline:
                raise RoundFailed(f"{contestant.name()} did not answer within timeout_s={self.timeout_s:g} "
                                  f"(awaited: {what})", contestant.side, "timeout")
            now = time.monotonic()
            if now >= next_stop_check:
                next_stop_check = now + STOP_CHECK_S
                if self.stopped():
                    raise RoundFailed(f"the sweep was cancelled while the round awaited {what} from "
                                      f"{contestant.name()}", status="cancelled")
            if not drained:
                continue  # more to read at once
            early = started + EXPECTED_SHARE * expected_s - now  # time left before the answer is near
            time.sleep(min(IDLE_POLL_S, early) if early > POLL_S else POLL_S)

    def _check_others(self, contestant: Contestant, what: str, exiting: bool, deadline: float) -> None:
        """RoundFailed when another process exited (or ``contestant`` did, unless ``exiting``), or a parked
        one wrote to its stream."""
        for other in self.contestants:
            if other.proc is None or other.ended or (exiting and other is contestant):
                continue
            if other.proc.poll() is None:
                if problem := parked_writes(other.written_while_parked()):
                    raise RoundFailed(f"{other.name()} {problem} while the round awaited {what} from "
                                      f"{contestant.name()}", other.side)
                continue
            while not self._drain(other) and time.monotonic() < deadline:
                pass  # what it said before it exited, as far as the deadline lets it be read
            waiting = "" if other is contestant else f" (parked while {contestant.name()} ran)"
            raise RoundFailed(f"{other.name()} {self._exit_problem(other) or 'exited'}{waiting} "
                              f"while the round awaited {what}", other.side)

    def _send(self, contestant: Contestant, what: str, **command: object) -> None:
        """Write ``command`` to ``contestant``'s FIFO, awaiting room in it as any answer is awaited."""
        assert contestant.channel is not None
        channel = contestant.channel
        try:
            self._await(contestant, lambda c: channel.try_send(command),
                        f"room in its control channel for {what} (it does not read its FIFO)")
        except CommandTooLarge as exc:
            raise RoundFailed(f"{contestant.name()}: {exc}", contestant.side) from None

    def _hand_to(self, running: Contestant) -> None:
        """``running`` is given the host: look at every side's CPU time (``worker.parked``); RoundFailed
        when a side used more than it may while it was parked."""
        trees = {id(c): tree for c in self.contestants if (tree := c.running_tree()) is not None}
        ticks = cpu_ticks(list(trees.values())) if trees else {}
        now = time.monotonic()
        looked = [c for c in self.contestants if id(c) in trees]
        for contestant in looked:
            contestant.parked.look(now, ticks[trees[id(contestant)]], parked=contestant is not self._running)
        self._running, running.parked_at = running, None
        for contestant in looked:
            if problem := contestant.parked.excess():
                raise RoundFailed(f"{contestant.name()} {problem}", contestant.side)

    def _drain(self, contestant: Contestant) -> bool:
        """Feed ``contestant``'s records from at most a chunk of its stream; whether that was all of it."""
        assert contestant._tail is not None
        exited = contestant.proc is not None and contestant.proc.returncode is not None
        try:
            for line in contestant._tail.lines(final=exited, limit=READ_CHUNK_BYTES):
                contestant.records.feed(line)
        except ProtocolError as exc:
            raise RoundFailed(f"{contestant.name()}: {exc}", contestant.side) from None
        contestant._read_all = exited and contestant._tail.drained
        return contestant._tail.drained

    def _check_header(self, contestant: Contestant) -> None:
        header = contestant.records.header or {}
        try:
            check_sha(header, contestant.sha)
        except ProtocolError as exc:
            raise RoundFailed(f"{contestant.name()}: {exc}", contestant.side) from None
        if header.get("control") != CONTROL_VERSION:
            raise NoControlChannel(f"{contestant.name()}: its bench does not declare the control channel "
                                   f"(no \"control\": {CONTROL_VERSION} in its header), so it cannot run "
                                   "in lockstep", contestant.side)

    @staticmethod
    def _exit_problem(contestant: Contestant) -> str | None:
        """Why a process that exited did not end well, or None."""
        code = contestant.proc.returncode if contestant.proc else None
        error = contestant.records.error_message()
        if code not in (0, None):
            return f"exited with code {code}" + (f": {error}" if error else "")
        if error:
            return f"reported an error: {error}"
        if contestant.records.summary is None:
            return "exited without a summary record"
        return None


def run_blocks(round_: LockstepRound, plan: BlockPlan, first: int = 0) -> None:
    """Open the round, play ``plan``'s measured blocks in ``turn_order`` (each after its own warm-up
    steps) and finish it."""
    round_.open(plan.warmup)
    round_.play(plan, first)
    round_.finish()


def _finite(value: float) -> float | None:
    """``value``, or None where a sum of finite numbers overflowed (the blocks are stored as JSON)."""
    return value if math.isfinite(value) else None

