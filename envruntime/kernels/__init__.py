"""Pure Numba math shared by the managers and the direct task variants: row formulas both call (so
they agree bit for bit) and array kernels over ``(N, ...)`` rows, each checked against a NumPy oracle.
May import numpy, numba and other ``envruntime.kernels`` modules only."""

# ``scalar`` holds scalar formulas (one row, one value) that both variants call, so a fused direct
# kernel computes bit-for-bit what the manager terms compute. The other modules hold array kernels
# over ``(N, ...)`` rows.
#
# Kernels are serial (``njit(cache=True)``, no ``parallel``): at N=4096 each takes tens of
# microseconds against hundreds of milliseconds of physics, and a parallel region would compete
# with the physics thread pool for the same cores (measured: 20 ms stalls per region on a busy
# 2-core host).
