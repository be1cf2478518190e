"""``shasweep ci`` up to the sweep, in-process on clones of the generated repository
(examples/make_ci_repo.py): the refs a GitHub event gives, ``--plan`` and ``--locate``, and each bad
input as one line, exit 2, with the comment and the step outputs saying why."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.cli.main import main
from orchestrator.errors import EXIT_INVALID, EXIT_OK
from orchestrator.render.ci_comment import MARKER

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
from make_ci_repo import make_ci_repo  # noqa: E402
from make_demo_repo import commit, git  # noqa: E402


@pytest.fixture(scope="module")
def origin(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    repo = tmp_path_factory.mktemp("origin") / "repo"
    return repo, make_ci_repo(repo)


def clone(origin: tuple[Path, dict[str, str]], where: Path, branch: str, *flags: str) -> Path:
    path = where / "clone"
    subprocess.run(
        ["git", "clone", "-q", *flags, "--branch", branch, f"file://{origin[0]}", str(path)], check=True
    )
    return path


def outputs_env(clone_path: Path) -> dict[str, str]:
    lines = (clone_path / ".shasweep" / "ci" / "outputs.env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines)


def github_event(tmp_path: Path, monkeypatch, base: str, head: str) -> Path:
    """A pull request's GitHub environment; returns the GITHUB_OUTPUT file."""
    event = tmp_path / "event.json"
    event.write_text(
        json.dumps(
            {
                "pull_request": {
                    "number": 3,
                    "base": {"sha": base, "repo": {"full_name": "o/r"}},
                    "head": {"sha": head, "repo": {"full_name": "o/r"}},
                }
            }
        )
    )
    output = tmp_path / "github_output"
    for name, value in {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_REPOSITORY": "o/r",
    }.items():
        monkeypatch.setenv(name, value)
    return output


def test_plan_from_a_fresh_clone_finds_the_suite_and_the_merge_base(origin, tmp_path, monkeypatch, capsys):
    path = clone(origin, tmp_path, "slower")
    monkeypatch.chdir(path)
    assert main(["ci", "--plan"]) == EXIT_OK
    out = capsys.readouterr().out
    shas = origin[1]
    head, merge_base = shas["slower"][:12], shas["main"][:12]
    assert f"shasweep ci: {head} (HEAD) against the merge base {merge_base} with origin/HEAD" in out
    assert "pytest-benchmark tests in benchmarks" in out and "--benchmark-json={result}" in out
    assert f"base: {{ref: {shas['main']}}}" in out and "aa: false" in out


