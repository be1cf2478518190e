"""A read verb's output as one value: the Markdown a command prints, and the same as an HTML page,
built only when asked for (Bokeh) and written to its default place under ``<results>/reports/`` or
where the caller says."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.store.atomic import write_text_atomic

if TYPE_CHECKING:
    from orchestrator.render.page import Page


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_STEM = 80  # characters of a name taken from a case, before its hash


def file_stem(text: str) -> str:
    """``text`` (a case name: ``bench/test_x.py::test_y[Color red]``) as part of a file name that any
    shell, URL and file system takes as it is: a ``/`` becomes ``_``, any other run of characters but
    letters, digits, ``.``, ``_`` and ``-`` one ``_``, at most ``MAX_STEM`` of them; where more than
    the ``/`` changed, 8 hex digits of the text's SHA-1 follow, so two cases never share a file."""
    plain = text.replace("/", "_")
    stem = _UNSAFE.sub("_", plain).strip("._-") or "_"
    if stem == plain and len(stem) <= MAX_STEM:
        return stem
    return f"{stem[:MAX_STEM]}-{hashlib.sha1(text.encode()).hexdigest()[:8]}"


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
