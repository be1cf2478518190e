"""``history``: every recorded run of one case over time (``analysis.history_model``), and the history
as a document (``render.history``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.session.documents import Document, file_stem
from orchestrator.session.recorded import locate_results, reports_dir

if TYPE_CHECKING:
    from orchestrator.analysis.history_model import CaseHistory


def case_history(case: str, results_root: str | Path = "results", *, side: str | None = None,
                 sha: str | None = None, metric: str = "throughput", steps: bool = False,
                 last: int | None = None, cwd: Path | None = None) -> CaseHistory:
    """The recorded runs of ``case`` under ``results_root`` (``session.recorded.locate_results``),
    oldest first, with their change points: only ``side``, only SHAs starting with ``sha``, only the
    latest ``last`` sweeps of the case; ``metric`` as each run's mean, or with ``steps`` (a phase) its
    median over the run's measured steps. ``InvalidInputError`` naming what matched nothing."""
    from orchestrator.analysis.history_model import HistoryQuery, load_case_history

    query = HistoryQuery(case=case, side=side, sha=sha, metric=metric, steps=steps, last=last)
    return load_case_history(locate_results(results_root, cwd=cwd), query)


def history_document(history: CaseHistory, results_root: Path) -> Document:
    """The history as Markdown and as a page (default ``reports/history-<case>-<metric>.html``, the
    case as ``documents.file_stem`` writes it)."""
    from orchestrator.render.history import history_markdown, history_page

    query = history.query
    name = f"history-{file_stem(query.case)}-{file_stem(query.metric)}.html"
    return Document(history_markdown(history), lambda: history_page(history),
                    reports_dir(results_root) / name)
