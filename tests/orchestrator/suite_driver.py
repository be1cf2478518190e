"""A stand-in for the worker's end of the suite channel, for the tests of ``orchestrator.suitekit``:
starts a suite's process with a control FIFO (the worker's own ``ControlChannel``) and a stream, sends
commands and awaits records, as ``worker.suite_round`` does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from orchestrator.worker.control_channel import ControlChannel

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_ARGS = ("-p", "no:benchmark", "-p", "no:codspeed", "-p", "orchestrator.suitekit.pytest_plugin")


class Driver:
    """One suite process and its channel."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
        self.stream = cwd / "stream.jsonl"
        self.channel = ControlChannel(cwd / "control.fifo")
        self.records: list[dict] = []
        self._cursor = 0
        environ = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{cwd}", **(env or {})}
        self.proc = subprocess.Popen(argv, cwd=cwd, env=environ, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)

    @classmethod
    def pytest(cls, cwd: Path, *args: str, env: dict[str, str] | None = None) -> Driver:
        control, stream = cwd / "control.fifo", cwd / "stream.jsonl"
        return cls([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, *PLUGIN_ARGS,
                    f"--shasweep-control={control}", f"--shasweep-stream={stream}"], cwd, env)

    def send(self, **command: object) -> None:
        deadline = time.monotonic() + 10
        while not self.channel.try_send(command):  # the FIFO is full: the process does not read it
            assert time.monotonic() < deadline, f"no room for {command} in the control FIFO"
            time.sleep(0.01)

    def next(self, *kinds: str, timeout_s: float = 60.0) -> dict:
        """The next record of one of ``kinds`` after the last one returned (others are skipped, and
        kept in ``records``)."""
        deadline = time.monotonic() + timeout_s
        while True:
            while self._cursor < len(self.records):
                record = self.records[self._cursor]
                self._cursor += 1
                if record["kind"] in kinds:
                    return record
            exited = self.proc.poll() is not None
            self._read_stream()
            if self._cursor < len(self.records):
                continue
            if exited:
                raise AssertionError(f"exited {self.proc.returncode} awaiting {kinds}: {self.output()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"none of {kinds} within {timeout_s} s; records: {self.records}")
            time.sleep(0.01)

    def _read_stream(self) -> None:
        text = self.stream.read_text() if self.stream.exists() else ""
        complete = text[:text.rfind("\n") + 1].splitlines()
        self.records += [json.loads(line) for line in complete[len(self.records):]]

    def finish(self, timeout_s: float = 60.0) -> int:
        self.send(cmd="end")
        try:
            self.proc.wait(timeout_s)
        finally:
            self.channel.close()
        return self.proc.returncode

    def output(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        return self.proc.stdout.read() if self.proc.stdout else ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.channel.close()
