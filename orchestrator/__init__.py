"""shasweep orchestrator: sweep YAML -> Dask -> pinned bench worker -> Parquet -> report."""

__version__ = "0.1.0"
