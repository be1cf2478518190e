"""The checks of ``instrument`` (docs/design.md, "Instruction counts"), at load: exit 2 naming the key."""

from __future__ import annotations

import platform
import shutil

from orchestrator.capabilities import Capability, describe
from orchestrator.errors import SpecError
from orchestrator.spec.schema import Instrument, SweepSpec

VALGRIND_PACKAGE = "valgrind"  # Debian's and Ubuntu's package of it
MARKING_MACHINES = ("x86_64", "amd64")  # where the bench side can make callgrind's client requests


def marks_steps(spec: SweepSpec) -> bool:
    """Whether the sweep's bench side is shasweep's (the control channel: suitekit, benchkit), which
    marks its measured steps; else the whole process is counted."""
    return describe(spec.protocol.value).has(Capability.CONTROL_CHANNEL)


def check_instrument(spec: SweepSpec) -> None:
    """``instrument: valgrind`` needs valgrind on this host and, where the measured steps are marked,
    an x86-64 machine."""
    if spec.instrument is Instrument.none:
        return
    if shutil.which("valgrind") is None:
        raise SpecError(f"valgrind is not installed on this host (the Debian and Ubuntu package is "
                        f"{VALGRIND_PACKAGE}: apt-get install {VALGRIND_PACKAGE})", "instrument")
    machine = platform.machine().lower()
    if marks_steps(spec) and machine not in MARKING_MACHINES:
        raise SpecError(f"counting a {spec.protocol.value} bench's measured steps uses callgrind's client "
                        f"requests, written for x86-64; this machine is {machine}", "instrument")
