"""When the window operator drops a window's state: Flink's ``WindowOperator.cleanupTime``."""

from __future__ import annotations

from panes.time import LONG_MAX, java_add


def cleanup_time(max_timestamp: int, allowed_lateness: int) -> int:
    """The cleanup time of an event-time window whose max timestamp is ``max_timestamp``.

    ``max_timestamp + allowed_lateness`` (``allowed_lateness >= 0``) added as Java ``long``s; when that sum
    wraps around past ``LONG_MAX`` (it comes out below ``max_timestamp``) the window is never cleaned up and
    the result is ``LONG_MAX``, for which no cleanup timer is registered, as in Flink. A window whose own end
    wrapped around (its max timestamp is near ``LONG_MIN``) keeps its early cleanup time: Flink cleans it up
    at the first watermark. (Processing-time windows are cleaned up at their max timestamp.)
    """
    if not allowed_lateness:
        return max_timestamp
    cleanup = java_add(max_timestamp, allowed_lateness)
    return cleanup if cleanup >= max_timestamp else LONG_MAX
