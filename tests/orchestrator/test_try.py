"""``shasweep try``: one run of a sweep's bench on this host through the worker's own path, nothing
recorded, and what was read or exactly why not. The benches are foreign repositories' (the demo
library of examples/, a src-layout package, benches that fail in the ways newcomers meet)."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from orchestrator.cli.main import main
from orchestrator.contract import host_id
from orchestrator.errors import EXIT_INVALID, EXIT_OK, EXIT_RUN_FAILED
from orchestrator.worker.machine_lock import host_lock_path, machine_lock

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
from make_demo_repo import git, make_demo_repo  # noqa: E402


@pytest.fixture
def demo(tmp_path, monkeypatch) -> Path:
    """The demo library at two commits, a private home and lock directory, run from inside it."""
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHASWEEP_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.delenv("SHASWEEP_LOCK", raising=False)
    repo = tmp_path / "demo"
    make_demo_repo(repo)
    monkeypatch.chdir(repo)
    return repo


def snapshot(root: Path) -> dict[str, bytes] | None:
    """Every file under ``root`` with its bytes (None: no such directory)."""
    if not root.exists():
        return None
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def write(path: Path, data: dict) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_try_reads_every_metric_and_writes_nothing_to_the_results_root(demo, tmp_path, capsys):
    results = tmp_path / "results"
    (results / "sweeps").mkdir(parents=True)
    (results / "sweeps" / "earlier-20260101T000000.json").write_text('{"kept": "as it was"}')
    before = snapshot(results)
    code = main(["try", str(EXAMPLES / "time" / "sweep.yaml"), f"results={results}", "--side", "new",
                 "params.measure=2", "gates=[{metric: cpu_ms, max_ratio: 1.1}]"])
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    assert snapshot(results) == before, "try wrote to the results root"
    sha = git(demo, "rev-parse", "HEAD")
    assert f"try: side new (HEAD = {sha[:12]}), case cli, protocol time" in out
    assert "steps: 2 measured, 0 warm-up" in out
    for name in ("throughput", "wall_ms", "user_ms", "sys_ms", "cpu_ms", "max_rss_mib"):
        assert any(line.strip().startswith(f"* {name} ") for line in out.splitlines()), (name, out)
    assert "runs/s" in out and "try: ok" in out
    log_dir = Path(next(line for line in out.splitlines() if line.startswith("logs: ")).split()[1])
    assert (log_dir / "argv.txt").read_text().split()[-1] == "20000", "the bench ran with the sweep's params"


def test_try_on_a_fresh_root_leaves_no_root_behind(demo, tmp_path, capsys):
    results = tmp_path / "never-made"
    assert main(["try", str(EXAMPLES / "v1" / "sweep.yaml"), f"results={results}"]) == EXIT_OK
    out = capsys.readouterr().out
    assert not results.exists()
    assert "header:" in out and '"git_sha": "' in out and "steps: " in out and " warm-up" in out


def test_a_wrong_json_path_names_the_key_the_path_and_what_is_there(demo, tmp_path, capsys):
    code = main(["try", str(EXAMPLES / "json" / "sweep.yaml"), "json.throughput=results.0.words_per_sec"])
    out = capsys.readouterr().out
    assert code == EXIT_RUN_FAILED
    assert ("json.throughput: 'results.0.words_per_sec' has no 'words_per_sec' at 'results.0' (there: an "
            "object with keys ") in out and "words_per_s" in out
    assert "stderr.log" in out and "stdout.log" in out


def test_a_bench_failing_on_stdout_only_shows_the_stdout_tail_and_the_logs(demo, tmp_path, capsys):
    bench = tmp_path / "bench.py"
    bench.write_text("import sys\nprint('warming up')\nprint('config error: size must be even')\n"
                     "sys.exit(4)\n")
    sweep = write(tmp_path / "sweep.yaml", {
        "name": "stdout-only", "sides": {"a": {"ref": "HEAD"}}, "baseline": "a", "cases": ["one"],
        "protocol": "time", "command": ["{python}", "{sweep_dir}/bench.py"]})
    assert main(["try", str(sweep)]) == EXIT_RUN_FAILED
    out = capsys.readouterr().out
    assert "bench exited with code 4: config error: size must be even (logs: " in out
    assert "stdout (stderr is empty) tail:\nwarming up\nconfig error: size must be even" in out
    assert "/stderr.log, " in out and "/stdout.log)" in out


def test_a_src_layout_without_pythonpath_gets_the_hint(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHASWEEP_LOCK_DIR", str(tmp_path / "locks"))
    repo = tmp_path / "srclib"
    (repo / "src" / "srclib").mkdir(parents=True)
    (repo / "src" / "srclib" / "__init__.py").write_text("def work():\n    return sum(range(1000))\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a src layout")
    monkeypatch.chdir(repo)
    sweep = write(tmp_path / "sweep.yaml", {
        "name": "src", "sides": {"a": {"ref": "HEAD"}}, "baseline": "a", "cases": ["work"],
        "protocol": "time", "command": ["{python}", "-c", "import srclib; srclib.work()"]})
    assert main(["try", str(sweep)]) == EXIT_RUN_FAILED
    out = capsys.readouterr().out
    assert "ModuleNotFoundError: No module named 'srclib'" in out
    assert "hint: the worktree has src/srclib (a src layout)" in out and "pythonpath: [src]" in out
    assert main(["try", str(sweep), "pythonpath=[src]"]) == EXIT_OK, capsys.readouterr().out


def test_a_metric_a_gate_needs_that_the_bench_does_not_report_fails_the_trial(demo, capsys):
    code = main(["try", str(EXAMPLES / "v1" / "sweep.yaml"), "gates=[{metric: p99_ms, max_ratio: 1.1}]"])
    out = capsys.readouterr().out
    assert code == EXIT_RUN_FAILED
    assert any(line.split() == ["*", "p99_ms", "not", "reported"] for line in out.splitlines()), out
    assert "try: case wordcount did not report p99_ms" in out


@pytest.mark.parametrize("args, expected", [
    (["--side", "newest"], "--side: the sweep has no side 'newest' (its sides: old, new)"),
    (["--case", "wc"], "--case: the sweep has no case 'wc' (its cases: wordcount)"),
    (["sides.new.ref=no-such-branch"], "sides.new.ref: 'no-such-branch'"),
])
def test_bad_input_exits_2_naming_it(demo, tmp_path, capsys, args, expected):
    results = tmp_path / "results"
    assert main(["try", str(EXAMPLES / "v1" / "sweep.yaml"), f"results={results}", *args]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert err.startswith("shasweep: error: ") and expected in err, err
    assert not results.exists() and not (Path.cwd() / "results").exists()


def test_try_waits_for_the_host_lock_and_says_who_holds_it(demo, capsys):
    """A sweep holds the host lock: the trial says so in one line, then runs once it is free."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        with machine_lock(host_lock_path(host_id()), "other-sweep-20260101T000000", "k1"):
            holding.set()
            release.wait(timeout=120)

    holder = threading.Thread(target=hold)
    holder.start()
    holding.wait(timeout=60)
    releaser = threading.Timer(2.0, release.set)
    releaser.start()
    try:
        code = main(["try", str(EXAMPLES / "time" / "sweep.yaml"), "params.measure=1", "params.warmup=0"])
    finally:
        release.set()
        holder.join()
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    first = out.splitlines()[0]
    assert first.startswith(f"waiting for host {host_id()}: held by sweep other-sweep-20260101T000000 (pid ")
    waited = float(out.split("after ")[1].split(" s waiting")[0])
    assert waited >= 1, "the trial waited until the lock was free"


