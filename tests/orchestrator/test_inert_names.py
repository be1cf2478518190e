"""Names from outside render as the characters they are: ``printable`` (every output) and
``render.markdown.md_text`` (every Markdown output), rendered by GitHub's own Markdown library
(cmark-gfm, with its table, autolink and strikethrough extensions) and read back as text."""

from __future__ import annotations

import html
import re

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from orchestrator.printable import printable
from orchestrator.render.markdown import md_text

# names a hostile (or careless) suite could give its benchmarks
HOSTILE: tuple[str, ...] = (
    "https://evil.example/login", "www.evil.example", "WWW.EVIL.EXAMPLE/x", "victim@evil.example",
    "mailto:victim@evil.example", "xmpp:victim@evil.example", "ftp://evil.example/f",
    "[login](https://evil.example/login)", "\\[x\\](www.evil.example)", "![i](https://evil.example/i.png)",
    "<https://evil.example>", "<victim@evil.example>", "@octocat", "cc @org/team", "fixes #12",
    "HEAD~1 vs HEAD~2", "~~struck~~", "**bold** _em_ `code`", "<script>alert(1)</script>",
    "&lt;b&gt; &#64;octocat &amp;", "a|b|c", "test_x[param-1]", "bench\\", "\\`@`\\",
    "osc\x1b]8;;https://evil.example\x07link\x1b]8;;\x07", "csi\x1b[2J\x1b[31mred", "bel\x07bs\x08nul\x00",
    "c1\x9b31m", "bidi\u202eevil\u202c", "lone\udc80surrogate", "tab\there",
)
# GitHub's mention and issue-reference filters run over the text outside code (their patterns)
MENTION = re.compile(r"(?:^|[^\w`])@[A-Za-z0-9][A-Za-z0-9-]*")
ISSUE = re.compile(r"(?:^|[^\w/-])#[0-9]+\b")
UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
CONTEXTS = {"cell": "| h |\n|---|\n| {} |\n", "item": "- {}\n", "heading": "## {}\n", "text": "x {} y\n"}


def rendered(markdown: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


@pytest.mark.parametrize("name", HOSTILE, ids=lambda n: ascii(n)[1:30])
def test_printable_escapes_what_steers_a_terminal_and_keeps_the_rest(name):
    shown = printable(name)
    assert not UNSAFE.search(shown) and shown.encode("utf-8")
    assert (shown == name) == (UNSAFE.search(name) is None)
    assert printable("physics_ms é ß 中 ✓") == "physics_ms é ß 中 ✓"
    assert printable("a\x1b[31mb\udc80\u202e") == "a\\x1b[31mb\\udc80\\u202e"


@pytest.mark.parametrize("context", CONTEXTS)
@pytest.mark.parametrize("name", HOSTILE, ids=lambda n: ascii(n)[1:30])
def test_a_name_renders_in_github_markdown_as_the_characters_it_is(name, context):
    """No link, mention, issue reference, e-mail, HTML, emphasis or strikethrough: the rendered text
    is the name (``printable``), every tag is the context's own or a ``<code>`` of one mark."""
    page = rendered(CONTEXTS[context].format(md_text(name)))
    tags = set(re.findall(r"</?([a-z0-9]+)", page))
    assert tags <= {"table", "thead", "tbody", "tr", "th", "td", "ul", "li", "h2", "p", "code"}, page
    assert all(code in ("@", "#") for code in re.findall(r"<code>(.*?)</code>", page)), page
    outside_code = re.sub(r"<code>.*?</code>", "`", page)
    text = html.unescape(re.sub(r"<[^>]+>", "", outside_code))
    assert not MENTION.search(text) and not ISSUE.search(text), page
    body = html.unescape(re.sub(r"<[^>]+>", "", page)).strip().splitlines()
    assert printable(name) in body or f"x {printable(name)} y" in body, (body, page)
