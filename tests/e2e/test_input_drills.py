"""Drills with input that looks right and is not: a ref that names two commits, two sides that are one,
an environment value no process can take, a umask, and a repository with submodules. Each is said
before anything runs (exit 2 naming the key or the ref) or shown where the reader looks."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml
from drill_helpers import CLIENT, client, finish, record_of, write_sweep
from fakebench.fakerepo import FakeRepo, git, make_fake_repo

from orchestrator.errors import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED

# Local submodule URLs are refused by git's default protocol.file.allow=user; a lab allows them so.
ALLOW_FILE_SUBMODULES = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "protocol.file.allow",
                         "GIT_CONFIG_VALUE_0": "always"}
READ_SUB = '''import json, sys
text = open("sub/data.txt").read().strip()
json.dump({"value": float(len(text))}, open(sys.argv[1], "w"))
'''


def shasweep(repo: FakeRepo, tmp_path: Path, *argv: str, **env: str) -> tuple[int, str]:
    """``shasweep ARGV`` in the fake repo; its exit code and output."""
    out = tmp_path / "out.txt"
    proc = client(repo, list(argv), tmp_path / "home", out, SHASWEEP_LOCK=str(tmp_path / "bench.lock"), **env)
    return finish(proc), out.read_text()


def test_an_ambiguous_ref_is_an_input_error_naming_its_candidates_unless_written_in_full(tmp_path):
    repo = make_fake_repo(tmp_path)
    git(repo.path, "tag", "v1", repo.shas[0])
    git(repo.path, "branch", "v1", repo.shas[1])  # same name, another commit
    sweep = write_sweep(repo, sides={"old": {"ref": "v1"}, "new": {"ref": "HEAD"}})
    code, out = shasweep(repo, tmp_path, "plan", str(sweep))
    assert code == EXIT_INVALID, out
    assert out.startswith("shasweep: error: sides.old.ref: 'v1' is ambiguous"), out
    assert f"refs/heads/v1 ({repo.shas[1][:12]})" in out and f"refs/tags/v1 ({repo.shas[0][:12]})" in out
    assert len(out.strip().splitlines()) == 1 and not (repo.path / "results").exists()

    prefix = repo.shas[1][:7]  # a branch named like the short SHA of another commit
    git(repo.path, "branch", prefix, repo.shas[0])
    code, out = shasweep(repo, tmp_path, "plan", str(sweep), f"sides.old.ref={prefix}")
    assert code == EXIT_INVALID and f"commit {repo.shas[1][:12]} (by its short SHA)" in out, out

    code, out = shasweep(repo, tmp_path, "plan", str(sweep), "sides.old.ref=refs/tags/v1")
    assert code == EXIT_OK and f"side old (baseline): refs/tags/v1 = {repo.shas[0]}" in out, out


def test_two_sides_of_one_commit_are_an_aa_sweep_said_in_plan_and_report_unless_meant(tmp_path):
    repo = make_fake_repo(tmp_path)
    git(repo.path, "branch", "main-copy", repo.shas[1])
    sweep = write_sweep(repo, sides={"old": {"ref": "main-copy"}, "new": {"ref": "HEAD"}}, step_ms=5)
    warning = (f"warning: sides old and new run the same commit {repo.shas[1][:12]} with the same settings, "
               "an A/A comparison; set aa: true if that is the intent")
    code, out = shasweep(repo, tmp_path, "plan", str(sweep))
    assert code == EXIT_OK and warning in out, out
    code, out = shasweep(repo, tmp_path, "run", str(sweep), "--no-progress")
    assert code == EXIT_OK and out.startswith(warning), out  # said when it starts
    assert out.count("an A/A comparison") == 2, out  # and in the report
    sweep_id = record_of(repo)["sweep_id"]
    assert warning in (repo.path / "results" / "reports" / f"{sweep_id}.md").read_text()

    code, out = shasweep(repo, tmp_path, "plan", str(sweep), "aa=true")
    assert code == EXIT_OK and "A/A" not in out, out
    code, out = shasweep(repo, tmp_path, "plan", str(sweep), "sides.new.overrides=[params.num_envs=16]")
    assert code == EXIT_OK and "A/A" not in out, "sides of one commit that compare settings are meant"


def test_an_env_value_with_a_nul_byte_or_a_line_break_is_refused_at_load(tmp_path):
    repo = make_fake_repo(tmp_path)
    for value in ("a\0b", "a\nb"):
        sweep = write_sweep(repo, env={"BENCH_FLAG": value})
        code, out = shasweep(repo, tmp_path, "plan", str(sweep))
        assert code == EXIT_INVALID, out
        assert out.startswith("shasweep: error: env.BENCH_FLAG: must not hold a NUL byte or a line break")
        assert not (repo.path / "results").exists()


def test_every_report_file_follows_the_umask(tmp_path):
    repo = make_fake_repo(tmp_path)
    sweep = write_sweep(repo, step_ms=5)
    environ = {**os.environ, "SHASWEEP_HOME": str(tmp_path / "home"), "SHASWEEP_LOCK": str(tmp_path / "lock")}
    done = subprocess.run([sys.executable, "-c", CLIENT, "run", str(sweep), "--no-progress"], cwd=repo.path,
                          env=environ, umask=0o027, capture_output=True, text=True, timeout=300)
    assert done.returncode in (EXIT_OK, 4), done.stdout + done.stderr
    reports = sorted((repo.path / "results" / "reports").iterdir())
    assert {p.suffix for p in reports} == {".md", ".csv", ".json", ".html"}
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in reports}
    assert set(modes.values()) == {0o640}, modes


def make_repo_with_submodule(tmp_path: Path) -> FakeRepo:
    """A repository whose two commits record its submodule ``sub`` at two commits: ``sub/data.txt``
    holds 3 and then 5 characters; its bench reports that length."""
    sub, main = tmp_path / "subrepo", tmp_path / "mainrepo"
    for path in (sub, main):
        path.mkdir()
        git(path, "init", "-q")
    sub_commits = []
    for text in ("one", "three"):
        (sub / "data.txt").write_text(text)
        git(sub, "add", "data.txt")
        git(sub, "commit", "-q", "-m", text)
        sub_commits.append(git(sub, "rev-parse", "HEAD"))
    (main / "read_sub.py").write_text(READ_SUB)
    git(main, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "sub")
    shas = []
    for commit in sub_commits:
        git(main / "sub", "checkout", "-q", commit)
        git(main, "add", "read_sub.py", "sub", ".gitmodules")
        git(main, "commit", "-q", "-m", f"sub at {commit[:8]}")
        shas.append(git(main, "rev-parse", "HEAD"))
    return FakeRepo(path=main, shas=(shas[0], shas[1]))


def test_submodules_are_checked_out_per_worktree_at_the_recorded_commits_when_asked(tmp_path):
    repo = make_repo_with_submodule(tmp_path)
    sweep = {"name": "drill", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
             "cases": ["read"], "command": ["{python}", "read_sub.py", "{result}"], "protocol": "json",
             "json": {"throughput": "value"}, "repeats": 1, "continue_on_error": True}
    path = repo.path / "drill.yaml"
    path.write_text(yaml.safe_dump(sweep))
    code, out = shasweep(repo, tmp_path, "run", str(path), "--no-progress", **ALLOW_FILE_SUBMODULES)
    assert code == EXIT_RUN_FAILED, out  # off by default: the bench finds no sub/data.txt
    assert [o["status"] for o in record_of(repo)["outcomes"]] == ["failed", "failed"], out

    (repo.path / "results").rename(tmp_path / "results-without")
    code, out = shasweep(repo, tmp_path, "run", str(path), "--no-progress", "submodules=true",
                         **ALLOW_FILE_SUBMODULES)
    assert code in (EXIT_OK, 4), out
    outcomes = {o["side"]: o for o in record_of(repo)["outcomes"]}
    assert [outcomes[s]["status"] for s in ("old", "new")] == ["ok", "ok"], outcomes
    rows = pd.read_parquet(repo.path / "results" / "runs").set_index("side")
    assert rows.loc["old", "throughput"] == 3.0, "HEAD~1 records sub at its first commit"
    assert rows.loc["new", "throughput"] == 5.0, "HEAD records sub at its second commit"
