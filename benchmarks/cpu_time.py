"""CPU time against throughput on a busy host (issue 39's CPU-time target), each figure read from one
sweep: the same runs give both intervals.

    python benchmarks/cpu_time.py [--rounds 10] [--modes interleaved,lockstep] [--aa]
        [--step-ms 20] [--measure 20] [--blocks 8] [--block-steps 5] [--block-warmup 1]
        [--seed 0] [--no-neighbour] [--keep DIR] [--smoke]

The workload is ``benchmarks/ab_validity.py``'s synthetic bench (``orchestrator.benchkit``, so it
runs in lockstep too): a temporary git repository whose slow commit's ``work.json`` asks for 1.10x
the SHA-256 digests of 4 KiB per step (``--aa``: also the baseline against itself). Every step's
``cpu_ms`` is the bench process's CPU time, reported by the bench helper. For each mode (``interleaved``:
``--rounds`` rounds of separate processes; ``lockstep``: ``--rounds`` rounds, ``--blocks`` blocks of
``--block-steps`` steps a side per round, each after ``--block-warmup`` warm-up steps) one ``shasweep
run`` of fixed rounds, with ``benchmarks/neighbour.py --seed SEED`` (bursts of CPU and memory load of
1-10 s) running for the whole script unless ``--no-neighbour``.

Printed per mode and condition, side by side: each metric's ratio (slow / baseline), its 95 % interval
over all rounds (as the report states it), the interval's width on the log scale (ln high/low: the
same for a ratio and its inverse, so throughput's and CPU time's compare), whether it holds the truth
(the exact ratio of the digests per step; throughput's truth is its inverse), and the per-round s.d.
of the log ratio (the report's ``round s.d.``). Target (``+10%``, each mode): the ``cpu_ms`` interval
holds the truth and is at most 1/3 as wide as throughput's.

Timings are meaningful only when nothing else runs on the host besides the neighbour.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from ab_validity import WORK_FILE, calibrate, load_text, make_synthetic_repo, work_root
from neighbour import running

BENCH = Path(__file__).resolve().parent / "ab_validity.py"  # its ``bench`` subcommand is the bench
CASE = "synthetic/sha256/none"
METRICS: tuple[str, ...] = ("throughput", "cpu_ms", "thread_cpu_ms", "step_ms")
MODES: tuple[str, ...] = ("interleaved", "lockstep")
TARGET_WIDTH = 1 / 3  # cpu_ms's interval at most this fraction of throughput's width


@dataclass(frozen=True)
class Figure:
    """One metric of the slow side against the baseline in one sweep."""

    mode: str
    condition: str
    metric: str
    truth: float
    ratio: float
    low: float
    high: float
    round_sd: float | None

    @property
    def log_width(self) -> float:
        return math.log(self.high / self.low) if self.low > 0 and self.high > 0 else math.nan

    @property
    def holds(self) -> bool:
        return self.low <= self.truth <= self.high


def work_ratio(repo: Path, base: str, cand: str) -> float:
    """Digests per step of ``cand`` over ``base``: the truth of the CPU time's ratio."""
    from fakebench.fakerepo import git

    def iterations(sha: str) -> int:
        return int(json.loads(git(repo, "show", f"{sha}:{WORK_FILE}"))["iterations"])

    return iterations(cand) / iterations(base)


