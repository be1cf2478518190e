"""How the ``/shasweep`` page gets onto a scheduler's HTTP server, and when.

Bokeh and Dask's dashboard components take about a second to import, and most sweeps never open a
dashboard. So a scheduler started without Dask's dashboard but with an HTTP server (the embedded
cluster: ``dashboard=False`` and a ``dashboard_address``) gets a catch-all handler instead: the first
request for a page builds Dask's dashboard and the board there, then is redirected to the same
address, which they now serve. A scheduler that built Dask's dashboard at start (``shasweep
scheduler``, ``dask scheduler``) gets the board beside it at once.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from tornado import web

if TYPE_CHECKING:
    from distributed import Scheduler

PAGE = "/shasweep"
PREFIX = "/"  # the HTTP prefix of every scheduler shasweep starts


def serve_board(scheduler: Scheduler) -> None:
    """Serve the board on ``scheduler``'s HTTP server: now beside Dask's dashboard if it has one, else
    with Dask's dashboard on the first request."""
    application = getattr(scheduler, "http_application", None)
    if application is None:
        return
    if any(_is_bokeh(app) for app in application.applications):
        add_board(scheduler)
    else:
        application.add_application(web.Application([(r"/.*", FirstRequest, {"scheduler": scheduler})]))


def add_board(scheduler: Scheduler) -> None:
    """The board as a Bokeh application of its own on ``scheduler``'s HTTP server."""
    from distributed.dashboard.core import BokehApplication
    from distributed.dashboard.scheduler import template_variables
    from tornado.ioloop import IOLoop

    from orchestrator.dashboard.page import sweep_doc

    board = BokehApplication({PAGE: sweep_doc}, scheduler, prefix=PREFIX,
                             template_variables=template_variables(scheduler))
    scheduler.http_application.add_application(board)
    board.initialize(IOLoop.current())
    board.start()


class FirstRequest(web.RequestHandler):
    """Any page asked for before the dashboard exists: build Dask's dashboard and the board, step
    aside, and send the browser back to the same address."""

    def initialize(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    def get(self) -> None:
        application = self.scheduler.http_application
        if self.application in application.applications:  # the first of any requests in flight
            import distributed.dashboard.scheduler as dask_dashboard

            application.applications.remove(self.application)
            dask_dashboard.connect(application, self.scheduler.http_server, self.scheduler, prefix=PREFIX)
            add_board(self.scheduler)
        self.redirect(self.request.uri or PREFIX)


def _is_bokeh(app: web.Application) -> bool:
    """Whether ``app`` is a Bokeh server application (without importing Bokeh where none was)."""
    bokeh = sys.modules.get("bokeh.server.tornado")
    return bokeh is not None and isinstance(app, bokeh.BokehTornado)
