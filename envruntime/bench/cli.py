"""Collector benchmark speaking run protocol v1 (docs/design.md "Run protocol").

    python -m envruntime.bench --algo sac --task go2_joystick_flat --sim mujoco --variant manager \\
        --num-envs 8192 --warmup 10 --measure 100 --replay-capacity 64 --seed 0 --threads 2 \\
        [--actions actor|pregenerated] [--device cpu|cuda] [--control FIFO] --stream PATH

``--actions pregenerated`` cycles a bank of random actions drawn before the measured window (the
seeds' method: no actor forward while collecting, ``policy_ms`` 0.0); ``--device cuda`` runs the
actor on the GPU (``policy_ms`` then includes both transfers and a synchronise). Both default to
the actor on the CPU and are recorded in the header's params and in ``audit.collector``.

Records go to ``--stream`` (a file or FIFO), never stdout: a ``header`` (case, params, audit), one
``step`` per vector step (``warmup`` flagged, every phase, ``resets``; the step's CPU time besides its
wall phases: ``cpu_ms``, the process's, every thread's, the backend's and the kernels' pools included,
and ``thread_cpu_ms``, the main thread's), then a ``summary``
(throughput = num_envs * measured steps / measured wall seconds, phase means over measured
steps, peak RSS). With ``--control FIFO`` (a lockstep sweep, docs/design.md "Run protocol") the
header says ``"control": 1``, the env is built and reset, and then the steps come from the FIFO's
commands instead of ``--warmup``/``--measure``: each ``run`` command runs its steps (tagged with
its ``block``), synchronises the devices (the actor's CUDA, MJWarp) and writes a ``block`` record;
``end`` or end-of-file writes the summary over the measured blocks.

``--threads 0`` (the default) means every CPU of the affinity mask for the physics backend and
Numba's parallel kernels (capped at ``NUMBA_NUM_THREADS``; see ``envruntime.kernels.parallel`` for
the threading layer and its wait policy); each env step runs its kernels on as many of those as pay
(``envruntime.envs.kernel_threads``; ``ENVRUNTIME_KERNEL_THREADS=fixed``: all of them), and the
summary's ``metrics.kernel_threads`` is their mean count over the measured steps. The actor's torch
uses ``ENVRUNTIME_TORCH_THREADS`` threads, default 1: the actor runs between physics steps on the same
cores, and torch's OpenMP workers spin-wait after each forward while the physics pool needs those
cores (measured on a 2-core host at N=4096: 2 torch threads made ``policy_ms`` 3-8x and
``physics_ms`` up to 2x that of 1 thread). Raise it on hosts with cores to spare.

Exit codes: 0 ok; 2 invalid arguments (unknown task/sim/algo/variant/actions/device, a
non-positive count, ``--device cuda`` where torch sees no CUDA device, a bad
``ENVRUNTIME_TORCH_THREADS`` or ``ENVRUNTIME_KERNEL_THREADS``) or a task/engine not
installed, with an ``error`` record when the stream can be opened and the valid values on stderr;
1 a failure during the run, with an ``error`` record carrying the traceback tail.
"""

from __future__ import annotations

import argparse
import os
import resource
import stat
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from time import perf_counter, process_time, thread_time, time
from typing import NoReturn

import numba
import torch

from envruntime.backends import SIMS, default_threads
from envruntime.bench.header import build_audit
from envruntime.bench.protocol import StreamWriter, control_commands
from envruntime.collect.actors import ALGOS
from envruntime.collect.collector import Collector, make_collector
from envruntime.collect.policy import ACTIONS, DEVICES, CudaUnavailableError, torch_device
from envruntime.envs.kernel_threads import policy_from_env
from envruntime.envs.vecenv import VecEnv
from envruntime.kernels.parallel import threading_layer
from envruntime.tasks import TASKS, VARIANTS, make_env

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_INVALID = 2
TORCH_THREADS_ENV = "ENVRUNTIME_TORCH_THREADS"
DEFAULT_TORCH_THREADS = 1  # see the module docstring

EnvFactory = Callable[[str, str, str, int, int], VecEnv]


