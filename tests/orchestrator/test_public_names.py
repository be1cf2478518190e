"""One name, one thing: the public top-level classes and functions of ``orchestrator/``, listed per
package, and no name defined by two modules (``Comparison`` once meant a ratio's interval and two
sweeps side by side, used together in one function; ``to_markdown`` was four different documents).

A name may be defined twice only where the table below says why. Names starting with ``_``, names a
module imports, and methods do not count.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "orchestrator"

# name -> why two modules define it on purpose
DELIBERATE: dict[str, str] = {
    "main": "a program's entry point, the name a console script and `python -m` call: `cli.main` for "
            "shasweep, `worker.bench_spawn` for the launch helper the worker runs as its own program",
    "pytest_addoption": "a pytest hook: pytest calls every plugin's by this name (suitekit's lockstep plugin "
                        "and its plugin that selects the cases a suite runs apart)",
}


def public_names(package: Path = PACKAGE) -> dict[str, dict[str, list[str]]]:
    """package (``cli``, ``worker.protocols``, a top-level module) -> name -> the modules defining it."""
    found: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts)
        group = ".".join(path.relative_to(package).parent.parts) or path.stem
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) \
                    and not node.name.startswith("_"):
                found[group][node.name].append(module)
    return found


def collisions(package: Path = PACKAGE) -> dict[str, list[str]]:
    """Every name more than one module defines, with those modules; the deliberate ones left out."""
    modules: dict[str, list[str]] = defaultdict(list)
    for names in public_names(package).values():
        for name, where in names.items():
            modules[name] += where
    return {name: where for name, where in sorted(modules.items())
            if len(where) > 1 and name not in DELIBERATE}


def test_no_two_modules_define_one_public_name() -> None:
    found = collisions()
    assert found == {}, "give each a name for its role (or add it to DELIBERATE, saying why): " + "; ".join(
        f"{name} in {', '.join(where)}" for name, where in found.items())


def test_every_deliberate_twin_still_exists() -> None:
    """An exception that no longer applies is removed, so the table lists only real ones."""
    counts: dict[str, int] = defaultdict(int)
    for names in public_names().values():
        for name, where in names.items():
            counts[name] += len(where)
    assert {name for name in DELIBERATE if counts[name] < 2} == set()


def test_a_twin_is_caught_across_packages_and_within_one(tmp_path: Path) -> None:
    """The checker itself: a class and a function of one name in two packages, two functions of one
    name in two modules of one package; private names, methods and imports do not count."""
    fake = tmp_path / "orchestrator"
    for relative, source in {
        "analysis/stats.py": "class Comparison:\n    def load(self): ...\n",
        "render/compare.py": "from x import Comparison\ndef Comparison(): ...\ndef _private(): ...\n",
        "render/history.py": "def to_markdown(): ...\ndef load(): ...\n",
        "render/markdown.py": "def to_markdown(): ...\ndef _private(): ...\n",
    }.items():
        (fake / relative).parent.mkdir(parents=True, exist_ok=True)
        (fake / relative).write_text(source)
    assert collisions(fake) == {
        "Comparison": ["orchestrator.analysis.stats", "orchestrator.render.compare"],
        "to_markdown": ["orchestrator.render.history", "orchestrator.render.markdown"]}
    assert sorted(public_names(fake)["render"]) == ["Comparison", "load", "to_markdown"]


def test_the_session_exports_no_name_of_one_of_its_modules() -> None:
    """``orchestrator.session`` imports its names on first use; a name that is also one of its modules
    would be the module once that module was imported (the package attribute Python sets)."""
    from orchestrator import session

    modules = {path.stem for path in (PACKAGE / "session").glob("*.py")}
    assert set(session.__all__) & modules == set()
    for name in session.__all__:
        assert getattr(session, name) is not None
