"""How fast the command line answers: each command's wall time as a ratio to ``python -c pass``.

Every sample of a command is interleaved with a sample of the baseline (the same interpreter, the
same environment), so machine load hits both alike; the ratio is median(command) / median(pass).
Targets (issue: a newcomer's first hour): ``--version`` <= 3x, ``--help`` <= 5x, ``list`` on an
empty results root <= 10x, ``plan`` of a 1-case sweep (refs resolved with git, no cluster) <= 20x.

The command is the ``shasweep`` console script next to the interpreter when there is one (what a
user runs), else ``python -m orchestrator.cli``.

Usage: python benchmarks/cli_startup.py [--samples 15] [--smoke]
Exit status 1 when a target is missed (not in ``--smoke``, which takes 3 samples to prove it runs).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGETS: dict[str, float] = {"--version": 3.0, "--help": 5.0, "list": 10.0, "plan": 20.0}
SWEEP = """\
name: startup
cases: [tokenize]
sides: {old: {ref: HEAD}, new: {ref: HEAD}}
baseline: old
repeats: 2
protocol: time
params: {warmup: 0, measure: 3}
command: ["{python}", "-c", "pass"]
results: results
"""


def shasweep_argv() -> list[str]:
    """The console script beside this interpreter, else ``python -m orchestrator.cli``."""
    script = shutil.which("shasweep", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "orchestrator.cli"]


def make_repo(where: Path) -> Path:
    """A git repository with one commit and the 1-case sweep file."""
    repo = where / "repo"
    repo.mkdir()
    (repo / "sweep.yaml").write_text(SWEEP)
    git = ["git", "-C", str(repo), "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    for args in (["init", "-q"], ["add", "sweep.yaml"], ["commit", "-q", "-m", "bench"]):
        subprocess.run([*git, *args], check=True)
    return repo


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Wall seconds of one run of ``argv`` (output discarded; it must exit 0)."""
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def measure(samples: int) -> dict[str, tuple[float, float]]:
    """Per command: (median seconds, median seconds of the interleaved ``python -c pass``)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(Path(tmp))
        empty = Path(tmp) / "empty-results"
        empty.mkdir()
        cli = shasweep_argv()
        commands = {"--version": [*cli, "--version"], "--help": [*cli, "--help"],
                    "list": [*cli, "list", "--results", str(empty)], "plan": [*cli, "plan", "sweep.yaml"]}
        baseline = [sys.executable, "-c", "pass"]
        for argv in (*commands.values(), baseline):  # warm the page cache and .pyc files first
            timed(argv, repo, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        bases: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(samples):
            for name, argv in commands.items():
                bases[name].append(timed(baseline, repo, env))
                times[name].append(timed(argv, repo, env))
    return {name: (statistics.median(times[name]), statistics.median(bases[name])) for name in commands}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=15, help="samples per command (default 15)")
    parser.add_argument("--smoke", action="store_true", help="3 samples, never fail: proves the script runs")
    args = parser.parse_args()
    samples = 3 if args.smoke else args.samples
    print(f"command: {' '.join(shasweep_argv())}; {samples} interleaved samples each; "
          f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    missed = []
    print(f"{'command':<10} {'median':>9} {'python -c pass':>15} {'ratio':>7} {'target':>7}")
    for name, (median, base) in measure(samples).items():
        ratio = median / base
        ok = ratio <= TARGETS[name]
        missed += [] if ok else [name]
        print(f"{name:<10} {1000 * median:>7.1f}ms {1000 * base:>13.1f}ms {ratio:>6.1f}x "
              f"{TARGETS[name]:>6.0f}x  {'met' if ok else 'MISSED'}")
    return 1 if missed and not args.smoke else 0


if __name__ == "__main__":
    sys.exit(main())
