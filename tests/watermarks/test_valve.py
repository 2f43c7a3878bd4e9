"""StatusWatermarkValve (facts from Flink's StatusWatermarkValveTest): after every input, exactly the expected
emissions and nothing else."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from panes.elements import Watermark, WatermarkStatus
from panes.time import LONG_MIN
from panes.watermarks import StatusWatermarkValve
from tests.watermarks._support import ValveRecorder

IDLE = WatermarkStatus.IDLE
ACTIVE = WatermarkStatus.ACTIVE


def test_single_input_increasing_watermarks() -> None:
    out = ValveRecorder()
    valve = StatusWatermarkValve(1)
    valve.input_watermark(Watermark(0), 0, out)
    assert out.pop() == Watermark(0)
    assert out.pop() is None
    valve.input_watermark(Watermark(25), 0, out)
    assert out.pop() == Watermark(25)
    assert out.pop() is None


def test_single_input_decreasing_watermarks_yield_no_output() -> None:
    out = ValveRecorder()
    valve = StatusWatermarkValve(1)
    valve.input_watermark(Watermark(25), 0, out)
    assert out.pop() == Watermark(25)
    valve.input_watermark(Watermark(18), 0, out)
    assert out.pop() is None
    valve.input_watermark(Watermark(42), 0, out)
    assert out.pop() == Watermark(42)
    assert out.pop() is None


def test_single_input_status_toggling() -> None:
    out = ValveRecorder()
    valve = StatusWatermarkValve(1)
    valve.input_watermark_status(ACTIVE, 0, out)  # channels start ACTIVE: no change, no output
    assert out.pop() is None
    valve.input_watermark_status(IDLE, 0, out)
    assert out.pop() is IDLE
    valve.input_watermark_status(IDLE, 0, out)
    assert out.pop() is None
    valve.input_watermark_status(ACTIVE, 0, out)
    assert out.pop() is ACTIVE
    assert out.pop() is None


def test_single_input_watermark_intact_during_idleness() -> None:
    out = ValveRecorder()
    valve = StatusWatermarkValve(1)
    valve.input_watermark(Watermark(25), 0, out)
    assert out.pop() == Watermark(25)
    assert out.pop() is None
    valve.input_watermark_status(IDLE, 0, out)
    assert out.pop() is IDLE
    valve.input_watermark(Watermark(50), 0, out)  # ignored while idle
    assert out.pop() is None
    assert valve.get_input_channel_status(0).watermark == 25
    valve.input_watermark_status(ACTIVE, 0, out)
    assert out.pop() is ACTIVE
    assert out.pop() is None
    valve.input_watermark(Watermark(50), 0, out)
    assert out.pop() == Watermark(50)
    assert out.pop() is None


def test_multiple_inputs_yield_a_watermark_only_once_all_have_one() -> None:
    out = ValveRecorder()
    valve = StatusWatermarkValve(3)
    valve.input_watermark(Watermark(0), 0, out)
    valve.input_watermark(Watermark(0), 1, out)
    assert out.pop() is None
    valve.input_watermark(Watermark(0), 2, out)
    assert out.pop() == Watermark(0)
    assert out.pop() is None


def test_multiple_inputs_increasing_watermarks_emit_the_new_minimum() -> None:
    out = ValveRecorder()
    valve = StatusWatermarkValve(3)
    for channel in range(3):
        valve.input_watermark(Watermark(0), channel, out)
    assert out.pop() == Watermark(0)
    valve.input_watermark(Watermark(12), 0, out)
    valve.input_watermark(Watermark(8), 2, out)
    valve.input_watermark(Watermark(10), 2, out)
    assert out.pop() is None
    valve.input_watermark(Watermark(15), 1, out)
    assert out.pop() == Watermark(10)  # channel 2
    assert out.pop() is None
    valve.input_watermark(Watermark(17), 2, out)
    assert out.pop() == Watermark(12)  # channel 0
    assert out.pop() is None
    valve.input_watermark(Watermark(20), 0, out)
    assert out.pop() == Watermark(15)  # channel 1
    assert out.pop() is None


def test_multiple_inputs_decreasing_watermarks_yield_no_output() -> None:
    out = ValveRecorder()
    valve = StatusWatermarkValve(3)
    valve.input_watermark(Watermark(25), 0, out)
    valve.input_watermark(Watermark(10), 1, out)
    valve.input_watermark(Watermark(17), 2, out)
    assert out.pop() == Watermark(10)
    valve.input_watermark(Watermark(12), 0, out)
    valve.input_watermark(Watermark(8), 1, out)
    valve.input_watermark(Watermark(15), 2, out)
    assert out.pop() is None


def test_multiple_inputs_status_toggling() -> None:
    out = ValveRecorder()
    valve = StatusWatermarkValve(2)
    valve.input_watermark_status(ACTIVE, 0, out)
    valve.input_watermark_status(ACTIVE, 1, out)
    assert out.pop() is None
    valve.input_watermark_status(IDLE, 1, out)
    assert out.pop() is None
    valve.input_watermark_status(IDLE, 0, out)  # now all idle
    assert out.pop() is IDLE
    valve.input_watermark_status(IDLE, 0, out)
    valve.input_watermark_status(IDLE, 1, out)
    assert out.pop() is None
    valve.input_watermark_status(ACTIVE, 1, out)  # one active input makes the valve active
    assert out.pop() is ACTIVE
    valve.input_watermark_status(ACTIVE, 0, out)
    assert out.pop() is None


def test_watermark_advances_from_the_remaining_active_inputs() -> None:
    out = ValveRecorder()
    valve = StatusWatermarkValve(3)
    valve.input_watermark(Watermark(15), 0, out)
    valve.input_watermark(Watermark(10), 1, out)
    assert out.pop() is None
    valve.input_watermark_status(IDLE, 2, out)
    assert out.pop() == Watermark(10)
    assert out.pop() is None
    valve.input_watermark(Watermark(18), 1, out)
    assert out.pop() == Watermark(15)
    assert out.pop() is None
    valve.input_watermark(Watermark(20), 0, out)
    assert out.pop() == Watermark(18)
    assert out.pop() is None


def test_watermark_advances_as_inputs_individually_become_idle() -> None:
    out = ValveRecorder()
    valve = StatusWatermarkValve(3)
    valve.input_watermark(Watermark(25), 0, out)
    valve.input_watermark(Watermark(10), 1, out)
    valve.input_watermark(Watermark(17), 2, out)
    assert out.pop() == Watermark(10)
    valve.input_watermark_status(IDLE, 1, out)
    assert out.pop() == Watermark(17)
    valve.input_watermark_status(IDLE, 2, out)
    assert out.pop() == Watermark(25)
    assert out.pop() is None


def test_all_inputs_idle_flushes_the_max_watermark_then_idle() -> None:
    out = ValveRecorder()
    valve = StatusWatermarkValve(3)
    valve.input_watermark(Watermark(10), 0, out)
    valve.input_watermark(Watermark(5), 1, out)
    valve.input_watermark(Watermark(3), 2, out)
    assert out.pop() == Watermark(3)
    valve.input_watermark_status(IDLE, 0, out)
    valve.input_watermark_status(IDLE, 1, out)
    assert out.pop() is None
    valve.input_watermark_status(IDLE, 2, out)
    assert out.pop() == Watermark(10)
    assert out.pop() is IDLE
    assert out.pop() is None


def test_resumed_input_is_realigned_only_after_catching_up() -> None:
    out = ValveRecorder()
    valve = StatusWatermarkValve(3)
    valve.input_watermark(Watermark(10), 0, out)
    valve.input_watermark(Watermark(7), 1, out)
    valve.input_watermark(Watermark(3), 2, out)
    assert out.pop() == Watermark(3)
    assert out.pop() is None
    valve.input_watermark_status(IDLE, 2, out)
    assert out.pop() == Watermark(7)
    assert out.pop() is None
    valve.input_watermark_status(ACTIVE, 2, out)  # 3 < 7: not aligned yet
    assert valve.get_input_channel_status(2).is_watermark_aligned is False
    valve.input_watermark(Watermark(5), 2, out)  # accepted, but does not count yet
    assert valve.get_input_channel_status(2).watermark == 5
    assert out.pop() is None
    valve.input_watermark(Watermark(9), 2, out)  # caught up with 7: aligned again
    assert valve.get_input_channel_status(2).is_watermark_aligned is True
    assert out.pop() is None
    valve.input_watermark(Watermark(12), 1, out)
    assert out.pop() == Watermark(9)
    assert out.pop() is None


def test_no_output_when_every_active_input_is_unaligned() -> None:
    out = ValveRecorder()
    valve = StatusWatermarkValve(3)
    valve.input_watermark(Watermark(10), 0, out)
    valve.input_watermark(Watermark(7), 1, out)
    valve.input_watermark_status(IDLE, 2, out)
    assert out.pop() == Watermark(7)
    assert out.pop() is None
    valve.input_watermark_status(ACTIVE, 2, out)  # still unaligned
    assert out.pop() is None
    valve.input_watermark_status(IDLE, 0, out)
    valve.input_watermark_status(IDLE, 1, out)
    assert out.pop() is None  # in particular no LONG_MAX watermark


def test_resumed_input_already_ahead_is_aligned_at_once() -> None:
    out = ValveRecorder()
    valve = StatusWatermarkValve(2)
    valve.input_watermark(Watermark(20), 0, out)
    valve.input_watermark(Watermark(5), 1, out)
    assert out.pop() == Watermark(5)
    valve.input_watermark_status(IDLE, 0, out)
    valve.input_watermark_status(ACTIVE, 0, out)
    assert valve.get_input_channel_status(0).is_watermark_aligned is True
    assert out.pop() is None


def test_initial_state_and_arguments() -> None:
    valve = StatusWatermarkValve(2)
    status = valve.get_input_channel_status(1)
    assert (status.watermark, status.status, status.is_watermark_aligned) == (LONG_MIN, ACTIVE, True)
    assert valve.last_output_watermark == LONG_MIN
    assert valve.last_output_status is ACTIVE
    assert valve.num_inputs == 2
    with pytest.raises(IndexError):
        valve.input_watermark(Watermark(1), 2, ValveRecorder())
    with pytest.raises(ValueError, match="at least one input"):
        StatusWatermarkValve(0)
    with pytest.raises(TypeError):
        StatusWatermarkValve(True)


_inputs = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.one_of(st.integers(-50, 50), st.sampled_from([IDLE, ACTIVE])),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(_inputs)
def test_valve_invariants(steps: list[tuple[int, int | WatermarkStatus]]) -> None:
    """Watermarks only go up and were reported by some input; statuses alternate; an input's watermark is the
    largest it reported while active; aligned inputs are active, never below the output watermark, and after a
    watermark the output watermark is the least of theirs (Flink's rule: the minimum over the aligned inputs).
    Found by this property: an idle input with a higher watermark that becomes active again is aligned at once,
    yet the output waits for the next watermark."""
    out = ValveRecorder()
    valve = StatusWatermarkValve(4)
    reported: list[int] = []
    expected = [LONG_MIN] * 4  # each input's watermark, by the rule above
    statuses = [ACTIVE] * 4
    last_status = ACTIVE
    last_mark = LONG_MIN
    for channel, item in steps:
        if isinstance(item, WatermarkStatus):
            valve.input_watermark_status(item, channel, out)
            statuses[channel] = item
        else:
            if statuses[channel] is ACTIVE:
                reported.append(item)
                expected[channel] = max(expected[channel], item)
            valve.input_watermark(Watermark(item), channel, out)
        for emitted in out.queue:
            if isinstance(emitted, Watermark):
                assert emitted.timestamp > last_mark
                assert emitted.timestamp in reported
                last_mark = emitted.timestamp
            else:
                assert emitted is not last_status
                last_status = emitted
        out.queue.clear()
        assert valve.last_output_watermark == last_mark, "the output watermark is the last one emitted"
        inputs = [valve.get_input_channel_status(i) for i in range(4)]
        assert [c.watermark for c in inputs] == expected
        assert [c.status for c in inputs] == statuses
        assert (valve.last_output_status is IDLE) == all(c.status is IDLE for c in inputs)
        aligned = [c.watermark for c in inputs if c.is_watermark_aligned]
        for c in inputs:
            if c.is_watermark_aligned:  # only active inputs at or above the output count towards the minimum
                assert c.status is ACTIVE
                assert c.watermark >= valve.last_output_watermark
        if aligned and not isinstance(item, WatermarkStatus):
            # a watermark makes the valve emit the least aligned watermark when it rose; a status change need not
            # (an input active again keeps its watermark above the output until the next watermark, as in Flink)
            assert valve.last_output_watermark == min(aligned)


def test_valve_state_survives_pickling() -> None:
    """Runners snapshot valves between elements."""
    import pickle

    out = ValveRecorder()
    valve = StatusWatermarkValve(2)
    valve.input_watermark(Watermark(5), 0, out)
    valve.input_watermark(Watermark(7), 1, out)
    valve.input_watermark_status(IDLE, 0, out)
    restored = pickle.loads(pickle.dumps(valve))
    assert restored.last_output_watermark == 7
    assert restored.get_input_channel_status(0) == valve.get_input_channel_status(0)
    restored.input_watermark(Watermark(9), 1, out)
    assert out.queue[-1] == Watermark(9)
