"""Find the benchmark suite of a commit without a sweep YAML (``shasweep ci``, docs/ci.md).

The commit's files are read with git (``ls-tree``, ``cat-file``), never the working tree, and only
as text to search: nothing of the repository is imported or run here. What counts as a suite:

- a ``shasweep.yaml`` at the top (or ``tool.shasweep.sweep``): a sweep the project wrote itself;
- pytest-benchmark tests: ``test_*.py`` / ``*_test.py`` files with a test taking the ``benchmark``
  fixture, and pytest-codspeed's form (``@pytest.mark.benchmark``, ``pytestmark = ...``);
- pyperf scripts: files that make a ``pyperf.Runner``;
- benches written with ``orchestrator.benchkit`` (``Bench(...)``);
- Google Benchmark binaries named in ``tool.shasweep.gbench`` (built by ``tool.shasweep.prepare``).

When several kinds are present the first of that list is run and the others are named;
``tool.shasweep.suite`` chooses.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from orchestrator.errors import InvalidInputError
from orchestrator.spec.ci_config import SUITE_KINDS, CiConfig

SWEEP_FILE = "shasweep.yaml"
LOOKED_FOR = (f"a {SWEEP_FILE}, pytest-benchmark or pytest-codspeed tests (test_*.py or *_test.py with a "
              "test taking the benchmark fixture or marked pytest.mark.benchmark), pyperf scripts "
              "(pyperf.Runner), "
              "benches using orchestrator.benchkit's Bench, Google Benchmark binaries (tool.shasweep.gbench)")
MAX_FILE_BYTES = 2 << 20  # a larger file is not read (generated code, data)
_DESCRIBED = {"pytest-benchmark": "pytest-benchmark tests", "pyperf": "pyperf scripts",
              "benchkit": "benchkit benches", "gbench": "Google Benchmark binaries"}
_SKIPPED_DIRS = {"site-packages", "node_modules", "__pycache__"}
_TEST_FILE = re.compile(r"(test_[^/]*|[^/]*_test)\.py\Z")
_TEST_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+(test\w*)[ \t]*\(([^)]*)\)", re.MULTILINE)
_FIXTURE = re.compile(r"\bbenchmark\b")
_PARAMETRIZE = re.compile(r"\bparametrize\(\s*(?:'[^']*'|\"[^\"]*\")\s*,\s*[\[(]")
_MARKER = re.compile(r"\bmark\.(?:codspeed_)?benchmark\b")
_MODULE_MARKER = re.compile(r"^pytestmark\s*=.*\bmark\.(?:codspeed_)?benchmark\b", re.MULTILINE)
_PYPERF = re.compile(r"^\s*(?:import pyperf\b|from pyperf import)", re.MULTILINE)
_RUNNER = re.compile(r"\bRunner\s*\(")
_BENCHKIT = re.compile(r"^\s*(?:from orchestrator\.benchkit import|import orchestrator\.benchkit)",
                       re.MULTILINE)
_BENCH_CALL = re.compile(r"\bBench\s*\(")


@dataclass(frozen=True)
class FoundSuite:
    """A suite found in a commit: its ``kind`` (``sweep`` or one of ``SUITE_KINDS``), the paths its
    command runs (test paths, scripts, bench files, binaries, or the sweep file) and the benchmarks
    seen in them (a parametrized test counted once per item of its literal lists: about its cases)."""

    kind: str
    paths: tuple[str, ...]
    benchmarks: int
    marker_only: tuple[str, ...] = ()  # pytest files whose benchmarks are codspeed markers, no fixture
    also_found: tuple[str, ...] = ()  # other kinds of suite present, not run
    in_tree: bool = True  # its paths are the commit's files (not a sweep file's, not binaries a build makes)
    src_layout: bool = False  # the commit has a top-level src/ (its packages are imported from there)

    def describe(self) -> str:
        """``pytest-benchmark tests in benchmarks (about 15 benchmarks)``, for messages."""
        if self.kind == "sweep":
            return f"the sweep {self.paths[0]}"
        what = _DESCRIBED[self.kind]
        return f"{what} in {', '.join(self.paths)} (about {self.benchmarks} benchmarks)"


def find_suite(repo: str, sha: str, config: CiConfig) -> FoundSuite:
    """The suite of commit ``sha`` of ``repo`` as ``config`` narrows it; ``InvalidInputError`` (exit 2)
    saying what was looked for, and where, when there is none."""
    names = _tree(repo, sha, config.paths)
    if config.sweep is not None or (SWEEP_FILE in names and config.suite is None):
        sweep = config.sweep or SWEEP_FILE
        if sweep not in names:
            raise InvalidInputError(f"{sweep!r} is not a file of commit {sha[:12]}", "tool.shasweep.sweep")
        return FoundSuite("sweep", (sweep,), 0, in_tree=False)
    texts = _texts(repo, sha, [n for n in names if n.endswith(".py") and not _skipped(n)])
    found = [suite for suite in (_pytest_suite(texts, config), _pyperf_suite(texts), _benchkit_suite(texts),
                                 _gbench_suite(config)) if suite is not None]
    if config.suite is not None:
        found = [suite for suite in found if suite.kind == config.suite]
    if not found:
        where = f" under {', '.join(config.paths)}" if config.paths else ""
        kinds = config.suite or ", ".join(SUITE_KINDS)
        raise InvalidInputError(f"no benchmark suite ({kinds}) found in commit {sha[:12]}{where}; looked "
                                f"for {LOOKED_FOR}")
    src = _git(repo, "cat-file", "-t", f"{sha}:src", check=False).strip() == b"tree"
    return replace(found[0], also_found=tuple(suite.describe() for suite in found[1:]), src_layout=src)


def present_at(found: FoundSuite, repo: str, sha: str) -> tuple[str, ...]:
    """The paths of ``found`` commit ``sha`` has (the merge base may predate part of a suite). A
    sweep file and Google Benchmark binaries (built in each checkout) are the head's: all kept."""
    if not found.in_tree:
        return found.paths
    names = set(_tree(repo, sha, ()))
    return tuple(path for path in found.paths
                 if path in names or any(name.startswith(f"{path.rstrip('/')}/") for name in names))


