"""The timeline picture of a recorded job (matplotlib, without pyplot: no display, no global state).

For each window step, two panels:

- **windows per key** (x: event time, one lane per sampled key): each window is a bar ``[start, end)``, its
  allowed lateness a hatched extension ``[end, end + lateness)``; elements are dots at their timestamp on
  every window they were added to (late and dropped elements, which no window took, on the lane's middle);
  each firing is a mark on its window's top edge, at the watermark it fired at (held inside the window and
  its lateness: an on-time firing sits at the window's end);
- **event time over processing order** (x: elements received by the step, y: event time): the same elements,
  the watermark as a step line (one per parallel instance; with event time per key, the stream's, and a dashed
  line per sampled key for the key's own), and each firing at its window's
  ``max_timestamp`` when it happened: an on-time firing lies on the watermark line, an early one above it, a
  late one below it.

Colours and marks are those of :data:`STYLE`; every firing mark group carries an SVG id
(``firings-early``, ``firings-on-time``, ``firings-late``) and so do the element groups
(``elements-in-window``, ``elements-late``, ``elements-dropped``) and ``watermark`` lines.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from matplotlib.figure import Figure, SubFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator

from panes.time import LONG_MAX, LONG_MIN
from panes.timeline.recording import ElementFate, RecordedElement, RecordedFiring, StepTimeline
from panes.timeline.timeaxis import TimeFormat, looks_like_epoch_ms, tick_step, ticks
from panes.windowing.observer import PaneTiming
from panes.windowing.windows import TimeWindow


@dataclass(frozen=True)
class Mark:
    colour: str
    marker: str
    size: float
    label: str
    gid: str


STYLE: dict[Any, Mark] = {
    ElementFate.IN_WINDOW: Mark("#1f77b4", "o", 36, "element (in its windows)", "elements-in-window"),
    ElementFate.LATE: Mark("#ff7f0e", "o", 90, "late element → late-data side output", "elements-late"),
    ElementFate.DROPPED: Mark("#d62728", "X", 110, "late element dropped (no late-data output)", "elements-dropped"),
    ElementFate.NO_WINDOW: Mark("#7f7f7f", "o", 36, "element no window took", "elements-no-window"),
    "behind": Mark("#17becf", "o", 60, "element behind the watermark, kept (allowed lateness)", "elements-behind"),
    PaneTiming.EARLY: Mark("#2ca02c", "^", 120, "early firing (watermark before window end)", "firings-early"),
    PaneTiming.ON_TIME: Mark("#9467bd", "D", 100, "on-time firing (watermark passes window end)", "firings-on-time"),
    PaneTiming.LATE: Mark("#8c564b", "s", 100, "late firing (after the on-time one)", "firings-late"),
}
WATERMARK_COLOUR = "#111111"
WINDOW_FILL = "#dbe9f6"
WINDOW_EDGE = "#5b84b1"
LATENESS_FILL = "#f3f3f3"
FIGURE_WIDTH = 13.0


def build_figure(steps: list[StepTimeline], job_name: str) -> Figure:
    """The figure for ``steps`` (see the module docstring); ``ValueError`` when ``steps`` is empty."""
    if not steps:
        raise ValueError("nothing to draw: no window step was recorded")
    heights = [_step_height(step) for step in steps]
    figure = Figure(figsize=(FIGURE_WIDTH, sum(heights) + 1.6), dpi=100, layout="constrained")
    figure.suptitle(f"panes timeline: {job_name}", fontsize=15, fontweight="bold")
    made: Any = figure.subfigures(len(steps), 1, height_ratios=heights, squeeze=False)
    panels: list[SubFigure] = list(made[:, 0])
    for number, (panel, step) in enumerate(zip(panels, steps, strict=True), 1):
        _draw_step(panel, step, f"window step {number} of {len(steps)}: " if len(steps) > 1 else "window step: ")
    _legend(figure, steps)
    return figure


def _step_height(step: StepTimeline) -> float:
    return 1.2 + max(2.0, 0.75 * max(1, len(step.keys))) + 3.6


def _draw_step(panel: SubFigure, step: StepTimeline, prefix: str) -> None:
    lanes = max(1, len(step.keys))
    top, bottom = panel.subplots(2, 1, height_ratios=[max(2.0, 0.75 * lanes), 3.6])
    stopped = (
        f"  (recording stopped after {step.recorded_elements:,} of {step.total_elements:,} elements: the picture "
        "shows the start of the run)"
        if step.truncated
        else ""
    )
    panel.suptitle(f"{prefix}{step.name}{stopped}\n{step.description}", fontsize=11, x=0.01, ha="left")
    times = _times(step)
    epoch = looks_like_epoch_ms(times)
    first, last = (min(times), max(times)) if times else (0, 1)
    pad = max(1.0, (last - first) * 0.02)
    low, high = first - pad, last + pad
    fmt = TimeFormat(epoch, tick_step(low, high))
    _draw_windows(top, step, low, high, fmt)
    _draw_processing_order(bottom, step, low, high, fmt)
    if not step.keys:
        top.text(0.5, 0.5, "no element reached this step", transform=top.transAxes, ha="center", va="center")


def _times(step: StepTimeline) -> list[int]:
    """The finite times the picture must show: element times, window bounds and lateness."""
    times = [t for e in step.elements if (t := _at(step, e)) is not None and LONG_MIN < t < LONG_MAX]
    for window in _all_windows(step):
        if isinstance(window, TimeWindow):
            times += [window.start, window.end + (step.allowed_lateness if step.event_time else 0)]
    return times


def _by_timestamp(step: StepTimeline) -> bool:
    """Whether elements are drawn at their timestamps (else, when none has one, at the processing time they
    arrived at: processing-time windows over a stream without timestamps)."""
    return any(e.timestamp is not None for e in step.elements) or not step.elements


def _at(step: StepTimeline, element: RecordedElement) -> int | None:
    """Where ``element`` is on the time axis (see :func:`_by_timestamp`)."""
    return element.timestamp if _by_timestamp(step) else element.processing_time


def _what_time(step: StepTimeline) -> str:
    return "event time" if _by_timestamp(step) else "processing time"


def _all_windows(step: StepTimeline) -> set[Any]:
    windows = {f.window for f in step.firings}
    for element in step.elements:
        windows.update(element.windows)
    return windows


def _final_window(step: StepTimeline, key: Any) -> dict[Any, Any]:
    """For ``key``: each window mapped to the window it ended up merged into (itself when never merged)."""
    into: dict[Any, Any] = {}
    for merge in step.merges:
        if merge.key == key:
            for window in merge.merged:
                into[window] = merge.result

    def resolve(window: Any) -> Any:
        seen = set()
        while window in into and window not in seen:
            seen.add(window)
            window = into[window]
        return window

    windows = {w for e in step.elements_of(key) for w in e.windows} | {f.window for f in step.firings_of(key)}
    return {w: resolve(w) for w in windows}


def _rows(windows: Iterable[Any]) -> dict[Any, int]:
    """Stack overlapping windows in rows (time windows by start; other windows on their own row)."""
    rows: dict[Any, int] = {}
    ends: list[float] = []
    timed = sorted((w for w in windows if isinstance(w, TimeWindow)), key=lambda w: (w.start, w.end))
    for window in timed:
        for row, end in enumerate(ends):
            if end <= window.start:
                ends[row] = window.end
                rows[window] = row
                break
        else:
            rows[window] = len(ends)
            ends.append(window.end)
    for window in windows:
        if window not in rows:
            rows[window] = len(ends)
            ends.append(float("inf"))
    return rows


def _draw_windows(ax: Any, step: StepTimeline, low: float, high: float, fmt: TimeFormat) -> None:
    clock = "watermark" if step.event_time else "processing time"
    title = f"Windows per key: elements at their {_what_time(step)}, firings at the {clock} they fired at"
    ax.set_title(title, fontsize=10)
    lateness = step.allowed_lateness if step.event_time else 0
    dots: dict[Any, tuple[list[float], list[float]]] = {}
    fired: dict[Any, tuple[list[float], list[float]]] = {}
    lanes = len(step.keys)
    for lane, key in enumerate(step.keys):
        base = lanes - 1 - lane  # the first key on top
        final = _final_window(step, key)
        rows = _rows(set(final.values()))
        count = max(1, max(rows.values(), default=0) + 1)
        height = 0.8 / count

        def row_y(window: Any, rows: dict[Any, int] = rows, base: int = base, height: float = height) -> float:
            return base + 0.4 - (rows[window] + 0.5) * height

        for window in rows:
            y = row_y(window)
            start, end = (window.start, window.end) if isinstance(window, TimeWindow) else (low, high)
            ax.add_patch(
                Rectangle(
                    (start, y - height * 0.35), end - start, height * 0.7, facecolor=WINDOW_FILL,
                    edgecolor=WINDOW_EDGE, linewidth=1.0, zorder=1,
                )
            )  # fmt: skip
            if lateness and isinstance(window, TimeWindow):
                ax.add_patch(
                    Rectangle(
                        (end, y - height * 0.35), lateness, height * 0.7, facecolor=LATENESS_FILL,
                        edgecolor=WINDOW_EDGE, hatch="//", linewidth=0.6, linestyle="--", zorder=1,
                    )
                )  # fmt: skip
        for element in step.elements_of(key):
            at = _at(step, element)
            if at is None:
                continue
            xs, ys = dots.setdefault(_kind(element), ([], []))
            targets = {final[w] for w in element.windows if w in final}
            for y in [row_y(w) for w in targets] or [base]:
                xs.append(at)
                ys.append(y)
        for firing in step.firings_of(key):
            window = final.get(firing.window, firing.window)
            if window not in rows:
                continue
            xs, ys = fired.setdefault(firing.timing, ([], []))
            xs.append(_firing_x(firing, step, lateness, low, high))
            ys.append(row_y(window) + height * 0.35)
    for fate, (xs, ys) in dots.items():
        _scatter(ax, xs, ys, STYLE[fate])
    for timing, (xs, ys) in fired.items():
        _scatter(ax, xs, ys, STYLE[timing], zorder=4)
    ax.set_xlim(low, high)
    ax.set_ylim(-0.6, max(1, lanes) - 0.4)
    ax.set_yticks(range(lanes), [_key_label(k) for k in reversed(step.keys)])
    ax.set_ylabel("key")
    ax.set_xlabel(fmt.axis_title(_what_time(step)))
    _time_axis(ax.xaxis, low, high, fmt)
    ax.grid(axis="x", color="#e5e5e5", linewidth=0.6)


def _kind(element: RecordedElement) -> Any:
    """How an element is drawn: its fate, or ``"behind"`` for one a window took though the watermark had passed
    its timestamp (it arrived within the allowed lateness)."""
    timestamp = element.timestamp
    if element.fate is ElementFate.IN_WINDOW and timestamp is not None and timestamp <= element.watermark:
        return "behind"
    return element.fate


def _firing_x(firing: RecordedFiring, step: StepTimeline, lateness: int, low: float, high: float) -> float:
    """Where a firing sits on its window's bar: at the closing time it fired at, held within the window and its
    lateness (a global window: at the timestamp of the key's latest element by then)."""
    window = firing.window
    time = firing.time
    if isinstance(window, TimeWindow):
        if firing.timing is PaneTiming.ON_TIME:
            return float(window.max_timestamp())
        return float(min(max(time, window.start), window.end + lateness))
    earlier = [e for e in step.elements_of(firing.key) if e.position <= firing.position]
    seen = [t for e in earlier if (t := _at(step, e)) is not None]
    return float(seen[-1]) if seen else low


KEY_COLOURS = ("#e377c2", "#bcbd22", "#a6761d", "#1b9e77", "#e7298a", "#66a61e")
"""The watermark lines of the sampled keys under event time per key, in the order of the keys' lanes."""


def _draw_key_watermarks(ax: Any, step: StepTimeline, low: float, high: float, last: float) -> None:
    """Event time per key: each sampled key's effective watermark as a dashed step line of its own colour (SVG
    ids ``watermark-key-1``, ``-2``, ... in the order of the keys' lanes)."""
    for index, key in enumerate(step.keys):
        points = [(p.position, p.watermark) for p in step.key_watermarks if p.key == key and p.watermark != LONG_MIN]
        if not points:
            continue
        xs = [float(position) for position, _ in points] + [last + 0.5]
        ys = [min(max(float(time), low), high) for _, time in points]
        ys.append(ys[-1])
        colour = KEY_COLOURS[index % len(KEY_COLOURS)]
        (line,) = ax.plot(
            xs,
            ys,
            drawstyle="steps-post",
            color=colour,
            linewidth=1.2,
            linestyle="--",
            label=f"watermark of {_key_label(key)}",
        )
        line.set_gid(f"watermark-key-{index + 1}")


def _draw_processing_order(ax: Any, step: StepTimeline, low: float, high: float, fmt: TimeFormat) -> None:
    what = _what_time(step)
    clock = "watermark" if step.event_time else "processing time"
    ax.set_title(f"{what.capitalize()} over processing order: the {clock}, and when each window fired", fontsize=10)
    by_fate: dict[Any, list[RecordedElement]] = {}
    for element in step.elements:
        if _at(step, element) is not None:
            by_fate.setdefault(_kind(element), []).append(element)
    for fate, elements in by_fate.items():
        _scatter(ax, [e.position for e in elements], [_at(step, e) or 0 for e in elements], STYLE[fate])
    last = max(step.recorded_elements if step.truncated else step.total_elements, 1)  # nothing past the recording
    points = (
        [(p.position, p.subtask, p.watermark) for p in step.watermarks]
        if step.event_time
        else [(p.position, p.subtask, p.time) for p in step.processing_times]
    )
    for subtask in sorted({subtask for _, subtask, _ in points}):
        xs: list[float] = []
        ys: list[float] = []
        for position, instance, time in points:
            if instance != subtask or time == LONG_MIN:
                continue
            xs.append(position)
            ys.append(min(max(time, low), high))
        if xs:
            xs.append(last + 0.5)
            ys.append(ys[-1])
            name = f"stream's {clock}" if step.per_key else clock
            label = name if step.parallelism == 1 else f"{name} (instance {subtask + 1})"
            (line,) = ax.plot(xs, ys, drawstyle="steps-post", color=WATERMARK_COLOUR, linewidth=1.6, label=label)
            line.set_gid("watermark" if subtask == 0 else f"watermark-{subtask + 1}")
    if step.per_key:
        _draw_key_watermarks(ax, step, low, high, last)
    if step.event_time and any(p.watermark == LONG_MAX for p in step.watermarks):
        ax.annotate(
            "end of input: watermark +∞", xy=(last, high), xytext=(-6, -14), textcoords="offset points",
            ha="right", fontsize=8, color=WATERMARK_COLOUR,
        )  # fmt: skip
    by_timing: dict[PaneTiming, tuple[list[float], list[float]]] = {}
    for firing in step.firings:
        xs, ys = by_timing.setdefault(firing.timing, ([], []))
        xs.append(firing.position)
        end = firing.window.max_timestamp()
        ys.append(min(max(end, low), high))
    for timing, (xs, ys) in by_timing.items():
        _scatter(ax, xs, ys, STYLE[timing], zorder=4)
    ax.set_xlim(0, last + 1)
    ax.set_ylim(low, high)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=12, integer=True))
    ax.set_xlabel("processing order (elements received by this step, all keys)")
    ax.set_ylabel(fmt.axis_title(what))
    _time_axis(ax.yaxis, low, high, fmt)
    ax.grid(color="#eeeeee", linewidth=0.6)


