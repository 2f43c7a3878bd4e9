"""``extract_key``: the one rule every host applies to keys (local runner, harness, Spark)."""

from __future__ import annotations

from typing import Any

import pytest

from panes.errors import BadRecordError, UserFunctionError
from panes.functions.aggregators import FieldKey
from panes.functions.stream import as_key_selector
from panes.operators.keys import extract_key


def test_a_key_is_whatever_the_selector_returns_when_it_is_hashable_and_not_none() -> None:
    assert extract_key(FieldKey("k"), {"k": "a"}) == "a"
    assert extract_key(FieldKey(0), (0, 1)) == 0
    assert extract_key(as_key_selector(lambda v: (v, 1)).get_key, "x") == ("x", 1)


@pytest.mark.parametrize(
    ("selector", "value", "pattern"),
    [
        (FieldKey("k"), {"k": None}, r"key_by\('k'\): the key field 'k' is None"),
        (FieldKey("k"), {"v": 1}, r"key_by\('k'\): .* has no field 'k'"),
        (FieldKey(2), (1, 2), r"key_by\(2\): .* has no field 2"),
        (as_key_selector(lambda v: None).get_key, 5, r"the key selector <lambda> returned None for 5"),
        (FieldKey("k"), {"k": {"a": 1}}, r"key_by\('k'\): the key \{'a': 1\} of .* is not hashable"),
    ],
)
def test_null_missing_and_unhashable_keys_are_bad_records_saying_what_to_change(
    selector: Any, value: Any, pattern: str
) -> None:
    with pytest.raises(BadRecordError, match=pattern) as failure:
        extract_key(selector, value)
    assert "side_output_errors" in str(failure.value)


def test_a_list_key_is_accepted_as_pyflink_does_equal_to_lists_with_its_items_not_to_tuples() -> None:
    key = extract_key(FieldKey("k"), {"k": [1, [2, "x"]]})
    assert key == [1, [2, "x"]] and key != (1, (2, "x")) and repr(key) == "[1, [2, 'x']]"
    assert hash(key) == hash(extract_key(as_key_selector(lambda v: [1, [2, "x"]]).get_key, None))
    assert len({key, extract_key(FieldKey(0), ([1, [2, "x"]],)), (1, (2, "x"))}) == 2


def test_a_key_selector_that_raises_is_a_user_function_error_keeping_the_cause() -> None:
    def broken(value: Any) -> Any:
        return 1 // value

    with pytest.raises(UserFunctionError) as failure:
        extract_key(as_key_selector(broken).get_key, 0)
    assert isinstance(failure.value.__cause__, ZeroDivisionError)
    assert failure.value.function == "key selector broken"
    assert failure.value.operator is None
