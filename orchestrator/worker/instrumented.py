"""Processes run under valgrind's callgrind, and what they counted (docs/design.md, "Instruction
counts").

``callgrind_argv`` is the prefix that runs a bench under callgrind, its counts written beside the run's
logs: with ``marks`` collection starts off and the bench side turns it on around its measured calls
and dumps each measured block (``benchkit.callgrind``), else the whole process (and every process it
starts) is counted. ``read_dumps`` parses what callgrind wrote (``marked_dumps``: only the dumps a
bench side asked for, complete before it goes on); ``block_counts`` maps a marked dump
to its block, less the block's fixed part where the bench side counted one. ``fingerprint`` is
what a count depends on besides the CPU: valgrind's version and the interpreter's build, recorded
with every instrumented run.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from orchestrator.worker.bench_env import HASH_SEED_VAR
from orchestrator.worker.hostinfo import python_build

INSTRUMENT_VAR = "SHASWEEP_INSTRUMENT"  # as benchkit.callgrind reads it
CALLGRIND = "callgrind"
OUT_NAME = "callgrind.out"  # in the run's log directory; callgrind adds .<pid> and each dump's .<n>
BLOCK_DUMP = re.compile(r"Client Request: shasweep block (\d+)( fixed)?\s*$")


class InstrumentError(RuntimeError):
    """The instrumented process could not run or gave no count."""


@dataclass(frozen=True)
class Dump:
    """One file callgrind wrote: why (its ``desc`` trigger) and the instructions it holds."""

    trigger: str
    instructions: int


def callgrind_argv(log_dir: Path, marks: bool) -> list[str]:
    """The argv prefix that runs a command under callgrind, its files ``<log_dir>/callgrind.out.<pid>``."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise InstrumentError("valgrind is not installed on the bench host (Debian and Ubuntu: apt-get "
                              "install valgrind)")
    return [valgrind, "--tool=callgrind", f"--callgrind-out-file={log_dir / OUT_NAME}.%p",
            f"--collect-atstart={'no' if marks else 'yes'}", f"--trace-children={'no' if marks else 'yes'}",
            "--dump-line=no", "--dump-instr=no", "--quiet"]


def instrumented_env(env: dict[str, str], chosen_seed: str | None = None) -> dict[str, str]:
    """``env`` for the instrumented process: its bench side marks (``SHASWEEP_INSTRUMENT``), and str
    hashes are the same in every process and round: ``PYTHONHASHSEED`` ``chosen_seed`` (what the sweep's
    ``env`` sets: ``bench_env.chosen_hash_seed``), else 0, not the round's own seed."""
    return {**env, INSTRUMENT_VAR: CALLGRIND, HASH_SEED_VAR: chosen_seed or "0"}


def clear_dumps(log_dir: Path) -> None:
    """Remove what an earlier instrumented process of the run left."""
    for path in log_dir.glob(f"{OUT_NAME}.*"):
        path.unlink(missing_ok=True)


def read_dumps(log_dir: Path) -> list[Dump]:
    """Every file callgrind wrote in ``log_dir``, each process's in the order it wrote them."""
    return [_dump(path) for path in sorted(log_dir.glob(f"{OUT_NAME}.*"), key=_dump_order)]


def marked_dumps(log_dir: Path) -> list[Dump]:
    """The dumps the bench sides asked for (``<pid>.<n>``), not each process's file at its exit: read
    while a process still runs, or after it was killed once its marked blocks were done."""
    return [_dump(path) for path in sorted(log_dir.glob(f"{OUT_NAME}.*.*"), key=_dump_order)]


def _dump_order(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in path.name[len(OUT_NAME) + 1:].split(".") if part.isdigit())


def _dump(path: Path) -> Dump:
    trigger, total = "", None
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if line.startswith("desc: Trigger:"):
                trigger = line[len("desc: Trigger:"):].strip()
            elif line.startswith(("totals:", "summary:")) and total is None:
                total = int(line.split(":", 1)[1].split()[0])
    if total is None:
        raise InstrumentError(f"callgrind's file {path} holds no totals")
    return Dump(trigger, total)


def block_counts(dumps: list[Dump]) -> dict[int, int]:
    """Block number -> the instructions of its measured steps' calls, from the dumps the bench side
    asked for: a block's count less its ``fixed`` dump (as many steps of no calls) where it has one."""
    found: dict[int, int] = {}
    fixed: dict[int, int] = {}
    for dump in dumps:
        if match := BLOCK_DUMP.search(dump.trigger):
            (fixed if match.group(2) else found)[int(match.group(1))] = dump.instructions
    return {block: count - fixed.get(block, 0) for block, count in found.items()}


def whole_count(dumps: list[Dump]) -> int:
    """The instructions of a whole process tree: every process's final file."""
    if not dumps:
        raise InstrumentError("callgrind wrote no file")
    return sum(dump.instructions for dump in dumps)


def fingerprint(python: str) -> dict[str, str | None]:
    """What a count depends on besides the CPU model: ``valgrind`` (its version) and ``interpreter``
    (the build of the interpreter at ``python``)."""
    return {"valgrind": _valgrind_version(), "interpreter": python_build(python)}


@functools.cache
def _valgrind_version() -> str | None:
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    done = subprocess.run([valgrind, "--version"], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)
    return done.stdout.strip()[:80] or None
