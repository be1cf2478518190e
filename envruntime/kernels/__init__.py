"""Pure Numba math shared by the managers and the direct task variants: row formulas both call (so
they agree bit for bit) and array kernels over ``(N, ...)`` rows, each checked against a NumPy oracle.
May import numpy, numba and other ``envruntime.kernels`` modules only."""

# ``scalar`` holds scalar formulas (one row, one value) that both variants call, so a fused direct
# kernel computes bit-for-bit what the manager terms compute. The other modules hold array kernels
# over ``(N, ...)`` rows.
#
# Kernels over rows run in parallel: ``rows_kernel`` (``parallel.py``) is ``njit(cache=True,
# parallel=True)`` with a ``prange`` over rows, on ``numba.get_num_threads()`` threads (the bench's
# ``--threads``), in the manager kernels and the direct variants' fused kernels alike. Each row is
# computed by the same serial code, so results are bitwise those of the serial build
# (tests/envruntime/test_parallel_kernels.py compares every output of all tasks and variants).
#
# Why the earlier ``parallel=True`` try stalled, and the fix: Numba picked its ``omp`` layer
# (GNU libgomp; no TBB here), whose idle workers spin-wait for GOMP_SPINCOUNT (300k spins,
# milliseconds) after every parallel region. Between regions the cores belong to MuJoCo's
# persistent batch pool or MotrixSim's Rayon pool, which also wait for work by spinning for a while,
# so each side's spinning workers took the cores the other needed. Measured on this 2-core host
# (loaded by other jobs), a 4096-row kernel called between MuJoCo steps took 2.8-15.6 ms median
# (max 22 ms) with the default ``omp`` settings, 0.22 ms with ``OMP_WAIT_POLICY=PASSIVE`` and
# 0.27-0.5 ms with the ``workqueue`` layer (MotrixSim: 0.57 ms median, max 18 ms, against 0.22 ms
# passive). ``parallel.py`` therefore sets ``OMP_WAIT_POLICY=PASSIVE`` unless the user set it,
# before Numba loads libgomp, and prefers ``omp`` then ``workqueue`` over ``tbb``; the bench sets
# ``numba.set_num_threads`` from ``--threads``, and each env step then runs its kernels on as many of
# those threads as pay on the host at that moment (``envruntime.envs.kernel_threads``; the layers
# measured on a busy host are in ``parallel.py``).
