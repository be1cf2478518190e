"""Hostile benchmark names end to end (issue 41 items 5, 8, 9, 13): a real `shasweep run` of a pyperf
suite of the generated suitelib repository whose benchmarks are named with links, an e-mail address,
a mention, terminal escape sequences (OSC 8, CSI), BEL, BS, NUL, a bidirectional override and a lone
UTF-16 surrogate, waiting for a quiet host (``quiet:``) with no ``metrics:`` key. Every output (what
`run`, `report` and `status` print, the Markdown, CSV and HTML files, `--format gh`, `junit` and
`bmf`) holds no character that steers a terminal, and the Markdown ones, rendered by GitHub's
cmark-gfm, show each name as the characters it is: no link, no e-mail, no mention."""

from __future__ import annotations

import html
import json
import re
import sys
import xml.etree.ElementTree as ET

import cmarkgfm
import pytest
import yaml
from anyrepo_helpers import EXAMPLES, shasweep

from orchestrator.errors import EXIT_INVALID, EXIT_RUN_FAILED
from orchestrator.printable import printable

sys.path.insert(0, str(EXAMPLES))
from make_suite_repo import make_suite_repo  # noqa: E402

pytestmark = pytest.mark.slow

NAMES = ("https://evil.example/login", "www.evil.example", "victim@evil.example", "@octocat",
         "[x](https://evil.example/x)", "osc\x1b]8;;https://evil.example\x07link\x1b]8;;\x07",
         "csi\x1b[2J\x1b[31mred", "bel\x07bs\x08nul\x00", "c1\x9b31m", "bidi\u202eevil",
         "lone\udc80surrogate")
BENCH = '''"""suitelib's checksum under hostile names: a pyperf suite."""
import time

import pyperf
import suitelib

NAMES = {names}


def timed(loops):
    start = time.thread_time()
    for _ in range(loops):
        suitelib.checksum()
    return time.thread_time() - start


runner = pyperf.Runner()
for name in NAMES:
    runner.bench_time_func(name, timed)
'''
SWEEP = {"name": "hostile", "sides": {"old": {"ref": "HEAD~1"}, "new": {"ref": "HEAD"}}, "baseline": "old",
         "cases": "discover", "protocol": "pyperf", "repeats": 2,
         "command": ["{python}", "{sweep_dir}/bench.py", "--processes", "1", "--values", "2", "--loops", "3",
                     "--quiet", "-o", "{result}"],
         "quiet": {"max_load": 1000.0, "max_steal": 1.0, "max_wait_s": 1.0},  # never waits long
         "gates": [{"metric": "time_ms", "max_ratio": 1.5}]}
# what steers a terminal or cannot be written: C0 but newline, DEL, C1, bidi controls, surrogates
STEERING = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                      "\ud800-\udfff]")
MENTION = re.compile(r"(?:^|[^\w`])@[A-Za-z0-9][A-Za-z0-9-]*")


@pytest.fixture(scope="module")
def outputs(tmp_path_factory) -> dict[str, str]:
    """Every output of one hostile sweep: each command's stdout and stderr, and each report file."""
    tmp = tmp_path_factory.mktemp("hostile")
    make_suite_repo(tmp / "repo")
    (tmp / "bench.py").write_text(BENCH.format(names=ascii(NAMES)))
    (tmp / "sweep.yaml").write_text(yaml.safe_dump(SWEEP))
    results, home = tmp / "results", tmp / "home"
    found: dict[str, str] = {}
    run = shasweep("run", str(tmp / "sweep.yaml"), f"repo={tmp / 'repo'}", f"results={results}", cwd=tmp,
                   home=home)
    found["run"] = f"exit {run.returncode}\n{run.stdout}{run.stderr}"
    for name, argv in {"report": [], "gh": ["--format", "gh"], "junit": ["--format", "junit"],
                       "bmf": ["--format", "bmf"], "html": ["--format", "html"]}.items():
        proc = shasweep("report", "latest", "--results", str(results), *argv, cwd=tmp, home=home)
        found[name] = f"exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
    status = shasweep("status", "latest", "--results", str(results), cwd=tmp, home=home)
    found["status"] = status.stdout + status.stderr
    for path in (results / "reports").iterdir():
        found[path.name] = path.read_text(encoding="utf-8")
    return found


def test_quiet_without_metrics_gets_its_report(outputs):
    """Item 5: the float quiet_* columns are the store's, not metrics: the report is written."""
    for name in ("run", "report", "gh", "junit", "bmf", "html"):
        code = int(outputs[name].split()[1])
        assert code not in (EXIT_INVALID, EXIT_RUN_FAILED), outputs[name]
    markdown = next(text for name, text in outputs.items() if name.endswith(".md"))
    assert "quiet_wait_s" not in markdown.split("## Gates")[0] and "time_ms" in markdown


def test_no_output_holds_a_character_that_steers_a_terminal(outputs):
    """Items 9 and 13: every name reaches each output as its escapes (``printable``), none crashes."""
    for name, text in outputs.items():
        found = STEERING.search(text)
        assert found is None, (name, text[max(found.start() - 80, 0):found.end() + 80])
    assert "osc\\x1b]8;;" in outputs["run"] + outputs["report"], "the escape is shown, not sent"
    markdown = next(text for name, text in outputs.items() if name.endswith(".md"))
    assert "lone\\\\udc80surrogate" in markdown and "bidi\\\\u202eevil" in markdown


@pytest.mark.parametrize("kind", ["gh", ".md"])
def test_markdown_shows_each_name_as_the_characters_it_is(outputs, kind):
    """Item 8: in GitHub's rendering no name becomes a link, an e-mail address or a mention."""
    text = outputs[kind] if kind == "gh" else next(t for n, t in outputs.items() if n.endswith(kind))
    page = cmarkgfm.github_flavored_markdown_to_html(text)
    assert "<a " not in page and "mailto:" not in page, page
    assert not MENTION.search(html.unescape(re.sub(r"<code>.*?</code>", "`", page))), page
    shown = html.unescape(re.sub(r"<[^>]+>", "", page))
    for name in NAMES:
        assert printable(name) in shown, name


def test_junit_and_bmf_parse_and_name_every_benchmark(outputs):
    suite = ET.fromstring(outputs["junit"].split("\n", 1)[1].encode())
    names = " ".join(case.get("name") for case in suite.iter("testcase"))
    assert all(printable(name) in names for name in NAMES)
    document = json.loads(outputs["bmf"].split("\n", 1)[1])
    assert len(document) == len(NAMES)


def test_html_page_names_each_benchmark_escaped(outputs):
    page = next(text for name, text in outputs.items() if name.endswith(".html"))
    assert "osc\\x1b]8;;https://evil.example\\x07link" in page
