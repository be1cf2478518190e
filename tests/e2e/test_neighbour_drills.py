"""Drills with a neighbour: another local user of the bench machine, or another host of the fleet.

* A second local user reads a running sweep's record (0644) and tries to run code in its embedded
  cluster, to talk to any of its ports, and to read its credentials: all refused, while the owner's
  ``shasweep status`` and ``cancel`` keep working.
* ``shasweep gc`` run while a sweep runs leaves that run's logs alone.
* A temporary results file written by another host of the fleet is not this host's to judge stale.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest
from drill_helpers import bench_pids, client, finish, record_of, write_sweep
from fakebench.fakerepo import make_fake_repo
from fakebench.waits import wait_for

from orchestrator.errors import EXIT_OK, EXIT_RUN_FAILED

NEIGHBOUR_CLIENT = Path(__file__).with_name("neighbour_client.py")


@pytest.fixture
def shared_dir() -> Path:
    """A directory every local user may read, like the home and results root of a real machine
    (pytest's own temporary directories are private to root)."""
    base = Path(tempfile.mkdtemp(prefix="shasweep-drill-"))
    os.chmod(base, 0o755)
    if not all(os.stat(p).st_mode & stat.S_IXOTH for p in base.parents):
        pytest.skip(f"{base.parent} is not traversable by other users (set TMPDIR elsewhere)")
    yield base
    shutil.rmtree(base, ignore_errors=True)


def listening_ports(pids: list[int]) -> list[int]:
    """The TCP ports the processes ``pids`` listen on."""
    ports = set()
    for pid in pids:
        try:
            connections = psutil.Process(pid).net_connections(kind="tcp")
        except psutil.Error:
            continue
        ports |= {c.laddr.port for c in connections if c.status == psutil.CONN_LISTEN}
    return sorted(ports)


def test_a_second_local_user_can_neither_run_code_in_nor_talk_to_a_running_sweeps_cluster(shared_dir,
                                                                                            neighbour):
    repo = make_fake_repo(shared_dir)
    home = shared_dir / "home"
    sweep = write_sweep(repo, step_ms=60_000, timeout_s=900)  # the first run lasts until it is cancelled
    proc = client(repo, ["run", str(sweep), "--no-progress"], home, shared_dir / "client.out",
                  SHASWEEP_LOCK=str(shared_dir / "bench.lock"))
    try:
        wait_for(lambda: bench_pids(home), "the first run's bench")
        (record_file,) = (repo.path / "results" / "sweeps").glob("drill-*.json")
        assert record_file.stat().st_mode & stat.S_IROTH, "the record is readable by every local user"
        members = [proc.pid, *(p.pid for p in psutil.Process(proc.pid).children(recursive=True))]
        ports = listening_ports(members)
        credentials = sorted((home / "clusters").glob("*.pem")) or [home / "clusters" / "none.pem"]
        attempt = subprocess.run(
            [sys.executable, str(NEIGHBOUR_CLIENT), str(neighbour.pw_uid), str(neighbour.pw_gid),
             str(record_file), str(credentials[0]), *map(str, ports)],
            capture_output=True, text=True, timeout=300, cwd="/")
        assert attempt.returncode == 0, attempt.stderr[-3000:]
        seen = json.loads(attempt.stdout.splitlines()[-1])
        assert seen["uid"] == neighbour.pw_uid
        assert not seen["client"]["ok"], (f"user {neighbour.pw_name} connected to {seen['scheduler']} "
                                          f"and ran code there as uid {seen['client']['got']}")
        tried = [seen["client"], *(seen[f"{kind}:{port}"] for port in ports for kind in ("tcp", "tls"))]
        assert not [t for t in tried if t["ok"]], f"a port of the cluster answered the neighbour: {seen}"
        errors = " ".join(t["error"] for t in tried)
        assert "ImportError" not in errors and "ModuleNotFound" not in errors, errors  # refused, not broken
        assert not seen["credentials"]["ok"] and "PermissionError" in seen["credentials"]["error"], seen

        status = client(repo, ["status", "latest"], home, shared_dir / "status.out")
        assert finish(status) == EXIT_OK, (shared_dir / "status.out").read_text()
        shown = (shared_dir / "status.out").read_text()
        assert f"(live, scheduler {seen['scheduler']})" in shown, "the owner's status reaches the cluster"
        cancel = client(repo, ["cancel", "latest", "--wait-s", "120"], home, shared_dir / "cancel.out")
        assert finish(cancel) == EXIT_OK, (shared_dir / "cancel.out").read_text()
        assert finish(proc) == EXIT_RUN_FAILED
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
    record = record_of(repo)
    assert record["status"] == "stopped" and "cancel" in record["stopped_reason"]
    assert not list((home / "clusters").glob("*.pem")), "the credentials went with the cluster"
