"""The timeline written as a PNG, and as a self-contained HTML page (the picture inlined as SVG, a summary and
a table of every firing and every late or dropped element of the sampled keys; no script, no external file:
it opens offline)."""

from __future__ import annotations

import html
import io
import re
from pathlib import Path
from typing import Any

import matplotlib

from panes.time import LONG_MAX, LONG_MIN
from panes.timeline.figure import STYLE, build_figure
from panes.timeline.record import Timeline
from panes.timeline.recording import ElementFate, StepTimeline
from panes.timeline.timeaxis import TimeFormat, looks_like_epoch_ms
from panes.windowing.observer import PaneTiming
from panes.windowing.windows import TimeWindow

# text as paths: the page looks the same whatever fonts the reader has; fixed ids: the same job gives the same page
_SVG_SETTINGS: dict[str, Any] = {"svg.fonttype": "path", "svg.hashsalt": "panes-timeline"}


def write_png(timeline: Timeline, path: str | Path, dpi: int = 100) -> Path:
    """Draw ``timeline`` into the PNG file ``path`` (its folder is created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    figure = build_figure(timeline.steps, timeline.job_name)
    figure.savefig(target, format="png", dpi=dpi, facecolor="white")
    return target


def svg_markup(timeline: Timeline) -> str:
    """The picture as an inline ``<svg>`` element (text drawn as paths, deterministic ids)."""
    buffer = io.StringIO()
    with matplotlib.rc_context(_SVG_SETTINGS):  # type: ignore[arg-type]
        figure = build_figure(timeline.steps, timeline.job_name)
        figure.savefig(buffer, format="svg", facecolor="white", metadata={"Date": None})  # the same page every run
    svg = buffer.getvalue()
    start = svg.index("<svg")
    svg = svg[start:]
    # scale with the page
    return re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', r'<svg\1 width="100%"', svg, count=1)


def write_html(timeline: Timeline, path: str | Path) -> Path:
    """Write ``timeline`` as a self-contained HTML page at ``path`` (its folder is created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(page(timeline), encoding="utf-8")
    return target


def page(timeline: Timeline) -> str:
    """The HTML page (see the module docstring)."""
    title = f"panes timeline: {timeline.job_name}"
    sections = "\n".join(_step_section(step) for step in timeline.steps)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>{_CSS}</style>
</head>
<body>
<h1>{html.escape(title)}</h1>
<p class="intro">What the window operator did, recorded as the job ran on the local runner. Upper panel of each
step: one lane per key, windows as bars, elements at their event time, and each firing where the watermark
stood when it fired. Lower panel: event time against processing order, with the watermark. A firing is
<span class="early">early</span> while the watermark is before the window's end,
<span class="on-time">on time</span> when the watermark passes the end, and
<span class="late">late</span> after that (Beam's pane timing, which Flink's panes follow without naming).</p>
<figure>{svg_markup(timeline)}</figure>
{sections}
</body>
</html>
"""


def _step_section(step: StepTimeline) -> str:
    fmt = TimeFormat(looks_like_epoch_ms(e.timestamp for e in step.elements if e.timestamp is not None))
    timings = step.timings()
    summary = (
        f"{step.total_elements} elements reached this step"
        f"{' (recording stopped early: the picture shows the start of the run)' if step.truncated else ''}; "
        f"sampled keys: {', '.join(html.escape(_text(k)) for k in step.keys) or 'none'}. "
        f"Firings of these keys: {timings[PaneTiming.EARLY]} early, {timings[PaneTiming.ON_TIME]} on time, "
        f"{timings[PaneTiming.LATE]} late. Their elements: {step.count(ElementFate.LATE)} late to the side output, "
        f"{step.count(ElementFate.DROPPED)} dropped."
    )
    firing_rows = "\n".join(
        f'<tr class="firing {_css(f.timing.value)}"><td>{f.position}</td><td>{html.escape(_text(f.key))}</td>'
        f"<td>{html.escape(_window(f.window, fmt))}</td><td>{f.pane_index + 1}</td>"
        f'<td><span class="mark" style="color:{STYLE[f.timing].colour}">&#9679;</span> {f.timing.value}</td>'
        f"<td>{html.escape(_time(f.time, fmt))}</td><td>{html.escape(_time(f.watermark, fmt))}</td></tr>"
        for f in step.firings
    )
    late = [e for e in step.elements if e.fate in (ElementFate.LATE, ElementFate.DROPPED)]
    late_rows = "\n".join(
        f'<tr class="element {_css(e.fate.value)}"><td>{e.position}</td><td>{html.escape(_text(e.key))}</td>'
        f"<td>{html.escape(_time(e.timestamp, fmt))}</td><td>{html.escape(_time(e.watermark, fmt))}</td>"
        f'<td><span class="mark" style="color:{STYLE[e.fate].colour}">&#9679;</span> '
        f"{'to the late-data side output' if e.fate is ElementFate.LATE else 'dropped'}</td>"
        f"<td>{html.escape(_text(e.value, 80))}</td></tr>"
        for e in late
    )
    late_table = (
        "<p>No element of these keys was late.</p>"
        if not late
        else f"""<table class="late-elements"><thead><tr><th>position</th><th>key</th><th>timestamp</th>
<th>watermark then</th><th>what happened</th><th>value</th></tr></thead><tbody>
{late_rows}
</tbody></table>"""
    )
    return f"""<section class="step">
<h2>{html.escape(step.name)}</h2>
<p class="config">{html.escape(step.description)}</p>
<p class="summary">{summary}</p>
<h3>Firings</h3>
<table class="firings"><thead><tr><th>position</th><th>key</th><th>window</th><th>pane</th><th>timing</th>
<th>fired at</th><th>watermark then</th></tr></thead><tbody>
{firing_rows}
</tbody></table>
<h3>Late and dropped elements</h3>
{late_table}
</section>"""


def _css(text: str) -> str:
    return text.replace(" ", "-")


def _text(value: Any, limit: int = 40) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _time(time: int | None, fmt: TimeFormat) -> str:
    if time is None:
        return "none"
    if time == LONG_MIN:
        return "none yet"
    if time == LONG_MAX:
        return "+∞ (end of input)"
    return fmt.describe(time)


def _window(window: Any, fmt: TimeFormat) -> str:
    if isinstance(window, TimeWindow):
        return f"[{_time(window.start, fmt)}, {_time(window.end, fmt)})"
    return repr(window)


_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1.5rem auto; max-width: 1400px;
       color: #222; padding: 0 1rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; } h3 { font-size: 1rem; }
.intro, .summary, .config { max-width: 70rem; line-height: 1.45; }
.config { font-family: ui-monospace, monospace; font-size: 0.9rem; color: #444; }
figure { margin: 1rem 0; } svg { height: auto; }
table { border-collapse: collapse; font-size: 0.85rem; margin-bottom: 1rem; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.5rem; text-align: left; }
th { background: #f5f5f5; }
span.early { color: #2ca02c; font-weight: 600; } span.on-time { color: #9467bd; font-weight: 600; }
span.late { color: #8c564b; font-weight: 600; }
"""
