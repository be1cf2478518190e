"""Lone surrogates in what a bench writes. JSON may escape a UTF-16 surrogate that pairs with nothing
(``"\\udc80"``); Python's ``json`` decodes it to a ``str`` that no UTF-8 file can hold, so a
benchmark or phase named with one failed its run with a bare ``UnicodeEncodeError`` at the Parquet
writer (or the terminal, or a report). Every reader of a bench's JSON passes what it parsed through
``escaped``: each lone surrogate becomes the six characters of its escape (``\\udc80`` as text),
visible and storable; everything else stays as it was.
"""

from __future__ import annotations

import re

_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # in JSON text: where a surrogate can come from at all
_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE = re.compile("[\ud800-\udfff]")


def may_hold(text: str | bytes) -> bool:
    """Whether JSON ``text`` escapes a surrogate (only then can its parse hold a lone one)."""
    return bool(_ESCAPE.search(text) if isinstance(text, str) else _ESCAPE_BYTES.search(text))


def escaped(value: object) -> object:
    """``value`` (parsed JSON) with every lone surrogate of its strings and keys written as its escape."""
    if isinstance(value, str):
        return _LONE.sub(lambda found: f"\\u{ord(found.group()):04x}", value)
    if isinstance(value, list):
        return [escaped(item) for item in value]
    if isinstance(value, dict):
        return {escaped(key): escaped(item) for key, item in value.items()}
    return value
