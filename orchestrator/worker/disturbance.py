"""What else the host did while a bench measured: CPU steal and load over the measured window, the
run's step-time variability, and the host's CPU frequency settings (``host_*`` run columns).

``MeasureWindow`` is made just before the bench starts (a first sample) and fed every stream record
as the worker reads it: it samples ``/proc/stat`` and ``/proc/loadavg`` again as late as it can
before the first measured step (at the header, then after every warm-up step) and at the summary.
A bench so short that the worker read all its records at once gets its whole run as window.
``cpu_settings`` reads the frequency governor, turbo and isolated CPUs from ``/sys``;
whatever a host does not expose is None. ``analysis.disturbed`` decides from these which runs a
disturbance hit.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from orchestrator.store.step_log import StepLog

PROC = Path("/proc")
SYS_CPU = Path("/sys/devices/system/cpu")


@dataclass(frozen=True)
class CpuSample:
    """Cumulative CPU ticks of the whole host (``/proc/stat``) and the 1-minute load average."""

    steal: int
    total: int
    load: float | None
    idle: int = 0  # idle and iowait ticks


def cpu_sample(proc: Path = PROC) -> CpuSample | None:
    """The host's CPU counters now; None where ``/proc`` does not have them."""
    try:
        fields = (proc / "stat").read_text().splitlines()[0].split()
        ticks = [int(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
    except (OSError, IndexError, ValueError):
        return None
    try:
        load: float | None = float((proc / "loadavg").read_text().split()[0])
    except (OSError, IndexError, ValueError):
        load = None
    return CpuSample(steal=ticks[7] if len(ticks) > 7 else 0, total=sum(ticks), load=load,
                     idle=ticks[3] + (ticks[4] if len(ticks) > 4 else 0))


class MeasureWindow:
    """Host samples around a bench's measured steps, fed the stream's records in order."""

    def __init__(self, proc: Path = PROC) -> None:
        self.proc = proc
        self.start = cpu_sample(proc)
        self.before: CpuSample | None = None
        self.after: CpuSample | None = None
        self._measuring = False

    def observe(self, record: dict | None) -> None:
        kind = (record or {}).get("kind")
        if kind == "header" or (kind == "step" and record.get("warmup") and not self._measuring):
            self.begin()
        elif kind == "step":
            self._measuring = True
        elif kind == "summary":
            self.end()

    def begin(self) -> None:
        """The measured steps start now (a lockstep round: every process parked)."""
        self.before = cpu_sample(self.proc)

    def end(self) -> None:
        """The measured steps are over."""
        self.after = cpu_sample(self.proc)

    def finish(self) -> None:
        """The run ended: the closing sample, unless a summary record already took it (a protocol
        without a stream has no records, so its window is the whole run)."""
        if self.after is None:
            self.after = cpu_sample(self.proc)

    def columns(self, steps: StepLog) -> dict[str, float | None]:
        """``steal_frac``, ``load_before``, ``load_after`` and ``step_cv`` (``StepLog.step_cv``; None
        where unknown)."""
        before, after, steal = self.before, self.after, None
        if after and not (before and after.total > before.total):
            before = self.start  # no tick between the samples: all records were read at once
        if before and after and after.total > before.total:
            steal = (after.steal - before.steal) / (after.total - before.total)
        return {"steal_frac": steal, "load_before": before.load if before else None,
                "load_after": after.load if after else None, "step_cv": steps.step_cv()}


def cpu_settings(cpus: set[int], sys_cpu: Path = SYS_CPU) -> dict[str, str | None]:
    """``cpu_governor`` (of the bench's CPUs, comma-joined when they differ), ``cpu_turbo``
    (``on``/``off``) and ``isolated_cpus`` (the kernel's ``isolcpus`` list, ``""`` for none)."""
    governors = sorted({g for cpu in cpus
                        if (g := _read(sys_cpu / f"cpu{cpu}" / "cpufreq" / "scaling_governor"))})
    no_turbo = _read(sys_cpu / "intel_pstate" / "no_turbo")  # Intel: 1 = turbo off
    boost = _read(sys_cpu / "cpufreq" / "boost")  # acpi-cpufreq / AMD: 1 = boost on
    if no_turbo is not None:
        turbo = {"0": "on", "1": "off"}.get(no_turbo)
    else:
        turbo = {"1": "on", "0": "off"}.get(boost) if boost is not None else None
    return {"cpu_governor": ",".join(governors) or None, "cpu_turbo": turbo,
            "isolated_cpus": _read(sys_cpu / "isolated")}


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
