"""A Spark failure whose cause panes knows becomes a panes error that says what happened and what to change."""

from __future__ import annotations

import pytest

from panes.spark.failures import PythonWorkerStartError, known_failure, reraise_carried


class SparkLikeError(Exception):
    """Shaped as Spark's exceptions reach Python: the JVM's text in ``desc``."""

    def __init__(self, message: str, desc: str) -> None:
        super().__init__(message)
        self.desc = desc


def test_a_python_worker_that_did_not_connect_back_is_explained() -> None:
    spark_error = SparkLikeError(
        "An error occurred while calling o123.awaitTermination.",
        "org.apache.spark.SparkException: Python worker failed to connect back.\n\tat org.apache.spark...",
    )

    def failing() -> None:
        raise spark_error

    with pytest.raises(PythonWorkerStartError, match="fewer task slots") as raised:
        reraise_carried(failing)
    assert raised.value.__cause__ is spark_error
    assert known_failure(SparkLikeError("other", "java.lang.OutOfMemoryError")) is None


def test_an_interruption_that_broke_a_call_into_the_jvm_is_still_an_interruption() -> None:
    from panes.spark.failures import was_interrupted

    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise RuntimeError("Gateway must be connected to send cancel cmd.")  # noqa: B904 - as Py4J raises it
    except RuntimeError as broken:
        assert was_interrupted(broken)
    assert not was_interrupted(RuntimeError("a failure of its own"))
