"""Test helpers: a generated linear git history of ``step_bench.py`` with a known speed per commit."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fakebench.fakerepo import git

STEP_BENCH = Path(__file__).with_name("step_bench.py")
COMMAND = ["{python}", "step_bench.py", "--stream", "{stream}", "--warmup", "{warmup}",
           "--measure", "{measure}", "--num-envs", "{num_envs}"]


@dataclass(frozen=True)
class CommitModel:
    """What one commit's bench reports: its step time, its noise (log sigma; ``alternate``: factors its
    successive runs take in turn), whether it fails."""

    step_ms: float = 10.0
    noise: float = 0.005
    fail: bool = False
    alternate: tuple[float, ...] = ()


@dataclass(frozen=True)
class LinearRepo:
    path: Path
    shas: tuple[str, ...]  # oldest first
    subjects: tuple[str, ...]


def make_linear_repo(root: Path, models: Sequence[CommitModel]) -> LinearRepo:
    """One commit per model, oldest first, each writing ``bench_model.json`` (and the bench once)."""
    repo = root / "linear"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "step_bench.py").write_text(STEP_BENCH.read_text())
    shas, subjects = [], []
    for index, model in enumerate(models):
        (repo / "bench_model.json").write_text(json.dumps(
            {"commit": index, "step_ms": model.step_ms, "noise": model.noise, "fail": model.fail,
             "alternate": list(model.alternate)}))
        git(repo, "add", "step_bench.py", "bench_model.json")
        subject = f"commit {index}: step_ms={model.step_ms:.2f}" + (" (bench fails)" if model.fail else "")
        git(repo, "commit", "-q", "-m", subject)
        shas.append(git(repo, "rev-parse", "HEAD"))
        subjects.append(subject)
    return LinearRepo(path=repo, shas=tuple(shas), subjects=tuple(subjects))


def step_models(n: int, step_at: int, slowdown: float = 1.0 / 0.8, noise: float = 0.005) -> list[CommitModel]:
    """``n`` commits; from index ``step_at`` on, a step takes ``slowdown`` x longer (20 % less throughput:
    far enough below a 0.95 gate that 3 rounds FAIL it on a loaded machine too, where a 10 % step
    left the interval of 3 rounds straddling the bound now and then)."""
    return [CommitModel(step_ms=10.0 * (slowdown if i >= step_at else 1.0), noise=noise) for i in range(n)]


def bisect_sweep(repo: LinearRepo, **overrides: object) -> dict:
    """A bisect sweep YAML (as a dict) for ``repo``: one case, one throughput gate, tiny runs."""
    return {
        "name": "bis", "repo": str(repo.path), "cases": ["sac/fake/none"],
        "known": {"tasks": [], "sims": []}, "command": COMMAND,
        "params": {"num_envs": 8, "warmup": 0, "measure": 2, "threads": 1}, "repeats": 3, "timeout_s": 120,
        "gates": [{"metric": "throughput", "min_ratio": 0.95}], "metrics": ["throughput"],
        **overrides,
    }
