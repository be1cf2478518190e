"""The embedded cluster's throwaway TLS identity (``dispatch.cluster_credentials``): a fresh P-256 key
per cluster, its certificate the CA and every member's; a scheduler holding one serves a client with
it and refuses a client holding another one. Real in-process scheduler, real TLS."""

from __future__ import annotations

import stat

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_pem_private_key

from orchestrator.dispatch import cluster_credentials


def test_each_cluster_gets_its_own_self_signed_p256_identity_for_every_role():
    first, second = cluster_credentials.new_security(), cluster_credentials.new_security()
    assert first.require_encryption
    cert = x509.load_pem_x509_certificate(first.tls_ca_file.encode())
    assert cert.issuer == cert.subject, "self-signed: its own CA"
    key = load_pem_private_key(first.tls_client_key.encode(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp256r1"
    for role in ("client", "scheduler", "worker"):
        assert getattr(first, f"tls_{role}_cert") == first.tls_ca_file
        assert getattr(first, f"tls_{role}_key") == first.tls_client_key
    assert second.tls_client_key != first.tls_client_key and second.tls_ca_file != first.tls_ca_file


def test_the_written_credentials_are_this_users_alone_and_read_back_whole(tmp_path, monkeypatch):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    security = cluster_credentials.new_security()
    path = cluster_credentials.write_credentials(security, "tls://127.0.0.1:4242")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    found = cluster_credentials.security_for("tls://127.0.0.1:4242")
    assert found.tls_client_cert == security.tls_client_cert
    assert found.tls_client_key == security.tls_client_key
    assert cluster_credentials.security_for("tls://127.0.0.1:4243") is None


def test_a_scheduler_serves_its_identity_and_refuses_another():
    from distributed import Client, LocalCluster

    own, stranger = cluster_credentials.new_security(), cluster_credentials.new_security()
    with LocalCluster(n_workers=0, processes=False, host="127.0.0.1", dashboard_address="127.0.0.1:0",
                      security=own) as cluster:
        assert cluster.scheduler_address.startswith("tls://")
        with Client(cluster.scheduler_address, security=own, timeout=30) as client:
            assert client.run_on_scheduler(lambda: 42) == 42
        with pytest.raises((OSError, TimeoutError)):
            Client(cluster.scheduler_address, security=stranger, timeout=5)
