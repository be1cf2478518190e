"""A suite case whose one call alone outlasts a lockstep block's span plays blocks of one step
(``suite_round.case_plan``), from the step time its calibration reports (``calibrated``'s
``step_ms``, kept in the sweep's ``suite-calls.json``)."""

from __future__ import annotations

import json

import pytest

from orchestrator.errors import ProtocolError
from orchestrator.suitekit.serve import Calibration, StepTimes, calibrate
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


class ScriptedTarget:
    """A benchmark whose steps take the given seconds per call, in turn (the last one from then on)."""

    inner_loops, fixed_calls = 1, None

    def __init__(self, *per_call_s: float) -> None:
        self.per_call_s, self.calls = list(per_call_s), []

    def step(self, calls: int) -> StepTimes:
        self.calls.append(calls)
        seconds = self.per_call_s.pop(0) if len(self.per_call_s) > 1 else self.per_call_s[0]
        return StepTimes(seconds * calls)


def test_a_call_far_past_the_aim_is_timed_again_and_the_shorter_kept():
    # untimed call, then a 3 s call and a 2.9 s one: one call is this slow; its step time the shorter
    slow = ScriptedTarget(3.0, 3.0, 2.9)
    assert calibrate(slow, target_ms=10.0) == Calibration(1, 2900.0) and slow.calls == [1, 1, 1]
    # a fast call (0.1 ms) once descheduled for 60 ms: the second timing shows it, the calls grow
    paused = ScriptedTarget(0.0001, 0.06, 0.0001)
    found = calibrate(paused, target_ms=10.0)
    assert found.calls > 50 and found.step_ms == pytest.approx(found.calls * 0.1, rel=1e-9)
    # near the aim (under twice it) a call is not timed again
    near = ScriptedTarget(0.015)
    assert calibrate(near, target_ms=10.0) == Calibration(1, pytest.approx(15.0)) and near.calls == [1, 1]
