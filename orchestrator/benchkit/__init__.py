"""The bench helper: make a Python benchmark speak shasweep's run protocol, lockstep's control
channel included (docs/protocols.md, "The bench helper, and lockstep").

    import mylib
    from orchestrator.benchkit import Bench

    bench = Bench("sort", module=mylib, options={"size": 1000})   # --size, --stream, --control, ...
    data = mylib.make_data(bench.params["size"])                   # set-up: before the first step

    def step():
        with bench.phase("copy_ms"):                               # a phase: reported explicitly
            work = list(data)
        mylib.sort(work)                                           # what it returns is ignored

    bench.run(step, items_per_step=bench.params["size"])

Every step record holds ``step_ms`` (the whole step's wall time), ``cpu_ms`` (the process's CPU time
during the step, every thread's) and ``thread_cpu_ms`` (the CPU time of the thread that ran it), and
the phases the step reported: timed with ``bench.phase(name)`` or returned as ``Phases(name=ms)``.
``bench`` (``Bench``) parses the options and runs the steps; ``channel`` is what a resident process and
the worker say to each other (the control FIFO's commands, the stream's records) for any in-process
driver of a bench; ``steps`` times steps and phases. The standard library only, so a bench pays no
import time for it.
"""

from orchestrator.benchkit.bench import Bench, boolean
from orchestrator.benchkit.steps import Phases

__all__ = ["Bench", "Phases", "boolean"]
