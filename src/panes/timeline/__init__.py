"""Timelines: what the window operator did in a run, drawn (``panes timeline JOB.py``).

:func:`record_timeline` runs a job on the local runner with every window step observed
(``panes.windowing.observer``) and returns a :class:`Timeline`; :func:`write_png` and :func:`write_html` draw
it (they need matplotlib: ``pip install 'panes[timeline]'``).
"""

from __future__ import annotations

from pathlib import Path

from panes.timeline.record import Timeline, record_timeline
from panes.timeline.recording import (
    ClockPoint,
    ElementFate,
    KeyWatermarkPoint,
    RecordedElement,
    RecordedFiring,
    StepRecorder,
    StepTimeline,
    WatermarkPoint,
)


def check_drawing() -> None:
    """Raise ``ImportError`` saying how to install matplotlib when it cannot be imported (``panes timeline``
    asks before it runs the job)."""
    _page()


def _page() -> object:
    try:
        from panes.timeline import page
    except ImportError as error:
        raise ImportError(
            f"drawing timelines needs matplotlib, which cannot be imported ({error}); install it with "
            "pip install 'panes[timeline]'"
        ) from error
    return page


def write_png(timeline: Timeline, path: str | Path) -> Path:
    """Draw ``timeline`` as a PNG at ``path`` (see ``panes.timeline.page``)."""
    return _page().write_png(timeline, path)  # type: ignore[attr-defined, no-any-return]


def write_html(timeline: Timeline, path: str | Path) -> Path:
    """Write ``timeline`` as a self-contained HTML page at ``path`` (see ``panes.timeline.page``)."""
    return _page().write_html(timeline, path)  # type: ignore[attr-defined, no-any-return]


__all__ = [
    "check_drawing",
    "ClockPoint",
    "ElementFate",
    "RecordedElement",
    "RecordedFiring",
    "StepRecorder",
    "StepTimeline",
    "Timeline",
    "KeyWatermarkPoint",
    "WatermarkPoint",
    "record_timeline",
    "write_html",
    "write_png",
]
