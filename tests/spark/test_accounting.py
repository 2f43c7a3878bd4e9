"""Every row accounted for on Spark (``tests/accounting.py`` states the identity): two random streams per
window kind, in micro-batches ending with a row that arrives late; the counters come from the query's progress."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from panes.datastream import StreamEnvironment
from tests.accounting import KINDS, Case, cases, check, run


@pytest.mark.parametrize("kind", KINDS)
def test_every_row_is_in_a_fired_pane_a_side_output_a_counter_or_open_state(spark: Any, kind: str) -> None:
    from panes.spark import SparkRunner

    # two random examples per window kind (each is a streaming query), not shrunk: the failing case is
    # reported, with the blob that replays it (@reproduce_failure)
    @settings(
        max_examples=2,
        print_blob=True,
        deadline=None,
        phases=(Phase.generate,),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        database=None,
    )
    @given(case=cases(max_rows=12, max_batches=3, kind=kind, min_rows=6, late_tail=True))
    def accounted(case: Case) -> None:
        check(case, run(StreamEnvironment(SparkRunner(spark, num_shards=2)), case))

    accounted()
