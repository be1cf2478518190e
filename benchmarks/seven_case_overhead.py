"""Manager-based against hand-fused envs in the 7 cases of ``sweeps/mba_vs_direct_7case.yaml``.

    python benchmarks/seven_case_overhead.py [--num-envs 4096] [--warmup 3] [--steps 5] [--threads 0]
        [--cases flashsac/go2_joystick_flat/mujoco,sac/g1_walk_flat/motrix] [--sim mjwarp]
        [--actions actor|pregenerated] [--targets issue16]

``--sim`` runs every case on that backend instead of its own (e.g. the 7 cases on MJWarp);
``--actions pregenerated`` uses the seeds' collector method (a bank of random actions, no actor in
the loop), which the targets of issue 16 (``--targets issue16``: manager/direct >= 0.97, direct /
physics >= 0.95) are stated for.

For every case (default: the sweep's seven, read from the YAML) measures in one process run, with
``runtime_overhead``'s functions: the raw physics limit of the case's backend and model (once per
task and sim), then the direct and the manager collector (``envruntime.bench`` subprocesses with
the case's actor). Prints per case, from median step times:

* manager / direct collector throughput (target >= 0.95);
* manager ``update_state_ms`` / ``physics_ms`` (target <= 0.15);
* direct collector / raw physics limit (target >= 0.85);

and, because physics time swings with the load between the two collector subprocesses (both
variants step bitwise-identical physics), manager/direct at equal physics cost
(``runtime_overhead.equal_physics_ratio``), and the direct collector's physics share of its step. Also
the load average before and after: other processes share the machine, so read the ratios
measured within this run, not the absolute rates. About 5 minutes on 2 cores with the defaults.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, replace
from pathlib import Path

import yaml
from runtime_overhead import (
    DIRECT_OVER_PHYSICS_TARGET,
    MANAGER_OVER_DIRECT_TARGET,
    UPDATE_STATE_SHARE_TARGET,
    OverheadConfig,
    Rate,
    equal_physics_ratio,
    physics_limit,
    run_collector,
    task_decimation,
)

from envruntime.backends import default_threads

# ``--targets``: name -> (manager/direct, direct/physics limit) at least
TARGETS: dict[str, tuple[float, float]] = {
    "default": (MANAGER_OVER_DIRECT_TARGET, DIRECT_OVER_PHYSICS_TARGET),
    "issue16": (0.97, 0.95),
}

SWEEP = Path(__file__).resolve().parent.parent / "sweeps" / "mba_vs_direct_7case.yaml"


def sweep_cases() -> list[str]:
    """The cases of the 7-case sweep, in its order."""
    return list(yaml.safe_load(SWEEP.read_text(encoding="utf-8"))["cases"])


@dataclass(frozen=True)
class CaseResult:
    """One case's physics limit and its collectors' median ms per phase; rates are env-steps/s."""

    case: str
    num_envs: int
    physics: float  # raw physics limit, from the median step
    direct_ms: dict[str, float]
    manager_ms: dict[str, float]
    targets: tuple[float, float] = TARGETS["default"]  # manager/direct, direct/physics

    def rate(self, medians_ms: dict[str, float]) -> float:
        return self.num_envs * 1e3 / medians_ms["collector_step_ms"]

    @property
    def direct(self) -> float:
        return self.rate(self.direct_ms)

    @property
    def manager(self) -> float:
        return self.rate(self.manager_ms)

    @property
    def manager_over_direct(self) -> float:
        return self.manager / self.direct

    @property
    def manager_over_direct_same_physics(self) -> float:
        return equal_physics_ratio(self.direct_ms, self.manager_ms)

    @property
    def update_state_share(self) -> float:
        return self.manager_ms["update_state_ms"] / self.manager_ms["physics_ms"]

    @property
    def direct_over_physics(self) -> float:
        return self.direct / self.physics

    @property
    def direct_physics_share(self) -> float:
        return self.direct_ms["physics_ms"] / self.direct_ms["collector_step_ms"]

    def misses(self) -> list[str]:
        """The targets this case misses."""
        return [name for name, ok in (
            ("manager/direct", self.manager_over_direct >= self.targets[0]),
            ("update_state/physics", self.update_state_share <= UPDATE_STATE_SHARE_TARGET),
            ("direct/physics", self.direct_over_physics >= self.targets[1]),
        ) if not ok]


def measure_case(case: str, base: OverheadConfig, limits: dict[tuple[str, str], Rate],
                 targets: tuple[float, float] = TARGETS["default"]) -> CaseResult:
    """Both collectors of ``case``; the physics limit of its task and sim is measured once into ``limits``."""
    algo, task, sim = case.split("/")
    cfg = replace(base, algo=algo, task=task, sim=sim)
    if (task, sim) not in limits:
        limits[task, sim] = physics_limit(cfg, task_decimation(task, sim, cfg.threads))
    direct, manager = (run_collector(cfg, v, cfg.num_envs, cfg.steps) for v in ("direct", "manager"))
    return CaseResult(case=case, num_envs=cfg.num_envs, physics=limits[task, sim].median,
                      direct_ms=direct.medians_ms, manager_ms=manager.medians_ms, targets=targets)


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def print_table(results: list[CaseResult]) -> None:
    print(f"{'case':34s} {'physics':>7s} {'direct':>7s} {'manager':>7s}  {'mgr/dir':>7s} {'same-ph':>7s} "
          f"{'upd/phys':>8s} {'dir/phys':>8s} {'dir-ph%':>7s}  misses")
    for r in results:
        misses = ", ".join(r.misses()) or "-"
        print(f"{r.case:34s} {r.physics:7.0f} {r.direct:7.0f} {r.manager:7.0f}  {r.manager_over_direct:7.3f} "
              f"{r.manager_over_direct_same_physics:7.3f} {r.update_state_share:8.3f} "
              f"{r.direct_over_physics:8.3f} {100 * r.direct_physics_share:6.1f}%  {misses}")
    mgr_dir, dir_phys = results[0].targets if results else TARGETS["default"]
    print(f"targets: mgr/dir >= {mgr_dir}, upd/phys <= {UPDATE_STATE_SHARE_TARGET}, "
          f"dir/phys >= {dir_phys}; rates in env-steps/s from median step times; "
          "same-ph: mgr/dir at equal physics cost; dir-ph%: physics share of the direct step")
    ratios = [r.manager_over_direct for r in results]
    print(f"manager/direct over the cases: {min(ratios):.3f} - {max(ratios):.3f}; "
          f"{sum(not r.misses() for r in results)} of {len(results)} cases meet every target")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--num-envs", type=int, default=4096)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5, help="measured steps per collector and physics limit")
    parser.add_argument("--threads", type=int, default=0, help="0: every CPU of the affinity mask")
    parser.add_argument("--cases", type=lambda text: text.split(","), default=sweep_cases(),
                        help="comma-separated algo/task/sim cases (default: the 7-case sweep's)")
    parser.add_argument("--sim", default="", help="run every case on this backend instead of its own")
    parser.add_argument("--actions", default="actor", choices=("actor", "pregenerated"))
    parser.add_argument("--targets", default="default", choices=tuple(TARGETS))
    args = parser.parse_args()
    if args.sim:
        args.cases = list(dict.fromkeys(case.rsplit("/", 1)[0] + "/" + args.sim for case in args.cases))
    if min(args.num_envs, args.steps) < 1 or min(args.warmup, args.threads) < 0:
        parser.error("--num-envs and --steps must be >= 1; --warmup and --threads >= 0")
    for case in args.cases:
        if len(case.split("/")) != 3:
            parser.error(f"--cases: {case!r} is not of the form algo/task/sim")
    base = OverheadConfig(task="", sim="", num_envs=args.num_envs, warmup=args.warmup, steps=args.steps,
                          threads=args.threads or default_threads(), rss_num_envs=0, torch_threads=0,
                          actions=args.actions)
    print(f"N={base.num_envs}, {base.threads} threads, {base.warmup} warm-up + {base.steps} measured steps, "
          f"{base.actions} actions; {load()}", flush=True)
    limits: dict[tuple[str, str], Rate] = {}
    results = []
    for case in args.cases:
        try:
            results.append(measure_case(case, base, limits, TARGETS[args.targets]))
        except RuntimeError as exc:  # one failed case is reported and the others still run
            print(f"  FAILED {case}: {exc}", flush=True)
            continue
        print(f"  measured {case} ({load()})", flush=True)
    print_table(results)
    print(f"done; {load()}")


if __name__ == "__main__":
    main()
