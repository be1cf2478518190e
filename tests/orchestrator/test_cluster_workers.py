"""Which bench workers the cluster has (``dispatch.cluster.bench_workers``), as a sweep looks every
few seconds while a run is out: a look never misses a worker that is there. Dask's
``Client.scheduler_info`` returned the client's shared copy, which the client's own periodic update
replaces with one listing no workers, so under load a long lockstep round's checks intermittently
read "the bench worker of host ... left the cluster" while it was measuring."""

from __future__ import annotations

import logging

import dask
from distributed import Client, LocalCluster

from orchestrator.dispatch.cluster import BENCH_RESOURCE, bench_workers
from orchestrator.dispatch.host_choice import BenchHost

LOOKS = 400


def test_a_look_never_misses_a_bench_worker_while_the_client_updates_its_own_copy():
    # the client's update every millisecond instead of every 2 s: the race a loaded host hits now and then
    with dask.config.set({"distributed.client.scheduler-info-interval": "1ms"}), \
            LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                         host="127.0.0.1", dashboard_address="127.0.0.1:0", resources={BENCH_RESOURCE: 1},
                         silence_logs=logging.ERROR) as cluster, Client(cluster) as client:
        (address,) = cluster.scheduler.workers
        host = BenchHost(host_id="h", workers=(address,))
        looks = [bench_workers(client) for _ in range(LOOKS)]
        assert looks == [[address]] * LOOKS, f"{sum(not look for look in looks)} of {LOOKS} looks found none"
        assert all(host.alive(client) for _ in range(LOOKS))
