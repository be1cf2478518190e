"""Sweep keys shasweep no longer uses: still accepted in a sweep YAML or an override, each with a
one-line note on stderr naming it, and dropped before the sweep is typed (nothing reads them)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from omegaconf import DictConfig

# key -> why it is ignored
DEPRECATED_KEYS: dict[str, str] = {
    "bootstrap_resamples": "verdicts read t-intervals, no bootstrap",
    "bootstrap_seed": "verdicts read t-intervals, no bootstrap",
}


def drop_deprecated(raw: DictConfig, dotlist: list[str] | tuple[str, ...]) -> list[str]:
    """Remove the deprecated keys from ``raw`` (in place) and return ``dotlist`` without them, with
    one note on stderr per key found."""
    found = [key for key in DEPRECATED_KEYS if key in raw]
    for key in found:
        del raw[key]
    kept = []
    for item in dotlist:
        key = str(item).partition("=")[0].strip().removeprefix("+")
        if key in DEPRECATED_KEYS:
            found.append(key)
        else:
            kept.append(item)
    for key in dict.fromkeys(found):
        print(f"shasweep: note: {key} is deprecated and ignored ({DEPRECATED_KEYS[key]}); remove it",
              file=sys.stderr, flush=True)
    return kept
