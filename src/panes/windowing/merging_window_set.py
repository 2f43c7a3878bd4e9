"""Bookkeeping for merging (session) windows: which in-flight window keeps its state in which state window.

When windows merge, their contents are not moved: one of the merged windows' *state window* becomes the
state window of the merge result and the others' state is merged into it. The mapping from in-flight
window to state window is kept per key; the order of iteration over it follows Java's ``HashMap`` so that
the merge target, and hence element order in a merged pane, is Flink's (see ``java_hash``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any

from panes.java_hash import JavaHashMap, JavaHashSet
from panes.windowing.assigners.base import MergeCallback, MergingWindowAssigner

MergeFunction = Callable[[Any, Collection[Any], Any, list[Any]], None]
"""``merge(merge_result, merged_windows, state_window_result, merged_state_windows)``"""


class MergingWindowSet:
    """The in-flight windows of one key, each mapped to the window that holds its state.

    Built from the stored ``(window, state_window)`` pairs; :meth:`persist` returns the pairs to store
    back, or ``None`` when nothing changed.
    """

    def __init__(self, assigner: MergingWindowAssigner[Any, Any], stored: Iterable[tuple[Any, Any]]) -> None:
        self._assigner = assigner
        self.mapping: JavaHashMap[Any, Any] = JavaHashMap(stored)
        self._initial = self.mapping.to_dict()

    def get_state_window(self, window: Any) -> Any:
        """The state window of in-flight ``window``, or ``None`` when it is not in flight."""
        return self.mapping.get(window)

    def retire_window(self, window: Any) -> None:
        """Forget ``window``; raises ``RuntimeError`` when it is not in flight."""
        if self.mapping.remove(window) is None:
            raise RuntimeError(f"Window {window!r} is not in in-flight window set.")

    def add_window(self, new_window: Any, merge_function: MergeFunction) -> Any:
        """Add ``new_window``, merging as the assigner decides; returns the window it ended up in.

        ``merge_function`` is called for every merge that involves a pre-existing window, before the
        mapping is used again, with the merged windows (``new_window`` excluded) and the state windows to
        merge into the result's state window.
        """
        windows = [*self.mapping.keys(), new_window]
        merge_results: JavaHashMap[Any, JavaHashSet[Any] | list[Any]] = JavaHashMap()

        def collect(to_be_merged: Collection[Any], merge_result: Any) -> None:
            merge_results.put(merge_result, _as_java_collection(to_be_merged))

        self._assigner.merge_windows(windows, MergeCallback(collect))

        result_window = new_window
        merged_new_window = False
        for merge_result, merged_windows in merge_results.items():
            if _remove(merged_windows, new_window):
                merged_new_window = True
                result_window = merge_result
            # the first merged window's state window becomes the state window of the result
            merged_state_window = self.mapping.get(next(iter(merged_windows)))
            merged_state_windows: list[Any] = []
            for merged_window in merged_windows:
                state_window = self.mapping.remove(merged_window)
                if state_window is not None:
                    merged_state_windows.append(state_window)
            self.mapping.put(merge_result, merged_state_window)
            if merged_state_window in merged_state_windows:
                merged_state_windows.remove(merged_state_window)
            # merging only the new window into one pre-existing, unchanged window needs no state merge
            if not (merge_result in merged_windows and len(merged_windows) == 1):
                merge_function(merge_result, list(merged_windows), self.mapping.get(merge_result), merged_state_windows)

        if len(merge_results) == 0 or (result_window == new_window and not merged_new_window):
            self.mapping.put(result_window, result_window)
        return result_window

    def persist(self) -> list[tuple[Any, Any]] | None:
        """The pairs to store, in iteration order, or ``None`` when the mapping is unchanged."""
        if self.mapping.to_dict() == self._initial:
            return None
        return self.mapping.items()


def _as_java_collection(windows: Collection[Any]) -> JavaHashSet[Any] | list[Any]:
    """The merged windows as Flink keeps them: the collection the assigner reported, iterated in its own
    order. ``TimeWindow.merge_windows`` reports Java-ordered hash sets; a custom assigner that reports a
    list (Java's ``ArrayList``) has its windows taken in list order; a Python ``set`` is taken as a Java
    ``HashSet``."""
    if isinstance(windows, JavaHashSet):
        return windows
    if isinstance(windows, (set, frozenset)):
        return JavaHashSet(windows)
    return list(windows)


def _remove(windows: JavaHashSet[Any] | list[Any], window: Any) -> bool:
    """Java's ``Collection.remove``: remove one occurrence, say whether there was one."""
    if isinstance(windows, JavaHashSet):
        return windows.remove(window)
    if window in windows:
        windows.remove(window)
        return True
    return False
