"""A job whose progress figures are known from its input, for the figure tests of both runners (``tests/cli``
and ``tests/spark/test_metrics.py``): a JSON file source with bad lines and an error output, a window with a
late data table, and a sink of the window's results.

File ``a.json`` holds 3 records and 2 bad lines, ``b.json`` 1 record (late for its window once ``a.json`` was
read) and 1 bad line: 4 records in, 3 error rows. The results are key ``a``'s window ``[0, 10)`` (the record
with the highest timestamp, 2), one row; the late record goes to the window's late data table, which is not a
result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from panes.datastream import ListSink, OutputTag, StreamEnvironment
from panes.watermarks import WatermarkStrategy
from panes.windowing import TumblingEventTimeWindows

BAD: OutputTag[Any] = OutputTag("bad")
SCHEMA = "k STRING, ts BIGINT"
SOURCE = "clicks"
RECORDS = 4
BAD_LINES = 3
RESULTS = [{"k": "a", "ts": 2}]
LATE = 1


def write_input(folder: Path) -> Path:
    """The two JSON files (see the module docstring) in ``folder``, made; ``folder``."""
    folder.mkdir(parents=True)
    lines = ['{"k":"a","ts":1}', "not json", '{"k":"a","ts":2}', '{"k":"b","ts":"x"}', '{"k":"c","ts":50}']
    (folder / "a.json").write_text("".join(line + "\n" for line in lines))
    (folder / "b.json").write_text('{"k":"a","ts":3}\nnull\n')
    return folder


def build(env: StreamEnvironment, folder: Path, late_table: Path, streaming: bool = False) -> tuple[ListSink, ListSink]:
    """The job over ``folder`` (one file per micro-batch when ``streaming``, on Spark); its sinks of results and
    of bad lines."""
    results, errors = ListSink(), ListSink()
    source = env.from_files(str(folder), format="json", schema=SCHEMA, streaming=streaming, max_files_per_trigger=1)
    source = source.name(SOURCE).side_output_errors(BAD)
    source.get_side_output(BAD).sink_to(errors)
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(lambda e, _: e["ts"])
    windowed = source.assign_timestamps_and_watermarks(strategy).key_by(lambda e: e["k"])
    windowed.window(TumblingEventTimeWindows.of(10)).late_data_table(str(late_table)).reduce(
        lambda a, b: a if a["ts"] >= b["ts"] else b
    ).name("latest").filter(lambda e: e["k"] == "a").sink_to(results)
    return results, errors
