"""A run protocol v1 writer with no dependencies: copy this file next to your bench.

    with ProtocolWriter(stream_path, case="wordcount", params={...}, module=mylib) as out:
        out.step(0, warmup=True, work_ms=1.2)
        out.summary(throughput=1234.5, work_ms=1.1)

Records go to the stream file (never stdout); the header proves which SHA the code came from.
"""

import json
import os
import subprocess
from statistics import fmean


def git_sha(path):
    """The commit checked out where ``path`` lives (the SHA's worktree), or None."""
    where = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    out = subprocess.run(["git", "-C", where, "rev-parse", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or None


class ProtocolWriter:
    def __init__(self, path, case, params, module):
        self._file = open(path, "w", buffering=1)
        self._steps = {}
        module_file = os.path.abspath(module.__file__)
        self._write(kind="header", protocol=1, case={"name": case}, params=params,
                    audit={"module_file": module_file, "git_sha": git_sha(module_file)})

    def step(self, index, warmup=False, **phases_ms):
        if not warmup:
            for name, ms in phases_ms.items():
                self._steps.setdefault(name, []).append(ms)
        self._write(kind="step", step=index, warmup=warmup, phases=phases_ms)

    def summary(self, throughput, measure_wall_s=None):
        means = {name: fmean(values) for name, values in self._steps.items()}
        self._write(kind="summary", throughput=throughput, measure_wall_s=measure_wall_s,
                    phase_means_ms=means)

    def error(self, kind, message):
        self._write(kind="error", type=kind, message=message)

    def _write(self, **record):
        self._file.write(json.dumps(record) + "\n")

    def __enter__(self):
        return self

    def __exit__(self, kind, value, traceback):
        if value is not None:
            self.error(kind.__name__, str(value))
        self._file.close()
