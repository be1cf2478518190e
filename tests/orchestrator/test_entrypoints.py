"""`shasweep scheduler` and `shasweep worker`: option checks, pinning, and a TLS pair as real processes.

``serving`` (also used by the Compose test) starts a ``shasweep`` command as a process and waits
for the line that gives its address.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from orchestrator.cli.main import main
from orchestrator.cli.servers import pin_process
from orchestrator.errors import EXIT_INVALID

START_TIMEOUT_S = 60.0
_STARTED = re.compile(r"shasweep (scheduler|worker) at ((?:tcp|tls)://[\d.]+:\d+)(?:, live board (\S+))?")


@dataclass
class Served:
    """A started ``shasweep scheduler`` or ``worker`` process and the address it printed."""

    proc: subprocess.Popen
    address: str
    board_url: str | None


def shasweep_argv(*args: str) -> list[str]:
    """``shasweep ARGS`` run by this interpreter."""
    return [sys.executable, "-m", "orchestrator.cli", *args]


@contextmanager
def serving(argv: list[str], log: Path, env: dict[str, str] | None = None) -> Iterator[Served]:
    """Start ``argv`` (stderr to ``log``), wait for its address line, SIGTERM it on exit."""
    with open(log, "wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True,
                                env={**os.environ, **(env or {})})
    try:
        yield _wait_started(proc, log)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_started(proc: subprocess.Popen, log: Path) -> Served:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        line = proc.stdout.readline() if ready else ""
        match = _STARTED.search(line)
        if match:
            return Served(proc=proc, address=match.group(2), board_url=match.group(3))
        if proc.poll() is not None and not line:
            break
    raise AssertionError(f"{proc.args} did not start (exit {proc.poll()}):\n{log.read_text()[-3000:]}")


@pytest.mark.parametrize("args, message", [
    (["tcp://127.0.0.1:8786", "--cpus", "0-x"], "--cpus: bad CPU list '0-x'"),
    (["tcp://127.0.0.1:8786", "--cpus", "4096"], "CPUs 4096 are not available to this process"),
    (["tcp://127.0.0.1:8786", "--gpu", "0; rm"], "--gpu '0; rm' is not a comma-separated list"),
    (["127.0.0.1:8786"], "scheduler address '127.0.0.1:8786' is not an address like tcp://HOST:PORT"),
    (["tcp://127.0.0.1:8786", "--resource", "G P U"], "--resource 'G P U' is not a resource name"),
    (["tcp://127.0.0.1:8786", "--port", "70000"], "--port 70000 is not a port number"),
    (["tls://127.0.0.1:8786", "--tls-cert", "c.pem"], "missing --tls-ca-file, --tls-key"),
    (["tls://127.0.0.1:8786", "--tls-ca-file", "nope.pem", "--tls-cert", "nope.pem", "--tls-key", "nope.pem"],
     "--tls-ca-file nope.pem: no such file"),
])
def test_worker_options_are_checked_before_starting(args, message, capsys):
    assert main(["worker", *args]) == EXIT_INVALID
    assert message in capsys.readouterr().err


def test_tls_needs_a_tls_scheduler_address(tmp_path, capsys):
    pem = tmp_path / "x.pem"
    pem.write_text("")
    tls = ["--tls-ca-file", str(pem), "--tls-cert", str(pem), "--tls-key", str(pem)]
    assert main(["worker", "tcp://127.0.0.1:8786", *tls]) == EXIT_INVALID
    assert "the scheduler address must be tls://" in capsys.readouterr().err


def test_pin_process_pins_running_threads_and_children(monkeypatch):
    original = os.sched_getaffinity(0)
    target = frozenset({min(original)})
    started, release = threading.Event(), threading.Event()
    seen: dict[str, set[int]] = {}

    def worker_thread() -> None:
        started.set()
        release.wait(10)
        seen["thread"] = os.sched_getaffinity(0)

    thread = threading.Thread(target=worker_thread)
    thread.start()
    started.wait(10)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    try:
        pin_process(target, "1")
        release.set()
        thread.join(10)
        child = subprocess.run([sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"],
                               capture_output=True, text=True, check=True).stdout.strip()
        assert os.environ["CUDA_VISIBLE_DEVICES"] == "1"
    finally:
        pin_process(frozenset(original), None)
    assert seen["thread"] == set(target), "a thread started before pinning is pinned too"
    assert child == str(sorted(target)), "a child process inherits the pinning"


def write_tls_files(root: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a certificate for 127.0.0.1 signed by it: (ca, cert, key) PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.now(UTC)

    def build(subject: str, key, issuer: str, issuer_key, ca: bool) -> x509.Certificate:
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - timedelta(minutes=5)).not_valid_after(now + timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if not ca:
            import ipaddress

            loopback = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
            builder = builder.add_extension(loopback, critical=False)
        return builder.sign(issuer_key, hashes.SHA256())

    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_cert = build("shasweep test CA", ca_key, "shasweep test CA", ca_key, ca=True)
    cert = build("127.0.0.1", key, "shasweep test CA", ca_key, ca=False)
    paths = root / "ca.pem", root / "cert.pem", root / "key.pem"
    paths[0].write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return paths


def _bench_worker_settings(dask_worker) -> dict:
    """Run on the worker (``Client.run``): what the bench would inherit from it."""
    import dask

    return {"affinity": sorted(os.sched_getaffinity(0)), "cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "profiler": dask.config.get("distributed.worker.profile.enabled"),
            "nthreads": dask_worker.state.nthreads, "resources": dict(dask_worker.state.total_resources)}


def test_tls_scheduler_and_pinned_worker_serve_a_tls_client(tmp_path):
    pytest.importorskip("cryptography", reason="generating the throwaway CA needs the cryptography package")
    from distributed import Client

    from orchestrator.dashboard.plugin import board_snapshot
    from orchestrator.dispatch.tls import TLSFiles

    tls = TLSFiles(*write_tls_files(tmp_path))
    tls_args = ["--tls-ca-file", str(tls.ca_file), "--tls-cert", str(tls.cert), "--tls-key", str(tls.key)]
    cpu = str(min(os.sched_getaffinity(0)))
    scheduler_argv = shasweep_argv("scheduler", "--port", "0", "--dashboard-address", "127.0.0.1:0",
                                   *tls_args)
    with serving(scheduler_argv, tmp_path / "scheduler.log") as scheduler:
        assert scheduler.address.startswith("tls://127.0.0.1:")
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/shasweep", scheduler.board_url)
        worker_argv = shasweep_argv("worker", scheduler.address, "--cpus", cpu, "--gpu", "0", *tls_args)
        importable = {"PYTHONPATH": os.pathsep.join([str(Path(__file__).parent),
                                                    os.environ.get("PYTHONPATH", "")])}
        with serving(worker_argv, tmp_path / "worker.log", env=importable) as worker:
            assert worker.address.startswith("tls://127.0.0.1:")
            with Client(scheduler.address, security=tls.security("client"), timeout=30) as client:
                client.wait_for_workers(1, timeout=30)
                settings = client.run(_bench_worker_settings)[worker.address]
                board = client.run_on_scheduler(board_snapshot)
    assert settings == {"affinity": [int(cpu)], "cuda": "0", "profiler": False, "nthreads": 1,
                        "resources": {"GPU": 1}}
    host = board["hosts"][worker.address]
    assert host["affinity"] == cpu and host["cpu_logical"] >= 1, "the worker published its host record"
    assert "bench host: {" in (tmp_path / "worker.log").read_text(), "and logged it"
