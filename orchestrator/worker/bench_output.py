"""What a failed run's error says about the bench's own output: where its logs are, the tail of its
stderr (or of its stdout when stderr is empty: many benches print their reason there), and a hint for
the commonest first-run mistake, a src-layout package imported without ``pythonpath: [src]``.

The first line of the error names the last line of that output and the log files, so the one line a
progress bar or a terminal report shows is already the reason and where to read more.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from orchestrator.worker.proc import file_tail

STDOUT_LOG, STDERR_LOG = "stdout.log", "stderr.log"
_MISSING_MODULE = re.compile(r"(ModuleNotFoundError|ImportError): No module named '([^']+)'")


def log_paths(log_dir: Path) -> str:
    """``logs: DIR/stderr.log, DIR/stdout.log``."""
    return f"logs: {log_dir / STDERR_LOG}, {log_dir / STDOUT_LOG}"


def output_tail(log_dir: Path) -> tuple[str, str]:
    """(which, text): the stderr tail, or the stdout tail when stderr is empty; ``('', '')`` when the
    bench wrote nothing to either."""
    for name, which in ((STDERR_LOG, "stderr"), (STDOUT_LOG, "stdout (stderr is empty)")):
        text = file_tail(log_dir / name).strip()
        if text:
            return which, text
    return "", ""


def failure_detail(headline: str, log_dir: Path, tree: Path | None = None,
                   pythonpath: Sequence[str] = (".",), *, quote_last: bool = True) -> str:
    """``headline`` (with the last line of the bench's output when ``quote_last``) and the log paths on
    the first line; then the ``pythonpath`` hint for a module a src-layout worktree holds, and the
    whole tail."""
    which, tail = output_tail(log_dir)
    if quote_last:
        last = tail.splitlines()[-1].strip() if tail else "the bench wrote nothing to stderr or stdout"
        headline = f"{headline}: {last}"
    lines = [f"{headline} ({log_paths(log_dir)})"]
    hint = src_layout_hint(tail, tree, pythonpath)
    if hint:
        lines.append(hint)
    if tail:
        lines.append(f"{which} tail:\n{tail}")
    return "\n".join(lines)


def src_layout_hint(output: str, tree: Path | None, pythonpath: Sequence[str]) -> str | None:
    """A hint when ``output`` says a module is missing that the worktree's ``src/`` holds and ``src``
    is not on the sweep's ``pythonpath``."""
    found = _MISSING_MODULE.search(output)
    if found is None or tree is None or "src" in [p.strip("/") for p in pythonpath]:
        return None
    top = found.group(2).split(".")[0]
    src = tree / "src"
    if not src.is_dir():
        return None
    holds = (src / top).is_dir() or (src / f"{top}.py").is_file()
    where = f"src/{top}" if holds else "src/"
    return (f"hint: the worktree has {where} (a src layout) and the sweep's pythonpath lacks src: "
            f"add `pythonpath: [src]` to the sweep so the bench imports the SHA's own code")
