"""What one window step did, recorded from the real operator through its observer (``panes.windowing.observer``).

A :class:`StepRecorder` gives each parallel instance of a window step a :class:`WindowObserver` and collects,
in processing order, for a sample of keys: every element (key, value, timestamp, the watermark it met, the
windows it was added to, and its fate: in a window, late to the side output, or dropped), every firing with
its pane timing (:func:`panes.windowing.observer.pane_timing`), merges and cleanups; and, for all keys, each
watermark the step received (and each processing time, for steps whose windows close on it). The result is
a :class:`StepTimeline`.

*Position* is the processing order: the number of elements the step had received (all keys, all instances)
when something happened; a firing caused by element ``n`` or by the watermark that followed it has position
``n``. The keys sampled are the ``keys`` asked for (compared by value or by ``str``), else the first
``max_keys`` distinct keys to arrive. Recording stops after ``max_elements`` elements (``truncated``), so a long
job cannot fill the memory; what the operator does is not affected.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from panes.windowing.observer import PaneTiming, WindowObserver, pane_timing


class ElementFate(Enum):
    """What became of an element in the window operator."""

    IN_WINDOW = "in window"  # added to at least one window's pane
    LATE = "late"  # every window was late: sent to the late-data side output
    DROPPED = "dropped"  # every window was late and there is no late-data output: dropped (and counted)
    NO_WINDOW = "no window"  # no window took it and it was not late (an assigner that gave no window)


@dataclass(slots=True)
class RecordedElement:
    position: int
    subtask: int
    key: Any
    value: Any
    timestamp: int | None
    watermark: int
    processing_time: int
    windows: list[Any] = field(default_factory=list)
    fate: ElementFate = ElementFate.NO_WINDOW


@dataclass(frozen=True, slots=True)
class RecordedFiring:
    """A pane of ``window`` evaluated at ``position``; ``pane_index`` counts the window's panes from 0; ``time``
    is the closing time it fired at (a timer's time, or the watermark / processing time then: see
    ``WindowObserver.fired``), ``watermark`` and ``processing_time`` the operator's clocks then."""

    position: int
    subtask: int
    key: Any
    window: Any
    timing: PaneTiming
    pane_index: int
    time: int
    watermark: int
    processing_time: int


@dataclass(frozen=True, slots=True)
class WatermarkPoint:
    """Instance ``subtask`` of the step received ``watermark`` after ``position`` elements."""

    position: int
    subtask: int
    watermark: int


@dataclass(frozen=True, slots=True)
class KeyWatermarkPoint:
    """Event time per key: sampled ``key``'s effective watermark was ``watermark`` after ``position`` elements
    (after an element of it, or at a firing of its windows)."""

    position: int
    key: Any
    watermark: int


@dataclass(frozen=True, slots=True)
class ClockPoint:
    """Instance ``subtask``'s processing time became ``time`` after ``position`` elements (recorded for steps
    whose windows close on processing time)."""

    position: int
    subtask: int
    time: int


@dataclass(frozen=True, slots=True)
class RecordedMerge:
    position: int
    key: Any
    result: Any
    merged: tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class RecordedCleanup:
    position: int
    key: Any
    window: Any


@dataclass
class StepTimeline:
    """Everything recorded about one window step (see the module docstring)."""

    name: str
    description: str
    event_time: bool
    allowed_lateness: int
    keys: list[Any]
    elements: list[RecordedElement]
    firings: list[RecordedFiring]
    watermarks: list[WatermarkPoint]
    processing_times: list[ClockPoint]
    merges: list[RecordedMerge]
    cleanups: list[RecordedCleanup]
    total_elements: int
    truncated: bool
    parallelism: int
    recorded_elements: int = 0
    """The elements recorded: ``total_elements``, or the ``max_elements`` recording stopped at (``truncated``)."""
    per_key: bool = False
    """Whether the step keeps event time per key (``watermark_per_key``): ``key_watermarks`` has the sampled
    keys' watermarks, ``watermarks`` the stream's."""
    key_watermarks: list[KeyWatermarkPoint] = field(default_factory=list)

    def elements_of(self, key: Any) -> list[RecordedElement]:
        return [e for e in self.elements if e.key == key]

    def firings_of(self, key: Any) -> list[RecordedFiring]:
        return [f for f in self.firings if f.key == key]

    def count(self, fate: ElementFate) -> int:
        return sum(1 for e in self.elements if e.fate is fate)

    def timings(self) -> dict[PaneTiming, int]:
        """How many firings of the sampled keys had each timing."""
        counts = dict.fromkeys(PaneTiming, 0)
        for firing in self.firings:
            counts[firing.timing] += 1
        return counts


