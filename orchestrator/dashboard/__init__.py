"""The live shasweep board on the Dask dashboard, as a scheduler preload (its imports: docs/design.md,
"Import rules").

``dask scheduler --preload orchestrator.dashboard`` (``shasweep scheduler`` and the embedded
cluster of ``shasweep run`` do this) adds ``BoardPlugin`` to the scheduler and serves the page
at ``/shasweep`` of its dashboard (``serving``: beside Dask's dashboard, or, where the scheduler
started without one, with it on the first request). Importing this module imports no Bokeh.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orchestrator.dashboard.plugin import BoardPlugin
from orchestrator.dashboard.serving import PAGE, serve_board

if TYPE_CHECKING:
    from distributed import Scheduler


async def dask_setup(scheduler: Scheduler) -> None:
    """Preload hook: install the board plugin (once), let it catch up with logged events, and serve
    its page."""
    plugin = BoardPlugin()
    scheduler.add_plugin(plugin, idempotent=True)
    if scheduler.plugins.get(plugin.name) is plugin:
        await plugin.start(scheduler)
        serve_board(scheduler)


def page_url(dashboard_link: str | None) -> str | None:
    """The board's URL given the dashboard link Dask reports (``http://HOST:PORT/status``)."""
    if not dashboard_link:
        return None
    base = dashboard_link.removesuffix("/status").rstrip("/")
    return base + PAGE
