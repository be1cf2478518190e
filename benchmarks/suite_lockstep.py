"""Suites in lockstep against their targets (issue: decisive on the suites users already have): a
16-benchmark suite (``benchmarks/wide_suite.py``), one benchmark slowed 5 % by
``benchmarks/known_truth.py`` (calibrated to 5 % of its time per call) and an A/A commit, swept by
real ``shasweep run``s in lockstep and, side by side in the same run, in today's order of separate
processes (``interleaved``), as a pytest-benchmark suite and as a pyperf script.

Each sweep has three sides, ``base`` (the baseline), ``slow`` and ``aa``, one gate ``{metric:
time_ms, within: 0.03}`` on every case, ``repeats`` 3 and up to ``--max-repeats`` (12) adaptive
rounds. Per protocol and order, over ``--sweeps`` sweeps (the orders alternate sweep by sweep, so the
host's drift hits both alike), it prints how often the slowed case FAILed on ``slow`` (target >= 9
of 10), how often it PASSed on ``aa`` (target >= 8 of 10), how many other cases FAILed on either side
(target 0: a wrong claim), and the median and largest wall time of a sweep (target: median <= 8
minutes on the 2-core VM). ``--neighbour`` runs ``benchmarks/neighbour.py`` throughout (the same
rates are the target with it). Every sweep's report stays under ``--out``.

    python benchmarks/suite_lockstep.py --out DIR [--sweeps 10] [--protocols pytest-benchmark,pyperf]
        [--orders lockstep,interleaved] [--neighbour]

An order ``lockstep@BxS`` is lockstep with ``B`` blocks of ``S`` steps per side and round (plain
``lockstep``: the defaults, a suite's 16 of 2), so that block shapes compare in one run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from known_truth import main as known_truth  # noqa: E402
from neighbour import running  # noqa: E402
from wide_suite import make_wide_repo  # noqa: E402

SLOWED = {"pytest-benchmark": "bench/test_widelib.py::test_widelib[json_round_trip]",
          "pyperf": "json_round_trip"}
COMMANDS = {  # today's separate processes: each tool's own timing, as a user runs it
    "pytest-benchmark": ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider", "bench/test_widelib.py",
                         "--benchmark-json={result}", "--benchmark-max-time=0.3"],
    "pyperf": ["{python}", "bench/perf_widelib.py", "--processes", "3", "--values", "3", "--quiet",
               "-o", "{result}"],
}


def sweep_spec(protocol: str, arm: str, truth: dict, max_repeats: int) -> dict:
    """The sweep of one arm: an order, ``lockstep`` optionally with its block shape (``lockstep@8x5``:
    8 blocks of 5 steps; without one, the defaults)."""
    order, _, shape = arm.partition("@")
    spec = {"name": f"wide-{protocol}-{arm.replace('@', '-')}",
            "sides": {"base": {"ref": truth["base"]}, "slow": {"ref": truth["slow"]["sha"]},
                      "aa": {"ref": truth["aa"]["sha"]}},
            "baseline": "base", "cases": "discover", "protocol": protocol, "command": COMMANDS[protocol],
            "repeats": 3, "max_repeats": max_repeats, "order": order, "aa": True, "timeout_s": 900,
            "gates": [{"metric": "time_ms", "within": 0.03}]}
    if order == "lockstep":
        spec["lockstep"] = {"step_ms": 10}
        if shape:
            blocks, block_steps = (int(part) for part in shape.split("x"))
            spec["lockstep"].update(blocks=blocks, block_steps=block_steps)
    return spec


def run_sweep(spec: dict, repo: Path, out: Path, home: Path) -> tuple[dict, float, int]:
    """(case, side) -> verdict, the sweep's wall seconds, its exit code."""
    path = out / "sweep.yaml"
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    env = {**os.environ, "SHASWEEP_HOME": str(home), "PYTHONPATH": str(ROOT)}
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "orchestrator.cli", "run", str(path), f"repo={repo}",
                           f"results={out / 'results'}", "--no-progress"], env=env, capture_output=True,
                          text=True)
    wall = time.monotonic() - began
    (out / "output.txt").write_text(done.stdout + done.stderr)
    found = list((out / "results" / "reports").glob("*.verdicts.json"))
    verdicts = {}
    if found:
        verdicts = {(row["case"], row["side"]): row["verdict"]
                    for row in json.loads(found[0].read_text())["verdicts"]}
    return verdicts, wall, done.returncode