def _pytest_suite(texts: dict[str, str], config: CiConfig) -> FoundSuite | None:
    files: dict[str, int] = {}
    marker_only = []
    for name, text in texts.items():
        if not _TEST_FILE.search(name):
            continue
        tests = list(_TEST_DEF.finditer(text))
        fixture = sum(_parametrized(text, tests, i) for i, test in enumerate(tests)
                      if _FIXTURE.search(test[2]))
        markers = len(tests) if _MODULE_MARKER.search(text) else len(_MARKER.findall(text))
        if fixture or markers:
            files[name] = max(fixture, markers)
            if not fixture:
                marker_only.append(name)
    if not files:
        return None
    paths = config.paths or _top_directories(list(files))
    return FoundSuite("pytest-benchmark", tuple(paths), sum(files.values()), tuple(marker_only))


def _parametrized(text: str, tests: list[re.Match[str]], index: int) -> int:
    """How many cases test ``index`` is: the product of the lengths of the literal lists its
    ``parametrize`` decorators give (1 where a list is not literal)."""
    start = tests[index - 1].end() if index else 0
    decorators = text[start:tests[index].start()].rsplit("\n\n", 1)[-1]
    cases = 1
    for call in _PARAMETRIZE.finditer(decorators):
        cases *= _items(decorators, call.end())
    return cases