class InvalidArgument(ValueError):
    """A bench argument is wrong; the message names it and the valid values."""


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser that raises instead of exiting, so an error record can be written."""

    def error(self, message: str) -> NoReturn:
        raise InvalidArgument(message)


@dataclass(frozen=True)
class BenchConfig:
    """One benchmark run: the case, its sizes and where the records go."""

    algo: str
    task: str
    sim: str
    variant: str
    num_envs: int
    warmup: int
    measure: int
    replay_capacity: int
    seed: int
    threads: int  # 0: every CPU of the affinity mask
    stream: str
    actions: str = "actor"  # or "pregenerated"
    device: str = "cpu"  # the actor's torch device: "cpu" or "cuda"
    control: str | None = None  # the lockstep control FIFO; None: run --warmup then --measure steps

    def validate(self) -> None:
        """Raise InvalidArgument naming the first wrong field and its valid values."""
        for name, valid in (("algo", tuple(ALGOS)), ("task", TASKS), ("sim", tuple(SIMS)),
                            ("variant", VARIANTS), ("actions", ACTIONS), ("device", DEVICES)):
            value = getattr(self, name)
            if value not in valid:
                raise InvalidArgument(f"unknown {name} {value!r}; valid: {', '.join(valid)}")
        for name, minimum in (("num_envs", 1), ("measure", 1), ("replay_capacity", 1),
                              ("warmup", 0), ("threads", 0)):
            if (value := getattr(self, name)) < minimum:
                flag = "--" + name.replace("_", "-")
                raise InvalidArgument(f"{flag} must be >= {minimum}, got {value}")
        try:
            torch_device(self.device)
        except CudaUnavailableError as exc:
            raise InvalidArgument(str(exc)) from None
        if self.control is not None and not _is_fifo(self.control):
            raise InvalidArgument(f"--control {self.control!r} is not a FIFO (made with mkfifo)")

    def case(self) -> dict[str, str]:
        return {"algo": self.algo, "task": self.task, "sim": self.sim, "variant": self.variant}

    def params(self, threads: int) -> dict[str, int | str]:
        """The header's params, with ``threads`` resolved to the count actually used."""
        return {"num_envs": self.num_envs, "warmup": self.warmup, "measure": self.measure,
                "replay_capacity": self.replay_capacity, "seed": self.seed, "threads": threads,
                "actions": self.actions, "device": self.device}


