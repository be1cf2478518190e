"""The run-protocol bench: the CLI (``cli``, run as ``python -m envruntime.bench``), the stream writer
(``protocol``) and the header's audit record (``header``). May import all of envruntime, not orchestrator."""
