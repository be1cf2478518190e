"""Term library (Isaac Lab's ``mdp`` modules): funcs for term configs, generic over robots.

Each func is called once as ``func(env, **params)``; names (sensors, joints, commands) are
resolved there, and the returned callable runs one Numba kernel per step.
"""
