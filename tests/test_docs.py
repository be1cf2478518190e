"""The docs cannot drift from the code: every repository path, module, link and environment variable
that README.md and docs/*.md name exists; every ``shasweep`` command they show parses with the real
parser (and its sweep file loads with its overrides); docs/cli.md lists every verb and flag with the
parser's own usage; docs/sweep-yaml.md every key of the sweep YAML with its default."""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import fnmatch
import io
import itertools
import os
import re
import shlex
import typing
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
import yaml
from omegaconf import MISSING, DictConfig, OmegaConf

from orchestrator.cli.main import _take_late_overrides, build_parser
from orchestrator.spec import interpreters, schema
from orchestrator.spec.bisect_sweep import load_bisect_spec
from orchestrator.spec.load import load_spec, spec_from_config
from orchestrator.worker import machine_lock

ROOT = Path(__file__).resolve().parents[1]
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_BYTES = 12 * 1024

# Top-level entries of the repository that a doc may name by their full path.
TOP = ("orchestrator", "envruntime", "benchmarks", "sweeps", "examples", "tests", "docs", ".ci")
FULL_PATH = re.compile(r"(?<![\w./$~-])((?:" + "|".join(map(re.escape, TOP)) + r")/[\w./<>*-]*)")
# A short path in inline code: relative to some package folder (``worker/module_audit.py``,
# ``tasks/<task>/``) or a bare file name (``parallel.py``).
FILE_SUFFIXES = (".py", ".md", ".yaml", ".yml", ".sh", ".xml", ".toml", ".txt", ".npz")
SOURCE_SUFFIXES = (".py", ".md", ".yaml", ".yml", ".sh", ".xml", ".toml")  # a bare name is a repo file
SHORT_PATH = re.compile(r"[\w.<>*-]+(?:/[\w.<>*-]+)*/?\Z")
# Dotted modules: ``orchestrator.x.y``, ``envruntime.x.y`` or an orchestrator group's ``worker.x``.
GROUPS = ("spec", "plan", "dispatch", "worker", "store", "analysis", "render", "dashboard", "cli", "contract",
          "errors")
DOTTED = re.compile(r"((?:orchestrator|envruntime|" + "|".join(GROUPS) + r")(?:\.\w+)+)(?:\(.*\))?\Z")
ENV_VAR = re.compile(r"\b((?:SHASWEEP|ENVRUNTIME)_[A-Z_]*[A-Z])\b")
SHELL_INFOS = {"bash", "sh", "shell", "console"}
FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")
LINK = re.compile(r"(?<!!)\[[^\]]+\]\(([^)\s]+)\)")
IGNORED_DIRS = {".git", "results", "__pycache__", ".venv", ".pytest_cache", ".ruff_cache"}


@dataclass(frozen=True)
class Block:
    info: str
    body: str


@dataclass(frozen=True)
class Doc:
    """A Markdown file split into prose (text outside fenced blocks), fenced blocks and inline code."""

    path: Path
    text: str
    prose: str
    blocks: tuple[Block, ...]
    spans: tuple[str, ...]

    @property
    def name(self) -> str:
        return str(self.path.relative_to(ROOT))


def parse_doc(path: Path) -> Doc:
    prose, blocks, body, fence = [], [], [], None
    info = ""
    for line in path.read_text().splitlines():
        match = FENCE.match(line.strip())
        if fence is None and match:
            fence, info, body = match.group(1), match.group(2), []
        elif fence is not None and line.strip().startswith(fence):
            blocks.append(Block(info, "\n".join(body)))
            fence = None
        elif fence is not None:
            body.append(line)
        else:
            prose.append(line)
    assert fence is None, f"{path.name}: a fenced block is never closed"
    text = "\n".join(prose)
    spans = [" ".join(m.group(2).split()) for m in re.finditer(r"(`+)(.+?)\1", text, re.DOTALL)]
    return Doc(path, path.read_text(), text, tuple(blocks), tuple(spans))


@cache
def docs() -> tuple[Doc, ...]:
    return tuple(parse_doc(path) for path in DOC_FILES)


def doc(name: str) -> Doc:
    return next(d for d in docs() if d.name == name)


@cache
def repo_paths() -> frozenset[str]:
    """Every file and folder of the working tree (generated and cache folders left out)."""
    found = set()
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in IGNORED_DIRS and not d.endswith(".egg-info")]
        rel = Path(folder).relative_to(ROOT)
        found.update((rel / name).as_posix() for name in (*dirs, *files))
    return frozenset(found)


