"""Create the small git repository the example sweeps benchmark: ``demolib`` at two commits, the
second with a faster word counter. It knows nothing of shasweep; the benches live in examples/.

    python examples/make_demo_repo.py /tmp/demo-repo
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

SLOW = '''"""Count words (first version: builds a list of every word, then counts by hand)."""


def count_words(text):
    counts = {}
    for word in [w.strip(".,;:!?").lower() for w in text.split()]:
        if word:
            counts[word] = counts.get(word, 0) + 1
    return counts
'''
FAST = '''"""Count words (second version: collections.Counter over a generator)."""
from collections import Counter


def count_words(text):
    return Counter(w for w in (x.strip(".,;:!?").lower() for x in text.split()) if w)
'''
INIT = '''"""demolib: a tiny library to benchmark."""
from demolib.wordcount import count_words

__all__ = ["count_words"]
'''
MAIN = '''"""python -m demolib SIZE: count the words of SIZE generated sentences."""
import sys

from demolib import count_words

size = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
text = " ".join(f"The quick brown fox {i % 97} jumps over the lazy dog." for i in range(size))
print(len(count_words(text)))
'''


def git(repo: Path, *args: str) -> str:
    cmd = ["git", "-C", str(repo), "-c", "user.name=demo", "-c", "user.email=demo@example.invalid", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


def commit(repo: Path, files: dict[Path, str], message: str) -> str:
    """Write ``files`` (path -> text), commit everything; the new SHA."""
    for path, text in files.items():
        path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def cli(make: Callable[[Path], tuple[str, str]], script: str) -> None:
    """``python examples/<script> DIR``: make the repository, print its two SHAs."""
    if len(sys.argv) != 2:
        sys.exit(f"usage: python examples/{script} DIR")
    print(*make(Path(sys.argv[1])))


def make_demo_repo(repo: Path) -> tuple[str, str]:
    """Write and commit the two versions; returns (first SHA, second SHA)."""
    package = repo / "demolib"
    package.mkdir(parents=True)
    git(repo, "init", "-q")
    (package / "__init__.py").write_text(INIT)
    (package / "__main__.py").write_text(MAIN)
    return (commit(repo, {package / "wordcount.py": SLOW}, "word counter"),
            commit(repo, {package / "wordcount.py": FAST}, "faster word counter"))


if __name__ == "__main__":
    cli(make_demo_repo, "make_demo_repo.py")
