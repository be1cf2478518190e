"""Step 5, the store: Parquet run and step files (written atomically), the one read layer (``query``),
the index, compaction, reuse, and the sweep and bisect record files. Its imports: docs/design.md,
"Import rules"."""
