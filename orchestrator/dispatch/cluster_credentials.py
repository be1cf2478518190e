"""The embedded cluster's TLS credentials: only this user can connect to it, and only while it runs.

A Dask scheduler runs any code a connected client sends, and 127.0.0.1 keeps out other machines, not
other users of this one. So the embedded cluster of ``shasweep run`` speaks TLS with a throwaway
self-signed certificate that is at once its CA and every member's certificate: a peer without its
key is refused. It is ``distributed.Security.temporary``'s arrangement with an elliptic-curve key
(P-256) instead of its 2048-bit RSA one: made in well under a millisecond rather than 20-120 ms, and
cheaper in every handshake, on every sweep's start. The certificate and key are written,
readable by this user only (0600, in a 0700 directory), to
``$SHASWEEP_HOME/clusters/<client pid>-<host>-<port>.pem``, so ``shasweep status`` and ``cancel``
of the same user find them from the scheduler address the sweep record holds; the file is removed
when the cluster closes (``stale_credentials`` names those of clients that died).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

if TYPE_CHECKING:
    from distributed import Security

_FILE = re.compile(r"(?P<pid>\d+)-(?P<host>[0-9.]+)-(?P<port>\d+)\.pem\Z")
_ADDRESS = re.compile(r"tls://(?P<host>[0-9.]+):(?P<port>\d+)\Z")
_KEY_BEGIN = "-----BEGIN PRIVATE KEY-----"


def credentials_dir() -> Path:
    from orchestrator.worker.worktrees import shasweep_home  # the worker's stack: only when asked

    return shasweep_home() / "clusters"


def new_security() -> Security:
    """Fresh credentials for one embedded cluster (encryption required, client certificates checked)."""
    from distributed import Security

    cert, key = _self_signed()
    roles = {f"tls_{role}_{part}": pem for role in ("client", "scheduler", "worker")
             for part, pem in (("cert", cert), ("key", key))}
    return Security(require_encryption=True, tls_ca_file=cert, **roles)


def _self_signed() -> tuple[str, str]:
    """A new P-256 key and its self-signed certificate (the name Dask's own uses, valid a year), in PEM."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "dask-internal")])
    now = datetime.datetime.now(tz=datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("dask-internal")]), critical=False)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=365))
            .sign(key, hashes.SHA256()))
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem.decode()


def write_credentials(security: Security, address: str) -> Path:
    """Write ``security``'s certificate and key for the cluster at ``address`` (tls://HOST:PORT),
    readable and writable by this user only; returns the file."""
    match = _ADDRESS.match(address)
    if match is None:
        raise ValueError(f"not an embedded cluster's address: {address!r}")
    directory = credentials_dir()
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    path = directory / f"{os.getpid()}-{match['host']}-{match['port']}.pem"
    path.unlink(missing_ok=True)  # a dead client's file for a port used again
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(security.tls_client_cert + security.tls_client_key)
    return path


def security_for(address: str) -> Security | None:
    """The credentials this user holds for the embedded cluster at ``address``; None when there are none
    (another kind of scheduler, another user's cluster, one that has closed)."""
    from distributed import Security

    match = _ADDRESS.match(address)
    if match is None:
        return None
    for path in sorted(credentials_dir().glob(f"*-{match['host']}-{match['port']}.pem")):
        try:
            text = path.read_text()
        except OSError:
            continue
        cert, key_begin, key = text.partition(_KEY_BEGIN)
        if key_begin:
            key = key_begin + key
            return Security(require_encryption=True, tls_ca_file=cert, tls_client_cert=cert,
                            tls_client_key=key)
    return None


def stale_credentials() -> list[Path]:
    """Credential files of clients that are gone (killed before they could remove them)."""
    found = []
    for path in credentials_dir().glob("*.pem") if credentials_dir().is_dir() else ():
        match = _FILE.match(path.name)
        if match is not None and not psutil.pid_exists(int(match["pid"])):
            found.append(path)
    return found

