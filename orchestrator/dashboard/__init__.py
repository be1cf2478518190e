"""The live shasweep board on the Dask dashboard, as a scheduler preload (may import ``contract``,
``errors`` only).

``dask scheduler --preload orchestrator.dashboard`` (``shasweep scheduler`` and the embedded
cluster of ``shasweep run`` do this) adds ``BoardPlugin`` to the scheduler and serves the page
at ``/shasweep`` of its dashboard. Importing this module registers the page; a dashboard started
afterwards in this process serves it.
"""

from __future__ import annotations

from distributed import Scheduler
from distributed.dashboard.scheduler import applications

from orchestrator.dashboard.page import sweep_doc
from orchestrator.dashboard.plugin import BoardPlugin

PAGE = "/shasweep"

applications[PAGE] = sweep_doc


async def dask_setup(scheduler: Scheduler) -> None:
    """Preload hook: install the board plugin (once) and let it catch up with logged events."""
    plugin = BoardPlugin()
    scheduler.add_plugin(plugin, idempotent=True)
    if scheduler.plugins.get(plugin.name) is plugin:
        await plugin.start(scheduler)


def page_url(dashboard_link: str | None) -> str | None:
    """The board's URL given the dashboard link Dask reports (``http://HOST:PORT/status``)."""
    if not dashboard_link:
        return None
    base = dashboard_link.removesuffix("/status").rstrip("/")
    return base + PAGE
