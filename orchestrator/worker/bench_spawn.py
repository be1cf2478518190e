"""The launch helper: a small single-threaded process that starts one bench process and reaps it.

Run by ``orchestrator.worker.proc.launch`` as ``python -I -S <this file>``; it imports nothing of
the orchestrator. Nothing of ours runs inside the bench: it is ``posix_spawn``ed straight into its
command (its own session, default signal dispositions, stdin ``/dev/null``, stdout and stderr to the
log files), pinned to its CPUs by inheriting this process's affinity, set only around the spawn.
This process then waits on the bench's pidfd and reaps it with ``os.wait4``.

Why a helper rather than the worker: the kernel's peak RSS of a child (``ru_maxrss``) starts at the
forking process's high-water mark, hundreds of MiB for a Dask worker and about 10 MiB here; the
helper reports that floor, so a figure above it is the bench's own. While waiting it samples the
``VmHWM`` of the bench's session for benches below the floor. It times the bench from just before
the spawn to the reap, single-threaded, away from the worker's threads. And it ends the bench with
the worker: its stdin is a pipe from the worker, and end of file there (the worker closed it, or
died) kills the bench's process group.

stdin: one JSON line ``{argv, cwd, env, stdout, stderr, cpus}``, then kept open.
stdout: JSON lines, ``{"started": pid, "floor_kib": n}`` or ``{"error": text}``, then
``{"status": wait status, "wall_ns", "user_s", "sys_s", "maxrss_kib", "hwm_kib"}``.
"""

import json
import os
import select
import signal
import sys
import time

FIRST_SAMPLE_S = 0.002  # the bench's VmHWM is sampled after this, then at doubling intervals
LAST_SAMPLE_S = 0.25
DEFAULT_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)


def reply(message):
    os.write(1, (json.dumps(message) + "\n").encode())


def executable(name, path_var):
    """``name`` as ``execvp`` would find it on the bench's PATH (a name with a slash as it is)."""
    if "/" in name:
        return name
    for directory in (path_var or os.defpath).split(os.pathsep):
        candidate = os.path.join(directory or ".", name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise FileNotFoundError(2, "not found on the bench's PATH", name)


def hwm_kib(pid):
    """The peak RSS (``VmHWM``) of process ``pid`` in KiB; None once it is gone or has no memory."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def session_members(sid):
    """Pids of the processes in session ``sid`` (the bench and what it started without leaving it)."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 3 and int(fields[3]) == sid:
            members.append(int(entry))
    return members


def spawn(request, log_out, log_err):
    """Start the bench; (pid, this process's VmHWM just before the spawn, when it began in ns)."""
    env = request["env"]
    os.chdir(request["cwd"])
    path = executable(request["argv"][0], env.get("PATH"))
    previous = os.sched_getaffinity(0)
    if request.get("cpus"):
        os.sched_setaffinity(0, request["cpus"])
    try:
        floor = hwm_kib(os.getpid()) or 0
        began_ns = time.perf_counter_ns()
        pid = os.posix_spawn(path, request["argv"], env, setsid=True, setsigdef=DEFAULT_SIGNALS,
                             file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                                           (os.POSIX_SPAWN_DUP2, log_out, 1),
                                           (os.POSIX_SPAWN_DUP2, log_err, 2)])
    finally:
        os.sched_setaffinity(0, previous)
    return pid, floor, began_ns


def wait(pid, began_ns):
    """Wait for the bench, sampling its session's VmHWM; kill its group if the worker goes away."""
    pidfd = os.pidfd_open(pid)
    watching = [pidfd, 0]
    highest, interval, next_scan = None, FIRST_SAMPLE_S, time.monotonic() + 1.0
    while True:
        ready, _, _ = select.select(watching, [], [], interval)
        if pidfd in ready:
            break
        if 0 in ready and not os.read(0, 4096):  # the worker closed our stdin or died
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            watching = [pidfd]
        members = [pid]
        if time.monotonic() >= next_scan:
            members, next_scan = session_members(pid), time.monotonic() + 1.0
        for sample in map(hwm_kib, members):
            if sample is not None and (highest is None or sample > highest):
                highest = sample
        interval = min(interval * 2, LAST_SAMPLE_S)
    _, status, usage = os.wait4(pid, 0)
    wall_ns = time.perf_counter_ns() - began_ns
    os.close(pidfd)
    return {"status": status, "wall_ns": wall_ns, "user_s": usage.ru_utime, "sys_s": usage.ru_stime,
            "maxrss_kib": usage.ru_maxrss, "hwm_kib": highest}


def main():
    request = json.loads(sys.stdin.buffer.readline())
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    log_out = os.open(request["stdout"], flags, 0o644)
    log_err = os.open(request["stderr"], flags, 0o644)
    try:
        pid, floor, began_ns = spawn(request, log_out, log_err)
    except OSError as exc:
        message = f"shasweep: cannot start the bench {request['argv'][0]!r}: {exc}"
        os.write(log_err, (message + "\n").encode())
        reply({"error": message})
        return
    reply({"started": pid, "floor_kib": floor})
    reply(wait(pid, began_ns))


if __name__ == "__main__":
    main()
