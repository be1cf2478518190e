"""The off-policy collector: torch actors (``actors``), the replay ring (``replay``) and the loop over a
``VecEnv`` (``collector``). May import ``envruntime.envs.vecenv`` only, besides its own modules."""
