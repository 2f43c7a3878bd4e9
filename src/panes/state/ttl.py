"""State time-to-live: ``StateTtlConfig`` (Flink's configuration, PyFlink's builder) and the expiry rule.

A state whose descriptor has TTL enabled (``descriptor.enable_time_to_live(config)``) stores each value with
the processing time of its last access (a :class:`TtlValue`): the whole value of value, reducing and
aggregating state, each element of list state, each entry of map state. A stored value whose last access
is ``ts`` is expired from processing time ``ts + ttl`` on (Flink's ``TtlUtils.expired``). Processing time
is the hosting operator's clock (the runner's clock; a harness's manual clock in tests).

- ``UpdateType``: when the last-access time is renewed: on create and write (default), or also on read.
- ``StateVisibility``: whether a read may return an expired value not yet removed
  (``ReturnExpiredIfNotCleanedUp``) or never (``NeverReturnExpired``, the default). Either way a read
  that finds an expired value removes it.
- Cleanup strategies (when expired values leave storage without being read): ``cleanup_full_snapshot()``
  leaves them out of full snapshots; ``cleanup_incrementally(size, per_record)`` checks ``size`` stored
  entries of the state on every access to it (and on every record when ``per_record``);
  ``cleanup_in_rocksdb_compact_filter(...)`` leaves them out when the stored state is compacted (on Spark: when
  a shard's log is rewritten as a new snapshot, which is a full snapshot here, so it acts as
  ``cleanup_full_snapshot``). Background cleanup is on by default (incremental cleanup of 5 entries per
  access and the compaction filter, Flink's defaults); ``disable_cleanup_in_background()`` turns the defaults
  off, never an explicitly configured strategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import Enum
from typing import Any, NamedTuple

from panes.time import LONG_MAX, DurationLike, duration_ms


class TtlValue(NamedTuple):
    """A stored user value and the processing time of its last access (Flink's ``TtlValue``)."""

    user_value: Any
    last_access_timestamp: int


def expiration_timestamp(last_access: int, ttl: int) -> int:
    """When a value last accessed at ``last_access`` expires: ``last_access + ttl``, capped at ``LONG_MAX``."""
    return last_access + (min(LONG_MAX - last_access, ttl) if last_access > 0 else ttl)


def is_expired(value: TtlValue, ttl: int, now: int) -> bool:
    """Whether ``value`` is expired at processing time ``now`` (its expiration timestamp is ``<= now``)."""
    return expiration_timestamp(value.last_access_timestamp, ttl) <= now


class UpdateType(Enum):
    """When the last-access timestamp of a value is renewed."""

    Disabled = 0
    OnCreateAndWrite = 1
    OnReadAndWrite = 2


class StateVisibility(Enum):
    """Whether an expired value that is still stored may be returned by a read."""

    ReturnExpiredIfNotCleanedUp = 0
    NeverReturnExpired = 1


class TtlTimeCharacteristic(Enum):
    """The time TTL is measured in (Flink supports processing time only)."""

    ProcessingTime = 0


@dataclass(frozen=True)
class IncrementalCleanupStrategy:
    """Check ``cleanup_size`` stored entries of the state on every access to it; also on every record the
    operator processes when ``run_cleanup_for_every_record``."""

    cleanup_size: int = 5
    run_cleanup_for_every_record: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.cleanup_size, bool) or not isinstance(self.cleanup_size, int) or self.cleanup_size <= 0:
            raise ValueError(
                f"Number of incrementally cleaned up state entries should be positive (got {self.cleanup_size!r}); "
                "pass cleanup_size >= 1"
            )

    def get_cleanup_size(self) -> int:
        return self.cleanup_size


@dataclass(frozen=True)
class RocksdbCompactFilterCleanupStrategy:
    """Drop expired values when stored state is compacted (see the module docstring for what that is here).
    ``query_time_after_num_entries`` is accepted for Flink compatibility (the time is read once per compaction)."""

    query_time_after_num_entries: int = 1000
    periodic_compaction_time: int = 30 * 24 * 3600 * 1000

    def __post_init__(self) -> None:
        if self.periodic_compaction_time < 0:
            raise ValueError(
                f"periodic_compaction_time must not be negative (got {self.periodic_compaction_time} ms); pass 0 to "
                "turn periodic compaction off"
            )


@dataclass(frozen=True)
class CleanupStrategies:
    """Which cleanup strategies are configured (see the module docstring)."""

    full_snapshot: bool = False
    incremental: IncrementalCleanupStrategy | None = None
    compaction_filter: RocksdbCompactFilterCleanupStrategy | None = None
    cleanup_in_background: bool = True

    def in_full_snapshot(self) -> bool:
        return self.full_snapshot

    def is_cleanup_in_background(self) -> bool:
        return self.cleanup_in_background

    def get_incremental_cleanup_strategy(self) -> IncrementalCleanupStrategy | None:
        """The incremental strategy in effect: the configured one, else Flink's default when background cleanup
        is on, else ``None``."""
        if self.incremental is not None:
            return self.incremental
        return IncrementalCleanupStrategy() if self.cleanup_in_background else None

    def get_rocksdb_compact_filter_cleanup_strategy(self) -> RocksdbCompactFilterCleanupStrategy | None:
        if self.compaction_filter is not None:
            return self.compaction_filter
        return RocksdbCompactFilterCleanupStrategy() if self.cleanup_in_background else None

    def filters_snapshots(self) -> bool:
        """Whether expired values are left out of full snapshots (full-snapshot or compaction-filter cleanup)."""
        return self.full_snapshot or self.get_rocksdb_compact_filter_cleanup_strategy() is not None


