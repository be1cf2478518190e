"""``shasweep report --format junit``: the gate verdicts as JUnit XML, in the shape pytest's
``--junitxml`` writes, so a CI system shows a regression as a failing test.

One ``<testcase>`` per gate verdict (``classname`` ``shasweep.<sweep>.<metric>``, ``name`` ``gate N:
<case> [<side>] <bound>``): PASS passes; FAIL fails with the ratio, the bound and the interval in its
``message``; INCONCLUSIVE, NO DATA (or any other verdict) and a waived FAIL are skipped with the reason.
Every run that is not ok is a testcase with an ``<error>``; every case a suite side added or removed
(on one side only, not gated) a skipped testcase saying so. Text from benches and cases is
``printable`` and escaped as XML; the few other characters XML 1.0 cannot hold are written as their
escapes too.
"""

from __future__ import annotations

import re
import socket
import xml.etree.ElementTree as ET

from orchestrator.analysis.report_model import Report
from orchestrator.analysis.verdicts import GateVerdict, Verdict, format_interval, format_n, format_p
from orchestrator.printable import printable
from orchestrator.render.verdict_line import is_waived

_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def junit_xml(report: Report, timestamp: str | None = None) -> str:
    """The JUnit XML document of ``report``'s gates and failed runs."""
    suite = ET.Element("testsuite", name=_text(f"shasweep.{report.sweep_id}"))
    counts = {"errors": 0, "failures": 0, "skipped": 0}
    for gate in report.gates:
        outcome = _gate_case(suite, report.sweep_id, gate)
        if outcome:
            counts[outcome] += 1
    for side, cases in report.one_sided.items():
        for word, names in (("added", cases.added), ("removed", cases.removed)):
            for name in names:
                case = ET.SubElement(suite, "testcase", classname=_text(f"shasweep.{report.sweep_id}.cases"),
                                     name=_text(f"{name} [{side}] {word}"), time="0")
                ET.SubElement(case, "skipped", type=f"shasweep.{word}", message=_text(
                    f"{word} at {side}: on one side only, nothing to compare, not gated"))
                counts["skipped"] += 1
    for failure in report.failures.itertuples():
        case = ET.SubElement(suite, "testcase", classname=_text(f"shasweep.{report.sweep_id}.runs"),
                             name=_text(f"run {failure.run_key}: {failure.case} [{failure.side}]"), time="0")
        ET.SubElement(case, "error", message=_text(f"{failure.status}: {_one_line(failure.error)}"))
        counts["errors"] += 1
    suite.attrib |= {key: str(n) for key, n in counts.items()}
    suite.attrib |= {"tests": str(len(suite)), "time": "0",
                     "timestamp": timestamp or report.record.created,
                     "hostname": _text(socket.gethostname())}
    root = ET.Element("testsuites", name="shasweep")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _gate_case(suite: ET.Element, sweep_id: str, gate: GateVerdict) -> str | None:
    """Append ``gate``'s testcase; which count it adds to (None: it passed)."""
    case = ET.SubElement(suite, "testcase", classname=_text(f"shasweep.{sweep_id}.{gate.metric}"),
                         name=_text(f"gate {gate.gate}: {gate.case} [{gate.side}] {gate.bound}"), time="0")
    c = gate.comparison
    detail = (f"{gate.metric} {gate.case} [{gate.side}]: ratio {c.ratio:.4g}, {format_interval(c)}, "
              f"p {format_p(c)}, n {format_n(c)}; bound {gate.bound}; {gate.reason}")
    if gate.verdict == Verdict.PASS:
        return None
    if gate.verdict == Verdict.FAIL and not is_waived(gate):
        failure = ET.SubElement(case, "failure", message=_text(
            f"FAIL: ratio {c.ratio:.4g} outside {gate.bound}, {format_interval(c)}"))
        failure.text = _text(detail)
        return "failures"
    why = f"waived: {gate.waived}" if is_waived(gate) else gate.reason
    skipped = ET.SubElement(case, "skipped", type="shasweep.verdict",
                            message=_text(f"{gate.verdict}: {_one_line(why)}"))
    skipped.text = _text(detail)
    return "skipped"


def _one_line(text: object) -> str:
    return " ".join(str(text).split()) if text is not None else "-"


def _text(text: object) -> str:
    """``text`` ``printable``, and U+FFFE and U+FFFF, which XML 1.0 cannot hold either, as their
    escapes (ElementTree escapes the rest)."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", printable(text))
