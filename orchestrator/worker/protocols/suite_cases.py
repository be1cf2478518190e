"""A suite run's cases (docs/design.md, "Suites"): which benchmarks of the output ``cases`` selects,
and each as a run of its own (its run key derived from the suite run's, ``capabilities.suite_case_key``).
"""

from __future__ import annotations

from dataclasses import replace

from orchestrator.capabilities import DISCOVER, benchmark_selected, suite_case_key, suite_case_name
from orchestrator.contract import NO_STEPS, PlannedRun, RunResult
from orchestrator.worker.protocols.suite import SuiteReader


def select_cases(reader: SuiteReader, patterns: tuple[str, ...]) -> tuple[list[str], str | None]:
    """The names of the reader's benchmarks some pattern selects, in the output's order, and why a
    pattern selects nothing (named as the sweep's ``cases[i]``), or None."""
    names = list(reader.benchmarks)
    for i, pattern in enumerate(patterns):
        if pattern != DISCOVER and not any(benchmark_selected(name, [pattern]) for name in names):
            return [], (f"cases[{i}] {pattern!r}: no benchmark of the {reader.tool} output matches it; "
                        f"it has {reader.names_text()}")
    return [name for name in names if benchmark_selected(name, patterns)], None


def case_results(run: PlannedRun, reader: SuiteReader, result: RunResult) -> RunResult:
    """``result`` of suite run ``run`` with its ``cases``: one run per selected benchmark, or failed
    with ``bad_input`` when a pattern selects nothing."""
    names, problem = select_cases(reader, run.suite_cases)
    if problem is not None:
        return replace(result, status="failed", error=problem, bad_input=problem, summary=None,
                       steps=NO_STEPS)
    cases = []
    for name in names:
        error = reader.select(name)
        if error is None:
            numbers = {"header": reader.header, "summary": reader.summary, "steps": reader.steps}
        else:
            numbers = {"header": None, "summary": None, "steps": NO_STEPS}
        cases.append((case_run(run, name), replace(result, status="failed" if error else "ok", error=error,
                                        suite_run_key=run.run_key, **numbers)))
    return replace(result, cases=cases)


def case_run(run: PlannedRun, name: str) -> PlannedRun:
    """The run of benchmark ``name`` read from suite run ``run``: its case the name made safe
    (``capabilities.suite_case_name``), its key derived from the suite run's."""
    case = suite_case_name(name)
    return replace(run, case=case, run_key=suite_case_key(run.run_key, case), algo=None, task=None, sim=None,
                   suite_cases=())
