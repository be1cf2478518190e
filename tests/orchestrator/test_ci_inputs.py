"""What ``shasweep ci`` reads before it runs anything: ``[tool.shasweep]`` (``spec.ci_config``), the
CI's environment (``session.ci_context``), the commits (``plan.ci_commits``) and the suite of a commit
(``plan.suite_discovery``), on real git repositories; each bad input named with its key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.errors import InvalidInputError, RefError
from orchestrator.plan.ci_commits import ci_commits
from orchestrator.plan.suite_discovery import find_suite, present_at
from orchestrator.session.ci_context import ci_context
from orchestrator.spec.ci_config import CiConfig, config_from_table, parse_duration, read_ci_config

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
from make_demo_repo import commit, git  # noqa: E402


def make_repo(path: Path, files: dict[str, str]) -> str:
    """A repository of ``files`` at one commit; its SHA."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    for name in files:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
    return commit(path, {path / name: text for name, text in files.items()}, "files")


PYTEST_FIXTURE = (
    "import lib\n\ndef test_a(benchmark):\n    benchmark(lib.a)\n\n\ndef test_unit():\n    pass\n"
)
PYTEST_MARKER = (
    "import pytest\n\npytestmark = pytest.mark.benchmark()\n\ndef test_x():\n    pass\n\n"
    "def test_y():\n    pass\n"
)
PYPERF = "import pyperf\n\nrunner = pyperf.Runner()\nrunner.bench_func('a', len, 'x')\n"
BENCHKIT = "from orchestrator.benchkit import Bench\n\nbench = Bench('w')\nbench.run(lambda: None)\n"


# --- [tool.shasweep] ------------------------------------------------------------------------------


def test_durations_read_as_seconds_and_a_bad_one_is_named():
    assert [parse_duration(text, "k") for text in ("90", "90s", "10m", "1.5h")] == [90, 90, 600, 5400]
    assert [parse_duration(text, "k") for text in ("1m30s", "20m1s", "1h 5m")] == [90, 1201, 3900], (
        "the form the budget's own messages give")
    for bad in ("", "0", "ten minutes", "-5m", "5d", "1m30", "m", "0m0s"):
        with pytest.raises(InvalidInputError, match=r"^--budget: .* is not a duration"):
            parse_duration(bad, "--budget")


def test_config_reads_every_key_and_refuses_unknown_ones(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.shasweep]\nbudget = "5m"\npaths = ["bench"]\nargs = ["--benchmark-max-time=0.05"]\n'
        'gates = [{metric = "time_ms", max_ratio = 1.05}]\nprepare = [["make", "lib"]]\nsuite = "pyperf"\n'
    )
    config = read_ci_config(tmp_path)
    assert (config.budget_s, config.paths, config.args, config.suite) == (
        300,
        ("bench",),
        ("--benchmark-max-time=0.05",),
        "pyperf",
    )
    assert config.gates == ({"metric": "time_ms", "max_ratio": 1.05},) and config.prepare == (
        ("make", "lib"),
    )
    assert read_ci_config(tmp_path / "nowhere") == CiConfig()
    assert config_from_table({"instrument": "valgrind"}, "pyproject.toml").instrument == "valgrind"
    for table, key in (
        ({"budjet": "5m"}, "budjet"),
        ({"paths": "bench"}, "paths"),
        ({"suite": "asv"}, "suite"),
        ({"budget": "soon"}, "budget"),
        ({"gates": [1]}, "gates"),
        ({"prepare": ["make"]}, "prepare"),
        ({"instrument": "callgrind"}, "instrument"),
    ):
        with pytest.raises(InvalidInputError, match=rf"^tool\.shasweep\.{key}(\[0\])?: "):
            config_from_table(table, "pyproject.toml")


def test_a_broken_pyproject_is_an_input_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.shasweep\n")
    with pytest.raises(InvalidInputError, match="is not valid TOML"):
        read_ci_config(tmp_path)


# --- the CI's environment ---------------------------------------------------------------------------


def github_env(tmp_path: Path, event: dict) -> dict[str, str]:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event))
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_PATH": str(path),
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_RUN_ID": "7",
        "GITHUB_API_URL": "http://127.0.0.1:1",
        "GITHUB_OUTPUT": str(tmp_path / "out"),
    }


