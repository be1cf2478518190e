"""A worker process that is about to exit skips the final collection of everything it built.

Python collects every object it still holds at exit; in a bench worker that imported pandas and
Arrow that takes a few hundred milliseconds, which the embedded cluster's close (and so every
``shasweep run``) would wait for. ``QuickExit`` freezes the worker's objects when it closes: the
process ends moments later and the operating system takes its memory back whole.
"""

from __future__ import annotations

import gc

from distributed.diagnostics.plugin import WorkerPlugin


class QuickExit(WorkerPlugin):
    """Freeze the worker's objects at teardown (for a worker process that exits when it closes)."""

    name = "shasweep-quick-exit"

    def teardown(self, worker: object) -> None:
        gc.freeze()
