"""What runs inside a benchmark suite's own process in a lockstep round (docs/design.md, "Suites in
lockstep"): the suite channel's loop (``serve``, over the bench helper's channel: ``channel``), and
the pytest plugin and the pyperf shim that put an unchanged suite on it; and ``pyperf_scripts``,
which runs several pyperf scripts as one suite run (``shasweep ci``, any order).

Loaded only by the command the plan renders for such a sweep (``-p orchestrator.suitekit...``,
``-m orchestrator.suitekit...``), never by a user's own test run. Of the orchestrator it imports
only the bench helper (``benchkit``); otherwise the standard library, and pytest or pyperf, which
the suite brings.
"""
