"""The bench helper (``orchestrator.benchkit``) with real bench processes: the example bench of
examples/lockstep/ against the generated demo repository, plain and on a control FIFO."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "lockstep" / "bench.py"
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
