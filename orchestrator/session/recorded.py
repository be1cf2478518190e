"""Where recorded sweeps are: a command's results root and one recorded sweep in it (``SweepRun``),
whose record and report are read when asked for. Light: ``list`` and ``status`` start from here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.errors import InvalidInputError
from orchestrator.plan.roots import results_root_for
from orchestrator.spec.record import SweepRecord
from orchestrator.store import records

if TYPE_CHECKING:
    from orchestrator.analysis.report_model import Report


REPORTS_DIR = "reports"  # the reports under a results root


def reports_dir(results_root: Path) -> Path:
    return results_root / REPORTS_DIR


def locate_results(results_root: str | Path = "results", *, cwd: Path | None = None) -> Path:
    """``results_root`` made absolute: a relative path counts from the git repository holding ``cwd``
    (default: the current directory), else from ``cwd``."""
    return results_root_for(results_root, cwd or Path.cwd())


@dataclass(frozen=True)
class SweepRun:
    """A recorded sweep: its id and results root; its record and report are read when asked for."""

    sweep_id: str
    results_root: Path

    def record(self) -> SweepRecord:
        return records.read_record(self.results_root, self.sweep_id)

    def report(self) -> Report:
        """The report model (``analysis.report_model``): medians, ratios, gate verdicts, exit code;
        ``InvalidInputError`` (exit 2) naming a damaged file or a record of an unexpected shape."""
        import pyarrow as pa

        from orchestrator.analysis.report_model import make_report

        try:
            return make_report(self.results_root, self.sweep_id)
        except pa.ArrowException as exc:  # a damaged file in the results root; pyarrow names it
            raise InvalidInputError(f"cannot read the results of sweep {self.sweep_id!r}: {exc}") from None
        except (KeyError, TypeError, AttributeError) as exc:  # a hand-made or truncated record
            record = records.record_path(self.results_root, self.sweep_id)
            raise InvalidInputError(f"the sweep record {record} has an unexpected shape "
                                    f"({type(exc).__name__}: {exc})") from None


def find_sweep(sweep_id: str = "latest", results_root: str | Path = "results", *,
               cwd: Path | None = None) -> SweepRun:
    """The recorded sweep ``sweep_id`` (``latest``: the newest) under ``results_root``
    (``locate_results``); ``UnknownSweepError`` (exit 2) when there is none."""
    root = locate_results(results_root, cwd=cwd)
    return SweepRun(records.resolve_sweep_id(root, sweep_id), root)
