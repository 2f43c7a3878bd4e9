"""``print()`` shows values as PyFlink does (typed values in their Java form), on the local runner."""

from __future__ import annotations

import pytest

from panes.datastream import StreamEnvironment
from panes.datastream.printing import java_text
from tests.pyflink_print_job import PYFLINK_PRINTED, build


def test_print_shows_what_pyflink_printed(capsys: pytest.CaptureFixture[str]) -> None:
    env = StreamEnvironment("local", parallelism=1)
    build(env)
    env.execute()
    assert sorted(capsys.readouterr().out.splitlines()) == PYFLINK_PRINTED


def test_java_forms_of_special_values() -> None:
    assert [java_text(v) for v in (float("nan"), float("inf"), -float("inf"), [1, 2], (1, (2, None)))] == [
        "NaN",
        "Infinity",
        "-Infinity",
        "[1, 2]",
        "(1,(2,null))",
    ]
