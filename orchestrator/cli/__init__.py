"""The command line: one small module per verb (``run``, ``results``, ``status``, ``gc``): it parses
arguments, calls the session and prints what it returns; the long-running servers (``servers``), and
``main``. Its imports: docs/design.md, "Import rules"."""

from orchestrator.cli.main import main

__all__ = ["main"]
