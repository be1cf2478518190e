"""Create the small git repository the suite examples benchmark (examples/pyperf, pytest-benchmark,
gbench): ``suitelib`` with three functions in Python and in C++, at two commits; the second makes
``tokenize`` do 60 % more work, the others are unchanged. It knows nothing of shasweep.

    python examples/make_suite_repo.py /tmp/suite-repo
"""

from __future__ import annotations

from pathlib import Path

from make_demo_repo import cli, commit, git

WORK = {"checksum": 20_000, "tokenize": 30_000, "sort_words": 25_000}  # loop lengths at the first commit
SLOWED, FACTOR = "tokenize", 1.6

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


def _sources(work: dict[str, int]) -> tuple[str, str]:
    python = "\n\n".join(f"def {name}():\n    return _spin({n})\n" for name, n in work.items())
    cpp = "\n".join(f"inline unsigned long {name}() {{ return spin({n}); }}" for name, n in work.items())
    return PYTHON.format(functions=python), CPP.format(functions=cpp + "\n")


def make_suite_repo(repo: Path) -> tuple[str, str]:
    """Write and commit both versions; returns (first SHA, second SHA)."""
    package = repo / "suitelib"
    package.mkdir(parents=True)
    git(repo, "init", "-q")
    slowed = {**WORK, SLOWED: int(WORK[SLOWED] * FACTOR)}
    shas = [commit(repo, dict(zip((package / "__init__.py", package / "suitelib.hpp"), _sources(work),
                                  strict=True)), message)
            for work, message in ((WORK, "suitelib"), (slowed, f"{SLOWED}: 60 % more work"))]
    return shas[0], shas[1]


if __name__ == "__main__":
    cli(make_suite_repo, "make_suite_repo.py")
