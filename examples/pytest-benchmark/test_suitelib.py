"""suitelib's benchmarks as a pytest-benchmark suite."""

import pytest
import suitelib


@pytest.mark.parametrize("name", suitelib.BENCHMARKS)
def test_suitelib(benchmark, name):
    benchmark(getattr(suitelib, name))
