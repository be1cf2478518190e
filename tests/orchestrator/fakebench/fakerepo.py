"""Test helpers: a temporary git repository holding the fake bench at two commits, and runs on it."""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

from orchestrator.contract import PlannedRun

FAKE_BENCH = Path(__file__).with_name("fake_bench.py")
LOCKSTEP_BENCH = Path(__file__).with_name("lockstep_bench.py")
WORK_MS = (4.0, 2.0)  # the fake bench's WORK_MS at the first and the second commit
COMMAND = ("{python}", "fake_bench.py", "--stream", "{stream}", "--warmup", "{warmup}",
           "--measure", "{measure}", "--num-envs", "{num_envs}", "--threads", "{threads}")


@dataclass(frozen=True)
class FakeRepo:
    path: Path
    shas: tuple[str, str]


def git(repo: Path, *args: str) -> str:
    cmd = ["git", "-C", str(repo), "-c", "user.name=test", "-c", "user.email=test@example.invalid", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


def make_fake_repo(root: Path, work_ms: tuple[float, float] = WORK_MS) -> FakeRepo:
    """A repo with two commits of fake_bench.py that differ only in WORK_MS (``work_ms``: theirs; steps
    of tens of ms keep a 2x change decisive on a loaded machine, where a sleep overshoots by ms)."""
    repo = root / "benchrepo"
    repo.mkdir()
    git(repo, "init", "-q")
    bench = repo / "fake_bench.py"
    shas = []
    for ms in work_ms:
        source = FAKE_BENCH.read_text().replace("WORK_MS = 4.0", f"WORK_MS = {ms}")
        bench.write_text(source)
        git(repo, "add", "fake_bench.py")
        git(repo, "commit", "-q", "-m", f"fake bench, WORK_MS={ms}")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return FakeRepo(path=repo, shas=(shas[0], shas[1]))


def make_lockstep_repo(root: Path) -> FakeRepo:
    """A repo with two commits of lockstep_bench.py (written with orchestrator.benchkit): steps of 2 ms,
    then 3 ms."""
    repo = root / "lockstep-repo"
    repo.mkdir()
    git(repo, "init", "-q")
    shas = []
    for step_ms in (2.0, 3.0):
        source = LOCKSTEP_BENCH.read_text().replace('{"step_ms": 2.0}', f'{{"step_ms": {step_ms}}}')
        (repo / "lockstep_bench.py").write_text(source)
        git(repo, "add", "lockstep_bench.py")
        git(repo, "commit", "-q", "-m", f"lockstep bench, steps of {step_ms} ms")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return FakeRepo(path=repo, shas=(shas[0], shas[1]))


def make_run(repo: FakeRepo, sha: str, *, results_root: Path, order: int = 0,
             extra_args: tuple[str, ...] = (), command: tuple[str, ...] = COMMAND, timeout_s: float = 60.0,
             side: str | None = None, params: dict | None = None, env: dict | None = None,
             sweep_id: str = "test-sweep") -> PlannedRun:
    """A hand-made PlannedRun of the fake bench (the planner is not needed). Its run key names the
    results root too: two tests at once (xdist workers) may make repositories of the same SHAs, and
    processes are found, and killed, by run key."""
    side = side or ("base" if sha == repo.shas[0] else "cand")
    root = hashlib.sha256(str(results_root).encode()).hexdigest()[:8]
    return PlannedRun(
        sweep_id=sweep_id, run_key=f"{side}-{order:03d}-{sha[:8]}-{root}", order=order, side=side, ref=side,
        sha=sha,
        case="sac/fake/none", algo="sac", task="fake", sim="none", variant="manager", repeat=order,
        repo=str(repo.path), argv_template=command + extra_args,
        params=params or {"num_envs": 8, "warmup": 1, "measure": 3, "threads": 1},
        env=env or {}, timeout_s=timeout_s, results_root=str(results_root),
    )

