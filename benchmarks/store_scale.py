"""Results at a lab's scale: time and peak RSS of the readers on roots of 10^3 to 10^5 runs.

    python benchmarks/store_scale.py [--sizes 1000,10000,100000] [--repeats 3] [--work DIR]
        [--compaction-sample 1000]

For each size a results root is generated with the project's writer: sweeps of 40 runs (sides base
and cand x 4 of 12 cases x 5 repeats, interleaved), each sweep on one of 3 hosts (one of them this
machine, so `plan` finds a noise history), the base SHA shared by 5 consecutive sweeps on one host
(the drift history of the reported sweep). Each run is a row of `store.parquet.run_table` (about 80
columns: the host record, the audit, 15 phase means) and 50 steps x 12 phases (`run_steps_table`).
Finished sweeps are written compacted through `store.compact.write_compacted` (what `shasweep run`
leaves behind); the latest 3 sweeps (as many as hosts) are per-run files (`write_run`) recorded
running with their client gone, as after a kill: their number does not grow with the root (until
2026-12-02 the latest 1 % of sweeps were left so, 25 at 10^5 runs).

Then, each as a fresh process under `/usr/bin/time -v` (median wall and CPU time of --repeats,
highest peak RSS): `history --case C` (C in a third of the sweeps; its latest 200 by default),
`report` of a sweep with drift history, `plan` of a one-case sweep (noise history of its case on
this host), `list` (the latest 50), and a duckdb group-by of every run (a plain reader, for
scale). Next to them: what the root holds and what history reads (files, MiB), so cost can be
checked against what is read rather than what is stored.

Then the results site (`shasweep site`, issue 42): the whole site built into a fresh directory
(--repeats times), then one more sweep written (compacted, as `shasweep run` leaves it) and the site
brought up to date (once: a second time would find nothing new), and the largest page it holds.

Last, on --compaction-sample runs written per run (`write_run`, 2 files each): files and disk before
and after `shasweep compact --all` (timed), scaled per 10^4 runs.

Targets (issue 28): at 10^5 runs `history --case` and `report` <= 5 s and <= 500 MB peak RSS,
`plan` <= 3 s; from 10^4 to 10^5 runs each grows by at most 2x. Issue 42: at 10^5 runs the whole
site <= 60 s and <= 1 GB peak RSS, the site after one more sweep <= 5 s, every page <= 2 MB; each is
printed with its ratio to the target. Other processes share the machine: read the ratios between
sizes, measured in one run, before absolute times.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa

from orchestrator.cli.results import HISTORY_SWEEPS
from orchestrator.contract import BenchUsage, HostRecord, PlannedRun, RunResult, StepRecord
from orchestrator.spec.load import load_spec
from orchestrator.spec.record import SweepRecord, spec_to_json
from orchestrator.store import query
from orchestrator.store.compact import write_compacted
from orchestrator.store.parquet import run_steps_table, run_table
from orchestrator.store.parquet import write_run as write_single_run
from orchestrator.store.records import write_record
from orchestrator.store.step_log import StepLog
from orchestrator.worker.hostinfo import collect_host

CASES = [f"sac/task{i:02d}/mujoco" for i in range(12)]
CASES_PER_SWEEP, REPEATS, SIDES = 4, 5, ("base", "cand")
RUNS_PER_SWEEP = CASES_PER_SWEEP * REPEATS * len(SIDES)
# the phases an envruntime collector step reports (docs/design.md, "Run protocol")
PHASES = ("collector_step_ms", "env_step_ms", "policy_ms", "replay_ms", "apply_action_ms", "physics_ms",
          "update_state_ms", "reset_done_ms", "d2h_ms", "obs_ms", "reward_ms", "termination_ms")
STEPS, WARMUP = 50, 5
HOSTS = (platform.node(), "bench-b", "bench-c")
COMMAND = ["{python}", "bench.py", "--stream", "{stream}", "--envs", "{num_envs}"]
T0 = datetime(2025, 1, 1, tzinfo=UTC)
SWEEP_YAML = """name: lab
repo: REPO
sides:
  base: {ref: HEAD~1}
  cand: {ref: HEAD}
