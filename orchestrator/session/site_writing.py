"""The pages of a ``shasweep site`` build written to its directory: each page rendered only where what
it shows may have changed, written only where its text did, every write a rename into place (a reader
of the site, the board's included, never sees half a page); the reports ``shasweep`` wrote under the
results root copied in (hard links where one file system holds both); pages and copies of cases,
sweeps and reports that are gone removed."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from orchestrator.analysis.site_model import IndexRow, case_view, site_index
from orchestrator.analysis.site_sweeps import BisectInfo, SweepInfo
from orchestrator.render import site_pages
from orchestrator.render.site_assets import renderer_id, site_assets
from orchestrator.render.site_paths import INDEX, SWEEPS, case_path, report_copy, sweep_path
from orchestrator.store.atomic import link_or_copy, write_text_unsynced
from orchestrator.store.site_state import SiteState

REPORT_SUFFIXES: tuple[str, ...] = (".html", ".md")  # a sweep's report files the site copies


@dataclass(frozen=True)
class SiteChanges:
    """What changed since the last build: the sweeps whose pages show something new, the cases whose
    pages do, and whether the index and the list of sweeps may."""

    sweeps: set[str] = field(default_factory=set)
    cases: set[str] = field(default_factory=set)
    index: bool = False


class SitePages:
    """Writes one build's pages into ``out``, keeping ``state.pages`` and ``state.copies`` current."""

    def __init__(self, out: Path, root: Path, state: SiteState) -> None:
        self.out, self.root, self.state = out, root, state
        renderer = renderer_id()
        # nothing written yet, or written by other code: every page is rendered
        self.first = not state.pages or state.renderer != renderer
        state.renderer = renderer
        self.written: list[str] = []
        self.unchanged = 0
        self._kept: set[str] = set()

    def put(self, page: str, text: str) -> None:
        """Write ``page`` unless it already holds ``text``."""
        self._kept.add(page)
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        if self.state.pages.get(page) == digest and (self.out / page).is_file():
            self.unchanged += 1
            return
        write_text_unsynced(self.out / page, text)
        self.state.pages[page] = digest
        self.written.append(page)

    def keep(self, page: str) -> None:
        """``page`` stays as the last build wrote it (not rendered again)."""
        if page in self.state.pages and (self.out / page).is_file():
            self._kept.add(page)

    def write_all(self, series: pd.DataFrame, gates: pd.DataFrame, infos: Mapping[str, SweepInfo],
                  order: list[str], bisects: list[BisectInfo], damaged: list[str], changes: SiteChanges
                  ) -> None:
        """Every page of the site: the index and the list of sweeps when anything changed, the pages of
        the cases and sweeps ``changes`` names (or whose report copy changed), each other page only
        where it is missing."""
        for page, text in site_assets().items():
            self.put(page, text)
        relinked = self._copy_reports(order, bisects)
        everything = self.first or changes.index
        if series.empty:
            self.put(INDEX, site_pages.empty_site_page(str(self.root)))
        elif everything or changes.cases or INDEX not in self.state.pages:
            self._case_pages(series, gates, infos, order, bisects, damaged, changes.cases)
        else:
            self.keep(INDEX)
            for case in series["case"].unique():
                self.keep(case_path(str(case)))
        self._sweep_pages(series, gates, infos, order, bisects, changes.sweeps | relinked)
        self._remove_stale()

    def _sweep_pages(self, series: pd.DataFrame, gates: pd.DataFrame, infos: Mapping[str, SweepInfo],
                     order: list[str], bisects: list[BisectInfo], changed: set[str]) -> None:
        """The list of sweeps and each sweep's page that ``changed`` names or that is missing."""
        self.put(SWEEPS, site_pages.sweeps_page(order, infos))
        stepped = {s: b for b in bisects for s in b.steps}
        cases = series.groupby("sweep_id")["case"].unique() if len(series) else pd.Series(dtype=object)
        by_sweep = _rows_by_sweep(gates)
        for sweep_id in order:
            page = sweep_path(sweep_id)
            if not (self.first or sweep_id in changed or page not in self.state.pages):
                self.keep(page)
                continue
            reports = [report_copy(sweep_id, suffix) for suffix in REPORT_SUFFIXES
                       if report_copy(sweep_id, suffix) in self._kept]
            self.put(page, site_pages.sweep_site_page(
                infos.get(sweep_id) or SweepInfo(sweep_id), by_sweep.get(sweep_id, []),
                sorted(cases.get(sweep_id, [])), reports, stepped.get(sweep_id)))

    def _case_pages(self, series: pd.DataFrame, gates: pd.DataFrame, infos: Mapping[str, SweepInfo],
                    order: list[str], bisects: list[BisectInfo], damaged: list[str], touched: set[str]
                    ) -> None:
        """The pages of the touched cases and the index (the other cases' rows as the last build
        left them in the state)."""
        by_case = dict(tuple(gates.groupby("case", sort=False))) if len(gates) else {}
        rows: dict[str, list[dict]] = {}
        for case, runs in series.groupby("case", sort=True):
            page = case_path(str(case))
            stale = case in touched or page not in self.state.pages or case not in self.state.rows
            if not (self.first or stale):
                self.keep(page)
                rows[case] = self.state.rows[case]
                continue
            mine = by_case.get(case, gates.iloc[:0])
            view = case_view(str(case), runs, mine, infos, bisects)
            self.put(page, site_pages.case_site_page(view, infos, _rows_by_sweep(mine)))
            rows[case] = [history.index_row(view.sides).to_json() for history in view.metrics]
        self.state.rows = rows
        index = site_index([IndexRow.from_json(row) for mine in rows.values() for row in mine], order,
                           len(series), damaged, bisects)
        self.put(INDEX, site_pages.index_page(index, str(self.root)))

    def _copy_reports(self, order: list[str], bisects: list[BisectInfo]) -> set[str]:
        """Copy each sweep's and bisect's report files that are new or changed; the sweeps whose
        copies appeared, changed or went."""
        sources = {report_copy(s, suffix): (s, f"{s}{suffix}") for s in order for suffix in REPORT_SUFFIXES}
        sources |= {report_copy(f"bisect-{b.bisect_id}", ".html"): (None, f"bisect-{b.bisect_id}.html")
                    for b in bisects}
        relinked = set()
        for target, (sweep_id, name) in sources.items():
            source = self.root / "reports" / name
            try:
                found = os.lstat(source)
            except OSError:
                if self.state.copies.pop(target, None) is not None and sweep_id:
                    relinked.add(sweep_id)
                continue
            stamp = [found.st_size, found.st_mtime_ns]
            if self.state.copies.get(target) == stamp and (self.out / target).is_file():
                self._kept.add(target)
            elif link_or_copy(source, self.out / target):
                self.state.copies[target] = stamp
                self._kept.add(target)
                relinked |= {sweep_id} if sweep_id else set()
        return relinked

    def _remove_stale(self) -> None:
        """Remove what an earlier build wrote that this one no longer has (a case or sweep gone)."""
        for page in [p for p in self.state.pages if p not in self._kept]:
            (self.out / page).unlink(missing_ok=True)
            del self.state.pages[page]
        for copy in [c for c in self.state.copies if c not in self._kept]:
            (self.out / copy).unlink(missing_ok=True)
            del self.state.copies[copy]


def _rows_by_sweep(gates: pd.DataFrame) -> dict[str, list[dict]]:
    """Gate rows as dicts, by sweep (what the pages read, without a frame lookup per sweep)."""
    by_sweep: dict[str, list[dict]] = {}
    for row in gates.to_dict("records"):
        by_sweep.setdefault(row["sweep_id"], []).append(row)
    return by_sweep