def summarize(protocol: str, order: str, results: list[tuple[dict, float, int]]) -> str:
    slowed = SLOWED[protocol]
    slow = Counter(v.get((slowed, "slow"), "none") for v, _, _ in results)
    aa = Counter(v.get((slowed, "aa"), "none") for v, _, _ in results)
    wrong = sum(1 for v, _, _ in results for (case, side), verdict in v.items()
                if verdict == "FAIL" and not (case == slowed and side == "slow"))
    walls = [wall for _, wall, _ in results]
    return (f"{protocol:16} {order:11} slow FAIL {slow['FAIL']:2}/{len(results)} (INCONCLUSIVE "
            f"{slow['INCONCLUSIVE']}, PASS {slow['PASS']})  aa PASS {aa['PASS']:2}/{len(results)} "
            f"(INCONCLUSIVE {aa['INCONCLUSIVE']}, FAIL {aa['FAIL']})  other FAILs {wrong}  wall median "
            f"{statistics.median(walls) / 60:.1f} min, max {max(walls) / 60:.1f} min")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--sweeps", type=int, default=10)
    parser.add_argument("--protocols", default="pytest-benchmark,pyperf")
    parser.add_argument("--orders", default="lockstep,interleaved")
    parser.add_argument("--max-repeats", type=int, default=12)
    parser.add_argument("--percent", type=float, default=5.0)
    parser.add_argument("--neighbour", action="store_true", help="run benchmarks/neighbour.py throughout")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    repo = args.out / "wide-repo"
    if not repo.exists():
        make_wide_repo(repo)
    protocols, orders = args.protocols.split(","), args.orders.split(",")
    results: dict[tuple[str, str], list] = {(p, o): [] for p in protocols for o in orders}
    neighbour = running(1, args.out / "neighbour.jsonl") if args.neighbour else contextlib.nullcontext()
    with neighbour:
        for protocol in protocols:
            truth = _truth(protocol, repo, args)
            for number in range(args.sweeps):
                for order in orders if number % 2 == 0 else orders[::-1]:
                    spec = sweep_spec(protocol, order, truth, args.max_repeats)
                    found = run_sweep(spec, repo, args.out / protocol / order / f"sweep-{number}",
                                      args.out / "home")
                    results[protocol, order].append(found)
                    print(f"{protocol} {order} sweep {number}: exit {found[2]}, {found[1]:.0f} s, slowed: "
                          f"slow {found[0].get((SLOWED[protocol], 'slow'))}, "
                          f"aa {found[0].get((SLOWED[protocol], 'aa'))}", flush=True)
    print(f"\n{'neighbour running' if args.neighbour else 'idle host'}, {args.sweeps} sweeps each:")
    for (protocol, order), found in results.items():
        print(summarize(protocol, order, found))


def _truth(protocol: str, repo: Path, args: argparse.Namespace) -> dict:
    """The known-truth commits for ``protocol``'s suite (each protocol's own case names)."""
    sweep = args.out / f"truth-{protocol}.yaml"
    sweep.write_text(yaml.safe_dump(sweep_spec(protocol, "lockstep", {"base": "HEAD", "slow": {"sha": "HEAD"},
                                                                      "aa": {"sha": "HEAD"}}, 3)))
    return known_truth([str(sweep), str(repo), "--case", SLOWED[protocol], "--percent", str(args.percent),
                        "--prefix", protocol])


if __name__ == "__main__":
    main()
