"""The demonstration job: a generated click stream with disorder and late events, windowed per page."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from panes.tags import OutputTag
from panes.testing.harness import WindowOperatorHarness
from panes.windowing import TumblingEventTimeWindows
from panes.windowing.functions import ProcessWindowFunction, WindowContext


class _CountPerPage(ProcessWindowFunction[Any, Any, Any, Any]):
    def process(self, key: Any, context: WindowContext[Any], elements: Any) -> Any:
        window = context.window()
        yield (key, window.start, window.end, sum(1 for _ in elements))


def run_demo(events: int = 2000, seed: int = 7) -> int:
    rng = random.Random(seed)
    pages = ["/home", "/search", "/cart", "/checkout"]
    late: OutputTag[Any] = OutputTag("late-clicks")
    harness = WindowOperatorHarness(
        TumblingEventTimeWindows.of(10_000),
        _CountPerPage(),
        key_selector=lambda click: click[1],
        allowed_lateness=5_000,
        late_data_tag=late,
    )
    max_ts = 0
    for i in range(events):
        ts = i * 50 + rng.randint(-2_000, 300)
        if rng.random() < 0.02:
            ts -= 30_000  # a straggler
        harness.process_element((f"user{rng.randint(1, 20)}", rng.choice(pages)), ts)
        max_ts = max(max_ts, ts)
        harness.process_watermark(max_ts - 1_000 - 1)
    harness.process_watermark(2**63 - 1)
    results = harness.extract_output_values()
    per_page: Counter[str] = Counter()
    for page, _, _, count in results:
        per_page[page] += count
    print(f"{len(results)} window results, {len(harness.get_side_output(late))} late events")
    for page, count in sorted(per_page.items()):
        print(f"  {page:10s} {count} clicks")
    return 0
