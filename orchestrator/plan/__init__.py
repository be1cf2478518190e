"""Step 2, the plan: refs resolved to SHAs, the sweep expanded into ordered runs with their keys, the
sweep record's contents, and resume. May import ``spec``, ``store``, ``contract``, ``errors``."""
