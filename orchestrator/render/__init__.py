"""Step 7, rendering: report tables, Markdown/CSV, HTML pages and plots, compare and history.
May import ``analysis``, ``store``, ``spec``, ``contract``, ``errors``."""
