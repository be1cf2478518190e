"""Step 4, the bench worker: the bench task, processes, worktrees, stream reading, the host record.
Its imports: docs/design.md, "Import rules"."""