def test_instrument_valgrind_from_the_project_or_the_command_line_reaches_the_sweep(origin, tmp_path,
                                                                                    monkeypatch, capsys):
    path = clone(origin, tmp_path, "slower")
    monkeypatch.chdir(path)
    assert main(["ci", "--plan", "--instrument", "valgrind"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "instrument: valgrind" in out and "under valgrind, 2 sides" in out, out
    assert "the first 2 rounds, counted, ~" in out and "the later ones ~" in out, out
    assert "{metric: instructions, max_ratio: 1.02" in out, "the counts gated as the time is"
    with (path / "pyproject.toml").open("a") as file:
        file.write('\n[tool.shasweep]\ninstrument = "valgrind"\n')
    assert main(["ci", "--plan"]) == EXIT_OK
    assert "instrument: valgrind" in capsys.readouterr().out
    assert main(["ci", "--plan", "--instrument", "none"]) == EXIT_OK, "the command line over the project"
    assert "instrument: none" in capsys.readouterr().out
    assert main(["ci", "--instrument", "callgrind"]) == EXIT_INVALID
    assert "--instrument: 'callgrind' is not one of none, valgrind" in capsys.readouterr().err


def test_the_pull_request_event_gives_the_refs(origin, tmp_path, monkeypatch, capsys):
    path = clone(origin, tmp_path, "main", "--no-single-branch")
    shas = origin[1]
    output = github_event(tmp_path, monkeypatch, base=shas["unchanged"], head=shas["slower"])
    monkeypatch.chdir(path)
    assert main(["ci", "--plan"]) == EXIT_OK
    assert (
        f"{shas['slower'][:12]} ({shas['slower']}) against the merge base {shas['main'][:12]}"
        in capsys.readouterr().out
    )
    assert main(["ci", "--locate"]) == EXIT_OK
    assert output.read_text() == f"results={path}/.shasweep/results\nout={path}/.shasweep/ci\n"


def test_base_equal_to_head_is_an_a_a_comparison_and_says_so(origin, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(clone(origin, tmp_path, "slower"))
    assert main(["ci", "--plan", "--base", "HEAD"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "an A/A comparison, the machine against itself" in out and "aa: true" in out


def test_a_shallow_clone_exits_2_with_the_fix_in_every_output(origin, tmp_path, monkeypatch, capsys):
    path = clone(origin, tmp_path, "slower", "--depth", "1")
    output = github_event(tmp_path, monkeypatch, base=origin[1]["main"], head=origin[1]["slower"])
    monkeypatch.chdir(path)
    assert main(["ci"]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not in this shallow clone" in err and "fetch-depth: 0" in err
    comment = (path / ".shasweep" / "ci" / "comment.md").read_text()
    assert (
        comment.startswith(f"{MARKER}\n### shasweep: ERROR — nothing compared (exit 2)")
        and "fetch-depth: 0" in comment
    )
    assert (
        outputs_env(path)["SHASWEEP_VERDICT"] == "ERROR"
        and "verdict=ERROR\nexit-code=2\n" in output.read_text()
    )
    assert "fetch-depth: 0" in (tmp_path / "summary.md").read_text()


def test_no_suite_says_what_was_looked_for(tmp_path, monkeypatch, capsys):
    repo = tmp_path / "plain"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, {repo / "lib.py": "x = 1\n"}, "one")
    commit(repo, {repo / "lib.py": "x = 2\n"}, "two")
    monkeypatch.chdir(repo)
    assert main(["ci", "--base", "HEAD~1"]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert "no benchmark suite" in err and "looked for a shasweep.yaml, pytest-benchmark" in err
    assert outputs_env(repo)["SHASWEEP_EXIT_CODE"] == "2"


def test_a_budget_too_small_for_one_comparison_names_the_minimum(origin, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(clone(origin, tmp_path, "slower"))
    assert main(["ci", "--budget", "20s"]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert err.startswith("shasweep: error: --budget: 20s is less than the ") and "give --budget" in err
    assert main(["ci", "--budget", "soon"]) == EXIT_INVALID
    assert "--budget: 'soon' is not a duration" in capsys.readouterr().err


def test_a_suite_new_at_the_head_is_nothing_to_compare(tmp_path, monkeypatch, capsys):
    repo = tmp_path / "new"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, {repo / "lib.py": "def f():\n    return 1\n"}, "lib")
    (repo / "bench").mkdir()
    commit(
        repo,
        {repo / "bench" / "test_f.py": "import lib\n\ndef test_f(benchmark):\n    benchmark(lib.f)\n"},
        "benchmarks",
    )
    monkeypatch.chdir(repo)
    assert main(["ci", "--base", "HEAD~1"]) == EXIT_OK
    assert "nothing compared: the merge base" in capsys.readouterr().out
    assert outputs_env(repo)["SHASWEEP_VERDICT"] == "SKIPPED"
    assert "the suite is new here" in (repo / ".shasweep" / "ci" / "comment.md").read_text()


def test_a_round_is_estimated_from_the_last_finished_ci_sweep_of_the_same_command_and_instrument(tmp_path):
    from orchestrator.session.ci import earlier_round_s
    from orchestrator.spec.record import SweepRecord
    from orchestrator.store.records import write_record

    command = ["{python}", "-m", "pytest", "bench", "--benchmark-json={result}"]
    sweeps = [
        ("ci-20260101T000000", "finished", 100.0, command),
        ("ci-20260102T000000", "finished", 40.0, command),
        ("ci-20260103T000000", "stopped", 5.0, command),
        ("ci-20260104T000000", "finished", 7.0, ["other"]),
        ("ci-20260105T000000", "finished", 400.0, command),  # instrument: valgrind
    ]
    for sequence, (sweep_id, status, wall_s, argv) in enumerate(sweeps):
        spec = {
            "name": "ci",
            "baseline": "base",
            "cases": ["*"],
            "sides": {"base": {"ref": "a"}, "head": {"ref": "b"}},
            "protocol": "pytest-benchmark",
            "command": argv,
            "repeats": 2,
            "max_repeats": 9,
            "gates": [{"metric": "time_ms", "max_ratio": 1.02}],
            "instrument": "valgrind" if wall_s == 400.0 else "none",
        }
        write_record(
            tmp_path,
            SweepRecord.from_json(
                {
                    "sweep_id": sweep_id,
                    "sequence": sequence,
                    "status": status,
                    "planned_runs": 4,
                    "spec": spec,
                    "wall_s": wall_s,
                    "adaptive": {"repeats": 2, "max_repeats": 9, "rounds": 4},
                    "sides": {},
                }
            ),
        )
    assert earlier_round_s(tmp_path, command) == 10.0, (
        "the newest finished sweep of that command: 40 s / 4 rounds"
    )
    assert earlier_round_s(tmp_path, command, "valgrind") == 100.0, "an instrumented round is its own"
    assert earlier_round_s(tmp_path, ["never", "ran"]) is None
    assert earlier_round_s(tmp_path / "empty", command) is None
