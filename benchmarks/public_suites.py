"""Known truths in public suites, fetched as a user would: a package's source distribution from PyPI
(``pip download --no-binary :all:``), unpacked into a git repository of one commit, with
``benchmarks/known_truth.py``'s two commits made in it, then swept by real ``shasweep run``s.

* attrs: its pytest-codspeed suite (``bench/test_benchmarks.py``, every test marked
  ``@pytest.mark.benchmark``, no fixture), run as protocol pytest-benchmark through shasweep's
  plugin, the package from the checkout's ``src``;
* pyperformance: the pyperf script of its ``json_dumps`` benchmark
  (``bm_json_dumps/run_benchmark.py``, ``bench_func`` of a function of the script).

``instructions`` (the default; load-independent): the truth is 1 % of the benchmark's instructions
per call; one lockstep round with ``instrument: valgrind`` per sweep, sides ``base``, ``slow`` and
``aa``; it prints each case's count ratio against ``base``. ``time``: the truth is 5 % of its time
per call, and each sweep runs both orders (lockstep, and today's separate processes) with a
``within: 0.03`` gate, printing the verdicts and wall time (take it on an idle host).

    python benchmarks/public_suites.py --out DIR [--mode instructions|time] [--sweeps 2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from known_truth import git  # noqa: E402
from known_truth import main as known_truth  # noqa: E402

BENCHMARKS = "pyperformance/data-files/benchmarks"
SUITES = {
    "attrs": {"package": "attrs==26.1.0", "protocol": "pytest-benchmark", "pythonpath": ["src"],
              "command": ["{python}", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "bench/test_benchmarks.py"],
              "case": "bench/test_benchmarks.py::test_create_frozen_class",
              # each test body creates 1,000 classes (2.5e9 instructions): under callgrind, three of them
              "counted": ["bench/test_benchmarks.py::test_create_frozen_class",
                          "bench/test_benchmarks.py::test_create_simple_class",
                          "bench/test_benchmarks.py::test_instantiate_no_defaults"],
              "interleaved": None},  # pytest-codspeed's suite has no file of results outside CodSpeed
    "pyperformance": {"package": "pyperformance==1.14.0", "protocol": "pyperf", "pythonpath": ["."],
                      "command": ["{python}", f"{BENCHMARKS}/bm_json_dumps/run_benchmark.py", "--processes",
                                  "4", "--values", "3", "--quiet", "-o", "{result}"],
                      "case": "json_dumps", "interleaved": True},
}


def fetch(name: str, out: Path) -> Path:
    """The package's sdist as a git repository of one commit (made once)."""
    repo = out / f"{name}-repo"
    if repo.exists():
        return repo
    downloads = out / "downloads"
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-binary", ":all:", "--no-deps",
                    "-d", str(downloads), SUITES[name]["package"]], check=True)
    archive = next(downloads.glob(f"{SUITES[name]['package'].split('==')[0]}-*.tar.gz"))
    with tarfile.open(archive) as sdist:
        sdist.extractall(out / "unpacked", filter="data")
    unpacked = next((out / "unpacked").glob(f"{archive.name.removesuffix('.tar.gz')}"))
    unpacked.rename(repo)
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"{archive.name}, as PyPI serves it")
    return repo


def spec(name: str, sides: dict, order: str, instructions: bool) -> dict:
    suite = SUITES[name]
    found = {"name": f"public-{name}-{order}", "sides": sides, "baseline": "base", "cases": "discover",
             "protocol": suite["protocol"], "command": suite["command"], "pythonpath": suite["pythonpath"],
             "order": order, "aa": True, "timeout_s": 1800, "gates": [{"metric": "time_ms", "within": 0.03}]}
    if instructions:
        found |= {"repeats": 1, "instrument": "valgrind", "lockstep": {"blocks": 2, "block_steps": 2},
                  "cases": suite.get("counted", "discover")}
    else:
        found |= {"repeats": 3, "max_repeats": 12}
    return found


def sweep(spec_: dict, repo: Path, out: Path) -> tuple[pd.DataFrame, dict, float]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.yaml").write_text(yaml.safe_dump(spec_, sort_keys=False))
    env = {**os.environ, "SHASWEEP_HOME": str(out.parent / "home"), "PYTHONPATH": str(ROOT)}
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "orchestrator.cli", "run", str(out / "sweep.yaml"),
                           f"repo={repo}", f"results={out / 'results'}", "--no-progress"], env=env,
                          capture_output=True, text=True)
    (out / "output.txt").write_text(done.stdout + done.stderr)
    verdicts = {}
    for path in (out / "results" / "reports").glob("*.verdicts.json"):
        verdicts = {(r["case"], r["side"]): r["verdict"] for r in json.loads(path.read_text())["verdicts"]}
    return pd.read_parquet(out / "results" / "runs"), verdicts, time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--mode", choices=("instructions", "time"), default="instructions")
    parser.add_argument("--sweeps", type=int, default=2)
    parser.add_argument("--suites", default=",".join(SUITES))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    instructions = args.mode == "instructions"
    for name in args.suites.split(","):
        repo = fetch(name, args.out)
        truth_sweep = args.out / f"{name}-truth.yaml"
        truth_sweep.write_text(yaml.safe_dump(spec(name, {"base": {"ref": "HEAD"}}, "lockstep", False)))
        made = args.out / f"{name}-{args.mode}-truth.json"  # made once: a calibration under callgrind is slow
        if not made.exists():
            made.write_text(json.dumps(known_truth([
                str(truth_sweep), str(repo), "--case", SUITES[name]["case"], "--percent",
                "1" if instructions else "5", "--calibrate", args.mode, "--prefix", args.mode])))
        truth = json.loads(made.read_text())
        sides = {"base": {"ref": truth["base"]}, "slow": {"ref": truth["slow"]["sha"]},
                 "aa": {"ref": truth["aa"]["sha"]}}
        apart = not instructions and SUITES[name]["interleaved"]
        orders = ["lockstep", "interleaved"] if apart else ["lockstep"]
        for number in range(args.sweeps):
            for order in orders:
                runs, verdicts, wall = sweep(spec(name, sides, order, instructions), repo,
                                             args.out / f"{name}-{args.mode}-{order}-{number}")
                _report(name, order, number, runs, verdicts, wall, instructions)


def _report(name: str, order: str, number: int, runs: pd.DataFrame, verdicts: dict, wall: float,
            instructions: bool) -> None:
    bad = runs[runs["status"] != "ok"]
    print(f"{name} {order} sweep {number}: {len(runs)} runs, {len(bad)} not ok, {wall:.0f} s", flush=True)
    for error in bad["error"].head(3):
        print(f"  not ok: {str(error)[:300]}")
    if instructions and "instructions" in runs:
        counts = runs.groupby(["case", "side"])["instructions"].first().unstack("side")
        for case, row in counts.iterrows():
            slow, aa = row["slow"] / row["base"], row["aa"] / row["base"]
            print(f"  {case}: slow/base {slow:.5f}  aa/base {aa:.6f}")
    for (case, side), verdict in sorted(verdicts.items()):
        if case == SUITES[name]["case"] or verdict == "FAIL":
            print(f"  {side} {case}: {verdict}")


if __name__ == "__main__":
    main()
