"""How kernels over rows run in parallel: the ``rows_kernel`` decorator and Numba's threading setup.

``rows_kernel`` compiles a kernel whose outer loop is ``prange`` over rows with
``njit(cache=True, parallel=True)``; it runs on ``numba.get_num_threads()`` threads (the bench
sets them to ``--threads``). Each iteration touches only its own row (scratch arrays are allocated
inside the loop, no sums across rows), so the result is bitwise that of the serial loop. With
``ENVRUNTIME_SERIAL_KERNELS=1`` in the environment at import, every ``rows_kernel`` is compiled
serially and uncached instead (``prange`` is then ``range``): the reference the bitwise test
compares with (uncached so the two builds never share a cache entry; Numba's cache key ignores
``parallel``).

Importing this module also fixes how Numba's workers wait (see ``envruntime.kernels`` for the
measurements): GNU OpenMP's default spin-wait kept its workers busy for milliseconds after every
parallel region, on the cores MuJoCo's and MotrixSim's pools needed next, which is what stalled the
earlier ``parallel=True`` try. So ``OMP_WAIT_POLICY`` defaults to ``PASSIVE`` (set before Numba
loads libgomp at its first parallel launch) and the layer is chosen from ``omp`` then
``workqueue`` (both sleep when idle), before ``tbb``. A user's own ``OMP_WAIT_POLICY``,
``NUMBA_THREADING_LAYER`` or ``NUMBA_THREADING_LAYER_PRIORITY`` is left alone.

On a busy host no layer keeps a fixed thread count cheap (measured in one process, each count's
``update_state_ms`` beside the others', on the 2-core VM with two CPU-bound neighbours):

* ``omp`` passive: every region wakes its workers and waits for all of them (Numba's ``omp for``
  splits the rows statically), so a worker left waiting for a CPU holds the region up: Go2 manager
  at N=256, 2 threads cost 6.0x 1 thread; at N=2048 0.50x (the work outweighs the wake-ups).
  ``numba.set_parallel_chunksize`` only cuts the rows into more pieces, still split statically.
* ``omp`` spinning (``OMP_WAIT_POLICY=ACTIVE``): the workers compete with the neighbours for the
  cores even between regions: G1 motion tracking at N=4096, 8.5x.
* ``workqueue``: the calling thread never computes and every region wakes every pool thread twice,
  so even 1 thread costs a wake-up: 1 thread at N=256 took about 10x ``omp``'s 1 thread (two runs).
* ``tbb`` (pip's ``tbb``, loaded by hand: Numba finds ``libtbb.so.12`` only on the loader's path):
  the caller takes the work no worker stole, 1.14x at N=256, but 1.41x at N=2048.

So the layer stays ``omp`` with passive waits, and what adapts is the thread count: each env step
chooses it from what its kernels cost (``envruntime.envs.kernel_threads``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
from numba import njit, prange

SERIAL_ENV = "ENVRUNTIME_SERIAL_KERNELS"
SERIAL = os.environ.get(SERIAL_ENV) == "1"
LAYER_PRIORITY: tuple[str, ...] = ("omp", "workqueue", "tbb")


def _configure_threading() -> None:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if "NUMBA_THREADING_LAYER" not in os.environ and "NUMBA_THREADING_LAYER_PRIORITY" not in os.environ:
        numba.config.THREADING_LAYER_PRIORITY = list(LAYER_PRIORITY)


_configure_threading()


def rows_kernel(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``njit(cache=True, parallel=True)``, or serial and uncached under ``ENVRUNTIME_SERIAL_KERNELS=1``."""
    return njit(cache=False)(fn) if SERIAL else njit(cache=True, parallel=True)(fn)


@rows_kernel
def _touch(out: np.ndarray) -> None:
    for r in prange(out.shape[0]):
        out[r] = r


def threading_layer() -> str:
    """Launch Numba's threading layer now (a tiny parallel kernel) and return its name;
    ``"serial"`` under ``ENVRUNTIME_SERIAL_KERNELS=1``."""
    _touch(np.zeros(numba.get_num_threads()))
    return "serial" if SERIAL else numba.threading_layer()
