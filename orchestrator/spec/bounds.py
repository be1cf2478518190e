"""Caps on what a sweep may ask for, so a typo cannot make ``plan`` or a report eat the machine.

Other keys (e.g. an adaptive ``max_repeats``) are capped with the same constants.
"""

from __future__ import annotations

import math
from dataclasses import fields, is_dataclass

from orchestrator.errors import SpecError

MAX_REPEATS = 1_000  # repeats of one (case, side); also the cap of any maximum number of repeats
MAX_RUNS = 100_000  # cases x sides x repeats of one sweep
MAX_NAME_LENGTH = 100  # the sweep name: its ids name files (at most 255 bytes with the time stamp)
MAX_LABEL_LENGTH = 64  # side labels and each part of a case
MAX_REF_LENGTH = 256  # a git ref as written


def check_at_most(value: int, cap: int, key: str) -> None:
    if value > cap:
        raise SpecError(f"must be <= {cap:,}, got {value:,}", key)


def check_length(text: str, cap: int, key: str) -> None:
    if len(text) > cap:
        raise SpecError(f"at most {cap} characters, got {len(text):,} ({text[:40]!r}...)", key)


def check_finite_floats(value: object, key: str = "") -> None:
    """Every float in ``value`` (a dataclass, list or dict, walked recursively) is finite."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SpecError(f"must be a finite number, got {value}", key or None)
    elif is_dataclass(value) and not isinstance(value, type):
        for f in fields(value):
            check_finite_floats(getattr(value, f.name), f"{key}.{f.name}" if key else f.name)
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            check_finite_floats(item, f"{key}[{i}]")
    elif isinstance(value, dict):
        for name, item in value.items():
            check_finite_floats(item, f"{key}.{name}" if key else str(name))
