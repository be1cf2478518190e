"""A TLS scheduler runs code only for clients with a certificate its CA signed; `shasweep run` takes
the TLS options to be such a client."""

from __future__ import annotations

import socket
import ssl

import pytest
from test_entrypoints import serving, shasweep_argv, write_tls_files

from orchestrator.cli.main import main
from orchestrator.errors import EXIT_INVALID


def served_without_a_certificate(host: str, port: int, ca_file) -> bool:
    """Whether the scheduler sends anything to a TLS client that trusts it but has no certificate."""
    context = ssl.create_default_context(cafile=str(ca_file))
    try:
        with socket.create_connection((host, port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname=host) as tls:
                tls.sendall(b"\x00" * 8)
                return bool(tls.recv(1))
    except (ssl.SSLError, ConnectionError):
        return False


def test_a_client_without_a_certificate_is_refused_by_a_tls_scheduler(tmp_path):
    pytest.importorskip("cryptography", reason="generating the throwaway CA needs the cryptography package")
    from distributed import Client, Security

    from orchestrator.dispatch.tls import TLSFiles

    tls = TLSFiles(*write_tls_files(tmp_path))
    tls_args = ["--tls-ca-file", str(tls.ca_file), "--tls-cert", str(tls.cert), "--tls-key", str(tls.key)]
    argv = shasweep_argv("scheduler", "--port", "0", "--dashboard-address", "127.0.0.1:0", *tls_args)
    with serving(argv, tmp_path / "scheduler.log") as scheduler:
        with Client(scheduler.address, security=tls.security("client"), timeout=30) as client:
            assert client.run_on_scheduler(lambda: 42) == 42, "a client with a certificate is served"
        host, port = scheduler.address.removeprefix("tls://").rsplit(":", 1)
        assert not served_without_a_certificate(host, int(port), tls.ca_file)
        (tmp_path / "other").mkdir()
        _, other_cert, other_key = write_tls_files(tmp_path / "other")  # signed by another CA
        stranger = Security(require_encryption=True, tls_ca_file=str(tls.ca_file),
                            tls_client_cert=str(other_cert), tls_client_key=str(other_key))
        with pytest.raises((OSError, TimeoutError)):
            Client(scheduler.address, security=stranger, timeout=5)
        plain = scheduler.address.replace("tls://", "tcp://")
        with pytest.raises((OSError, TimeoutError)):
            Client(plain, timeout=5)


def test_run_needs_the_tls_options_for_a_tls_scheduler(tmp_path, capsys):
    smoke = tmp_path / "s.yaml"
    smoke.write_text("name: x\n")
    assert main(["run", str(smoke), "--scheduler", "tls://127.0.0.1:8786"]) == EXIT_INVALID
    assert "speaks TLS: give --tls-ca-file" in capsys.readouterr().err
    pem = tmp_path / "x.pem"
    pem.write_text("x")
    tls = ["--tls-ca-file", str(pem), "--tls-cert", str(pem), "--tls-key", str(pem)]
    assert main(["run", str(smoke), "--scheduler", "tcp://127.0.0.1:8786", *tls]) == EXIT_INVALID
    assert "--tls-* options need --scheduler tls://" in capsys.readouterr().err