baseline: base
cases: CASES
params: {num_envs: 4096}
repeats: 5
gates:
  - {metric: throughput, min_ratio: 0.97}
command: COMMAND
results: RESULTS
"""


@dataclass(frozen=True)
class Measured:
    wall_s: float
    cpu_s: float  # user + system: what the command itself cost, whatever else ran on the machine
    max_rss_mib: float


def sha_of(*parts: object) -> str:
    return hashlib.sha1("/".join(map(str, parts)).encode()).hexdigest()


def sweep_id_of(i: int) -> str:
    return f"lab-{(T0 + timedelta(hours=i)):%Y%m%dT%H%M%S}"


def sweep_cases(i: int) -> list[str]:
    return [CASES[(i * CASES_PER_SWEEP + j) % len(CASES)] for j in range(CASES_PER_SWEEP)]


class Lab:
    """Writes the sweeps of a lab's results root, one at a time (memory: one sweep)."""

    def __init__(self, root: Path, spec: dict) -> None:
        self.root, self.spec, self.rng = root, spec, np.random.default_rng(0)
        host = collect_host()
        self.hosts = [dataclasses.replace(host, hostname=name, id=name) for name in HOSTS]

    def sweep(self, i: int, compacted: bool) -> None:
        sweep_id, cases = sweep_id_of(i), sweep_cases(i)
        shas = {"base": sha_of("main", i // 5), "cand": sha_of("feature", i)}
        host = self.hosts[(i // 5) % len(self.hosts)]  # a base SHA's sweeps on one host: drift history
        created = T0 + timedelta(hours=i)
        runs = [(PlannedRun(sweep_id=sweep_id, run_key=sha_of(sweep_id, n)[:20], order=n, side=side, ref=side,
                            sha=shas[side], case=case, algo="sac", task=case.split("/")[1], sim="mujoco",
                            variant="manager", repeat=repeat, repo="/lab/repo", argv_template=tuple(COMMAND),
                            params={"num_envs": 4096}, results_root=str(self.root)),
                 self.result(created + timedelta(seconds=30 * n), host, shas[side], case))
                for n, (repeat, case, side) in enumerate((r, c, s) for r in range(REPEATS) for c in cases
                                                         for s in SIDES)]
        self.record(sweep_id, created, cases, shas, host, [run for run, _ in runs],
                    "finished" if compacted else "running")
        if compacted:
            write_compacted(self.root, sweep_id, pa.concat_tables([run_table(r, x) for r, x in runs]),
                            pa.concat_tables([run_steps_table(r, x.steps) for r, x in runs]))
        else:
            for run, result in runs:
                write_single_run(run, result)

    def result(self, start: datetime, host: HostRecord, sha: str, case: str) -> RunResult:
        level = self.rng.lognormal(0.0, 0.02)  # 2 % run noise around the case's phase means
        means = np.random.default_rng(CASES.index(case)).uniform(0.5, 4.0, len(PHASES)) * level
        samples = means[None, :] * self.rng.lognormal(0.0, 0.02, (STEPS, len(PHASES)))
        steps = [StepRecord(step, step < WARMUP, dict(zip(PHASES, map(float, row), strict=True)))
                 for step, row in enumerate(samples)]
        wall = float(samples[WARMUP:, 0].sum() / 1000.0)
        audit = {"git_sha": sha, "module_file": "/lab/worktrees/envruntime/__init__.py",
                 "env_class": "envruntime.envs.ManagerBasedEnv",
                 "backend_class": "envruntime.backends.Mujoco",
                 "managers": ["action", "command", "observation", "reward", "termination", "event"],
                 "versions": {"numpy": "2.2.0", "mujoco": "3.3.0", "torch": "2.7.0"},
                 "threads": {"OMP_NUM_THREADS": "4"}}
        return RunResult(status="ok", error=None, started_at=start,
                         ended_at=start + timedelta(seconds=wall + 3), exit_code=0, log_dir="/lab/logs",
                         host=host, header={"audit": audit},
                         summary={"throughput": 4096 * (STEPS - WARMUP) / wall, "measure_wall_s": wall,
                                  "phase_means_ms": dict(zip(PHASES, map(float, means), strict=True))},
                         steps=StepLog(steps), usage=BenchUsage(wall + 3, wall * 0.9, 0.2, 2048.0, "rusage"),
                         pythonpath=["/lab/worktrees"], audited=True, worktree="/lab/worktrees")

    def record(self, sweep_id: str, created: datetime, cases: list[str], shas: dict, host: HostRecord,
               runs: list[PlannedRun], status: str) -> None:
        spec = {**self.spec, "name": "lab", "cases": cases}
        write_record(self.root, SweepRecord.from_json({
            "sweep_id": sweep_id, "created": created.isoformat(timespec="seconds"), "status": status,
            "repo": "/lab/repo", "results_root": str(self.root), "planned_runs": len(runs), "spec": spec,
            "sides": {side: {"ref": side, "sha": sha, "variant": "manager", "params": {"num_envs": 4096},
                             "env": {}} for side, sha in shas.items()},
            "host": host.as_dict(),
            "outcomes": [run.outcome(host_id=host.id, status="ok").to_json() for run in runs]}))


def generate(root: Path, runs: int, spec: dict) -> float:
    """Write ``runs`` runs (whole sweeps) under ``root``; seconds it took."""
    started = time.monotonic()
    lab, sweeps = Lab(root, spec), max(1, runs // RUNS_PER_SWEEP)
    # the latest few sweeps (as many as hosts) are left as per-run files recorded running, their
    # client gone (as after a kill): how many sweeps a lab leaves so does not grow with its root
    loose = min(len(HOSTS), sweeps)
    for i in range(sweeps):
        lab.sweep(i, compacted=i < sweeps - loose)
        if i % 250 == 249:
            print(f"    {(i + 1) * RUNS_PER_SWEEP} runs written ({time.monotonic() - started:.0f} s)",
                  flush=True)
    return time.monotonic() - started


def timed(argv: list[str], repeats: int) -> Measured:
    """Median wall and CPU time and highest peak RSS of ``argv`` as a fresh process (``/usr/bin/time -v``)."""
    walls, cpus, rss = [], [], []
    for _ in range(repeats):
        proc = subprocess.run(["/usr/bin/time", "-v", *argv], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, check=False)
        if proc.returncode not in (0, 1, 4):
            raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
        walls.append(_clock(re.search(r"Elapsed \(wall clock\) time.*: (\S+)", proc.stderr).group(1)))
        cpus.append(sum(float(re.search(rf"{kind} time \(seconds\): (\S+)", proc.stderr).group(1))
                        for kind in ("User", "System")))
        peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr).group(1)
        rss.append(int(peak) / 1024)
    return Measured(statistics.median(walls), statistics.median(cpus), max(rss))


def _clock(text: str) -> float:
    seconds = 0.0
    for part in text.split(":"):
        seconds = seconds * 60 + float(part)
    return seconds


def tree_size(path: Path) -> tuple[int, int]:
    """(files, bytes) of the Parquet files under ``path``."""
    files = list(path.rglob("*.parquet"))
    return len(files), sum(f.stat().st_size for f in files)


def make_repo(directory: Path) -> Path:
    """A two-commit git repository for `plan` to resolve HEAD~1 and HEAD in."""
    directory.mkdir(parents=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "lab", "GIT_AUTHOR_EMAIL": "lab@x", "GIT_COMMITTER_NAME": "lab",
           "GIT_COMMITTER_EMAIL": "lab@x"}
    subprocess.run(["git", "init", "-q", str(directory)], check=True, env=env)
    for n in range(2):
        (directory / "bench.py").write_text(f"# version {n}\n")
        subprocess.run(["git", "-C", str(directory), "add", "."], check=True, env=env)
        subprocess.run(["git", "-C", str(directory), "commit", "-qm", f"v{n}"], check=True, env=env)
    return directory


def sweep_yaml(path: Path, cases: list[str], results: Path, repo: Path) -> Path:
    text = (SWEEP_YAML.replace("CASES", json.dumps(cases)).replace("COMMAND", json.dumps(COMMAND))
            .replace("RESULTS", str(results)).replace("REPO", str(repo)))
    path.write_text(text)
    return path


def measure(root: Path, repo: Path, runs: int, repeats: int) -> dict[str, Measured]:
    shasweep = [sys.executable, "-m", "orchestrator.cli"]
    sweeps = max(1, runs // RUNS_PER_SWEEP)
    last = sweeps - max(1, sweeps // 100) - 1  # the last compacted sweep
    reported = sweep_id_of(max(0, last - (last + 1) % 5))  # the 5th sweep of its base SHA: 4 earlier ones
    plan = sweep_yaml(repo.parent / "plan.yaml", [CASES[0]], root, repo)
    duck = ("import duckdb, sys; duckdb.sql(\"SELECT \\\"case\\\", side, median(throughput), count(*) FROM "
            "read_parquet('\" + sys.argv[1] + \"/runs/**/*.parquet', union_by_name = true) "
            "WHERE status = 'ok' GROUP BY ALL\").fetchall()")
    commands = {
        "history --case": [*shasweep, "history", "--case", CASES[0], "--results", str(root)],
        "report": [*shasweep, "report", reported, "--results", str(root)],
        "plan": [*shasweep, "plan", str(plan)],
        "list": [*shasweep, "list", "--results", str(root)],
        "duckdb group-by": [sys.executable, "-c", duck, str(root)],
    }
    # a warm page cache for all, and the index brought up to date once: the generated sweeps still
    # recorded running have no client (as after a kill), so the first reader indexes their files
    timed(commands["history --case"], 1)
    return {name: timed(argv, repeats) for name, argv in commands.items()}


SITE_TARGETS = {"site (whole)": (60.0, 1024.0), "site (one more sweep)": (5.0, None)}  # s, MiB
PAGE_TARGET_MIB = 2.0


def measure_site(root: Path, work: Path, spec: dict, runs: int, repeats: int) -> dict[str, Measured]:
    """The whole site built afresh (median of ``repeats``), then brought up to date after one more
    sweep; prints the largest page."""
    shasweep = [sys.executable, "-m", "orchestrator.cli", "site", "--results", str(root)]
    out = work / "site"
    whole = []
    for _ in range(repeats):
        shutil.rmtree(out, ignore_errors=True)
        whole.append(timed([*shasweep, "--out", str(out)], 1))
    Lab(root, spec).sweep(max(1, runs // RUNS_PER_SWEEP), compacted=True)
    measured = {"site (whole)": Measured(statistics.median(m.wall_s for m in whole),
                                         statistics.median(m.cpu_s for m in whole),
                                         max(m.max_rss_mib for m in whole)),
                "site (one more sweep)": timed([*shasweep, "--out", str(out)], 1)}
    pages = [p for p in out.rglob("*.html") if ".shasweep-site" not in p.parts]
    largest = max(pages, key=lambda p: p.stat().st_size)
    mib = largest.stat().st_size / 2**20
    print(f"  site: {len(pages)} pages, the largest {largest.relative_to(out)} {mib:.2f} MiB "
          f"({mib / PAGE_TARGET_MIB:.2f} x the {PAGE_TARGET_MIB:g} MiB target)")
    for name, m in measured.items():
        seconds, mib_target = SITE_TARGETS[name]
        memory = f", peak RSS {m.max_rss_mib / mib_target:.2f} x {mib_target:g} MiB" if mib_target else ""
        print(f"  {name}: {m.wall_s / seconds:.2f} x the {seconds:g} s target{memory}")
    shutil.rmtree(out)
    return measured


def read_set(root: Path) -> str:
    """What the root holds and what `history --case` reads of it (the case's latest 200 sweeps)."""
    files, size = tree_size(root / "runs")
    steps_files, steps_size = tree_size(root / "steps")
    held = query.lookup(root, query.Where(cases=[CASES[0]]), ["sweep_id", "started_at", "file"])
    latest = held.groupby("sweep_id")["started_at"].min().sort_values().index[-HISTORY_SWEEPS:]
    held = held[held["sweep_id"].isin(latest)]
    touched = {root / "runs" / f"sweep={s}" / f for s, f in zip(held["sweep_id"], held["file"], strict=True)}
    mib = sum(p.stat().st_size for p in touched) / 2**20
    return (f"root: {files} runs files ({size / 2**20:.0f} MiB), {steps_files} steps files "
            f"({steps_size / 2**20:.0f} MiB); history --case reads {len(touched)} files ({mib:.1f} MiB, "
            f"{len(held)} runs of its latest {len(latest)} sweeps)")


def compaction_sample(work: Path, runs: int, spec: dict) -> None:
    root = work / "sample" / "results"
    lab = Lab(root, spec)
    for i in range(max(1, runs // RUNS_PER_SWEEP)):
        lab.sweep(i, compacted=False)
    written = (max(1, runs // RUNS_PER_SWEEP)) * RUNS_PER_SWEEP
    before = [sum(x) for x in zip(tree_size(root / "runs"), tree_size(root / "steps"), strict=True)]
    took = timed([sys.executable, "-m", "orchestrator.cli", "compact", "--all", "--results", str(root)], 1)
    after = [sum(x) for x in zip(tree_size(root / "runs"), tree_size(root / "steps"), strict=True)]
    scale = 10_000 / written
    print(f"compaction of {written} runs written per run: {took.wall_s:.1f} s, "
          f"peak RSS {took.max_rss_mib:.0f} MiB")
    print(f"  per 10^4 runs: files {before[0] * scale:,.0f} -> {after[0] * scale:,.0f}, "
          f"disk {before[1] * scale / 2**20:,.0f} MiB -> {after[1] * scale / 2**20:,.0f} MiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="runs per root, comma-separated")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each command (median wall)")
    parser.add_argument("--compaction-sample", type=int, default=1000, metavar="RUNS")
    parser.add_argument("--work", type=Path, help="where the roots go (default: a temporary directory)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="store-scale-"))
    repo = make_repo(work / "repo")
    spec = spec_to_json(load_spec(sweep_yaml(work / "lab.yaml", CASES[:CASES_PER_SWEEP], work, repo)))
    print(f"store_scale: sweeps of {RUNS_PER_SWEEP} runs, {STEPS} steps x {len(PHASES)} phases each; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; under {work}")
    results: dict[int, dict[str, Measured]] = {}
    for size in (int(s) for s in args.sizes.split(",")):
        root = work / f"runs-{size}" / "results"
        print(f"{size} runs: generating", flush=True)
        took = generate(root, size, spec)
        print(f"  generated in {took:.0f} s; {read_set(root)}")
        results[size] = measure(root, repo, size, args.repeats)
        results[size] |= measure_site(root, work, spec, size, args.repeats)
        for name, m in results[size].items():
            print(f"  {name:<16} {m.wall_s:7.2f} s  (CPU {m.cpu_s:6.2f} s)  {m.max_rss_mib:7.0f} MiB",
                  flush=True)
        shutil.rmtree(root.parent)
    sizes = sorted(results)
    for small, large in zip(sizes, sizes[1:], strict=False):
        print(f"growth {small} -> {large} runs (x{large / small:g}):")
        for name in results[small]:
            a, b = results[small][name], results[large][name]
            print(f"  {name:<16} time x{b.wall_s / a.wall_s:5.2f}  CPU x{b.cpu_s / a.cpu_s:5.2f}  "
                  f"peak RSS x{b.max_rss_mib / a.max_rss_mib:5.2f}")
    compaction_sample(work, args.compaction_sample, spec)
    if args.work is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
