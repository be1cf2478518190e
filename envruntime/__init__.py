"""envruntime: a batched manager-based robot-RL env runtime and the collector benchmark that
the shasweep orchestrator measures. See ``envruntime.bench`` for the run-protocol CLI."""

__version__ = "0.1.0"
