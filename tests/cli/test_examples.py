"""Every example runs with ``panes run`` on the local runner and gives what Flink gives for its input.

Expected results are computed here from the examples' data with plain Python following Flink's rules (cited
per test), not copied from a run.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from panes.time import format_instant
from tests.cli.support import EXAMPLES, example, panes, printed
from tests.postgres.conftest import Database, postgres, postgres_server  # noqa: F401 (the fixtures)


def run_example(name: str) -> dict[str, list[Any]]:
    done = panes("run", str(EXAMPLES / f"{name}.py"))
    assert done.returncode == 0, done.stderr
    assert "done in" in done.stderr
    return printed(done.stdout)


def test_every_example_is_checked_here() -> None:
    names = {path.stem for path in EXAMPLES.glob("*.py")}
    checked = {name.removeprefix("test_") for name in globals() if name.startswith("test_")}
    assert names <= checked, f"examples without a test: {sorted(names - checked)}"


def test_sessions() -> None:
    # Flink's session windows: each element opens [ts, ts + gap); overlapping windows of a key merge, so a
    # session ends where two consecutive clicks of a user are >= gap apart (Flink docs, "Session Windows").
    module = example("sessions")
    clicks: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for batch in module.CLICKS:
        for click in batch:
            clicks[click["user"]].append(click)
    expected = []
    for theirs in clicks.values():
        theirs.sort(key=lambda c: c["ts"])
        session = [theirs[0]]
        for click in theirs[1:]:
            if click["ts"] - session[-1]["ts"] >= module.GAP_MS:
                expected.append(session)
                session = []
            session.append(click)
        expected.append(session)
    want = sorted(
        (s[0]["user"], format_instant(s[0]["ts"]), format_instant(s[-1]["ts"]), len(s), " ".join(c["page"] for c in s))
        for s in expected
    )
    assert sorted(run_example("sessions")["session"]) == want


def test_count_windows() -> None:
    # count_window(n): GlobalWindows + PurgingTrigger(CountTrigger(n)): fires and purges every n elements of a
    # key, leftovers never fire. count_window(n, s): CountTrigger(s) + CountEvictor(n): every s elements, the
    # last n (Flink's KeyedStream.countWindow).
    module = example("count_windows")
    amounts: dict[str, list[int]] = defaultdict(list)
    for batch in module.ORDERS:
        for customer, amount in batch:
            amounts[customer].append(amount)
    tumbling = sorted((c, sum(a[i : i + 3])) for c, a in amounts.items() for i in range(0, len(a) - len(a) % 3, 3))
    sliding = sorted((c, sum(a[max(0, i - 4) : i])) for c, a in amounts.items() for i in range(2, len(a) + 1, 2))
    results = run_example("count_windows")
    assert sorted(tuple(r) for r in results["every 3"]) == tumbling
    assert sorted(tuple(r) for r in results["last 4, every 2"]) == sliding
    # per key, in the order the key's elements arrived
    for customer in amounts:
        mine = [r[1] for r in results["every 3"] if r[0] == customer]
        assert mine == [v for c, v in tumbling if c == customer]


def test_early_firings() -> None:
    # ContinuousEventTimeTrigger fires at every interval the watermark passes inside the window and at its end,
    # without purging (Flink's ContinuousEventTimeTrigger): early counts grow, the last one is the window's total.
    module = example("early_firings")
    totals: dict[tuple[str, str], int] = defaultdict(int)
    for batch in module.VIEWS:
        for view in batch:
            start = view["ts"] - (view["ts"] - module.START) % 60_000
            totals[(view["page"], format_instant(start))] += 1
    results: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for page, start, count, kind in run_example("early_firings")["views"]:
        results[(page, start)].append((count, kind))
    assert set(results) == set(totals)
    for window, fired in results.items():
        counts = [count for count, _ in fired]
        kinds = [kind for _, kind in fired]
        assert kinds[-1] == "final" and counts[-1] == totals[window]
        assert "early" in kinds and kinds.index("final") == len(kinds) - 1
        assert counts == sorted(counts) and counts[0] < totals[window]


def test_late_data() -> None:
    # Flink docs, "Allowed Lateness": an element arriving after the watermark passed the window's end but
    # before end + lateness is added and the window fires again; later ones go to side_output_late_data.
    # Window [0 s, 10 s): 1, 4, 9 -> 3 when 12 s arrives (watermark 11.999 s); 8 s arrives at watermark
    # 11.999 s < 9.999 + 5 s -> fires again with 4; 3 s arrives at watermark 15.999 s > 14.999 s -> too late.
    # [10 s, 20 s): 12, 16 -> 2 when 25 s arrives; [20 s, 30 s): 25 -> 1 at the end of input.
    module = example("late_data")

    def at(second: int) -> str:
        return format_instant(module.START + second * 1000)

    results = run_example("late_data")
    assert [tuple(r) for r in results["count"]] == [
        ("s1", at(0), 3),
        ("s1", at(0), 4),
        ("s1", at(10), 2),
        ("s1", at(20), 1),
    ]
    assert [tuple(r) for r in results["too late"]] == [("s1", at(3))]


def test_skewed_clocks() -> None:
    # One watermark (Flink's): after each reading the watermark is max(ts) - 5 s - 1 ms; a reading whose
    # window [start, start + 1 min) has max_timestamp <= watermark is late (no allowed lateness), the others are
    # counted when their window fires. Per key (docs/event-time-per-key.md): each sensor's own readings are in
    # order, so with a max_lag of 10 minutes none is late and each is counted in its own minute.
    module = example("skewed_clocks")
    readings = [r for batch in module.READINGS for r in batch]
    watermark = -(2**63)
    counted: dict[tuple[str, int], int] = defaultdict(int)
    late = []
    for r in readings:
        start = r["ts"] - (r["ts"] - module.START) % module.MINUTE
        if start + module.MINUTE - 1 <= watermark:
            late.append((r["sensor"], format_instant(r["ts"])))
        else:
            counted[(r["sensor"], start)] += 1
        watermark = max(watermark, r["ts"] - module.OUT_OF_ORDERNESS - 1)
    every: dict[tuple[str, int], int] = defaultdict(int)
    for r in readings:
        every[(r["sensor"], r["ts"] - (r["ts"] - module.START) % module.MINUTE)] += 1
    results = run_example("skewed_clocks")
    assert sorted(map(tuple, results["one watermark"])) == sorted(
        (sensor, format_instant(start), n) for (sensor, start), n in counted.items()
    )
    assert sorted(map(tuple, results["late"])) == sorted(late)
    assert sorted(map(tuple, results["per key"])) == sorted(
        (sensor, format_instant(start), n) for (sensor, start), n in every.items()
    )
    assert len(late) > len(readings) // 3  # the example shows something: much is late under one watermark


def test_timers() -> None:
    # Flink's event-time timers fire when the watermark passes them (before the next element is processed);
    # with monotonous timestamps the watermark after an element is its timestamp - 1, and the end of input
    # fires every pending timer. Simulated here over the example's events in order.
    module = example("timers")
    events = [e for batch in module.EVENTS for e in batch]
    pending: dict[str, int] = {}
    first: dict[str, int] = {}
    items: dict[str, int] = defaultdict(int)
    alerts = []

    def fire(watermark: float) -> None:
        for user, due in sorted(pending.items(), key=lambda p: p[1]):
            if due <= watermark:
                alerts.append((user, format_instant(first.pop(user)), items.pop(user), format_instant(due)))
                del pending[user]

    watermark: float = float("-inf")
    for e in events:
        fire(watermark)
        user = e["user"]
        if e["action"] == "checkout":
            pending.pop(user, None)
            first.pop(user, None)
            items.pop(user, None)
        else:
            first.setdefault(user, e["ts"])
            items[user] += 1
            pending[user] = e["ts"] + module.TIMEOUT_MS
        watermark = max(watermark, e["ts"] - 1)
    fire(float("inf"))
    assert sorted(tuple(r) for r in run_example("timers")["abandoned"]) == sorted(alerts)


def test_timeline_clicks() -> None:
    # the timeline example runs as a job too. Its clicks-per-page step accumulates (ContinuousEventTimeTrigger
    # fires without purging, late firings within the allowed lateness include everything so far), and a click
    # too late for its tumbling window goes to the late output (a tumbling window is late only when the click
    # is: ts <= max timestamp), so every click is counted once: in its window's last firing or in the late
    # output (Flink's WindowOperator: isWindowLate / isElementLate / sideOutput)
    from panes.datastream import StreamEnvironment

    done = panes("run", str(EXAMPLES / "timeline_clicks.py"))
    assert done.returncode == 0, done.stderr
    module = example("timeline_clicks")
    env = StreamEnvironment("local")
    module.build(env)
    per_page, late = (sink.sink for sink in env.plan().sinks[:2])
    env.execute()
    last: dict[tuple[str, int], int] = {}
    for page, start, count in per_page.values:
        assert count >= last.get((page, start), 0), "a later firing of a window never counts less"
        last[(page, start)] = count
    assert late.values, "the example has clicks beyond the allowed lateness"
    assert sum(last.values()) + len(late.values) == len(module.clicks())


def test_joins() -> None:
    # window join (Flink's JoinedStreams: an inner join per key and tumbling window, one result per pair) and
    # interval join (Flink's IntervalJoinOperator: right.ts in [left.ts + lower, left.ts + upper], bounds
    # inclusive, the result's timestamp the larger of the two); no element here is late
    module = example("joins")
    orders = [o for batch in module.ORDERS for o in batch]
    payments = [p for batch in module.PAYMENTS for p in batch]
    minute = module.MINUTE
    same = [
        (o["id"], p["amount"], format_instant(o["ts"]))
        for o in orders
        for p in payments
        if o["id"] == p["order"] and o["ts"] // minute == p["ts"] // minute
    ]
    within = [
        (o["id"], p["amount"], format_instant(max(o["ts"], p["ts"])))
        for o in orders
        for p in payments
        if o["id"] == p["order"] and o["ts"] <= p["ts"] <= o["ts"] + 5 * minute
    ]
    found = run_example("joins")
    assert sorted(found["same minute"]) == sorted(same) and same
    assert sorted(found["within 5 min"]) == sorted(within) and len(within) > len(same)


def test_count_or_time() -> None:
    # AnyOf(CountTrigger.of(3), EventTimeTrigger()): the count part fires after every 3rd element of a window
    # (Flink's CountTrigger, which starts counting again), the event-time part once the watermark passes the
    # window's end; FIRE keeps the contents, so each result is the total so far (panes.windowing.triggers.composite).
    module = example("count_or_time")
    amounts: dict[tuple[str, int], list[int]] = defaultdict(list)
    for batch in module.ORDERS:
        for order in batch:
            start = (order["ts"] - module.START) // module.MINUTE * module.MINUTE + module.START
            amounts[(order["customer"], start)].append(order["amount"])
    want = []
    for (customer, start), theirs in amounts.items():
        window = format_instant(start)
        want += [(customer, window, sum(theirs[:n]), "3 orders") for n in range(3, len(theirs) + 1, 3)]
        want.append((customer, window, sum(theirs), "minute end"))
    assert sorted(tuple(r) for r in run_example("count_or_time")["totals"]) == sorted(want)


def test_corrections() -> None:
    # retracting_fired_panes(): each later firing of a window first retracts the row it emitted before, so adding
    # rows and subtracting retracted ones leaves each window's final total: the sum of its orders (none is later
    # than the allowed lateness here); its first result on or after the window's end is "on time".
    module = example("corrections")
    totals: dict[tuple[str, int], int] = defaultdict(int)
    for batch in module.ORDERS:
        for order in batch:
            start = (order["ts"] - module.START) // module.MINUTE * module.MINUTE + module.START
            totals[(order["customer"], start)] += order["amount"]
    rows = run_example("corrections")["totals"]
    applied: dict[tuple[str, int], int] = defaultdict(int)
    for row in rows:
        applied[(row["customer"], row["window_start"])] += -row["total"] if row["retract"] else row["total"]
    assert dict(applied) == dict(totals)
    assert any(row["retract"] for row in rows)
    on_time = {(r["customer"], r["window_start"]) for r in rows if r["pane_timing"] == "on time" and not r["retract"]}
    assert on_time == set(totals)


def test_latency_percentiles() -> None:
    # process_batch: one pandas call per pane here (the local runner), each result that pane's percentiles with
    # numpy's default (linear) interpolation, timestamped at the window's end
    import numpy as np

    module = example("latency_percentiles")
    latencies: dict[tuple[str, int], list[float]] = defaultdict(list)
    for batch in module.REQUESTS:
        for request in batch:
            start = (request["ts"] - module.START) // module.MINUTE * module.MINUTE + module.START
            latencies[(request["endpoint"], start)].append(request["latency_ms"])
    want = sorted(
        (endpoint, start, len(values), *(float(np.percentile(values, q)) for q in (50, 95, 99)))
        for (endpoint, start), values in latencies.items()
    )
    rows = run_example("latency_percentiles")["latency"]
    got = sorted((r["endpoint"], r["window_start"], r["requests"], r["p50"], r["p95"], r["p99"]) for r in rows)
    assert [g[:3] for g in got] == [w[:3] for w in want]
    assert np.allclose([g[3:] for g in got], [w[3:] for w in want])


def test_late_corrections(tmp_path: Any) -> None:
    # Flink's late rule: an element is dropped when its window's end + allowed lateness <= the watermark (here
    # the largest timestamp so far - 1); late_data_table keeps those, and panes reconcile retracts each affected
    # window's streamed total and puts the total over every order in its place
    module = example("late_corrections")
    environment = {"LATE_ORDERS": str(tmp_path / "late")}
    done = panes("run", str(EXAMPLES / "late_corrections.py"), environment=environment)
    assert done.returncode == 0, done.stderr
    streamed: dict[tuple[str, int], int] = {}
    complete: dict[tuple[str, int], int] = defaultdict(int)
    late = 0
    watermark = -(2**63)
    for batch in module.ORDERS:
        for order in batch:
            start = order["ts"] - (order["ts"] - module.START) % module.MINUTE
            complete[(order["shop"], start)] += order["amount"]
            if start + module.MINUTE - 1 + 10_000 <= watermark:
                late += 1
            else:
                streamed[(order["shop"], start)] = streamed.get((order["shop"], start), 0) + order["amount"]
        watermark = max(watermark, max(order["ts"] for order in batch) - 1)
    totals = printed(done.stdout)["totals"]
    assert {(t["shop"], t["window_start"]): t["value"] for t in totals} == streamed
    output = tmp_path / "corrections.parquet"
    fixed = panes(
        "reconcile", str(EXAMPLES / "late_corrections.py"), "--late", str(tmp_path / "late"), "--output", str(output),
        environment=environment,
    )  # fmt: skip
    assert fixed.returncode == 0, fixed.stderr
    import pyarrow.parquet as pq

    rows = pq.read_table(output).to_pylist()
    changed = {key for key in complete if complete[key] != streamed.get(key)}
    assert late == 2 and f"{late} late elements" in fixed.stdout
    assert sorted((r["shop"], r["window_start"], r["value"]) for r in rows if r["retract"]) == sorted(
        (shop, start, streamed[(shop, start)]) for shop, start in changed
    )
    assert sorted((r["shop"], r["window_start"], r["value"]) for r in rows if not r["retract"]) == sorted(
        (shop, start, complete[(shop, start)]) for shop, start in changed
    )


def test_clicks_to_postgres(postgres: Database) -> None:  # noqa: F811 (the fixture)
    # an upsert by page and window keeps each window's latest pane: its count over every click that was not too
    # late (Flink drops a click whose window's cleanup time, end - 1 + allowed lateness, is at or before the
    # watermark; here those go to late_clicks), late when a click came after the watermark passed the window's
    # end, last when the window fired only at the end of the input
    module = example("clicks_to_postgres")
    done = panes("run", str(EXAMPLES / "clicks_to_postgres.py"), environment={"PANES_POSTGRES_URL": postgres.url})
    assert done.returncode == 0, done.stderr
    counts: dict[tuple[str, int], int] = defaultdict(int)
    late_windows: set[tuple[str, int]] = set()
    too_late = []
    watermark = -(2**63)
    for batch in module.CLICKS:
        for click in batch:
            start = click["ts"] - (click["ts"] - module.START) % module.MINUTE
            if start + module.MINUTE - 1 + module.LATENESS <= watermark:
                too_late.append((click["page"], click["ts"]))
                continue
            counts[(click["page"], start)] += 1
            if start + module.MINUTE - 1 <= watermark:
                late_windows.add((click["page"], start))
        watermark = max(watermark, max(click["ts"] for click in batch) - 1)
    expected = sorted(
        (page, start, start + module.MINUTE, n, "late" if (page, start) in late_windows else "on time",
         start + module.MINUTE - 1 > watermark)
        for (page, start), n in counts.items()
    )  # fmt: skip
    rows = postgres.execute(
        "SELECT page, window_start, window_end, clicks, pane_timing, pane_last FROM clicks_per_minute ORDER BY 1, 2"
    )
    assert rows == expected
    assert postgres.execute("SELECT page, ts FROM late_clicks") == too_late
    assert too_late and late_windows and any(last for *_, last in expected)
