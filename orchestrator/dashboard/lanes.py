"""One lane per bench host of a sweep: what it runs now, what is left of its round, how fast it goes.

Built from the board's run views (``RunView`` as dicts, with ``host_id``, ``started``, ``ended``).
A fleet runs each round whole on one host, so a host's queue is the rest of its current round;
the runs no host has taken yet are the sweep's shared queue, not in any lane.
"""

from __future__ import annotations

LIVE = ("waiting", "running")


def host_lanes(runs: list[dict], now: float) -> list[dict]:
    """Per host id (sorted): ``current`` run (or None), ``queue`` (run orders left in its round),
    ``done``/``ok`` counts and ``runs_per_hour`` since its first run started."""
    hosts = sorted({run["host_id"] for run in runs if run.get("host_id")})
    lanes = []
    for host in hosts:
        mine = [run for run in runs if run.get("host_id") == host]
        current = next((run for run in mine if run["status"] in LIVE), None)
        finished = [run for run in mine if run["status"] not in ("queued", *LIVE)]
        rounds = {run["repeat"] for run in mine if run["status"] in LIVE} or (
            {max(finished, key=lambda r: r["order"])["repeat"]} if finished else set())
        queue = [run["order"] for run in runs if run["status"] == "queued" and run["repeat"] in rounds
                 and not run.get("host_id")]
        starts = [run["started"] for run in mine if run.get("started")]
        elapsed = now - min(starts) if starts else 0.0
        lanes.append({
            "host_id": host, "current": _brief(current) if current else None, "queue": queue,
            "done": len(finished), "ok": sum(run["status"] == "ok" for run in finished),
            "runs_per_hour": 3600.0 * len(finished) / elapsed if elapsed > 0 and finished else None,
        })
    return lanes


def format_lane(lane: dict) -> str:
    """``host h1: running #4 new sac/x/y (12/40), queue #5 #6, 3 done (3 ok), 41.2 runs/h``."""
    current = lane["current"]
    now = "idle" if current is None else (f"{current['status']} #{current['order']} {current['side']} "
                                          f"{current['case']} ({current['progress']})")
    queue = " ".join(f"#{order}" for order in lane["queue"]) or "-"
    rate = f"{lane['runs_per_hour']:.1f} runs/h" if lane["runs_per_hour"] is not None else "- runs/h"
    return f"host {lane['host_id']}: {now}, queue {queue}, {lane['done']} done ({lane['ok']} ok), {rate}"


def _brief(run: dict) -> dict:
    progress = f"{run['done']}/{run['total']}" if run.get("total") else str(run.get("done", 0))
    return {"order": run["order"], "side": run["side"], "case": run["case"], "status": run["status"],
            "progress": progress}
