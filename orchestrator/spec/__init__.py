"""Step 1, the sweep spec: the YAML schema (``schema``) and its loading and validation (``load``), the
sweep record's shape (``record``). Its imports: docs/design.md, "Import rules"."""
