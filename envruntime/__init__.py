"""envruntime: a batched manager-based robot-RL env runtime and the collector benchmark that the
shasweep orchestrator measures (``python -m envruntime.bench``). Its layers import one way (kernels,
backends, robots, managers, envs, tasks, collect, bench): tests/envruntime/test_envruntime_imports.py."""

__version__ = "0.1.0"
