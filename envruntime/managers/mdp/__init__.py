"""Term library (Isaac Lab's ``mdp`` modules), generic over robots: each func is called once as
``func(env, **params)`` (names resolved there) and returns the callable that runs one Numba kernel per
step. May import ``envruntime.kernels``, ``envruntime.backends`` and ``envruntime.managers`` only."""
