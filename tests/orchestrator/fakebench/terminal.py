"""The shasweep client as a terminal starts it, for tests that press Ctrl-C.

A background job of a non-interactive shell starts its children with SIGINT ignored, and an ignored
signal stays ignored across exec: a test run that way (``nohup pytest ... &``) would start a client
that Ctrl-C cannot reach. ``CLIENT`` (``python -c CLIENT ARGS...``) puts SIGINT back to Python's
default handler before running ``orchestrator.cli``.
"""

CLIENT = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
          "sys.argv = ['shasweep', *sys.argv[1:]]; runpy.run_module('orchestrator.cli', run_name='__main__')")
