"""Test helpers: poll for something a subprocess does, with a deadline that fails the test naming it."""

from __future__ import annotations

import time

import psutil
import pytest

WAIT_S = 60.0


def wait_for(predicate, what: str, timeout_s: float = WAIT_S):
    """Poll ``predicate`` until it returns something truthy; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def is_gone(pid: int) -> bool:
    """``pid`` has exited (a zombie not yet reaped counts as gone)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
