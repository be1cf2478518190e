"""What several tasks share: parameter blocks (``params``), manager term builders, humanoid terms and
helpers, and the velocity direct base. May import envs, managers, kernels, backends and robots; the
modules the direct variants import (params, humanoid, velocity_direct) never reach managers."""
