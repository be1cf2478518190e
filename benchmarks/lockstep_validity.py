"""Lockstep validity: do lockstep rounds and interleaved processes measure the same ratio, and if not,
which effect makes them differ?

Two sides (a baseline SHA and a candidate) of a known-truth workload, measured round after round in
four conditions (their order rotates by round, so drift of the host hits all alike):

* ``interleaved``: each side's process alone (no control channel), ``warmup`` then
  ``blocks * block_steps`` measured steps; the order of sweeps today.
* ``lockstep``: both processes resident, the host given to one at a time for a block of
  ``block_steps`` steps (``orchestrator.worker.lockstep_round``: processes started one after another,
  blocks in the A B B A order), no warm-up steps between blocks: the first step of every block is
  kept so that its effect can be measured.
* ``solo``: one process at a time, driven through the control channel with the same blocks back to
  back: what the block structure itself does (round trips on the FIFO, parked thread pools).
* ``gap``: like ``solo``, with an idle gap after each block as long as the block: what being parked
  for the other side's turn does when no other process runs (sleeping thread pools, idle CPUs)
  as against what the other process's run does (its caches, TLB and memory traffic).

Workloads: ``synthetic`` (``benchmarks/ab_validity.py``'s bench, written with
``orchestrator.benchkit``, in a temporary git repository at two commits of its ``work.json``:
``--factor`` times the SHA-256 digests per step; ``--synthetic-threads 2`` hashes on a pool of two
threads, ``--synthetic-bytes`` sets the block hashed, e.g. 16777216 to stream memory) and
``envruntime`` (a clone of this repository with the generated commit of ``ab_validity.py`` whose
direct env step spins for ``--env-slowdown`` of its own time; the collector bench
``python -m envruntime.bench``).

Every process's stream is kept under ``--out`` (step records carry their block; block records their
start and end) with per-block samples of each process's CPU ticks and page faults (``/proc``).
``analyse`` prints, per condition: the ratio (geometric mean of the per-round ratios) with its 95 %
interval and the per-round log-ratio s.d., per round from the two processes' mean step times
(``process``) and, where there are blocks, as lockstep estimates it (``pairs``: the median of the
block pairs' log ratios, block i of each side being cycle i), each also with the first step of
every block dropped; per side the mean step time by position within the block (the first step's
excess, per phase for envruntime); the parked process's CPU share and each side's page faults per
block; and the largest overlap of two processes' blocks (0: exactly one process ran at a time).
For envruntime the truth is not 1/(1 + slowdown): the spin is a share of the env step only, so
the implied truth ``1 / (1 + slowdown * env_step_ms / collector_step_ms)`` is printed per condition.

Usage:
  python benchmarks/lockstep_validity.py run --workload synthetic|envruntime --out DIR [--rounds 8]
      [--blocks 16] [--block-steps 3] [--warmup 5] [--factor 1.10] [--conditions ...] [--cpus 0,1]
      [--smoke]
  python benchmarks/lockstep_validity.py analyse DIR
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO_ROOT), str(REPO_ROOT / "benchmarks")]
from ab_validity import WORK_FILE, calibrate, make_envruntime_repo  # noqa: E402

AB_VALIDITY = REPO_ROOT / "benchmarks" / "ab_validity.py"
CONDITIONS: tuple[str, ...] = ("interleaved", "lockstep", "solo", "gap")
SIDES: tuple[str, ...] = ("base", "cand")
CONTROL_CONDITIONS = frozenset({"lockstep", "solo", "gap"})


# ---------------------------------------------------------------------------- the two sides
def git(repo: Path, *args: str) -> str:
    cmd = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


def synthetic_sides(root: Path, args: argparse.Namespace) -> dict[str, tuple[Path, str]]:
    """Worktrees of the two commits of ``work.json``: side -> (directory, SHA)."""
    repo = root / "synthetic"
    repo.mkdir()
    git(repo, "init", "-q")
    iterations = calibrate(args.step_ms, b"\x5a" * args.synthetic_bytes)
    shas = {}
    for side, factor in (("base", 1.0), ("cand", args.factor)):
        work = {"iterations": round(iterations * factor), "bytes": args.synthetic_bytes,
                "threads": args.synthetic_threads}
        (repo / WORK_FILE).write_text(json.dumps(work) + "\n")
        git(repo, "add", WORK_FILE)
        git(repo, "commit", "-q", "--allow-empty", "-m", f"work x{factor}")
        shas[side] = git(repo, "rev-parse", "HEAD")
    print(f"synthetic: {iterations} digests of {args.synthetic_bytes} B per base step "
          f"(~{args.step_ms:g} ms), {args.synthetic_threads} thread(s), candidate x{args.factor:g}",
          flush=True)
    return {side: _worktree(repo, root / f"tree-{side}", sha) for side, sha in shas.items()}


def envruntime_sides(root: Path, args: argparse.Namespace) -> dict[str, tuple[Path, str]]:
    """Worktrees of this repository's HEAD and of ab_validity's generated slower commit."""
    shas = list(make_envruntime_repo(root, args.env_slowdown).values())
    if args.factor == 1.0:
        shas[1] = shas[0]
    repo = root / "envruntime-repo"
    print(f"envruntime: {args.env_case} direct, N={args.num_envs}; candidate {shas[1][:12]} "
          f"({'A/A' if shas[0] == shas[1] else f'env step {100 * args.env_slowdown:g}% slower'})", flush=True)
    return {"base": _worktree(repo, root / "tree-base", shas[0]),
            "cand": _worktree(repo, root / "tree-cand", shas[1])}


def _worktree(repo: Path, path: Path, sha: str) -> tuple[Path, str]:
    git(repo, "worktree", "add", "-q", "--detach", str(path), sha)
    return path, sha


def bench_argv(args: argparse.Namespace, stream: Path, control: Path | None, measure: int) -> list[str]:
    if args.workload == "synthetic":
        argv = [sys.executable, str(AB_VALIDITY), "bench"]
    else:
        algo, task, sim = args.env_case.split("/")
        argv = [sys.executable, "-m", "envruntime.bench", "--algo", algo, "--task", task, "--sim", sim,
                "--variant", "direct", "--num-envs", str(args.num_envs), "--actions", args.actions]
    argv += ["--warmup", str(args.warmup), "--measure", str(measure), "--stream", str(stream)]
    return argv + (["--control", str(control)] if control else [])


def bench_environment(tree: Path, threads: int) -> dict[str, str]:
    """As the worker builds it: the worktree first on PYTHONPATH, pinned thread variables."""
    from orchestrator.worker.hostinfo import PINNED_THREAD_VARS

    env = dict(os.environ)
    env.update({name: str(threads) for name in PINNED_THREAD_VARS})
    env["PYTHONPATH"] = os.pathsep.join([str(tree), str(REPO_ROOT)])
    return env


# ---------------------------------------------------------------------------- one condition
class Experiment:
    """Runs the conditions of one round; every process pinned to the same CPUs."""

    def __init__(self, args: argparse.Namespace, trees: dict[str, tuple[Path, str]]) -> None:
        self.args, self.trees = args, trees
        self.cpus = {int(c) for c in args.cpus.split(",")} if args.cpus else os.sched_getaffinity(0)

    def start(self, side: str, stream: Path, control: Path | None, measure: int):
        from orchestrator.worker.proc import launch

        tree = self.trees[side][0]
        argv = bench_argv(self.args, stream, control, measure)
        return launch(argv, cwd=tree, env=bench_environment(tree, len(self.cpus)),
                      stdout_path=stream.with_suffix(".out"), stderr_path=stream.with_suffix(".err"),
                      cpus=self.cpus)

    def run_round(self, index: int, out: Path) -> None:
        conditions = self.args.conditions[index % len(self.args.conditions):] + \
            self.args.conditions[:index % len(self.args.conditions)]
        sides = list(SIDES) if index % 2 == 0 else list(SIDES[::-1])
        for condition in conditions:
            where = out / f"round-{index:03d}" / condition
            where.mkdir(parents=True)
            started = time.perf_counter()
            if condition == "interleaved":
                for side in sides:
                    self.alone(side, where)
            elif condition == "lockstep":
                self.together(sides, sides, where, index, "run")
            else:
                for side in sides:
                    self.together(sides, [side], where, index, "sleep" if condition == "gap" else "skip")
            print(f"  round {index} {condition:<11} {time.perf_counter() - started:6.1f} s", flush=True)

    def alone(self, side: str, where: Path) -> None:
        stream = where / f"{side}.jsonl"
        proc = self.start(side, stream, None, self.args.blocks * self.args.block_steps)
        if proc.wait() != 0:
            stderr = stream.with_suffix(".err").read_text()[-2000:]
            raise SystemExit(f"{side} exited {proc.returncode}: {stderr}")

    def together(self, sides: list[str], present: list[str], where: Path, index: int,
                 other_turn: str) -> None:
        """The lockstep schedule of ``sides`` with the processes of ``present``; a turn of a side not
        present is skipped (``skip``) or slept through for as long as the last block took (``sleep``)."""
        from orchestrator.worker.lockstep_round import Contestant, LockstepRound, turn_order

        contestants = {}
        for side in present:
            stream, control = where / f"{side}.jsonl", where / f"{side}.fifo"
            contestants[side] = Contestant(
                side=side, sha=self.trees[side][1], stream_path=stream, control_path=control,
                start=lambda side=side, stream=stream, control=control: self.start(side, stream, control, 1))
        round_ = LockstepRound(list(contestants.values()), timeout_s=self.args.timeout_s)
        samples, last_wall = [], 0.0
        try:
            round_.open(self.args.warmup)
            for turn in turn_order(len(sides), self.args.blocks, index):
                contestant = contestants.get(sides[turn])
                if contestant is None:
                    time.sleep(last_wall if other_turn == "sleep" else 0.0)
                    continue
                before = {c.side: proc_sample(c.proc.pid) for c in contestants.values()}
                record = round_.block(contestant, self.args.block_steps, warmup=False)
                after = {c.side: proc_sample(c.proc.pid) for c in contestants.values()}
                samples.append({"running": contestant.side, "block": record["block"],
                                "wall_s": record["wall_s"], "before": before, "after": after})
                last_wall = record["wall_s"]
            round_.finish()
        finally:
            round_.kill()
        with open(where / "samples.json", "a") as f:
            f.write(json.dumps(samples) + "\n")


def proc_sample(pid: int) -> dict[str, int] | None:
    """A process's page faults and CPU ticks so far (``/proc/PID/stat``, every thread)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return {"minflt": int(fields[7]), "majflt": int(fields[9]), "ticks": int(fields[11]) + int(fields[12])}


