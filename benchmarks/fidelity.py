"""Fidelity of what shasweep measures: every figure through ``shasweep run`` (protocol time), against
the truth or an independent measurement of the same thing, in one run on this machine.

1. ``sleep 0.05`` vs ``sleep 0.1``: the ratio of the sides' median ``wall_ms`` (target: within 2 % of
   0.5; a launcher inside the measured window pulls it toward 1), beside the same commands started
   by this script alone (``posix_spawn`` + ``wait4``, interleaved with the sweeps' rounds): the
   command's own ratio, which includes ``sleep``'s exec and start (about 1.5 ms here). shasweep's
   ratio must be within 1 % of it.
2. A CPU-bound Python loop of N vs 2N iterations: the ratio of median ``wall_ms`` and ``user_ms``
   (target: within 3 % of 2.0), and each run's figures against the loop's own timing, which the
   bench prints (``perf_counter`` and ``process_time`` around the loop): shasweep's 2N/N ratios must
   be within 1 % of the bench's own, and a run's ``wall_ms`` exceeds the loop's own wall by the
   interpreter's start and exit only. On a shared VM the CPU time of one loop moves by 10-25 % from run
   to run (the host's other tenants), so the literal 2.0 needs an idle host; the agreement with the
   bench's own figures does not.
3. Peak RSS of a ~13 MiB and a ~500 MiB bench: shasweep's ``bench_max_rss_mib`` (and where it came
   from, ``rss_source``) against ``/usr/bin/time -v``'s maximum resident set size of the same command
   (target: within 5 %).
4. The launch itself (``worker.proc.launch`` of ``true``): what the launch helper costs before the
   bench starts (outside every measured window) and the wall the helper measures for ``true`` (spawn
   to reap: all a launch adds inside a measured window).

Each sweep has ``repeats`` interleaved rounds (default 30; the medians are over them: on a shared VM
one loop's CPU time moves by 10-25 % from process to process, and 8 rounds left the CPU ratio 4-9 %
from 2.0). Run it on an idle machine for figures (about 3 minutes); ``--smoke`` runs a short version
that only proves the script works.

Usage: python benchmarks/fidelity.py [--repeats 30] [--cpu-s 1.0] [--smoke]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
CPU_LOOP = """import sys, time
n = int(sys.argv[1])
wall, cpu = time.perf_counter(), time.process_time()
x = 0
for i in range(n): x += i * i
wall, cpu = (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000
print(f"own wall_ms {wall:.3f} cpu_ms {cpu:.3f}")
"""
OWN = re.compile(r"own wall_ms ([0-9.]+) cpu_ms ([0-9.]+)")
ALLOCATE = "import sys\nb = bytearray(int(sys.argv[1]) * 2**20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
PYTHON_ALONE_MIB = 8  # roughly what `python -I -S` itself holds; the 13 MiB bench allocates the rest


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.invalid",
                    *args], check=True, capture_output=True)


def bench_repo(root: Path) -> Path:
    """A git repository holding the fidelity benches (the commands need nothing of it but a SHA)."""
    repo = root / "fidelity"
    repo.mkdir()
    (repo / "cpu_loop.py").write_text(CPU_LOOP)
    (repo / "allocate.py").write_text(ALLOCATE)
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "fidelity benches")
    return repo


def run_sweep(repo: Path, name: str, sweep: dict) -> pd.DataFrame:
    """Run ``sweep`` with ``shasweep run`` (embedded cluster); its runs, every one ok."""
    path = repo / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "protocol": "time", "order": "interleaved",
                                    "results": f"results-{name}", "timeout_s": 600, **sweep}))
    done = subprocess.run([sys.executable, "-m", "orchestrator.cli", "run", str(path), "--no-progress"],
                          cwd=repo, capture_output=True, text=True)
    if done.returncode not in (0, 4):
        sys.exit(f"shasweep run {name} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    runs = pd.read_parquet(repo / f"results-{name}" / "runs")
    bad = runs[runs["status"] != "ok"]
    if len(bad):
        sys.exit(f"{name}: runs not ok: {bad[['run_key', 'status', 'error']].to_string()}")
    return runs


def two_sides(command: list[str], param: str, small: object, large: object, repeats: int) -> dict:
    """A sweep of ``command`` whose side ``x2`` sets ``params.<param>`` to ``large``, ``x1`` to ``small``."""
    return {"sides": {"x1": {"ref": "HEAD"}, "x2": {"ref": "HEAD", "overrides": [f"params.{param}={large}"]}},
            "baseline": "x1", "cases": ["fidelity"], "command": command,
            "params": {param: small, "warmup": 0, "measure": 1}, "repeats": repeats}


def side_ratio(runs: pd.DataFrame, column: str) -> float:
    medians = runs.groupby("side")[column].median()
    return float(medians["x2"] / medians["x1"])


def verdict(value: float, target: float, tolerance: float, smoke: bool) -> str:
    if smoke:
        return "(smoke: not judged)"
    return "PASS" if abs(value / target - 1) <= tolerance else "FAIL"


def bare_wall_ms(argv: list[str], times: int) -> float:
    """Median wall of ``argv`` started by this process alone (``posix_spawn`` to ``wait4``), in ms."""
    path = shutil.which(argv[0])
    walls = []
    for _ in range(times):
        began = time.perf_counter_ns()
        pid = os.posix_spawn(path, argv, os.environ)
        os.wait4(pid, 0)
        walls.append((time.perf_counter_ns() - began) / 1e6)
    return statistics.median(walls)


def own_timings(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with the loop's own ``own_wall_ms`` and ``own_cpu_ms``, from each run's stdout.log."""
    found = [OWN.search((Path(d) / "stdout.log").read_text()) for d in runs["log_dir"]]
    return runs.assign(own_wall_ms=[float(m.group(1)) for m in found],
                       own_cpu_ms=[float(m.group(2)) for m in found])


def gnu_time_rss_mib(argv: list[str], cwd: Path) -> float:
    report = subprocess.run(["/usr/bin/time", "-v", *argv], cwd=cwd, capture_output=True, text=True,
                            check=True).stderr
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", report).group(1)) / 1024


def launch_costs(root: Path, times: int) -> tuple[float, float]:
    """Median ms of (launch call until the bench runs, the measured wall of ``true``)."""
    from orchestrator.worker.proc import launch

    starts, walls = [], []
    for _ in range(times):
        began = time.perf_counter()
        proc = launch(["true"], cwd=root, env=dict(os.environ), stdout_path=root / "out",
                      stderr_path=root / "err")
        starts.append((time.perf_counter() - began) * 1000)
        proc.wait()
        walls.append(proc.usage.wall_s * 1000)
    return statistics.median(starts), statistics.median(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=30, help="interleaved rounds per sweep (default 30)")
    parser.add_argument("--cpu-s", type=float, default=1.0,
                        help="about how many seconds the smaller CPU-bound run takes (default 1)")
    parser.add_argument("--smoke", action="store_true", help="a short run that only proves the script works")
    args = parser.parse_args()
    repeats, cpu_s = (2, 0.05) if args.smoke else (args.repeats, args.cpu_s)
    with tempfile.TemporaryDirectory(prefix="shasweep-fidelity-") as tmp:
        os.environ.setdefault("SHASWEEP_HOME", str(Path(tmp) / "home"))
        repo = bench_repo(Path(tmp))
        print(f"fidelity through `shasweep run`, protocol time, {repeats} interleaved rounds per sweep; "
              f"load average {os.getloadavg()[0]:.2f} at start")

        sleeps = run_sweep(repo, "sleep", two_sides(["sleep", "{secs}"], "secs", 0.05, 0.1, repeats))
        ratio = 1 / side_ratio(sleeps, "wall_ms")
        bare = bare_wall_ms(["sleep", "0.05"], 4 * repeats) / bare_wall_ms(["sleep", "0.1"], 4 * repeats)
        print(f"1. sleep 0.05 / sleep 0.1 wall: {ratio:.4f} (target 0.5 +- 2 %) "
              f"{verdict(ratio, 0.5, 0.02, args.smoke)}; the commands alone (posix_spawn to wait4): "
              f"{bare:.4f}, shasweep / alone {ratio / bare:.4f} (target 1.0 +- 1 %) "
              f"{verdict(ratio / bare, 1.0, 0.01, args.smoke)}")

        loops = round(cpu_s * 5e6)  # about 5e6 loop iterations per second of CPython on this VM's cores
        loop = ["{python}", "-I", "-S", "cpu_loop.py", "{n}"]
        cpu = own_timings(run_sweep(repo, "cpu", two_sides(loop, "n", loops, 2 * loops, repeats)))
        for column, own in (("wall_ms", "own_wall_ms"), ("user_ms", "own_cpu_ms")):
            ratio, own_ratio = side_ratio(cpu, column), side_ratio(cpu, own)
            smaller_ms = cpu[cpu["side"] == "x1"][column].median()
            print(f"2. CPU-bound 2N / N {column}: {ratio:.4f} (target 2.0 +- 3 %, N: {smaller_ms:.0f} ms) "
                  f"{verdict(ratio, 2.0, 0.03, args.smoke)}; the loop's own timing: {own_ratio:.4f}, "
                  f"shasweep / own {ratio / own_ratio:.4f} (target 1.0 +- 1 %) "
                  f"{verdict(ratio / own_ratio, 1.0, 0.01, args.smoke)}")
        outside = (cpu["wall_ms"] - cpu["own_wall_ms"]).median()
        print(f"   a run's wall_ms minus the loop's own wall (interpreter start and exit): {outside:.1f} ms")

        for mib in (13, 500):
            allocate = mib - PYTHON_ALONE_MIB
            rss = run_sweep(repo, f"rss{mib}", {
                "sides": {"only": {"ref": "HEAD"}}, "baseline": "only", "cases": [f"rss{mib}"],
                "command": ["{python}", "-I", "-S", "allocate.py", "{mib}"],
                "params": {"mib": allocate, "warmup": 0, "measure": 1}, "repeats": repeats})
            ours = float(rss["bench_max_rss_mib"].median())
            reference = statistics.median(
                gnu_time_rss_mib([sys.executable, "-I", "-S", "allocate.py", str(allocate)], repo)
                for _ in range(repeats))
            sources = ", ".join(sorted(set(rss["rss_source"])))
            print(f"3. peak RSS of the ~{mib} MiB bench: shasweep {ours:.1f} MiB ({sources}), "
                  f"/usr/bin/time -v {reference:.1f} MiB, ratio {ours / reference:.4f} (target 1.0 +- 5 %) "
                  f"{verdict(ours / reference, 1.0, 0.05, args.smoke)}")

        start_ms, true_ms = launch_costs(Path(tmp), 5 if args.smoke else 50)
        print(f"4. launch: {start_ms:.1f} ms before the bench starts (outside the measured window); "
              f"`true` measured at {true_ms:.2f} ms wall (spawn to reap)")


if __name__ == "__main__":
    main()
