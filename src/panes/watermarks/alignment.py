"""Watermark alignment: Flink's alignment parameters, coordinator bookkeeping and source-side pause decision.

In Flink (FLIP-182 / FLIP-217), sources in the same *watermark group* keep their watermarks within
``max_allowed_watermark_drift`` of each other:

1. Every ``update_interval`` each source subtask reports its current watermark to its coordinator: nothing
   before its first watermark, ``LONG_MAX`` while it is idle, ``LONG_MAX`` once its input has ended.
2. Each source's coordinator keeps the minimum over its subtasks' latest reports, and the group keeps the
   minimum over its sources (an empty group counts as ``LONG_MIN``).
3. Every ``update_interval`` each coordinator announces to its reporting subtasks the *max allowed
   watermark* ``group minimum + max_allowed_watermark_drift`` (``LONG_MAX`` on overflow, that is when
   every source is idle).
4. A subtask whose latest watermark exceeds the announced maximum stops reading (and its idleness clock
   pauses) until a later announcement is at least its watermark; with several splits, each split whose
   watermark exceeds the maximum is paused and resumed likewise.

Alignment applies to sources only: a ``TimestampsAndWatermarksOperator`` in the middle of a pipeline
ignores it, as Flink's does. :class:`WatermarkAlignmentCoordinator` plays the coordinators of one process;
:class:`SourceWatermarkAlignment` is one source subtask's side. A runner moves both with processing time.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from panes.time import LONG_MAX, LONG_MIN, DurationLike, duration_ms
from panes.watermarks.clock import PausableClock

K = TypeVar("K", bound=Hashable)

DEFAULT_UPDATE_INTERVAL: int = 1000
"""How often, in ms, sources report and coordinators announce unless told otherwise (Flink's default)."""


@dataclass(frozen=True)
class WatermarkAlignmentParams:
    """A source's alignment settings (Flink's ``WatermarkAlignmentParams``), all times in ``int`` ms.

    Alignment is enabled when ``max_allowed_watermark_drift < LONG_MAX``; the disabled default is
    ``(LONG_MAX, "", 0)``. Use :meth:`of` to validate user input the way ``with_watermark_alignment`` does.
    """

    max_allowed_watermark_drift: int = LONG_MAX
    watermark_group: str = ""
    update_interval: int = 0

    @staticmethod
    def of(
        watermark_group: str,
        max_allowed_watermark_drift: DurationLike,
        update_interval: DurationLike = DEFAULT_UPDATE_INTERVAL,
    ) -> WatermarkAlignmentParams:
        """Validated parameters: ``watermark_group`` a ``str``, ``max_allowed_watermark_drift >= 0`` and
        ``update_interval > 0`` (``timedelta`` or ``int`` ms; default 1000 ms).

        Raises ``TypeError`` for a group that is not a ``str`` and ``ValueError`` for a negative drift or a
        non-positive update interval.
        """
        if not isinstance(watermark_group, str):
            raise TypeError(f"watermark_group must be a str, got {type(watermark_group).__name__}")
        drift = duration_ms(max_allowed_watermark_drift, name="max_allowed_watermark_drift")
        if drift < 0:
            raise ValueError(f"max_allowed_watermark_drift must be greater than or equal to zero (got {drift} ms)")
        interval = duration_ms(update_interval, name="update_interval")
        if interval <= 0:
            raise ValueError(f"update_interval must be positive (got {interval} ms)")
        return WatermarkAlignmentParams(drift, watermark_group, interval)

    def is_enabled(self) -> bool:
        return self.max_allowed_watermark_drift < LONG_MAX


WATERMARK_ALIGNMENT_DISABLED = WatermarkAlignmentParams()
"""The parameters of a strategy without alignment."""


def max_allowed_watermark(combined_watermark: int, max_allowed_watermark_drift: int) -> int:
    """``combined_watermark + max_allowed_watermark_drift``, or ``LONG_MAX`` when that overflows a long."""
    total = combined_watermark + max_allowed_watermark_drift
    return LONG_MAX if total > LONG_MAX else total


class WatermarkAggregator(Generic[K]):
    """The minimum over the latest watermark of each key (Flink's ``SourceCoordinator.WatermarkAggregator``).

    ``LONG_MIN`` while no key has reported. A key's new watermark replaces its previous one, even when lower.
    """

    __slots__ = ("_watermarks",)

    def __init__(self) -> None:
        self._watermarks: dict[K, int] = {}

    def aggregate(self, key: K, watermark: int) -> int | None:
        """Record ``watermark`` for ``key``; returns the new minimum if it changed, else ``None``."""
        before = self.aggregated_watermark
        self._watermarks[key] = watermark
        after = self.aggregated_watermark
        return None if after == before else after

    @property
    def aggregated_watermark(self) -> int:
        return min(self._watermarks.values(), default=LONG_MIN)

    def keys(self) -> set[K]:
        return set(self._watermarks)

    def get(self, key: K) -> int | None:
        return self._watermarks.get(key)


@dataclass
class _Source:
    params: WatermarkAlignmentParams
    subtasks: WatermarkAggregator[int] = field(default_factory=WatermarkAggregator)
    next_announcement: int = 0
    announced: dict[int, int] = field(default_factory=dict)


class WatermarkAlignmentCoordinator:
    """The alignment bookkeeping of every source coordinator in one process, sharing one group store.

    ``register_source(name, params, now)`` starts a source (its first announcement is due at
    ``now + update_interval``); ``report_watermark(name, subtask, watermark)`` is a subtask's report;
    ``advance_processing_time(now)`` makes each source whose announcement is due announce (once per call,
    then every ``update_interval`` after ``now``) and returns what was announced; ``announce(name)`` does it
    for one source now. A runner delivers each announced value to the subtask's
    :class:`SourceWatermarkAlignment`.
    """

    def __init__(self) -> None:
        self._sources: dict[str, _Source] = {}
        self._groups: dict[str, WatermarkAggregator[str]] = {}

    def register_source(self, source: str, params: WatermarkAlignmentParams, now: int = 0) -> None:
        """Start coordinating ``source``; raises ``ValueError`` if alignment is disabled or it is known."""
        if not isinstance(params, WatermarkAlignmentParams):
            raise TypeError(f"expected WatermarkAlignmentParams, got {type(params).__name__}")
        if not params.is_enabled():
            raise ValueError(f"watermark alignment is disabled for source {source!r}")
        if source in self._sources:
            raise ValueError(f"source {source!r} is already registered")
        self._sources[source] = _Source(params, next_announcement=now + params.update_interval)
        self._groups.setdefault(params.watermark_group, WatermarkAggregator())

    def _source(self, source: str) -> _Source:
        try:
            return self._sources[source]
        except KeyError:
            raise KeyError(f"unknown source {source!r}; call register_source first") from None

    def report_watermark(self, source: str, subtask: int, watermark: int) -> None:
        """Subtask ``subtask`` of ``source`` reports ``watermark`` (``LONG_MAX`` when idle or finished)."""
        entry = self._source(source)
        changed = entry.subtasks.aggregate(subtask, watermark)
        if changed is not None:
            self._groups[entry.params.watermark_group].aggregate(source, changed)

    def source_watermark(self, source: str) -> int:
        """The minimum over the latest reports of ``source``'s subtasks (``LONG_MIN`` before any)."""
        return self._source(source).subtasks.aggregated_watermark

    def group_watermark(self, group: str) -> int:
        """The minimum over the sources of ``group`` (``LONG_MIN`` before any report)."""
        aggregator = self._groups.get(group)
        return LONG_MIN if aggregator is None else aggregator.aggregated_watermark

    def max_allowed_watermark(self, source: str) -> int:
        """What ``source`` would announce now: group watermark + drift, saturating at ``LONG_MAX``."""
        params = self._source(source).params
        return max_allowed_watermark(self.group_watermark(params.watermark_group), params.max_allowed_watermark_drift)

    def announce(self, source: str) -> dict[int, int]:
        """Announce ``source``'s max allowed watermark to each of its subtasks that has reported."""
        entry = self._source(source)
        allowed = self.max_allowed_watermark(source)
        announcement = dict.fromkeys(sorted(entry.subtasks.keys()), allowed)
        entry.announced.update(announcement)
        return announcement

    def announced(self, source: str, subtask: int) -> int:
        """The last max allowed watermark announced to that subtask (``LONG_MAX`` before any)."""
        return self._source(source).announced.get(subtask, LONG_MAX)

    def next_announcement_time(self) -> int | None:
        """The earliest processing time at which some source announces, for runners that schedule wake-ups."""
        return min((s.next_announcement for s in self._sources.values()), default=None)

    def advance_processing_time(self, now: int) -> dict[str, dict[int, int]]:
        """Announce for every source whose announcement is due at ``now``; returns ``{source: {subtask: max}}``."""
        result: dict[str, dict[int, int]] = {}
        for name, entry in self._sources.items():
            if now >= entry.next_announcement:
                result[name] = self.announce(name)
                entry.next_announcement = now + entry.params.update_interval
        return result


class SourceWatermarkAlignment:
    """One source subtask's side of alignment (the bookkeeping of Flink's ``SourceOperator``).

    Feed it the subtask's emitted watermark (:meth:`update_watermark`), its idleness (:meth:`update_idle`),
    each split's watermark (:meth:`update_split_watermark`, :meth:`split_finished`) and the coordinator's
    announcements (:meth:`on_alignment_event`). :attr:`is_waiting_for_alignment` says whether the subtask
    must stop reading; :attr:`paused_splits` which splits to hold back. While waiting, ``activity_clock``
    (the clock idleness is measured on), if given, is paused, so waiting is not mistaken for idleness.
    """

    def __init__(self, params: WatermarkAlignmentParams, activity_clock: PausableClock | None = None) -> None:
        self.params = params
        self.activity_clock = activity_clock
        self.latest_watermark = LONG_MIN
        self.idle = False
        self.max_desired_watermark = LONG_MAX
        self._waiting = False
        self._split_watermarks: dict[str, int] = {}
        self._paused_splits: set[str] = set()
        self._next_report: int | None = None

    # -- what the subtask tells us ------------------------------------------------------------------------

    def update_watermark(self, watermark: int) -> None:
        """The subtask's current (emitted) watermark changed; may start waiting for alignment."""
        self.latest_watermark = watermark
        self._check_alignment()

    def update_idle(self, idle: bool) -> None:
        self.idle = idle

    def end_of_input(self) -> None:
        """The subtask's input ended: from now on it reports ``LONG_MAX`` (it never holds the group back)."""
        self.latest_watermark = LONG_MAX

    def update_split_watermark(self, split_id: str, watermark: int) -> list[str]:
        """A split's watermark changed; returns ``[split_id]`` if it must now be paused, else ``[]``."""
        self._split_watermarks[split_id] = watermark
        if watermark > self.max_desired_watermark and split_id not in self._paused_splits:
            self._paused_splits.add(split_id)
            return [split_id]
        return []

    def split_finished(self, split_id: str) -> None:
        self._split_watermarks.pop(split_id, None)

    # -- reports and announcements --------------------------------------------------------------------------

    def reported_watermark(self) -> int | None:
        """What to report now: ``None`` before the first watermark, ``LONG_MAX`` when idle, else the watermark."""
        if self.latest_watermark == LONG_MIN:
            return None
        return LONG_MAX if self.idle else self.latest_watermark

    def start_reporting(self, now: int) -> None:
        """Schedule reports every ``update_interval`` from ``now`` (when the source starts reading)."""
        self._next_report = now + self.params.update_interval

    def poll_report(self, now: int) -> int | None:
        """The watermark to report if a report is due at ``now`` (then the next is due ``update_interval``
        later), else ``None``. Also ``None`` when due but there is nothing to report yet."""
        if self._next_report is None or now < self._next_report:
            return None
        self._next_report = now + self.params.update_interval
        return self.reported_watermark()

    def on_alignment_event(self, max_watermark: int) -> tuple[list[str], list[str]]:
        """The coordinator announced ``max_watermark``; returns the splits to ``(pause, resume)``."""
        self.max_desired_watermark = max_watermark
        self._check_alignment()
        to_pause: list[str] = []
        to_resume: list[str] = []
        for split_id, split_watermark in self._split_watermarks.items():
            if split_watermark > max_watermark:
                if split_id not in self._paused_splits:
                    to_pause.append(split_id)
            elif split_id in self._paused_splits:
                to_resume.append(split_id)
        self._paused_splits.update(to_pause)
        self._paused_splits.difference_update(to_resume)
        return to_pause, to_resume

    # -- decisions ----------------------------------------------------------------------------------------------

    def should_wait_for_alignment(self) -> bool:
        return self.max_desired_watermark < self.latest_watermark

    @property
    def is_waiting_for_alignment(self) -> bool:
        return self._waiting

    @property
    def paused_splits(self) -> frozenset[str]:
        return frozenset(self._paused_splits)

    def _check_alignment(self) -> None:
        should_wait = self.should_wait_for_alignment()
        if should_wait and not self._waiting:
            self._waiting = True
            if self.activity_clock is not None:
                self.activity_clock.pause()
        elif not should_wait and self._waiting:
            self._waiting = False
            if self.activity_clock is not None:
                self.activity_clock.unpause()
