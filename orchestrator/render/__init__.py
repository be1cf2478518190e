"""Step 7, rendering: the models it is given (``analysis``) as report tables, Markdown/CSV text, HTML
pages and plots, compare and history, documents for other tools; it loads and writes nothing (the
session writes what it returns). Its imports: docs/design.md, "Import rules"."""