class StepRecorder:
    """Records one window step (all its parallel instances): :meth:`observer_for` each instance, then
    :meth:`timeline`. ``max_keys`` must be >= 1 and ``max_elements`` >= 1 (``ValueError`` otherwise)."""

    def __init__(
        self,
        name: str,
        description: str = "",
        *,
        event_time: bool = True,
        allowed_lateness: int = 0,
        per_key: bool = False,
        keys: Sequence[Any] | None = None,
        max_keys: int = 6,
        max_elements: int = 20_000,
    ) -> None:
        if max_keys < 1:
            raise ValueError(f"max_keys must be at least 1 (got {max_keys})")
        if max_elements < 1:
            raise ValueError(f"max_elements must be at least 1 (got {max_elements})")
        self.name = name
        self.description = description
        self.event_time = event_time
        self.allowed_lateness = allowed_lateness
        self.per_key = per_key
        self.key_watermarks: list[KeyWatermarkPoint] = []
        self._wanted = None if keys is None else list(keys)
        self._wanted_text = None if keys is None else {str(k) for k in keys}
        self._max_keys = max_keys
        self._max_elements = max_elements
        self._sampled: dict[Any, None] = {}  # insertion-ordered set
        self._rejected: set[Any] = set()
        self.position = 0
        self.recording = True
        self.elements: list[RecordedElement] = []
        self.firings: list[RecordedFiring] = []
        self.watermarks: list[WatermarkPoint] = []
        self.processing_times: list[ClockPoint] = []
        self.merges: list[RecordedMerge] = []
        self.cleanups: list[RecordedCleanup] = []
        self._current: RecordedElement | None = None
        self._last_timing: dict[tuple[Any, Any], tuple[PaneTiming, int]] = {}
        self._subtasks: set[int] = set()

    def observer_for(self, subtask: int) -> WindowObserver:
        """The observer for instance ``subtask`` of the step."""
        self._subtasks.add(subtask)
        return _InstanceObserver(self, subtask)

    # -- sampling --------------------------------------------------------------------------------------------

    def is_sampled(self, key: Any) -> bool:
        if key in self._sampled:
            return True
        if key in self._rejected or not self.recording:
            return False
        if self._wanted is not None:
            assert self._wanted_text is not None
            chosen = key in self._wanted or str(key) in self._wanted_text
        else:
            chosen = len(self._sampled) < self._max_keys
        if chosen:
            self._sampled[key] = None
        else:
            self._rejected.add(key)
        return chosen

    def sampled_keys(self) -> list[Any]:
        """The sampled keys: in the order asked for when ``keys`` was given, else in order of arrival."""
        if self._wanted is None:
            return list(self._sampled)
        order = {str(k): i for i, k in enumerate(self._wanted)}
        return sorted(self._sampled, key=lambda k: order.get(str(k), len(order)))

    # -- events (from the instances' observers) -----------------------------------------------------------------

    def on_element(self, subtask: int, key: Any, value: Any, timestamp: int | None, watermark: int, now: int) -> None:
        self.position += 1
        self._current = None
        if self.position > self._max_elements:
            self.recording = False
            return
        if self.is_sampled(key):
            self._current = RecordedElement(self.position, subtask, key, value, timestamp, watermark, now)
            self.elements.append(self._current)

    def on_assigned(self, key: Any, window: Any) -> None:
        current = self._current
        if current is not None and current.key == key:
            current.windows.append(window)
            current.fate = ElementFate.IN_WINDOW

    def on_late(self, key: Any, side_output: bool) -> None:
        current = self._current
        if current is not None and current.key == key:
            current.fate = ElementFate.LATE if side_output else ElementFate.DROPPED

    def on_fired(self, subtask: int, key: Any, window: Any, time: int, before: int, watermark: int, now: int) -> None:
        if not self.recording or key not in self._sampled:
            return
        slot = (key, window)
        previous, count = self._last_timing.get(slot, (None, 0))
        timing = pane_timing(window.max_timestamp(), time, before, previous)
        self._last_timing[slot] = (timing, count + 1)
        self.firings.append(RecordedFiring(self.position, subtask, key, window, timing, count, time, watermark, now))
        if self.per_key:
            self.key_watermarks.append(KeyWatermarkPoint(self.position, key, watermark))

    def on_key_time(self, key: Any, watermark: int) -> None:
        if self.recording and key in self._sampled:
            self.key_watermarks.append(KeyWatermarkPoint(self.position, key, watermark))

    def on_merged(self, key: Any, result: Any, merged: Sequence[Any]) -> None:
        if not self.recording or key not in self._sampled:
            return
        self.merges.append(RecordedMerge(self.position, key, result, tuple(merged)))
        # the merged window continues the most advanced timing of the panes it absorbs, and their pane count
        timings = [self._last_timing.pop((key, w), None) for w in merged]
        timings.append(self._last_timing.get((key, result)))
        known = [t for t in timings if t is not None]
        if known:
            rank = [PaneTiming.EARLY, PaneTiming.ON_TIME, PaneTiming.LATE]
            timing = max((t for t, _ in known), key=rank.index)
            self._last_timing[(key, result)] = (timing, sum(n for _, n in known))

    def on_cleaned(self, key: Any, window: Any) -> None:
        if not self.recording or key not in self._sampled:
            return
        self._last_timing.pop((key, window), None)
        self.cleanups.append(RecordedCleanup(self.position, key, window))

    def on_watermark(self, subtask: int, watermark: int) -> None:
        if self.recording:
            self.watermarks.append(WatermarkPoint(self.position, subtask, watermark))

    def on_processing_time(self, subtask: int, now: int) -> None:
        if self.recording and not self.event_time:
            self.processing_times.append(ClockPoint(self.position, subtask, now))

    def timeline(self) -> StepTimeline:
        """What was recorded so far."""
        return StepTimeline(
            name=self.name,
            description=self.description,
            event_time=self.event_time,
            allowed_lateness=self.allowed_lateness,
            keys=self.sampled_keys(),
            elements=list(self.elements),
            firings=list(self.firings),
            watermarks=list(self.watermarks),
            processing_times=list(self.processing_times),
            merges=list(self.merges),
            cleanups=list(self.cleanups),
            total_elements=self.position,
            truncated=self.position > self._max_elements,
            recorded_elements=min(self.position, self._max_elements),
            parallelism=max(1, len(self._subtasks)),
            per_key=self.per_key,
            key_watermarks=list(self.key_watermarks),
        )


