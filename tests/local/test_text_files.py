"""JSON-lines and CSV files read against their declared schema: rows that fit, and bad lines with their file,
line number and text, on the local runner (``tests/spark/test_text_files_spark.py`` runs the same jobs on Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from panes.datastream import ListSink, OutputTag, StreamEnvironment
from panes.datastream.text_files import TextFormat
from panes.errors import BadRecordError, ErrorRecord
from panes.types import RecordType

SCHEMA = "k STRING, ts BIGINT"
ARROW = pa.schema(list(RecordType.of(SCHEMA).arrow_type))
BAD: OutputTag[Any] = OutputTag("bad")


def json_format() -> TextFormat:
    return TextFormat.of("json", ARROW, {})


def test_good_rows_in_order_and_each_bad_line_with_its_number_and_reason() -> None:
    data = b'{"k":"a","ts":1}\n\n{"k":"b","ts":"x"}\nnot json\n{"k":"c","ts":3,"extra":true}\r\n[1]\n{"k":"d"}\n'
    table, bad = json_format().parse(data, "in/a.json")
    assert table.to_pylist() == [{"k": "a", "ts": 1}, {"k": "c", "ts": 3}, {"k": "d", "ts": None}]
    assert [(b.line, b.text) for b in bad] == [(3, '{"k":"b","ts":"x"}'), (4, "not json"), (6, "[1]")]
    assert bad[0].reason == "field 'ts': 'x' is not a BIGINT"
    assert bad[1].reason.startswith("not JSON")
    assert bad[2].reason == "not a JSON object but list"
    assert all(b.file == str(Path("in/a.json").resolve()) for b in bad)


def test_csv_skips_its_header_and_counts_lines_from_the_top_of_the_file() -> None:
    csv = TextFormat.of("csv", ARROW, {})
    table, bad = csv.parse(b"k,ts\na,1\nb,x\n\n,3\nd,4,5\n", "b.csv")
    assert table.to_pylist() == [{"k": "a", "ts": 1}, {"k": None, "ts": 3}]
    assert [(b.line, b.text) for b in bad] == [(3, "b,x"), (6, "d,4,5")]
    assert "invalid value 'x'" in bad[0].reason and "Expected 2 columns, got 3" in bad[1].reason
    semicolons = TextFormat.of("csv", ARROW, {"header": "false", "sep": ";"})
    assert semicolons.parse(b"a;1\n", "c.csv")[0].to_pylist() == [{"k": "a", "ts": 1}]


def test_a_file_uri_names_the_same_file_as_its_path() -> None:
    from panes.datastream.text_files import file_name

    assert file_name("file:/tmp/in%20x/a.json") == "/tmp/in x/a.json" == file_name("/tmp/in x/a.json")
    assert file_name("s3a://bucket/a.json") == "s3a://bucket/a.json"


@pytest.mark.parametrize(
    ("format", "options", "message"),
    [
        ("json", {"multiLine": "true"}, "a json file source takes no options, not multiLine"),
        ("csv", {"inferSchema": "true"}, "takes only header, sep, delimiter, quote, not inferSchema"),
        ("csv", {"header": "yes"}, "header must be 'true' or 'false'"),
        ("csv", {"sep": "::"}, "sep must be one character"),
    ],
)
def test_options_a_format_does_not_take_fail_when_the_job_is_built(
    format: str, options: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        StreamEnvironment().from_files("in", format=format, schema=SCHEMA, **options)


def test_json_and_csv_sources_need_a_schema() -> None:
    with pytest.raises(ValueError, match="a csv file source needs a schema"):
        StreamEnvironment().from_files("in", format="csv")


LINES = st.lists(
    st.one_of(
        st.builds(lambda k, ts: f'{{"k": "{k}", "ts": {ts}}}', st.sampled_from("abc"), st.integers(-5, 5)),
        st.sampled_from(['{"k": "a", "ts": "x"}', "oops", "[1, 2]", "", '{"ts": 1.5}', "null"]),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(LINES)
def test_every_line_is_a_row_or_a_bad_line_and_none_is_lost(lines: list[str]) -> None:
    table, bad = json_format().parse("\n".join(lines).encode(), "p.json")
    good = [i + 1 for i, line in enumerate(lines) if line.startswith('{"k"') and '"x"' not in line]
    blank = [i + 1 for i, line in enumerate(lines) if line == ""]
    assert table.num_rows == len(good)
    assert sorted([b.line for b in bad] + good + blank) == list(range(1, len(lines) + 1))
    assert [b.text for b in bad] == [lines[b.line - 1] for b in bad]


def write_clicks(folder: Path) -> Path:
    folder.mkdir()
    (folder / "a.json").write_text('{"k":"a","ts":1}\n{"k":"b","ts":"x"}\n{"k":"a","ts":2}\n')
    (folder / "b.json").write_text('not json\n{"k":"b","ts":5}\n')
    return folder


def test_bad_lines_go_to_the_sources_error_output(tmp_path: Path) -> None:
    folder = write_clicks(tmp_path / "in")
    env = StreamEnvironment()
    rows, errors = ListSink(), ListSink()
    source = env.from_files(str(folder), format="json", schema=SCHEMA).side_output_errors(BAD)
    source.sink_to(rows)
    source.get_side_output(BAD).sink_to(errors)
    env.execute()
    assert rows.values == [{"k": "a", "ts": 1}, {"k": "a", "ts": 2}, {"k": "b", "ts": 5}]
    name = f"File Source {folder}"
    assert errors.values == [
        ErrorRecord(
            {"file": str(folder / "a.json"), "line": 2, "text": '{"k":"b","ts":"x"}'},
            None,
            "field 'ts': 'x' is not a BIGINT",
            "BadRecordError",
            name,
        ),
        ErrorRecord(
            {"file": str(folder / "b.json"), "line": 1, "text": "not json"},
            None,
            "not JSON (Expecting value: line 1 column 1 (char 0))",
            "BadRecordError",
            name,
        ),
    ]


def test_without_an_error_output_a_bad_line_fails_the_job_naming_file_and_line(tmp_path: Path) -> None:
    folder = write_clicks(tmp_path / "in")
    env = StreamEnvironment()
    env.from_files(str(folder), format="json", schema=SCHEMA).sink_to(ListSink())
    with pytest.raises(BadRecordError, match=r"line 2 of .*a\.json is not a row of the source's schema") as failure:
        env.execute()
    assert "set side_output_errors(tag) on the source" in str(failure.value)
