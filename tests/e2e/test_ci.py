"""``shasweep ci`` end to end on the generated repository (examples/make_ci_repo.py: 15
pytest-benchmark benchmarks, no shasweep configuration), from a fresh clone: real sweeps on the
embedded cluster. The GitHub Action's steps (action.yml) under a simulated GitHub environment, their
comment checked against a local stand-in of the REST API; the GitLab template's job the same way."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from anyrepo_helpers import EXAMPLES, shasweep
from ci_steps import base_env, run_action, run_gitlab_job

from orchestrator.errors import EXIT_GATE_FAILED, EXIT_GATE_INCONCLUSIVE, EXIT_INVALID, EXIT_OK
from orchestrator.render.ci_comment import MARKER

sys.path.insert(0, str(EXAMPLES))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrator"))
from fake_forge import ForgeServer  # noqa: E402
from make_ci_repo import make_ci_repo  # noqa: E402
from make_demo_repo import commit, git  # noqa: E402

FEW = ("--path", "benchmarks/test_numbers.py")  # 5 of the 15 benchmarks: rounds of a few seconds


def fresh_clone(origin: Path, where: Path, branch: str) -> Path:
    clone = where / "clone"
    subprocess.run(["git", "clone", "-q", "--branch", branch, f"file://{origin}", str(clone)], check=True)
    return clone


def outputs_env(clone: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (clone / ".shasweep/ci/outputs.env").read_text().splitlines())


def test_a_fresh_clone_with_no_configuration_fails_the_slowed_benchmark(tmp_path):
    origin = tmp_path / "origin"
    make_ci_repo(origin, slowdown_pct=60)
    clone = fresh_clone(origin, tmp_path, "slower")
    proc = shasweep("ci", "--budget", "4m", *FEW, cwd=clone, home=tmp_path / "home")
    assert proc.returncode == EXIT_GATE_FAILED, proc.stdout + proc.stderr
    values = outputs_env(clone)
    assert values["SHASWEEP_VERDICT"] == "FAIL" and values["SHASWEEP_FAIL"] == "1", values
    sweep = values["SHASWEEP_SWEEP_ID"]
    verdicts = json.loads((clone / f".shasweep/results/reports/{sweep}.verdicts.json").read_text())[
        "verdicts"
    ]
    by_case = {v["case"].split("::")[-1]: v for v in verdicts}
    assert by_case["test_poly"]["verdict"] == "FAIL"
    assert all(v["verdict"] != "FAIL" for case, v in by_case.items() if case != "test_poly"), by_case
    comment = Path(values["SHASWEEP_COMMENT"]).read_text()
    poly = by_case["test_poly"]
    assert comment.startswith(f"{MARKER}\n### shasweep: FAIL") and len(comment.encode()) <= 4000
    assert f"| {poly['ratio']:.3f} | [{poly['low']:.3f}, {poly['high']:.3f}]" in comment, "the gate's figures"
    junit = ET.parse(values["SHASWEEP_JUNIT"]).getroot()
    assert [case.get("name") for case in junit.iter("testcase") if case.find("failure") is not None] == [
        f"gate 0: {by_case['test_poly']['case']} [head] <= 1.02x"
    ]
    assert Path(values["SHASWEEP_REPORT"]).read_text().startswith("<!DOCTYPE html>")
    assert set(json.loads(Path(values["SHASWEEP_BMF"]).read_text())) == {v["case"] for v in verdicts}


def github_environment(tmp_path: Path, forge_url: str, clone: Path, event: dict) -> tuple[dict, dict]:
    """(process environment, ``github`` context) of a pull-request job on the runner."""
    (tmp_path / "event.json").write_text(json.dumps(event))
    env = {
        **base_env(tmp_path / "home"),
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_PATH": str(tmp_path / "event.json"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "step_summary.md"),
        "GITHUB_WORKSPACE": str(clone),
        "GITHUB_API_URL": forge_url,
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_RUN_ID": "42",
    }
    github = {
        "token": "t0ken",
        "action_path": str(Path(__file__).resolve().parents[2]),
        "run_id": "42",
        "run_attempt": "1",
        "base_ref": "main",
        "ref_name": "3/merge",
    }
    return env, github


def pull_request(base: str, head: str, head_repo: str = "o/r") -> dict:
    return {
        "pull_request": {
            "number": 3,
            "base": {"sha": base, "repo": {"full_name": "o/r"}},
            "head": {"sha": head, "repo": {"full_name": head_repo}},
        }
    }


def test_the_github_action_runs_end_to_end_and_keeps_one_comment(tmp_path):
    origin = tmp_path / "origin"
    shas = make_ci_repo(origin)
    clone = fresh_clone(origin, tmp_path, "unchanged")
    inputs = {"budget": "90s", "args": " ".join(FEW), "install": "none", "python": sys.executable}
    with ForgeServer() as forge:
        env, github = github_environment(
            tmp_path, forge.url, clone, pull_request(shas["main"], shas["unchanged"])
        )
        steps = {step.name: step for step in run_action(inputs, env, github, tmp_path)}
        ci = steps["Sweep the head against its merge base"]
        assert int(ci.outputs["exit-code"]) in (EXIT_OK, EXIT_GATE_INCONCLUSIVE), ci.output  # never 1
        assert ci.outputs["verdict"] in ("PASS", "INCONCLUSIVE") and ci.outputs["fail"] == "0"
        assert all(step.code == 0 for step in steps.values() if step.uses is None), {
            name: step.output for name, step in steps.items() if step.code
        }
        skipped = {step.uses: step.with_ for step in steps.values() if step.uses}
        results = clone / ".shasweep" / "results"
        assert (
            skipped["actions/cache/restore@v4"]["path"]
            == skipped["actions/cache/save@v4"]["path"]
            == str(results)
        )
        assert skipped["actions/cache/save@v4"]["key"] == "shasweep-Linux-main-42-1"
        uploaded = skipped["actions/upload-artifact@v4"]["path"].split()
        assert (
            uploaded == [ci.outputs["report"], str(clone / ".shasweep" / "ci")]
            and Path(uploaded[0]).is_file()
        )
        summary = (tmp_path / "step_summary.md").read_text()
        assert summary.startswith("### shasweep ci-") and len(summary.encode()) < 60_000
        assert forge.writes() == [("POST", "/repos/o/r/issues/3/comments")]
        (ours,) = forge.comments
        assert forge.comments[ours] == Path(ci.outputs["comment"]).read_text()
        assert "<https://github.example/o/r/actions/runs/42>" in forge.comments[ours]
        # the next push: the comment step edits the same comment in place
        again = run_action(inputs, env, github, tmp_path, only={"Comment on the pull request"},
                           earlier={"ci": ci.outputs})
        assert [step.code for step in again if step.code is not None] == [0]
        assert (
            forge.writes()[-1] == ("PATCH", f"/repos/o/r/issues/comments/{ours}") and len(forge.comments) == 1
        )


def test_the_action_s_verdict_step_maps_exit_4_and_keeps_the_others(tmp_path):
    env = {**base_env(tmp_path / "home"), "GITHUB_WORKSPACE": str(tmp_path)}
    for code, inconclusive, expected in (
        ("4", "neutral", 0),
        ("4", "fail", 4),
        ("1", "neutral", 1),
        ("0", "fail", 0),
        (None, "neutral", 3),
    ):
        earlier = {} if code is None else {"ci": {"exit-code": code}}
        steps = run_action(
            {"inconclusive": inconclusive}, env, {}, tmp_path, only={"Verdict"}, earlier=earlier
        )
        (verdict,) = [step for step in steps if step.code is not None]
        assert verdict.code == expected, (code, inconclusive, verdict.output)


def test_a_fork_s_pull_request_without_a_token_leaves_the_comment_in_its_file(tmp_path):
    origin = tmp_path / "origin"
    shas = make_ci_repo(origin)
    clone = fresh_clone(origin, tmp_path, "unchanged")
    comment = clone / ".shasweep" / "ci" / "comment.md"
    comment.parent.mkdir(parents=True)
    comment.write_text(f"{MARKER}\n### shasweep: PASS\n")
    with ForgeServer() as forge:
        env, github = github_environment(
            tmp_path, forge.url, clone, pull_request(shas["main"], shas["unchanged"], "someone/r")
        )
        steps = run_action(
            {"install": "none", "python": sys.executable, "token": ""},
            env,
            github,
            tmp_path,
            only={"Comment on the pull request"},
            earlier={"ci": {"comment": str(comment)}},
        )
        (step,) = [step for step in steps if step.code is not None]
        assert step.code == 0 and forge.requests == []
        assert "comment not posted: the pull request comes from the fork someone/r" in step.output
        assert str(comment) in step.output and comment.is_file()


def gitlab_environment(forge_url: str, home: Path, base: str, head: str) -> dict[str, str]:
    return {
        **base_env(home),
        "GITLAB_CI": "true",
        "CI_API_V4_URL": f"{forge_url}/api/v4",
        "CI_PROJECT_ID": "7",
        "CI_MERGE_REQUEST_IID": "9",
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": base,
        "CI_COMMIT_SHA": head,
        "CI_JOB_URL": "https://gitlab.example/o/r/-/jobs/5",
        "SHASWEEP_GITLAB_TOKEN": "glpat",
    }


def test_the_gitlab_template_posts_one_note_and_exits_with_the_verdict(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    base = commit(repo, {repo / "lib.py": "def f():\n    return 1\n"}, "lib")
    (repo / "bench").mkdir()
    head = commit(
        repo,
        {repo / "bench" / "test_f.py": "import lib\n\ndef test_f(benchmark):\n    benchmark(lib.f)\n"},
        "benchmarks, new here",
    )
    variables = {"SHASWEEP_INSTALL": "none", "SHASWEEP_PYTHON": sys.executable}
    with ForgeServer() as forge:
        env = gitlab_environment(forge.url, tmp_path / "home", base, head)
        first = run_gitlab_job(variables, env, repo)
        assert first.returncode == EXIT_OK, first.stdout + first.stderr
        assert "nothing compared" in first.stdout and "comment posted on merge request !9" in first.stdout
        second = run_gitlab_job(variables, env, repo)
        assert second.returncode == EXIT_OK and "comment updated on merge request !9" in second.stdout
        (ours,) = forge.comments
        assert forge.writes() == [
            ("POST", "/api/v4/projects/7/merge_requests/9/notes"),
            ("PUT", f"/api/v4/projects/7/merge_requests/9/notes/{ours}"),
        ]
        assert "the suite is new here" in forge.comments[ours]
        dotenv = (repo / ".shasweep" / "ci" / "outputs.env").read_text()
        assert "SHASWEEP_VERDICT=SKIPPED" in dotenv
        failing = run_gitlab_job({**variables, "SHASWEEP_ARGS": "--base nope"}, env, repo)
        assert failing.returncode == EXIT_INVALID, "the job exits with shasweep ci's code"
        assert "comment updated" in failing.stdout and "ERROR" in forge.comments[ours]


def test_a_budget_that_runs_out_in_the_first_round_exits_2_with_a_larger_one(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "bench").mkdir()
    test_file = "import lib\n\ndef test_sleeps(benchmark):\n    benchmark(lib.f)\n"
    commit(repo, {repo / "lib.py": "import time\n\ndef f():\n    time.sleep(600)\n",
                  repo / "bench" / "test_f.py": test_file}, "a benchmark whose one call outlasts the budget")
    commit(repo, {repo / "lib.py": "import time\n\ndef f():\n    time.sleep(601)\n"}, "head")
    # the deadline, 20 s before the budget's end, comes after the cluster's start even on a loaded host
    proc = shasweep("ci", "--base", "HEAD~1", "--budget", "1m30s", cwd=repo, home=tmp_path / "home")
    assert proc.returncode == EXIT_INVALID, proc.stdout + proc.stderr
    (error,) = [line for line in proc.stderr.splitlines() if "--budget" in line]
    assert "into the first round, so nothing was compared" in error, error
    assert "test_sleeps" in error, "it names the benchmark the round awaited"
    assert "give --budget over" in error
    values = outputs_env(repo)
    assert values["SHASWEEP_VERDICT"] == "ERROR" and values["SHASWEEP_EXIT_CODE"] == str(EXIT_INVALID)
    (record,) = (repo / ".shasweep" / "results" / "sweeps").glob("ci-*.json")
    adaptive = json.loads(record.read_text())["adaptive"]
    assert (adaptive["rounds"], adaptive["cut"]) == (0, 0), "the sweep's record stays, nothing counted"
