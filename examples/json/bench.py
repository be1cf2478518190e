"""Bench for demolib, kept outside its history: writes one JSON document at the end, like many
research benchmark scripts (per-phase mean_ms, median_ms and samples_ms inside a results list)."""
import argparse
import json
import platform
import statistics
import time

import demolib

parser = argparse.ArgumentParser()
parser.add_argument("--out", required=True)
parser.add_argument("--size", type=int, default=2000)
parser.add_argument("--repeat", type=int, default=20)
args = parser.parse_args()
text = " ".join(f"The quick brown fox {i % 97} jumps over the lazy dog." for i in range(args.size))
count, top = [], []
for _ in range(args.repeat):
    t0 = time.perf_counter()
    counts = demolib.count_words(text)
    t1 = time.perf_counter()
    sorted(counts.items(), key=lambda kv: -kv[1])[:10]
    t2 = time.perf_counter()
    count.append((t1 - t0) * 1000)
    top.append((t2 - t1) * 1000)


def phase(samples):
    return {"mean_ms": statistics.fmean(samples), "median_ms": statistics.median(samples),
            "samples_ms": samples}


document = {"benchmark": "wordcount", "versions": {"python": platform.python_version()},
            "results": [{"size": args.size, "words_per_s": args.size * 10 / statistics.fmean(count) * 1000,
                         "distinct_words": len(counts),
                         "phase_ms": {"count_words_ms": phase(count), "top10_ms": phase(top)}}]}
with open(args.out, "w") as f:
    json.dump(document, f)
