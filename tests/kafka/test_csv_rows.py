"""CSV rows read many at a time (``CsvRowDeserializationSchema.deserialize_many``, what a source's batch of Kafka
records goes through: each field converted for the whole batch) give, message by message, what reading each alone
gives."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from panes.datastream.formats.csv import CsvRowDeserializationSchema
from panes.types import Types

ROW = Types.ROW_NAMED(["id", "name", "ok", "score"], [Types.LONG(), Types.STRING(), Types.BOOLEAN(), Types.DOUBLE()])
LISTED = Types.ROW_NAMED(["id", "tags"], [Types.LONG(), Types.BASIC_ARRAY(Types.STRING())])

fields = st.tuples(
    st.sampled_from(["1", "-7", "", "x", "9223372036854775807", "1.5"]),
    st.sampled_from(["a", "", "b c", '"q,uoted"', "null"]),
    st.sampled_from(["true", "FALSE", "", "yes", "null"]),
    st.sampled_from(["1.5", "", "nan", "1e3", "-"]),
)
extra = st.sampled_from([b"", b"# a comment", b"1,2", b"1,a,true,2.0,extra", b'"unclosed,a,true,1', b"5,e,true,1\r\n"])
messages = st.lists(st.one_of(fields.map(lambda f: ",".join(f).encode()), extra), max_size=20)


def one_by_one(schema: CsvRowDeserializationSchema, batch: list[bytes]) -> list[Any]:
    found: list[Any] = []
    for message in batch:
        try:
            found.append(schema.deserialize(message))
        except ValueError as error:
            found.append(error)
    return found


def comparable(results: list[Any]) -> list[Any]:
    """Refusals by their message; rows by their ``repr`` (a NaN field is not equal to itself)."""
    return [("refused", str(r)) if isinstance(r, ValueError) else repr(r) for r in results]


@settings(max_examples=200, deadline=None)
@given(messages, st.booleans(), st.booleans(), st.sampled_from([None, "null"]))
def test_many_at_once_read_as_each_alone(batch: list[bytes], comments: bool, ignore: bool, null: str | None) -> None:
    builder = CsvRowDeserializationSchema.Builder(ROW).set_allow_comments(comments)
    if ignore:
        builder = builder.set_ignore_parse_errors(True)
    if null is not None:
        builder = builder.set_null_literal(null)
    schema = builder.build()
    assert comparable(schema.deserialize_many(batch)) == comparable(one_by_one(schema, batch))


def test_a_list_field_is_read_as_each_alone() -> None:
    schema = CsvRowDeserializationSchema.Builder(LISTED).build()
    batch = [b"1,a;b", b"2,", b"x,c", b"3,;d"]
    assert comparable(schema.deserialize_many(batch)) == comparable(one_by_one(schema, batch))
