"""The orchestrator's imports run with the flow of a sweep.

``ALLOWED`` is the rule, stated once: docs/design.md ("Import rules") quotes it, checked here, and
the package docstrings point there. Every module under ``orchestrator/`` is parsed (imports inside
functions and ``TYPE_CHECKING`` blocks count too) and each import of another orchestrator group must
be allowed by ``ALLOWED``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "orchestrator"

# group -> the groups it may import (besides itself). A group is a subpackage or a top-level module.
BASE = {"capabilities", "errors"}  # what every group of the orchestrator's own process may import
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "capabilities": set(),
    "display": set(),  # numbers and lines for a terminal: the standard library only
    "printable": set(),  # text from outside made safe to print or write: the standard library only
    "contract": BASE,
    "spec": BASE,
    "store": {"spec", "contract"} | BASE,
    "worker": {"store", "contract"} | BASE,
    "plan": {"spec", "store", "contract"} | BASE,
    "dashboard": {"contract"} | BASE,
    "dispatch": {"plan", "worker", "store", "spec", "analysis", "dashboard", "contract", "display",
                 "printable"} | BASE,
    "analysis": {"store", "spec", "contract"} | BASE,  # and MODULE_EXCEPTIONS
    # renders the models it is given: loads nothing
    "render": {"analysis", "spec", "contract", "display", "printable"} | BASE,
    "session": {"spec", "plan", "dispatch", "worker", "store", "analysis", "render", "dashboard",
                "contract", "display", "printable"} | BASE,
    # parses arguments, calls session, prints what it returns: never store, analysis or render itself
    "cli": {"session", "spec", "plan", "dispatch", "worker", "dashboard", "contract", "display",
            "printable"} | BASE,
    "benchkit": set(),  # a bench's own helper: the standard library only
    "suitekit": {"benchkit"},  # inside a suite's bench process: the standard library, pytest, pyperf
    "__init__": set(),
}
# group -> single modules of another group it may import besides ALLOWED.
MODULE_EXCEPTIONS: dict[str, set[str]] = {
    "analysis": {"orchestrator.worker.run_audit"},  # the worker's per-run audit, for rows stored without it
}
FORBIDDEN_PACKAGES = ("envruntime",)  # the two packages share only the run protocol
DESIGN = ROOT / "docs" / "design.md"
DESIGN_TABLE = "| orchestrator group | may import |"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def group_of(module: str) -> str | None:
    """``orchestrator.worker.stream`` -> ``worker``; ``orchestrator`` -> ``__init__``."""
    parts = module.split(".")
    if parts[0] != "orchestrator":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in ``path``, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            # ``from orchestrator import stats`` imports the submodule: count each name as a module
            found += [(node.lineno, f"{base}.{alias.name}" if base == "orchestrator" else base)
                      for alias in node.names]
    return found


def violations(package: Path = PACKAGE) -> list[str]:
    wrong = []
    for path in sorted(package.rglob("*.py")):
        source = group_of(module_name(path))
        for line, target in imported_modules(path):
            where = f"{path.relative_to(ROOT)}:{line}"
            if target.split(".")[0] in FORBIDDEN_PACKAGES:
                wrong.append(f"{where}: {source} imports {target} (the packages share only the protocol)")
                continue
            dest = group_of(target)
            if dest is None or dest == source:
                continue
            if dest == "cli":
                wrong.append(f"{where}: {source} imports {target} (nothing imports cli)")
            elif dest not in ALLOWED[source] and target not in MODULE_EXCEPTIONS.get(source, set()):
                wrong.append(f"{where}: {source} imports {target} ({source} may import "
                             f"{', '.join(sorted(ALLOWED[source])) or 'nothing'})")
    return wrong


def quoted_table(text: str) -> dict[str, set[str]]:
    """The design's table: group -> the groups listed in its second column ("nothing": none)."""
    lines = text[text.index(DESIGN_TABLE):].splitlines()[2:]  # below the header and its rule
    body = lines[:next((i for i, line in enumerate(lines) if not line.startswith("|")), len(lines))]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in body]
    return {row[0].strip("`"): set() if row[1] == "nothing" else {g.strip() for g in row[1].split(",")}
            for row in rows}


def test_the_design_quotes_this_table() -> None:
    """docs/design.md's table lists, group by group, exactly what ``ALLOWED`` allows, and names every
    module exception."""
    text = DESIGN.read_text(encoding="utf-8")
    quoted = quoted_table(text)
    assert quoted == ALLOWED, {g: (quoted.get(g), ALLOWED.get(g)) for g in {*quoted, *ALLOWED}
                               if quoted.get(g) != ALLOWED.get(g)}
    for modules in MODULE_EXCEPTIONS.values():
        assert all(m.removeprefix("orchestrator.") in text for m in modules)


def test_a_drifted_quote_is_caught() -> None:
    text = DESIGN.read_text(encoding="utf-8")
    drifted = text.replace("| `render` | analysis, spec,", "| `render` | analysis, store, spec,")
    assert drifted != text
    assert quoted_table(drifted)["render"] == ALLOWED["render"] | {"store"}


def test_only_the_command_line_parses_arguments() -> None:
    """Below ``cli`` a sweep is driven by typed options (``session``), never an ``argparse.Namespace``
    (``benchkit`` and ``suitekit`` run inside a bench and parse that bench's own arguments)."""
    users = [str(path.relative_to(ROOT)) for path in sorted(PACKAGE.rglob("*.py"))
             if group_of(module_name(path)) not in ("cli", "benchkit", "suitekit")
             and any(target == "argparse" for _, target in imported_modules(path))]
    assert users == []


def test_every_group_is_in_the_table() -> None:
    groups = {group_of(module_name(p)) for p in PACKAGE.rglob("*.py")}
    assert groups <= set(ALLOWED), f"add these groups to ALLOWED and docs/design.md: {groups - set(ALLOWED)}"


def test_the_read_side_has_one_route() -> None:
    """``cli -> session -> {store, analysis} -> render``: the command line reaches results only through
    the session, and render renders the models it is given, loading nothing."""
    assert not ALLOWED["cli"] & {"store", "analysis", "render"}
    assert "store" not in ALLOWED["render"]
    assert {"store", "analysis", "render"} <= ALLOWED["session"]


def test_imports_run_with_the_flow() -> None:
    assert violations() == []


def test_a_wrong_import_is_caught(tmp_path: Path) -> None:
    """The checker itself: a store module importing the worker is reported with its file and line."""
    fake = tmp_path / "orchestrator"
    (fake / "store").mkdir(parents=True)
    (fake / "store" / "bad.py").write_text("from orchestrator.worker.stream import follow_lines\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = violations(fake)
    finally:
        ROOT = saved
    assert found == ["orchestrator/store/bad.py:1: store imports orchestrator.worker.stream "
                     "(store may import capabilities, contract, errors, spec)"]


@pytest.mark.parametrize("path", sorted(PACKAGE.rglob("__init__.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_subpackage_says_what_it_owns(path: Path) -> None:
    assert ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))), f"{path} needs a docstring"
