"""How the local runner reads a source: :class:`SourceReader`, one parallel instance's splits of it, one element
at a time, with its position for snapshots."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from panes.datastream.sources import Source, SplitsReader
from panes.watermarks.operator import TimestampsAndWatermarksOperator


class SourceReader:
    """Reads the splits ``index, index + parallelism, ...`` of a source, one after the other, or together when the
    source reads them so (``Source.read_splits``; a source that cannot be read at all fails here, when the job
    starts: ``Source.check_readable``)."""

    def __init__(self, source: Any, index: int, parallelism: int) -> None:
        if not isinstance(source, Source):
            raise TypeError(f"the local runner cannot read {source!r}; use a panes.datastream.sources.Source")
        source.check_readable()
        self.source = source
        self.splits = list(range(index, source.num_splits(), parallelism))
        self.current = 0
        self.position = 0  # elements read from the current split
        self._iterator: Iterator[Any] | None = None
        self.exhausted = not self.splits
        self.together: SplitsReader | None = None if self.exhausted else source.read_splits(self.splits)
        self.split_targets: list[TimestampsAndWatermarksOperator] = []
        """The source's own watermark operators, told the split of every element (``link``)."""
        self._released: set[Any] = set()

    def link(self, operator: TimestampsAndWatermarksOperator) -> bool:
        """Let ``operator`` (a source's own, per-split watermark step right after this instance) run a generator
        per split, when the splits are read together by a reader that says which split each element comes from
        (``SplitsReader.split_ids``); whether it does."""
        together = self.together
        ids = None if together is None else together.split_ids()
        if ids is None:
            return False
        operator.assign_splits(ids)
        self.split_targets.append(operator)
        return True

    def tell_split(self) -> None:
        """Tell the linked operators the split of the element just read, and release the splits that ended."""
        together = self.together
        assert together is not None
        split = together.current_split()
        finished = together.finished_splits()
        for operator in self.split_targets:
            operator.set_current_split(split)
        if len(finished) != len(self._released):
            for ended in set(finished) - self._released:
                for operator in self.split_targets:
                    operator.release_split(ended)
            self._released = set(finished)

    def next(self) -> tuple[bool, Any]:
        """``(True, element)``, or ``(False, None)`` once every split is read."""
        together = self.together
        if together is not None:
            if self.exhausted:
                return False, None
            try:
                element = next(together)
            except StopIteration:
                self.exhausted = True
                together.close()
                return False, None
            self.position += 1
            return True, element
        while not self.exhausted:
            if self._iterator is None:
                self._iterator = self.source.read_split(self.splits[self.current])
            try:
                element = next(self._iterator)
            except StopIteration:
                self.current += 1
                self.position = 0
                self._iterator = None
                self.exhausted = self.current >= len(self.splits)
                continue
            self.position += 1
            return True, element
        return False, None

    def snapshot(self) -> dict[str, Any]:
        together = None if self.together is None else self.together.position()
        return {"current": self.current, "position": self.position, "exhausted": self.exhausted, "together": together}

    def close(self) -> None:
        """Close a reader of splits read together (its connections)."""
        if self.together is not None:
            self.together.close()

    def restore(self, data: dict[str, Any]) -> None:
        if not self.source.is_replayable():
            raise ValueError(f"{self.source!r} cannot be replayed, so a job reading it cannot be restored")
        self.current = data["current"]
        self.exhausted = data["exhausted"]
        self.position = 0
        self._iterator = None
        if self.together is not None:
            self.together.close()
            self.together = self.source.read_splits(self.splits, data.get("together"))
            self.position = data["position"]
            return
        if not self.exhausted:
            self._iterator = self.source.read_split(self.splits[self.current])
            for _ in range(data["position"]):
                next(self._iterator)
            self.position = data["position"]
