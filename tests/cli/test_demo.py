"""The demo's generated clicks give every kind of result it reports (checked on the local runner; the demo
itself runs on Spark, ``scripts/demo.sh``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from panes.cli import demo
from panes.datastream import StreamEnvironment


def test_the_demo_data_gives_early_on_time_late_and_too_late_results(tmp_path: Path) -> None:
    env = StreamEnvironment("local")
    batches = demo.click_batches(4_000, demo.DEFAULT_BATCHES)
    assert len(batches) == demo.DEFAULT_BATCHES and sum(len(b) for b in batches) == 4_000
    demo.build(env, batches, tmp_path)
    result = env.execute()
    results = demo.read_rows(tmp_path / "page_counts")
    kinds = Counter(r["kind"] for r in results)
    windows = {(r["page"], r["minute"]) for r in results}
    assert kinds["early"] > 0 and kinds["late"] > 0
    assert kinds["on-time"] == len(windows)  # one on-time result per window
    for window in windows:
        mine = sorted((r for r in results if (r["page"], r["minute"]) == window), key=lambda r: r["firing"])
        order = {"early": 0, "on-time": 1, "late": 2}
        assert [order[r["kind"]] for r in mine] == sorted(order[r["kind"]] for r in mine)
        assert [r["clicks"] for r in mine] == sorted(r["clicks"] for r in mine)  # counts only grow
    too_late = demo.read_rows(tmp_path / "late")
    assert too_late
    sessions = demo.read_rows(tmp_path / "sessions")
    clicks = [c for b in batches for c in b]
    assert len({s["user"] for s in sessions}) <= len({c["user"] for c in clicks})
    dropped = result.metrics[demo.SESSIONS_STEP].late_dropped
    assert dropped > 0  # sessions have no allowed lateness: the stragglers are late there
    session_clicks = sum(s["clicks"] for s in sessions)
    assert session_clicks + dropped == len(clicks)  # each click is in a visit or counted as dropped
    lines = demo.summarise(tmp_path, dropped)
    assert any(line.strip().startswith("too-late clicks") and str(len(too_late)) in line for line in lines)
    assert any(line.strip().startswith(f"{dropped} clicks came after their visit had closed") for line in lines)
    assert any("2026-01-01T00:0" in line for line in lines)  # real times, not shifted ones


def test_the_demo_draws_a_few_users_sessions(tmp_path: Path) -> None:
    from PIL import Image

    batches = demo.click_batches(2_000, demo.DEFAULT_BATCHES)
    line = demo.draw_timeline(batches, tmp_path, users=2)
    users = sorted({click["user"] for batch in batches for click in batch})[:2]
    assert line.startswith(f"timeline of {users[0]}, {users[1]} ")
    page = (tmp_path / "timeline.html").read_text()
    assert demo.SESSIONS_STEP in page and all(user in page for user in users)
    with Image.open(tmp_path / "timeline.png") as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20) or []
        assert image.size[0] > 600 and len(colours) > 10