def _items(text: str, start: int) -> int:
    """The top-level items of the list or tuple literal opening at ``text[start - 1]`` (1 if it never
    closes): commas at depth 1, outside strings, plus one unless the last is trailing."""
    depth, quote, commas, last = 1, "", 0, ""
    for char in text[start:]:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return commas + (last not in (",", ""))
        elif char == "," and depth == 1:
            commas += 1
        if not char.isspace():
            last = char
    return 1


def _pyperf_suite(texts: dict[str, str]) -> FoundSuite | None:
    scripts = {name: len(re.findall(r"\.(?:bench_\w+|timeit)\s*\(", text)) for name, text in texts.items()
               if _PYPERF.search(text) and _RUNNER.search(text) and not _TEST_FILE.search(name)}
    return FoundSuite("pyperf", tuple(scripts), max(sum(scripts.values()), len(scripts))) if scripts else None


def _benchkit_suite(texts: dict[str, str]) -> FoundSuite | None:
    benches = [name for name, text in texts.items() if _BENCHKIT.search(text) and _BENCH_CALL.search(text)]
    return FoundSuite("benchkit", tuple(benches), len(benches)) if benches else None


def _gbench_suite(config: CiConfig) -> FoundSuite | None:
    return FoundSuite("gbench", config.gbench, len(config.gbench), in_tree=False) if config.gbench else None


def _top_directories(files: list[str]) -> list[str]:
    """The fewest paths that hold ``files``: their directories, less those inside another; a file at
    the top of the repository is named itself."""
    dirs = sorted({str(PurePosixPath(name).parent) for name in files})
    nested = [d for d in dirs if any(d.startswith(f"{other}/") for other in dirs if other != ".")]
    tops = [d for d in dirs if d != "." and d not in nested]
    return tops + sorted(name for name in files if "/" not in name)


def _skipped(name: str) -> bool:
    parts = name.split("/")
    return any(part.startswith(".") or part in _SKIPPED_DIRS for part in parts[:-1])


def _git(repo: str, *args: str, data: bytes | None = None, check: bool = True) -> bytes:
    """git's output; unless ``check`` is off, a failure is an input error naming the command."""
    done = subprocess.run(["git", "-C", repo, *args], input=data, capture_output=True, check=False)
    if done.returncode != 0 and check:
        raise InvalidInputError(f"git {args[0]} failed in {repo}: "
                                f"{done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def _tree(repo: str, sha: str, paths: tuple[str, ...]) -> list[str]:
    """The file names of commit ``sha`` (under ``paths`` when given); a named path the commit lacks
    is an input error naming ``tool.shasweep.paths``."""
    names = [n for n in _git(repo, "ls-tree", "-r", "-z", "--name-only", sha, "--", *paths)
             .decode(errors="replace").split("\0") if n]
    for path in paths:
        clean = path.strip("/")
        if not any(n == clean or n.startswith(f"{clean}/") for n in names):
            raise InvalidInputError(f"{path!r} is no file or directory of commit {sha[:12]}",
                                    "tool.shasweep.paths")
    return names


def _texts(repo: str, sha: str, names: list[str]) -> dict[str, str]:
    """The text of each file of ``names`` at ``sha`` no larger than ``MAX_FILE_BYTES``."""
    names = [n for n in names if "\n" not in n]
    if not names:
        return {}
    specs = "".join(f"{sha}:{name}\n" for name in names).encode()
    checked = _git(repo, "cat-file", "--batch-check=%(objecttype) %(objectsize)", data=specs)
    small = [name for name, line in zip(names, checked.decode().splitlines(), strict=False)
             if line.startswith("blob ") and int(line.split()[1]) <= MAX_FILE_BYTES]
    output = _git(repo, "cat-file", "--batch", data="".join(f"{sha}:{name}\n" for name in small).encode())
    texts, offset = {}, 0
    for name in small:
        header_end = output.index(b"\n", offset)
        size = int(output[offset:header_end].split()[2])
        texts[name] = output[header_end + 1:header_end + 1 + size].decode(errors="replace")
        offset = header_end + 1 + size + 1
    return texts
