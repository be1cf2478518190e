"""Create the small git repository the suite examples benchmark (examples/pyperf, pytest-benchmark,
gbench): ``suitelib`` with three functions in Python and in C++, at two commits; the second makes
``tokenize`` do 60 % more work, the others are unchanged. ``suitelib.BENCHMARKS`` names the Python
ones. With ``--churn`` the second commit also removes ``sort_words`` and adds ``count_words`` and
``hash_words`` (Python only), as a branch that adds and removes benchmarks does. It knows nothing
of shasweep.

    python examples/make_suite_repo.py /tmp/suite-repo [--churn]
"""

from __future__ import annotations

import sys
from pathlib import Path

from make_demo_repo import commit, git

WORK = {"checksum": 20_000, "tokenize": 30_000, "sort_words": 25_000}  # loop lengths at the first commit
SLOWED, FACTOR = "tokenize", 1.6
REMOVED, ADDED = "sort_words", {"count_words": 15_000, "hash_words": 10_000}  # what --churn changes

PYTHON = '''"""suitelib: three deterministic CPU loops to benchmark."""


def _spin(n):
    total = 0
    for i in range(n):
        total = (total + i * i) % 1000003
    return total


{functions}'''
CPP = '''// suitelib in C++: the same three loops (header only).
#pragma once

namespace suitelib {{

inline volatile long opaque_one = 1;  // read at run time: the compiler cannot fold the loops away

inline unsigned long spin(long n) {{
  const long limit = n * opaque_one;
  unsigned long total = 0;
  for (long i = 0; i < limit; ++i) total = (total + static_cast<unsigned long>(i) * i) % 1000003;
  return total;
}}

{functions}
}}  // namespace suitelib
'''


def _sources(work: dict[str, int], extra: dict[str, int]) -> tuple[str, str]:
    """suitelib's Python (``work`` and the Python-only ``extra``) and its C++ (``work``)."""
    python = "\n\n".join(f"def {name}():\n    return _spin({n})\n" for name, n in {**work, **extra}.items())
    python += f"\n\nBENCHMARKS = {tuple({**work, **extra})!r}\n"
    cpp = "\n".join(f"inline unsigned long {name}() {{ return spin({n}); }}" for name, n in work.items())
    return PYTHON.format(functions=python), CPP.format(functions=cpp + "\n")


def make_suite_repo(repo: Path, churn: bool = False) -> tuple[str, str]:
    """Write and commit both versions (``churn``: the second also removes one benchmark and adds two);
    returns (first SHA, second SHA)."""
    package = repo / "suitelib"
    package.mkdir(parents=True)
    git(repo, "init", "-q")
    slowed = {**WORK, SLOWED: int(WORK[SLOWED] * FACTOR)}
    message = f"{SLOWED}: 60 % more work"
    if churn:
        slowed.pop(REMOVED)
        message += f"; {REMOVED} removed, {' and '.join(ADDED)} added"
    versions = ((WORK, {}, "suitelib"), (slowed, ADDED if churn else {}, message))
    shas = [commit(repo, dict(zip((package / "__init__.py", package / "suitelib.hpp"), _sources(work, extra),
                                  strict=True)), text)
            for work, extra, text in versions]
    return shas[0], shas[1]


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or sys.argv[2:] not in ([], ["--churn"]):
        sys.exit("usage: python examples/make_suite_repo.py DIR [--churn]")
    print(*make_suite_repo(Path(sys.argv[1]), churn=sys.argv[2:] == ["--churn"]))
