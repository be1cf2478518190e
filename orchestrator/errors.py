"""Exception types and process exit codes shared by every shasweep command.

Exit codes (documented in docs/cli.md and ``shasweep --help``):

* 0 ``EXIT_OK``: everything ran and every gate passed
* 1 ``EXIT_GATE_FAILED``: all runs ran, at least one gate failed
* 2 ``EXIT_INVALID``: invalid input (sweep YAML, overrides, refs, repo, results root, sweep id),
  reported before anything is dispatched; or a bench that cannot do what the sweep asks, found at
  its first round (``order: lockstep`` with a SHA whose bench has no control channel; a gate on a
  metric a v1 bench's first ok run does not report)
* 3 ``EXIT_RUN_FAILED``: a run failed, timed out or was cancelled, or the cluster could not run it,
  or a gate has NO DATA (no ok run on a side it needs reported its metric)
* 4 ``EXIT_GATE_INCONCLUSIVE``: all runs ran, no gate failed, at least one gate is inconclusive (its
  confidence interval straddles the bound: more repeats are needed to decide)

Precedence when several apply: 3, then 1, then 4.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_GATE_FAILED = 1
EXIT_INVALID = 2
EXIT_RUN_FAILED = 3
EXIT_GATE_INCONCLUSIVE = 4


class ShasweepError(Exception):
    """Base class: every shasweep error carries the exit code the CLI returns for it."""

    exit_code: int = EXIT_RUN_FAILED


class InvalidInputError(ShasweepError):
    """Bad user input; ``key`` names the offending sweep key (e.g. ``sides.mba.ref``) when there is one."""

    exit_code = EXIT_INVALID

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key = key


class SpecError(InvalidInputError):
    """The sweep YAML or a dotlist override is malformed or inconsistent."""


class RefError(InvalidInputError):
    """A ref does not resolve to a commit, or the repo is not a git repository."""


class UnknownSweepError(InvalidInputError):
    """A sweep id (or ``latest``) names no stored sweep."""


class ClusterError(ShasweepError):
    """The Dask cluster is unreachable or has no worker holding the bench resource."""

    exit_code = EXIT_RUN_FAILED


class ProtocolError(ShasweepError):
    """A bench stream broke the run protocol (malformed record, wrong protocol version, SHA mismatch)."""

    exit_code = EXIT_RUN_FAILED
