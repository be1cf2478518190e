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
