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
from drill_helpers import bench_pids, client, finish, record_of, slow_sweep, write_sweep
from fakebench.fakerepo import make_fake_repo
from fakebench.waits import wait_for

from orchestrator.errors import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED

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


def test_gc_while_a_sweep_runs_leaves_its_runs_logs_alone(tmp_path):
    repo = make_fake_repo(tmp_path)
    home = tmp_path / "home"
    finished = home / "logs" / "an-old-sweep" / "its-run"  # a finished run's logs: gc may take them
    finished.mkdir(parents=True)
    (finished / "stderr.log").write_text("old\n")
    proc = client(repo, ["run", str(slow_sweep(repo, tmp_path)), "--no-progress"], home,
                  tmp_path / "client.out", SHASWEEP_LOCK=str(tmp_path / "bench.lock"))
    wait_for(lambda: bench_pids(home), "the first run's bench")
    (running,) = [p.parent for p in (home / "logs").glob("drill-*/*/stream.jsonl")]
    gc = client(repo, ["gc", "--logs-max-mib", "0", "--logs-max-age-s", "0"], home, tmp_path / "gc.out")
    assert finish(gc) == EXIT_OK, (tmp_path / "gc.out").read_text()
    assert not finished.exists(), "gc did its job"
    assert (running / "stream.jsonl").exists() and (running / "stderr.log").exists(), "but not to the run"
    (tmp_path / "slow").unlink()
    assert finish(proc) == EXIT_OK, (tmp_path / "client.out").read_text()
    assert [o["status"] for o in record_of(repo)["outcomes"]] == ["ok", "ok"]
    assert (running / "stream.jsonl").read_text().count('"kind": "step"') == 10, "its stream is whole"


WRITER = """import os, sys, time
from pathlib import Path
from orchestrator.store.atomic import staged
with staged(Path(sys.argv[1])) as tmp:
    tmp.write_bytes(b"half a file")
    print(tmp, flush=True)
    time.sleep(600)
"""


def test_a_temporary_results_file_of_another_host_is_that_hosts_to_judge(tmp_path):
    """Two hosts of a fleet share a results root; a pid means something only where it ran."""
    results = tmp_path / "results"
    target = results / "runs" / "sweep=s" / "r.parquet"
    target.parent.mkdir(parents=True)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stdout=subprocess.PIPE, text=True,
                              cwd=tmp_path, env={**os.environ, "SHASWEEP_HOST_ID": "gpu-2"})
    temp = Path(writer.stdout.readline().strip())
    writer.kill()  # on host gpu-2 its writer is gone; gpu-1 cannot know whose pid that was
    writer.wait()
    repo = make_fake_repo(tmp_path)
    for host, kept in (("gpu-1", True), ("gpu-2", False)):
        gc = client(repo, ["gc", "--results", str(results)], tmp_path / "home", tmp_path / "gc.out",
                    SHASWEEP_HOST_ID=host)
        assert finish(gc) == EXIT_OK, (tmp_path / "gc.out").read_text()
        assert temp.exists() is kept, f"gc on {host}: {(tmp_path / 'gc.out').read_text()}"


PLANT = """import os, sys
from pathlib import Path
os.setgroups([])
os.setgid(int(sys.argv[5]))
os.setuid(int(sys.argv[4]))  # from here on the neighbour (the interpreter may be where they cannot read)
directory, victim = Path(sys.argv[1]), sys.argv[2]
directory.mkdir()
directory.chmod(0o1777)  # a shared lock directory, as shasweep makes /tmp/shasweep-locks
for suffix in (".lock", ".lock.holder", ".lock.run", ".lock.worker"):
    (directory / f"{sys.argv[3]}{suffix}").symlink_to(victim)
"""


def test_a_lock_directory_made_by_another_user_cannot_redirect_a_runs_writes(shared_dir, neighbour):
    """The neighbour makes the shared lock directory and plants links named like the lock files at the
    victim's file; the victim's ``try`` refuses them (exit 2 naming one) and the file keeps its bytes
    and mode."""
    victim = shared_dir / "bashrc"
    victim.write_text("export PATH=/usr/bin\n")
    victim.chmod(0o644)
    tmp = shared_dir / "tmp"  # a /tmp of the drill's own: every user may create in it
    tmp.mkdir()
    tmp.chmod(0o1777)
    locks = tmp / "shasweep-locks"
    planted = subprocess.run([sys.executable, "-c", PLANT, str(locks), str(victim), "drill-host",
                              str(neighbour.pw_uid), str(neighbour.pw_gid)], cwd="/", capture_output=True,
                             text=True, timeout=60)
    assert planted.returncode == 0, planted.stderr
    assert locks.stat().st_uid == neighbour.pw_uid
    repo = make_fake_repo(shared_dir)
    proc = client(repo, ["try", str(write_sweep(repo)), "--side", "new"], shared_dir / "home",
                  shared_dir / "try.out", SHASWEEP_LOCK_DIR=str(locks), SHASWEEP_HOST_ID="drill-host")
    code = finish(proc)
    out = (shared_dir / "try.out").read_text()
    assert victim.read_text() == "export PATH=/usr/bin\n", "the victim's file was written"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644, "the victim's file was made shared"
    assert code == EXIT_INVALID, out
    assert "Traceback" not in out and "symbolic link" in out and str(locks / "drill-host.lock") in out, out