def as_glob(path: str) -> str:
    return re.sub(r"<[^>]*>", "*", path.rstrip("/"))


def exists_at_root(path: str) -> bool:
    pattern = as_glob(path)
    return any(fnmatch.fnmatchcase(p, pattern) for p in repo_paths()) if "*" in pattern \
        else pattern in repo_paths()


def exists_anywhere(path: str) -> bool:
    """A short path names the end of some repository path (``worker/module_audit.py``)."""
    pattern = as_glob(path)
    return any(fnmatch.fnmatchcase(p, pattern) or fnmatch.fnmatchcase(p, f"*/{pattern}")
               for p in repo_paths())


def short_paths(text: str) -> list[str]:
    """``text`` (an inline code span or a word of a plain block) if it is a short repository path."""
    text = text.strip().rstrip(",;:")
    if not SHORT_PATH.match(text) or text.startswith(("results/", ".")) or FULL_PATH.match(text):
        return []
    if "/" not in text.rstrip("/"):  # one word: a source file's name, or too generic (``src/``) to check
        return [text] if text.endswith(SOURCE_SUFFIXES) else []
    return [text] if text.endswith(("/", *FILE_SUFFIXES)) else []


def test_every_repository_path_the_docs_name_exists():
    missing = []
    for d in docs():
        for match in FULL_PATH.finditer(d.text):
            path = match.group(1).rstrip(".,:")
            if not exists_at_root(path):
                missing.append(f"{d.name}: {path}")
        words = [w for b in d.blocks if b.info == "text" for w in b.body.split()]
        for path in [p for text in (*d.spans, *words) for p in short_paths(text)]:
            if not exists_anywhere(path):
                missing.append(f"{d.name}: {path} (no repository path ends so)")
    assert not missing, "paths in the docs that do not exist:\n" + "\n".join(missing)


def module_file(parts: list[str]) -> tuple[Path, list[str]] | None:
    """The source file of the longest module prefix of ``parts`` and the names after it."""
    for n in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:n])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate, parts[n:]
    return None


def defines(source: Path, names: list[str]) -> bool:
    """Whether ``source`` defines ``names[0]`` at top level (and a class of it ``names[1]``)."""
    body = ast.parse(source.read_text()).body
    for name in names[:2]:
        found = None
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.name == name:
                found = node
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, ast.AnnAssign) else []
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                found = node
            if isinstance(node, ast.Import | ast.ImportFrom) and \
                    any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                found = node
        if found is None:
            return False
        if not isinstance(found, ast.ClassDef):
            return True
        body = found.body
    return True


def test_every_module_and_name_the_docs_name_exists():
    missing = []
    for d in docs():
        shell = [w for b in d.blocks if b.info in SHELL_INFOS for w in b.body.split()]
        modules = [m.group(1) for s in d.spans if not s.endswith(FILE_SUFFIXES) and (m := DOTTED.match(s))]
        modules += [m for flag, m in itertools.pairwise(shell) if flag == "-m" and DOTTED.match(m)]
        for dotted in modules:
            parts = dotted.split(".")
            if parts[0] in GROUPS:
                parts = ["orchestrator", *parts]
            found = module_file(parts)
            if found is None or (found[1] and not defines(*found)):
                missing.append(f"{d.name}: {dotted}")
    assert not missing, "modules or names in the docs that the code does not have:\n" + "\n".join(missing)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(d: Doc) -> set[str]:
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", d.prose, re.MULTILINE)}


def test_every_relative_link_resolves():
    broken = []
    for d in docs():
        for target in (m.group(1) for m in LINK.finditer(d.prose)):
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            path = (d.path.parent / file).resolve() if file else d.path
            if not path.exists():
                broken.append(f"{d.name}: {target} (no such file)")
            elif anchor and path.suffix == ".md" and anchor not in anchors(parse_doc(path)):
                broken.append(f"{d.name}: {target} (no such heading in {path.name})")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_every_section_the_code_points_to_exists():
    """A comment or docstring that sends the reader to ``docs/x.md, "Heading"`` names a heading there."""
    reference = re.compile(r"\b(README|docs/[\w-]+\.md)[,(\s]*\"([^\"]+)\"")
    headings = {d.name: [h.lower() for h in re.findall(r"^#{1,6} (.+)$", d.prose, re.MULTILINE)]
                for d in docs()}
    wrong = []
    for rel in sorted(p for p in repo_paths() if p.endswith(".py") and p != "tests/test_docs.py"):
        for file, heading in reference.findall((ROOT / rel).read_text()):
            name = "README.md" if file == "README" else file
            if not any(h.startswith(" ".join(heading.lower().split())) for h in headings.get(name, [])):
                wrong.append(f"{rel}: {file}, {heading!r}")
    assert not wrong, "references to sections that do not exist:\n" + "\n".join(wrong)