# ---------------------------------------------------------------------------- analysis
def read_stream(path: Path) -> dict:
    steps, blocks, summary = [], [], None
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record["kind"] == "step" and not record["warmup"]:
            steps.append(record)
        elif record["kind"] == "block" and not record["warmup"]:
            blocks.append(record)
        elif record["kind"] == "summary":
            summary = record
    return {"steps": steps, "blocks": blocks, "summary": summary}


def step_metric(record: dict) -> float:
    phases = record["phases"]
    return phases.get("collector_step_ms", phases.get("step_ms"))


def positions(run: dict) -> list[tuple[int, dict]]:
    """(position within its block, step) of each measured step; a run without blocks is one block."""
    found, counter = [], defaultdict(int)
    for step in run["steps"]:
        block = step.get("block", -1)
        found.append((counter[block], step))
        counter[block] += 1
    return found


def mean_step_ms(run: dict, drop_first: bool) -> float:
    times = [step_metric(s) for pos, s in positions(run) if not (drop_first and pos == 0)]
    return statistics.fmean(times)


def block_means(run: dict, drop_first: bool) -> list[float]:
    """Each measured block's mean step time, in block order."""
    blocks: dict[int, list[float]] = defaultdict(list)
    for pos, step in positions(run):
        if not (drop_first and pos == 0):
            blocks[step.get("block", -1)].append(step_metric(step))
    return [statistics.fmean(blocks[b]) for b in sorted(blocks)]


