// suitelib's C++ loops as a Google Benchmark suite; prepare compiles it against each SHA's header.
#include <benchmark/benchmark.h>

#include "suitelib/suitelib.hpp"

static void BM_checksum(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(suitelib::checksum());
}
BENCHMARK(BM_checksum);

static void BM_tokenize(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(suitelib::tokenize());
}
BENCHMARK(BM_tokenize);

BENCHMARK_MAIN();
