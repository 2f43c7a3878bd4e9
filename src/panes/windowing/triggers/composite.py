"""Composite triggers: triggers made of other triggers, built-in or user-written alike.

Flink leaves "fire on count or on time" to a hand-written trigger; these compose any triggers instead:

- :class:`AnyOf` ``(t1, t2, ...)`` fires when any part fires: ``AnyOf(CountTrigger.of(100), EventTimeTrigger())``
  fires every 100 elements and when the watermark passes the window's end.
- :class:`AllOf` fires once every part has fired since its own last firing.
- :class:`AfterEach` ``(t1, t2, ...)`` is a sequence: ``t1`` until it fires once, then ``t2``, ...; after the last
  part fired, it never fires again for the window.
- :class:`OrFinally` ``(main, until)`` fires as ``main`` until ``until`` fires: that firing is its last.
- :class:`Repeatedly` ``(t)`` starts ``t`` over whenever it finished (an ``AfterEach`` that ran through, an
  ``OrFinally`` that ended): a trigger that never finishes fires as it is.
- :class:`AfterWatermark` ``(early=None, late=None)`` fires when the watermark passes the window's end (once),
  as ``early`` before that, and as ``late`` for elements that arrive after it (within the allowed lateness;
  without ``late``, every such element fires, as Flink's ``EventTimeTrigger`` does).

What the parts of one call return is combined into one result: the pane fires once when any part that counts
fires, and is purged when any part asked for a purge (a purge empties the pane, which all parts share; the
parts' own state, such as a ``CountTrigger``'s count, stays theirs). Parts see the elements and the time as a
trigger of their own would: every part of ``AnyOf``, ``AllOf`` and ``OrFinally`` sees every element, only the
current part of ``AfterEach`` does, and a timer reaches only the parts that registered it (two parts may
register the same time: both are called, by one timer).

Each part's state is its own: the state it asks for by name is kept under ``part<i>.<name>`` (nested
composites nest the prefixes), and the composite remembers which timers each part registered, so it can route
them back and so one part deleting a time another part still waits for keeps the timer. ``clear`` clears every
part and deletes what is left. A composite can merge windows (session windows) when every part can; building
one with a merging assigner and a part that cannot is refused, as for any trigger. Parts that require a window
class (``EventTimeTrigger`` needs ``TimeWindow``) pass the requirement on; parts that require different ones
are refused at construction (``ValueError``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from panes.state.descriptors import ListStateDescriptor, ReducingStateDescriptor, StateDescriptor
from panes.windowing.rules import has_ended
from panes.windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult
from panes.windowing.triggers.never import NeverTrigger
from panes.windowing.windows import Window

EVENT, PROCESSING = "event", "processing"
SELF = -1
"""The holder index of a composite's own timers (``AfterWatermark``'s end-of-window timer)."""


def _result(fire: bool, purge: bool) -> TriggerResult:
    if fire:
        return TriggerResult.FIRE_AND_PURGE if purge else TriggerResult.FIRE
    return TriggerResult.PURGE if purge else TriggerResult.CONTINUE


def _renamed(descriptor: StateDescriptor, prefix: str) -> StateDescriptor:
    import copy

    renamed = copy.copy(descriptor)
    object.__setattr__(renamed, "name", f"{prefix}{descriptor.name}")
    return renamed


class _PartContext(OnMergeContext):
    """Part ``index``'s view of its composite's context: state under its own prefix, timers recorded."""

    def __init__(self, composite: _Composite, index: int, parent: TriggerContext, keep_timers: bool = False) -> None:
        self.composite = composite
        self.index = index
        self.parent = parent
        self.keep_timers = keep_timers
        """A part cleared while its window lives on (a composite starts it over) forgets its timers but does not
        delete them: one may be the window operator's own (its cleanup time); firing for nobody, they do
        nothing."""

    def get_current_processing_time(self) -> int:
        return self.parent.get_current_processing_time()

    def get_current_watermark(self) -> int:
        return self.parent.get_current_watermark()

    def register_event_time_timer(self, time: int) -> None:
        self.composite._hold(self.parent, EVENT, self.index, time)

    def register_processing_time_timer(self, time: int) -> None:
        self.composite._hold(self.parent, PROCESSING, self.index, time)

    def delete_event_time_timer(self, time: int) -> None:
        self.composite._release(self.parent, EVENT, self.index, time, delete=not self.keep_timers)

    def delete_processing_time_timer(self, time: int) -> None:
        self.composite._release(self.parent, PROCESSING, self.index, time, delete=not self.keep_timers)

    def get_partitioned_state(self, state_descriptor: StateDescriptor) -> Any:
        return self.parent.get_partitioned_state(_renamed(state_descriptor, f"part{self.index}."))

    def merge_partitioned_state(self, state_descriptor: StateDescriptor) -> None:
        assert isinstance(self.parent, OnMergeContext)
        self.parent.merge_partitioned_state(_renamed(state_descriptor, f"part{self.index}."))


class _Composite(Trigger[Any, Window]):
    """What every composite shares: its parts, their contexts, and the record of who holds which timer."""

    def __init__(self, parts: Sequence[Trigger[Any, Any]], *, minimum: int = 1) -> None:
        name = type(self).__name__
        if len(parts) < minimum:
            raise ValueError(f"{name} needs at least {minimum} trigger{'s' if minimum > 1 else ''}, got {len(parts)}")
        for part in parts:
            if not isinstance(part, Trigger):
                raise TypeError(f"{name} takes Triggers, got {type(part).__name__}")
        self.parts: tuple[Trigger[Any, Any], ...] = tuple(parts)
        required = {p.required_window_type() for p in self.parts} - {None}
        if len(required) > 1:
            names = ", ".join(sorted(t.__name__ for t in required if t is not None))
            raise ValueError(f"{name}: its triggers need different windows ({names}); use triggers of one kind")
        self._required = next(iter(required), None)

    # -- timers: who holds which ---------------------------------------------------------------------------------

    def _holders(self, ctx: TriggerContext, domain: str, index: int) -> Any:
        return ctx.get_partitioned_state(ListStateDescriptor(f"composite.timers.{domain}.{index}"))

    def _indices(self) -> list[int]:
        return [SELF, *range(len(self.parts))]

    def _held(self, ctx: TriggerContext, domain: str, index: int) -> list[int]:
        return list(self._holders(ctx, domain, index).get() or [])

    def _hold(self, ctx: TriggerContext, domain: str, index: int, time: int) -> None:
        held = self._held(ctx, domain, index)
        if time not in held:
            self._holders(ctx, domain, index).add(time)
        if domain == EVENT:
            ctx.register_event_time_timer(time)
        else:
            ctx.register_processing_time_timer(time)

    def _forget(self, ctx: TriggerContext, domain: str, index: int, time: int) -> bool:
        """Drop ``time`` from what part ``index`` holds; whether it held it."""
        held = self._held(ctx, domain, index)
        if time not in held:
            return False
        state = self._holders(ctx, domain, index)
        rest = [t for t in held if t != time]
        if rest:
            state.update(rest)
        else:
            state.clear()
        return True

    def _release(self, ctx: TriggerContext, domain: str, index: int, time: int, delete: bool = True) -> None:
        self._forget(ctx, domain, index, time)
        if not delete or any(time in self._held(ctx, domain, other) for other in self._indices() if other != index):
            return  # kept (see _PartContext.keep_timers), or another part (or the composite) still waits for it
        if domain == EVENT:
            ctx.delete_event_time_timer(time)
        else:
            ctx.delete_processing_time_timer(time)

    def _due(self, ctx: TriggerContext, domain: str, time: int, indices: Iterable[int]) -> list[int]:
        """The parts among ``indices`` that registered ``time``, whose record of it goes (the timer fired)."""
        return [index for index in indices if self._forget(ctx, domain, index, time)]

    def _part_ctx(self, index: int, ctx: TriggerContext) -> _PartContext:
        return _PartContext(self, index, ctx)

    def _timer(self, domain: str, index: int, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        part, part_ctx = self.parts[index], self._part_ctx(index, ctx)
        if domain == EVENT:
            return part.on_event_time(time, window, part_ctx)
        return part.on_processing_time(time, window, part_ctx)

    def _reset(self, index: int, window: Window, ctx: TriggerContext, final: bool = False) -> None:
        """Clear part ``index`` so it starts over (or stays quiet): its state, and its timers, forgotten (or, at
        the ``final`` clear of the window, deleted)."""
        self.parts[index].clear(window, _PartContext(self, index, ctx, keep_timers=not final))
        for domain in (EVENT, PROCESSING):
            for time in self._held(ctx, domain, index):
                self._release(ctx, domain, index, time, delete=final)

    # -- the Trigger API shared by all -------------------------------------------------------------------------

    def required_window_type(self) -> type[Window] | None:
        return self._required

    def can_merge(self) -> bool:
        return all(part.can_merge() for part in self.parts)

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        for descriptor in self._own_states():
            ctx.merge_partitioned_state(descriptor)
        for index in self._active_indices(window, ctx):
            self.parts[index].on_merge(window, self._part_ctx(index, ctx))

    def clear(self, window: Window, ctx: TriggerContext) -> None:
        for index in range(len(self.parts)):
            self._reset(index, window, ctx, final=True)
        for domain in (EVENT, PROCESSING):
            for time in self._held(ctx, domain, SELF):
                self._release(ctx, domain, SELF, time)
        for descriptor in self._own_states():
            ctx.get_partitioned_state(descriptor).clear()

    def _own_states(self) -> list[StateDescriptor]:
        """The composite's own state (mergeable: merged when windows merge)."""
        return []

    def _active_indices(self, window: Window, ctx: TriggerContext) -> list[int]:
        """The parts that take elements and timers now."""
        return list(range(len(self.parts)))

    def _on_timer(self, domain: str, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        raise NotImplementedError  # each composite combines its parts' answers its own way

    def on_event_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return self._on_timer(EVENT, time, window, ctx)

    def on_processing_time(self, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        return self._on_timer(PROCESSING, time, window, ctx)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self.parts))})"