def round_log_ratio(base: dict, cand: dict, drop_first: bool, estimator: str) -> float:
    """log(cand throughput / base throughput) of one round: of the processes' mean step times, or
    (``pairs``) lockstep's estimate, the median of the block pairs (block i of each side: cycle i)."""
    if estimator == "process":
        return math.log(mean_step_ms(base, drop_first) / mean_step_ms(cand, drop_first))
    pairs = [math.log(b / c) for b, c in zip(block_means(base, drop_first), block_means(cand, drop_first),
                                              strict=True)]
    return statistics.median(pairs)


def interval(logs: list[float]) -> tuple[float, float, float, float]:
    """(geometric mean ratio, low, high, s.d. of the logs) with a t-interval of the mean log."""
    from scipy import stats

    n = len(logs)
    mean = statistics.fmean(logs)
    sd = statistics.stdev(logs) if n > 1 else math.nan
    half = stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) if n > 1 else math.nan
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half), sd


def analyse(out: Path) -> str:
    meta = json.loads((out / "meta.json").read_text())
    runs: dict[tuple[str, str], list[dict]] = defaultdict(list)  # (condition, side) -> per round
    samples: dict[str, list[dict]] = defaultdict(list)
    overlaps: list[float] = []
    for round_dir in sorted(out.glob("round-*")):
        for cond_dir in sorted(p for p in round_dir.iterdir() if p.is_dir()):
            found = {side: read_stream(cond_dir / f"{side}.jsonl") for side in SIDES}
            for side, run in found.items():
                runs[cond_dir.name, side].append(run)
            for path in cond_dir.glob("samples.json"):
                for line in path.read_text().splitlines():
                    samples[cond_dir.name] += json.loads(line)
            if cond_dir.name == "lockstep":
                overlaps.append(max_overlap([b for run in found.values() for b in run["blocks"]]))
    lines = [f"workload {meta['workload']}, {meta['rounds']} rounds, {meta['blocks']} blocks of "
             f"{meta['block_steps']} steps a side, load before {meta['load_before']}, after "
             f"{meta.get('load_after')}", ""]
    lines.append(f"{'condition':<12} {'estimate':<18} {'ratio':>7} {'95% CI':>17} {'log s.d.':>8}"
                 + ("  implied truth" if meta["workload"] == "envruntime" else ""))
    for condition in meta["conditions"]:
        estimates = [("process", False)]
        if condition in CONTROL_CONDITIONS:
            estimates += [("process", True), ("pairs", False), ("pairs", True)]
        for estimator, drop in estimates:
            base, cand = runs[condition, "base"], runs[condition, "cand"]
            logs = [round_log_ratio(b, c, drop, estimator) for b, c in zip(base, cand, strict=True)]
            ratio, low, high, sd = interval(logs)
            name = f"{estimator}{', drop 1st' if drop else ''}"
            line = f"{condition:<12} {name:<18} {ratio:7.4f} [{low:7.4f}, {high:7.4f}] {sd:8.4f}"
            if meta["workload"] == "envruntime":
                share = statistics.fmean(statistics.fmean(s["phases"]["env_step_ms"] for s in b["steps"])
                                         / statistics.fmean(step_metric(s) for s in b["steps"]) for b in base)
                line += f"  {1 / (1 + meta['env_slowdown'] * share):.4f}"
            lines.append(line)
    lines += ["", "mean step ms by position within the block (all rounds); excess = first - rest"]
    for condition in meta["conditions"]:
        for side in SIDES:
            by_pos: dict[int, list[float]] = defaultdict(list)
            for run in runs[condition, side]:
                for pos, step in positions(run):
                    by_pos[min(pos, 9)].append(step_metric(step))
            means = [statistics.fmean(by_pos[p]) for p in sorted(by_pos)]
            rest = [t for p in sorted(by_pos) if p > 0 for t in by_pos[p]]
            excess = means[0] - statistics.fmean(rest) if rest else math.nan
            overall = statistics.fmean(t for v in by_pos.values() for t in v)
            lines.append(f"{condition:<12} {side:<5} mean {overall:8.2f}  by position "
                         f"{' '.join(f'{m:.2f}' for m in means[:6])}  excess {excess:+.2f}")
    if meta["workload"] == "envruntime":
        lines += ["", "first-step excess per phase (ms), lockstep and solo"]
        for condition in ("lockstep", "solo", "gap", "interleaved"):
            for side in SIDES:
                lines.append(f"{condition:<12} {side:<5} " + phase_excess(runs[condition, side]))
    lines += ["", "per block: the running process's page faults, the parked processes' CPU share"]
    for condition, rows in samples.items():
        faults, parked = defaultdict(list), []
        for row in rows:
            for side, before in row["before"].items():
                after = row["after"].get(side)
                if not (before and after):
                    continue
                if side == row["running"]:
                    faults[side].append(after["minflt"] - before["minflt"])
                else:
                    ticks = after["ticks"] - before["ticks"]
                    parked.append(ticks / os.sysconf("SC_CLK_TCK") / row["wall_s"])
        text = "  ".join(f"{side} faults/block {statistics.fmean(v):.0f}"
                         for side, v in sorted(faults.items()))
        if parked:
            text += f"  parked CPU share {statistics.fmean(parked):.3%}"
        lines.append(f"{condition:<12} {text}")
    if overlaps:
        lines.append(f"\nlockstep: largest overlap of two processes' blocks {max(overlaps) * 1000:.3f} ms "
                     "(0: exactly one process ran at any instant)")
    return "\n".join(lines)


