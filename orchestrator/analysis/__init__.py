"""Step 6, analysis: statistics, verdicts, the per-run audit, drift, and the report model.
May import ``store``, ``spec``, ``contract``, ``errors``."""
