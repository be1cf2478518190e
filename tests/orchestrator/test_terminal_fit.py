"""Terminal output that fits: a suite's case names lose the prefix they share (not their end),
numbers read with SI prefixes and 3 digits, lines break between phrases only (``--no-progress`` into
a log: never), the Host lines say only what was measured, and a history page's file name is safe."""

from __future__ import annotations

import io
import re
from dataclasses import replace

import numpy as np
import pytest
from rich.console import Console
from suite_sweeps import SuiteSweep

from orchestrator.analysis.report_model import make_report
from orchestrator.analysis.verdicts import bounds
from orchestrator.contract import Outcome
from orchestrator.dispatch.progress import SweepProgress
from orchestrator.display import phrase_lines, phrases_of, quantity, si_number, si_seconds, wrapped
from orchestrator.render.fit import shared_prefix
from orchestrator.render.tables import host_lines
from orchestrator.render.terminal import render_report
from orchestrator.session.documents import file_stem

SWEEP = "enums-20260101T000000"
MODULE = "bench/test_enums.py::"
PARAMS = ["int_enum", "str_enum", "flag_enum", "nested_int_enum", "nested_str_enum"]
CASES = [f"{MODULE}test_unstructure_{p}" for p in PARAMS] + [f"{MODULE}test_structure_{p}" for p in PARAMS]


@pytest.mark.parametrize(("value", "metric", "unit", "shown"), [
    (0.0001666, "time_ms", None, "167 ns"), (0.1976, "time_ms", None, "198 µs"),
    (1.535, "time_ms", None, "1.53 ms"), (2613.0, "time_ms", None, "2.61 s"),
    (5_438_590.0, "throughput", "calls", "5.44 M calls/s"), (999_950.0, "throughput", "calls", "1 M calls/s"),
    (638.6, "throughput", "calls", "639 calls/s"), (18_193.0, "throughput", None, "18.2 k"),
    (19.08, "bench_max_rss_mib", None, "19.1 MiB"), (0.2969, "bench_sys_s", None, "297 ms"),
    (float("nan"), "time_ms", None, "-"),
])
def test_numbers_have_si_prefixes_and_three_digits(value, metric, unit, shown):
    assert quantity(value, metric, unit) == shown
    assert "e+" not in si_number(5.43859e+06) and si_seconds(0) == "0 s"


def test_an_interval_s_bounds_stay_short_however_wide():
    """A first look's interval at many nines' confidence (a ci sweep stopped after 2 rounds) had a
    bound printed as 130 digits in the comment and the job summary."""
    assert bounds(0.97812, 1.0300453) == "[0.978, 1.030]"
    assert bounds(0.0, 3.0490296806441203e129) == "[0.000, 3.05e+129]"
    assert bounds(-1.0, 9999.0) == "[-1.000, 9999.000]"


def test_lines_break_between_phrases_and_a_log_keeps_them_whole():
    verdict = "PASS 0 / FAIL 1 / INCONCLUSIVE 1 — exit 1 (2 case(s) added, 1 removed: not gated)"
    assert phrases_of(verdict) == ["PASS 0 / FAIL 1 / INCONCLUSIVE 1 — exit 1",
                                   "(2 case(s) added, 1 removed: not gated)"]
    assert phrases_of("checksum 0.957, 95% CI [0.739, 1.293]; tokenize") == [
        "checksum 0.957,", "95% CI [0.739, 1.293];", "tokenize"]
    assert wrapped(verdict, 60) == ["PASS 0 / FAIL 1 / INCONCLUSIVE 1 — exit 1",
                                    "  (2 case(s) added, 1 removed: not gated)"]
    assert wrapped(verdict, None) == [verdict], "piped: one line, whole"
    path = "results under /tmp/pytest-of-root/pytest-321/test_run_ends_with_the_verdict0/results"
    assert phrase_lines(["sweep x: 4 runs,", path], 40) == [
        "sweep x: 4 runs,", "  results under", "  /tmp/pytest-of-root/pytest-321/test_ru",
        "  n_ends_with_the_verdict0/results"], "only a phrase longer than a line breaks, on lines of its own"


