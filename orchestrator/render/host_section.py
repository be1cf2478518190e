"""The report's "Hosts" section: medians per bench host and the hosts whose ratios disagree.

Shown only when a sweep ran on more than one host (``analysis.host_agreement``).
"""

from __future__ import annotations

from orchestrator.analysis.host_agreement import FAMILY_ALPHA, MIN_EFFECT, MIN_ROUNDS
from orchestrator.analysis.report_model import Report
from orchestrator.render.tables import Table, format_number

HOSTS_NOTE = (f"Each round ran whole on one host, so a per-round ratio never mixes machines. When the "
              f"hosts' per-round ratios differ (Kruskal-Wallis, family-wise {100 * FAMILY_ALPHA:g}% over "
              f"every case, side and metric, at least {MIN_ROUNDS} rounds per host), the host farthest "
              f"from the others is flagged if its ratio differs from theirs by more than "
              f"{100 * MIN_EFFECT:g}%.")


def shown(report: Report) -> bool:
    """Whether the report has a Hosts section: runs on two or more hosts."""
    return report.by_host is not None and len(report.by_host.hosts) > 1


def host_lines_by_host(report: Report) -> list[str]:
    """Which hosts ran the sweep, rounds that mixed hosts, and every flagged host."""
    view = report.by_host
    if view is None:
        return []
    lines = [f"hosts: {', '.join(view.hosts)}"]
    if view.mixed_rounds:
        lines.append(f"rounds that mixed hosts (not paired across hosts): {view.mixed_rounds}")
    for check in view.flagged:
        lines.append(f"HOST DISAGREES: {check.host} on {check.case} {check.side} {check.metric}: ratio "
                     f"{check.ratio:.3f} over {check.rounds} rounds vs {check.others_ratio:.3f} on the "
                     f"other hosts (p={check.p_value:.2g} < {check.threshold:.2g})")
    if not view.flagged:
        lines.append("no host disagrees with the others")
    return lines


def host_median_tables(report: Report) -> list[tuple[str, Table]]:
    """Per shown metric (throughput and the gates' metrics): median per (case, side) and host."""
    view = report.by_host
    if view is None:
        return []
    metrics = [m for m in report.metrics if m == "throughput" or m in {g.metric for g in report.gates}]
    out = []
    for metric in metrics:
        table = view.medians.get(metric)
        if table is None or table.empty:
            continue
        rows = [[case, side, *(format_number(v) for v in values)]
                for (case, side), values in zip(table.index, table.to_numpy(), strict=True)]
        out.append((metric, Table(["case", "side", *map(str, table.columns)], rows)))
    return out