def test_try_is_a_documented_command_of_the_console_script(demo):
    done = subprocess.run([sys.executable, "-m", "orchestrator.cli", "try", "--help"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "--side SIDE" in done.stdout and "--case CASE" in done.stdout


def test_a_suite_run_shows_every_case_it_read(tmp_path, monkeypatch, capsys):
    """pyperf's suite: one bench run, a reading per benchmark; --case keeps one, or names the ones found."""
    from make_suite_repo import make_suite_repo

    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHASWEEP_LOCK_DIR", str(tmp_path / "locks"))
    make_suite_repo(tmp_path / "suite")
    monkeypatch.chdir(tmp_path / "suite")
    bench = tmp_path / "bench"  # the example's bench and sweep, at a fraction of its runtime
    bench.mkdir()
    (bench / "bench.py").write_text((EXAMPLES / "pyperf" / "bench.py").read_text())
    data = yaml.safe_load((EXAMPLES / "pyperf" / "sweep.yaml").read_text())
    data["command"] = ["{python}", "{sweep_dir}/bench.py", "--processes", "1", "--values", "1",
                       "--loops", "2", "--quiet", "-o", "{result}"]
    sweep = str(write(bench / "sweep.yaml", data))
    assert main(["try", sweep]) == EXIT_OK, capsys.readouterr().out
    out = capsys.readouterr().out
    cases = [line.split()[1].rstrip(":") for line in out.splitlines() if line.startswith("case ")]
    assert len(cases) == 3 and any("tokenize" in c for c in cases), out
    assert out.count("* time_ms") == 3
    # numbers for a reader: a time with its unit, a rate with an SI prefix, 3 digits, never an exponent
    times = [line.split("* time_ms", 1)[1].split() for line in out.splitlines() if "* time_ms" in line]
    assert all(unit in ("s", "ms", "µs", "ns") and re.fullmatch(r"\d{1,3}(\.\d{1,2})?", value)
               for value, unit in times), out
    rates = [line.split("throughput", 1)[1].strip() for line in out.splitlines() if line.strip().startswith(
        "throughput")]
    assert len(rates) == 3 and all(rate.endswith("calls/s") and "e+" not in rate for rate in rates), out
    tokenize = next(c for c in cases if "tokenize" in c)
    assert main(["try", sweep, "--case", tokenize]) == EXIT_OK
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("case ")] == [
        f"case {tokenize}: ok; steps: 1 measured, 0 warm-up"]
    assert main(["try", sweep, "--case", "nope"]) == EXIT_INVALID
    assert f"--case: the suite's output has no case 'nope' (its cases: {', '.join(cases)})" in \
        capsys.readouterr().err


def test_a_lockstep_sweep_is_tried_as_a_round_of_its_side_alone_and_shows_its_blocks(demo, capsys):
    """The example lockstep sweep: its side's process takes the control channel, runs its warm-up block
    and the sweep's 4 measured blocks (each after a warm-up step), and try prints every block."""
    code = main(["try", str(EXAMPLES / "lockstep" / "sweep.yaml"), f"repo={demo}", "--side", "new"])
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    assert "  control: 1" in out and "blocks: 9, this side alone in its lockstep round" in out
    blocks = [line.split(":")[1].split(",")[0].strip() for line in out.splitlines()
              if line.startswith("  block ")]
    assert blocks == ["warm-up"] + ["warm-up", "cycle 0", "warm-up", "cycle 1", "warm-up", "cycle 2",
                                    "warm-up", "cycle 3"]
    assert "  block 0: warm-up, 2 steps in " in out and "  block 2: cycle 0, 5 steps in " in out
    assert "steps: 20 measured, 6 warm-up" in out and "try: ok" in out
    listed = out.split("metrics (")[1].splitlines()[1:]
    names = [line.replace("*", " ").split()[0] for line in listed if line.startswith("    ")]
    assert names == ["throughput", "step_ms", "cpu_ms", "thread_cpu_ms"], \
        "the word counts a step returns are no phases"


LOCKSTEP_BENCH = """import sys
import demolib
from orchestrator.benchkit import Bench

argv = sys.argv[1:]
if "--no-control" in argv:  # an older bench: it never heard of the control channel
    at = argv.index("--control")
    argv = [arg for i, arg in enumerate(argv) if i not in (at, at + 1) and arg != "--no-control"]
bench = Bench("bytes", module=demolib, argv=argv)
bench.run(lambda: demolib.count_words("a b a").__repr__().encode())  # a step that returns bytes
"""


def lockstep_sweep(tmp_path: Path, *extra: str, fallback: str = "stop") -> Path:
    (tmp_path / "bench.py").write_text(LOCKSTEP_BENCH)
    return write(tmp_path / "sweep.yaml", {
        "name": "bytes", "sides": {"a": {"ref": "HEAD"}, "b": {"ref": "HEAD~1"}}, "baseline": "a",
        "cases": ["bytes"], "params": {"warmup": 1, "measure": 4}, "order": "lockstep",
        "lockstep": {"block_steps": 2, "blocks": 2, "block_warmup": 0, "fallback": fallback},
        "command": ["{python}", "{sweep_dir}/bench.py", "--stream", "{stream}", "--control", "{control}",
                    "--warmup", "{warmup}", "--measure", "{measure}", *extra]})


def test_a_step_returning_bytes_runs_in_a_lockstep_trial(demo, tmp_path, capsys):
    code = main(["try", str(lockstep_sweep(tmp_path))])
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    assert "blocks: 3, this side alone" in out and "steps: 4 measured, 1 warm-up" in out
    assert "step_ms" in out and "TypeError" not in out


def test_a_lockstep_trial_of_a_bench_without_the_channel_says_so(demo, tmp_path, capsys):
    """``fallback: stop``: exit 2 naming the side and what its header lacks; ``fallback: interleaved``:
    the run runs alone as a plain run, and try says why."""
    assert main(["try", str(lockstep_sweep(tmp_path, "--no-control"))]) == EXIT_INVALID
    out = capsys.readouterr().out
    assert "side 'a'" in out and 'does not declare the control channel (no "control": 1 in its header)' in out
    code = main(["try", str(lockstep_sweep(tmp_path, "--no-control", fallback="interleaved"))])
    out = capsys.readouterr().out
    assert code == EXIT_OK, out
    assert "lockstep: ran without the control channel: side 'a'" in out and "blocks:" not in out
    assert "steps: 4 measured, 1 warm-up" in out
