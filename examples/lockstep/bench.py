"""demolib's word counter, written with shasweep's bench helper, so it can also run in lockstep. Each
step record holds ``step_ms``; the counts a step returns are demolib's result, not timings."""
import demolib

from orchestrator.benchkit import Bench

bench = Bench("wordcount", module=demolib, options={"size": 2000})
size = bench.params["size"]
text = " ".join(f"The quick brown fox {i % 97} jumps over the lazy dog." for i in range(size))
bench.run(lambda: demolib.count_words(text), items_per_step=size)