def test_every_doc_has_one_title_and_fenced_blocks_say_their_language():
    for d in docs():
        titles = re.findall(r"^# .+$", d.prose, re.MULTILINE)
        assert len(titles) == 1, f"{d.name}: one '# ' title, got {titles}"
        unlabelled = [b.body.splitlines()[:1] for b in d.blocks if not b.info]
        assert not unlabelled, f"{d.name}: fenced blocks need a language (bash, text, yaml...): {unlabelled}"


def test_every_environment_variable_the_docs_name_is_read_by_the_code():
    sources = [p for p in repo_paths() if (p.endswith((".py", ".yml", ".sh")) or p == "Dockerfile")
               and not p.startswith("tests/")]
    known = {v for p in sources for v in ENV_VAR.findall((ROOT / p).read_text())}
    unknown = sorted({f"{d.name}: {v}" for d in docs() for v in ENV_VAR.findall(d.text) if v not in known})
    assert not unknown, "environment variables no code reads:\n" + "\n".join(unknown)


def test_the_lock_path_the_docs_give_is_the_code_s(monkeypatch):
    monkeypatch.delenv(machine_lock.LOCK_VAR, raising=False)
    monkeypatch.delenv(machine_lock.LOCK_DIR_VAR, raising=False)
    assert str(machine_lock.DEFAULT_LOCK_DIR) == "/tmp/shasweep-locks"
    assert machine_lock.host_lock_path("h1").name == "h1.lock"
    wrong = [f"{d.name}: {m.group(0)}" for d in docs()
             for m in re.finditer(r"shasweep-locks/[\w<>.-]*\.lock\b", d.text) if m.group(0) !=
             "shasweep-locks/<host_id>.lock"]
    assert not wrong, "the host lock is <lock dir>/<host_id>.lock:\n" + "\n".join(wrong)


def test_the_readme_is_short_and_sets_up_in_two_commands_one_of_them_ci_s():
    """Set-up is two one-line commands, each complete on a fresh machine: install and run the smoke
    sweep, install and pass the tests (the one ``.ci/run`` runs)."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= README_MAX_BYTES, f"README.md is {len(readme.encode())} bytes"
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip().startswith("python3 -m p")]
    assert len(ci) == 1 and re.fullmatch(r"python3 -m pip install .+ && python3 -m pytest .+", ci[0]), ci
    setup = readme.split("## Set up\n")[1].split("\n## ")[0]
    shown = [body.strip() for body in re.findall(r"```bash\n(.*?)```", setup, re.DOTALL)]
    assert shown[:2] == [
        "python3 -m pip install -q -c constraints-cpu.txt -e '.[envruntime]' && "
        "shasweep run sweeps/smoke.yaml", ci[0]], shown


# --- command lines -----------------------------------------------------------------------------------


def shell_commands(body: str) -> list[list[str]]:
    """The simple commands of a shell block: continuation lines joined, comments dropped, split at
    ``&&``, ``||``, ``;`` and ``|``, leading ``VAR=value`` assignments removed."""
    commands = []
    for line in body.replace("\\\n", " ").splitlines():
        line = line.strip().removeprefix("$ ")
        if not line or line.startswith("#"):
            continue
        words, current = shlex.split(line, comments=True), []
        for word in [*words, ";"]:
            if word in {"&&", "||", ";", "|"}:
                while current and re.match(r"[A-Za-z_]\w*=", current[0]):
                    current.pop(0)
                if current:
                    commands.append(current)
                current = []
            else:
                current.append(word)
    return commands


def doc_commands() -> list[tuple[str, list[str]]]:
    return [(d.name, words) for d in docs() for b in d.blocks if b.info in SHELL_INFOS
            for words in shell_commands(b.body) if words[0] == "shasweep"]


def parse(argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed as ``shasweep`` does, without running anything; AssertionError with argparse's
    message when it is not accepted."""
    parser, err = build_parser(), io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            args, extra = parser.parse_known_args(argv)
            _take_late_overrides(parser, args, extra)
    except SystemExit as exc:
        if exc.code == 0:  # --version, --help
            return argparse.Namespace()
        raise AssertionError(err.getvalue().strip().splitlines()[-1]) from None
    return args


