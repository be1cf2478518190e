"""What each protocol declares (``orchestrator.capabilities``), that each built-in one has its reader
and spec value, and that nothing outside the declarations asks a protocol by its name (a third
party's protocol: test_protocol_plugins.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from orchestrator.capabilities import (
    BUILTIN_PROTOCOLS,
    PROTOCOLS,
    Capability,
    UnknownProtocolError,
    describe,
    describe_stored,
)
from orchestrator.spec.schema import Protocol
from orchestrator.worker.protocols import reader_class

PACKAGE = Path(__file__).resolve().parents[2] / "orchestrator"
# Where protocol names may be compared: the declarations and the readers.
NAMED_HERE = (PACKAGE / "capabilities.py", PACKAGE / "worker" / "protocols")


def test_each_protocol_declares_what_it_provides():
    v1 = describe("v1")
    assert v1.has(Capability.STEPS | Capability.LIVE_STREAM | Capability.THROUGHPUT_WINDOW
                  | Capability.AUDIT_FIELDS)
    assert v1.provides is None, "v1's metrics are the bench's own: unknown until its first ok run"
    time = describe("time")
    assert time.provides == {"throughput", "wall_ms", "user_ms", "sys_ms", "cpu_ms", "max_rss_mib"}
    assert time.has(Capability.MEASURE_PARAM) and not time.has(Capability.THROUGHPUT_WINDOW)
    assert time.throughput_unit == "runs"
    mapping = {"throughput": "fps", "phases": {"step_ms": "s"}, "metrics": {"score": "x.y"}}
    json = describe("json", mapping)
    assert json.provides == {"throughput", "step_ms", "score"}
    assert json.has(Capability.RESULT_DOCUMENT | Capability.JSON_MAPPING)
    assert not json.has(Capability.THROUGHPUT_WINDOW)
    assert describe("json", {**mapping, "measure_wall_s": "window_s"}).has(Capability.THROUGHPUT_WINDOW)
    assert [name for name in PROTOCOLS if describe(name).has(Capability.CONTROL_CHANNEL)] == [
        "v1", "pyperf", "pytest-benchmark"], "the suites through orchestrator.suitekit"
    assert describe("pyperf").suite_driver.render(("{python}", "b.py", "-o", "{result}"), ("-m", "x")) == (
        "{python}", "-m", "x", "b.py", "-o", "{result}"), "the shim runs the script"
    assert describe("pytest-benchmark").suite_driver.render(("pytest", "-q"), ("-p", "x")) == (
        "pytest", "-q", "-p", "x"), "pytest reads -p anywhere"
    assert describe("gbench").suite_driver is None and describe("v1").suite_driver is None
    assert [name for name in PROTOCOLS if describe(name).has(Capability.MANY_CASES)] == [
        "pyperf", "pytest-benchmark", "gbench"]


def test_a_suite_reports_cpu_time_per_call_only_where_the_suite_channel_times_its_calls():
    """In lockstep shasweep's suite channel times each step's calls itself, wall and CPU; the tools'
    own documents have no CPU time per call (gbench's own ``cpu_time_ms`` is its thread's, by default)."""
    for name in ("pyperf", "pytest-benchmark"):
        assert describe(name).provides == {"throughput", "time_ms"}
        assert describe(name).in_lockstep().provides == {"throughput", "time_ms", "cpu_ms", "thread_cpu_ms"}
    gbench = describe("gbench")
    assert gbench.in_lockstep() == gbench and "cpu_ms" not in gbench.provides
    assert describe("time").in_lockstep() == describe("time")
    assert describe("v1").in_lockstep().provides is None


def test_unknown_and_stored_names():
    known = "v1, json, time, pyperf, pytest-benchmark, gbench"
    with pytest.raises(UnknownProtocolError, match=f"unknown protocol 'asv'; known: {known}"):
        describe("asv")
    assert describe(None).name == "v1", "a sweep or row without a protocol is v1"
    assert describe_stored(float("nan")).name == "v1"
    newer = describe_stored("asv")
    assert newer.capabilities == Capability.NONE and newer.provides is None


def test_every_built_in_protocol_has_its_reader_and_a_spec_value():
    assert list(PROTOCOLS) == [p.value for p in Protocol] == list(BUILTIN_PROTOCOLS)
    for name in PROTOCOLS:
        assert reader_class(name).protocol == name and Protocol(name).value == name


def _protocol_compares(source: str, where: str) -> list[str]:
    """``x == "json"``, ``p is Protocol.time`` and the like in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        for operand in (node.left, *node.comparators):
            named = (isinstance(operand, ast.Constant) and operand.value in PROTOCOLS) or (
                isinstance(operand, ast.Attribute) and operand.attr in PROTOCOLS
                and isinstance(operand.value, ast.Name) and operand.value.id == "Protocol")
            if named:
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_nothing_outside_the_declarations_compares_protocol_names():
    outside = [p for p in PACKAGE.rglob("*.py")
               if not any(p == allowed or allowed in p.parents for allowed in NAMED_HERE)]
    assert [hit for path in outside
            for hit in _protocol_compares(path.read_text(encoding="utf-8"), str(path))] == []


def test_the_guard_sees_a_compare():
    source = "def f(spec):\n    return spec.protocol == 'v1' or spec.p is Protocol.time\n"
    hits = _protocol_compares(source, "x")
    assert hits == ["x:2: spec.protocol == 'v1'", "x:2: spec.p is Protocol.time"]


def test_a_benchmark_name_becomes_a_one_line_bounded_case_name():
    from orchestrator.capabilities import MAX_CASE_CHARS, benchmark_selected, suite_case_name

    assert suite_case_name("a\nb\tc\x1b[31m") == "a\\nb\\tc\\x1b[31m"
    assert suite_case_name("  ../x/<b>y</b>  ") == "../x/<b>y</b>", "markup and paths stay text"
    assert suite_case_name("") == "(unnamed)" and suite_case_name("\n") == "\\n"
    long_a, long_b = "x" * 500 + "a", "x" * 500 + "b"
    assert len(suite_case_name(long_a)) == MAX_CASE_CHARS
    assert suite_case_name(long_a) != suite_case_name(long_b), "a digest of the whole keeps them apart"
    assert benchmark_selected("a\nb", ["a\\nb"]) and benchmark_selected("a\nb", ["a*"])


def test_a_suite_in_lockstep_needs_no_result_document_a_suite_apart_does(tmp_path):
    from orchestrator.errors import SpecError
    from orchestrator.spec.load import load_spec

    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("name: s\nsides: {a: {ref: HEAD}}\nbaseline: a\ncases: discover\n"
                     "protocol: pytest-benchmark\ncommand: ['{python}', -m, pytest, bench]\n")
    assert load_spec(sweep, ["order=lockstep"]).command[-1] == "bench", "numbers come through the channel"
    with pytest.raises(SpecError, match="never passes {result}"):
        load_spec(sweep, ["order=interleaved"])
