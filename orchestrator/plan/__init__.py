"""Step 2, the plan: refs resolved to SHAs, the results root, the sweep expanded into ordered runs with
their keys, the sweep record's contents, resume, and the bisect search. Its imports: docs/design.md,
"Import rules"."""
