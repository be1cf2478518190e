"""TLS between shasweep's processes: one CA, and each process's certificate and key.

A client needs TLS files exactly when its scheduler is ``tls://`` (``client_security``); the
scheduler and the bench worker get their ``Security`` from the same files (``cli.servers``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.errors import InvalidInputError

if TYPE_CHECKING:
    from distributed import Security


@dataclass(frozen=True)
class TLSFiles:
    """One CA and this process's certificate and key, for every connection it makes or accepts."""

    ca_file: Path
    cert: Path
    key: Path

    def security(self, role: str) -> Security:
        """Dask ``Security`` for ``role`` (scheduler, worker or client), encryption required."""
        from distributed import Security

        return Security(require_encryption=True, tls_ca_file=str(self.ca_file),
                        **{f"tls_{role}_cert": str(self.cert), f"tls_{role}_key": str(self.key)})


def client_security(tls: TLSFiles | None, scheduler: str | None) -> Security | None:
    """The client's Dask ``Security`` for ``scheduler``: TLS files are required for a ``tls://``
    scheduler (but for an embedded cluster of this user's, ``cluster_credentials``) and refused for any
    other (``InvalidInputError`` naming the options)."""
    if tls is None:
        from orchestrator.dispatch import cluster_credentials  # imports the worker's home: only when needed

        own = cluster_credentials.security_for(scheduler) if scheduler is not None else None
        if own is not None:  # an embedded cluster of this user's (one bisect shares between its steps)
            return own
        if scheduler is not None and scheduler.startswith("tls://"):
            raise InvalidInputError(f"the scheduler {scheduler} speaks TLS: give --tls-ca-file, --tls-cert "
                                    "and --tls-key (a client certificate the scheduler's CA signed)")
        return None
    if scheduler is None or not scheduler.startswith("tls://"):
        raise InvalidInputError(f"--tls-* options need --scheduler tls://HOST:PORT, got {scheduler!r}")
    return tls.security("client")
