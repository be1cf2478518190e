"""Make a Python benchmark speak shasweep's run protocol, lockstep's control channel included.

    import mylib
    from orchestrator.benchkit import Bench

    bench = Bench("sort", module=mylib, options={"size": 1000})   # --size, --stream, --control, ...
    data = mylib.make_data(bench.params["size"])                   # set-up: before the first step
    bench.run(lambda: mylib.sort(data), items_per_step=bench.params["size"])

``run`` times each call of the step function (``step_ms``; a step that returns ``{phase: ms}`` adds
its own phases) and writes the records of docs/design.md "Run protocol": a header (the case, the
params, and the audit the worker checks: ``git_sha`` of the checkout ``module`` was imported from
and its ``module_file``), one record per step, a summary. Without ``--control`` it runs
``--warmup`` then ``--measure`` steps. With ``--control PATH`` (a lockstep sweep) the header says
``"control": 1`` and the bench waits for the worker's commands on that FIFO: each ``run`` runs
exactly its steps (its ``block`` number on every step record) and ends with a ``block`` record;
``end`` or end-of-file writes the summary over the measured blocks. A failing step writes an
``error`` record and exits 1; bad arguments exit 2.

The standard library only, so a bench pays no import time for it (pyperf's ``Runner`` idea at the
size of one file).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import Any, TextIO

PROTOCOL_VERSION = 1
CONTROL_VERSION = 1
EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")

Step = Callable[[], Mapping[str, float] | None]


def git_sha(path: str) -> str | None:
    """The commit checked out where ``path`` lives, or None outside a git checkout."""
    where = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    found = subprocess.run(["git", "-C", where, "rev-parse", "HEAD"], capture_output=True, text=True)
    return found.stdout.strip() or None if found.returncode == 0 else None


def control_commands(path: str) -> Iterator[tuple[int, int, bool]]:
    """``(block, steps, warmup)`` of each ``run`` command read from the control FIFO at ``path`` (one
    JSON object a line), until ``end`` or end-of-file; blocks while none is waiting."""
    with open(path, encoding="utf-8") as channel:
        for line in channel:
            if not line.strip():
                continue
            command = json.loads(line)
            if not isinstance(command, dict) or command.get("cmd") not in ("run", "end"):
                raise ValueError(f"unknown control command {line.strip()[:200]!r}")
            if command["cmd"] == "end":
                return
            yield int(command["block"]), int(command["steps"]), bool(command.get("warmup", False))


def boolean(text: str) -> bool:
    """A boolean option's value: true/false, yes/no, on/off or 1/0 in any case (``bool("False")`` is
    True, so ``type=bool`` would read a sweep's ``false`` as true)."""
    word = text.strip().lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _option_type(default: object) -> Callable[[str], object]:
    return boolean if isinstance(default, bool) else type(default)


