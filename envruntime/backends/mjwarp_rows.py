"""Row-subset transfers of the MJWarp backend: what a reset or a push moves between host and device.

Only the ``k`` affected worlds cross the bus: their ids and new state rows are copied into the first
``k`` rows of pinned staging buffers, uploaded (``k`` rows, not ``N``) and scattered into the
world arrays by a kernel over ``(k, width)``; after the device pass their sensor rows are gathered
by a kernel into a compact ``(k, width)`` buffer and only those rows come back. Imported by
``envruntime.backends.mjwarp_backend`` once warp is known to be installed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import warp as wp


@wp.kernel
def _scatter_rows(ids: wp.array(dtype=wp.int32), rows: wp.array2d(dtype=wp.float32),
                  world: wp.array2d(dtype=wp.float32)):
    i, c = wp.tid()
    world[ids[i], c] = rows[i, c]


@wp.kernel
def _gather_rows(ids: wp.array(dtype=wp.int32), world: wp.array2d(dtype=wp.float32),
                 rows: wp.array2d(dtype=wp.float32)):
    i, c = wp.tid()
    rows[i, c] = world[ids[i], c]


@wp.kernel
def _mark_rows(ids: wp.array(dtype=wp.int32), mask: wp.array(dtype=wp.bool)):
    mask[ids[wp.tid()]] = True


class RowTransfer:
    """Staging for up to ``num_envs`` rows of each named ``(N, width)`` world array, on ``device``."""

    def __init__(self, device: Any, num_envs: int, widths: dict[str, int]) -> None:
        self._device = device
        pinned = device.is_cuda
        self._ids_host = wp.empty(num_envs, dtype=wp.int32, device="cpu", pinned=pinned)
        self._ids = wp.empty(num_envs, dtype=wp.int32, device=device)
        self._host = {n: wp.empty((num_envs, w), dtype=wp.float32, device="cpu", pinned=pinned)
                      for n, w in widths.items()}
        self._staged = {n: wp.empty((num_envs, w), dtype=wp.float32, device=device)
                        for n, w in widths.items()}
        self._k = 0
        self.bytes_moved = 0  # host<->device bytes of the row transfers so far

    def select(self, ids: np.ndarray, mask: Any | None = None) -> None:
        """Upload the ``k`` row ids the next calls act on; with ``mask`` (a device bool array of
        ``N``), also clear it and mark those rows in it on the device."""
        k = self._k = len(ids)
        self._ids_host.numpy()[:k] = ids
        wp.copy(self._ids, self._ids_host, count=k)
        self.bytes_moved += 4 * k
        if mask is not None:
            mask.zero_()
            wp.launch(_mark_rows, dim=k, inputs=[self._ids, mask], device=self._device)

    def scatter(self, name: str, rows: np.ndarray, world: Any) -> None:
        """Write ``rows`` (k, width) into the selected rows of the device array ``world``."""
        host, staged, k = self._host[name], self._staged[name], self._k
        width = host.shape[1]
        np.copyto(host.numpy()[:k], rows, casting="same_kind")
        wp.copy(staged, host, count=k * width)
        self.bytes_moved += 4 * k * width
        wp.launch(_scatter_rows, dim=(k, width), inputs=[self._ids, staged, world], device=self._device)

    def gather(self, name: str, world: Any) -> np.ndarray:
        """The selected rows of the device array ``world``, as a (k, width) host view (after a
        device synchronise; valid until the next gather of ``name``)."""
        host, staged, k = self._host[name], self._staged[name], self._k
        width = host.shape[1]
        wp.launch(_gather_rows, dim=(k, width), inputs=[self._ids, world, staged], device=self._device)
        wp.copy(host, staged, count=k * width)
        wp.synchronize_device(self._device)
        self.bytes_moved += 4 * k * width
        return host.numpy()[:k]
