"""SIGTERM (``kill PID``, a scheduler's or supervisor's stop) and SIGHUP (the terminal closed) stop a
command as Ctrl-C does: they raise ``errors.SignalInterrupt``, a ``KeyboardInterrupt``, in the main
thread, so a running sweep cancels its bench, records itself ``stopped`` and exits 3 (``interrupted
by SIGTERM``) instead of dying with its record left ``running``."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from orchestrator.errors import SignalInterrupt

STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise SignalInterrupt(signal.Signals(signum).name)


@contextmanager
def stop_signals_interrupt() -> Iterator[None]:
    """Inside the block, ``STOP_SIGNALS`` raise ``SignalInterrupt`` (only the main thread can have
    signal handlers; elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {signum: signal.signal(signum, _interrupt) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
