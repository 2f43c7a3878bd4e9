"""``panes.garbage``: the collector's thresholds while panes processes elements, and back after."""

from __future__ import annotations

import gc
import subprocess
import sys
from collections.abc import Iterator

import pytest

from panes.datastream import StreamEnvironment
from panes.garbage import THRESHOLDS, fewer_collections


@pytest.fixture
def thresholds() -> Iterator[None]:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


def test_the_block_runs_at_the_thresholds_and_the_callers_come_back_also_after_an_error(thresholds: None) -> None:
    gc.set_threshold(700, 10, 10)
    with pytest.raises(RuntimeError), fewer_collections():
        assert gc.get_threshold() == THRESHOLDS
        raise RuntimeError("in the block")
    assert gc.get_threshold() == (700, 10, 10)


def test_a_caller_who_collects_less_often_or_not_at_all_keeps_it(thresholds: None) -> None:
    gc.set_threshold(200_000, 5, 50)
    with fewer_collections():
        assert gc.get_threshold() == (200_000, 10, 50)
    gc.set_threshold(0, 10, 10)  # automatic collection off
    with fewer_collections():
        assert gc.get_threshold() == (0, 10, 10)


def test_the_local_runner_runs_a_job_at_the_thresholds(thresholds: None) -> None:
    gc.set_threshold(700, 10, 10)
    seen: list[tuple[int, int, int]] = []

    def note_thresholds(value: int) -> int:
        seen.append(gc.get_threshold())
        return value

    env = StreamEnvironment("local")
    env.from_collection([1, 2, 3]).map(note_thresholds).print()
    env.execute("thresholds")
    assert seen == [THRESHOLDS] * 3
    assert gc.get_threshold() == (700, 10, 10)


def test_a_settled_process_leaves_what_it_made_before_out_of_collections() -> None:
    script = (
        "import gc\n"
        "from panes.garbage import THRESHOLDS, settle_process\n"
        "before = gc.get_freeze_count()\n"
        "settle_process()\n"
        "assert gc.get_threshold() == THRESHOLDS, gc.get_threshold()\n"
        "assert gc.get_freeze_count() > before + 1000, (before, gc.get_freeze_count())\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
