"""``Row``: PyFlink's row, positional or named, immutable, hashable and picklable."""

from __future__ import annotations

import copy
import operator
import pickle

import pytest

from panes.types import Row


def test_a_positional_row_reads_by_index_and_iterates_over_its_values() -> None:
    row = Row(1, "a", None)
    assert row[0] == 1
    assert row[-1] is None
    assert row[1:] == ("a", None)
    assert len(row) == 3
    assert list(row) == [1, "a", None]
    assert row._fields is None


def test_a_named_row_keeps_the_keyword_order() -> None:
    row = Row(name="a", n=1)
    assert row._fields == ("name", "n")
    assert list(row) == ["a", 1]
    assert row[0] == "a"
    assert row["n"] == 1
    assert row.name == "a"
    assert row.n == 1
    assert Row(b=1, a=2)._fields == ("b", "a")


def test_a_field_may_be_named_self() -> None:
    # an Avro record or a table may well have a column named "self": it is a field like any other
    row = Row(self=1, other="x")
    assert row._fields == ("self", "other")
    assert row["self"] == 1
    assert row.as_dict() == {"self": 1, "other": "x"}
    assert pickle.loads(pickle.dumps(row)) == row


def test_as_dict_gives_the_named_fields_in_order() -> None:
    row = Row(key=1, value=Row(name="a", age=2), items=[Row(x=1)])
    assert list(row.as_dict()) == ["key", "value", "items"]
    assert row.as_dict() == {"key": 1, "value": Row(name="a", age=2), "items": [Row(x=1)]}
    assert row.as_dict(recursive=True) == {"key": 1, "value": {"name": "a", "age": 2}, "items": [{"x": 1}]}


def test_as_dict_of_a_positional_row_is_refused() -> None:
    with pytest.raises(TypeError, match="positional"):
        Row(1, 2).as_dict()


def test_equality_compares_names_and_values() -> None:
    assert Row(a=1, b=2) == Row(a=1, b=2)
    assert Row(a=1, b=2) != Row(b=2, a=1)  # same pairs, another field order
    assert Row(a=1) != Row(b=1)
    assert Row(1, 2) == Row(1, 2)
    assert Row(1, 2) != Row(2, 1)
    assert Row(a=1) != Row(1)
    assert Row(1, 2) != (1, 2)
    assert operator.eq((1, 2), Row(1, 2)) is False  # the tuple on the left too


def test_equal_rows_hash_alike_and_unhashable_values_make_an_unhashable_row() -> None:
    assert hash(Row(a=1, b="x")) == hash(Row(a=1, b="x"))
    assert len({Row(a=1), Row(a=1), Row(b=1), Row(1)}) == 3
    with pytest.raises(TypeError):
        hash(Row(a=[1]))


def test_repr_is_readable() -> None:
    assert repr(Row(name="a", n=1)) == "Row(name='a', n=1)"
    assert repr(Row(1, "a")) == "Row(1, 'a')"
    assert repr(Row()) == "Row()"


def test_unknown_names_raise_the_usual_errors() -> None:
    row = Row(a=1)
    with pytest.raises(KeyError):
        row["b"]
    with pytest.raises(AttributeError, match="no field 'b'"):
        row.b
    with pytest.raises(KeyError, match="positional"):
        Row(1)["a"]
    with pytest.raises(AttributeError):
        Row(1).a
    with pytest.raises(IndexError):
        row[5]


def test_a_row_cannot_be_changed() -> None:
    row = Row(a=1)
    with pytest.raises(AttributeError, match="cannot be changed"):
        row.a = 2
    with pytest.raises(TypeError):
        row[0] = 2  # type: ignore[index]
    with pytest.raises(AttributeError):
        del row.a
    assert row == Row(a=1)


def test_positional_and_named_values_together_are_refused() -> None:
    with pytest.raises(TypeError, match="not both"):
        Row(1, a=2)


def test_in_searches_the_values_as_pyflink() -> None:
    row = Row(name="Alice", age=11)
    assert "Alice" in row
    assert 11 in row
    assert "name" not in row


def test_a_row_of_names_makes_named_rows() -> None:
    person = Row("name", "age")
    assert person("Alice", 11) == Row(name="Alice", age=11)
    with pytest.raises(ValueError, match="2 values, got 1"):
        person("Alice")
    with pytest.raises(TypeError, match="field names"):
        Row(1, 2)(3, 4)
    with pytest.raises(TypeError, match="field names"):
        Row(a="x")("y")
    with pytest.raises(ValueError, match="repeats"):
        Row("a", "a")(1, 2)


@pytest.mark.parametrize("row", [Row(name="a", n=[1, 2]), Row(1, "a"), Row(), Row(nested=Row(x=None))])
def test_rows_survive_pickle_and_copy(row: Row) -> None:
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        restored = pickle.loads(pickle.dumps(row, protocol=protocol))
        assert restored == row
        assert restored._fields == row._fields
    assert copy.copy(row) == row
    assert copy.deepcopy(row) == row
