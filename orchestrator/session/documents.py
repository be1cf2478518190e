"""A read verb's output as one value: the Markdown a command prints, and the same as an HTML page,
built only when asked for (Bokeh) and written to its default place under ``<results>/reports/`` or
where the caller says."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.store.atomic import write_text_atomic

if TYPE_CHECKING:
    from orchestrator.render.page import Page


@dataclass(frozen=True)
class Document:
    """Markdown to print; ``page`` builds the HTML page; ``default_html``: where it goes by default."""

    markdown: str
    page: Callable[[], Page]
    default_html: Path

    def write_html(self, path: Path | None = None) -> Path:
        """Write the page (to ``path``, default ``default_html``) atomically; its path."""
        return write_text_atomic(path or self.default_html, self.page().render())

    def write_markdown(self, path: Path) -> Path:
        """Write the Markdown to ``path`` atomically; its path."""
        return write_text_atomic(path, self.markdown)