class _InstanceObserver(WindowObserver):
    """The observer of one parallel instance: tags what it hears with the instance's index."""

    __slots__ = ("_recorder", "_subtask")

    def __init__(self, recorder: StepRecorder, subtask: int) -> None:
        self._recorder = recorder
        self._subtask = subtask

    def element(self, key: Any, value: Any, timestamp: int | None, watermark: int, processing_time: int) -> None:
        self._recorder.on_element(self._subtask, key, value, timestamp, watermark, processing_time)

    def assigned(self, key: Any, window: Any) -> None:
        self._recorder.on_assigned(key, window)

    def late(self, key: Any, value: Any, timestamp: int, watermark: int, side_output: bool) -> None:
        self._recorder.on_late(key, side_output)

    def merged(self, key: Any, result: Any, merged_windows: Sequence[Any]) -> None:
        self._recorder.on_merged(key, result, merged_windows)

    def fired(self, key: Any, window: Any, time: int, time_before: int, watermark: int, processing_time: int) -> None:
        self._recorder.on_fired(self._subtask, key, window, time, time_before, watermark, processing_time)

    def cleaned(self, key: Any, window: Any) -> None:
        self._recorder.on_cleaned(key, window)

    def watermark(self, previous: int, watermark: int) -> None:
        self._recorder.on_watermark(self._subtask, watermark)

    def processing_time(self, previous: int, now: int) -> None:
        self._recorder.on_processing_time(self._subtask, now)

    def key_time(self, key: Any, watermark: int) -> None:
        self._recorder.on_key_time(key, watermark)
