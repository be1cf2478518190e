"""Drills with a hostile bench: it leaves a FIFO or a link to ``/dev/zero`` where its stream or result
should be, floods its stream faster than it can be read, or writes markup (rich, Markdown, HTML)
where its errors go, and its case names and refs carry the same. The worker neither blocks nor reads
without bound, every run gets its row, the host is free for the next run, and every report shows the
text as the characters it is."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import yaml
from drill_helpers import MISBEHAVE, client, finish, record_of
from fakebench.fakerepo import FakeRepo, git, make_fake_repo

from orchestrator.errors import EXIT_OK, EXIT_RUN_FAILED

MARKUP_CASE = "[/x] *a* <script>alert(1)</script>"
MARKUP_REF = "<b>bold</b>"  # a branch name git accepts


def misbehaving_sweep(repo: FakeRepo, cases: list[str], mode: str = "{case}", **overrides) -> Path:
    """One side, ``misbehave.py --mode MODE`` (default: each case is a mode), one run per case."""
    sweep = {"name": "drill", "sides": {"only": {"ref": "HEAD"}}, "baseline": "only", "cases": cases,
             "command": ["{python}", str(MISBEHAVE), "--stream", "{stream}", "--result", "{result}",
                         "--mode", mode],
             "repeats": 1, "timeout_s": 60, "continue_on_error": True, **overrides}
    path = repo.path / "drill.yaml"
    path.write_text(yaml.safe_dump(sweep, sort_keys=False))
    return path


def run_drill(repo: FakeRepo, tmp_path: Path, sweep: Path, *options: str) -> tuple[int, str]:
    """``shasweep run`` of ``sweep`` (its own host lock); its exit code and output. A worker blocked for
    good fails the drill after 240 s instead of hanging it."""
    proc = client(repo, ["run", str(sweep), *options], tmp_path / "home", tmp_path / "client.out",
                  SHASWEEP_LOCK=str(tmp_path / "bench.lock"))
    code = finish(proc, timeout_s=240)
    return code, (tmp_path / "client.out").read_text()


def outcomes(repo: FakeRepo) -> dict[str, dict]:
    return {o["case"]: o for o in record_of(repo)["outcomes"]}


def test_a_fifo_at_the_stream_fails_its_run_at_once_and_frees_the_host(tmp_path):
    repo = make_fake_repo(tmp_path)
    code, out = run_drill(repo, tmp_path, misbehaving_sweep(repo, ["fifo-stream", "env"]), "--no-progress")
    assert code == EXIT_RUN_FAILED, out
    runs = outcomes(repo)
    assert runs["fifo-stream"]["status"] == "failed", runs
    assert "stream.jsonl is a FIFO, not a regular file" in runs["fifo-stream"]["error"]
    assert runs["env"]["status"] == "ok", "the next run had the host"
    assert record_of(repo)["status"] == "finished" and "Traceback" not in out


def test_a_fifo_or_dev_zero_at_the_result_fails_its_run_without_blocking_or_reading(tmp_path):
    repo = make_fake_repo(tmp_path)
    sweep = misbehaving_sweep(repo, ["zero-result", "fifo-result", "json-ok"], protocol="json",
                              json={"throughput": "fps"})
    code, out = run_drill(repo, tmp_path, sweep, "--no-progress")
    assert code == EXIT_RUN_FAILED, out
    runs = outcomes(repo)
    assert runs["zero-result"]["status"] == "failed"
    assert "result.json is a symbolic link, not a regular file" in runs["zero-result"]["error"]
    assert runs["fifo-result"]["status"] == "failed"
    assert "result.json is a FIFO, not a regular file" in runs["fifo-result"]["error"]
    assert runs["json-ok"]["status"] == "ok", "the next run had the host"
    assert "Traceback" not in out and "MemoryError" not in out


def test_a_bench_that_floods_its_stream_is_stopped_at_its_timeout_not_after_reading_it_all(tmp_path):
    repo = make_fake_repo(tmp_path)  # 150 MiB of blank lines, then asleep: read whole, it took 132 s
    code, out = run_drill(repo, tmp_path, misbehaving_sweep(repo, ["flood", "env"], timeout_s=5),
                          "--no-progress")
    assert code == EXIT_RUN_FAILED, out
    runs = outcomes(repo)
    assert runs["flood"]["status"] == "timeout", runs["flood"]
    assert "after timeout_s=5; killed its process group" in runs["flood"]["error"]
    walls = pd.read_parquet(repo.path / "results" / "runs").set_index("case")["wall_s"]
    assert walls["flood"] < 45, "the deadline was asked between chunks, not after the whole backlog"
    assert runs["env"]["status"] == "ok", "the next run had the host"


def test_lone_surrogates_in_what_a_bench_writes_are_stored_and_shown_as_their_escapes(tmp_path):
    """JSON's ``\\udc80`` pairs with nothing: decoded, no file or terminal could take it (the run failed
    with a bare UnicodeEncodeError or UnicodeDecodeError); it is kept as the text of its escape."""
    repo = make_fake_repo(tmp_path)
    code, out = run_drill(repo, tmp_path, misbehaving_sweep(repo, ["surrogates"]), "--no-progress")
    assert code == EXIT_OK and "Traceback" not in out and "Unicode" not in out, out
    runs = pd.read_parquet(repo.path / "results" / "runs")
    assert list(runs["status"]) == ["ok"] and runs["audit_note"].tolist() == ["\\udc80"]
    assert runs["physics\\udc80_ms"].tolist() == [1.0] and runs["size\\udc80"].tolist() == [3.0]
    steps = pd.read_parquet(repo.path / "results" / "steps")
    assert set(steps["phase"]) == {"physics\\udc80_ms"}


def test_a_suite_benchmark_named_with_a_lone_surrogate_is_a_case_named_with_its_escape(tmp_path):
    repo = make_fake_repo(tmp_path)
    suite = misbehaving_sweep(repo, ["*"], "surrogate-suite", protocol="pyperf", name="suite")
    proc = client(repo, ["run", str(suite), "--no-progress"], tmp_path / "home", tmp_path / "suite.out",
                  SHASWEEP_LOCK=str(tmp_path / "bench.lock"))
    assert finish(proc, timeout_s=240) == EXIT_OK, (tmp_path / "suite.out").read_text()
    out = (tmp_path / "suite.out").read_text()
    assert "bench\\udc80mark" in out and "Unicode" not in out, out
    sweep_id = record_of(repo, "suite")["sweep_id"]
    cases = pd.read_parquet(repo.path / "results" / "runs" / f"sweep={sweep_id}")
    assert sorted(cases["case"]) == ["bench\\udc80mark", "plain"] and set(cases["status"]) == {"ok"}
    md = (repo.path / "results" / "reports" / f"{sweep_id}.md").read_text()
    assert "bench\\\\udc80mark" in md, "the Markdown escapes the backslash it shows"


def test_markup_in_a_benchs_errors_a_case_name_and_a_ref_is_shown_as_text_everywhere(tmp_path):
    repo = make_fake_repo(tmp_path)
    git(repo.path, "branch", MARKUP_REF)
    sweep = misbehaving_sweep(repo, [MARKUP_CASE, "plain"], "markup", sides={"only": {"ref": MARKUP_REF}})
    code, out = run_drill(repo, tmp_path, sweep)  # with progress bars: their labels carry the case name
    assert code == EXIT_RUN_FAILED, out
    assert "MarkupError" not in out and "Traceback" not in out, out
    assert f"#0 only {MARKUP_CASE}: failed" in out, "the terminal shows the case name as is"
    assert "exited with code 1: [/x] [bold red]not bold[/]" in out, "and the bench's error as it is"
    assert MARKUP_REF in out, "and the ref"
    reports = repo.path / "results" / "reports"
    sweep_id = record_of(repo)["sweep_id"]
    verdicts = json.loads((reports / f"{sweep_id}.verdicts.json").read_text())
    assert verdicts["exit_code"] == EXIT_RUN_FAILED
    md = (reports / f"{sweep_id}.md").read_text()
    assert not re.search(r"(?<!\\)<[A-Za-z/]", md), "no tag in the Markdown is left unescaped"
    assert "\\<script>" in md and "\\<b>bold\\</b>" in md and "\\*a\\*" in md
    assert "\\| not a cell" in md and "\\`not code\\`" in md
    page = (reports / f"{sweep_id}.html").read_text()
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page
