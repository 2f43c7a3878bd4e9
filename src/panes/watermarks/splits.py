"""Watermarks per split: what Flink's ``SourceOperator`` does for a source whose reader emits through split-local
outputs (every split of Flink's ``KafkaSource``, a Kafka partition each).

Each split gets its own generator from the strategy (``create_watermark_generator``, with the same context, so
``with_idleness`` measures each split's idleness on the same clock). A split's records go to its generator, whose
on-event watermarks are combined at once; at each periodic emit every split's generator is asked in turn (its
watermark or idleness recorded) and the recorded ones are then combined once
(:class:`~panes.watermarks.multiplexer.WatermarkMultiplexer`): the instance's watermark is the minimum over its
active splits, a split without any record yet holds it at ``LONG_MIN``, an idle split stops holding it back, and
when all are idle the instance is idle. A finished split is released and counts no more.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from panes.watermarks.generators import WatermarkGenerator, WatermarkGeneratorContext
from panes.watermarks.multiplexer import WatermarkMultiplexer
from panes.watermarks.output import WatermarkOutput
from panes.watermarks.strategy import WatermarkStrategy


class _SplitOutput:
    __slots__ = ("deferred", "generator", "immediate")

    def __init__(self, generator: WatermarkGenerator, immediate: WatermarkOutput, deferred: WatermarkOutput) -> None:
        self.generator = generator
        self.immediate = immediate
        self.deferred = deferred


class SplitWatermarks:
    """The generators of one source instance's splits and their combination into ``output`` (see the module
    docstring). Splits are any hashable, picklable ids (a Kafka source's ``KafkaTopicPartition``)."""

    def __init__(
        self, strategy: WatermarkStrategy, context: WatermarkGeneratorContext, output: WatermarkOutput
    ) -> None:
        self._strategy = strategy
        self._context = context
        self.multiplexer = WatermarkMultiplexer(output)
        self._outputs: dict[Hashable, _SplitOutput] = {}
        self._released: set[Hashable] = set()

    def add(self, split: Hashable) -> None:
        """Start ``split`` (its generator fresh, its watermark at ``LONG_MIN``); nothing when it is there already."""
        if split in self._outputs:
            return
        self.multiplexer.register(split)
        generator = self._strategy.create_watermark_generator(self._context)
        self._outputs[split] = _SplitOutput(
            generator, self.multiplexer.immediate(split), self.multiplexer.deferred(split)
        )

    def add_all(self, splits: Iterable[Hashable]) -> None:
        for split in splits:
            self.add(split)

    def release(self, split: Hashable) -> None:
        """``split`` ended: it no longer holds the watermark back (from the next combination on)."""
        self._released.add(split)
        if self._outputs.pop(split, None) is not None:
            self.multiplexer.unregister(split)

    def splits(self) -> list[Hashable]:
        return list(self._outputs)

    def generator(self, split: Hashable) -> WatermarkGenerator:
        """The generator of ``split`` (``KeyError`` when it is not there)."""
        return self._outputs[split].generator

    def on_event(self, split: Hashable, event: Any, timestamp: int) -> None:
        """A record of ``split`` (added first when new) with its assigned timestamp."""
        output = self._outputs.get(split)
        if output is None:
            self.add(split)
            output = self._outputs[split]
        output.generator.on_event(event, timestamp, output.immediate)

    def on_periodic_emit(self) -> None:
        """Every split's periodic emit, then one combination."""
        for output in list(self._outputs.values()):
            output.generator.on_periodic_emit(output.deferred)
        self.multiplexer.on_periodic_emit()

    def snapshot_state(self) -> dict[str, Any]:
        """Each split's generator state and the multiplexer's (picklable)."""
        return {
            "generators": {split: output.generator.snapshot_state() for split, output in self._outputs.items()},
            "multiplexer": self.multiplexer.snapshot_state(),
            "released": set(self._released),
        }

    def restore_state(self, state: dict[str, Any]) -> None:
        """Take back :meth:`snapshot_state` for the splits there now (a split the snapshot does not know starts
        fresh; one no longer there is left out; one released before the snapshot is released again)."""
        for split in state["released"]:
            self.release(split)
        for split, generator_state in state["generators"].items():
            if split in self._outputs:
                self._outputs[split].generator.restore_state(generator_state)
        self.multiplexer.restore_state(state["multiplexer"])
        # the outputs hold the multiplexer's partial objects, which a restore replaced
        for split, output in self._outputs.items():
            output.immediate = self.multiplexer.immediate(split)
            output.deferred = self.multiplexer.deferred(split)
