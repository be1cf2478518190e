"""Step 5, the store: Parquet run and step files (written atomically, read back) and the sweep
record file. May import ``contract``, ``errors``."""