def _scatter(ax: Any, xs: list[float], ys: list[float], mark: Mark, zorder: int = 3) -> None:
    collection = ax.scatter(
        xs, ys, s=mark.size, c=mark.colour, marker=mark.marker, edgecolors="white", linewidths=0.6, zorder=zorder
    )
    collection.set_gid(mark.gid)


def _time_axis(axis: Any, low: float, high: float, fmt: TimeFormat) -> None:
    axis.set_major_locator(FixedLocator(ticks(low, high)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: fmt.label(value)))
    if fmt.epoch and axis.axis_name == "x":
        for label in axis.get_ticklabels():
            label.set_rotation(15)


def _key_label(key: Any) -> str:
    text = key if isinstance(key, str) else repr(key)
    return text if len(text) <= 24 else text[:23] + "…"


def _legend(figure: Figure, steps: list[StepTimeline]) -> None:
    used: set[Any] = set()
    for step in steps:
        used.update(_kind(e) for e in step.elements)
        used.update(f.timing for f in step.firings)
    handles: list[Any] = [
        Patch(facecolor=WINDOW_FILL, edgecolor=WINDOW_EDGE, label="window [start, end)"),
    ]
    if any(s.allowed_lateness and s.event_time for s in steps):
        handles.append(Patch(facecolor=LATENESS_FILL, edgecolor=WINDOW_EDGE, hatch="//", label="allowed lateness"))
    clocks = " / ".join(
        dict.fromkeys(
            ("stream's watermark" if s.per_key else "watermark") if s.event_time else "processing time" for s in steps
        )
    )
    handles.append(Line2D([], [], color=WATERMARK_COLOUR, linewidth=1.6, label=clocks))
    keys = dict.fromkeys(key for step in steps if step.per_key for key in step.keys)
    for index, key in enumerate(keys):  # the lines _draw_key_watermarks draws, in its colours
        colour = KEY_COLOURS[index % len(KEY_COLOURS)]
        handles.append(
            Line2D([], [], color=colour, linestyle="--", linewidth=1.2, label=f"watermark of {_key_label(key)}")
        )
    for what, mark in STYLE.items():
        if what in used or what in (ElementFate.IN_WINDOW, PaneTiming.EARLY, PaneTiming.ON_TIME, PaneTiming.LATE):
            handles.append(
                Line2D(
                    [], [], linestyle="", marker=mark.marker, markersize=8, markerfacecolor=mark.colour,
                    markeredgecolor="white", label=mark.label,
                )
            )  # fmt: skip
    figure.legend(handles=handles, loc="outside lower center", ncol=4, fontsize=9, frameon=False)