def pull(head_repo: str | None, number: int = 5) -> dict:
    return {
        "pull_request": {
            "number": number,
            "base": {"sha": "b" * 40, "repo": {"full_name": "o/r"}},
            "head": {"sha": "h" * 40, "repo": None if head_repo is None else {"full_name": head_repo}},
        }
    }


def test_github_pull_request_push_and_fork_payloads(tmp_path):
    context = ci_context(github_env(tmp_path, pull("o/r")))
    assert (context.provider, context.base, context.head, context.change, context.fork) == (
        "github",
        "b" * 40,
        "h" * 40,
        5,
        None,
    )
    assert context.run_url == "https://github.example/o/r/actions/runs/7"
    assert context.output_file == tmp_path / "out"
    assert ci_context(github_env(tmp_path, pull("someone/r"))).fork == "someone/r"
    assert ci_context(github_env(tmp_path, pull(None))).fork == "a deleted fork"
    push = ci_context(github_env(tmp_path, {"before": "1" * 40, "after": "2" * 40}))
    assert (push.base, push.head, push.change) == ("1" * 40, "2" * 40, None)
    new_branch = ci_context(github_env(tmp_path, {"before": "0" * 40, "after": "2" * 40}))
    assert new_branch.base is None
    assert ci_context({}).provider == "local"


def test_a_bad_payload_names_the_variable(tmp_path):
    env = github_env(tmp_path, {})
    Path(env["GITHUB_EVENT_PATH"]).write_text("[1, 2")
    with pytest.raises(InvalidInputError, match="^GITHUB_EVENT_PATH: .* is not JSON"):
        ci_context(env)
    with pytest.raises(InvalidInputError, match="^GITHUB_EVENT_PATH: cannot read"):
        ci_context({**env, "GITHUB_EVENT_PATH": str(tmp_path / "missing.json")})


def test_gitlab_merge_request_variables():
    context = ci_context(
        {
            "GITLAB_CI": "true",
            "CI_MERGE_REQUEST_DIFF_BASE_SHA": "b" * 40,
            "CI_COMMIT_SHA": "h" * 40,
            "CI_MERGE_REQUEST_IID": "12",
            "CI_PROJECT_ID": "99",
            "CI_API_V4_URL": "https://gitlab.example/api/v4",
            "CI_JOB_URL": "https://j",
            "CI_MERGE_REQUEST_SOURCE_PROJECT_ID": "98",
            "CI_MERGE_REQUEST_PROJECT_ID": "99",
            "CI_MERGE_REQUEST_SOURCE_PROJECT_PATH": "someone/r",
        }
    )
    assert (
        context.provider,
        context.base,
        context.head,
        context.change,
        context.repository,
        context.fork,
    ) == ("gitlab", "b" * 40, "h" * 40, 12, "99", "someone/r")


# --- the commits ------------------------------------------------------------------------------------


def test_head_is_compared_with_the_merge_base_not_the_base_tip(tmp_path):
    repo = tmp_path / "repo"
    first = make_repo(repo, {"a.txt": "1"})
    git(repo, "checkout", "-q", "-b", "feature")
    head = commit(repo, {repo / "b.txt": "2"}, "feature")
    git(repo, "checkout", "-q", "main")
    commit(repo, {repo / "a.txt": "main moved on"}, "main")
    commits = ci_commits(repo, "main", "feature")
    assert (commits.head, commits.merge_base, commits.same) == (head, first, False)
    assert ci_commits(repo, "feature", "feature").same


def test_a_shallow_clone_gets_the_one_line_fix(tmp_path):
    repo = tmp_path / "repo"
    make_repo(repo, {"a.txt": "1"})
    git(repo, "checkout", "-q", "-b", "feature")
    commit(repo, {repo / "b.txt": "2"}, "feature")
    clone = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", "--branch", "feature", f"file://{repo}", str(clone)],
        check=True,
    )
    base = git(repo, "rev-parse", "main")
    with pytest.raises(RefError, match=r"^--base: .* shallow clone: .*fetch-depth: 0.*git fetch --unshallow"):
        ci_commits(clone, base, "HEAD")
    with pytest.raises(RefError, match=r"^--base: no base given and origin/HEAD does not exist"):
        ci_commits(repo, "origin/HEAD", "HEAD")
    with pytest.raises(RefError, match=r"^--head: 'nope' is not a commit .*git fetch origin nope"):
        ci_commits(repo, "main", "nope")


# --- the suite ----------------------------------------------------------------------------------------


