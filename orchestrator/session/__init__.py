"""The sweep session: plan, run, resume and bisect sweeps from Python; ``cli`` parses arguments and
calls it. May import every group but ``cli``; only ``cli`` imports it.

    from orchestrator.session import RunOptions, plan_sweep, run_sweep

    run = run_sweep(plan_sweep("sweeps/smoke.yaml", ["repeats=5"]), RunOptions(progress=False))
    report = run.report()
    print(report.exit_code, [(g.case, g.side, g.verdict, round(g.ratio, 3)) for g in report.gates])
"""

from orchestrator.session.bisect import BisectOptions, BisectRun, bisect, resume_bisect
from orchestrator.session.options import RunOptions
from orchestrator.session.sweep import SweepPlan, SweepRun, noise_estimates, plan_sweep, resume, run_sweep

__all__ = ["BisectOptions", "BisectRun", "RunOptions", "SweepPlan", "SweepRun", "bisect", "noise_estimates",
           "plan_sweep", "resume", "resume_bisect", "run_sweep"]
