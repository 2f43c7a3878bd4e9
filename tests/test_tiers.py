"""The tiers of ``tests/tiers.py`` name real Spark tests, and every file of Spark tests is placed in them."""

from __future__ import annotations

import pytest

from tests import tiers


@pytest.fixture
def collected(request: pytest.FixtureRequest) -> dict[str, bool]:
    whole, tests = request.config.stash[tiers.COLLECTED]
    if not whole:
        pytest.skip("only a whole collection (no -k, folders only) shows every test the tiers name")
    return tests


def file_of(node_id: str) -> str:
    return node_id.split("::", 1)[0]


def test_every_quick_spark_test_is_a_collected_spark_test(collected: dict[str, bool]) -> None:
    assert tiers.QUICK_SPARK, "the quick tier names no Spark test"
    assert [node for node in tiers.QUICK_SPARK if not collected.get(node, False)] == []


def test_every_file_of_spark_tests_is_wholly_quick_or_says_why_it_waits_for_the_full_run(
    collected: dict[str, bool],
) -> None:
    spark_files = {file_of(node) for node, spark in collected.items() if spark}
    not_quick = {file_of(node) for node, spark in collected.items() if spark and node not in tiers.QUICK_SPARK}
    assert sorted(not_quick - set(tiers.FULL_ONLY)) == []
    assert sorted(set(tiers.FULL_ONLY) - spark_files) == []  # no reason for a file that has no Spark test


def test_every_entry_gives_its_reason() -> None:
    subsystems = [reason for tests in tiers.QUICK_SPARK_BY_FILE.values() for reason in tests.values()]
    assert all(reason.strip() for reason in [*subsystems, *tiers.FULL_ONLY.values()])


def test_the_slowest_files_are_files_of_spark_tests_named_once(collected: dict[str, bool]) -> None:
    spark_files = {file_of(node) for node, spark in collected.items() if spark}
    assert sorted(set(tiers.SLOWEST_FIRST) - spark_files) == []
    assert len(set(tiers.SLOWEST_FIRST)) == len(tiers.SLOWEST_FIRST)


def test_the_slowest_files_come_first_and_each_file_keeps_its_order() -> None:
    class Item:
        def __init__(self, nodeid: str) -> None:
            self.nodeid = nodeid

    names = ["tests/a.py::one", "tests/a.py::two", f"{tiers.SLOWEST_FIRST[1]}::x", f"{tiers.SLOWEST_FIRST[0]}::y"]
    items = [Item(name) for name in names]
    tiers.order_slowest_first(items)  # type: ignore[arg-type]
    assert [item.nodeid for item in items] == [names[3], names[2], names[0], names[1]]


def test_the_repeating_files_are_full_tier_files_with_a_reason() -> None:
    assert sorted(tiers.REPEATS - set(tiers.FULL_ONLY)) == []
