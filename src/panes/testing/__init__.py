"""Test utilities in the spirit of Flink's operator test harnesses (public API)."""

from panes.testing.harness import OneInputOperatorHarness, WindowOperatorHarness, window_function_spec
from panes.testing.two_input import TwoInputOperatorHarness

__all__ = ["OneInputOperatorHarness", "TwoInputOperatorHarness", "WindowOperatorHarness", "window_function_spec"]
