"""Proving from outside the bench where its code came from (the sweep's ``audit_modules``).

Which modules (``modules_to_audit``): the sweep's ``audit_modules``, each of which the bench must
import; unset, for a protocol whose bench does not report what it loaded (json, time), every
top-level package of the worktree's ``pythonpath`` directories, checked where the bench imported it
(a copy beside the bench that shadows the SHA's package fails the run); ``[]``: none.

Before the bench starts, a generated ``sitecustomize`` goes first on its ``PYTHONPATH``. Every
Python process of the bench then runs it at start-up: it chains to the ``sitecustomize`` it shadows
and, at exit, appends one JSON line ``{module: file}`` for each listed module it imported to a side
file the bench is never told about. It is the one piece of ours inside a bench process, and only
where modules are audited. The worker reads that file after the run (``read_modules``); the run
audit (``module_reasons``, called by ``worker.run_audit``) fails a run when a required module was
never imported or any recorded module came from outside the SHA's worktree. A bench that lies in
its own output cannot change what its interpreter imported.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from orchestrator.capabilities import Capability, describe
from orchestrator.contract import PlannedRun

MODULES_VAR = "SHASWEEP_AUDIT_MODULES"  # comma-separated module names
SIDE_FILE_VAR = "SHASWEEP_AUDIT_FILE"  # where each process appends its line
MAX_SIDE_FILE_BYTES = 4 * 2**20

SITECUSTOMIZE = '''"""Written by shasweep (orchestrator/worker/module_audit.py): where modules came from."""
import atexit
import json
import os
import sys


def _shasweep_record():
    names = [n for n in os.environ.get("SHASWEEP_AUDIT_MODULES", "").split(",") if n]
    seen = {}
    for name in names:
        module = sys.modules.get(name)
        if module is not None:
            where = getattr(module, "__file__", None) or next(iter(getattr(module, "__path__", [])), None)
            seen[name] = os.path.realpath(where) if where else None
    try:
        with open(os.environ["SHASWEEP_AUDIT_FILE"], "a") as side:
            side.write(json.dumps({"pid": os.getpid(), "modules": seen}) + "\\n")
    except (KeyError, OSError):
        pass


atexit.register(_shasweep_record)


def _shasweep_chain():
    """Run the sitecustomize this one shadows, as Python would have."""
    here = os.path.dirname(os.path.realpath(__file__))
    for entry in sys.path:
        candidate = os.path.join(entry or ".", "sitecustomize.py")
        if os.path.realpath(entry or ".") != here and os.path.isfile(candidate):
            with open(candidate) as f:
                code = compile(f.read(), candidate, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": candidate})
            return


_shasweep_chain()
'''


def modules_to_audit(run: PlannedRun, pythonpath: Sequence[str]) -> tuple[str, ...]:
    """The modules whose origin the worker records for ``run`` (see the module docstring);
    ``pythonpath``: the run's absolute worktree directories."""
    if run.audit_modules is not None:
        return tuple(run.audit_modules)
    if describe(run.protocol, run.json_mapping).has(Capability.AUDIT_FIELDS):
        return ()
    return worktree_packages(pythonpath)


def worktree_packages(directories: Sequence[str]) -> tuple[str, ...]:
    """Top-level packages (a directory with ``__init__.py`` and a module's name) in ``directories``."""
    found: dict[str, None] = {}
    for directory in directories:
        for entry in sorted(Path(directory).iterdir()):
            if entry.name.isidentifier() and (entry / "__init__.py").is_file():
                found[entry.name] = None
    return tuple(found)


def install(log_dir: Path, modules: tuple[str, ...], env: dict[str, str]) -> Path:
    """Write the sitecustomize under ``log_dir``, put it first on ``env``'s PYTHONPATH, and return the
    side file (emptied) the bench's processes will append to."""
    site = log_dir / "audit_site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    side_file = log_dir / "audit_modules.jsonl"
    side_file.unlink(missing_ok=True)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
    env[MODULES_VAR] = ",".join(modules)
    env[SIDE_FILE_VAR] = str(side_file)
    return side_file


def read_modules(side_file: Path, modules: tuple[str, ...]) -> dict[str, object]:
    """``{module: file}`` over every process of the bench: the one file it came from, a sorted list
    when processes disagree, None when no process imported it."""
    found: dict[str, set[str]] = {name: set() for name in modules}
    try:
        text = side_file.read_bytes()[:MAX_SIDE_FILE_BYTES].decode("utf-8", errors="replace")
    except FileNotFoundError:
        text = ""
    for line in text.splitlines():
        try:
            seen = json.loads(line).get("modules")
        except (ValueError, AttributeError):
            continue
        for name, where in (seen if isinstance(seen, dict) else {}).items():
            if name in found and isinstance(where, str):
                found[name].add(where)
    return {name: (sorted(files) if len(files) > 1 else next(iter(files))) if files else None
            for name, files in found.items()}


def module_reasons(run: Mapping[str, Any], modules: Sequence[str]) -> list[str]:
    """Why ``run`` fails the module audit: a module of ``modules`` (required) never imported, or any
    module recorded in its ``audit_modules`` column imported from outside its worktree; empty when it
    passes (or nothing was asked or recorded)."""
    worktree = run.get("worktree")
    try:
        recorded = json.loads(run.get("audit_modules"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        recorded = None
    if not modules and recorded is None:
        return []
    if not isinstance(recorded, dict) or not isinstance(worktree, str):
        return ["audit_modules: where the bench imported its modules from was not recorded"]
    reasons = []
    for name in dict.fromkeys([*modules, *recorded]):
        files = recorded.get(name)
        if files is None:
            if name in modules:
                reasons.append(f"module {name} was never imported by the bench")
            continue
        files = files if isinstance(files, list) else [files]
        outside = [f for f in files if not _inside(str(f), worktree)]
        if outside:
            reasons.append(f"module {name} was imported from {', '.join(outside)}, outside the SHA's "
                           f"worktree {worktree}")
    return reasons


def _inside(path: str, root: str) -> bool:
    return os.path.commonpath([os.path.abspath(path), os.path.abspath(root)]) == os.path.abspath(root)
