"""Parallel kernels (``prange`` over rows on several threads) give bitwise the results of the same
kernels compiled serially: every output of short rollouts of every task and variant, rows ending
by falls and time-outs. Each build runs in its own interpreter (``ENVRUNTIME_SERIAL_KERNELS`` is
read at import)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from envruntime.kernels.parallel import LAYER_PRIORITY, SERIAL_ENV

REPO = Path(__file__).resolve().parents[2]
ROLLOUT = Path(__file__).with_name("rollout.py")
PARALLEL_THREADS = 4  # more threads than this host's cores is fine: only results are compared


def run_rollout(out: Path, threads: int, serial: bool) -> dict[str, np.ndarray]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "NUMBA_NUM_THREADS": str(PARALLEL_THREADS)}
    env.pop(SERIAL_ENV, None)
    if serial:
        env[SERIAL_ENV] = "1"
    proc = subprocess.run([sys.executable, str(ROLLOUT), str(out), str(threads)], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=1500, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(out) as data:
        return dict(data)


@pytest.mark.slow
def test_parallel_kernels_are_bitwise_equal_to_the_serial_ones(tmp_path: Path) -> None:
    serial = run_rollout(tmp_path / "serial.npz", 1, serial=True)
    parallel = run_rollout(tmp_path / "parallel.npz", PARALLEL_THREADS, serial=False)
    assert str(serial.pop("layer")) == "serial"
    assert str(parallel.pop("layer")) in LAYER_PRIORITY[:2]  # omp or workqueue: workers that sleep
    assert int(parallel.pop("threads")) == PARALLEL_THREADS and int(serial.pop("threads")) == 1
    assert serial.keys() == parallel.keys()
    for key, expected in serial.items():
        np.testing.assert_array_equal(parallel[key], expected, err_msg=key)
    ended = sum(len(v) for k, v in serial.items() if k.endswith("/done_rows"))
    assert ended >= 60  # rows ended, so the done-row kernels ran on row subsets too


def test_importing_the_kernels_makes_omp_workers_wait_passively() -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "NUMBA_THREADING_LAYER", "NUMBA_THREADING_LAYER_PRIORITY")}
    code = ("import os, numba; import envruntime.kernels.parallel as p; "
            "print(os.environ['OMP_WAIT_POLICY'], numba.config.THREADING_LAYER_PRIORITY, "
            "p.threading_layer())")
    proc = subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": str(REPO)}, cwd=REPO,
                          capture_output=True, text=True, timeout=300, check=True)
    assert proc.stdout.split()[0] == "PASSIVE"
    assert "['omp', 'workqueue', 'tbb']" in proc.stdout and proc.stdout.split()[-1] in ("omp", "workqueue")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**env, "PYTHONPATH": str(REPO), "OMP_WAIT_POLICY": "ACTIVE"}, check=True)
    assert proc.stdout.split()[0] == "ACTIVE"  # a user's own setting is kept


def test_parallel_kernels_load_from_numba_s_cache() -> None:
    """``cache=True`` still works with ``parallel=True``: a second interpreter loads the kernel
    from the on-disk cache instead of compiling it."""
    code = ("import numpy as np; from envruntime.kernels.reward import weighted_sum; "
            "weighted_sum(np.ones((64, 3)), np.ones(3), np.zeros(64)); "
            "print(len(weighted_sum.stats.cache_hits), weighted_sum.targetoptions.get('parallel'))")
    env = {k: v for k, v in os.environ.items() if k != SERIAL_ENV}
    runs = [subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPATH": str(REPO)}, cwd=REPO,
                           capture_output=True, text=True, timeout=300, check=True).stdout.split()
            for _ in range(2)]
    assert runs[1] == ["1", "True"]
