"""JSON rows read many at a time (``JsonRowDeserializationSchema.deserialize_many``, what a Spark task's Kafka records
go through: one parse per batch) give, message by message, what reading each alone gives: the row, nothing
(``ignore_parse_errors``), or the same refusal."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from panes.connectors.kafka.deserialization import ConsumerRecord, KafkaRecordDeserializationSchema
from panes.datastream.formats.json import JsonRowDeserializationSchema
from panes.types import Types

ROW = Types.ROW_NAMED(["id", "name", "score"], [Types.LONG(), Types.STRING(), Types.DOUBLE()])

TRICKY = [
    b"",
    b"   ",
    b"null",
    b"[1, 2]",
    b"42",
    b"{not json",
    b'{"id": "seven"}',
    b'{"id": 1, "name": 5}',
    b'{"id": 1}',
    b'{"id": 1, "extra": true}',
    b'{"id": 1,\n "name": "two lines"}',
    b'{"id": 1}\r\n',
    b'{"id": 1} {"id": 2}',
    b'{"id": 9223372036854775807, "score": 1e308}',
    '{"name": "caf\u00e9 \u2603"}'.encode(),
]


def one_by_one(schema: JsonRowDeserializationSchema, messages: list[bytes]) -> list[Any]:
    found: list[Any] = []
    for message in messages:
        try:
            found.append(schema.deserialize(message))
        except ValueError as error:
            found.append(("refused", str(error)))
    return found


def comparable(results: list[Any]) -> list[Any]:
    return [("refused", str(r)) if isinstance(r, ValueError) else r for r in results]


objects = st.fixed_dictionaries(
    {},
    optional={
        "id": st.integers(-(2**63), 2**63 - 1),
        "name": st.text(st.characters(exclude_categories=("Cs",)), max_size=8),
        "score": st.floats(allow_nan=False, allow_infinity=False),
    },
).map(lambda value: json.dumps(value).encode())

messages = st.lists(st.one_of(objects, st.sampled_from(TRICKY)), max_size=25)


@settings(max_examples=150, deadline=None)
@given(messages, st.booleans(), st.booleans())
def test_many_at_once_read_as_each_alone(batch: list[bytes], missing: bool, ignore: bool) -> None:
    builder = JsonRowDeserializationSchema.builder().type_info(ROW)
    if missing:
        builder = builder.fail_on_missing_field()
    if ignore:
        builder = builder.ignore_parse_errors()
    schema = builder.build()
    assert comparable(schema.deserialize_many(batch)) == one_by_one(schema, batch)


def test_a_kafka_batch_reads_its_values_in_one_parse_and_keeps_tombstones_apart() -> None:
    schema = JsonRowDeserializationSchema.builder().type_info(ROW).build()
    records = [
        ConsumerRecord("t", 0, offset, None, "NoTimestampType", None, value, ())
        for offset, value in enumerate([b'{"id": 1}', None, b"{bad", b'{"id": 2, "name": "b"}'])
    ]
    found = KafkaRecordDeserializationSchema.value_only(schema).deserialize_batch(records)
    assert [item if isinstance(item, list) else type(item).__name__ for item in found] == [
        [schema.deserialize(b'{"id": 1}')],
        "ValueError",
        "ValueError",
        [schema.deserialize(b'{"id": 2, "name": "b"}')],
    ]
    assert "tombstone" in str(found[1])


rows = st.tuples(
    st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
    st.one_of(st.none(), st.text(st.characters(exclude_categories=("Cs",)), max_size=8)),
    st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False)),
)


@settings(max_examples=150, deadline=None)
@given(rows, st.sampled_from(["row", "dict", "tuple"]))
def test_a_row_is_written_as_one_object_of_its_fields_in_declared_order(fields: tuple[Any, ...], shape: str) -> None:
    from panes.datastream.formats.json import JsonRowSerializationSchema
    from panes.types import Row

    schema = JsonRowSerializationSchema.builder().with_type_info(ROW).build()
    names = ["id", "name", "score"]
    element: Any = {
        "row": Row(**dict(zip(names, fields, strict=True))),
        "dict": dict(zip(reversed(names), reversed(fields), strict=True)),  # a dict's order does not matter
        "tuple": fields,
    }[shape]
    written = schema.serialize(element)
    assert list(json.loads(written).items()) == list(zip(names, fields, strict=True))
    assert (
        written == json.dumps(dict(zip(names, fields, strict=True)), ensure_ascii=False, separators=(",", ":")).encode()
    )
