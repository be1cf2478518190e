"""The bench helper (``orchestrator.benchkit``) with real bench processes: the example bench of
examples/lockstep/ against the generated demo repository, plain and on a control FIFO."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "lockstep" / "bench.py"
HELPER_PHASES = ["step_ms", "cpu_ms", "thread_cpu_ms"]  # what the helper times in every step itself
HEAVY = ("numpy", "pandas", "pyarrow", "scipy", "dask", "distributed", "torch")
sys.path.insert(0, str(ROOT / "examples"))
from make_demo_repo import make_demo_repo  # noqa: E402


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Path, str]:
    repo = tmp_path_factory.mktemp("demo") / "demo-repo"
    return repo, make_demo_repo(repo)[1]


def bench(demo_repo: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(demo_repo), str(ROOT)])}
    return subprocess.Popen([sys.executable, str(EXAMPLE), *args], cwd=demo_repo, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_importing_the_helper_loads_nothing_heavy():
    probe = "import sys, orchestrator.benchkit; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout.split()
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]


def test_a_plain_run_writes_header_steps_and_summary(demo, tmp_path):
    repo, sha = demo
    stream = tmp_path / "run.jsonl"
    proc = bench(repo, "--stream", str(stream), "--warmup", "1", "--measure", "4", "--size", "300")
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    found = records(stream)
    header, steps, summary = found[0], found[1:-1], found[-1]
    assert header["protocol"] == 1 and "control" not in header
    assert header["audit"]["git_sha"] == sha
    assert header["audit"]["module_file"] == str(repo / "demolib" / "__init__.py")
    assert header["params"] == {"size": 300, "warmup": 1, "measure": 4}
    assert [(s["step"], s["warmup"]) for s in steps] == [(0, True)] + [(i, False) for i in range(1, 5)]
    assert summary["throughput"] == pytest.approx(300 * 4 / summary["measure_wall_s"])
    assert summary["phase_means_ms"]["step_ms"] == pytest.approx(
        sum(s["phases"]["step_ms"] for s in steps[1:]) / 4)
    # the example's step returns demolib's word counts: a result, not timings
    assert all(list(s["phases"]) == HELPER_PHASES for s in steps)
    assert list(summary["phase_means_ms"]) == HELPER_PHASES


def test_on_a_control_fifo_it_runs_the_commanded_blocks_until_end(demo, tmp_path):
    repo, _ = demo
    stream, control = tmp_path / "run.jsonl", tmp_path / "control.fifo"
    os.mkfifo(control, 0o600)
    channel = os.open(control, os.O_RDWR)
    try:
        proc = bench(repo, "--stream", str(stream), "--control", str(control), "--size", "300")
        for command in ({"cmd": "run", "steps": 2, "block": 0, "warmup": True},
                        {"cmd": "run", "steps": 3, "block": 1, "warmup": False}, {"cmd": "end"}):
            os.write(channel, (json.dumps(command) + "\n").encode())
        _, stderr = proc.communicate(timeout=120)
    finally:
        os.close(channel)
    assert proc.returncode == 0, stderr
    found = records(stream)
    assert found[0]["control"] == 1
    assert [r["kind"] for r in found] == ["header", "step", "step", "block", "step", "step", "step", "block",
                                          "summary"]
    assert [r.get("block") for r in found if r["kind"] == "step"] == [0, 0, 1, 1, 1]
    assert all(list(r["phases"]) == HELPER_PHASES for r in found if r["kind"] == "step")
    assert found[-1]["measure_wall_s"] == pytest.approx(found[-2]["wall_s"])


def test_a_failing_step_writes_an_error_record_and_exits_1(tmp_path):
    script = tmp_path / "failing.py"
    script.write_text("from orchestrator.benchkit import Bench\n"
                      "Bench('x').run(lambda: 1 / 0)\n")
    stream = tmp_path / "run.jsonl"
    proc = subprocess.run([sys.executable, str(script), "--stream", str(stream)], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert proc.returncode == 1 and "ZeroDivisionError" in proc.stderr
    error = records(stream)[-1]
    assert error["kind"] == "error" and error["type"] == "ZeroDivisionError"


@pytest.mark.parametrize("args", [["--measure", "0"], ["--size", "many"], ["--unknown", "1"]])
def test_bad_arguments_exit_2(demo, tmp_path, args):
    repo, _ = demo
    proc = bench(repo, "--stream", str(tmp_path / "run.jsonl"), *args)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 2 and stderr.strip()


FLAG_BENCH = """import sys
import demolib
from orchestrator.benchkit import Bench
bench = Bench("flags", module=demolib, options={"fast": False, "slow": True},
              argv=[arg for arg in sys.argv[1:] if arg != "--naive"])