def phase_excess(runs: list[dict]) -> str:
    first: dict[str, list[float]] = defaultdict(list)
    rest: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        for pos, step in positions(run):
            for name, ms in step["phases"].items():
                if "." not in name:
                    (first if pos == 0 else rest)[name].append(ms)
    parts = [f"{name.removesuffix('_ms')} {statistics.fmean(first[name]) - statistics.fmean(rest[name]):+.2f}"
             for name in sorted(first) if rest.get(name)]
    return " ".join(parts)


def max_overlap(blocks: list[dict]) -> float:
    """The longest time two blocks ran at once (seconds), from their started/ended stamps."""
    longest, latest_end = 0.0, -math.inf
    for started, ended in sorted((b["started"], b["ended"]) for b in blocks):
        longest = max(longest, min(latest_end, ended) - started)
        latest_end = max(latest_end, ended)
    return longest


# ---------------------------------------------------------------------------- main
def parse_run_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="lockstep_validity.py run", description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", choices=["synthetic", "envruntime"], required=True)
    parser.add_argument("--out", type=Path, required=True, help="a new directory: streams, samples, meta")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--blocks", type=int, default=16, help="measured blocks a side per round")
    parser.add_argument("--block-steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=5, help="warm-up steps per process")
    parser.add_argument("--factor", type=float, default=1.10,
                        help="synthetic: the candidate's work factor; envruntime: 1.0 makes it A/A")
    parser.add_argument("--conditions", type=lambda t: t.split(","), default=list(CONDITIONS))
    parser.add_argument("--cpus", help="pin every bench to these CPUs (default: this process's affinity)")
    parser.add_argument("--timeout-s", type=float, default=600.0)
    parser.add_argument("--step-ms", type=float, default=20.0, help="synthetic base step (default 20 ms)")
    parser.add_argument("--synthetic-threads", type=int, default=1)
    parser.add_argument("--synthetic-bytes", type=int, default=4096)
    parser.add_argument("--env-slowdown", type=float, default=0.10)
    parser.add_argument("--env-case", default="sac/go2_joystick_flat/mujoco")
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument("--actions", default="actor")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: proves the script works")
    args = parser.parse_args(argv)
    if unknown := set(args.conditions) - set(CONDITIONS):
        parser.error(f"--conditions: unknown {', '.join(sorted(unknown))}; valid: {', '.join(CONDITIONS)}")
    if args.smoke:
        args.rounds, args.blocks, args.block_steps, args.warmup = 2, 3, 2, 1
        args.step_ms, args.num_envs = 2.0, 32
    return args


def run(argv: list[str]) -> int:
    args = parse_run_args(argv)
    args.out.mkdir(parents=True)
    make_sides = synthetic_sides if args.workload == "synthetic" else envruntime_sides
    trees = make_sides(args.out, args)
    meta = {**{k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
            "load_before": "/".join(f"{v:.2f}" for v in os.getloadavg())}
    (args.out / "meta.json").write_text(json.dumps(meta))
    experiment = Experiment(args, trees)
    started = time.perf_counter()
    for index in range(args.rounds):
        experiment.run_round(index, args.out)
    meta["load_after"] = "/".join(f"{v:.2f}" for v in os.getloadavg())
    meta["wall_s"] = time.perf_counter() - started
    (args.out / "meta.json").write_text(json.dumps(meta))
    print(analyse(args.out))
    return 0


def main() -> int:
    command, rest = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if command == "run":
        return run(rest)
    if command == "analyse" and len(rest) == 1:
        print(analyse(Path(rest[0])))
        return 0
    print(__doc__.split("Usage:")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
