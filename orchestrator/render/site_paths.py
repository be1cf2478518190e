"""Where each page of the results site lives, relative to the site's root: one name per case, sweep and
report, whatever the name holds.

A case or sweep name may hold any character (``/``, ``..``, ``<``, spaces): its file name keeps only
letters, digits, ``.``, ``_`` and ``-`` of it (at most ``SLUG_CHARS``, never leading with a dot) and
adds a digest of the whole name, so two names never share a file and no name reaches outside the
site's directory. Links are relative, so the site opens from disk, from any static host and under
the scheduler's ``/shasweep/history/``.
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import quote

INDEX = "index.html"
SWEEPS = "sweeps.html"
STATIC = "static"
CASES_DIR, SWEEPS_DIR, REPORTS_DIR = "cases", "sweeps", "reports"
SLUG_CHARS = 60
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def slug(name: str) -> str:
    """A file name for ``name``: its safe characters and 10 hex digits of its digest."""
    kept = _UNSAFE.sub("_", name)[:SLUG_CHARS].lstrip(".") or "x"
    return f"{kept}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:10]}"


def case_path(case: str) -> str:
    return f"{CASES_DIR}/{slug(case)}.html"


def sweep_path(sweep_id: str) -> str:
    return f"{SWEEPS_DIR}/{slug(sweep_id)}.html"


def report_copy(sweep_id: str, suffix: str) -> str:
    """Where a sweep's (or a bisect's, ``bisect-<id>``) report file ending in ``suffix`` is copied."""
    return f"{REPORTS_DIR}/{slug(sweep_id)}{suffix}"


def static_file(name: str) -> str:
    return f"{STATIC}/{name}"


def href(page: str, depth: int) -> str:
    """``page`` (a path under the site's root) as a link from a page ``depth`` directories down."""
    return "../" * depth + quote(page)