if "--naive" in sys.argv:  # what a hand-written bench's parser with type=bool makes of the flag
    bench.params["fast"] = bool(sys.argv[sys.argv.index("--fast") + 1])


def step():
    demolib.count_words("a b a")


bench.run(step)
"""


def flag_sweep(tmp_path: Path, *extra: str) -> Path:
    (tmp_path / "bench.py").write_text(FLAG_BENCH)
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(json.dumps({
        "name": "flags", "sides": {"a": {"ref": "HEAD"}}, "baseline": "a", "cases": ["flags"],
        "params": {"fast": False, "slow": False, "warmup": 0, "measure": 2},
        "command": ["{python}", "{sweep_dir}/bench.py", "--stream", "{stream}", *extra, "--fast", "{fast}",
                    "--slow", "{slow}", "--warmup", "{warmup}", "--measure", "{measure}"]}))
    return sweep


@pytest.fixture
def in_demo(demo, tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("SHASWEEP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SHASWEEP_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.chdir(demo[0])
    return demo[0]


def test_boolean_options_round_trip_through_the_worker(in_demo, tmp_path, capsys):
    """``params.fast: false`` reaches the bench as ``--fast False``: the helper reads false (``type=bool``
    read true), the header says so and the audit passes."""
    from orchestrator.cli.main import main

    code = main(["try", str(flag_sweep(tmp_path))])
    out = capsys.readouterr().out
    assert code == 0, out
    params = json.loads(next(line for line in out.splitlines() if line.startswith("  params: "))[10:])
    assert params["fast"] is False and params["slow"] is False


def test_the_audit_fails_a_bench_that_read_a_false_flag_as_true(in_demo, tmp_path, capsys):
    """A bench whose own parser reads ``--fast False`` as true ran what the sweep did not ask for: its
    header says true, its row (the planned params) false, and the audit names the param."""
    from orchestrator.cli.main import main

    code = main(["try", str(flag_sweep(tmp_path, "--naive"))])
    out = capsys.readouterr().out
    assert code == 3, out
    assert ("try: case flags audit_failed: audit: params.fast: the bench's header reports true, the sweep "
            "passed false") in out


@pytest.mark.parametrize("value, expected", [("false", False), ("False", False), ("0", False), ("no", False),
                                             ("TRUE", True), ("1", True), ("on", True)])
def test_a_boolean_option_reads_the_usual_spellings(tmp_path, value, expected):
    from orchestrator.benchkit import Bench

    bench = Bench("x", options={"fast": not expected}, argv=["--stream", "s", "--fast", value])
    assert bench.params["fast"] is expected


def test_a_boolean_option_that_is_not_one_exits_2(tmp_path):
    probe = ("from orchestrator.benchkit import Bench\n"
             "Bench('x', options={'fast': False}, argv=['--stream', 's', '--fast', 'maybe'])\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and "--fast: expected true or false, got 'maybe'" in done.stderr


def recorded(step, steps: int = 3) -> list[dict]:
    """The records of ``steps`` measured steps of ``step`` run by a ``Recorder``, in this process."""
    import io

    from orchestrator.benchkit.channel import RecordWriter
    from orchestrator.benchkit.steps import Recorder

    out = io.StringIO()
    recorder = Recorder(RecordWriter(out), items_per_step=1)
    recorder.block(lambda: step(recorder), steps, warmup=False)
    recorder.summary()
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_phases_are_timed_or_returned_and_add_up_within_a_step():
    from orchestrator.benchkit import Phases

    def step(recorder):
        for _ in range(2):
            with recorder.phase("parse_ms"):
                time.sleep(0.002)
        return Phases({"io_ms": 1.5}, parse_ms=1000.0)

    *steps, summary = recorded(step)
    for record in steps:
        assert list(record["phases"]) == ["parse_ms", "io_ms", *HELPER_PHASES]
        assert 1004 <= record["phases"]["parse_ms"] < 1000 + record["phases"]["step_ms"]
        assert record["phases"]["io_ms"] == 1.5
    assert set(summary["phase_means_ms"]) == {"parse_ms", "io_ms", *HELPER_PHASES}


@pytest.mark.parametrize("returned", [b"\x00\x01", {"the": 4000}, [("a_ms", 1.0)], "text", 3.5, None])
def test_any_other_return_value_is_ignored(returned):
    *steps, _ = recorded(lambda recorder: returned)
    assert all(list(s["phases"]) == HELPER_PHASES for s in steps)


def test_a_step_s_cpu_time_is_the_process_s_and_its_own_thread_s():
    """``cpu_ms`` counts every thread of the process, ``thread_cpu_ms`` the one that ran the step, and
    neither counts a wait: a step that sleeps, one that hashes, one that waits for a thread to hash."""
    def hashing(n: int = 3000) -> None:
        for _ in range(n):
            hashlib.sha256(b"\x5a" * 4096).digest()

    def on_a_thread() -> None:
        worker = threading.Thread(target=hashing)
        worker.start()
        worker.join()

    kinds = {"sleeps": lambda recorder: time.sleep(0.02), "hashes": lambda recorder: hashing(),
             "waits for a thread": lambda recorder: on_a_thread()}
    phases = {kind: [s["phases"] for s in recorded(step)[:-1]] for kind, step in kinds.items()}
    for step in phases["sleeps"]:
        assert step["step_ms"] >= 20 and step["cpu_ms"] < step["step_ms"] / 4
    for step in phases["hashes"]:
        assert step["cpu_ms"] >= step["thread_cpu_ms"] > 0
        assert step["thread_cpu_ms"] > 0.9 * step["cpu_ms"], "one thread did all the work"
    for step, hashed in zip(phases["waits for a thread"], phases["hashes"], strict=True):
        assert step["thread_cpu_ms"] < step["cpu_ms"] / 4, "the step's own thread only waited"
        assert step["cpu_ms"] > hashed["cpu_ms"] / 4, "the other thread's work is the process's CPU time"


@pytest.mark.parametrize("name", ["step_ms", "cpu_ms", "thread_cpu_ms", "parse", "parse ms", "", "9_ms",
                                  "a" * 120 + "_ms"])
def test_a_phase_name_is_checked(name):
    from orchestrator.benchkit import Phases
    from orchestrator.benchkit.steps import phase_name

    with pytest.raises(ValueError, match="phase name"):
        phase_name(name)
    with pytest.raises(ValueError, match="phase name"):
        Phases({name: 1.0})


@pytest.mark.parametrize("value", [-1.0, float("nan"), float("inf"), "2", True, None])
def test_a_returned_phase_is_a_finite_number_of_ms(value):
    from orchestrator.benchkit import Phases

    with pytest.raises(ValueError, match="is not a finite number of ms"):
        Phases(parse_ms=value)


def test_a_phase_outside_a_step_or_misnamed_fails_the_run_with_an_error_record(tmp_path):
    script = tmp_path / "phases.py"
    script.write_text("import sys\nfrom orchestrator.benchkit import Bench\n"
                      "bench = Bench('x', argv=sys.argv[1:-1])\n"
                      "if sys.argv[-1] == 'outside':\n"
                      "    bench.phase('setup_ms').__enter__()\n"
                      "def step():\n"
                      "    with bench.phase('step_ms'):\n"
                      "        pass\n"
                      "bench.run(step)\n")
    for where, expected in (("outside", "RuntimeError: phase 'setup_ms' timed outside a step"),
                            ("inside", "'step_ms' is the whole step")):
        stream = tmp_path / f"{where}.jsonl"
        done = subprocess.run([sys.executable, str(script), "--stream", str(stream), where], timeout=120,
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 1 and expected in done.stderr, done.stderr
        if where == "inside":
            assert records(stream)[-1]["kind"] == "error"
