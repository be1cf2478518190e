"""``python -m orchestrator.cli`` is the ``shasweep`` command."""

import sys

from orchestrator.cli.main import main

sys.exit(main())
