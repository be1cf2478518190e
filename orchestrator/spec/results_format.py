"""The results format version: one number for every file shasweep writes to a results root (sweep and
bisect records, the runs and steps Parquet files and each run row, the index), so a root written
today can be told from tomorrow's (docs/design.md, "Results", format versions).

A reader accepts every version up to ``FORMAT_VERSION`` and migrates older ones as it reads them; a
file of a newer version is refused (``NewerFormatError``, exit 2) naming the file and both versions,
because a reader cannot know what a newer writer changed. A file written before versions existed
carries none: it is version ``UNVERSIONED``.
"""

from __future__ import annotations

from orchestrator.errors import InvalidInputError

FORMAT_VERSION = 2
UNVERSIONED = 1  # every file written before the version existed (until 2026-12)
RECORD_KEY = "format_version"  # in a sweep or bisect record, and the run rows' column
METADATA_KEY = b"shasweep.format_version"  # in a Parquet file's key-value metadata


class NewerFormatError(InvalidInputError):
    """A results file written by a newer shasweep than this one."""


def checked_version(found: object, where: str) -> int:
    """The format version ``found`` in ``where`` (a file's path): None is ``UNVERSIONED``;
    ``NewerFormatError`` above ``FORMAT_VERSION``, ``InvalidInputError`` for anything not a version."""
    if found is None:
        return UNVERSIONED
    if isinstance(found, bytes):
        found = found.decode("ascii", errors="replace")
    if isinstance(found, str) and found.isdigit():
        found = int(found)
    if isinstance(found, bool) or not isinstance(found, int) or found < UNVERSIONED:
        raise InvalidInputError(f"{where}: results format version {found!r:.40} is not a version")
    if found > FORMAT_VERSION:
        raise NewerFormatError(f"{where} is results format version {found}, and this shasweep reads "
                               f"versions {UNVERSIONED} to {FORMAT_VERSION}: it was written by a newer "
                               "shasweep; read it with that one")
    return found


def metadata_version(metadata: dict[bytes, bytes] | None, where: str) -> int:
    """The format version of a Parquet file whose key-value metadata is ``metadata``."""
    return checked_version((metadata or {}).get(METADATA_KEY), where)


def with_version(metadata: dict[bytes, bytes] | None = None) -> dict[bytes, bytes]:
    """``metadata`` with this shasweep's format version (what every Parquet file it writes carries)."""
    return {**(metadata or {}), METADATA_KEY: str(FORMAT_VERSION).encode()}
