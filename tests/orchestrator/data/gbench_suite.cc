// A tiny Google Benchmark suite. gbench_repetitions.json beside it is its real output (Debian's
// libbenchmark-dev 1.7.1): g++ -O2 gbench_suite.cc -lbenchmark -lpthread -o suite &&
// ./suite --benchmark_format=json --benchmark_repetitions=3 --benchmark_min_time=0.01
// Three repetitions and their aggregates (mean, median, stddev, cv), ns and us time units, a user
// counter that is NaN, and a benchmark skipped with an error.
#include <benchmark/benchmark.h>

#include <cmath>

static void BM_sum(benchmark::State& state) {
  for (auto _ : state) {
    double s = 0;
    for (int i = 0; i < state.range(0); ++i) s += std::sqrt(double(i));
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_sum)->Arg(64)->Arg(512);

static void BM_sin_us(benchmark::State& state) {
  for (auto _ : state) {
    double s = 0;
    for (int i = 0; i < 2000; ++i) s += std::sin(double(i));
    benchmark::DoNotOptimize(s);
  }
  state.counters["ratio"] = NAN;
}
BENCHMARK(BM_sin_us)->Unit(benchmark::kMicrosecond);

static void BM_broken(benchmark::State& state) {
  state.SkipWithError("fixture file not found");
  for (auto _ : state) {
  }
}
BENCHMARK(BM_broken);

BENCHMARK_MAIN();
