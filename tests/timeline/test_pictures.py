"""The timeline as pictures: the PNG has the marks' colours, and the HTML page, opened in a real headless
browser (Debian's chromium), renders the picture and lists every firing; ``panes timeline`` writes both."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from panes.cli.main import main
from panes.jobs import load_job
from panes.timeline import ElementFate, Timeline, record_timeline, write_html, write_png
from panes.timeline.figure import STYLE, WATERMARK_COLOUR, WINDOW_FILL
from panes.timeline.page import page, svg_markup
from panes.timeline.timeaxis import TimeFormat, iso_utc, looks_like_epoch_ms, ticks
from panes.windowing import PaneTiming

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "tests" / "timeline" / "scenario.py"
EXAMPLE = ROOT / "examples" / "timeline_clicks.py"


def rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def pixels_near(image: Image.Image, colour: str, tolerance: int = 6) -> int:
    """How many pixels of ``image`` are within ``tolerance`` of ``colour`` on every channel."""
    pixels = np.asarray(image.convert("RGB"), dtype=np.int16)
    near = np.all(np.abs(pixels - np.array(rgb(colour), dtype=np.int16)) <= tolerance, axis=-1)
    return int(near.sum())


@pytest.fixture(scope="module")
def example() -> Timeline:
    return record_timeline(load_job(EXAMPLE).build, job_name="timeline_clicks")


def test_the_example_has_every_kind_of_mark(example: Timeline) -> None:
    per_page, visits = example.steps
    assert all(n > 0 for n in per_page.timings().values())  # early, on-time and late firings
    assert per_page.count(ElementFate.LATE) > 0 and visits.count(ElementFate.DROPPED) > 0


def test_the_png_shows_windows_elements_firings_and_the_watermark(example: Timeline, tmp_path: Path) -> None:
    path = write_png(example, tmp_path / "timeline.png")
    image = Image.open(path)
    assert image.format == "PNG"
    width, height = image.size
    assert width == 1300 and height > 1000  # two steps, two panels each
    assert len(image.convert("RGB").getcolors(maxcolors=1 << 20) or []) > 100  # not blank
    for what in (
        ElementFate.IN_WINDOW,
        ElementFate.LATE,
        ElementFate.DROPPED,
        PaneTiming.EARLY,
        PaneTiming.ON_TIME,
        PaneTiming.LATE,
    ):
        assert pixels_near(image, STYLE[what].colour) > 30, what
    assert pixels_near(image, WINDOW_FILL, 2) > 10_000
    assert pixels_near(image, WATERMARK_COLOUR, 20) > 500


def test_the_png_of_a_job_without_late_data_has_no_late_colours(tmp_path: Path) -> None:
    timeline = record_timeline(load_job(SCENARIO).build, keys=["b"])  # key b: two early panes and one on time
    image = Image.open(write_png(timeline, tmp_path / "b.png"))
    assert pixels_near(image, STYLE[PaneTiming.EARLY].colour) > 30
    assert pixels_near(image, STYLE[PaneTiming.ON_TIME].colour) > 30
    # the legend lists the three firing timings always, late and dropped elements only when there are some
    assert pixels_near(image, STYLE[PaneTiming.LATE].colour) < 150
    assert pixels_near(image, STYLE[ElementFate.LATE].colour) == 0
    assert pixels_near(image, STYLE[ElementFate.DROPPED].colour) == 0


def test_time_labels_are_iso_utc_for_epoch_milliseconds_and_plain_otherwise(example: Timeline) -> None:
    assert looks_like_epoch_ms([1_767_225_600_000, 1_767_225_660_000])
    assert not looks_like_epoch_ms([0, 10, 20]) and not looks_like_epoch_ms([])
    assert iso_utc(1_767_225_605_250) == "2026-01-01T00:00:05.250Z"
    assert TimeFormat(True, 5_000).label(1_767_225_605_000) == "2026-01-01T00:00:05Z"
    assert TimeFormat(False).label(12_000) == "12,000"
    assert ticks(1_767_225_600_000, 1_767_225_660_000) == [1_767_225_600_000 + 10_000 * i for i in range(7)]
    html = page(example)
    assert "2026-01-01T00:00:10Z" in html  # an axis label
    scenario = page(record_timeline(load_job(SCENARIO).build))
    assert "T00:" not in scenario and "[0 ms, 10 ms)" in scenario


def test_the_page_is_self_contained(example: Timeline) -> None:
    html = page(example)
    assert "<svg" in html and "<script" not in html and "<link" not in html
    references = re.findall(r'(?:href|src)="([^"]*)"', html)
    assert all(ref.startswith("#") for ref in references), references


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    if os.environ.get("PANES_REQUIRE_BROWSER"):
        pytest.fail("no chromium on PATH (install it: apt-get install -y chromium)")
    pytest.skip("no chromium on PATH (install it: apt-get install -y chromium; CI does)")


def browse(page_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory() as profile:
        command = [
            chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--hide-scrollbars", f"--user-data-dir={profile}", *arguments, page_path.as_uri(),
        ]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)


def test_the_html_page_renders_in_a_headless_browser(example: Timeline, tmp_path: Path) -> None:
    path = write_html(example, tmp_path / "timeline.html")
    dom = browse(path, "--dump-dom").stdout
    per_page, visits = example.steps
    for gid in ("firings-early", "firings-on-time", "firings-late", "elements-late", "elements-dropped", "watermark"):
        assert f'id="{gid}"' in dom, gid
    timings = {t: per_page.timings()[t] + visits.timings()[t] for t in PaneTiming}
    assert dom.count('<tr class="firing early">') == timings[PaneTiming.EARLY] > 0
    assert dom.count('<tr class="firing on-time">') == timings[PaneTiming.ON_TIME] > 0
    assert dom.count('<tr class="firing late">') == timings[PaneTiming.LATE] > 0
    assert dom.count('<tr class="element late">') == per_page.count(ElementFate.LATE) > 0
    assert dom.count('<tr class="element dropped">') == visits.count(ElementFate.DROPPED) > 0

    shot = tmp_path / "shot.png"
    browse(path, f"--screenshot={shot}", "--window-size=1400,2200")
    image = Image.open(shot)
    assert image.size == (1400, 2200)
    assert len(image.convert("RGB").getcolors(maxcolors=1 << 20) or []) > 100
    for what in (PaneTiming.EARLY, PaneTiming.ON_TIME, PaneTiming.LATE, ElementFate.LATE, ElementFate.DROPPED):
        assert pixels_near(image, STYLE[what].colour, 10) > 20, what
    assert pixels_near(image, WINDOW_FILL, 3) > 5_000


def test_panes_timeline_writes_the_png_and_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    png, html = tmp_path / "out" / "t.png", tmp_path / "out" / "t.html"
    code = main(["timeline", str(SCENARIO), "--png", str(png), "--html", str(html), "--key", "a"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "Window(Process): 8 elements, keys drawn: a; 2 early, 1 on time, 3 late firings" in printed
    assert Image.open(png).size[0] == 1300
    text = html.read_text()
    assert text.count('<tr class="firing late">') == 3 and '<tr class="element late">' in text


def test_panes_timeline_says_what_a_job_module_needs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the job-file rules of panes run and explain (panes.jobs): a usage error, exit code 2
    job = tmp_path / "nobuild.py"
    job.write_text("x = 1\n")
    assert main(["timeline", str(job)]) == 2
    assert "defines no build(env) function" in capsys.readouterr().err
    assert main(["timeline", str(tmp_path / "missing.py")]) == 2
    assert "no job file at" in capsys.readouterr().err


def test_with_event_time_per_key_the_picture_draws_each_key_s_watermark() -> None:
    from tests.timeline.test_recording import skewed

    timeline = record_timeline(skewed, job_name="skewed")
    svg = svg_markup(timeline)
    for gid in ("watermark", "watermark-key-1", "watermark-key-2"):
        assert f'id="{gid}"' in svg, gid  # the stream's line, then the keys' (text is drawn as paths)
