"""The interpreter that runs the benches: the sweep's ``python`` key, a side's ``sides.<label>.python``
and ``--python`` (docs/sweep-yaml.md, "The interpreter").

A value names an interpreter (an executable file) or a virtual environment (a directory: its
``bin/python``); a relative path is taken from the sweep file's directory, and a bare name that is no
file there is looked up on ``PATH`` (``python3.12``). The spec keeps the absolute path, not resolving
links (a virtual environment's ``bin/python`` is a link to the interpreter it was made from, and
what makes it that environment is where the link lies). Unset, ``{python}`` is the interpreter
shasweep's bench worker runs on.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from orchestrator.errors import SpecError


def resolve_python(value: str, key: str, base: Path) -> str:
    """The absolute path of the interpreter ``value`` names (see the module); ``SpecError`` naming
    ``key`` when there is none."""
    if not value.strip():
        raise SpecError("must name an interpreter or a virtual environment, got ''", key)
    path = Path(value).expanduser()
    if not path.is_absolute():
        here = base / path
        found = shutil.which(value) if os.sep not in value and not here.exists() else None
        path = Path(found) if found else here
    path = Path(os.path.abspath(path))
    if path.is_dir():
        path = path / "bin" / "python"
        if not path.exists():
            raise SpecError(f"{value!r} is a directory without bin/python: not a virtual environment", key)
    check_python(str(path), key)
    return str(path)


def check_python(path: str, key: str) -> None:
    """``path`` must be an absolute path to an executable file; ``SpecError`` naming ``key``."""
    if not os.path.isabs(path):
        raise SpecError(f"{path!r} is not an absolute path", key)
    if not os.path.exists(path):
        raise SpecError(f"{path!r} does not exist", key)
    if not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise SpecError(f"{path!r} is not an executable file", key)
