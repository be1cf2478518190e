"""Step 1, the sweep spec: the YAML schema (``schema``) and its loading and validation (``load``).
May import ``errors`` only."""
