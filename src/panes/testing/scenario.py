"""Scenario files: a window configuration, a sequence of events and watermarks, and the expected panes.

The format is documented in the repository's ``tests/scenarios/README.md`` (expected outputs produced by
real Apache Flink, or worked out from Flink's source); every host of the window operator (the harness here,
the local and the Spark runners) replays the same files and must produce the same panes. Elements are
``(key, value, ts, seq)`` tuples, ``seq`` being the element's index in ``events``.

panes adds to the format (for cases whose expected output was worked out from Flink's source rather than
produced by running it, in ``NN_name.expected.json`` beside the scenario; see ``tests/scenarios/README.md``):

- events ``{"processing_time": T}``: processing time moves to ``T`` there (it starts at 0), firing the
  processing-time timers at or before ``T``;
- the trigger ``{"type": "continuous_processing_time", "interval_ms": X}``;
- the watermark ``{"type": "none"}``: no watermarks but the final ``LONG_MAX`` one;
- composite triggers (see :func:`build_trigger`);
- ``"accumulation"``: ``"discarding"`` or ``"retracting"`` (``panes.windowing.accumulation``; the default is
  ``"accumulating"``). A retracting window's rows carry ``retract``; a retraction has the ``fire_index`` of the
  firing it takes back;
- ``"pane_info": true``: each pane also records its pane info (``pane_index``, ``pane_timing``,
  ``pane_is_last``; ``panes.windowing.pane_info``). Where Flink produced the rest of the output
  (``NN_name.flink.json``), the pane info, which Flink has no counterpart for, is derived by hand in
  ``NN_name.pane_info.json`` (``panes``: one entry per firing, by ``key``, window and ``fire_index``), and
  :meth:`Scenario.load` merges it into Flink's panes;
- ``"flink_trigger"`` (beside ``config``, read only by ``tools/flink_oracle``): the Flink trigger that stands in
  for panes' own trigger and accumulation mode when real Flink runs the scenario;
- the assigner ``{"type": "global_end_of_stream"}``: ``GlobalWindows.create_with_end_of_stream_trigger()``;
- ``"mode": "BATCH"``: the scenario runs in BATCH execution mode (``panes.datastream.runtime_mode``);
- ``"watermark_per_key": {"max_lag_ms": L}``: each key has its own event time (``panes.watermarks.per_key``),
  made by the scenario's ``bounded_out_of_orderness`` or ``monotonous`` watermark from the key's elements (or
  by ``"max_ooo_ms": D`` there, whatever the stream's watermark), at least the stream's watermark minus ``L``;
  ``"quiet_timeout_ms": T`` closes a key's windows once it has been quiet for ``T`` of processing time, and
  ``"stream_quiet_timeout_ms": T`` every key's once the stream's watermark has not moved for ``T`` (a pane
  so fired records ``"pane_closed_by_quiet": true`` in a ``pane_info`` scenario). Such a scenario's expected
  output holds each key's panes and late elements as real Flink produced them for that key alone
  (``tools/flink_oracle``; by hand where processing time moves), so its ``emit_seq`` counts each key's emissions
  on their own: compare with :func:`emission_order_per_key` applied to what a runner gives.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from panes.elements import StreamRecord
from panes.tags import OutputTag
from panes.time import LONG_MAX, LONG_MIN
from panes.watermarks.per_key import PerKeyWatermarks
from panes.windowing.assigners.base import WindowAssigner
from panes.windowing.assigners.global_windows import GlobalWindows
from panes.windowing.assigners.session import EventTimeSessionWindows
from panes.windowing.assigners.sliding import SlidingEventTimeWindows
from panes.windowing.assigners.tumbling import TumblingEventTimeWindows
from panes.windowing.count_windows import count_window_parts
from panes.windowing.evictors import CountEvictor, Evictor, TimeEvictor
from panes.windowing.functions import ProcessWindowFunction, WindowContext
from panes.windowing.triggers.base import Trigger
from panes.windowing.triggers.continuous import ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger
from panes.windowing.triggers.count import CountTrigger
from panes.windowing.triggers.event_time import EventTimeTrigger
from panes.windowing.triggers.purging import PurgingTrigger
from panes.windowing.windows import TimeWindow

LATE: OutputTag[Any] = OutputTag("late-data")

Element = tuple[Any, Any, int, int]


def build_trigger(spec: dict[str, Any] | None) -> Trigger[Any, Any] | None:
    if spec is None:
        return None
    kind = spec["type"]
    if kind == "count":
        return CountTrigger.of(spec["count"])
    if kind == "purging":
        inner = build_trigger(spec["inner"])
        assert inner is not None
        return PurgingTrigger.of(inner)
    if kind == "continuous_event_time":
        return ContinuousEventTimeTrigger.of(spec["interval_ms"])
    if kind == "continuous_processing_time":
        return ContinuousProcessingTimeTrigger.of(spec["interval_ms"])
    if kind == "event_time":
        return EventTimeTrigger()
    composite = _composite_trigger(kind, spec)
    if composite is not None:
        return composite
    raise ValueError(f"unknown trigger type in scenario: {kind!r}")


def _composite_trigger(kind: str, spec: dict[str, Any]) -> Trigger[Any, Any] | None:
    """A composite trigger of a scenario (``panes.windowing.triggers.composite``): ``any_of``, ``all_of``,
    ``after_each`` (``parts``), ``or_finally`` (``main``, ``until``), ``repeatedly`` (``inner``) and
    ``after_watermark`` (``early``, ``late``, each optional); ``None`` for another kind."""
    from panes.windowing.triggers.composite import AfterEach, AfterWatermark, AllOf, AnyOf, OrFinally, Repeatedly

    def part(name: str) -> Trigger[Any, Any]:
        built = build_trigger(spec[name])
        assert built is not None
        return built

    if kind in ("any_of", "all_of", "after_each"):
        parts = [p for p in (build_trigger(spec) for spec in spec["parts"]) if p is not None]
        if kind == "any_of":
            return AnyOf(*parts)
        return AllOf(*parts) if kind == "all_of" else AfterEach(*parts)
    if kind == "or_finally":
        return OrFinally(part("main"), part("until"))
    if kind == "repeatedly":
        return Repeatedly(part("inner"))
    if kind == "after_watermark":
        early, late = spec.get("early"), spec.get("late")
        return AfterWatermark(build_trigger(early), build_trigger(late))
    return None


def build_evictor(spec: dict[str, Any] | None) -> Evictor[Any, Any] | None:
    if spec is None:
        return None
    if spec["type"] == "count":
        return CountEvictor.of(spec["max_count"], spec.get("do_evict_after", False))
    if spec["type"] == "time":
        return TimeEvictor.of(spec["window_ms"], spec.get("do_evict_after", False))
    raise ValueError(f"unknown evictor type in scenario: {spec['type']!r}")


@dataclass(frozen=True)
class WindowSetup:
    """Assigner, trigger (``None`` = the assigner's default), evictor and lateness of a scenario."""

    assigner: WindowAssigner[Any, Any]
    trigger: Trigger[Any, Any] | None
    evictor: Evictor[Any, Any] | None
    allowed_lateness: int
    late_data_tag: OutputTag[Any] | None
    accumulation: str = "accumulating"
    key_time: PerKeyWatermarks | None = None


@dataclass
class Scenario:
    name: str
    description: str
    config: dict[str, Any]
    events: list[dict[str, Any]]
    expected: dict[str, Any] | None = field(default=None)

    @staticmethod
    def load(path: str | Path) -> Scenario:
        """Read ``NN_name.scenario.json`` and the expected output beside it: ``NN_name.flink.json`` (produced by
        Flink) or else ``NN_name.expected.json`` (worked out from Flink's source); ``expected`` is ``None``
        when there is neither."""
        path = Path(path)
        data = json.loads(path.read_text())
        name = path.name.removesuffix(".scenario.json")
        expected = None
        for suffix in ("flink", "expected"):
            expected_path = path.with_name(f"{name}.{suffix}.json")
            if expected_path.exists():
                expected = json.loads(expected_path.read_text())
                break
        pane_info_path = path.with_name(f"{name}.pane_info.json")
        if expected is not None and pane_info_path.exists():
            expected = with_pane_info(expected, json.loads(pane_info_path.read_text())["panes"])
        return Scenario(name, data.get("description", ""), data["config"], data["events"], expected)

    @staticmethod
    def load_all(folder: str | Path) -> list[Scenario]:
        return [Scenario.load(p) for p in sorted(Path(folder).glob("*.scenario.json"))]

    def window_setup(self) -> WindowSetup:
        config = self.config
        assigner_spec = config["assigner"]
        kind = assigner_spec["type"]
        trigger = build_trigger(config.get("trigger"))
        evictor = build_evictor(config.get("evictor"))
        assigner: WindowAssigner[Any, Any]
        if kind == "tumbling_event_time":
            assigner = TumblingEventTimeWindows.of(assigner_spec["size_ms"], assigner_spec.get("offset_ms", 0))
        elif kind == "sliding_event_time":
            assigner = SlidingEventTimeWindows.of(
                assigner_spec["size_ms"], assigner_spec["slide_ms"], assigner_spec.get("offset_ms", 0)
            )
        elif kind == "event_time_session":
            assigner = EventTimeSessionWindows.with_gap(assigner_spec["gap_ms"])
        elif kind == "global":
            assigner = GlobalWindows.create()
        elif kind == "global_end_of_stream":
            assigner = GlobalWindows.create_with_end_of_stream_trigger()
        elif kind in ("count_tumbling", "count_sliding"):
            assigner, count_trigger, count_evictor = count_window_parts(
                assigner_spec["size"], assigner_spec.get("slide")
            )
            trigger = trigger or count_trigger
            evictor = evictor or count_evictor
        else:
            raise ValueError(f"unknown assigner type in scenario: {kind!r}")
        late = LATE if config.get("late_side_output") else None
        lateness = int(config.get("allowed_lateness_ms", 0))
        accumulation = config.get("accumulation", "accumulating")
        return WindowSetup(assigner, trigger, evictor, lateness, late, accumulation, self.key_time())

    def key_time(self) -> PerKeyWatermarks | None:
        """The scenario's event time per key (``"watermark_per_key"``), or ``None``. Raises ``ValueError`` when
        its watermark is not one a key can make from its own elements."""
        per_key = self.config.get("watermark_per_key")
        if per_key is None:
            return None
        watermark = self.config["watermark"]
        if "max_ooo_ms" in per_key:
            key_time = PerKeyWatermarks.for_bounded_out_of_orderness(per_key["max_ooo_ms"])
        elif watermark["type"] == "bounded_out_of_orderness":
            key_time = PerKeyWatermarks.for_bounded_out_of_orderness(watermark["max_ooo_ms"])
        elif watermark["type"] == "monotonous":
            key_time = PerKeyWatermarks.for_monotonous_timestamps()
        else:
            raise ValueError(f"{self.name}: watermark_per_key needs its max_ooo_ms or a bounded watermark")
        key_time = key_time.with_max_lag(per_key["max_lag_ms"])
        if "quiet_timeout_ms" in per_key:
            key_time = key_time.with_quiet_timeout(per_key["quiet_timeout_ms"])
        if "stream_quiet_timeout_ms" in per_key:
            key_time = key_time.with_stream_quiet_timeout(per_key["stream_quiet_timeout_ms"])
        return key_time

    def pane_function(self) -> PaneFunction:
        """The function that records each pane (with its pane info when the scenario asks for it)."""
        return PaneFunction(pane_info=bool(self.config.get("pane_info", False)))

    def watermark_kind(self) -> str:
        return str(self.config["watermark"]["type"])

    def has_processing_time(self) -> bool:
        """Whether the events move processing time (``{"processing_time": T}`` entries)."""
        return any("processing_time" in event for event in self.events)

    def steps(self) -> Iterator[tuple[str, Any]]:
        """The input as Flink saw it: ``("element", (key, value, ts, seq))``, ``("watermark", W)`` and
        ``("processing_time", T)`` steps.

        Bounded out-of-orderness and monotonous generators emit ``max_ts - max_ooo - 1`` after each element;
        punctuated scenarios emit their ``{"watermark": W}`` entries; ``none`` emits nothing. Watermarks that do
        not increase are dropped. The final ``LONG_MAX`` watermark is *not* included (see
        :meth:`final_watermark`).
        """
        spec = self.config["watermark"]
        kind = spec["type"]
        delay = spec.get("max_ooo_ms", 0) if kind == "bounded_out_of_orderness" else 0
        current = LONG_MIN
        max_ts = LONG_MIN
        for seq, event in enumerate(self.events):
            if "processing_time" in event:
                yield ("processing_time", event["processing_time"])
                continue
            if "watermark" in event:
                if kind == "punctuated" and event["watermark"] > current:
                    current = event["watermark"]
                    yield ("watermark", current)
                continue
            element: Element = (event["key"], event["value"], event["ts"], seq)
            yield ("element", element)
            if kind in ("bounded_out_of_orderness", "monotonous"):
                max_ts = max(max_ts, event["ts"])
                candidate = max_ts - delay - 1
                if candidate > current:
                    current = candidate
                    yield ("watermark", current)

    final_watermark = LONG_MAX


PANE_INFO_FIELDS = ("pane_index", "pane_timing", "pane_is_last")


def with_pane_info(expected: dict[str, Any], pane_info: list[dict[str, Any]]) -> dict[str, Any]:
    """``expected`` (an output without pane info, as Flink produces it) with each pane's pane info from
    ``pane_info`` (entries naming the pane by ``key``, ``window_start``, ``window_end`` and ``fire_index``, as in
    ``NN_name.pane_info.json``); every pane needs exactly one entry and every entry a pane."""

    def firing(pane: dict[str, Any]) -> tuple[Any, ...]:
        return (pane["key"], pane["window_start"], pane["window_end"], pane["fire_index"])

    info = {firing(entry): {f: entry[f] for f in PANE_INFO_FIELDS} for entry in pane_info}
    panes = {firing(pane) for pane in expected["main"]}
    if len(info) != len(pane_info) or set(info) != panes:
        raise ValueError(f"the pane info names other firings than the output: {sorted(set(info) ^ panes, key=str)}")
    return {**expected, "main": [{**pane, **info[firing(pane)]} for pane in expected["main"]]}


class PaneFunction(ProcessWindowFunction[Element, dict[str, Any], Any, Any]):
    """Emits each pane whole, as the conformance examples record it (with ``pane_info``, also the pane's index,
    timing and whether it is the window's last)."""

    def __init__(self, pane_info: bool = False) -> None:
        self.pane_info = pane_info

    def process(self, key: Any, context: WindowContext[Any], elements: Iterable[Element]) -> Iterator[dict[str, Any]]:
        items = list(elements)
        window = context.window()
        values = [e[1] for e in items]
        is_time = isinstance(window, TimeWindow)
        pane = {
            "key": key,
            "window_start": window.start if is_time else None,
            "window_end": window.end if is_time else None,
            "values": sorted(values),
            "values_in_order": values,
            "count": len(items),
            "sum": sum(values),
            "watermark": context.current_watermark(),
            "end_of_input": context.current_watermark() == LONG_MAX,
            "seqs": sorted(e[3] for e in items),
            "seqs_in_order": [e[3] for e in items],
            "ts_in_order": [e[2] for e in items],
        }
        if self.pane_info:
            info = context.pane()
            pane.update(pane_index=info.index, pane_timing=info.timing.value, pane_is_last=info.is_last)
            if info.closed_by_quiet:
                pane["pane_closed_by_quiet"] = True
        yield pane


def key_of(element: Element) -> Any:
    return element[0]


def collect_result(
    emitted: Iterable[tuple[str, Any]],
) -> dict[str, list[dict[str, Any]]]:
    """Number panes and late elements in emission order (``emit_seq``, ``fire_index``), as the examples do; a
    retraction (a row whose ``retract`` is true) has the ``fire_index`` of the firing it takes back.

    ``emitted`` is ``("main", pane dict)`` and ``("late", element or its StreamRecord)`` in emission order.
    """
    main: list[dict[str, Any]] = []
    late: list[dict[str, Any]] = []
    fires: dict[tuple[Any, Any, Any], int] = {}
    for emit_seq, (kind, item) in enumerate(emitted):
        if kind == "main":
            pane = dict(item)
            window_id = (pane["key"], pane["window_start"], pane["window_end"])
            if pane.get("retract"):
                pane["fire_index"] = fires[window_id] - 1
            else:
                pane["fire_index"] = fires.get(window_id, 0)
                fires[window_id] = pane["fire_index"] + 1
            pane["emit_seq"] = emit_seq
            main.append(pane)
        else:
            element: Element = item.value if isinstance(item, StreamRecord) else item
            key, value, ts, seq = element
            late.append({"key": key, "value": value, "ts": ts, "seq": seq, "emit_seq": emit_seq})
    return {"main": main, "late": late}


PANE_FIELDS = (
    "key",
    "window_start",
    "window_end",
    "values",
    "values_in_order",
    "count",
    "sum",
    "fire_index",
    "watermark",
    "end_of_input",
    "seqs",
    "seqs_in_order",
    "ts_in_order",
    "emit_seq",
    "retract",
    "pane_index",
    "pane_timing",
    "pane_is_last",
    "pane_closed_by_quiet",
)


def emission_order_per_key(result: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """``result`` (:func:`collect_result`'s form) with ``emit_seq`` counting each key's emissions on their own
    (panes and late elements of a key together, in their order): the order a key's own stream gives, which is all
    that event time per key fixes (keys firing at one stream watermark leave in no promised order)."""
    items = [("main", pane) for pane in result["main"]] + [("late", element) for element in result["late"]]
    items.sort(key=lambda item: item[1]["emit_seq"])
    counts: dict[Any, int] = {}
    renumbered: dict[str, list[dict[str, Any]]] = {"main": [], "late": []}
    for kind, item in items:
        seq = counts.get(item["key"], 0)
        counts[item["key"]] = seq + 1
        renumbered[kind].append({**item, "emit_seq": seq})
    return renumbered


def _pane_order(pane: dict[str, Any]) -> tuple[Any, ...]:
    """Panes by key, window and firing; a firing's new pane before the retraction of it that follows later."""
    window = (pane["window_start"] or 0, pane["window_end"] or 0)
    return (str(pane["key"]), *window, pane["fire_index"], bool(pane.get("retract")))


def comparable(result: dict[str, Any], fields: Iterable[str] = PANE_FIELDS) -> dict[str, list[dict[str, Any]]]:
    """The fields both sides record, panes sorted by (key, window, fire_index), late elements by ``seq``."""
    wanted = list(fields)
    main = [{f: pane.get(f) for f in wanted} for pane in result["main"]]
    main.sort(key=_pane_order)
    late_fields = [f for f in ("key", "value", "ts", "seq", "emit_seq") if f in wanted or f != "emit_seq"]
    late = sorted(({f: e.get(f) for f in late_fields} for e in result["late"]), key=lambda e: e["seq"])
    return {"main": main, "late": late}
