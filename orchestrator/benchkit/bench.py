"""``Bench``: one benchmark process that speaks the run protocol (the package docstring shows it).
It parses the bench's arguments, writes the header (the case, the params, and the audit the worker
checks: ``git_sha`` of the checkout ``module`` was imported from and its ``module_file``) and runs the
step function through ``steps.Recorder``: without ``--control``, ``--warmup`` then ``--measure``
steps; with ``--control PATH`` (a lockstep sweep) the header says ``"control": 1`` and each ``run``
command of that FIFO runs exactly its steps, until ``end`` or end-of-file. Then the summary over the
measured steps. A failing step writes an ``error`` record and exits 1; bad arguments exit 2.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from types import ModuleType

from orchestrator.benchkit.channel import RecordWriter, control_commands
from orchestrator.benchkit.steps import Recorder

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


def git_sha(path: str) -> str | None:
    """The commit checked out where ``path`` lives, or None outside a git checkout."""
    where = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    found = subprocess.run(["git", "-C", where, "rev-parse", "HEAD"], capture_output=True, text=True)
    return found.stdout.strip() or None if found.returncode == 0 else None


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
        self._recorder: Recorder | None = None  # while ``run`` runs

    def phase(self, name: str) -> AbstractContextManager[None]:
        """``with bench.phase("parse_ms"):`` times the enclosed part of the running step as that phase
        (ms; the name ends in ``_ms``; entered again in one step, the times add up). Only inside the
        step function ``run`` calls: RuntimeError elsewhere, ValueError for a bad name."""
        if self._recorder is None:
            raise RuntimeError(f"phase {name!r} timed outside a step: time phases inside the step function")
        return self._recorder.phase(name)

    def run(self, step: Callable[[], object], *, items_per_step: float = 1.0, exit: bool = True) -> int:
        """Run ``step`` as the protocol asks, writing every record (throughput: ``items_per_step``
        items a step, per second). What ``step`` returns is ignored unless it is a ``Phases``.
        Exits with the code unless ``exit`` is False (then returns it)."""
        with open(self.stream, "w", encoding="utf-8") as stream:
            writer = RecordWriter(stream)
            self._recorder = recorder = Recorder(writer, items_per_step)
            try:
                writer.header(self.case, self.params, {"module_file": self.module_file,
                                                       "git_sha": git_sha(self.module_file)},
                              control=self.control is not None)
                if self.control is None:
                    recorder.block(step, self.params["warmup"], warmup=True)
                    recorder.block(step, self.params["measure"], warmup=False)
                else:
                    for command in control_commands(self.control):
                        recorder.block(step, command.steps, warmup=command.warmup, command=command)
                recorder.summary()
                code = EXIT_OK
            except Exception as exc:  # noqa: BLE001 - the bench's own failure becomes its error record
                writer.error(exc)
                print(f"bench failed: {type(exc).__name__}: {exc}", file=sys.stderr)
                code = EXIT_FAILED
            finally:
                self._recorder = None
        if exit:
            sys.exit(code)
        return code
