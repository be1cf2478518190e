"""Text for a terminal, shared by everything that prints one: numbers with SI prefixes and 3
significant digits (``166 ns``, ``5.44 M``, not ``0.0001666`` ms or ``5.43859e+06``), and lines
wrapped between phrases, never inside one that fits a line (``95% CI [0.94, 0.96]``, a path, a
command stays whole: ``phrases_of``, ``phrase_lines``).
The standard library only."""

from __future__ import annotations

import math
from collections.abc import Sequence

_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))


def significant(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits without an exponent: ``166``, ``5.44``, ``0.0123``."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    decimals = max(digits - 1 - math.floor(math.log10(abs(value))), 0)
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def si_number(value: float, unit: str = "") -> str:
    """``5.44 M calls/s`` (``unit`` after the prefix); a value below 1000 as is, 3 significant digits;
    ``-`` for NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    scale, prefix = next(((s, p) for s, p in _PREFIXES if abs(value) >= s), (1.0, ""))
    mantissa = significant(value / scale)
    if mantissa == "1000" and scale < 1e12:  # 999,950 rounds up to the next prefix
        scale, prefix = next((s, p) for s, p in reversed(_PREFIXES) if s > scale)
        mantissa = significant(value / scale)
    return " ".join(part for part in (mantissa, prefix, unit) if part)


def si_seconds(seconds: float) -> str:
    """A time with the largest unit that keeps it at 1 or more: ``166 ns``, ``1.53 ms``, ``2.61 s``."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    if seconds == 0:
        return "0 s"
    scale, unit = next(((s, u) for s, u in _TIME_UNITS if abs(seconds) >= s * 0.9995), _TIME_UNITS[-1])
    return f"{significant(seconds / scale)} {unit}"


def quantity(value: float, metric: str, throughput_unit: str | None = None) -> str:
    """A metric's value for a reader: a ``*_ms`` phase or time and a ``*_s`` figure as a time
    (``si_seconds``), ``*_mib`` in MiB, throughput with an SI prefix and its unit per second (where
    known), anything else with an SI prefix."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if metric.endswith("_ms"):
        return si_seconds(value / 1000)
    if metric.endswith("_s"):
        return si_seconds(value)
    if metric.endswith("_mib"):
        return f"{significant(value)} MiB"
    if metric == "throughput" and throughput_unit:
        return si_number(value, f"{throughput_unit}/s")
    return si_number(value)


_OPEN, _CLOSE = "([{", ")]}"


def phrases_of(text: str) -> list[str]:
    """``text`` cut into phrases where a line may break: after ``, `` and ``; `` and before `` (``,
    never inside brackets (``95% CI [0.94, 0.96]`` and ``(2 added, 1 removed)`` stay whole)."""
    phrases, current, depth = [], "", 0
    for char in text:
        if char == "(" and depth == 0 and current.endswith(" ") and current.strip():
            phrases.append(current[:-1])
            current = ""
        current += char
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            depth = max(depth - 1, 0)
        elif depth == 0 and current.endswith((", ", "; ")):
            phrases.append(current[:-1])
            current = ""
    return [*phrases, current] if current else phrases


def wrapped(text: str, width: int | None) -> list[str]:
    """``text`` as the lines to print: broken between its phrases to fit ``width`` (a terminal's), or
    whole where ``width`` is None (a pipe or a file: a log keeps each line whole)."""
    return [text] if width is None else phrase_lines(phrases_of(text), width)


def phrase_lines(phrases: Sequence[str], width: int, indent: str = "  ") -> list[str]:
    """``phrases`` joined by spaces into lines of at most ``width`` characters, broken only between
    two phrases; only a phrase longer than a line is broken, on a line of its own, between its words
    and a word longer than the line at the width (a path). Lines after the first are indented."""
    lines: list[str] = []
    for phrase in (p for p in phrases if p):
        room = width - (len(indent) if lines else 0)
        parts = [phrase] if len(phrase) <= room else _folded(phrase, max(width - len(indent), 1))
        for part in parts:
            if lines and len(lines[-1]) + 1 + len(part) <= width and part is parts[0] and len(parts) == 1:
                lines[-1] += " " + part
            else:
                lines.append(part if not lines else indent + part)
    return lines


def _folded(phrase: str, width: int) -> list[str]:
    """A phrase too long for a line as lines of its words, a word longer than ``width`` cut at it."""
    words = [chunk for word in phrase.split(" ") for chunk in
             (word[i:i + width] for i in range(0, max(len(word), 1), width))]
    lines: list[str] = []
    for word in words:
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines
