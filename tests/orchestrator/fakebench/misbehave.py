"""A bench that misbehaves in ways the fault drills need, speaking run protocol v1 otherwise.

Run from the worktree (its cwd), so ``git rev-parse HEAD`` there is the SHA under test.

* ``--mode daemon``: starts a ``setsid`` daemon (a new session, out of the bench's process group)
  that sleeps, writes its pid to ``--pid-file``, then completes a normal run.
* ``--mode deep-json``: writes a step record nested 10,000 levels deep, then sleeps.
* ``--mode env``: a normal run whose header audit also reports ``MALLOC_TRIM_THRESHOLD_``.
* ``--mode fifo-stream``: makes ``--stream`` a FIFO nobody writes to, then sleeps.
* ``--mode fifo-result`` / ``zero-result``: makes ``--result`` a FIFO nobody writes to / a symbolic
  link to ``/dev/zero``, then exits 0 (protocol json reads it after the exit); ``json-ok`` writes a
  result document ``{"fps": 100.0}``.
* ``--mode markup``: writes its header, then rich markup, Markdown and HTML to stderr and exits 1.
* ``--mode flood``: writes its header, then 150 MiB of blank lines to its stream, then sleeps.
* ``--mode surrogates``: a normal run whose header's audit, a phase's name and the summary's metric
  name hold a lone UTF-16 surrogate (JSON's ``\udc80``); ``surrogate-suite`` writes
  a pyperf result document, one of whose two benchmarks is named with one.
"""

import argparse
import json
import os
import subprocess
import sys
import time

LONE = "\udc80"  # a UTF-16 surrogate that pairs with nothing: json.dumps writes it as its escape
MARKUP = "[/x] [bold red]not bold[/] <script>alert(1)</script> *not emphasis* `not code` | not a cell"


def _module_file() -> str:
    """The benchmarked repository's module when run in a fake repo's worktree (its ``fake_bench.py``),
    else this file: the run audit checks the loaded module lies in the worktree."""
    in_tree = os.path.abspath("fake_bench.py")
    return in_tree if os.path.exists(in_tree) else os.path.abspath(__file__)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--stream", required=True)
    parser.add_argument("--mode", required=True,
                        choices=["daemon", "deep-json", "env", "fifo-stream", "fifo-result", "zero-result",
                                 "json-ok", "markup", "flood", "surrogates", "surrogate-suite"])
    parser.add_argument("--pid-file", default="")
    parser.add_argument("--result", default="")
    args = parser.parse_args()
    if args.mode == "fifo-stream":
        os.mkfifo(args.stream)
        time.sleep(600)
    if args.mode in ("fifo-result", "zero-result", "json-ok", "surrogate-suite"):
        if args.mode == "surrogate-suite":
            with open(args.result, "w") as result:
                json.dump({"version": "1.0", "metadata": {"unit": "second"}, "benchmarks": [
                    {"metadata": {"name": f"bench{LONE}mark"}, "runs": [{"values": [0.001, 0.0011]}]},
                    {"metadata": {"name": "plain"}, "runs": [{"values": [0.002, 0.0021]}]}]}, result)
        elif args.mode == "fifo-result":
            os.mkfifo(args.result)
        elif args.mode == "zero-result":
            os.symlink("/dev/zero", args.result)
        else:
            with open(args.result, "w") as result:
                json.dump({"fps": 100.0}, result)
        return 0
    sha = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    with open(args.stream, "w", buffering=1) as stream:
        def emit(record: object) -> None:
            stream.write(json.dumps(record) + "\n")

        lone = LONE if args.mode == "surrogates" else ""
        emit({"kind": "header", "protocol": 1,
              "case": {"algo": "sac", "task": "fake", "sim": "none", "variant": "manager"},
              "params": {"num_envs": 8, "warmup": 0, "measure": 2},
              "audit": {"module_file": _module_file(), "git_sha": sha, "pid": os.getpid(), "note": lone,
                        "malloc_trim_threshold": os.environ.get("MALLOC_TRIM_THRESHOLD_")}})
        if args.mode == "daemon":
            daemon = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                      start_new_session=True, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            with open(args.pid_file, "w") as f:
                f.write(str(daemon.pid))
        if args.mode == "markup":
            print(MARKUP, file=sys.stderr)
            return 1
        if args.mode == "flood":
            for _ in range(150):
                stream.write("\n" * 2**20)
            stream.flush()
            time.sleep(600)
        if args.mode == "deep-json":
            stream.write('{"kind": "step", "step": 0, "phases": ' + "[" * 10_000 + "]" * 10_000 + "}\n")
            time.sleep(600)
        for step in range(2):
            emit({"kind": "step", "step": step, "warmup": False, "phases": {f"physics{lone}_ms": 1.0}})
        emit({"kind": "summary", "throughput": 8000.0, "measure_wall_s": 0.002,
              "phase_means_ms": {f"physics{lone}_ms": 1.0}, "metrics": {f"size{lone}": 3.0}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
