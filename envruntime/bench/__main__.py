"""``python -m envruntime.bench``: the collector benchmark CLI of ``envruntime.bench.cli``."""

import sys

from envruntime.bench.cli import main

if __name__ == "__main__":
    sys.exit(main())