def test_every_shasweep_command_in_a_shell_block_parses():
    commands = doc_commands()
    assert len(commands) >= 20, "the docs show shasweep commands in bash blocks"
    failures = []
    for name, words in commands:
        try:
            parse(words[1:])
        except AssertionError as exc:
            failures.append(f"{name}: {shlex.join(words)}\n    {exc}")
    assert not failures, "commands the parser rejects:\n" + "\n".join(failures)


@pytest.fixture
def readers_interpreters(monkeypatch):
    """The docs name interpreters of the reader's machine (``~/venvs/mylib``, ``/opt/venvs/py312``):
    their blocks are checked for their keys and values, any absolute interpreter path accepted."""
    def absolute_only(path: str, key: str) -> None:
        if not os.path.isabs(path):
            raise AssertionError(f"{key}: {path!r} did not resolve to an absolute path")
    monkeypatch.setattr(interpreters, "check_python", absolute_only)


def documented_sweep(stem: str) -> DictConfig | None:
    """The sweep a docs YAML block shows under ``name: <stem>`` (a command runs it as ``<stem>.yaml``)."""
    blocks = [yaml.safe_load(b) for d in docs() for b in yaml_blocks(d.name)]
    found = [b for b in blocks if isinstance(b, dict) and b.get("name") == stem and "sides" in b]
    return OmegaConf.create(found[0]) if found else None


def test_the_sweep_files_of_the_commands_load_with_their_overrides(readers_interpreters):
    checked = 0
    for _, words in doc_commands():
        args = parse(words[1:])
        sweep = getattr(args, "sweep", None)
        if args.command not in ("run", "plan", "bisect") or sweep is None or "<" in str(sweep):
            continue
        path = ROOT / sweep
        if args.command == "bisect":
            load_bisect_spec(path, args.overrides, args.good, args.bad)
        elif path.exists():
            load_spec(path, args.overrides)
        else:
            shown = documented_sweep(Path(sweep).stem)
            assert shown is not None, f"shasweep {args.command} {sweep}: neither a file nor a docs block"
            spec_from_config(shown, args.overrides)
        checked += 1
    assert checked >= 5


def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_flag_an_inline_shasweep_command_shows_exists():
    verbs, wrong = subparsers(), []
    for d in docs():
        for span in d.spans:
            words = span.replace("[", " ").replace("]", " ").split()
            if words and words[0] == "shasweep":
                words = words[1:]
            elif not (len(words) > 1 and words[0] in verbs and words[1].startswith("--")):
                continue
            if not words or words[0].startswith("-") or words[0].isupper():  # `shasweep COMMAND --help`
                continue
            if words[0] not in verbs:
                wrong.append(f"{d.name}: `{span}`: no verb {words[0]!r}")
                continue
            options = verbs[words[0]]._option_string_actions
            wrong += [f"{d.name}: `{span}`: {w}" for w in words[1:]
                      if w.startswith("--") and w.split("=")[0].rstrip(".,") not in options
                      and w.rstrip("*") != "--tls-"]
    assert not wrong, "flags the parser does not have:\n" + "\n".join(wrong)


