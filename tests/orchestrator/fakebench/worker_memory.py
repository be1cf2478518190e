"""How much a bench task makes the process running it grow (called in a Dask worker by a drill).

The process's peak (``VmHWM``) is reset just before the measured run where the kernel allows it
(``/proc/self/clear_refs``); where it does not, the peak since the process started is used, which
only overstates the growth.
"""

from __future__ import annotations

import gc
from pathlib import Path

from orchestrator.contract import PlannedRun
from orchestrator.worker.bench_task import execute_run


def status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise LookupError(field)


def peak_growth(warmup: PlannedRun, run: PlannedRun) -> dict:
    """Run ``warmup`` (imports, caches, a launch helper: the idle worker's size), then ``run``: its
    outcome, the idle size and the peak during ``run``, in MiB."""
    execute_run(warmup)
    gc.collect()
    idle = status_kib("VmRSS")
    try:
        Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS
    except OSError:
        pass
    outcome = execute_run(run)
    return {"outcome": outcome, "idle_mib": idle / 1024, "peak_mib": status_kib("VmHWM") / 1024}
