"""What PyFlink's connectors share (``pyflink.datastream.connectors.base``): the delivery guarantee of a sink."""

from __future__ import annotations

from enum import Enum

__all__ = ["DeliveryGuarantee"]


class DeliveryGuarantee(Enum):
    """What a sink promises about the records it writes when a job fails and restarts (Flink's).

    - ``EXACTLY_ONCE``: each record is visible once to readers that read committed data only (a transactional
      sink commits what it wrote when the job is snapshotted and when it ends).
    - ``AT_LEAST_ONCE``: no record is lost (the sink waits until every record it was given is acknowledged when
      the job is snapshotted and when it ends); a restart may write some twice.
    - ``NONE``: records are written as they come; a failure may lose or duplicate some. The default.
    """

    EXACTLY_ONCE = "exactly-once"
    AT_LEAST_ONCE = "at-least-once"
    NONE = "none"
