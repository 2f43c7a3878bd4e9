"""Test utilities in the spirit of Flink's operator test harnesses (public API)."""

from panes.testing.harness import OneInputOperatorHarness, WindowOperatorHarness, window_function_spec

__all__ = ["OneInputOperatorHarness", "WindowOperatorHarness", "window_function_spec"]
