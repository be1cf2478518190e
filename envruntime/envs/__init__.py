"""The env bases: ``manager_based`` (assembled from managers), ``direct_base`` (hand-fused variants)
and ``vecenv`` (what every env offers the collector). May import ``envruntime.backends`` and
``envruntime.kernels``; only ``manager_based`` may import ``envruntime.managers``."""
