"""Turn MotrixSim's Rust panics into ordinary Python errors.

A panic in MotrixSim's Rust core surfaces as ``pyo3_runtime.PanicException``, which derives from
``BaseException``: ``except Exception`` does not catch it and it would end a bench run without a
useful record. Backend calls into MotrixSim run inside ``panics_as_errors(action)``, which
re-raises it as ``MotrixPanicError`` (a ``RuntimeError``) naming what the backend was doing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np


class MotrixPanicError(RuntimeError):
    """MotrixSim's Rust core panicked; the message says during what and on which env rows."""


def is_rust_panic(exc: BaseException) -> bool:
    """Whether ``exc`` is a pyo3 ``PanicException`` (not importable by name, so matched by type)."""
    cls = type(exc)
    return cls.__name__ == "PanicException" and cls.__module__ == "pyo3_runtime"


def describe_rows(env_ids: np.ndarray, limit: int = 8) -> str:
    """``rows [0, 3, 7]`` or ``rows [0, 1, ...] (100 rows)`` for error messages."""
    ids = [int(i) for i in np.asarray(env_ids).ravel()]
    if len(ids) <= limit:
        return f"rows {ids}"
    return f"rows [{', '.join(map(str, ids[:limit]))}, ...] ({len(ids)} rows)"


@contextmanager
def panics_as_errors(action: str) -> Iterator[None]:
    """Re-raise a MotrixSim panic inside the block as ``MotrixPanicError`` naming ``action``."""
    try:
        yield
    except BaseException as exc:
        if not is_rust_panic(exc):
            raise
        raise MotrixPanicError(f"MotrixSim panicked while {action}: {exc}") from exc
