"""``CloseableIterator``: what ``DataStream.execute_and_collect()`` returns (PyFlink's name and protocol).

PyFlink streams results back while the job runs and returns a ``CloseableIterator`` (an iterator and a
context manager), or a list when given a ``limit``. panes runs the job to its end first, then hands back the
results as one object that serves all those uses: it is a ``list`` (compare it, index it, ``len`` it), its
own iterator (``next(results)``, ``results.next()``, a cursor independent of ``for`` loops over the list) and
a context manager whose exit (like ``close()``) drops the results.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import TracebackType
from typing import Any


class CloseableIterator(list[Any]):
    """The collected results: a ``list`` that is also an iterator (``next``) and a context manager."""

    def __init__(self, values: Iterable[Any] = ()) -> None:
        super().__init__(values)
        self._cursor = 0

    def __next__(self) -> Any:
        if self._cursor >= len(self):
            raise StopIteration("No more data.")
        value = self[self._cursor]
        self._cursor += 1
        return value

    def next(self) -> Any:
        """The next result (PyFlink's spelling of ``next(results)``); ``StopIteration`` after the last."""
        return self.__next__()

    def close(self) -> None:
        """Release the results (PyFlink releases the job's cluster resources here)."""
        self.clear()
        self._cursor = 0

    def __enter__(self) -> CloseableIterator:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