class Bench:
    """One benchmark process: parse the protocol's options, then ``run`` a step function."""

    def __init__(self, case: str | Mapping[str, str], *, module: ModuleType | str | None = None,
                 options: Mapping[str, bool | int | float | str] | None = None,
                 argv: list[str] | None = None) -> None:
        """``case``: a name or the case's parts; ``module``: the code under test (a module or a file;
        default the ``__main__`` script), whose checkout's SHA the header reports; ``options``: the
        bench's own ``--name`` options with their defaults (a sweep's params fill them; a bool one
        takes true/false, yes/no, on/off or 1/0), parsed into ``self.params`` with ``warmup`` and
        ``measure``. Bad arguments exit 2."""
        parser = argparse.ArgumentParser(prog=os.path.basename(sys.argv[0]) or "bench")
        parser.add_argument("--stream", required=True, help="the run protocol's record file")
        parser.add_argument("--control", help="lockstep: the control FIFO whose commands say what to run")
        parser.add_argument("--warmup", type=int, default=2)
        parser.add_argument("--measure", type=int, default=20)
        for name, default in (options or {}).items():
            parser.add_argument(f"--{name.replace('_', '-')}", dest=name, type=_option_type(default),
                                default=default)
        parsed = parser.parse_args(sys.argv[1:] if argv is None else argv)
        if parsed.warmup < 0 or parsed.measure < 1:
            parser.error("--warmup must be >= 0 and --measure >= 1")
        self.stream, self.control = parsed.stream, parsed.control
        self.params = {name: getattr(parsed, name) for name in (*(options or {}), "warmup", "measure")}
        self.case = {"name": case} if isinstance(case, str) else dict(case)
        module_file = getattr(module, "__file__", module) or getattr(sys.modules["__main__"], "__file__", ".")
        self.module_file = os.path.abspath(module_file)

    def run(self, step: Step, *, items_per_step: float = 1.0, exit: bool = True) -> int:
        """Run ``step`` as the protocol asks, writing every record (throughput: ``items_per_step``
        items a step, per second); exits with the code unless ``exit`` is False (then returns it)."""
        with open(self.stream, "w", encoding="utf-8") as stream:
            writer = _Writer(stream, items_per_step)
            try:
                writer.header(self.case, self.params, self.module_file, self.control is not None)
                if self.control is None:
                    writer.block(step, None, self.params["warmup"], warmup=True)
                    writer.block(step, None, self.params["measure"], warmup=False)
                else:
                    for block, steps, warmup in control_commands(self.control):
                        writer.block(step, block, steps, warmup=warmup)
                writer.summary()
                code = EXIT_OK
            except Exception as exc:  # noqa: BLE001 - the bench's own failure becomes its error record
                writer.error(exc)
                print(f"bench failed: {type(exc).__name__}: {exc}", file=sys.stderr)
                code = EXIT_FAILED
        if exit:
            sys.exit(code)
        return code


class _Writer:
    """The records of one run, and the sums its summary needs."""

    def __init__(self, stream: TextIO, items_per_step: float) -> None:
        self.stream, self.items_per_step = stream, items_per_step
        self.next_step, self.measured, self.wall_s = 0, 0, 0.0
        self.phase_sums: dict[str, float] = {}

    def write(self, **record: Any) -> None:
        self.stream.write(json.dumps(record) + "\n")
        self.stream.flush()

    def header(self, case: dict, params: dict, module_file: str, control: bool) -> None:
        extra = {"control": CONTROL_VERSION} if control else {}
        self.write(kind="header", protocol=PROTOCOL_VERSION, case=case, params=params,
                   audit={"module_file": module_file, "git_sha": git_sha(module_file)}, **extra)

    def block(self, step: Step, block: int | None, steps: int, *, warmup: bool) -> None:
        """``steps`` steps; with a ``block`` number (control channel) tagged and closed by a block record."""
        started, t0 = time.time(), time.perf_counter()
        for _ in range(steps):
            s0 = time.perf_counter()
            phases = dict(step() or {})
            phases["step_ms"] = (time.perf_counter() - s0) * 1000.0
            tag = {} if block is None else {"block": block}
            self.write(kind="step", step=self.next_step, warmup=warmup, phases=phases, **tag)
            self.next_step += 1
            if not warmup:
                for name, ms in phases.items():
                    self.phase_sums[name] = self.phase_sums.get(name, 0.0) + ms
        wall_s = time.perf_counter() - t0
        if not warmup:
            self.measured += steps
            self.wall_s += wall_s
        if block is not None:
            self.write(kind="block", block=block, steps=steps, wall_s=wall_s, warmup=warmup,
                       started=started, ended=time.time())

    def summary(self) -> None:
        if not self.measured or self.wall_s <= 0:
            raise ValueError("no measured steps: nothing to summarise")
        self.write(kind="summary", throughput=self.items_per_step * self.measured / self.wall_s,
                   measure_wall_s=self.wall_s,
                   phase_means_ms={name: total / self.measured for name, total in self.phase_sums.items()})

    def error(self, exc: BaseException) -> None:
        tail = "".join(traceback.format_exception(exc)).splitlines()[-20:]
        self.write(kind="error", type=type(exc).__name__, message=str(exc), traceback="\n".join(tail))
