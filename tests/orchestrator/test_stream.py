"""Run-protocol stream parsing and live following."""

from __future__ import annotations

import json
import threading
import time

import pytest

from orchestrator.errors import ProtocolError
from orchestrator.worker.protocols.v1_records import StreamState
from orchestrator.worker.stream import READ_CHUNK_BYTES, StreamAbandoned, follow_lines

HEADER = {"kind": "header", "protocol": 1, "case": {}, "params": {}, "audit": {"git_sha": "abc"}}


def lines(*records: dict) -> list[str]:
    return [json.dumps(r) for r in records]


def test_full_stream_is_accumulated_and_unknowns_ignored():
    state = StreamState()
    for line in lines(
        {**HEADER, "new_top_level": 1},
        {"kind": "future_kind", "x": 1},
        {"kind": "step", "step": 0, "warmup": True, "phases": {"physics_ms": 2}, "unknown": [1]},
        {"kind": "step", "step": 1, "warmup": False, "phases": {"physics_ms": 1.5, "new_ms": 0.1}},
        {"kind": "summary", "throughput": 10.0, "phase_means_ms": {"physics_ms": 1.5}},
    ) + ["", "   "]:
        state.feed(line)
    assert state.header["audit"]["git_sha"] == "abc"
    rows = state.steps.table("s", "r").select(["step", "warmup", "phase", "ms"]).to_pylist()
    assert rows == [{"step": 0, "warmup": True, "phase": "physics_ms", "ms": 2.0},
                    {"step": 1, "warmup": False, "phase": "physics_ms", "ms": 1.5},
                    {"step": 1, "warmup": False, "phase": "new_ms", "ms": 0.1}]
    assert (len(state.steps), state.steps.measured, state.steps.last.step) == (2, 1, 1)
    assert state.summary["throughput"] == 10.0 and state.error is None


def test_malformed_line_names_the_line():
    state = StreamState()
    state.feed(json.dumps(HEADER))
    with pytest.raises(ProtocolError, match=r"stream line 2 is not valid JSON"):
        state.feed('{"kind": "step", ')


@pytest.mark.parametrize("line, message", [
    ("[1, 2]", "not a JSON object"),
    (json.dumps({**HEADER, "protocol": 2}), "protocol 2; this shasweep reads protocol 1"),
    (json.dumps({"kind": "step", "step": 0, "phases": {}}), "step record before the header"),
])
def test_protocol_violations(line, message):
    with pytest.raises(ProtocolError, match=message):
        StreamState().feed(line)


def test_bad_step_and_second_header():
    state = StreamState()
    state.feed(json.dumps(HEADER))
    with pytest.raises(ProtocolError, match="non-numeric phase timing"):
        state.feed(json.dumps({"kind": "step", "step": 0, "phases": {"physics_ms": "fast"}}))
    with pytest.raises(ProtocolError, match="integer 'step'"):
        state.feed(json.dumps({"kind": "step", "step": "0", "phases": {}}))
    with pytest.raises(ProtocolError, match="second header"):
        state.feed(json.dumps(HEADER))


def test_error_record_message():
    state = StreamState()
    state.feed(json.dumps({"kind": "error", "type": "ValueError", "message": "unknown task 'x'"}))
    assert state.error_message() == "ValueError: unknown task 'x'"


def test_follow_yields_lines_while_the_writer_is_still_writing(tmp_path):
    path = tmp_path / "stream.jsonl"
    done = threading.Event()
    seen_before_done: list[str] = []

    def writer() -> None:
        with open(path, "w", buffering=1) as f:
            f.write("first\n")
            while not seen_before_done:  # wait until the reader has the first line
                time.sleep(0.01)
            f.write("second\npartial-")
            f.flush()
            f.write("tail")
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    got = []
    for line in follow_lines(path, done.is_set, poll_s=0.005):
        got.append(line)
        if not done.is_set():
            seen_before_done.append(line)
    thread.join()
    assert seen_before_done[0] == "first"
    assert got == ["first", "second", "partial-tail"]


def test_follow_a_stream_never_created(tmp_path):
    assert list(follow_lines(tmp_path / "missing", lambda: True)) == []


def test_follow_lines_asks_give_up_between_chunks_and_leaves_the_rest_unread(tmp_path):
    path = tmp_path / "stream.jsonl"
    path.write_bytes(json.dumps(HEADER).encode() + b"\n" + b"\n" * (8 * READ_CHUNK_BYTES))
    asked = []

    def give_up() -> bool:
        asked.append(True)
        return len(asked) == 3

    with pytest.raises(StreamAbandoned, match=r"bytes of .*stream.jsonl left unread"):
        for _ in follow_lines(path, lambda: True, give_up):
            pass
    assert len(asked) == 3, "asked after every chunk that left more to read"
