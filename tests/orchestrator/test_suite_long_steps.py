"""A suite case whose one call alone outlasts a lockstep block's span plays blocks of one step
(``suite_round.case_plan``), from the step time its calibration reports (``calibrated``'s
``step_ms``, kept in the sweep's ``suite-calls.json``)."""

from __future__ import annotations

import json

import pytest

from orchestrator.errors import ProtocolError
from orchestrator.worker.lockstep_round import BlockPlan
from orchestrator.worker.protocols.suite_stream import SuiteStreamState
from orchestrator.worker.suite_round import LONG_STEP_MS, Calibrated, _read_calls, _write_calls, case_plan

PLAN = BlockPlan(block_steps=5, blocks=8, block_warmup=1)


@pytest.mark.parametrize(("step_ms", "expected"), [
    (None, PLAN),  # not timed (pedantic's iterations): as planned
    (9.0, PLAN),  # about the step's aim
    (50.0, PLAN),  # one step as long as a whole block's span: still as planned
    (51.0, BlockPlan(block_steps=1, blocks=8, block_warmup=1)),
    (LONG_STEP_MS - 1, BlockPlan(block_steps=1, blocks=8, block_warmup=1)),
    (LONG_STEP_MS, BlockPlan(block_steps=1, blocks=8, block_warmup=0)),  # warms itself
    (5000.0, BlockPlan(block_steps=1, blocks=8, block_warmup=0)),
])
def test_a_case_of_long_steps_plays_blocks_of_one_step(step_ms, expected):
    assert case_plan(PLAN, Calibrated(1, step_ms), target_ms=10.0) == expected
    assert case_plan(PLAN, Calibrated(2, step_ms), target_ms=10.0) == PLAN, \
        "a step of several calls was calibrated to its aim: one longer step is the host's noise"


def test_the_calls_file_keeps_the_step_time_and_reads_what_older_sweeps_wrote(tmp_path):
    path = tmp_path / "suite-calls.json"
    _write_calls(path, {"a": Calibrated(3, 12.5), "b": Calibrated(7)})
    assert _read_calls(path) == {"a": Calibrated(3, 12.5), "b": Calibrated(7, None)}
    path.write_text(json.dumps({"old": 4, "zero": 0, "flag": True, "text": "5", "listed": [1],
                                "inf": {"calls": 2, "step_ms": 1e999},
                                "negative": {"calls": 2, "step_ms": -1}}))
    # a bare count (older sweeps) has no step time; a bad step time is dropped; a bad count leaves
    # its case to calibrate again
    assert _read_calls(path) == {"old": Calibrated(4), "inf": Calibrated(2), "negative": Calibrated(2)}
    path.write_text("[not json")
    assert _read_calls(path) == {}


def stream_of(*records: dict) -> SuiteStreamState:
    state = SuiteStreamState()
    for record in ({"kind": "header", "protocol": 1, "control": 1, "suite": 1, "cases": ["x"]}, *records):
        state.feed(json.dumps(record))
    return state


def test_the_stream_reads_a_calibration_s_step_time_and_refuses_a_bad_one():
    state = stream_of({"kind": "case", "case": "x"},
                      {"kind": "calibrated", "case": "x", "calls": 2, "step_ms": 11})
    assert (state.case("x").calls, state.case("x").step_ms) == (2, 11.0)
    assert stream_of({"kind": "calibrated", "case": "x", "calls": 2}).case("x").step_ms is None
    for bad in (-1, "11", True, float("nan")):
        with pytest.raises(ProtocolError, match="'step_ms' must be a finite time >= 0"):
            stream_of({"kind": "calibrated", "case": "x", "calls": 2, "step_ms": bad})
