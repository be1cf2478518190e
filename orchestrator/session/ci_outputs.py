"""Every output a CI shows of ``shasweep ci``, written before anything is printed:

- ``<out>/comment.md``: the pull-request comment (``render.ci_comment``, under 4 kB);
- ``<out>/summary.md`` and, appended, ``$GITHUB_STEP_SUMMARY``: the job summary (``render.gh_summary``,
  under 60 kB);
- ``<out>/junit.xml`` and ``<out>/bmf.json``: the gates as JUnit XML, the numbers as Bencher's BMF;
- the sweep's report files and HTML page under ``<results>/reports/`` (``session.reports``);
- ``$GITHUB_OUTPUT`` (appended) and ``<out>/outputs.env``: verdict, exit code, counts, paths
  (``render.ci_outputs``).

A run that could not compare (an error, or a suite new in this change) still gets its comment and
outputs, saying why. The renderers (the report's stack: pandas, numpy) are imported only when an
output is written, so ``shasweep ci --plan`` and ``--locate`` stay light.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.errors import EXIT_OK, InvalidInputError
from orchestrator.plan.ci_commits import CiCommits
from orchestrator.session.ci_context import CiContext
from orchestrator.session.recorded import SweepRun
from orchestrator.session.sweep import say
from orchestrator.store.atomic import write_text_atomic

if TYPE_CHECKING:
    from orchestrator.analysis.report_model import Report


class CiOutputs:
    """The outputs of one ``shasweep ci`` in ``directory`` and where ``context`` wants them."""

    def __init__(self, directory: Path, context: CiContext) -> None:
        self.directory = directory
        self.context = context

    def write_report(self, run: SweepRun, commits: CiCommits, suite: str, budget: str) -> int:
        """Every output of the sweep ``run``; prints its report last. Returns the report's exit code."""
        from orchestrator.render.ci_comment import Compared, ci_comment, report_values
        from orchestrator.render.gh_summary import gh_markdown
        from orchestrator.render.junit import junit_xml
        from orchestrator.session.reports import print_report, write_report_files

        report = run.report()
        written = write_report_files(run, report, html=True)
        page = written[-1]
        compared = Compared(head=commits.head, merge_base=commits.merge_base, base_ref=commits.base_ref,
                            suite=suite, report=self.context.run_url or _shown(page), budget=budget)
        summary = gh_markdown(report)
        files = {"comment": self._write("comment.md", ci_comment(report, compared)),
                 "summary": self._write("summary.md", summary),
                 "junit": self._write("junit.xml", junit_xml(report)),
                 "report": page}
        bmf = self._bmf(report)
        if bmf is not None:
            files["bmf"] = bmf
        self._append(self.context.summary_file, summary)
        self.write_values({**report_values(report), **{name: str(path) for name, path in files.items()}})
        print_report(run, report, written, resume_hint=True)
        return report.exit_code

    def write_error(self, message: str, exit_code: int) -> None:
        """The outputs of a ``shasweep ci`` that failed before it could compare: the error, in one line."""
        from orchestrator.render.ci_comment import note_comment

        text = note_comment(f"ERROR — nothing compared (exit {exit_code})", message, self.context.run_url)
        comment = self._write("comment.md", text)
        self._append(self.context.summary_file, text)
        self.write_values({"verdict": "ERROR", "exit-code": str(exit_code), "comment": str(comment)})

    def write_skipped(self, why: str) -> None:
        """The outputs of a ``shasweep ci`` that had nothing to compare (exit 0)."""
        from orchestrator.render.ci_comment import note_comment

        text = note_comment("nothing compared", why, self.context.run_url)
        comment = self._write("comment.md", text)
        self._append(self.context.summary_file, text)
        self.write_values({"verdict": "SKIPPED", "exit-code": str(EXIT_OK), "comment": str(comment)})

    def write_values(self, values: dict[str, str], *, append_only: bool = False) -> None:
        """``values`` appended to ``$GITHUB_OUTPUT`` and (unless ``append_only``) as ``outputs.env``."""
        from orchestrator.render.ci_outputs import dotenv_text, github_output_text

        self._append(self.context.output_file, github_output_text(values))
        if not append_only:
            self._write("outputs.env", dotenv_text(values))

    def _bmf(self, report: Report) -> Path | None:
        """``bmf.json``; None, said in one line, when a name breaks Bencher's limits."""
        from orchestrator.render.bmf import bmf_document

        try:
            document = bmf_document(report)
        except InvalidInputError as exc:
            say(f"no bmf.json: {exc}")
            return None
        return self._write("bmf.json", json.dumps(document, indent=2, allow_nan=False) + "\n")

    def _write(self, name: str, text: str) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        return write_text_atomic(self.directory / name, text)

    @staticmethod
    def _append(path: Path | None, text: str) -> None:
        """Append ``text`` to a file the CI gave (``$GITHUB_OUTPUT``, ``$GITHUB_STEP_SUMMARY``)."""
        if path is not None:
            with open(path, "a", encoding="utf-8") as file:
                file.write(text)


def _shown(path: Path) -> str:
    """``path`` relative to the current directory when under it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
