"""The MotrixSim backend (``backend.py``) and its MuJoCo-layout column maps and panic handling.
May import numpy, mujoco, motrixsim and ``envruntime.backends``/``envruntime.kernels`` only."""
