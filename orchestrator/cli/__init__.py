"""The command line: one small module per verb (``run``, ``results``, ``status``, ``gc``), the
long-running servers (``servers``), and ``main``. May import every step; nothing imports ``cli``."""

from orchestrator.cli.main import main

__all__ = ["main"]
