"""Create a repository with a 15-benchmark pytest-benchmark suite and no shasweep configuration, as a
project that wants its pull requests gated would have: ``cilib`` (15 deterministic CPU kernels) and
``benchmarks/`` (three test files using the ``benchmark`` fixture), on branch ``main``; branch
``slower`` makes one kernel do ``--slowdown`` percent more work (default 5), branch ``unchanged``
changes only the README. It knows nothing of shasweep.

    python examples/make_ci_repo.py /tmp/ci-repo
    git clone -q /tmp/ci-repo /tmp/ci-clone && cd /tmp/ci-clone && git checkout -q slower
    shasweep ci --budget 10m            # head: slower, base: the merge base with origin/HEAD (main)
"""

from __future__ import annotations

import argparse
from pathlib import Path

from make_demo_repo import commit, git

# kernel -> (loop length, what one step does): 15 loops of different shapes and lengths
KERNELS: dict[str, tuple[int, str]] = {
    "spin": (20_000, "total = (total + i * i) % 1000003"),
    "xor_fold": (18_000, "total ^= (i * 2654435761) & 0xFFFFFFFF"),
    "poly": (15_000, "total = (total * 31 + i) % 998244353"),
    "divmod_walk": (12_000, "total += sum(divmod(i + 7, 13))"),
    "float_sum": (16_000, "total += (i * 0.5) ** 0.5"),
    "str_join": (4_000, "total += len(str(i) + ':' + str(total % 97))"),
    "dict_count": (9_000, "counts[i % 251] = counts.get(i % 251, 0) + 1"),
    "list_append": (14_000, "items.append(i ^ (i >> 3))"),
    "set_grow": (10_000, "seen.add((i * 7919) % 65521)"),
    "tuple_pack": (11_000, "total += len((i, i + 1, i + 2))"),
    "bit_count": (15_000, "total += (i * 3).bit_count()"),
    "branchy": (17_000, "total += i if i % 3 else -i"),
    "nested": (110, "total += sum(j * i for j in range(100))"),
    "sorted_chunks": (600, "total += sorted(range(i % 50, 0, -1))[0] if i % 50 else 0"),
    "abs_diff": (16_000, "total += abs(total % 1000 - i % 1000)"),
}
SLOWED = "poly"  # the kernel branch ``slower`` makes do more work
FUNCTION = '''def {name}():
    total, counts, items, seen = 0, {{}}, [], set()
    for i in range({n}):
        {body}
    return total + len(counts) + len(items) + len(seen)
'''
TESTS: dict[str, str] = {  # three files, 5 benchmarks each: plain tests and a parametrized one
    "test_numbers.py": '''"""Benchmarks of cilib's number kernels."""
import cilib


def test_spin(benchmark):
    benchmark(cilib.spin)


def test_xor_fold(benchmark):
    benchmark(cilib.xor_fold)


def test_poly(benchmark):
    benchmark(cilib.poly)


def test_divmod_walk(benchmark):
    benchmark(cilib.divmod_walk)


def test_float_sum(benchmark):
    benchmark(cilib.float_sum)
''',
    "test_containers.py": '''"""Benchmarks of cilib's container kernels."""
import pytest

import cilib


@pytest.mark.parametrize("name", ["str_join", "dict_count", "list_append", "set_grow", "tuple_pack"])
def test_container(benchmark, name):
    benchmark(getattr(cilib, name))
''',
    "test_misc.py": '''"""Benchmarks of cilib's other kernels, and a unit test that is no benchmark."""
import cilib


def test_bit_count(benchmark):
    benchmark(cilib.bit_count)


def test_branchy(benchmark):
    benchmark(cilib.branchy)


def test_nested(benchmark):
    benchmark(cilib.nested)


def test_sorted_chunks(benchmark):
    benchmark(cilib.sorted_chunks)


def test_abs_diff(benchmark):
    result = benchmark(cilib.abs_diff)
    assert result > 0


def test_spin_is_deterministic():
    assert cilib.spin() == cilib.spin()
''',
}


def library(slowdown_pct: float = 0.0) -> str:
    """``cilib/__init__.py``; ``slowdown_pct`` more iterations of ``SLOWED``."""
    functions = []
    for name, (n, body) in KERNELS.items():
        loops = round(n * (1 + slowdown_pct / 100)) if name == SLOWED else n
        functions.append(FUNCTION.format(name=name, n=loops, body=body))
    return '"""cilib: fifteen deterministic CPU kernels to benchmark."""\n\n\n' + "\n\n".join(functions)


def make_ci_repo(repo: Path, slowdown_pct: float = 5.0) -> dict[str, str]:
    """Write and commit ``main``, ``slower`` and ``unchanged``; returns branch -> SHA."""
    (repo / "cilib").mkdir(parents=True)
    (repo / "benchmarks").mkdir()
    git(repo, "init", "-q", "-b", "main")
    files = {repo / "cilib" / "__init__.py": library(), repo / "README.md": "# cilib\n",
             **{repo / "benchmarks" / name: text for name, text in TESTS.items()}}
    shas = {"main": commit(repo, files, "cilib and its benchmarks")}
    for branch, path, text in (
            ("slower", repo / "cilib" / "__init__.py", library(slowdown_pct)),
            ("unchanged", repo / "README.md", "# cilib\n\nFifteen kernels.\n")):
        git(repo, "checkout", "-q", "-b", branch, "main")
        shas[branch] = commit(repo, {path: text}, f"{branch}: {SLOWED} +{slowdown_pct:g} % work"
                              if branch == "slower" else "README: say what cilib is")
    git(repo, "checkout", "-q", "main")
    return shas


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", type=Path)
    parser.add_argument("--slowdown", type=float, default=5.0, metavar="PCT",
                        help="how much more work branch 'slower' gives one kernel (default: 5)")
    args = parser.parse_args()
    made = make_ci_repo(args.dir, args.slowdown)
    print(" ".join(f"{branch}={sha}" for branch, sha in made.items()))
