"""``[tool.shasweep]`` of a repository's pyproject.toml: the defaults of ``shasweep ci`` (docs/ci.md).

Every key is optional; the command line overrides the ones it has a flag for. A key this module
does not know, or a value of the wrong kind, is an ``InvalidInputError`` naming ``tool.shasweep.<key>``
(exit 2), so a typo never silently falls back to a default.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from orchestrator.errors import InvalidInputError
from orchestrator.spec.schema import Instrument

SUITE_KINDS: tuple[str, ...] = ("pytest-benchmark", "pyperf", "gbench", "benchkit")
INSTRUMENTS: tuple[str, ...] = tuple(item.value for item in Instrument)  # the sweep YAML's instrument values
DEFAULT_BUDGET = "10m"
_DURATION = re.compile(r"\s*(?:\d+(?:\.\d+)?\s*|(?:\d+(?:\.\d+)?\s*[hms]\s*)+)\Z")  # 90, 90s, 1m30s
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*([hms]?)")
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "": 1.0}


@dataclass(frozen=True)
class CiConfig:
    """What ``shasweep ci`` reads from ``[tool.shasweep]``; every default is the zero-configuration one."""

    sweep: str | None = None  # a sweep YAML to run instead of finding the suite (default: shasweep.yaml)
    suite: str | None = None  # look only for this kind of suite (SUITE_KINDS)
    paths: tuple[str, ...] = ()  # where the suite lives, relative to the repository; (): anywhere
    gbench: tuple[str, ...] = ()  # Google Benchmark binaries, relative to the checkout (built by prepare)
    prepare: tuple[tuple[str, ...], ...] = ()  # argvs run once in each new checkout
    args: tuple[str, ...] = ()  # appended to the suite's command (the tool's own options)
    pythonpath: tuple[str, ...] = ()  # checkout directories first on PYTHONPATH; (): the checkout
    gates: tuple[dict[str, Any], ...] = ()  # the sweep's gates; (): the design's default gate
    budget: str = DEFAULT_BUDGET  # wall time for the whole command, e.g. 90s, 10m, 1h
    instrument: str | None = None  # the sweep's instrument (none, valgrind); None: a found suite's none,
    # a sweep file's own
    base: str | None = None  # the base ref outside a pull request (default: origin/HEAD)
    results: str = ".shasweep/results"  # the results root (the CI cache keeps it between jobs)
    out: str = ".shasweep/ci"  # where the comment, JUnit, BMF and the outputs files are written
    source: str = "defaults"  # where it was read from, for messages

    @property
    def budget_s(self) -> float:
        return parse_duration(self.budget, "tool.shasweep.budget")


_LISTS = {"paths", "gbench", "args", "pythonpath"}


def read_ci_config(repo: Path) -> CiConfig:
    """``[tool.shasweep]`` of ``repo``'s pyproject.toml; the defaults when there is none."""
    path = repo / "pyproject.toml"
    if not path.is_file():
        return CiConfig()
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("shasweep")
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path} is not valid TOML: {exc}") from None
    if table is None:
        return CiConfig()
    if not isinstance(table, dict):
        raise InvalidInputError(f"must be a table in {path}", "tool.shasweep")
    return config_from_table(table, str(path))


def config_from_table(table: dict[str, Any], source: str) -> CiConfig:
    """A checked ``CiConfig`` of the ``[tool.shasweep]`` table read from ``source``."""
    known = {f.name for f in fields(CiConfig)} - {"source"}
    values: dict[str, Any] = {"source": source}
    for key, value in table.items():
        where = f"tool.shasweep.{key}"
        if key not in known:
            raise InvalidInputError(f"unknown key in {source}; known: {', '.join(sorted(known))}", where)
        values[key] = _checked(key, value, where)
    config = CiConfig(**values)
    config.budget_s  # noqa: B018 - checks the duration now, naming the key
    return config


def _checked(key: str, value: Any, where: str) -> Any:
    if key in _LISTS:
        return _strings(value, where)
    if key == "prepare":
        if not isinstance(value, list):
            raise InvalidInputError("must be a list of argv lists, e.g. [[\"make\", \"bench\"]]", where)
        return tuple(_strings(argv, f"{where}[{i}]") for i, argv in enumerate(value))
    if key == "gates":
        if not isinstance(value, list) or not all(isinstance(gate, dict) for gate in value):
            raise InvalidInputError('must be a list of tables, e.g. [{metric = "time_ms", max_ratio = 1.02}]',
                                    where)
        return tuple(dict(gate) for gate in value)
    if key == "suite" and value not in SUITE_KINDS:
        raise InvalidInputError(f"{value!r} is not one of {', '.join(SUITE_KINDS)}", where)
    if key == "instrument":
        return checked_instrument(value, where)
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"must be a non-empty string, got {value!r}", where)
    return value


def checked_instrument(value: Any, where: str) -> str:
    """``value`` when it is one of ``INSTRUMENTS``; ``InvalidInputError`` naming ``where`` otherwise."""
    if value not in INSTRUMENTS:
        raise InvalidInputError(f"{value!r} is not one of {', '.join(INSTRUMENTS)}", where)
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise InvalidInputError(f"must be a list of non-empty strings, got {value!r}", where)
    return tuple(value)


def parse_duration(text: str, key: str) -> float:
    """Seconds of ``90``, ``90s``, ``10m``, ``1.5h``, ``1m30s`` (the form shasweep's own messages
    give); ``InvalidInputError`` naming ``key`` otherwise."""
    parts = _DURATION_PART.findall(text) if _DURATION.match(text) else []
    seconds = sum(float(number) * _UNIT_S[unit] for number, unit in parts)
    if seconds <= 0:
        raise InvalidInputError(f"{text!r} is not a duration > 0 such as 90s, 10m, 1m30s or 1h", key)
    return seconds


def with_overrides(config: CiConfig, **overrides: Any) -> CiConfig:
    """``config`` with the command line's values (None: not given) in place of its own."""
    return replace(config, **{key: value for key, value in overrides.items() if value not in (None, ())})

