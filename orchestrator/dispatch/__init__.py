"""Step 3, dispatch (client side): the cluster connection, the strictly serial dispatcher, the
bench hosts a sweep runs on and the fleet's round dispatch, progress.
May import ``plan``, ``worker`` (the task it submits), ``store``, ``spec``, ``dashboard``, ``contract``,
``errors``."""
