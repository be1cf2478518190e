"""Text from outside (case names, refs, bench output, anything a record holds) made safe to print or
write: ``printable`` is what every output of shasweep shows such text through (docs/design.md,
"Faults and neighbours": text from outside).

A character that could steer a terminal or hide what the text says is shown as its escape, the
characters it is everywhere else: control characters (C0, DEL, C1: ESC starts an escape sequence,
OSC 8 makes a link, BEL, BS and CR rewrite what was shown), the bidirectional controls (they reorder
what a reader sees: "Trojan Source") and lone UTF-16 surrogates (no UTF-8 file or terminal can hold
one: writing it raised ``UnicodeEncodeError``). The standard library only; the groups that print or
write what they are given import it (docs/design.md, "Import rules").
"""

from __future__ import annotations

import re

# C0 (newline and tab included: a name is one line), DEL, C1; the bidirectional controls (ALM, LRM,
# RLM, LRE..RLO, LRI..PDI); surrogates, which only a lone one can be in a str
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: object) -> str:
    """``text`` as a str with every unsafe character written as its escape (``\\x1b``, ``\\u202e``,
    ``\\udc80``); everything else, backslashes included, as it is."""
    text = str(text)
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
