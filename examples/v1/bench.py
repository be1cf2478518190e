"""Bench for demolib, kept outside its history: run protocol v1 through shasweep_protocol.py."""
import argparse
import time

import demolib
from shasweep_protocol import ProtocolWriter

parser = argparse.ArgumentParser()
parser.add_argument("--stream", required=True)
parser.add_argument("--size", type=int, default=2000)
parser.add_argument("--warmup", type=int, default=2)
parser.add_argument("--measure", type=int, default=20)
args = parser.parse_args()
text = " ".join(f"The quick brown fox {i % 97} jumps over the lazy dog." for i in range(args.size))
with ProtocolWriter(args.stream, "wordcount", vars(args), demolib) as out:
    started = time.perf_counter()
    for step in range(args.warmup + args.measure):
        if step == args.warmup:
            started = time.perf_counter()
        t0 = time.perf_counter()
        demolib.count_words(text)
        out.step(step, warmup=step < args.warmup, count_words_ms=(time.perf_counter() - t0) * 1000)
    wall = time.perf_counter() - started
    out.summary(throughput=args.measure * args.size / wall, measure_wall_s=wall)
