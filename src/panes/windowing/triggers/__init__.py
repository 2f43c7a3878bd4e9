"""Triggers: when a window's pane is evaluated (Flink's ``org.apache.flink.streaming.api.windowing.triggers``)."""

from panes.windowing.triggers.base import OnMergeContext, Trigger, TriggerContext, TriggerResult
from panes.windowing.triggers.composite import AfterEach, AfterWatermark, AllOf, AnyOf, OrFinally, Repeatedly
from panes.windowing.triggers.continuous import ContinuousEventTimeTrigger, ContinuousProcessingTimeTrigger
from panes.windowing.triggers.count import CountTrigger
from panes.windowing.triggers.delta import DeltaFunction, DeltaTrigger
from panes.windowing.triggers.event_time import EventTimeTrigger
from panes.windowing.triggers.never import EndOfStreamTrigger, NeverTrigger
from panes.windowing.triggers.processing_time import ProcessingTimeTrigger
from panes.windowing.triggers.purging import PurgingTrigger
from panes.windowing.triggers.timeout import ProcessingTimeoutTrigger

__all__ = [
    "AfterEach",
    "AfterWatermark",
    "AllOf",
    "AnyOf",
    "ContinuousEventTimeTrigger",
    "ContinuousProcessingTimeTrigger",
    "CountTrigger",
    "DeltaFunction",
    "DeltaTrigger",
    "EndOfStreamTrigger",
    "EventTimeTrigger",
    "NeverTrigger",
    "OnMergeContext",
    "OrFinally",
    "ProcessingTimeTrigger",
    "ProcessingTimeoutTrigger",
    "PurgingTrigger",
    "Repeatedly",
    "Trigger",
    "TriggerContext",
    "TriggerResult",
]
