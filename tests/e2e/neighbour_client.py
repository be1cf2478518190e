"""A second local user trying to use another user's running sweep cluster (run by the drills as root).

Usage: ``python neighbour_client.py UID GID RECORD CREDENTIALS PORT...``. Everything Dask needs is
imported and exercised first, as root (the interpreter may live where the second user cannot read,
e.g. under ``/root``, so ``runuser`` could not even start it); then the process drops to UID/GID with
no supplementary groups and no capabilities, and, as that user, tries to

* read the sweep record RECORD (0644) for the scheduler's address, connect a ``Client`` to it and
  run code there,
* open a Dask comm to each PORT on 127.0.0.1 (scheduler, nanny, worker) in plain TCP and in TLS
  with a certificate of its own, and ask for the server's identity,
* read the cluster's credential file CREDENTIALS.

Prints one JSON object: what each attempt got (``ok`` with what it learnt, or the error).
"""

import asyncio
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path

from distributed import Client, LocalCluster, Security
from distributed.comm import connect

TIMEOUT_S = 5


async def identity(address: str, security: Security | None) -> str:
    """Open a comm to ``address`` and ask the server who it is (a server that does not answer within
    ``TIMEOUT_S``, such as the HTTP dashboard, is no Dask server)."""
    args = security.get_connection_args("client") if security is not None else {}
    comm = await connect(address, timeout=TIMEOUT_S, **args)
    try:
        await comm.write({"op": "identity", "reply": True})
        return str((await asyncio.wait_for(comm.read(), TIMEOUT_S)).get("type"))
    finally:
        comm.abort()


def attempt(what, results: dict, key: str) -> threading.Thread:
    """Start ``what()`` in a thread that puts its answer under ``key``; the caller gives every attempt
    ``3 * TIMEOUT_S`` together, and no answer by then counts as refused (a handshake with the HTTP
    dashboard may hang; the thread is abandoned)."""
    results[key] = {"ok": False, "error": f"no answer within {3 * TIMEOUT_S} s"}

    def call() -> None:
        try:
            results[key] = {"ok": True, "got": what()}
        except Exception as exc:  # noqa: BLE001 - every failure is an answer here
            results[key] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    return worker


def warm_up() -> None:
    """Import and run, as root, every code path the attempts take (TLS and plain TCP)."""
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    with (LocalCluster(n_workers=0, processes=False, host="127.0.0.1", dashboard_address=None,
                       security=Security.temporary()) as cluster, Client(cluster) as client):
        client.run_on_scheduler(os.getuid)
        asyncio.run(identity(cluster.scheduler_address, cluster.security))
    with LocalCluster(n_workers=0, processes=False, host="127.0.0.1", protocol="tcp://",
                      dashboard_address=None) as cluster:
        asyncio.run(identity(cluster.scheduler_address, None))


def main() -> int:
    uid, gid, record, credentials, *ports = sys.argv[1:]
    warm_up()
    os.setgroups([])
    os.setgid(int(gid))
    os.setuid(int(uid))
    own_tls = Security.temporary()  # a certificate of this user's: the cluster must not trust it
    scheduler = json.loads(Path(record).read_text())["scheduler"]
    results: dict = {"uid": os.getuid(), "scheduler": scheduler}

    def run_code() -> int:
        security = own_tls if scheduler.startswith("tls://") else None
        with Client(scheduler, timeout=TIMEOUT_S, security=security) as client:
            return client.run_on_scheduler(os.getuid)  # the uid the sweep's scheduler runs code as

    attempts = [attempt(run_code, results, "client"),
                attempt(lambda: len(Path(credentials).read_bytes()), results, "credentials")]
    for port in ports:
        for kind, security in (("tcp", None), ("tls", own_tls)):
            address = f"{kind}://127.0.0.1:{port}"
            attempts.append(attempt(lambda a=address, s=security: asyncio.run(identity(a, s)), results,
                                    f"{kind}:{port}"))
    deadline = time.monotonic() + 3 * TIMEOUT_S  # the attempts run at once: one wait for all
    for worker in attempts:
        worker.join(max(0.0, deadline - time.monotonic()))
    print(json.dumps(results), flush=True)
    return 0


if __name__ == "__main__":
    os._exit(main())  # without waiting for an abandoned attempt