def _is_fifo(path: str) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except OSError:
        return False


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m envruntime.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--algo", default="sac", help=f"one of: {', '.join(ALGOS)}")
    parser.add_argument("--task", required=True, help=f"one of: {', '.join(TASKS)}")
    parser.add_argument("--sim", default="mujoco", help=f"one of: {', '.join(SIMS)}")
    parser.add_argument("--variant", default="manager", help=f"one of: {', '.join(VARIANTS)}")
    parser.add_argument("--num-envs", type=int, default=8192)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--measure", type=int, default=100)
    parser.add_argument("--replay-capacity", type=int, default=64,
                        help="vector steps held by the replay ring (rows = this * num_envs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="0: every CPU of the affinity mask")
    parser.add_argument("--actions", default="actor",
                        help="actor: sample the actor every step; pregenerated: cycle a bank of random "
                             "actions drawn before the measured window (policy_ms 0.0)")
    parser.add_argument("--device", default="cpu", help=f"the actor's device, one of: {', '.join(DEVICES)}")
    parser.add_argument("--stream", required=True, help="file or FIFO receiving the NDJSON records")
    parser.add_argument("--control", help="FIFO of the lockstep control channel: run the steps it commands")
    return parser


def parse_config(argv: Sequence[str]) -> BenchConfig:
    """Parse and validate ``argv``; raises InvalidArgument."""
    config = BenchConfig(**vars(build_parser().parse_args(argv)))
    config.validate()
    return config


def configure_threads(threads: int) -> int:
    """Resolve ``threads`` (0 = affinity mask) and apply it to torch and Numba; returns it."""
    resolved = threads or default_threads()
    torch_threads = os.environ.get(TORCH_THREADS_ENV, str(DEFAULT_TORCH_THREADS))
    if not torch_threads.isdigit() or int(torch_threads) <= 0:
        raise InvalidArgument(f"{TORCH_THREADS_ENV} must be a positive integer, got {torch_threads!r}")
    try:
        policy_from_env()
    except ValueError as exc:
        raise InvalidArgument(str(exc)) from None
    torch.set_num_threads(int(torch_threads))
    numba.set_num_threads(min(resolved, numba.config.NUMBA_NUM_THREADS))
    threading_layer()  # start Numba's workers now (outside the measured window) so the audit names the layer
    return resolved


def peak_rss_mb() -> float:
    """This process's peak resident set size in MiB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class _Measured:
    """Runs collector steps in blocks and keeps the sums the summary needs."""

    def __init__(self, collector: Collector, writer: StreamWriter) -> None:
        self.collector, self.writer = collector, writer
        self.next_step, self.steps, self.wall_s = 0, 0, 0.0
        self.sums: dict[str, float] = {}
        self.kernel_threads = 0  # the row kernels' thread counts, summed over the measured steps

    def block(self, steps: int, warmup: bool, block: int | None = None) -> None:
        """``steps`` steps; a commanded ``block`` also synchronises the devices and writes its record."""
        started, start = time(), perf_counter()
        for _ in range(steps):
            cpu, thread = process_time(), thread_time()
            result = self.collector.step()
            thread, cpu = thread_time() - thread, process_time() - cpu
            phases = {**result.phases, "cpu_ms": cpu * 1000.0, "thread_cpu_ms": thread * 1000.0}
            self.writer.step(self.next_step, warmup, phases, result.resets, block)
            self.next_step += 1
            if not warmup:
                self.kernel_threads += self.collector.env.kernel_threads.last
                for phase, ms in phases.items():
                    self.sums[phase] = self.sums.get(phase, 0.0) + ms
        if block is not None:
            self.collector.synchronize()
        wall_s = perf_counter() - start
        if not warmup:
            self.steps += steps
            self.wall_s += wall_s
        if block is not None:
            self.writer.block(block, steps, wall_s, warmup, started, time())


def run(config: BenchConfig, env: VecEnv, threads: int, writer: StreamWriter) -> None:
    """Write the header, run warm-up + measured collector steps (or the control channel's blocks),
    write the summary."""
    collector = make_collector(env, config.algo, config.replay_capacity, config.actions, config.device,
                               config.seed)
    writer.header(config.case(), config.params(threads), build_audit(env, collector.policy.audit()),
                  control=config.control is not None)
    collector.reset(config.seed)
    measured = _Measured(collector, writer)
    if config.control is None:
        measured.block(config.warmup, warmup=True)
        measured.block(config.measure, warmup=False)
    else:
        for block, steps, warmup in control_commands(config.control):
            measured.block(steps, warmup, block)
    if measured.steps == 0 or measured.wall_s <= 0:
        raise RuntimeError("the control channel ended before any measured block")
    writer.summary(
        throughput=config.num_envs * measured.steps / measured.wall_s,
        measure_wall_s=measured.wall_s,
        phase_means_ms={phase: total / measured.steps for phase, total in measured.sums.items()},
        peak_rss_mb=peak_rss_mb(),
        metrics={"kernel_threads": measured.kernel_threads / measured.steps},
    )


def execute(config: BenchConfig, env_factory: EnvFactory = make_env) -> int:
    """Run ``config`` writing records to its stream; returns the exit code."""
    try:
        writer = StreamWriter(config.stream)
    except (OSError, ValueError) as exc:
        print(f"envruntime.bench: cannot use --stream {config.stream!r}: {exc}", file=sys.stderr)
        return EXIT_INVALID
    with writer:
        try:
            threads = configure_threads(config.threads)
            env = env_factory(config.task, config.sim, config.variant, config.num_envs, threads)
        except (InvalidArgument, ImportError) as exc:
            writer.error(exc, with_traceback=False)
            print(f"envruntime.bench: {exc}", file=sys.stderr)
            return EXIT_INVALID
        except Exception as exc:
            return _report_crash(writer, exc)
        try:
            run(config, env, threads, writer)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # also MotrixSim's PanicException, a BaseException
            return _report_crash(writer, exc)
        finally:
            env.close()
    return EXIT_OK


def _report_crash(writer: StreamWriter, exc: BaseException) -> int:
    writer.error(exc, with_traceback=True)
    print(f"envruntime.bench: run failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    return EXIT_RUN_FAILED


def _stream_from_argv(argv: Sequence[str]) -> str | None:
    """The ``--stream`` value of an argv that failed to parse, if it names one."""
    probe = argparse.ArgumentParser(add_help=False)
    probe.add_argument("--stream")
    known, _ = probe.parse_known_args(argv)
    return known.stream


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        config = parse_config(argv)
    except InvalidArgument as exc:
        print(f"envruntime.bench: {exc}", file=sys.stderr)
        if (stream := _stream_from_argv(argv)) is not None:
            try:
                with StreamWriter(stream) as writer:
                    writer.error(exc, with_traceback=False)
            except (OSError, ValueError):
                pass  # the stream cannot be used: stderr carries the error alone
        return EXIT_INVALID
    return execute(config)

