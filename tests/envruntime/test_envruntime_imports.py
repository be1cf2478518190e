"""Imports inside envruntime run one way, and the direct variants never reach manager code.

Every module under ``envruntime/`` is parsed, not imported: each ``import`` / ``from ... import``
anywhere in it (inside functions and ``TYPE_CHECKING`` blocks too; relative imports resolved)
counts. A module belongs to the group named by its first package under ``envruntime`` (the root
``__init__`` is the group ``envruntime``), and every envruntime module it imports must be allowed
by ``ALLOWED``. ``importlib.import_module`` calls (the sim and task registries) are not imports here.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "envruntime"

# group -> the envruntime modules (and the packages below them) its modules may import, besides
# their own group. A task package may import itself and ``tasks.common``, not another task.
ALLOWED: dict[str, tuple[str, ...]] = {
    "envruntime": (),
    "kernels": (),
    "backends": ("envruntime.kernels",),
    "robots": (),
    "managers": ("envruntime.kernels", "envruntime.backends"),
    "envs": ("envruntime.backends", "envruntime.kernels", "envruntime.managers"),
    "tasks": ("envruntime.envs", "envruntime.managers", "envruntime.kernels", "envruntime.backends",
              "envruntime.robots", "envruntime.tasks.common"),
    "collect": ("envruntime.envs.vecenv",),
    "bench": ("envruntime",),
}
# What a direct variant must not reach, directly or transitively.
MANAGER_CODE = ("envruntime.managers", "envruntime.envs.manager_based")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {
    _module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py")) if "__pycache__" not in p.parts
}
# the direct variants: every task's direct.py, the velocity direct base, the direct base and the
# VecEnv protocol they build on
DIRECT_MODULES: tuple[str, ...] = (
    *sorted(m for m in MODULES if m.startswith("envruntime.tasks.") and m.endswith(".direct")),
    "envruntime.tasks.common.velocity_direct",
    "envruntime.envs.direct_base",
    "envruntime.envs.vecenv",
)


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1)]


def _group(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


@cache
def imports_of(module: str) -> frozenset[str]:
    """Every module ``module`` imports (any package), relative imports resolved; ``from p import x``
    counts as ``p.x`` where that is a module of envruntime, else as ``p``."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            for alias in node.names:
                found.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in MODULES else source)
    return frozenset(found)


def envruntime_imports(module: str) -> list[str]:
    return sorted(m for m in imports_of(module) if _within(m, "envruntime"))


def allowed(module: str, target: str) -> bool:
    """Whether ``module`` may import ``target`` (both envruntime modules)."""
    group = _group(module)
    own = "envruntime" if group == "envruntime" else f"envruntime.{group}"
    if group == "tasks":  # a task package itself, not its sibling tasks (the registry: all of tasks)
        own = ".".join(module.split(".")[:3])
    return _within(target, own) or any(_within(target, prefix) for prefix in ALLOWED[group])


def reach(root: str) -> dict[str, str]:
    """The envruntime modules importing ``root`` loads, each mapped to the module that brought it in.

    Followed through every import and the packages above each imported module (their ``__init__``
    runs first), except the packages above ``root`` itself: those already ran when ``root`` is
    imported through them (a task package's ``__init__`` is the factory that imports both variants).
    """
    skip = {root, *_ancestors(root)}
    parents: dict[str, str] = {}
    todo = [root]
    while todo:
        module = todo.pop()
        for target in envruntime_imports(module):
            for dep in (target, *_ancestors(target)):
                if dep not in skip and dep not in parents and dep in MODULES:
                    parents[dep] = module
                    todo.append(dep)
    return parents


def _chain(parents: dict[str, str], root: str, module: str) -> str:
    chain = [module]
    while chain[-1] != root:
        chain.append(parents[chain[-1]])
    return " -> ".join(reversed(chain))


def test_every_module_is_in_a_group() -> None:
    assert len(MODULES) > 50
    unknown = sorted(m for m in MODULES if _group(m) not in ALLOWED)
    assert not unknown, f"modules in no group of ALLOWED: {unknown}"


def test_every_envruntime_import_names_an_existing_module() -> None:
    stale = [f"{m} imports {t}" for m in MODULES for t in envruntime_imports(m) if t not in MODULES]
    assert not stale, "imports of modules that do not exist:\n" + "\n".join(stale)


def test_imports_run_the_allowed_directions() -> None:
    wrong = [
        f"{m} ({_group(m)}) imports {t}; {_group(m)} may import {', '.join(ALLOWED[_group(m)]) or 'nothing'}"
        f" besides itself"
        for m in MODULES for t in envruntime_imports(m) if not allowed(m, t)
    ]
    assert not wrong, "imports against the allowed directions:\n" + "\n".join(wrong)


def test_envruntime_never_imports_orchestrator() -> None:
    wrong = [f"{m} imports {t}" for m in MODULES for t in imports_of(m) if _within(t, "orchestrator")]
    assert not wrong, "\n".join(wrong)


def test_the_direct_variants_are_found() -> None:
    tasks = {"go2_joystick_flat", "g1_walk_flat", "g1_motion_tracking"}
    assert {f"envruntime.tasks.{t}.direct" for t in tasks} <= set(DIRECT_MODULES)
    assert all(m in MODULES for m in DIRECT_MODULES)


@pytest.mark.parametrize("module", DIRECT_MODULES)
def test_a_direct_variant_never_reaches_manager_code(module: str) -> None:
    parents = reach(module)
    bad = [_chain(parents, module, m) for m in sorted(parents) if any(_within(m, p) for p in MANAGER_CODE)]
    assert not bad, "reaches manager code:\n" + "\n".join(bad)
