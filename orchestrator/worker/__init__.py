"""Step 4, the bench worker: the bench task, processes, worktrees, stream reading, the host record.
May import ``store``, ``contract``, ``errors``; never ``dispatch``, ``analysis`` or ``render``."""
