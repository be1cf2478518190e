"""A git repository with a 16-benchmark suite over one small library, as a pytest-benchmark suite and
as a pyperf script (``bench_func``), for the suite benchmarks (``benchmarks/suite_lockstep.py``,
``benchmarks/instructions.py``). The library's functions are deterministic CPU work of different
kinds (loops, strings, dicts, sorting, JSON, regular expressions, hashing, ...), about a millisecond
a call; the suites live in the repository (``bench/``), so every commit carries its own.

    python benchmarks/wide_suite.py /tmp/wide-repo
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from known_truth import git

LIBRARY = '''
"""widelib: sixteen deterministic CPU workloads of different kinds."""

import bisect
import collections
import hashlib
import heapq
import itertools
import json
import re
import struct

WORDS = [f"word{i % 97}x{i % 13}" for i in range(4000)]
TEXT = " ".join(WORDS)
NUMBERS = [(i * 7919) % 10007 for i in range(6000)]
DOC = {"items": [{"id": i, "name": f"n{i}", "tags": ["a", "b", str(i % 7)]} for i in range(400)]}
BLOB = bytes(range(256)) * 2048


def spin():
    total = 0
    for i in range(20000):
        total = (total + i * i) % 1000003
    return total


def split_join():
    return "-".join(TEXT.split(" ")).count("-")


def dict_build():
    table = {word: i for i, word in enumerate(WORDS)}
    return sum(table[word] for word in WORDS[::3])


def sort_numbers():
    return sorted(NUMBERS)[len(NUMBERS) // 2]


def json_round_trip():
    return len(json.loads(json.dumps(DOC))["items"])


def regex_findall():
    return len(re.findall(r"word(\\d+)x1", TEXT))


def set_algebra():
    a, b = set(NUMBERS[::2]), set(NUMBERS[1::2])
    return len(a | b) - len(a & b) + len(a ^ b)


def generator_sum():
    return sum(i * i for i in range(30000) if i % 3)


def big_fibonacci():
    a, b = 0, 1
    for _ in range(3000):
        a, b = b, a + b
    return a % 1000003


def sha256_blob():
    return hashlib.sha256(BLOB).hexdigest()[:8]


def struct_pack():
    packed = b"".join(struct.pack("<iid", i, i * 2, i / 3) for i in range(5000))
    return len(packed)


def string_methods():
    return TEXT.upper().replace("WORD", "w").count("w")


def heap_merge():
    heap = []
    for number in NUMBERS[:5000]:
        heapq.heappush(heap, number)
    return sum(heapq.heappop(heap) for _ in range(500))


def bisect_insort():
    ordered = []
    for number in NUMBERS[:3000]:
        bisect.insort(ordered, number)
    return ordered[1500]


def counter_words():
    return collections.Counter(WORDS).most_common(3)[0][1]


def combinations_count():
    return sum(1 for pair in itertools.combinations(range(180), 2) if (pair[0] + pair[1]) % 5 == 0)


BENCHMARKS = ["spin", "split_join", "dict_build", "sort_numbers", "json_round_trip", "regex_findall",
              "set_algebra", "generator_sum", "big_fibonacci", "sha256_blob", "struct_pack",
              "string_methods", "heap_merge", "bisect_insort", "counter_words", "combinations_count"]
'''
PYTEST_SUITE = '''
"""widelib's benchmarks as a pytest-benchmark suite."""

import pytest

import widelib


@pytest.mark.parametrize("name", widelib.BENCHMARKS)
def test_widelib(benchmark, name):
    benchmark(getattr(widelib, name))
'''
PYPERF_SUITE = '''
"""widelib's benchmarks as a pyperf script."""

import pyperf

import widelib

runner = pyperf.Runner()
for name in widelib.BENCHMARKS:
    runner.bench_func(name, getattr(widelib, name))
'''


def make_wide_repo(repo: Path) -> str:
    """Write and commit the library and both suites; returns the commit's SHA."""
    (repo / "widelib").mkdir(parents=True)
    (repo / "bench").mkdir()
    (repo / "widelib" / "__init__.py").write_text(textwrap.dedent(LIBRARY).lstrip())
    (repo / "bench" / "test_widelib.py").write_text(textwrap.dedent(PYTEST_SUITE).lstrip())
    (repo / "bench" / "perf_widelib.py").write_text(textwrap.dedent(PYPERF_SUITE).lstrip())
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "widelib and its suites")
    return git(repo, "rev-parse", "HEAD")


if __name__ == "__main__":
    print(make_wide_repo(Path(sys.argv[1])))
