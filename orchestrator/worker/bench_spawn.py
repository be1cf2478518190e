"""The launch helper: a small single-threaded process that starts bench processes, one at a time, and
reaps them.

Started by ``orchestrator.worker.proc`` as ``python -I -S <this file>`` and kept for the next launch
(so its own start-up is paid once per worker, not per run); it imports nothing of the orchestrator.
Nothing of ours runs inside the bench: it is ``posix_spawn``ed straight into its command (its own
session, default signal dispositions, stdin ``/dev/null``, stdout and stderr to the log files),
pinned to its CPUs by inheriting this process's affinity, set only around the spawn. This process
then waits on the bench's pidfd and reaps it with ``os.wait4``.

It is the subreaper (``PR_SET_CHILD_SUBREAPER``) of everything a bench starts: a process that leaves
the bench's session and is orphaned (a daemon) becomes this helper's child, not init's. So when a
bench has exited, the helper kills every process still under it (its process tree: the bench's
group and whatever left it), reaps them, and only then reports: nothing a run started outlives it,
and the next bench starts under an empty tree. A process that scrubs its environment escapes no
better than one that does not.

Why a helper rather than the worker: the kernel's peak RSS of a child (``ru_maxrss``) starts at the
forking process's high-water mark, hundreds of MiB for a Dask worker and about 10 MiB here; the
helper reports that floor, read just after each spawn, so a figure above it is the bench's own.
While waiting it samples the ``VmHWM`` of the processes under it for benches below the floor. It
times the bench from just before the spawn to the reap, single-threaded, away from the worker's
threads. And it ends the benches with the worker: its stdin is a pipe from the worker, and end of
file there (the worker closed it, or died) kills everything under it and ends the helper.

stdin: one JSON line per bench, ``{argv, cwd, env, stdout, stderr, cpus}``.
stdout: per bench, ``{"started": pid, "floor_kib": n}`` or ``{"error": text}``, then, once started,
``{"status": wait status, "wall_ns", "user_s", "sys_s", "maxrss_kib", "hwm_kib", "left": n}``
(``left``: processes of its tree killed after it exited).
"""

import ctypes
import json
import os
import select
import signal
import sys
import time

FIRST_SAMPLE_S = 0.002  # the bench's VmHWM is sampled after this, then at doubling intervals
LAST_SAMPLE_S = 0.25
TREE_SCAN_S = 1.0  # how often the processes under the helper are listed for sampling
KILL_WAIT_S = 5.0  # how long the helper keeps killing and reaping what is left of a bench
DEFAULT_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)
PR_SET_CHILD_SUBREAPER = 36
HAS_CHILDREN_FILES = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


class Requests:
    """The worker's request lines on stdin, read without blocking the bench's wait."""

    def __init__(self):
        self.pending = b""
        self.closed = False

    def next(self):
        """The next request (blocking), or None once the worker is gone."""
        while b"\n" not in self.pending and not self.closed:
            self.take()
        if b"\n" not in self.pending:
            return None
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def take(self):
        """Read what is waiting on stdin; end of file marks the worker gone."""
        chunk = os.read(0, 65536)
        self.pending += chunk
        self.closed = self.closed or not chunk


def reply(message):
    try:
        os.write(1, (json.dumps(message) + "\n").encode())
    except OSError:  # the worker is gone; its end of file ends this helper
        pass


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


def children(pid):
    """The children of ``pid`` (every thread's), from ``/proc/<pid>/task/<tid>/children``."""
    found = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as listing:
                found += [int(child) for child in listing.read().split()]
        except OSError:
            continue
    return found