def cli_sections() -> dict[str, str]:
    """docs/cli.md's text under each ``## shasweep VERB`` heading."""
    parts = re.split(r"^## `?shasweep (\w+)`?\s*$", doc("docs/cli.md").prose, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_cli_md_documents_every_verb_with_the_parser_s_usage_and_flags():
    sections = cli_sections()
    verbs = subparsers()
    assert list(sections) == list(verbs), "docs/cli.md: one '## shasweep VERB' section per verb, in order"
    usages = {b.body.split()[1]: " ".join(b.body.split()) for b in doc("docs/cli.md").blocks
              if b.info == "text" and b.body.startswith("shasweep ")}
    for verb, sub in verbs.items():
        usage = " ".join(sub.format_usage().removeprefix("usage:").split())
        assert usages.get(verb) == usage, f"docs/cli.md: the usage of {verb} is\n{usage}"
        flags = {s for a in sub._actions for s in a.option_strings if s not in ("-h", "--help")}
        rows = re.findall(r"^\|\s*`(--[\w-]+)", sections[verb], re.MULTILINE)
        assert set(rows) == flags and len(rows) == len(flags), \
            f"docs/cli.md, {verb}: flag table {sorted(rows)}, parser {sorted(flags)}"


def test_ci_md_documents_every_input_of_the_action_and_variable_of_the_gitlab_template():
    action = yaml.safe_load((ROOT / "action.yml").read_text())
    job = yaml.safe_load((ROOT / "templates" / "gitlab-ci.yml").read_text())[".shasweep"]
    rows = set(re.findall(r"^\|\s*`([\w-]+)`", doc("docs/ci.md").prose, re.MULTILINE))
    wanted = set(action["inputs"]) | {name for name in job["variables"] if name.startswith("SHASWEEP_")}
    assert wanted <= rows, f"docs/ci.md lacks a table row for {sorted(wanted - rows)}"


# --- the sweep YAML ------------------------------------------------------------------------------------


def yaml_blocks(name: str) -> list[str]:
    return [b.body for b in doc(name).blocks if b.info == "yaml"]


def schema_fields() -> dict[type, list[dataclasses.Field]]:
    hints = typing.get_type_hints(schema.SweepSpec)
    nested = {t for h in hints.values() for t in (h, *typing.get_args(h), *(
        a for arg in typing.get_args(h) for a in typing.get_args(arg))) if dataclasses.is_dataclass(t)}
    return {cls: list(dataclasses.fields(cls)) for cls in (schema.SweepSpec, schema.ParamsSpec, *nested)}


def test_sweep_yaml_md_and_protocols_md_name_every_key():
    """Every key of the schema, nested ones included, is shown in a YAML block of sweep-yaml.md (the
    ``json`` block's keys: of protocols.md)."""
    blocks = yaml_blocks("docs/sweep-yaml.md") + yaml_blocks("docs/protocols.md")
    keys = set(re.findall(r"(\w+):", "\n".join(blocks)))
    missing = [f"{cls.__name__}.{f.name}" for cls, fields in schema_fields().items() for f in fields
               if f.name not in keys]
    assert not missing, f"keys of the schema no YAML block shows: {missing}"


def default_of(f: dataclasses.Field) -> object:
    value = f.default
    return value.value if hasattr(value, "value") else value


def test_sweep_yaml_md_reference_block_loads_and_shows_the_defaults(readers_interpreters):
    raw = yaml.safe_load(next(b for b in yaml_blocks("docs/sweep-yaml.md") if b.startswith("name:")))
    spec_from_config(OmegaConf.create(raw))
    assert {f.name for f in dataclasses.fields(schema.SweepSpec)} <= set(raw), \
        "the reference block lists every top-level key"
    wrong = []
    for cls, values in ((schema.SweepSpec, raw), (schema.ParamsSpec, raw["params"]),
                        (schema.GateSpec, raw["gates"][0])):
        for f in dataclasses.fields(cls):
            default = default_of(f)
            if default in (MISSING, dataclasses.MISSING, None) or f.name not in values:
                continue
            if isinstance(values[f.name], bool | int | float | str) and values[f.name] != default:
                wrong.append(f"{cls.__name__}.{f.name}: shown {values[f.name]!r}, default {default!r}")
    assert not wrong, "docs/sweep-yaml.md's reference block shows another default:\n" + "\n".join(wrong)


def test_every_complete_sweep_yaml_block_loads(readers_interpreters):
    blocks = [yaml.safe_load(b) for d in docs() for b in yaml_blocks(d.name)]
    complete = [b for b in blocks if isinstance(b, dict) and {"name", "sides", "cases"} <= set(b)]
    assert complete
    for raw in complete:
        spec_from_config(OmegaConf.create(raw))


def test_no_long_sentence_is_written_twice():
    """A fact lives in one place; the others link to it."""
    seen: dict[str, str] = {}
    repeated = []
    for d in docs():
        for sentence in re.split(r"(?<=[.:;])\s+", " ".join(d.prose.split())):
            if len(sentence) >= 100 and not sentence.startswith("|"):
                if sentence in seen:
                    repeated.append(f"{seen[sentence]} and {d.name}: {sentence[:90]}...")
                seen.setdefault(sentence, d.name)
    assert not repeated, "sentences written twice:\n" + "\n".join(repeated)