def sweep_file(root: Path, repo: Path, mode: str, base: str, cand: str, args: argparse.Namespace,
               name: str) -> Path:
    """A fixed sweep of ``--rounds`` rounds in ``mode``, reporting every metric of ``METRICS``."""
    lockstep = mode == "lockstep"
    sweep = {
        "name": name, "repo": str(repo), "sides": {"base": {"ref": base}, "cand": {"ref": cand}},
        "baseline": "base", "cases": [CASE], "known": {"algos": [], "tasks": [], "sims": [], "variants": []},
        "command": ["{python}", str(BENCH), "bench", "--stream", "{stream}", "--warmup", "{warmup}",
                    "--measure", "{measure}", *(["--control", "{control}"] if lockstep else [])],
        "params": {"num_envs": 1, "warmup": 2, "measure": args.measure, "threads": 1},
        "repeats": args.rounds, "order": mode, "metrics": list(METRICS), "aa": base == cand,
        "timeout_s": 300, "results": str(root / "results"),
    }
    if lockstep:
        sweep["lockstep"] = {"blocks": args.blocks, "block_steps": args.block_steps,
                             "block_warmup": args.block_warmup}
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(sweep))
    return path


def measure(path: Path, scheduler: str, mode: str, condition: str, truth: float) -> list[Figure]:
    """One ``shasweep run`` of ``path``: each metric's figure as its report states it."""
    from orchestrator.analysis.report_model import make_report
    from orchestrator.cli.main import main as shasweep
    from orchestrator.errors import EXIT_OK
    from orchestrator.store.records import latest_sweep_id

    with contextlib.redirect_stdout(io.StringIO()):
        code = shasweep(["run", str(path), "--scheduler", scheduler, "--no-progress"])
    if code != EXIT_OK:
        raise SystemExit(f"{mode} {condition}: shasweep run exited {code} (a run not ok?)")
    results = path.parent / "results"
    report = make_report(results, latest_sweep_id(results))
    figures = []
    for metric in METRICS:
        row = report.row(CASE, "cand", metric)
        c = row.comparison
        expected = 1 / truth if metric == "throughput" else truth
        figures.append(Figure(mode, condition, metric, expected, row.ratio, c.low, c.high, row.round_sd))
    return figures


def table(figures: list[Figure]) -> str:
    lines = [f"{'mode':<12} {'condition':<9} {'metric':<14} {'truth':>6} {'ratio':>7} {'95% interval':>18} "
             f"{'log width':>9} {'holds':>5} {'round s.d.':>10}"]
    for f in figures:
        sd = "-" if f.round_sd is None else f"{100 * f.round_sd:.2f}%"
        lines.append(f"{f.mode:<12} {f.condition:<9} {f.metric:<14} {f.truth:>6.3f} {f.ratio:>7.4f} "
                     f"{f'[{f.low:.4f}, {f.high:.4f}]':>18} {f.log_width:>9.4f} "
                     f"{'yes' if f.holds else 'NO':>5} {sd:>10}")
    return "\n".join(lines)


def verdicts(figures: list[Figure]) -> list[str]:
    """The target per mode: cpu_ms holds the truth, its interval at most 1/3 as wide as throughput's."""
    found = []
    for mode in dict.fromkeys(f.mode for f in figures):
        mine = {f.metric: f for f in figures if f.mode == mode and f.condition == "+10%"}
        cpu, throughput = mine["cpu_ms"], mine["throughput"]
        share = cpu.log_width / throughput.log_width
        met = cpu.holds and share <= TARGET_WIDTH
        found.append(f"{mode}: cpu_ms {'holds' if cpu.holds else 'does NOT hold'} {cpu.truth:.3f}, its "
                     f"interval {share:.3f} as wide as throughput's (target <= {TARGET_WIDTH:.3f}): "
                     f"{'MET' if met else 'NOT MET'}")
    return found


