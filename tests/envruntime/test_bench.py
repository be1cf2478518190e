"""The bench CLI: run protocol v1 records, audit, exit codes (real go2 env, tiny N)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import envruntime
from envruntime.bench import cli as bench
from envruntime.collect.collector import BASE_PHASES
from envruntime.envs.vecenv import StepResult
from envruntime.tasks import make_env

REPO = Path(envruntime.__file__).resolve().parent.parent
TASK = "go2_joystick_flat"
WARMUP, MEASURE, NUM_ENVS = 2, 3, 8


def bench_argv(stream: Path, **overrides: object) -> list[str]:
    args = {"algo": "sac", "task": TASK, "sim": "mujoco", "variant": "manager", "num-envs": NUM_ENVS,
            "warmup": WARMUP, "measure": MEASURE, "replay-capacity": 4, "seed": 0, "threads": 2,
            "stream": stream}
    args.update({k.replace("_", "-"): v for k, v in overrides.items()})
    return [item for key, value in args.items() for item in (f"--{key}", str(value))]


def run_cli(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "envruntime.bench", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})}, check=False)


def read_records(stream: Path) -> list[dict]:
    return [json.loads(line) for line in stream.read_text().splitlines()]


def git_head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.slow
def test_manager_run_streams_every_record_type(tmp_path: Path) -> None:
    stream = tmp_path / "run.ndjson"
    proc = run_cli(bench_argv(stream), env={"ENVRUNTIME_TORCH_THREADS": "1"})
    assert proc.returncode == 0, proc.stderr
    assert '"kind"' not in proc.stdout  # records never go to stdout
    records = read_records(stream)
    header, steps, summary = records[0], records[1:-1], records[-1]
    assert [r["kind"] for r in records] == ["header"] + ["step"] * (WARMUP + MEASURE) + ["summary"]

    assert header["protocol"] == 1
    assert header["case"] == {"algo": "sac", "task": TASK, "sim": "mujoco", "variant": "manager"}
    assert header["params"] == {"num_envs": NUM_ENVS, "warmup": WARMUP, "measure": MEASURE,
                                "replay_capacity": 4, "seed": 0, "threads": 2, "actions": "actor",
                                "device": "cpu"}
    audit = header["audit"]
    assert Path(audit["module_file"]) == REPO / "envruntime" / "__init__.py"
    assert audit["git_sha"] == git_head()
    assert audit["backend_class"] == "envruntime.backends.mujoco_backend.MujocoBackend"
    assert audit["env_class"].startswith("envruntime.")
    assert audit["managers"] and all(isinstance(m, str) for m in audit["managers"])
    assert {"python", "numpy", "torch", "mujoco", "motrixsim", "numba"} <= audit["versions"].keys()
    threads = audit["threads"]
    assert (threads["torch"], threads["backend"]) == (1, 2)
    assert {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS",
            "numba", "affinity"} <= threads.keys()
    assert threads["affinity"] == sorted(os.sched_getaffinity(0))
    assert threads["numba_layer"] in ("omp", "workqueue") and threads["OMP_WAIT_POLICY"] is not None
    assert (threads["kernel_policy"], threads["kernel_rungs"]) == ("adaptive", [1, 2])
    assert audit["collector"] == {"actions": "actor", "device": "cpu", "device_name": "cpu",
                                  "actor_class": "SacActor"}

    assert [s["step"] for s in steps] == list(range(WARMUP + MEASURE))
    assert [s["warmup"] for s in steps] == [True] * WARMUP + [False] * MEASURE
    keys = steps[0]["phases"].keys()
    assert set(BASE_PHASES) <= keys
    assert any(k.startswith("update_state.") for k in keys)  # the managers' breakdown
    for step in steps:
        assert step["phases"].keys() == keys
        assert all(ms >= 0.0 for ms in step["phases"].values())
        assert step["phases"]["physics_ms"] > 0.0 and step["phases"]["policy_ms"] > 0.0
        assert isinstance(step["resets"], int) and 0 <= step["resets"] <= NUM_ENVS

    assert summary["phase_means_ms"].keys() == keys
    measured = [s["phases"]["physics_ms"] for s in steps[WARMUP:]]
    assert summary["phase_means_ms"]["physics_ms"] == pytest.approx(sum(measured) / MEASURE)
    assert summary["throughput"] == pytest.approx(NUM_ENVS * MEASURE / summary["measure_wall_s"])
    assert summary["peak_rss_mb"] > 0
    assert 1.0 <= summary["metrics"]["kernel_threads"] <= 2.0  # the row kernels' mean count, measured steps


@pytest.mark.slow
def test_flashsac_direct_run_to_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "stream.fifo"
    os.mkfifo(fifo)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(fifo.open().read().splitlines()), daemon=True)
    reader.start()
    proc = run_cli(bench_argv(fifo, algo="flashsac", variant="direct", threads=0))
    reader.join(timeout=60)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in lines]
    assert [r["kind"] for r in records][::len(records) - 1] == ["header", "summary"]
    header = records[0]
    assert header["case"]["algo"] == "flashsac" and header["case"]["variant"] == "direct"
    assert header["audit"]["managers"] == []
    assert header["params"]["threads"] == len(os.sched_getaffinity(0))  # 0 = whole affinity mask
    assert len(records) == 2 + WARMUP + MEASURE


def test_control_channel_runs_exactly_the_commanded_blocks(tmp_path: Path) -> None:
    """A real bench process on a control FIFO: it is parked until each command, tags its steps with
    the block, ends each block with a synchronised block record, and its summary covers the
    measured blocks only (--warmup/--measure are not used)."""
    stream, control = tmp_path / "run.ndjson", tmp_path / "control.fifo"
    os.mkfifo(control, 0o600)
    channel = os.open(control, os.O_RDWR)  # as the worker holds it: never blocks, EOF only when closed
    argv = [*bench_argv(stream, variant="direct", warmup=7, measure=9), "--control", str(control)]
    proc = subprocess.Popen([sys.executable, "-m", "envruntime.bench", *argv], cwd=REPO,
                            stderr=subprocess.PIPE, text=True)
    commands = [(0, 2, True), (1, 1, True), (2, 3, False), (3, 1, True), (4, 2, False)]
    for block, steps, warmup in commands:
        command = {"cmd": "run", "steps": steps, "block": block, "warmup": warmup}
        os.write(channel, (json.dumps(command) + "\n").encode())
    while proc.poll() is None and '"block": 4,' not in (stream.read_text() if stream.exists() else ""):
        time.sleep(0.05)
    os.close(channel)  # end-of-file ends the run, as an "end" command would
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    records = read_records(stream)
    assert records[0]["kind"] == "header" and records[0]["control"] == 1
    blocks = [r for r in records if r["kind"] == "block"]
    assert [(b["block"], b["steps"], b["warmup"]) for b in blocks] == commands
    assert all(b["started"] <= b["ended"] and b["wall_s"] > 0 for b in blocks)
    steps = [r for r in records if r["kind"] == "step"]
    assert [s["block"] for s in steps] == [b for b, n, _ in commands for _ in range(n)]
    assert [s["step"] for s in steps] == list(range(9))
    assert [s["warmup"] for s in steps] == [w for _, n, w in commands for _ in range(n)]
    summary = records[-1]
    measured = [b for b in blocks if not b["warmup"]]
    wall = sum(b["wall_s"] for b in measured)
    assert summary["kind"] == "summary" and summary["measure_wall_s"] == pytest.approx(wall)
    assert summary["throughput"] == pytest.approx(NUM_ENVS * 5 / wall)
    measured_steps = [s for s in steps if not s["warmup"]]
    assert summary["phase_means_ms"]["physics_ms"] == pytest.approx(
        sum(s["phases"]["physics_ms"] for s in measured_steps) / 5)
    for name in ("cpu_ms", "thread_cpu_ms"):  # every step's CPU time: the process's, the main thread's
        assert all(s["phases"][name] > 0 for s in steps)
        mean = sum(s["phases"][name] for s in measured_steps) / 5
        assert summary["phase_means_ms"][name] == pytest.approx(mean)
    assert all(s["phases"]["cpu_ms"] >= s["phases"]["thread_cpu_ms"] for s in steps)


def test_control_path_that_is_not_a_fifo_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stream, plain = tmp_path / "run.ndjson", tmp_path / "plain.txt"
    plain.write_text("")
    assert bench.main([*bench_argv(stream), "--control", str(plain)]) == 2
    assert "is not a FIFO" in capsys.readouterr().err
    (record,) = read_records(stream)
    assert record["kind"] == "error" and "--control" in record["message"]


def test_pregenerated_actions_stream_has_no_policy_time(tmp_path: Path) -> None:
    stream = tmp_path / "run.ndjson"
    config = bench.parse_config(bench_argv(stream, actions="pregenerated", variant="direct"))
    assert bench.execute(config) == 0
    records = read_records(stream)
    header, steps, summary = records[0], records[1:-1], records[-1]
    assert (header["params"]["actions"], header["params"]["device"]) == ("pregenerated", "cpu")
    assert header["audit"]["collector"] == {"actions": "pregenerated", "device": None, "device_name": None,
                                            "action_bank_steps": 16}
    assert len(steps) == WARMUP + MEASURE
    assert all(s["phases"]["policy_ms"] == 0.0 for s in steps)
    assert all(s["phases"]["physics_ms"] > 0.0 for s in steps)
    assert summary["phase_means_ms"]["policy_ms"] == 0.0


@pytest.mark.parametrize("actions", ["actor", "pregenerated"])
def test_cuda_device_without_cuda_exits_2_saying_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        actions: str) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # as on this CPU-only host
    stream = tmp_path / "run.ndjson"
    assert bench.main(bench_argv(stream, device="cuda", actions=actions)) == 2
    assert "--device cuda: torch sees no CUDA device" in capsys.readouterr().err
    (record,) = read_records(stream)
    assert record["kind"] == "error" and "use --device cpu" in record["message"]


def test_unknown_task_exits_2_listing_valid_tasks(tmp_path: Path) -> None:
    stream = tmp_path / "run.ndjson"
    proc = run_cli(bench_argv(stream, task="go3_moonwalk"))
    assert proc.returncode == 2
    assert "unknown task 'go3_moonwalk'" in proc.stderr and TASK in proc.stderr
    (record,) = read_records(stream)
    assert record["kind"] == "error" and TASK in record["message"]


@pytest.mark.parametrize(("override", "expected"), [
    ({"sim": "bullet"}, "valid: mujoco, motrix, mjwarp"),
    ({"algo": "ppo"}, "valid: sac, flashsac"),
    ({"variant": "fused"}, "valid: manager, direct"),
    ({"num_envs": -4}, "--num-envs must be >= 1, got -4"),
    ({"measure": 0}, "--measure must be >= 1, got 0"),
    ({"warmup": -1}, "--warmup must be >= 0, got -1"),
    ({"num_envs": "many"}, "argument --num-envs: invalid int value"),
    ({"actions": "scripted"}, "unknown actions 'scripted'; valid: actor, pregenerated"),
    ({"device": "tpu"}, "unknown device 'tpu'; valid: cpu, cuda"),
])
def test_invalid_arguments_exit_2_with_an_error_record(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], override: dict, expected: str) -> None:
    stream = tmp_path / "run.ndjson"
    assert bench.main(bench_argv(stream, **override)) == 2
    assert expected in capsys.readouterr().err
    (record,) = read_records(stream)
    assert record["kind"] == "error" and expected in record["message"]


@pytest.mark.slow
def test_stream_to_stdout_is_refused_with_exit_2(tmp_path: Path) -> None:
    proc = run_cli(bench_argv(Path("/dev/stdout"), task="go3_moonwalk"))
    assert proc.returncode == 2 and proc.stdout == ""
    proc = run_cli(bench_argv(Path("/dev/stdout")))
    assert proc.returncode == 2 and proc.stdout == ""
    assert "records never go to stdout" in proc.stderr


def test_bad_torch_threads_env_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(bench.TORCH_THREADS_ENV, "lots")
    stream = tmp_path / "run.ndjson"
    assert bench.main(bench_argv(stream)) == 2
    assert "ENVRUNTIME_TORCH_THREADS must be a positive integer" in read_records(stream)[0]["message"]


def test_bad_kernel_thread_policy_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVRUNTIME_KERNEL_THREADS", "spin")
    stream = tmp_path / "run.ndjson"
    assert bench.main(bench_argv(stream)) == 2
    assert "ENVRUNTIME_KERNEL_THREADS must be one of adaptive, fixed" in read_records(stream)[0]["message"]


def test_missing_engine_exits_2_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mujoco_warp", None)  # the real factory's `import mujoco_warp` fails
    config = bench.parse_config(bench_argv(tmp_path / "run.ndjson", sim="mjwarp"))
    assert bench.execute(config) == 2
    (record,) = read_records(tmp_path / "run.ndjson")
    assert record["type"] == "MjwarpNotInstalledError"
    assert "mujoco-warp is not installed: pip install 'shasweep[mjwarp]'" in record["message"]


class FailingEnv:
    """The real go2 env whose third step raises, to exercise the crash path."""

    def __init__(self, *args: object) -> None:
        self._env = make_env(*args)
        self._steps = 0

    def __getattr__(self, name: str) -> object:
        return getattr(self._env, name)

    def step(self, action: np.ndarray) -> StepResult:
        self._steps += 1
        if self._steps == 3:
            raise FloatingPointError("simulated divergence at step 3")
        return self._env.step(action)


def test_crash_during_run_writes_error_record_and_exits_1(tmp_path: Path) -> None:
    stream = tmp_path / "run.ndjson"
    config = bench.parse_config(bench_argv(stream))
    assert bench.execute(config, env_factory=FailingEnv) == 1
    records = read_records(stream)
    assert [r["kind"] for r in records] == ["header", "step", "step", "error"]
    error = records[-1]
    assert error["type"] == "FloatingPointError"
    assert error["message"] == "simulated divergence at step 3"
    assert "Traceback" in error["traceback"] and "in step" in error["traceback"]


def test_the_sweep_spec_offers_the_bench_s_actions_and_devices() -> None:
    """The orchestrator (installable without envruntime) keeps its own copy of the choices."""
    from envruntime.collect.policy import ACTIONS, DEVICES
    from orchestrator.spec.schema import ENVRUNTIME_OPTIONAL

    assert ENVRUNTIME_OPTIONAL == {"actions": ACTIONS, "device": DEVICES}
