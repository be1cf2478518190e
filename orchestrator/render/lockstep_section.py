"""The report's lockstep section: which order each case ran in, each round's block-pair ratios, the
waits for a quiet host (the HTML page's timeline of a round's blocks: ``plots.lockstep_blocks_plot``)."""

from __future__ import annotations

import statistics

from orchestrator.analysis.block_pairs import LockstepView
from orchestrator.render.tables import Table

LOCKSTEP_NOTE = ("A lockstep round keeps every side's process resident and gives the host to one at a "
                 "time, one block of steps each; a side's block and the baseline's of the same cycle ran "
                 "seconds apart (a block pair). A gate reads each round as the median of its block pairs' "
                 "ratios; the runs' ratio (their whole throughputs) is shown beside it.")


def order_lines(view: LockstepView) -> list[str]:
    """Per case, the order its runs ran in and, where it fell back, why; the quiet waits."""
    lines = []
    for case, orders in view.orders.items():
        ran = ", ".join(f"{n} runs {order}" for order, n in sorted(orders.items()))
        reason = view.fallbacks.get(case)
        lines.append(f"{case}: {ran}" + (f" (fell back: {reason})" if reason else ""))
    if waits := view.quiet_waits:
        lines.append(f"quiet waits: {len(waits)} runs, {sum(waits):.1f} s in all, longest "
                     f"{max(waits):.1f} s; {view.quiet_missed} started without a quiet second")
    return lines


def pairs_table(view: LockstepView) -> Table:
    """One row per (case, side, round): the block pairs' median ratio and range, the runs' ratio."""
    rows = []
    for found in view.rounds:
        pairs = found.pairs
        rows.append([found.case, found.side, str(found.repeat), str(len(pairs)),
                     f"{statistics.median(pairs):.4f}" if pairs else "-",
                     f"[{min(pairs):.4f}, {max(pairs):.4f}]" if pairs else "-",
                     "-" if found.runs_ratio is None else f"{found.runs_ratio:.4f}"])
    return Table(["case", "side", "round", "block pairs", "median pair ratio", "pair ratios [min, max]",
                  "runs' ratio"], rows)