def parents():
    """pid -> parent pid of every process (where ``/proc`` has no children files)."""
    found = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    found[int(entry)] = int(stat.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return found


def tree(root=None):
    """Pids of every process under ``root`` (default: this helper), nearest first."""
    root = os.getpid() if root is None else root
    if HAS_CHILDREN_FILES:
        under = children(root)
        for pid in under:  # grows while it is walked: breadth first
            under += children(pid)
        return under
    by_parent = {}
    for pid, parent in parents().items():
        by_parent.setdefault(parent, []).append(pid)
    under = list(by_parent.get(root, []))
    for pid in under:
        under += by_parent.get(pid, [])
    return under


def reap():
    """Reap every child that has ended (the bench itself is reaped by ``wait``)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_tree():
    """SIGKILL every process under this helper and reap them; how many there were."""
    killed = set()
    deadline = time.monotonic() + KILL_WAIT_S
    while True:
        reap()
        left = tree()
        if not left or time.monotonic() > deadline:
            return len(killed)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:  # gone already, or not ours to kill
                continue
            killed.add(pid)
        time.sleep(0.001)


def spawn(request, log_out, log_err):
    """Start the bench; (pid, this process's VmHWM just after the spawn, when it began in ns). Read
    after, not before: building the spawn's argv and environment may grow this process, and the
    bench inherits the high-water mark it had at the fork."""
    env = request["env"]
    os.chdir(request["cwd"])
    path = executable(request["argv"][0], env.get("PATH"))
    previous = os.sched_getaffinity(0)
    if request.get("cpus"):
        os.sched_setaffinity(0, request["cpus"])
    try:
        began_ns = time.perf_counter_ns()
        pid = os.posix_spawn(path, request["argv"], env, setsid=True, setsigdef=DEFAULT_SIGNALS,
                             file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                                           (os.POSIX_SPAWN_DUP2, log_out, 1),
                                           (os.POSIX_SPAWN_DUP2, log_err, 2)])
        floor = hwm_kib(os.getpid()) or 0
    finally:
        os.sched_setaffinity(0, previous)
    return pid, floor, began_ns


def wait(pid, began_ns, requests):
    """Wait for the bench, sampling the VmHWM of the processes under this helper; kill the bench's
    group if the worker goes away."""
    pidfd = os.pidfd_open(pid)
    highest, interval, next_scan = None, FIRST_SAMPLE_S, time.monotonic() + TREE_SCAN_S
    while True:
        watching = [pidfd] if requests.closed else [pidfd, 0]
        ready, _, _ = select.select(watching, [], [], interval)
        if pidfd in ready:
            break
        if 0 in ready:
            requests.take()
            if requests.closed:  # the worker closed our stdin or died
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        members = [pid]
        if time.monotonic() >= next_scan:
            members, next_scan = tree(), time.monotonic() + TREE_SCAN_S
        for sample in map(hwm_kib, members):
            if sample is not None and (highest is None or sample > highest):
                highest = sample
        interval = min(interval * 2, LAST_SAMPLE_S)
    _, status, usage = os.wait4(pid, 0)
    wall_ns = time.perf_counter_ns() - began_ns
    os.close(pidfd)
    return {"status": status, "wall_ns": wall_ns, "user_s": usage.ru_utime, "sys_s": usage.ru_stime,
            "maxrss_kib": usage.ru_maxrss, "hwm_kib": highest}


def serve(request, requests):
    """Start one bench, wait for it, clear its tree, report."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    log_out = os.open(request["stdout"], flags, 0o644)
    try:
        log_err = os.open(request["stderr"], flags, 0o644)
        try:
            pid, floor, began_ns = spawn(request, log_out, log_err)
        except OSError as exc:
            message = f"shasweep: cannot start the bench {request['argv'][0]!r}: {exc}"
            os.write(log_err, (message + "\n").encode())
            reply({"error": message})
            return
        finally:
            os.close(log_err)
    finally:
        os.close(log_out)
    reply({"started": pid, "floor_kib": floor})
    report = wait(pid, began_ns, requests)
    report["left"] = kill_tree()
    reply(report)


def main():
    ctypes.CDLL(None).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    requests = Requests()
    try:
        while (request := requests.next()) is not None:
            try:
                serve(request, requests)
            except OSError as exc:  # a log file that cannot be opened: the bench never started
                reply({"error": f"shasweep: cannot start the bench: {exc}"})
    finally:
        kill_tree()


if __name__ == "__main__":
    sys.exit(main())