def _or(a: Any, b: Any) -> Any:
    return bool(a) or bool(b)


class AnyOf(_Composite):
    """Fires when any part fires (one firing when several do); purges when any part purges."""

    def __init__(self, *parts: Trigger[Any, Any]) -> None:
        super().__init__(parts)

    @staticmethod
    def of(*parts: Trigger[Any, Any]) -> AnyOf:
        return AnyOf(*parts)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        results = [
            part.on_element(element, timestamp, window, self._part_ctx(i, ctx)) for i, part in enumerate(self.parts)
        ]
        return _result(any(r.is_fire() for r in results), any(r.is_purge() for r in results))

    def _on_timer(self, domain: str, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        results = [self._timer(domain, i, time, window, ctx) for i in self._due(ctx, domain, time, self._indices()[1:])]
        return _result(any(r.is_fire() for r in results), any(r.is_purge() for r in results))


class AllOf(_Composite):
    """Fires once every part has fired since its own last firing (then it starts counting again); a part's
    purge purges at once."""

    def __init__(self, *parts: Trigger[Any, Any]) -> None:
        super().__init__(parts)
        self._fired = [ReducingStateDescriptor(f"composite.fired.{i}", _or) for i in range(len(self.parts))]

    @staticmethod
    def of(*parts: Trigger[Any, Any]) -> AllOf:
        return AllOf(*parts)

    def _own_states(self) -> list[StateDescriptor]:
        return list(self._fired)

    def _combine(self, results: list[tuple[int, TriggerResult]], ctx: TriggerContext) -> TriggerResult:
        purge = any(r.is_purge() for _, r in results)
        for index, result in results:
            if result.is_fire():
                ctx.get_partitioned_state(self._fired[index]).add(True)
        if all(ctx.get_partitioned_state(fired).get() for fired in self._fired):
            for fired in self._fired:
                ctx.get_partitioned_state(fired).clear()
            return _result(True, purge)
        return _result(False, purge)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        results = [
            (i, part.on_element(element, timestamp, window, self._part_ctx(i, ctx)))
            for i, part in enumerate(self.parts)
        ]
        return self._combine(results, ctx)

    def _on_timer(self, domain: str, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        due = self._due(ctx, domain, time, self._indices()[1:])
        return self._combine([(i, self._timer(domain, i, time, window, ctx)) for i in due], ctx)


class AfterEach(_Composite):
    """A sequence: the current part alone sees elements and timers; once it fires (that firing is the
    composite's), the next part takes over; after the last part fired the window never fires again. Merged
    windows continue from the earliest position any of them was at."""

    def __init__(self, *parts: Trigger[Any, Any]) -> None:
        super().__init__(parts)
        self._position = ReducingStateDescriptor("composite.position", min)

    @staticmethod
    def in_order(*parts: Trigger[Any, Any]) -> AfterEach:
        return AfterEach(*parts)

    def _own_states(self) -> list[StateDescriptor]:
        return [self._position]

    def _current(self, ctx: TriggerContext) -> int:
        position = ctx.get_partitioned_state(self._position).get()
        return 0 if position is None else int(position)

    def _active_indices(self, window: Window, ctx: TriggerContext) -> list[int]:
        current = self._current(ctx)
        return [current] if current < len(self.parts) else []

    def is_finished(self, ctx: TriggerContext) -> bool:
        """Whether the last part fired (for :class:`Repeatedly`)."""
        return self._current(ctx) >= len(self.parts)

    def _advance(self, result: TriggerResult, window: Window, ctx: TriggerContext) -> TriggerResult:
        if result.is_fire():
            current = self._current(ctx)
            self._reset(current, window, ctx)
            state = ctx.get_partitioned_state(self._position)
            state.clear()
            state.add(current + 1)
        return result

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        current = self._current(ctx)
        if current >= len(self.parts):
            return TriggerResult.CONTINUE
        result = self.parts[current].on_element(element, timestamp, window, self._part_ctx(current, ctx))
        return self._advance(result, window, ctx)

    def _on_timer(self, domain: str, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        active = self._active_indices(window, ctx)
        due = self._due(ctx, domain, time, active)
        if not due:
            return TriggerResult.CONTINUE
        return self._advance(self._timer(domain, due[0], time, window, ctx), window, ctx)


class OrFinally(_Composite):
    """Fires as ``main`` until ``until`` fires; that firing is the last (both parts are cleared). Both parts see
    every element; a purge of either purges."""

    def __init__(self, main: Trigger[Any, Any], until: Trigger[Any, Any]) -> None:
        super().__init__((main, until), minimum=2)
        self._done = ReducingStateDescriptor("composite.done", _or)

    @staticmethod
    def of(main: Trigger[Any, Any], until: Trigger[Any, Any]) -> OrFinally:
        return OrFinally(main, until)

    def _own_states(self) -> list[StateDescriptor]:
        return [self._done]

    def is_finished(self, ctx: TriggerContext) -> bool:
        """Whether ``until`` fired (for :class:`Repeatedly`)."""
        return bool(ctx.get_partitioned_state(self._done).get())

    def _active_indices(self, window: Window, ctx: TriggerContext) -> list[int]:
        return [] if self.is_finished(ctx) else [0, 1]

    def _combine(self, results: dict[int, TriggerResult], window: Window, ctx: TriggerContext) -> TriggerResult:
        purge = any(r.is_purge() for r in results.values())
        until = results.get(1)
        if until is not None and until.is_fire():
            for index in (0, 1):
                self._reset(index, window, ctx)
            ctx.get_partitioned_state(self._done).add(True)
            return _result(True, purge)
        main = results.get(0)
        return _result(main is not None and main.is_fire(), purge)

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if self.is_finished(ctx):
            return TriggerResult.CONTINUE
        results = {
            i: part.on_element(element, timestamp, window, self._part_ctx(i, ctx)) for i, part in enumerate(self.parts)
        }
        return self._combine(results, window, ctx)

    def _on_timer(self, domain: str, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        due = self._due(ctx, domain, time, self._active_indices(window, ctx))
        return self._combine({i: self._timer(domain, i, time, window, ctx) for i in due}, window, ctx)


class Repeatedly(_Composite):
    """``part`` over and over: whenever it finished (see the module docstring), it is cleared and starts again
    with the next element."""

    def __init__(self, part: Trigger[Any, Any]) -> None:
        super().__init__((part,))

    @staticmethod
    def forever(part: Trigger[Any, Any]) -> Repeatedly:
        return Repeatedly(part)

    def _restart(self, result: TriggerResult, window: Window, ctx: TriggerContext) -> TriggerResult:
        finished = getattr(self.parts[0], "is_finished", None)
        if result.is_fire() and finished is not None and finished(self._part_ctx(0, ctx)):
            self._reset(0, window, ctx)
        return result

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        result = self.parts[0].on_element(element, timestamp, window, self._part_ctx(0, ctx))
        return self._restart(result, window, ctx)

    def _on_timer(self, domain: str, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if not self._due(ctx, domain, time, [0]):
            return TriggerResult.CONTINUE
        return self._restart(self._timer(domain, 0, time, window, ctx), window, ctx)


class AfterWatermark(_Composite):
    """Fires once when the watermark passes the window's end (``window.max_timestamp()``), as ``early``
    before, and as ``late`` for each element after (without ``late``: every late element fires). The early
    part is cleared at the end of the window. Needs time windows."""

    def __init__(self, early: Trigger[Any, Any] | None = None, late: Trigger[Any, Any] | None = None) -> None:
        self.early, self.late = early, late
        super().__init__((early or _Quiet(), late or _Quiet()))

    @staticmethod
    def past_end_of_window(
        early: Trigger[Any, Any] | None = None, late: Trigger[Any, Any] | None = None
    ) -> AfterWatermark:
        return AfterWatermark(early, late)

    def required_window_type(self) -> type[Window] | None:
        from panes.windowing.windows import TimeWindow

        return TimeWindow

    def _late(self, window: Window, ctx: TriggerContext) -> bool:
        return has_ended(window.max_timestamp(), ctx.get_current_watermark())

    def _active_indices(self, window: Window, ctx: TriggerContext) -> list[int]:
        return [1] if self._late(window, ctx) else [0]

    def on_element(self, element: Any, timestamp: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if self._late(window, ctx):
            if self.late is None:
                return TriggerResult.FIRE
            return self.parts[1].on_element(element, timestamp, window, self._part_ctx(1, ctx))
        self._hold(ctx, EVENT, SELF, window.max_timestamp())
        if self.early is None:
            return TriggerResult.CONTINUE
        return self.parts[0].on_element(element, timestamp, window, self._part_ctx(0, ctx))

    def _on_timer(self, domain: str, time: int, window: Window, ctx: TriggerContext) -> TriggerResult:
        if domain == EVENT and self._due(ctx, EVENT, time, [SELF]) and time == window.max_timestamp():
            self._reset(0, window, ctx)  # the early firings end with the window
            return TriggerResult.FIRE
        due = self._due(ctx, domain, time, [0, 1])
        results = [self._timer(domain, i, time, window, ctx) for i in due]
        return _result(any(r.is_fire() for r in results), any(r.is_purge() for r in results))

    def on_merge(self, window: Window, ctx: OnMergeContext) -> None:
        """Both parts merge their state, whichever is active: windows past their end (the late part counted)
        can merge into one that is not (found by the property test against a hand-written trigger, which keeps
        the late count for when the merged window ends)."""
        if not self._late(window, ctx):
            self._hold(ctx, EVENT, SELF, window.max_timestamp())
        for index, part in enumerate(self.parts):
            part.on_merge(window, self._part_ctx(index, ctx))

    def __repr__(self) -> str:
        return f"AfterWatermark(early={self.early!r}, late={self.late!r})"


class _Quiet(NeverTrigger):
    """The part an ``AfterWatermark`` has no early or late trigger for: never fires, and merges."""

    def can_merge(self) -> bool:
        return True
