"""``extract_key``: the one rule every host applies to keys (local runner, harness, Spark)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from panes.errors import BadRecordError, UserFunctionError
from panes.functions.aggregators import FieldKey
from panes.functions.stream import as_key_selector
from panes.operators.keys import extract_key, extract_keys


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


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.fixed_dictionaries(
                {"k": st.one_of(st.text(max_size=3), st.integers(), st.floats(), st.booleans(), st.binary(max_size=2))}
            ),
            st.fixed_dictionaries({"k": st.one_of(st.none(), st.lists(st.integers(), max_size=2))}),
            st.just({"other": 1}),
            st.tuples(st.integers()),
        ),
        max_size=6,
    )
)
def test_keys_worked_out_together_are_the_keys_one_by_one_or_none_so_each_is_keyed_alone(values: list[Any]) -> None:
    keys = extract_keys(FieldKey("k"), values)
    if keys is not None:
        assert len(keys) == len(values)
        for key, value in zip(keys, values, strict=True):
            one = extract_key(FieldKey("k"), value)
            assert type(key) is type(one) and (key == one or key != key)  # NaN keys are themselves
    else:
        plain = all(type(v) is dict and "k" in v and type(v["k"]) in (str, int, float, bool, bytes) for v in values)
        assert not values or not plain


def test_keys_are_worked_out_together_only_for_a_field_name() -> None:
    values = [{"k": "a"}, {"k": "b"}]
    assert extract_keys(FieldKey("k"), values) == ["a", "b"]
    assert extract_keys(FieldKey(0), [(1,), (2,)]) is None
    assert extract_keys(as_key_selector(lambda v: v["k"]).get_key, values) is None
