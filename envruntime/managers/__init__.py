"""The generic managers (action, command, event, observation, reward, termination), their term configs
(``terms``) and the generic term library (``mdp``). Nothing task-specific: may import
``envruntime.kernels`` and ``envruntime.backends`` only, never envs or tasks."""
