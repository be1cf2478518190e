"""The ``--tls-*`` options of every command that serves or connects to a scheduler, and the files
they name (light: ``run`` and ``plan`` import it without Dask)."""

from __future__ import annotations

import argparse
from pathlib import Path

from orchestrator.dispatch.tls import TLSFiles
from orchestrator.errors import InvalidInputError


def add_tls_arguments(parser: argparse.ArgumentParser) -> None:
    """The TLS options of every process that serves or connects to a scheduler."""
    parser.add_argument("--tls-ca-file", type=Path, metavar="PATH", help="CA certificate (PEM); enables TLS")
    parser.add_argument("--tls-cert", type=Path, metavar="PATH", help="this process's certificate (PEM)")
    parser.add_argument("--tls-key", type=Path, metavar="PATH", help="this process's private key (PEM)")


def tls_files(args: argparse.Namespace) -> TLSFiles | None:
    """The TLS files, all three or none, each existing."""
    given = {"--tls-ca-file": args.tls_ca_file, "--tls-cert": args.tls_cert, "--tls-key": args.tls_key}
    if not any(given.values()):
        return None
    missing = [flag for flag, path in given.items() if path is None]
    if missing:
        raise InvalidInputError("TLS needs --tls-ca-file, --tls-cert and --tls-key; "
                                f"missing {', '.join(missing)}")
    for flag, path in given.items():
        if not path.is_file():
            raise InvalidInputError(f"{flag} {path}: no such file")
    return TLSFiles(ca_file=args.tls_ca_file, cert=args.tls_cert, key=args.tls_key)
