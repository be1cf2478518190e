"""Step 3, dispatch (client side): the cluster connection, the strictly serial dispatcher, progress.
May import ``plan``, ``worker`` (the task it submits), ``store``, ``spec``, ``dashboard``, ``contract``,
``errors``."""