def test_each_kind_of_suite_is_found_and_the_first_one_runs(tmp_path):
    repo = tmp_path / "repo"
    sha = make_repo(
        repo,
        {
            "lib.py": "def a():\n    return 1\n",
            "bench/test_lib.py": PYTEST_FIXTURE,
            "tests/test_unit.py": "def test_u():\n    pass\n",
            "perf/bm_a.py": PYPERF,
            "tools/wordcount.py": BENCHKIT,
        },
    )
    found = find_suite(str(repo), sha, CiConfig())
    assert (found.kind, found.paths, found.benchmarks, found.marker_only) == (
        "pytest-benchmark",
        ("bench",),
        1,
        (),
    )
    assert len(found.also_found) == 2 and "pyperf scripts in perf/bm_a.py" in found.also_found[0]
    assert find_suite(str(repo), sha, CiConfig(suite="pyperf")).paths == ("perf/bm_a.py",)
    assert find_suite(str(repo), sha, CiConfig(suite="benchkit")).paths == ("tools/wordcount.py",)
    assert find_suite(str(repo), sha, CiConfig(gbench=("build/bench",), suite="gbench")).paths == (
        "build/bench",
    )


def test_codspeed_marker_files_and_the_sweep_file(tmp_path):
    repo = tmp_path / "repo"
    sha = make_repo(repo, {"bench/test_m.py": PYTEST_MARKER, "shasweep.yaml": "name: x\n"})
    assert find_suite(str(repo), sha, CiConfig()).kind == "sweep"
    found = find_suite(str(repo), sha, CiConfig(suite="pytest-benchmark"))
    assert (found.paths, found.benchmarks, found.marker_only) == (("bench",), 2, ("bench/test_m.py",))


def test_no_suite_says_what_was_looked_for_and_where(tmp_path):
    repo = tmp_path / "repo"
    sha = make_repo(repo, {"lib.py": "x = 1\n", "tests/test_unit.py": "def test_u():\n    assert True\n"})
    with pytest.raises(
        InvalidInputError,
        match=r"no benchmark suite .* found in commit \w{12}; looked for a "
        r"shasweep\.yaml, pytest-benchmark .* pyperf scripts",
    ):
        find_suite(str(repo), sha, CiConfig())
    with pytest.raises(InvalidInputError, match=r"^tool\.shasweep\.paths: 'bench' is no file or directory"):
        find_suite(str(repo), sha, CiConfig(paths=("bench",)))


def test_the_paths_the_merge_base_lacks_are_left_out(tmp_path):
    repo = tmp_path / "repo"
    old = make_repo(repo, {"bench/test_a.py": PYTEST_FIXTURE})
    new = commit(repo, {repo / "perf_test.py": PYTEST_FIXTURE}, "a second benchmark file at the top")
    found = find_suite(str(repo), new, CiConfig())
    assert found.paths == ("bench", "perf_test.py")
    assert present_at(found, str(repo), old) == ("bench",)


PARAMETRIZED = '''import pytest

from lib import CASES


@pytest.mark.parametrize("size", [1, 2, 3])
@pytest.mark.parametrize("kind", ("a", "b,c"))
def test_grid(benchmark, size, kind):
    benchmark(len, "x" * size)


@pytest.mark.parametrize(
    "pair",
    [
        (1, 2),
        (3, 4),
    ],
)
def test_pairs(benchmark, pair):
    benchmark(sum, pair)


@pytest.mark.parametrize("case", CASES)
def test_from_a_name(benchmark, case):
    benchmark(len, case)


@pytest.mark.parametrize("n", [1, 2])
def test_not_a_benchmark(n):
    assert n
'''


def test_a_parametrized_benchmark_counts_once_per_item_of_its_literal_lists(tmp_path):
    repo = tmp_path / "repo"
    sha = make_repo(repo, {"bench/test_grid.py": PARAMETRIZED})
    # 3 x 2 (the comma inside "b,c" is in a string), 2 (a trailing comma), 1 (not a literal): 9
    assert find_suite(str(repo), sha, CiConfig()).benchmarks == 9
    assert not find_suite(str(repo), sha, CiConfig()).src_layout
    (repo / "src").mkdir()
    src = commit(repo, {repo / "src" / "__init__.py": ""}, "a src layout")
    assert find_suite(str(repo), src, CiConfig()).src_layout