def finished(error: str) -> Outcome:
    return Outcome(run_key="k", order=3, side="new", case="bench/test_enums.py::test_unstructure_int_enum",
                   sha="b" * 40, repeat=0, status="failed", error=error)


def test_no_progress_lines_into_a_log_are_never_wrapped_and_on_a_terminal_only_between_phrases():
    error = "exit code 1; log /home/user/.cache/shasweep/logs/enums/k/stderr.log: AssertionError"
    log = io.StringIO()
    progress = SweepProgress([], enabled=False, console=Console(file=log, width=40))
    progress.run_finished(finished(error))
    (line,) = log.getvalue().splitlines()
    assert line.endswith(error), "a log line is whole"
    screen = io.StringIO()
    progress = SweepProgress([], enabled=False, console=Console(file=screen, width=60, force_terminal=True,
                                                                color_system=None))
    progress.run_finished(finished(error))
    lines = screen.getvalue().splitlines()
    assert len(lines) > 1 and all(len(text) <= 60 for text in lines)
    assert "failed exit code 1;" in [text.strip() for text in lines], "a phrase that fits stays whole"
    assert any("/home/user/.cache/shasweep/logs/enums/k/stderr.log" in text for text in lines), "and a path"


def test_suite_case_names_lose_their_shared_prefix_not_their_end(tmp_path):
    rng = np.random.default_rng(2)
    SuiteSweep(SWEEP, {"old": CASES, "new": CASES},
               lambda c, s, r: 1.666e-4 * float(np.exp(rng.normal(0, 0.01)))).write(tmp_path)
    report = make_report(tmp_path, SWEEP)
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(render_report(report, 80))
    text = console.export_text()
    assert f"case names below without the prefix they all share: {MODULE}" in text
    for case in CASES:
        short = case.removeprefix(MODULE)
        assert re.search(rf"^{re.escape(short)}\s", text, re.M), f"{short} whole at 80 columns:\n{text}"
    assert MODULE + "test_un" not in text.replace(f"share: {MODULE}", "")
    assert "0.0001666" not in text


def test_shared_prefix_ends_at_a_separator_and_leaves_every_name_something():
    assert shared_prefix(CASES) == MODULE
    assert shared_prefix(["bench/a.py::x", "bench/b.py::y"]) == "bench/"
    assert shared_prefix(["checksum", "tokenize"]) == "" and shared_prefix(["a.py::x"]) == "a.py::"
    assert shared_prefix(["a/b", "a/b/c"]) == "a/" and shared_prefix(["a/", "a/b"]) == "", "never all of one"


def test_host_lines_say_only_what_was_measured(tmp_path):
    SuiteSweep(SWEEP, {"old": ["a"], "new": ["a"]}, lambda c, s, r: 1.0).write(tmp_path)
    report = make_report(tmp_path, SWEEP)
    record = report.record
    host = {"cpu_model": "Test CPU", "cpu_logical": 2, "gpu_name": None, "gpu_driver": None,
            "load_after": None}
    lines = host_lines(replace(report, record=replace(record, host=host)))
    assert lines == ["cpu_logical: 2", "cpu_model: Test CPU"], lines


def test_a_history_page_is_named_without_spaces_or_unsafe_characters():
    stem = file_stem("bench/test_enums.py::test_un[Color red]")
    assert re.fullmatch(r"[A-Za-z0-9._-]+", stem)
    assert stem.startswith("bench_test_enums.py_test_un_Color_red-")
    assert file_stem("sac/g1_walk_flat/mujoco") == "sac_g1_walk_flat_mujoco", "plain names as before"
    assert file_stem("a b") != file_stem("a_b"), "two cases never share a file"
