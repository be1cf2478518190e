"""Run protocol v1: NDJSON records streamed to ``{stream}`` while the bench runs, read live."""

from __future__ import annotations

from orchestrator.errors import ProtocolError
from orchestrator.worker.protocols import BenchReader, OnStep, Start, StopSignal, int_param
from orchestrator.worker.protocols.v1_records import StreamState
from orchestrator.worker.stream import StreamAbandoned, follow_lines


class StreamReader(BenchReader):
    """Tails the stream: header (its ``git_sha`` must be the run's SHA), steps, summary or error."""

    protocol = "v1"
    state: StreamState

    @property
    def total_steps(self) -> int | None:
        if "measure" not in self.run.params:
            return None
        return int_param(self.run.params, "warmup", 0) + int_param(self.run.params, "measure", 0)

    def execute(self, start: Start, stop: StopSignal, on_step: OnStep) -> str | None:
        self.state = StreamState(steps=self.steps, max_steps=self.run.max_steps)
        self.kindless = 0  # records the reader skipped: no known "kind"
        proc = start()
        try:
            for line in follow_lines(self.stream_path, lambda: stop.should_stop(proc), stop.expired):
                record = self.state.feed(line)
                self.on_record(record)
                self.kindless += record is None and bool(line.strip())
                kind = record.get("kind") if record else None
                if kind == "header":
                    check_sha(self.state.header, self.run.sha)
                elif kind == "step":
                    on_step(self.steps.last, len(self.steps))
        except ProtocolError as exc:
            return str(exc)
        except StreamAbandoned:  # the deadline or a cancel came first: the verdict says which
            self.abandoned = True
        finally:
            self.header, self.summary = self.state.header, self.state.summary
        return None

    def bench_error(self) -> str | None:
        return self.state.error_message()

    def reported_peak_rss_mib(self) -> float | None:
        value = (self.summary or {}).get("peak_rss_mb")
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    def complete(self) -> str | None:
        if self.state.error is not None:
            return f"bench reported an error: {self.state.error_message()}"
        if self.state.header is None or self.state.summary is None:
            missing = "header" if self.state.header is None else "summary"
            hint = (f"; {self.kindless} of its records had no known \"kind\" (header, step, summary or "
                    "error)" if self.kindless else "")
            return f"bench exited 0 without a {missing} record (stream: {self.stream_path}{hint})"
        return None


def check_sha(header: dict | None, sha: str) -> None:
    """The header's ``audit.git_sha`` must be the requested SHA."""
    audit = (header or {}).get("audit") or {}
    loaded = audit.get("git_sha")
    if loaded != sha:
        raise ProtocolError(f"the bench imported code at SHA {loaded} from {audit.get('module_file')}, "
                            f"not the requested SHA {sha}")
