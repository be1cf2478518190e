"""``compare``: two recorded sweeps side by side, case by case (``analysis.compare_model``), and the
comparison as a document (``render.compare``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.session.documents import Document
from orchestrator.session.recorded import locate_results, reports_dir
from orchestrator.store.records import resolve_sweep_id

if TYPE_CHECKING:
    from orchestrator.analysis.compare_model import SweepComparison


def compare_sweeps(sweep_a: str, sweep_b: str, results_root: str | Path = "results", *,
                   highlight_pct: float | None = None, cwd: Path | None = None) -> SweepComparison:
    """Sweep ``sweep_a`` (the earlier batch) against ``sweep_b`` (either may be ``latest``) under
    ``results_root`` (``session.recorded.locate_results``); a clear change of at least
    ``highlight_pct`` percent is large (default ``analysis.compare_model.DEFAULT_HIGHLIGHT_PCT``)."""
    from orchestrator.analysis.compare_model import DEFAULT_HIGHLIGHT_PCT, load_comparison

    root = locate_results(results_root, cwd=cwd)
    before, after = (resolve_sweep_id(root, sweep) for sweep in (sweep_a, sweep_b))
    highlight = DEFAULT_HIGHLIGHT_PCT if highlight_pct is None else highlight_pct
    return load_comparison(root, before, after, highlight)


def comparison_document(comparison: SweepComparison, results_root: Path) -> Document:
    """The comparison as Markdown and as a page (default ``reports/compare-<A>-vs-<B>.html``)."""
    from orchestrator.render.compare import comparison_markdown, comparison_page

    name = f"compare-{comparison.before.sweep_id}-vs-{comparison.after.sweep_id}.html"
    return Document(comparison_markdown(comparison), lambda: comparison_page(comparison),
                    reports_dir(results_root) / name)
