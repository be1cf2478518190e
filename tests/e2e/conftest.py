"""Fixtures of the end-to-end drills."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator

import pytest

NEIGHBOUR = "shasweep-drill"  # the second local user the drills create


@pytest.fixture(scope="session")
def neighbour() -> Iterator[pwd.struct_passwd]:
    """A second local user (created with ``useradd`` when missing); the drills need root for it."""
    if os.geteuid() != 0:
        pytest.skip("a second local user needs root: useradd and dropping to that user")
    if shutil.which("useradd") is None:
        pytest.skip("useradd is not installed")
    created = False
    try:
        pwd.getpwnam(NEIGHBOUR)
    except KeyError:
        done = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                               NEIGHBOUR], capture_output=True, text=True)
        created = done.returncode == 0
    try:
        user = pwd.getpwnam(NEIGHBOUR)  # made by us or, at the same moment, by another test session
    except KeyError:
        pytest.skip(f"could not create the user {NEIGHBOUR}")
    yield user
    if created:
        subprocess.run(["userdel", NEIGHBOUR], capture_output=True)