def modes(text: str) -> list[str]:
    """``--modes``: names of ``MODES``, comma-separated."""
    found = [name for name in text.split(",") if name]
    if not found or set(found) - set(MODES):
        raise argparse.ArgumentTypeError(f"{text!r}: give some of {', '.join(MODES)}, comma-separated")
    return found


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="rounds per sweep (default 10)")
    parser.add_argument("--modes", type=modes, default=list(MODES),
                        help="comma-separated, of: interleaved, lockstep (default both)")
    parser.add_argument("--aa", action="store_true", help="also the baseline against itself")
    parser.add_argument("--step-ms", type=float, default=20.0, help="work per baseline step (default 20 ms)")
    parser.add_argument("--measure", type=int, default=20, help="interleaved: measured steps (default 20)")
    parser.add_argument("--blocks", type=int, default=8, help="lockstep: measured blocks a side per round")
    parser.add_argument("--block-steps", type=int, default=5, help="lockstep: steps per block")
    parser.add_argument("--block-warmup", type=int, default=1, help="lockstep: warm-up steps per block")
    parser.add_argument("--seed", type=int, default=0, help="the neighbour's seed (default 0)")
    parser.add_argument("--no-neighbour", action="store_true", help="without benchmarks/neighbour.py")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="work (repository, results) in DIR, which must not exist, and keep it")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes: proves the script works, no figures")
    args = parser.parse_args()
    if args.smoke:
        args.rounds, args.step_ms, args.measure, args.blocks, args.block_steps = 3, 2.0, 4, 2, 2
    return args


@dataclass(frozen=True)
class Workload:
    """The synthetic repository: its baseline's SHA and, per condition, the slow side's SHA and the
    exact ratio of its work to the baseline's."""

    repo: Path
    base: str
    conditions: dict[str, tuple[str, float]]


def workload(root: Path, args: argparse.Namespace) -> Workload:
    """The repository of ``ab_validity``'s synthetic bench, its work per step calibrated here."""
    iterations = calibrate(args.step_ms)
    shas = make_synthetic_repo(root, iterations)
    repo = root / "synthetic"
    wanted = ["+10%", *(["A/A"] if args.aa else [])]
    conditions = {name: (shas[name], work_ratio(repo, shas["A/A"], shas[name])) for name in wanted}
    print(f"{iterations} SHA-256 digests of 4 KiB per baseline step (~{args.step_ms:g} ms); slow commit "
          f"x{conditions['+10%'][1]:.4f} the work; {args.rounds} rounds per sweep; interleaved: "
          f"{args.measure} measured steps a run; lockstep: {args.blocks} blocks of {args.block_steps} "
          f"steps a side per round, {args.block_warmup} warm-up step(s) before each", flush=True)
    return Workload(repo, shas["A/A"], conditions)


def measure_all(root: Path, work: Workload, args: argparse.Namespace) -> list[Figure]:
    """Every condition in every mode, one sweep each, on one embedded cluster."""
    from orchestrator.dispatch.cluster import connect

    figures: list[Figure] = []
    with connect(None) as conn:
        scheduler = conn.client.scheduler.address
        for condition, (sha, truth) in work.conditions.items():
            for mode in args.modes:
                name = f"cpu-time-{mode}-{'aa' if condition == 'A/A' else 'slow'}"
                path = sweep_file(root, work.repo, mode, work.base, sha, args, name)
                figures += measure(path, scheduler, mode, condition, truth)
                print(f"{mode} {condition}: done", flush=True)
    return figures


def main() -> int:
    args = parse_args()
    with contextlib.ExitStack() as stack:
        root = work_root(stack, args.keep, "cpu_time-")
        work = workload(root, args)
        if not args.no_neighbour:
            print(f"neighbour: benchmarks/neighbour.py --seed {args.seed}, bursts logged to neighbour.jsonl",
                  flush=True)
            stack.enter_context(running(args.seed, root / "neighbour.jsonl"))
        started, load_before = time.perf_counter(), os.getloadavg()
        figures = measure_all(root, work, args)
        print(f"\n{len(work.conditions) * len(args.modes)} sweeps in {time.perf_counter() - started:.0f} s; "
              f"load average (1, 5, 15 min) before {load_text(load_before)}, after "
              f"{load_text(os.getloadavg())}" + (f"; kept under {root}" if args.keep else ""))
        print(table(figures))
        for line in verdicts(figures):
            print(line)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "orchestrator"))  # fakebench
    sys.exit(main())