def _ttl_ms(ttl: Any) -> int:
    millis = duration_ms(ttl, name="ttl")
    if millis <= 0:
        raise ValueError(f"TTL is expected to be positive (got {millis} ms); pass a ttl of at least 1 ms")
    return int(millis)


_Update = UpdateType
_Visibility = StateVisibility
_Characteristic = TtlTimeCharacteristic


@dataclass(frozen=True)
class StateTtlConfig:
    """The TTL of a state (see the module docstring); build with ``StateTtlConfig.new_builder(ttl)``."""

    update_type: _Update
    state_visibility: _Visibility
    ttl_time_characteristic: _Characteristic
    ttl: int
    """Time to live in milliseconds (positive)."""
    cleanup_strategies: CleanupStrategies

    UpdateType = UpdateType
    StateVisibility = StateVisibility
    TtlTimeCharacteristic = TtlTimeCharacteristic

    def __post_init__(self) -> None:
        _ttl_ms(self.ttl)

    @staticmethod
    def new_builder(ttl: DurationLike) -> StateTtlConfig.Builder:
        """A builder for a TTL of ``ttl``: ``int`` milliseconds, a ``timedelta`` or a ``Time``."""
        return StateTtlConfig.Builder(ttl)

    def get_update_type(self) -> _Update:
        return self.update_type

    def get_state_visibility(self) -> _Visibility:
        return self.state_visibility

    def get_ttl(self) -> int:
        return self.ttl

    def get_ttl_time_characteristic(self) -> _Characteristic:
        return self.ttl_time_characteristic

    def get_cleanup_strategies(self) -> CleanupStrategies:
        return self.cleanup_strategies

    def is_enabled(self) -> bool:
        return self.update_type is not UpdateType.Disabled

    class Builder:
        """PyFlink's ``StateTtlConfig.Builder``: defaults are ``OnCreateAndWrite``, ``NeverReturnExpired``,
        processing time and background cleanup on."""

        def __init__(self, ttl: DurationLike) -> None:
            self._ttl = _ttl_ms(ttl)
            self._update_type = UpdateType.OnCreateAndWrite
            self._state_visibility = StateVisibility.NeverReturnExpired
            self._time_characteristic = TtlTimeCharacteristic.ProcessingTime
            self._full_snapshot = False
            self._incremental: IncrementalCleanupStrategy | None = None
            self._compaction: RocksdbCompactFilterCleanupStrategy | None = None
            self._background = True

        def set_update_type(self, update_type: _Update) -> StateTtlConfig.Builder:
            if not isinstance(update_type, UpdateType):
                raise TypeError(f"update_type must be a StateTtlConfig.UpdateType, got {update_type!r}")
            self._update_type = update_type
            return self

        def update_ttl_on_create_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(_Update.OnCreateAndWrite)

        def update_ttl_on_read_and_write(self) -> StateTtlConfig.Builder:
            return self.set_update_type(_Update.OnReadAndWrite)

        def set_state_visibility(self, state_visibility: _Visibility) -> StateTtlConfig.Builder:
            if not isinstance(state_visibility, StateVisibility):
                raise TypeError(f"state_visibility must be a StateTtlConfig.StateVisibility, got {state_visibility!r}")
            self._state_visibility = state_visibility
            return self

        def return_expired_if_not_cleaned_up(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(_Visibility.ReturnExpiredIfNotCleanedUp)

        def never_return_expired(self) -> StateTtlConfig.Builder:
            return self.set_state_visibility(_Visibility.NeverReturnExpired)

        def set_ttl_time_characteristic(self, characteristic: _Characteristic) -> StateTtlConfig.Builder:
            if not isinstance(characteristic, TtlTimeCharacteristic):
                raise TypeError(
                    f"ttl_time_characteristic must be a StateTtlConfig.TtlTimeCharacteristic, got {characteristic!r}"
                )
            self._time_characteristic = characteristic
            return self

        def use_processing_time(self) -> StateTtlConfig.Builder:
            return self.set_ttl_time_characteristic(_Characteristic.ProcessingTime)

        def cleanup_full_snapshot(self) -> StateTtlConfig.Builder:
            self._full_snapshot = True
            return self

        def cleanup_incrementally(
            self, cleanup_size: int, run_cleanup_for_every_record: bool = False
        ) -> StateTtlConfig.Builder:
            self._incremental = IncrementalCleanupStrategy(cleanup_size, bool(run_cleanup_for_every_record))
            return self

        def cleanup_in_rocksdb_compact_filter(
            self, query_time_after_num_entries: int = 1000, periodic_compaction_time: DurationLike = timedelta(days=30)
        ) -> StateTtlConfig.Builder:
            millis = duration_ms(periodic_compaction_time, name="periodic_compaction_time")
            self._compaction = RocksdbCompactFilterCleanupStrategy(query_time_after_num_entries, millis)
            return self

        def disable_cleanup_in_background(self) -> StateTtlConfig.Builder:
            self._background = False
            return self

        def set_ttl(self, ttl: DurationLike) -> StateTtlConfig.Builder:
            self._ttl = _ttl_ms(ttl)
            return self

        def build(self) -> StateTtlConfig:
            return StateTtlConfig(
                self._update_type,
                self._state_visibility,
                self._time_characteristic,
                self._ttl,
                CleanupStrategies(self._full_snapshot, self._incremental, self._compaction, self._background),
            )


StateTtlConfig.CleanupStrategies = CleanupStrategies  # type: ignore[attr-defined]
