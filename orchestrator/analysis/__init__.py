"""Step 6, analysis: statistics, verdicts, waivers, the per-run audit, drift, change points, and the read
side's models (the report, compare, history, what the HTML page plots), each loaded through
``store.query``. Its imports: docs/design.md, "Import rules"."""
