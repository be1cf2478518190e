"""The bench host's record: hardware, OS, interpreter, library versions, threads and affinity.

Collected on the bench worker (never on the client) and stored with every run as ``host_*``
columns. Versions come from package metadata, so no heavy module is imported. The host id
(``host_id``) names the machine a fleet dispatches rounds to and its host lock.

A run asks for the record every time, so what cannot change while a process lives (CPU model and
counts, OS) is read once, and the rest is read again only when it may have changed: package
versions when a directory on ``sys.path`` changed (installing or removing a package renames a
``dist-info`` there), the GPU when the ``nvidia-smi`` on ``PATH`` is another file. Memory, the
thread variables, the affinity and the host id are read every time (no cost worth saving).
"""

from __future__ import annotations

import functools
import json
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import psutil

from orchestrator.contract import HostRecord, host_id

# Set to the run's thread count for every bench (the Dask nanny would leave them at 1).
PINNED_THREAD_VARS: tuple[str, ...] = (
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
)
# Recorded with every run; the bench's own knobs (its documented defaults apply unless the sweep's
# ``env`` sets them) come after the pinned ones.
THREAD_VARS: tuple[str, ...] = (*PINNED_THREAD_VARS, "ENVRUNTIME_TORCH_THREADS")
_VERSION_CODE = "import platform; print(platform.python_version())"
_BUILD_CODE = "import platform, sys; print(platform.python_implementation(), ' '.join(sys.version.split()))"
VERSIONED_PACKAGES: tuple[str, ...] = ("numpy", "torch", "mujoco", "motrixsim", "mujoco-warp", "numba")
def collect_host(env: dict[str, str] | None = None, cpus: set[int] | None = None,
                 python: str | None = None) -> HostRecord:
    """This machine's record; ``env``/``cpus`` describe a bench process (default: this process), and
    ``python`` the interpreter running it (default: this one), whose version the record gives."""
    env = dict(os.environ) if env is None else env
    cpus = os.sched_getaffinity(0) if cpus is None else cpus
    gpu_name, gpu_memory, gpu_driver = _gpu()
    cpu_model, cpu_physical, os_name = _machine()
    return HostRecord(
        hostname=platform.node(),
        cpu_model=cpu_model,
        cpu_logical=os.cpu_count() or 0,
        cpu_physical=cpu_physical,
        ram_gib=round(psutil.virtual_memory().total / 2**30, 2),
        gpu_name=gpu_name,
        gpu_memory_mib=gpu_memory,
        gpu_driver=gpu_driver,
        os=os_name,
        kernel=platform.release(),
        python=platform.python_version() if python in (None, sys.executable) else python_version(python),
        versions=_versions(_site_stamp()),
        threads=json.dumps({name: env.get(name) for name in THREAD_VARS}, sort_keys=True),
        affinity=format_cpus(cpus),
        id=host_id(),
    )


def format_cpus(cpus: set[int]) -> str:
    """Compact CPU list: {0, 1, 2, 5} -> '0-2,5'."""
    parts: list[tuple[int, int]] = []
    for cpu in sorted(cpus):
        if parts and parts[-1][1] == cpu - 1:
            parts[-1] = (parts[-1][0], cpu)
        else:
            parts.append((cpu, cpu))
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in parts)


def parse_cpus(text: str) -> set[int]:
    """Inverse of ``format_cpus``: '0-2,5' -> {0, 1, 2, 5}; raises ValueError naming the bad part."""
    cpus: set[int] = set()
    for part in text.split(","):
        try:
            low, _, high = part.strip().partition("-")
            cpus.update(range(int(low), int(high or low) + 1))
        except ValueError:
            raise ValueError(f"bad CPU list {text!r}: {part!r} is not N or N-M") from None
    return cpus


def python_version(executable: str) -> str | None:
    """The version of the interpreter at ``executable`` (``3.12.1``), asked once per file (path, inode
    and mtime); None when it cannot say."""
    return _ask_python(executable, _VERSION_CODE, 40)


def python_build(executable: str) -> str | None:
    """The build of the interpreter at ``executable``: its implementation and whole version line, with
    the build's date and compiler (``CPython 3.11.7 (main, May 9 2026, 07:35:25) [GCC 12.2.0]``)."""
    return _ask_python(executable, _BUILD_CODE, 200)


def _ask_python(executable: str, code: str, most: int) -> str | None:
    """What ``code`` prints in the interpreter at ``executable`` (at most ``most`` characters), asked
    once per file (path, inode and mtime); None when it cannot say."""
    try:
        status = os.stat(executable)
    except OSError:
        return None
    return _asked(executable, code, most, status.st_ino, status.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _asked(executable: str, code: str, most: int, inode: int, mtime_ns: int) -> str | None:
    try:
        done = subprocess.run([executable, "-I", "-S", "-c", code], capture_output=True, text=True,
                              timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    answer = done.stdout.strip()
    return answer if done.returncode == 0 and 0 < len(answer) <= most else None


@functools.cache
def _machine() -> tuple[str, int | None, str]:
    """(CPU model, physical cores, OS name): fixed while this process lives."""
    return _cpu_model(), psutil.cpu_count(logical=False), _os_name()


def _site_stamp() -> tuple[tuple[str, int], ...]:
    """The modification times of the directories on ``sys.path``: they change when a package is
    installed, upgraded or removed there."""
    stamp = []
    for entry in sys.path:
        try:
            stamp.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            continue
    return tuple(stamp)


@functools.lru_cache(maxsize=1)
def _versions(stamp: tuple[tuple[str, int], ...]) -> str:
    """``VERSIONED_PACKAGES``' versions as JSON, read again only when ``stamp`` (``_site_stamp``) changed."""
    return json.dumps({name: _version(name) for name in VERSIONED_PACKAGES}, sort_keys=True)


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _os_name() -> str:
    try:
        info = platform.freedesktop_os_release()
        return info.get("PRETTY_NAME") or info.get("NAME", "")
    except OSError:
        return f"{platform.system()} {platform.version()}"


def _gpu() -> tuple[str | None, int | None, str | None]:
    """(name, memory MiB, driver) of the first GPU nvidia-smi reports, else Nones; asked again only
    when the ``nvidia-smi`` on ``PATH`` is another file."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None, None, None
    try:
        return _gpu_of(exe, os.stat(exe).st_mtime_ns)
    except (subprocess.SubprocessError, OSError, IndexError, ValueError):
        return None, None, None  # not cached: asked again next time


@functools.lru_cache(maxsize=4)
def _gpu_of(exe: str, changed: int) -> tuple[str, int, str]:
    """``_gpu`` as the ``nvidia-smi`` at ``exe`` (last changed at ``changed``) reports it; raises
    when it fails."""
    query = [exe, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits"]
    out = subprocess.run(query, capture_output=True, text=True, timeout=10, check=True).stdout
    name, memory, driver = (field.strip() for field in out.splitlines()[0].split(","))
    return name, int(float(memory)), driver
