"""A small job touching every kind of step, for the metrics tests of both runners (``tests/local`` and
``tests/spark``): its expected counters are worked out from its input in :func:`expected`."""

from __future__ import annotations

from typing import Any

from panes.datastream import (
    CoMapFunction,
    KeyedProcessFunction,
    ListSink,
    OperatorMetrics,
    OutputTag,
    ProcessFunction,
    StreamEnvironment,
)
from panes.datastream.execution import JobExecutionResult
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows

ROWS = [{"k": k, "ts": ts, "v": v} for k, ts, v in [("a", 1, 1), ("b", 2, -1), ("c", 3, 3), ("a", 12, 2)]]
ROWS += [{"k": None, "ts": 4, "v": 4}, {"k": "b", "ts": 15, "v": 5}]
ODD: OutputTag[Any] = OutputTag("odd")
ERRORS: OutputTag[Any] = OutputTag("errors")


class SplitOdd(ProcessFunction[Any, Any]):
    def process_element(self, value: Any, ctx: Any) -> Any:
        if value["v"] % 2:
            ctx.output(ODD, value)
        yield value


class Remember(KeyedProcessFunction[Any, Any, Any]):
    """Keeps one state entry per key and a processing-time timer far in the future (still pending at the end)."""

    def open(self, runtime_context: Any) -> None:
        from panes.state import ValueStateDescriptor

        self.seen = runtime_context.get_state(ValueStateDescriptor("seen"))

    def process_element(self, value: Any, ctx: Any) -> Any:
        self.seen.update(value["v"])
        ctx.timer_service().register_processing_time_timer(10**15 + value["ts"])
        yield value["k"]


class Both(CoMapFunction[Any, Any, Any]):
    def map1(self, value: Any) -> Any:
        return value

    def map2(self, value: Any) -> Any:
        return value


def build(env: StreamEnvironment, micro_batches: bool = False) -> list[ListSink]:
    """The job over :data:`ROWS` (as one micro-batch: a streaming query on Spark); returns its two sinks."""
    source = env.from_micro_batches([ROWS]) if micro_batches else env.from_collection(ROWS)
    stamped = source.assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner("ts")
    )
    positive = stamped.filter(lambda row: row["v"] > 0).name("positive")
    split = positive.process(SplitOdd()).name("split")
    windows = (
        split.key_by("k")
        .window(TumblingEventTimeWindows.of(10))
        .side_output_errors(ERRORS)
        .reduce(lambda a, b: {**a, "v": a["v"] + b["v"]})
    )
    remembered = split.get_side_output(ODD).filter(lambda row: row["k"] is not None).name("keyed")
    keys = remembered.key_by("k").process(Remember()).name("remember")
    both = keys.connect(windows.map(lambda row: row["k"]).name("window keys")).map(Both()).name("both")
    sinks = [ListSink(), ListSink()]
    both.sink_to(sinks[0])
    windows.get_side_output(ERRORS).sink_to(sinks[1])
    return sinks


def expected() -> dict[str, dict[str, int]]:
    """The counters (and open panes) of each step, from :data:`ROWS`: the filter drops ``v <= 0``; ``split``
    sends odd values to a side output; the window refuses the null key and fires the panes [0, 10) of a and
    c, [10, 20) of a and b (the rows with keys come in timestamp order: none is late); ``remember`` keeps a
    state entry and a timer per key of the odd, keyed rows."""
    positive = [r for r in ROWS if r["v"] > 0]
    odd = [r for r in positive if r["v"] % 2]
    keyed = [r for r in positive if r["k"] is not None]
    panes = {(r["k"], r["ts"] // 10) for r in keyed}
    remembered = [r for r in odd if r["k"] is not None]
    return {
        "Timestamps/Watermarks": {"records_in": len(ROWS), "records_out": len(ROWS)},
        "positive": {"records_in": len(ROWS), "records_out": len(positive)},
        "split": {"records_in": len(positive), "records_out": len(positive), "side_out": len(odd)},
        "Window(Reduce)": {"records_in": len(positive), "records_out": len(panes), "error_out": 1},
        "keyed": {"records_in": len(odd), "records_out": len(remembered)},
        "remember": {
            "records_in": len(remembered),
            "records_out": len(remembered),
            "open_panes": len({r["k"] for r in remembered}),
            "timers": len(remembered),
        },
        "window keys": {"records_in": len(panes), "records_out": len(panes)},
        "both": {"records_in": len(remembered) + len(panes), "records_out": len(remembered) + len(panes)},
    }


def check(result: JobExecutionResult, sinks: list[ListSink]) -> None:
    metrics = result.metrics
    want = expected()
    assert sorted(metrics) == sorted(want)
    for name, fields in want.items():
        got = metrics[name]
        assert isinstance(got, OperatorMetrics) and got.name == name
        expected_fields = {f: fields.get(f, 0) for f in ("records_in", "records_out", "late_dropped", "late_out")}
        expected_fields |= {f: fields.get(f, 0) for f in ("error_out", "side_out", "open_panes")}
        actual = {f: getattr(got, f) for f in expected_fields}
        assert actual == expected_fields, name
    assert metrics["remember"].timers == want["remember"]["timers"]
    assert len(sinks[0].values) == want["both"]["records_out"] and len(sinks[1].values) == 1
